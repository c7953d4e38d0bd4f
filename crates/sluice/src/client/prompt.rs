//! Asking the user for a password or a keyboard-interactive answer, as
//! ssh's read_passphrase does: on /dev/tty (echo off unless asked), or
//! through the SSH_ASKPASS program when SSH_ASKPASS_REQUIRE says so, or
//! when there is no terminal and a display is set.

use crate::log;
use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use zeroize::Zeroizing;

/// The program ssh runs when SSH_ASKPASS is not set.
const DEFAULT_ASKPASS: &str = "/usr/bin/ssh-askpass";
/// Longest answer read from a terminal or askpass (ssh's buffer is 1024).
const MAX_ANSWER: u64 = 1024;

/// Where answers come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Tty,
    Askpass(String),
}

fn set_nonempty(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty())
}

/// ssh's choice: SSH_ASKPASS_REQUIRE=force always uses askpass; `prefer`
/// uses it when a display is set; `never` never does; otherwise askpass is
/// the fallback when there is no terminal but a display.
fn source() -> Option<Source> {
    let mut allow = set_nonempty("DISPLAY") || set_nonempty("WAYLAND_DISPLAY");
    let mut use_askpass = false;
    match std::env::var("SSH_ASKPASS_REQUIRE")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "force" => {
            use_askpass = true;
            allow = true;
        }
        "prefer" => use_askpass = allow,
        "never" => allow = false,
        _ => {}
    }
    if !use_askpass {
        if open_tty().is_some() {
            return Some(Source::Tty);
        }
        use_askpass = true;
    }
    (use_askpass && allow).then(|| {
        Source::Askpass(std::env::var("SSH_ASKPASS").unwrap_or_else(|_| DEFAULT_ASKPASS.into()))
    })
}

fn open_tty() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()
}

/// Whether the user can be asked at all (a terminal or askpass).
pub fn available() -> bool {
    source().is_some()
}

/// Asks `prompt` and returns the answer without its line end; None when
/// there is no way to ask, or the user cancelled (askpass failed, EOF).
pub fn read_passphrase(prompt: &str, echo: bool) -> Option<Zeroizing<String>> {
    match source()? {
        Source::Tty => read_tty(prompt, echo),
        Source::Askpass(program) => askpass(&program, prompt),
    }
}

fn read_tty(prompt: &str, echo: bool) -> Option<Zeroizing<String>> {
    let tty = open_tty()?;
    use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
    let saved = tcgetattr(&tty).ok();
    let quiet = saved.as_ref().filter(|_| !echo);
    if let Some(t) = quiet {
        let mut t = t.clone();
        t.local_modes.remove(LocalModes::ECHO);
        let _ = tcsetattr(&tty, OptionalActions::Flush, &t);
    }
    // The carriage return first, as ssh: the prompt starts its own line.
    let _ = write!(&tty, "\r{prompt}");
    let mut line = Zeroizing::new(String::new());
    let r = std::io::BufReader::new((&tty).take(MAX_ANSWER)).read_line(&mut line);
    if let Some(t) = quiet {
        let _ = tcsetattr(&tty, OptionalActions::Flush, t);
        let _ = writeln!(&tty);
    }
    match r {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(first_line(&line)),
    }
}

/// Runs the askpass program with the prompt as its argument and reads the
/// answer from its standard output, as ssh does.
fn askpass(program: &str, prompt: &str) -> Option<Zeroizing<String>> {
    log!(Debug1, "read_passphrase: requested to askpass");
    let mut child = match Command::new(program)
        .arg(prompt)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            log!(Error, "ssh_askpass: exec({program}): {e}");
            return None;
        }
    };
    let mut out = Zeroizing::new(Vec::new());
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(MAX_ANSWER).read_to_end(&mut out);
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    if !ok {
        return None;
    }
    Some(first_line(&String::from_utf8_lossy(&out)))
}

/// The answer up to its first line end, as ssh cuts it.
fn first_line(s: &str) -> Zeroizing<String> {
    Zeroizing::new(s.split(['\r', '\n']).next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn askpass_answer_loses_its_line_end() {
        let a = askpass("/bin/echo", "secret word").unwrap();
        assert_eq!(a.as_str(), "secret word");
        assert!(askpass("/bin/false", "x").is_none());
        assert!(askpass("/nonexistent/askpass", "x").is_none());
    }
}
