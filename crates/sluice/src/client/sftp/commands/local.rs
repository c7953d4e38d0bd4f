//! sftp's commands on this machine: lcd, lpwd, lmkdir, lumask, and the
//! command line lls hands to the shell.

use super::common::*;
use super::words::arg;

pub(super) fn lcd(args: &[Vec<u8>]) -> Done {
    let p = arg(args, 1, "lcd")?;
    std::env::set_current_dir(path_of(p)).map_err(|e| {
        err(&format!(
            "Couldn't change local directory to \"{}\": {}",
            lossy(p),
            os_text(&e)
        ))
    })?;
    Ok(true)
}

pub(super) fn lpwd() -> Done {
    match std::env::current_dir() {
        Ok(d) => {
            crate::outln!("Local working directory: {}", d.display());
            Ok(true)
        }
        Err(e) => Err(err(&format!("Couldn't get local cwd: {}", os_text(&e)))),
    }
}

pub(super) fn lmkdir(args: &[Vec<u8>]) -> Done {
    let p = arg(args, 1, "lmkdir")?;
    std::fs::create_dir(path_of(p)).map_err(|e| {
        err(&format!(
            "Couldn't create local directory \"{}\": {}",
            lossy(p),
            os_text(&e)
        ))
    })?;
    Ok(true)
}

/// The shell command for `lls` followed by `rest` (as typed).
pub(super) fn lls(rest: &[u8]) -> Vec<u8> {
    let rest = rest.trim_ascii_start();
    let mut c = b"ls".to_vec();
    if !rest.is_empty() {
        c.push(b' ');
        c.extend_from_slice(rest);
    }
    c
}

pub(super) fn lumask(args: &[Vec<u8>]) -> Done {
    let mask = args
        .get(1)
        .and_then(|m| std::str::from_utf8(m).ok())
        .and_then(|m| u32::from_str_radix(m, 8).ok())
        .ok_or_else(|| err("You must supply a numeric argument to the lumask command."))?;
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(mask & 0o777));
    crate::outln!("Local umask: {:03o}", mask & 0o777);
    Ok(true)
}
