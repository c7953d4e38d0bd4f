//! Why a command line was refused, by kind; `Display` gives the text the
//! programs print (ssh's, sshd's, sftp's and scp's wording, usage after).

/// A command line that cannot be run.
#[derive(Debug)]
pub enum UsageError {
    /// The usage text alone (no destination, a flag the program lacks).
    Usage(&'static str),
    /// `unknown option -- C`, the usage after it when given.
    UnknownOption {
        /// The option letter.
        opt: char,
        /// The usage printed under it.
        usage: Option<&'static str>,
    },
    /// `[PROG: ]option requires an argument -- C`, the usage after it.
    MissingArgument {
        /// The program name printed first, if the program prints it.
        prog: Option<&'static str>,
        /// The option letter.
        opt: char,
        /// The usage printed under it.
        usage: Option<&'static str>,
    },
    /// `PROG: extra argument ARG` and the usage.
    ExtraArgument {
        /// The program.
        prog: &'static str,
        /// The word.
        arg: String,
        /// The usage printed under it.
        usage: &'static str,
    },
    /// A subcommand's word it does not know: `PROG: unknown argument 'A'`.
    UnknownArgument {
        /// The subcommand ("demo", "bench-crypto").
        prog: &'static str,
        /// The word.
        arg: String,
        /// The usage printed under it.
        usage: &'static str,
    },
    /// A subcommand's option without its value: `PROG: A needs a value`.
    NeedsValue {
        /// The subcommand.
        prog: &'static str,
        /// The option.
        arg: String,
    },
    /// A value refused: `WHAT 'V'` or `WHAT "V"` (ssh quotes with ', sftp
    /// and scp with ").
    BadValue {
        /// "Bad port", "Invalid limit", "demo: bad size"...
        what: &'static str,
        /// The value.
        value: String,
        /// The quote character around it.
        quote: char,
    },
    /// Words after `sluice bench`'s destination.
    ExtraWords {
        /// The words.
        words: Vec<String>,
        /// The usage printed under them.
        usage: &'static str,
    },
    /// A flag refused with the program's sentence.
    Refused(&'static str),
    /// A flag refused with the program's sentence about it.
    Unsupported {
        /// The program.
        prog: &'static str,
        /// The option letter.
        opt: char,
    },
    /// `-O` with a command ssh does not know.
    Mux(crate::client::mux_error::MuxError),
    /// `sluice bench`'s own options.
    Bench(crate::path_bench::BenchError),
}

impl UsageError {
    /// `WHAT 'V'`.
    pub fn bad(what: &'static str, value: &str) -> Self {
        UsageError::BadValue {
            what,
            value: value.to_owned(),
            quote: '\'',
        }
    }

    /// `WHAT "V"`.
    pub fn invalid(what: &'static str, value: &str) -> Self {
        UsageError::BadValue {
            what,
            value: value.to_owned(),
            quote: '"',
        }
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let usage = |f: &mut std::fmt::Formatter<'_>, u: &Option<&'static str>| match u {
            Some(u) => write!(f, "\n{u}"),
            None => Ok(()),
        };
        match self {
            UsageError::Usage(u) => f.write_str(u),
            UsageError::UnknownOption { opt, usage: u } => {
                write!(f, "unknown option -- {opt}")?;
                usage(f, u)
            }
            UsageError::MissingArgument {
                prog,
                opt,
                usage: u,
            } => {
                if let Some(p) = prog {
                    write!(f, "{p}: ")?;
                }
                write!(f, "option requires an argument -- {opt}")?;
                usage(f, u)
            }
            UsageError::ExtraArgument { prog, arg, usage } => {
                write!(f, "{prog}: extra argument {arg}\n{usage}")
            }
            UsageError::UnknownArgument { prog, arg, usage } => {
                write!(f, "{prog}: unknown argument '{arg}'\n{usage}")
            }
            UsageError::NeedsValue { prog, arg } => write!(f, "{prog}: {arg} needs a value"),
            UsageError::BadValue { what, value, quote } => {
                write!(f, "{what} {quote}{value}{quote}")
            }
            UsageError::ExtraWords { words, usage } => write!(
                f,
                "bench: unexpected words after the destination: {}\n{usage}",
                words.join(" ")
            ),
            UsageError::Refused(m) => f.write_str(m),
            UsageError::Unsupported { prog, opt } => write!(
                f,
                "{prog}: -{opt} is not supported: the connection is sluice's own, in this process"
            ),
            UsageError::Mux(e) => write!(f, "{e}"),
            UsageError::Bench(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for UsageError {}
