//! What `sluice-sftp` and `sluice-scp` share on their command lines: a
//! getopt in OpenSSH's manner (flags bundle, a value attached or in the
//! next word, `--` ends options, the first operand ends them for sftp),
//! and the ssh options both pass to the connection, turned into
//! `ClientOptions` through ssh_config as `sluice` does.

use crate::cli::usage::UsageError;
use crate::client::app;
use crate::client::request::SessionRequest;
use crate::client::sftp::parallel::{Connector, Parallel};
use crate::client::streams::Streams;
use crate::client::{ClientError, ClientOptions};
use crate::config::ssh::ClientConfig;
use crate::log::{self, Level};
use std::path::Path;
use std::sync::Arc;

/// Options in order (letter, value or empty) and the operands.
pub type Parsed = (Vec<(char, String)>, Vec<String>);

/// What [`getopt`] returns for `--help` where an option may stand (not
/// OpenSSH's getopt, which knows no long options): `(HELP, "")`.
pub const HELP: char = '-';

/// The line `--help` adds under a program's usage.
pub fn see_page(program: &str) -> String {
    format!("See {program}(1) for the options and sluice_config(5) for ssh_config.")
}

/// Parses `argv` against `spec` (getopt's: a letter, `:` after it when it
/// takes a value). Returns the options in order and the operands.
pub fn getopt(argv: &[String], spec: &str, stop_at_operand: bool) -> Result<Parsed, UsageError> {
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    let mut options_done = false;
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        if options_done || !a.starts_with('-') || a == "-" {
            operands.push(a.clone());
            if stop_at_operand {
                options_done = true;
            }
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if a == "--help" {
            opts.push((HELP, String::new()));
            continue;
        }
        let flags: Vec<char> = a.chars().skip(1).collect();
        let mut j = 0;
        while j < flags.len() {
            let c = flags[j];
            j += 1;
            let Some(pos) = spec.find(c).filter(|_| c != ':') else {
                return Err(UsageError::UnknownOption {
                    opt: c,
                    usage: None,
                });
            };
            if spec[pos + c.len_utf8()..].starts_with(':') {
                let rest: String = flags[j..].iter().collect();
                let value = if !rest.is_empty() {
                    rest
                } else if i < argv.len() {
                    i += 1;
                    argv[i - 1].clone()
                } else {
                    return Err(UsageError::MissingArgument {
                        prog: None,
                        opt: c,
                        usage: None,
                    });
                };
                opts.push((c, value));
                break;
            }
            opts.push((c, String::new()));
        }
    }
    Ok((opts, operands))
}

/// The ssh side of both programs' command lines.
#[derive(Debug, Clone, Default)]
pub struct SshSide {
    /// `-o` options and those the flags stand for, in order.
    pub options: Vec<String>,
    /// `-F`.
    pub config_file: Option<String>,
    /// `-i`.
    pub identities: Vec<String>,
    /// `-4` / `-6`.
    pub family: Option<u8>,
    /// `-v` count.
    pub verbose: u8,
    /// `-q`.
    pub quiet: bool,
    /// `-l`: Kbit/s.
    pub limit: Option<u64>,
}

impl SshSide {
    /// Takes the options both programs share; false for any other.
    pub fn take(&mut self, c: char, v: &str) -> Result<bool, UsageError> {
        match c {
            '4' => self.family = Some(4),
            '6' => self.family = Some(6),
            'A' => self.options.push("ForwardAgent=yes".into()),
            'C' => self.options.push("Compression=yes".into()),
            'c' => self.options.push(format!("Ciphers={v}")),
            'F' => self.config_file = Some(v.to_owned()),
            'i' => self.identities.push(v.to_owned()),
            'J' => self.options.push(format!("ProxyJump={v}")),
            'o' => self.options.push(v.to_owned()),
            'P' => {
                v.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| UsageError::invalid("Bad port", v))?;
                self.options.push(format!("Port={v}"));
            }
            'q' => self.quiet = true,
            'v' => self.verbose = self.verbose.saturating_add(1),
            // -l limit (Kbit/s).
            'l' => {
                let k = v
                    .parse::<u64>()
                    .ok()
                    .filter(|k| *k > 0)
                    .ok_or_else(|| UsageError::invalid("Invalid limit", v))?;
                self.limit = Some(k);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The connection's options for `user@host`, running `subsystem` (a
    /// command when it names a path, as sftp's `-s`).
    pub fn client_options(
        &self,
        user: Option<&str>,
        host: &str,
        subsystem: &str,
    ) -> Result<ClientOptions, ClientError> {
        // What sftp and scp always pass to ssh, first so they win.
        let mut opts: Vec<String> = [
            "ForwardX11=no",
            "PermitLocalCommand=no",
            "ClearAllForwardings=yes",
            "RemoteCommand=none",
            "RequestTTY=no",
            "ControlMaster=no",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if !self.options.iter().any(|o| o == "ForwardAgent=yes") {
            opts.push("ForwardAgent=no".into());
        }
        opts.extend(self.options.iter().cloned());
        if let Some(u) = user {
            opts.push(format!("User={u}"));
        }
        let cfg = ClientConfig::load(&opts, self.config_file.as_deref().map(Path::new))?;
        let r = cfg.resolve(host)?;
        log::set_level(Level::from_flags(
            self.verbose,
            self.quiet,
            r.get("loglevel"),
        ));
        for w in &cfg.warnings {
            crate::log!(Debug1, "{w}");
        }
        crate::config::ssh::limits::report(&r.limited)?;
        let req = SessionRequest {
            command: vec![subsystem.to_owned()],
            subsystem: !subsystem.contains('/'),
            tty: -1,
            family: self.family,
            identities: self.identities.clone(),
            config_file: self.config_file.clone(),
            verbose: self.verbose,
            ..SessionRequest::default()
        };
        app::resolve(&r, &req)
    }
}

/// The extra connections a copy may use (ssh_config Streams, already in
/// `opts`): each made like the first, in BatchMode (no prompts).
pub fn parallel(
    ssh: &SshSide,
    opts: &ClientOptions,
    user: Option<&str>,
    host: &str,
    subsystem: &str,
) -> Option<Parallel> {
    if opts.streams == Streams::Fixed(1) {
        return None;
    }
    let mut side = ssh.clone();
    side.options.insert(0, "BatchMode=yes".into());
    let (user, host, subsystem) = (
        user.map(str::to_owned),
        host.to_owned(),
        subsystem.to_owned(),
    );
    let connect: Connector =
        Arc::new(move || side.client_options(user.as_deref(), &host, &subsystem));
    Some(Parallel::new(opts.streams, connect))
}

/// `[user@]host[:path]` (host in brackets for IPv6): user, host and path.
pub fn split_remote(s: &str) -> (Option<String>, String, Option<String>) {
    let (user, rest) = match s.rsplit_once('@') {
        Some((u, r)) if !u.is_empty() && !u.contains('/') && !u.contains(':') => {
            (Some(u.to_owned()), r)
        }
        _ => (None, s),
    };
    if let Some(inner) = rest.strip_prefix('[') {
        if let Some((h, after)) = inner.split_once(']') {
            let path = after.strip_prefix(':').map(str::to_owned);
            return (user, h.to_owned(), path);
        }
    }
    match rest.split_once(':') {
        Some((h, p)) => (user, h.to_owned(), Some(p.to_owned())),
        None => (user, rest.to_owned(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn getopt_bundles_and_values() {
        let (o, rest) = getopt(&v("-qrP 2222 -oA=b -B1024 host:x y"), "qrP:o:B:", true).unwrap();
        assert_eq!(
            o,
            [
                ('q', String::new()),
                ('r', String::new()),
                ('P', "2222".into()),
                ('o', "A=b".into()),
                ('B', "1024".into())
            ]
        );
        assert_eq!(rest, ["host:x", "y"]);
        assert!(getopt(&v("-x"), "q", true).is_err());
        assert!(getopt(&v("-P"), "P:", true).is_err());
        let (o, rest) = getopt(&v("a -r b"), "r", false).unwrap();
        assert_eq!((o.len(), rest), (1, v("a b")));
    }

    #[test]
    fn remote_specs() {
        assert_eq!(
            split_remote("bob@h:/tmp/x"),
            (Some("bob".into()), "h".into(), Some("/tmp/x".into()))
        );
        assert_eq!(split_remote("h"), (None, "h".into(), None));
        assert_eq!(
            split_remote("[::1]:p"),
            (None, "::1".into(), Some("p".into()))
        );
        assert_eq!(split_remote("h:"), (None, "h".into(), Some(String::new())));
    }
}

/// `-B`'s value: bytes per read or write request.
pub fn buffer(v: &str) -> Result<u32, UsageError> {
    v.parse::<u32>()
        .ok()
        .filter(|b| (1..=16 << 20).contains(b))
        .ok_or_else(|| UsageError::invalid("Invalid buffer size", v))
}

/// `-R`'s value: requests in flight.
pub fn requests(v: &str) -> Result<usize, UsageError> {
    v.parse::<usize>()
        .ok()
        .filter(|n| (1..=4096).contains(n))
        .ok_or_else(|| UsageError::invalid("Invalid number of requests", v))
}

/// `-X buffer=N` or `-X nrequests=N`, as sftp and scp take them.
pub fn x_option(
    v: &str,
    transfer: &mut crate::client::sftp::options::Options,
) -> Result<(), UsageError> {
    match v.split_once('=') {
        Some(("buffer", b)) => buffer(b).map(|b| transfer.buffer = b),
        Some(("nrequests", n)) => requests(n).map(|n| transfer.requests = n),
        _ => Err(UsageError::invalid("Invalid -X option", v)),
    }
}
