//! KnownHostsCommand (ssh_config(5)): a command whose output is read as
//! known_hosts lines after UserKnownHostsFile and GlobalKnownHostsFile.
//! As ssh, it is run directly (split into words, no shell), with stdin
//! from /dev/null and stderr passed through; a failure is logged and its
//! output ignored. It runs when the server's key is checked, so %H, %I,
//! %K, %f and %t are known (ssh also runs it once before key exchange to
//! order the host key algorithms; sluice orders them from the files only).

use crate::config::ssh::{tokens, Resolved};
use crate::log;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The output is a list of keys; more than this is not one.
const MAX_OUTPUT: u64 = 1 << 20;

/// The name the output is known by in messages ("... in KnownHostsCommand:3").
pub const NAME: &str = "KnownHostsCommand";

/// The command as configured, unexpanded (None: not set or `none`).
pub fn configured(r: &Resolved) -> Option<String> {
    r.get("knownhostscommand")
        .filter(|c| !c.eq_ignore_ascii_case("none"))
        .map(str::to_owned)
}

/// What the key-specific tokens stand for.
pub struct KeyTokens<'a> {
    /// %H: the name looked up (`host` or `[host]:port`).
    pub lookup: &'a str,
    /// %K: the key, base64.
    pub key_b64: &'a str,
    /// %f: its fingerprint.
    pub fingerprint: &'a str,
    /// %t: its type.
    pub key_type: &'a str,
}

/// Expands %H %I %K %f %t here and leaves the rest (and `%%`) to `t`.
fn expand(cmd: &str, k: &KeyTokens<'_>, t: &tokens::Tokens) -> Result<String, tokens::ExpandError> {
    let mut out = String::with_capacity(cmd.len());
    let mut it = cmd.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('H') => out.push_str(k.lookup),
            Some('I') => out.push_str("HOSTNAME"),
            Some('K') => out.push_str(k.key_b64),
            Some('f') => out.push_str(k.fingerprint),
            Some('t') => out.push_str(k.key_type),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    t.expand(&out, tokens::FILE)
}

/// Runs the command and makes its output the pseudo file returned, to be
/// checked with the known_hosts files; None when it failed (logged).
pub fn run(cmd: &str, k: &KeyTokens<'_>, t: &tokens::Tokens) -> Option<PathBuf> {
    let line = match expand(cmd, k, t) {
        Ok(l) => l,
        Err(e) => {
            log!(Error, "KnownHostsCommand: {e}");
            return None;
        }
    };
    let words = match crate::config::argv_split(&line, false) {
        Ok(w) if !w.is_empty() => w,
        _ => {
            log!(
                Error,
                "KnownHostsCommand: cannot split \"{line}\" into words"
            );
            return None;
        }
    };
    log!(Debug1, "Executing KnownHostsCommand: {line}");
    let mut child = match Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            log!(Error, "KnownHostsCommand {}: {e}", words[0]);
            return None;
        }
    };
    let mut text = String::new();
    let read = child
        .stdout
        .take()
        .map(|o| o.take(MAX_OUTPUT + 1).read_to_string(&mut text));
    if text.len() as u64 > MAX_OUTPUT {
        // Still writing past any list of keys: stopped, not waited on.
        let _ = child.kill();
        let _ = child.wait();
        log!(
            Error,
            "KnownHostsCommand {}: more than {MAX_OUTPUT} bytes of output",
            words[0]
        );
        return None;
    }
    let status = child.wait();
    match (read, status) {
        (Some(Ok(_)), Ok(st)) if st.success() => {
            let name = PathBuf::from(NAME);
            crate::keys::known_hosts::set_command_output(name.clone(), text);
            Some(name)
        }
        (_, Ok(st)) if !st.success() => {
            log!(Error, "KnownHostsCommand {} {st}", words[0]);
            None
        }
        (Some(Err(e)), _) => {
            log!(Error, "KnownHostsCommand {}: output: {e}", words[0]);
            None
        }
        _ => None,
    }
}
