//! LocalCommand (PermitLocalCommand yes): a command run on this machine
//! through the user's shell once authenticated, as ssh runs it (and waits
//! for it), with its %-tokens expanded.

use crate::config::ssh::{tokens, Resolved};

/// LocalCommand, tokens expanded, when PermitLocalCommand allows it.
pub fn configured(
    r: &Resolved,
) -> Result<Option<String>, crate::client::setting_error::SettingError> {
    match r.get("localcommand") {
        Some(c) if r.flag("permitlocalcommand", false) && !c.eq_ignore_ascii_case("none") => r
            .tokens()
            .expand(c, tokens::LOCAL_COMMAND)
            .map(Some)
            .map_err(crate::client::setting_error::SettingError::from),
        Some(_) => {
            crate::log!(Debug1, "LocalCommand not run: PermitLocalCommand is no");
            Ok(None)
        }
        None => Ok(None),
    }
}

/// Runs LocalCommand through the user's shell and waits for it, as ssh
/// does once authenticated; its output goes where sluice's goes.
pub fn run(cmd: &str) {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    crate::log!(Debug3, "Executing {shell} -c \"{cmd}\"");
    match std::process::Command::new(&shell)
        .arg("-c")
        .arg(cmd)
        .status()
    {
        Ok(st) if !st.success() => crate::log!(Debug1, "LocalCommand exited: {st}"),
        Ok(_) => {}
        Err(e) => crate::log!(Error, "Couldn't execute {shell} -c \"{cmd}\": {e}"),
    }
}
