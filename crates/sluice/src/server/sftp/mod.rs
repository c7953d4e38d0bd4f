//! `internal-sftp`: the SFTP server inside `sluiced` (OpenSSH's
//! sftp-server(8) behaviour, SFTP v3 with OpenSSH's extensions; the codec
//! is sluice-proto's `sftp`). It runs in the connection's post-authentication
//! process, which already holds only the user's credentials (and sits in
//! the ChrootDirectory, when one is set: server/chroot.rs), on the
//! channel's in-process end.
//!
//! - `endpoint.rs`: the channel end: frames packets from the channel's
//!   bytes, queues them for the worker, sends its replies in request order.
//! - `serve.rs`: the worker thread: one request after another, so replies
//!   keep their order and the pump's thread never waits on the disk.
//! - `files.rs`: file-system calls behind the requests (attributes,
//!   listings, errno to status).
//! - `ext.rs`: OpenSSH's extended requests.
//!
//! Options are sftp-server's: `-R` read-only, `-u umask`, `-l level`,
//! `-d start_directory` (%d home, %u user, %%), `-f facility` and `-e`
//! accepted (lines go where sluiced's own go). `-p`/`-P` (request allow and
//! deny lists) and `-Q` are refused, so a configuration relying on them
//! does not run without them.

mod endpoint;
mod ext;
mod files;
mod handles;
mod queues;
mod serve;

pub use endpoint::{SftpEndpoint, SftpExit};
pub use handles::Worker;

use crate::log::Level;

/// The command sshd runs in-process instead of executing it.
pub const INTERNAL: &str = "internal-sftp";

/// What `internal-sftp`'s flags ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `-R`: every request that would change the file system is refused
    /// with SSH_FX_PERMISSION_DENIED.
    pub read_only: bool,
    /// `-u`: the umask for created files and directories (else the process's).
    pub umask: Option<u32>,
    /// `-l`: the level of the per-request log lines (sftp-server's default
    /// ERROR logs none; INFO logs opens, closes, renames and removals).
    pub log_level: Level,
    /// `-d`: where relative paths start, tokens still unexpanded (default: home).
    pub start_dir: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            read_only: false,
            umask: None,
            log_level: Level::Error,
            start_dir: None,
        }
    }
}

/// Whether a session command is `internal-sftp` (with or without flags),
/// as sshd decides it.
pub fn is_internal(command: &[u8]) -> bool {
    let c = command.strip_prefix(INTERNAL.as_bytes());
    c.is_some_and(|rest| rest.is_empty() || rest.first().is_some_and(u8::is_ascii_whitespace))
}

/// Why internal-sftp could not start: a bad flag in its command line, a
/// bad `-d` token, or the worker thread; `Display` is the log's text after
/// "session: ".
#[derive(Debug)]
pub enum StartError {
    /// The command is not `internal-sftp`.
    NotInternal(String),
    /// An argument that is no flag.
    UnexpectedArgument(String),
    /// A flag without its value.
    NeedsValue(char),
    /// `-l` with an unknown level.
    BadLogLevel(String),
    /// `-u` with a bad umask.
    BadUmask(String),
    /// `-p`, `-P`, `-Q`: request lists, not implemented.
    Unsupported(char),
    /// A flag sftp-server does not have.
    UnknownOption(char),
    /// `-d` with an unknown `%` token (None: `%` at the end).
    UnknownToken {
        /// `-d`'s value.
        template: String,
        /// The character after `%`.
        token: Option<char>,
    },
    /// The worker could not be started.
    Spawn(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::NotInternal(c) => write!(f, "not an {INTERNAL} command: {c}"),
            StartError::UnexpectedArgument(a) => {
                write!(f, "{INTERNAL}: unexpected argument \"{a}\"")
            }
            StartError::NeedsValue(name) => write!(f, "{INTERNAL}: option -{name} needs a value"),
            StartError::BadLogLevel(v) => write!(f, "{INTERNAL}: invalid log level \"{v}\""),
            StartError::BadUmask(v) => write!(f, "{INTERNAL}: invalid umask \"{v}\""),
            StartError::Unsupported(o) => write!(
                f,
                "{INTERNAL}: option -{o} is not supported by sluiced (request allow and deny lists are not implemented)"
            ),
            StartError::UnknownOption(o) => write!(f, "{INTERNAL}: unknown option -{o}"),
            StartError::UnknownToken { template, token } => write!(
                f,
                "{INTERNAL} -d {template}: unknown token %{}",
                token.map(String::from).unwrap_or_default()
            ),
            StartError::Spawn(e) => write!(f, "starting {INTERNAL}: {e}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

impl Options {
    /// Parses `internal-sftp [flags]` (the whole command line); the error
    /// names the flag.
    pub fn parse(command: &str) -> Result<Options, StartError> {
        let mut args = command.split_ascii_whitespace();
        if args.next() != Some(INTERNAL) {
            return Err(StartError::NotInternal(command.to_owned()));
        }
        let mut o = Options::default();
        while let Some(a) = args.next() {
            let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
                return Err(StartError::UnexpectedArgument(a.to_owned()));
            };
            for (i, f) in flags.char_indices() {
                let rest = flags.get(i + 1..).unwrap_or("");
                let mut value = |name: char| -> Result<String, StartError> {
                    if rest.is_empty() {
                        args.next()
                            .map(str::to_owned)
                            .ok_or(StartError::NeedsValue(name))
                    } else {
                        Ok(rest.to_owned())
                    }
                };
                match f {
                    'R' => o.read_only = true,
                    'e' => {}
                    'f' => {
                        // The facility of sftp-server's own syslog lines:
                        // ours go where sluiced's go.
                        value('f')?;
                        break;
                    }
                    'l' => {
                        let v = value('l')?;
                        o.log_level = match Level::parse(&v) {
                            Some(l) => l,
                            None => return Err(StartError::BadLogLevel(v)),
                        };
                        break;
                    }
                    'u' => {
                        let v = value('u')?;
                        let Some(m) = u32::from_str_radix(&v, 8).ok().filter(|m| *m <= 0o777)
                        else {
                            return Err(StartError::BadUmask(v));
                        };
                        o.umask = Some(m);
                        break;
                    }
                    'd' => {
                        o.start_dir = Some(value('d')?);
                        break;
                    }
                    'p' | 'P' | 'Q' => return Err(StartError::Unsupported(f)),
                    _ => return Err(StartError::UnknownOption(f)),
                }
            }
        }
        Ok(o)
    }

    /// The start directory with `%d` (home) and `%u` (user) expanded, as
    /// sftp-server's `-d` does; None when not set.
    pub fn start_dir_for(&self, user: &str, home: &str) -> Result<Option<String>, StartError> {
        let Some(t) = &self.start_dir else {
            return Ok(None);
        };
        let mut out = String::new();
        let mut chars = t.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('d') => out.push_str(home),
                Some('u') => out.push_str(user),
                token => {
                    return Err(StartError::UnknownToken {
                        template: t.clone(),
                        token,
                    })
                }
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_as_sftp_server_reads_them() {
        let o = Options::parse("internal-sftp -R -u 027 -l INFO -f AUTH -d /srv/%u").unwrap();
        assert!(o.read_only);
        assert_eq!(o.umask, Some(0o027));
        assert_eq!(o.log_level, Level::Info);
        assert_eq!(
            o.start_dir_for("bob", "/home/bob").unwrap().as_deref(),
            Some("/srv/bob")
        );
        let o = Options::parse("internal-sftp -Ru022 -lVERBOSE").unwrap();
        assert!(o.read_only);
        assert_eq!(o.umask, Some(0o022));
        assert_eq!(o.log_level, Level::Verbose);
        assert_eq!(Options::parse("internal-sftp").unwrap(), Options::default());
        for bad in [
            "internal-sftp -u 999",
            "internal-sftp -l LOUD",
            "internal-sftp -P read",
            "internal-sftp -x",
            "internal-sftp -d",
            "internal-sftp extra",
        ] {
            assert!(Options::parse(bad).is_err(), "{bad}");
        }
        let o = Options::parse("internal-sftp -d %d/in/%%").unwrap();
        assert_eq!(
            o.start_dir_for("u", "/h").unwrap().as_deref(),
            Some("/h/in/%")
        );
        let o = Options::parse("internal-sftp -d /%x").unwrap();
        let e = o.start_dir_for("u", "/h").unwrap_err();
        assert!(matches!(
            e,
            StartError::UnknownToken {
                token: Some('x'),
                ..
            }
        ));
        assert_eq!(e.to_string(), "internal-sftp -d /%x: unknown token %x");
        assert!(matches!(
            Options::parse("internal-sftp -P read"),
            Err(StartError::Unsupported('P'))
        ));
        assert_eq!(
            Options::parse("internal-sftp -d").unwrap_err().to_string(),
            "internal-sftp: option -d needs a value"
        );
    }

    #[test]
    fn internal_commands() {
        assert!(is_internal(b"internal-sftp"));
        assert!(is_internal(b"internal-sftp -R"));
        assert!(!is_internal(b"internal-sftpx"));
        assert!(!is_internal(b"/usr/lib/openssh/sftp-server"));
    }
}
