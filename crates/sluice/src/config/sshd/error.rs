//! Why an sshd_config could not be read, in sshd's words (`FILE line N:
//! ...`, `unsupported option KW at FILE:N: why`, the "terminating" line):
//! [`SshdConfigError`] names the file and line and wraps the value-level
//! [`ValueError`] the keyword parsers return; callers match on the kind.

use super::command_line::TemplateError;
use super::matching::MatchError;
use super::snapshot::ReadError;
use crate::config::error::{UnmatchedQuote, ValueError};

/// What is wrong with one line, after sshd's `FILE line N: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// A keyword's value.
    Value(ValueError),
    /// An unterminated quote.
    Syntax(UnmatchedQuote),
    /// AuthorizedKeysCommand, AuthorizedPrincipalsCommand's template.
    Command(TemplateError),
    /// `Match` given as a `-o` option.
    MatchOnCommandLine,
    /// `Include` alone.
    IncludeMissingFilename,
    /// Include files nested deeper than sshd follows.
    IncludeTooDeep,
    /// An included file that cannot be read: `PATH: ERROR`.
    IncludeRead {
        /// The included file.
        path: String,
        /// Why.
        error: ReadError,
    },
    /// A binary KRL that does not parse: `RevokedKeys PATH: REASON` (the
    /// key layer's words).
    RevokedKeys {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Value(e) => e.fmt(f),
            LineError::Syntax(e) => e.fmt(f),
            LineError::Command(e) => e.fmt(f),
            LineError::MatchOnCommandLine => {
                f.write_str("Match directive not supported as a command-line option")
            }
            LineError::IncludeMissingFilename => f.write_str("Include missing filename argument"),
            LineError::IncludeTooDeep => f.write_str("Include nested too deep"),
            LineError::IncludeRead { path, error } => write!(f, "{path}: {error}"),
            LineError::RevokedKeys { path, reason } => write!(f, "RevokedKeys {path}: {reason}"),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LineError::Value(e) => Some(e),
            LineError::Syntax(e) => Some(e),
            LineError::Command(e) => Some(e),
            LineError::IncludeRead { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<ValueError> for LineError {
    fn from(e: ValueError) -> Self {
        LineError::Value(e)
    }
}

impl From<TemplateError> for LineError {
    fn from(e: TemplateError) -> Self {
        LineError::Command(e)
    }
}

/// Why a value sluiced does not implement is refused (the part after
/// `unsupported option KW at FILE:N: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A keyword of keyword_table.rs's UNSUPPORTED with other than its off
    /// value: `WHY; only "KW OFF" is accepted`.
    OnlyOff {
        /// What sluiced lacks.
        why: &'static str,
        /// The keyword as written.
        keyword: String,
        /// The one value accepted.
        off: &'static str,
    },
    /// AuthenticationMethods naming a keyboard-interactive device other
    /// than `pam`.
    KbdDevice {
        /// The method list.
        list: String,
        /// The device.
        device: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::OnlyOff { why, keyword, off } => {
                write!(f, "{why}; only \"{keyword} {off}\" is accepted")
            }
            Refusal::KbdDevice { list, device } => write!(
                f,
                "\"{list}\": keyboard-interactive device \"{device}\" does not exist in sluiced (only \"pam\", with UsePAM yes)"
            ),
        }
    }
}

/// An unknown keyword: `FILE: line N: Bad configuration option: KW`
/// (sshd goes on reading, then gives up naming them all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadKeyword {
    /// The file.
    pub file: String,
    /// The line.
    pub line: usize,
    /// The keyword as written.
    pub keyword: String,
}

impl std::fmt::Display for BadKeyword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: line {}: Bad configuration option: {}",
            self.file, self.line, self.keyword
        )
    }
}

/// An sshd_config (or `-o` option, `-C` spec) that sshd would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshdConfigError {
    /// `FILE line N: ERROR`.
    Line {
        /// File name (`command-line` for `-o`).
        file: String,
        /// Line number (0 for `-o`).
        line: usize,
        /// What is wrong.
        error: LineError,
    },
    /// A value sluiced cannot honour:
    /// `unsupported option KW at FILE:N: REASON` (exit 255).
    Refused {
        /// File name.
        file: String,
        /// Line number.
        line: usize,
        /// The keyword as written.
        keyword: String,
        /// Why.
        reason: Refusal,
    },
    /// Unknown keywords, each on its line, then
    /// `PATH: terminating, N bad configuration options`.
    BadOptions {
        /// The main configuration file.
        path: String,
        /// The lines.
        bad: Vec<BadKeyword>,
    },
    /// A keyword sshd does not allow inside Match (after the unknown
    /// keywords seen so far):
    /// `FILE line N: Directive 'KW' is not allowed within a Match block`.
    NotAllowedInMatch {
        /// Unknown keywords before it.
        earlier: Vec<BadKeyword>,
        /// File name.
        file: String,
        /// Line number.
        line: usize,
        /// The keyword as written.
        keyword: String,
    },
    /// A Match line sshd refuses: the reason, then either
    /// `FILE line N: Bad Match condition` or ` at line N`.
    Match {
        /// File name.
        file: String,
        /// Line number.
        line: usize,
        /// Why.
        error: MatchError,
    },
    /// The configuration file cannot be read: `PATH: ERROR`.
    Read {
        /// The file.
        path: String,
        /// Why.
        error: ReadError,
    },
    /// sshd's startup check: AuthorizedKeysCommand without a user.
    KeysCommandWithoutUser,
    /// sshd's startup check: AuthorizedPrincipalsCommand without a user.
    PrincipalsCommandWithoutUser,
    /// sshd's startup check: no AuthenticationMethods list is made of
    /// enabled methods only.
    MethodsUnsatisfiable,
    /// `-T -C` without `lport` while a Match line tests LocalPort.
    LocalPortNotInSpec,
}

impl std::fmt::Display for SshdConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use SshdConfigError as E;
        match self {
            E::Line { file, line, error } => write!(f, "{file} line {line}: {error}"),
            E::Refused {
                file,
                line,
                keyword,
                reason,
            } => write!(f, "unsupported option {keyword} at {file}:{line}: {reason}"),
            E::BadOptions { path, bad } => {
                for b in bad {
                    writeln!(f, "{b}")?;
                }
                write!(f, "{path}: terminating, {} bad configuration options", bad.len())
            }
            E::NotAllowedInMatch {
                earlier,
                file,
                line,
                keyword,
            } => {
                for b in earlier {
                    writeln!(f, "{b}")?;
                }
                write!(
                    f,
                    "{file} line {line}: Directive '{keyword}' is not allowed within a Match block"
                )
            }
            E::Match { file, line, error } => {
                if error.bad_condition() {
                    write!(f, "{error}\n{file} line {line}: Bad Match condition")
                } else {
                    write!(f, "{error} at line {line}")
                }
            }
            E::Read { path, error } => write!(f, "{path}: {error}"),
            E::KeysCommandWithoutUser => {
                f.write_str("AuthorizedKeysCommand set without AuthorizedKeysCommandUser")
            }
            E::PrincipalsCommandWithoutUser => f.write_str(
                "AuthorizedPrincipalsCommand set without AuthorizedPrincipalsCommandUser",
            ),
            E::MethodsUnsatisfiable => f.write_str(
                "AuthenticationMethods cannot be satisfied by enabled authentication methods",
            ),
            E::LocalPortNotInSpec => f.write_str(
                "'Match LocalPort' in configuration but 'lport' not in connection test specification.",
            ),
        }
    }
}

impl std::error::Error for SshdConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SshdConfigError::Line { error, .. } => Some(error),
            SshdConfigError::Match { error, .. } => Some(error),
            SshdConfigError::Read { error, .. } => Some(error),
            _ => None,
        }
    }
}
