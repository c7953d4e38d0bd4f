//! Why a configuration could not be read: [`ConfigError`] for an ssh_config
//! (the file and line, ssh's wording) and [`ValueError`], the value-level
//! failures every keyword parser shares (ssh_config's values.rs and
//! sshd_config's keywords.rs), which the file-level errors of both sides
//! wrap; `Display` gives OpenSSH's own words (tests compare the two), so
//! callers print it as is and match on the kind, never on the text.

use super::algorithms::AlgorithmError;
use super::ssh::include::IncludeError;
use super::ssh::ipqos::BadIpQos;
use super::ssh::matching::MatchError;

/// A configuration line whose quotes do not close (argv_split's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnmatchedQuote;

impl std::fmt::Display for UnmatchedQuote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no matching quote")
    }
}

impl std::error::Error for UnmatchedQuote {}

/// A keyword's value that ssh or sshd refuses; `Display` is the message
/// that follows `FILE line N: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    /// Not one of the words the keyword takes (yes/no, a multi-state word):
    /// `unsupported option "V".`
    UnsupportedOption {
        /// The value as written.
        value: String,
    },
    /// `invalid time value.`
    InvalidTime,
    /// ssh's integer check: `invalid integer value "V".`
    InvalidInteger {
        /// The value as written.
        value: String,
    },
    /// sshd's integer check: `KEYWORD integer value invalid.`
    IntegerValueInvalid {
        /// The keyword as written.
        keyword: String,
    },
    /// `unsupported log facility 'V'`
    LogFacility {
        /// The value as written.
        value: String,
    },
    /// `unsupported log level 'V'`
    LogLevel {
        /// The value as written.
        value: String,
    },
    /// ssh's port check: `Bad port 'V'.`
    BadPort {
        /// The value as written.
        value: String,
    },
    /// sshd's port check: `Badly formatted port number.`
    BadlyFormattedPort,
    /// IPQoS.
    IpQos(BadIpQos),
    /// An algorithm list (Ciphers, MACs, KexAlgorithms, ...).
    Algorithms(AlgorithmError),
    /// ChannelWindow, ChannelWindowMax out of range:
    /// `Bad NAME 'V': use a size from 64K to 1G`.
    WindowSize {
        /// The keyword.
        keyword: String,
        /// The value as written.
        value: String,
    },
    /// `bad size`
    BadSize,
    /// `RekeyLimit too small`
    RekeyLimitTooSmall,
    /// `Bad CryptoThreads: V`
    CryptoThreads {
        /// The value as written.
        value: String,
    },
    /// sshd: a keyword with no value: `no argument after keyword "KW"`.
    NoArgument {
        /// The keyword as written.
        keyword: String,
    },
    /// `Subsystem 'NAME' already defined.`
    SubsystemDefined {
        /// The subsystem.
        name: String,
    },
    /// `Missing subsystem command.`
    MissingSubsystemCommand,
    /// `Invalid MaxStartups spec.`
    InvalidMaxStartups,
    /// `MaxStreams must be at least 1.`
    MaxStreamsZero,
    /// `Invalid KEYWORD.` (StreamLocalBindMask)
    Invalid {
        /// The keyword as written.
        keyword: String,
    },
    /// SetEnv without `=`: `Invalid environment.`
    InvalidEnvironment,
    /// PubkeyAuthOptions: `unsupported KEYWORD option V (none, touch-required, verify-required)`.
    PubkeyAuthOption {
        /// The keyword as written.
        keyword: String,
        /// The option.
        value: String,
    },
    /// AuthenticationMethods: `"any" must appear alone in KEYWORD`.
    AnyNotAlone {
        /// The keyword as written.
        keyword: String,
    },
    /// AuthenticationMethods: `invalid KEYWORD method list.`
    InvalidMethodList {
        /// The keyword as written.
        keyword: String,
    },
    /// `KEYWORD must be an absolute path`
    NotAbsolute {
        /// The keyword as written.
        keyword: String,
    },
    /// `keyword KW "V" argument must appear alone.` (`none`, `yes`, `no`)
    NotAlone {
        /// The keyword as written.
        keyword: String,
        /// The argument.
        value: String,
    },
    /// ChannelTimeout: `invalid channel timeout V`.
    InvalidChannelTimeout {
        /// The pair as written.
        value: String,
    },
    /// `keyword KW extra arguments at end of line`
    ExtraArguments {
        /// The keyword as written.
        keyword: String,
    },
    /// `no KEYWORD specified`
    NothingSpecified {
        /// The keyword as written.
        keyword: String,
    },
    /// PerSourcePenalties: `unsupported KEYWORD keyword V`.
    UnsupportedKeyword {
        /// The keyword as written.
        keyword: String,
        /// The field as written.
        value: String,
    },
    /// PerSourcePenalties: `invalid KEYWORD time value.`
    InvalidKeywordTime {
        /// The keyword as written.
        keyword: String,
    },
    /// PerSourcePenalties: `KEYWORD value invalid.`
    ValueInvalid {
        /// The keyword as written.
        keyword: String,
    },
    /// `Invalid KEYWORD spec.` (PerSourceNetBlockSize)
    InvalidSpec {
        /// The keyword as written.
        keyword: String,
    },
    /// `invalid KEYWORD list.` (PerSourcePenaltyExemptList)
    InvalidList {
        /// The keyword as written.
        keyword: String,
    },
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use ValueError as E;
        match self {
            E::UnsupportedOption { value } => write!(f, "unsupported option \"{value}\"."),
            E::InvalidTime => f.write_str("invalid time value."),
            E::InvalidInteger { value } => write!(f, "invalid integer value \"{value}\"."),
            E::IntegerValueInvalid { keyword } => write!(f, "{keyword} integer value invalid."),
            E::LogFacility { value } => write!(f, "unsupported log facility '{value}'"),
            E::LogLevel { value } => write!(f, "unsupported log level '{value}'"),
            E::BadPort { value } => write!(f, "Bad port '{value}'."),
            E::BadlyFormattedPort => f.write_str("Badly formatted port number."),
            E::IpQos(e) => e.fmt(f),
            E::Algorithms(e) => e.fmt(f),
            E::WindowSize { keyword, value } => {
                write!(f, "Bad {keyword} '{value}': use a size from 64K to 1G")
            }
            E::BadSize => f.write_str("bad size"),
            E::RekeyLimitTooSmall => f.write_str("RekeyLimit too small"),
            E::CryptoThreads { value } => write!(f, "Bad CryptoThreads: {value}"),
            E::NoArgument { keyword } => write!(f, "no argument after keyword \"{keyword}\""),
            E::SubsystemDefined { name } => write!(f, "Subsystem '{name}' already defined."),
            E::MissingSubsystemCommand => f.write_str("Missing subsystem command."),
            E::InvalidMaxStartups => f.write_str("Invalid MaxStartups spec."),
            E::MaxStreamsZero => f.write_str("MaxStreams must be at least 1."),
            E::Invalid { keyword } => write!(f, "Invalid {keyword}."),
            E::InvalidEnvironment => f.write_str("Invalid environment."),
            E::PubkeyAuthOption { keyword, value } => write!(
                f,
                "unsupported {keyword} option {value} (none, touch-required, verify-required)"
            ),
            E::AnyNotAlone { keyword } => write!(f, "\"any\" must appear alone in {keyword}"),
            E::InvalidMethodList { keyword } => write!(f, "invalid {keyword} method list."),
            E::NotAbsolute { keyword } => write!(f, "{keyword} must be an absolute path"),
            E::NotAlone { keyword, value } => {
                write!(
                    f,
                    "keyword {keyword} \"{value}\" argument must appear alone."
                )
            }
            E::InvalidChannelTimeout { value } => write!(f, "invalid channel timeout {value}"),
            E::ExtraArguments { keyword } => {
                write!(f, "keyword {keyword} extra arguments at end of line")
            }
            E::NothingSpecified { keyword } => write!(f, "no {keyword} specified"),
            E::UnsupportedKeyword { keyword, value } => {
                write!(f, "unsupported {keyword} keyword {value}")
            }
            E::InvalidKeywordTime { keyword } => write!(f, "invalid {keyword} time value."),
            E::ValueInvalid { keyword } => write!(f, "{keyword} value invalid."),
            E::InvalidSpec { keyword } => write!(f, "Invalid {keyword} spec."),
            E::InvalidList { keyword } => write!(f, "invalid {keyword} list."),
        }
    }
}

impl std::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ValueError::IpQos(e) => Some(e),
            ValueError::Algorithms(e) => Some(e),
            _ => None,
        }
    }
}

impl From<AlgorithmError> for ValueError {
    fn from(e: AlgorithmError) -> Self {
        ValueError::Algorithms(e)
    }
}

impl From<BadIpQos> for ValueError {
    fn from(e: BadIpQos) -> Self {
        ValueError::IpQos(e)
    }
}

/// Why ssh gives up on an ssh_config line (after `FILE line N: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadLine {
    /// An unknown keyword: `Bad configuration option: KW` (ssh writes
    /// `FILE: line N:` with a colon for it).
    UnknownKeyword(String),
    /// A keyword with no value: `missing argument.`
    MissingArgument,
    /// A bad value.
    Value(ValueError),
    /// A Match line ssh refuses: `Bad Match condition`, the parser's reason
    /// printed on the line before.
    Match(MatchError),
    /// An Include argument that cannot be expanded.
    Include(IncludeError),
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadLine::UnknownKeyword(kw) => write!(f, "Bad configuration option: {kw}"),
            BadLine::MissingArgument => f.write_str("missing argument."),
            BadLine::Value(e) => e.fmt(f),
            BadLine::Match(_) => f.write_str("Bad Match condition"),
            BadLine::Include(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BadLine {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BadLine::Value(e) => Some(e),
            BadLine::Match(e) => Some(e),
            BadLine::Include(e) => Some(e),
            BadLine::UnknownKeyword(_) | BadLine::MissingArgument => None,
        }
    }
}

impl From<ValueError> for BadLine {
    fn from(e: ValueError) -> Self {
        BadLine::Value(e)
    }
}

/// A configuration file (or `-o` option) that ssh would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A line that does not split into a keyword and arguments (an
    /// unterminated quote): `FILE: line N: no matching quote`.
    Syntax {
        /// File name as given (`command-line` for `-o`).
        file: String,
        /// 1-based line (0 for `-o`).
        line: usize,
        /// What is wrong.
        error: UnmatchedQuote,
    },
    /// A bad keyword, value or Match condition; ssh gives up on the file:
    /// `[DETAIL\n]FILE line N: MESSAGE\nFILE: terminating, 1 bad configuration options`
    /// (an unknown keyword reads `FILE: line N: Bad configuration option: KW`).
    Bad {
        /// File name as given.
        file: String,
        /// 1-based line (0 for `-o`).
        line: usize,
        /// What is wrong.
        error: BadLine,
    },
    /// Include files nested deeper than ssh follows.
    IncludeDepth {
        /// The including file.
        file: String,
        /// Its line.
        line: usize,
    },
    /// `Include` given as a `-o` option.
    IncludeOnCommandLine,
    /// The `-F` file cannot be read.
    Open {
        /// The file.
        file: String,
        /// The system's reason.
        error: String,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Syntax { file, line, error } => write!(f, "{file}: line {line}: {error}"),
            ConfigError::Bad { file, line, error } => {
                if let BadLine::Match(d) = error {
                    writeln!(f, "{d}")?;
                }
                let sep = if matches!(error, BadLine::UnknownKeyword(_)) {
                    ":"
                } else {
                    ""
                };
                write!(
                    f,
                    "{file}{sep} line {line}: {error}\n{file}: terminating, 1 bad configuration options"
                )
            }
            ConfigError::IncludeDepth { file, line } => {
                write!(f, "{file} line {line}: Include nesting too deep")
            }
            ConfigError::IncludeOnCommandLine => {
                f.write_str("Include directive not supported as a command-line option")
            }
            ConfigError::Open { file, error } => {
                write!(f, "Can't open user config file {file}: {error}")
            }
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Syntax { error, .. } => Some(error),
            ConfigError::Bad { error, .. } => Some(error),
            _ => None,
        }
    }
}
