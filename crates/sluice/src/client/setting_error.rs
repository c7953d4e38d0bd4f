//! A client setting sluice refuses before connecting (an ssh_config
//! value, a command-line value, options that cannot go together), by kind;
//! `Display` is ssh's sentence for it.

use crate::config::algorithms::AlgorithmError;
use crate::config::error::ValueError;
use crate::config::ssh::dump::DumpError;
use crate::config::ssh::ipqos::BadIpQos;
use crate::config::ssh::jump::InvalidProxyJump;
use crate::config::ssh::limits::Refused;
use crate::config::ssh::tokens::ExpandError;
use crate::config::ssh::ResolveError;

/// A client setting (an ssh_config keyword's value, a command-line value or
/// options that cannot go together) that sluice refuses before connecting.
#[derive(Debug)]
pub enum SettingError {
    /// `Bad KEYWORD 'VALUE': use EXPECTED`.
    BadValue {
        /// The keyword as ssh_config spells it.
        keyword: &'static str,
        /// The value given.
        value: String,
        /// What would be accepted.
        expected: String,
    },
    /// `Bad KIND forwarding specification 'SPEC'` (-L, -R, -D, -W and
    /// their keywords).
    BadForward {
        /// "local", "remote", "dynamic" or "stdio".
        kind: &'static str,
        /// As given.
        spec: String,
    },
    /// EscapeChar (or -e) that is neither a character, `^X` nor `none`.
    BadEscapeChar(String),
    /// ControlPersist neither yes, no nor a time.
    BadControlPersist(String),
    /// CompressionAlgorithms names an engine sluice lacks.
    UnknownCompression {
        /// The whole list.
        list: String,
        /// The unknown name.
        name: String,
        /// The names known.
        known: Vec<String>,
    },
    /// A path setting whose `~`, `${VAR}` or tokens did not expand.
    Path {
        /// The keyword as ssh_config spells it.
        keyword: &'static str,
        /// As given.
        path: String,
        /// Why (the expander's message).
        reason: String,
    },
    /// A setting names an environment variable that is not set.
    EnvUnset {
        /// The keyword as ssh_config spells it.
        keyword: &'static str,
        /// The variable.
        var: String,
    },
    /// Settings that cannot go together; ssh's sentence.
    Conflict(&'static str),
    /// A local resource the settings need could not be had.
    Io {
        /// What was tried: "/dev/null", "dup2", "ProxyJump: cannot find this program".
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
    /// A keyword's value config/ refuses.
    Value(ValueError),
    /// An algorithm list (Ciphers, MACs, ...) config/ refuses.
    Algorithm(AlgorithmError),
    /// `%`-tokens, `${VAR}` or `~` that did not expand.
    Expand(ExpandError),
    /// Resolving the host's configuration failed (HostName, Match exec...).
    Resolve(ResolveError),
    /// IPQoS.
    IpQos(BadIpQos),
    /// ProxyJump.
    ProxyJump(InvalidProxyJump),
    /// `-G` could not write the configuration.
    Dump(DumpError),
    /// A keyword sluice refuses (config/ssh/limits.rs).
    Limit(Refused),
    /// MetricsPath's file could not be created.
    Metrics(crate::net::metrics::samples::CreateError),
}

macro_rules! wrap {
    ($($ty:ty => $v:ident),* $(,)?) => {$(
        impl From<$ty> for SettingError {
            fn from(e: $ty) -> Self {
                SettingError::$v(e)
            }
        }
    )*};
}

wrap! {
    ValueError => Value,
    AlgorithmError => Algorithm,
    ExpandError => Expand,
    ResolveError => Resolve,
    BadIpQos => IpQos,
    InvalidProxyJump => ProxyJump,
    DumpError => Dump,
    Refused => Limit,
}

impl SettingError {
    /// `Bad KEYWORD 'VALUE': use EXPECTED`.
    pub fn bad(keyword: &'static str, value: &str, expected: impl Into<String>) -> Self {
        SettingError::BadValue {
            keyword,
            value: value.to_owned(),
            expected: expected.into(),
        }
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingError::BadValue {
                keyword,
                value,
                expected,
            } => write!(f, "Bad {keyword} '{value}': use {expected}"),
            SettingError::BadForward { kind, spec } => {
                write!(f, "Bad {kind} forwarding specification '{spec}'")
            }
            SettingError::BadEscapeChar(v) => write!(f, "Bad escape character '{v}'."),
            SettingError::BadControlPersist(v) => {
                write!(f, "Bad ControlPersist value '{v}': yes, no or a time (10m)")
            }
            SettingError::UnknownCompression { list, name, known } => write!(
                f,
                "Bad CompressionAlgorithms '{list}': unknown '{name}' (known: {})",
                known.join(",")
            ),
            SettingError::Path {
                keyword,
                path,
                reason,
            } => write!(f, "{keyword} {path}: {reason}"),
            SettingError::EnvUnset { keyword, var } => {
                write!(f, "{keyword}: environment variable {var} is not set")
            }
            SettingError::Conflict(m) => f.write_str(m),
            SettingError::Io { what, error } => write!(f, "{what}: {error}"),
            SettingError::Value(e) => write!(f, "{e}"),
            SettingError::Algorithm(e) => write!(f, "{e}"),
            SettingError::Expand(e) => write!(f, "{e}"),
            SettingError::Resolve(e) => write!(f, "{e}"),
            SettingError::IpQos(e) => write!(f, "{e}"),
            SettingError::ProxyJump(e) => write!(f, "{e}"),
            SettingError::Dump(e) => write!(f, "{e}"),
            SettingError::Limit(e) => write!(f, "{e}"),
            SettingError::Metrics(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SettingError {}
