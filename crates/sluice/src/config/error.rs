//! Why an ssh_config could not be read, with the file and line where it
//! applies; `Display` gives ssh's own wording (tests compare the two), so
//! callers print it as is and match on the kind, never on the text.

/// A configuration file (or `-o` option) that ssh would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A line that does not split into a keyword and arguments (an
    /// unterminated quote): `FILE: line N: MESSAGE`.
    Syntax {
        /// File name as given (`command-line` for `-o`).
        file: String,
        /// 1-based line (0 for `-o`).
        line: usize,
        /// What is wrong.
        message: String,
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
        message: String,
        /// A line printed before (the Match parser's reason).
        detail: Option<String>,
        /// ssh writes `FILE: line N:` (with a colon) for unknown keywords.
        colon: bool,
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
            ConfigError::Syntax {
                file,
                line,
                message,
            } => write!(f, "{file}: line {line}: {message}"),
            ConfigError::Bad {
                file,
                line,
                message,
                detail,
                colon,
            } => {
                if let Some(d) = detail {
                    writeln!(f, "{d}")?;
                }
                let sep = if *colon { ":" } else { "" };
                write!(
                    f,
                    "{file}{sep} line {line}: {message}\n{file}: terminating, 1 bad configuration options"
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

impl std::error::Error for ConfigError {}

/// At a boundary that still carries text (the `-G` printer, the client's
/// String-returning helpers), the message itself.
impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}
