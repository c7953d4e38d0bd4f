//! Command lines of AuthorizedKeysCommand and AuthorizedPrincipalsCommand
//! as sshd reads them: split into words as its argv_split does, `%x`
//! tokens expanded in every word but the first, and the check made when
//! the configuration loads (server/keys_command.rs runs them).

/// sshd's argv_split ([`crate::config::argv_split`], no comments), with
/// sshd's words for an unclosed quote.
pub(crate) fn split_argv(s: &str) -> Result<Vec<String>, InvalidQuotes> {
    crate::config::argv_split(s, false).map_err(|_| InvalidQuotes)
}

/// Expands `%x` tokens from `values`; `%%` is a percent sign. An unknown
/// token or a lone `%` at the end is an error naming it.
pub(crate) fn expand(arg: &str, values: &[(char, String)]) -> Result<String, TokenError> {
    let mut out = String::new();
    let mut chars = arg.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(t) => match values.iter().find(|(k, _)| *k == t) {
                Some((_, v)) => out.push_str(v),
                None => return Err(TokenError::Unknown(t)),
            },
            None => return Err(TokenError::LonePercent),
        }
    }
    Ok(out)
}

/// The load-time check of a command line (sshd checks the path at load and
/// the rest at each login; a token it does not know would fail every
/// login, so it is refused here, before the server starts).
pub(crate) fn check_template(
    keyword: &str,
    tokens: &'static str,
    raw: &str,
) -> Result<(), TemplateError> {
    let argv = split_argv(raw).map_err(|_| TemplateError::Quotes {
        keyword: keyword.to_owned(),
        raw: raw.to_owned(),
    })?;
    let Some(program) = argv.first() else {
        return Err(TemplateError::NoArguments {
            keyword: keyword.to_owned(),
            raw: raw.to_owned(),
        });
    };
    if !program.starts_with('/') {
        return Err(TemplateError::NotAbsolute {
            keyword: keyword.to_owned(),
        });
    }
    let dummy: Vec<(char, String)> = tokens.chars().map(|c| (c, String::new())).collect();
    for a in argv.iter().skip(1) {
        expand(a, &dummy).map_err(|error| TemplateError::Token {
            keyword: keyword.to_owned(),
            arg: a.clone(),
            error,
            allowed: tokens,
        })?;
    }
    Ok(())
}

/// A command line with an unterminated quote: `contains invalid quotes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidQuotes;

impl std::fmt::Display for InvalidQuotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("contains invalid quotes")
    }
}

impl std::error::Error for InvalidQuotes {}

/// A `%` token the command does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// `unknown token %T`
    Unknown(char),
    /// A `%` ending an argument.
    LonePercent,
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Unknown(t) => write!(f, "unknown token %{t}"),
            TokenError::LonePercent => {
                f.write_str("a lone % at the end of an argument (write %% for a percent sign)")
            }
        }
    }
}

impl std::error::Error for TokenError {}

/// An AuthorizedKeysCommand or AuthorizedPrincipalsCommand refused when
/// the configuration loads (after `FILE line N: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// `KW "RAW" contains invalid quotes`
    Quotes {
        /// The keyword as written.
        keyword: String,
        /// The command as written.
        raw: String,
    },
    /// `KW "RAW" yielded no arguments`
    NoArguments {
        /// The keyword as written.
        keyword: String,
        /// The command as written.
        raw: String,
    },
    /// `KW must be an absolute path`
    NotAbsolute {
        /// The keyword as written.
        keyword: String,
    },
    /// `KW argument "ARG": ERROR (tokens allowed: %% %C ...)`
    Token {
        /// The keyword as written.
        keyword: String,
        /// The argument.
        arg: String,
        /// Its bad token.
        error: TokenError,
        /// The tokens the keyword takes.
        allowed: &'static str,
    },
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateError::Quotes { keyword, raw } => {
                write!(f, "{keyword} \"{raw}\" {InvalidQuotes}")
            }
            TemplateError::NoArguments { keyword, raw } => {
                write!(f, "{keyword} \"{raw}\" yielded no arguments")
            }
            TemplateError::NotAbsolute { keyword } => {
                write!(f, "{keyword} must be an absolute path")
            }
            TemplateError::Token {
                keyword,
                arg,
                error,
                allowed,
            } => {
                let allowed: Vec<String> = allowed.chars().map(|c| format!("%{c}")).collect();
                write!(
                    f,
                    "{keyword} argument \"{arg}\": {error} (tokens allowed: %% {})",
                    allowed.join(" ")
                )
            }
        }
    }
}

impl std::error::Error for TemplateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TemplateError::Token { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// AuthorizedKeysCommand's tokens (sshd_config(5) TOKENS, besides `%%`).
pub(crate) const KEYS_TOKENS: &str = "CDfhktUu";
/// AuthorizedPrincipalsCommand's tokens.
pub(crate) const PRINCIPALS_TOKENS: &str = "CDFfhiKkstTUu";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_and_tokens_as_sshd() {
        assert_eq!(
            split_argv(r#"/bin/x %u "a b" 'c d' e\ f \"q"#).unwrap(),
            ["/bin/x", "%u", "a b", "c d", "e f", "\"q"]
        );
        assert_eq!(split_argv("/bin/x \"open"), Err(InvalidQuotes));
        let v = vec![('u', "bob".to_owned()), ('U', "1000".to_owned())];
        assert_eq!(expand("%u:%U:%%", &v).unwrap(), "bob:1000:%");
        assert_eq!(expand("%x", &v), Err(TokenError::Unknown('x')));
        assert_eq!(expand("50%", &v), Err(TokenError::LonePercent));
        assert!(
            check_template("K", KEYS_TOKENS, "/bin/cat %h/keys %f %k %t %C %D %U %u %%").is_ok()
        );
        assert!(matches!(
            check_template("K", KEYS_TOKENS, "/bin/cat %i"),
            Err(TemplateError::Token {
                error: TokenError::Unknown('i'),
                ..
            })
        ));
        assert_eq!(
            check_template("K", KEYS_TOKENS, "/bin/cat %i")
                .unwrap_err()
                .to_string(),
            "K argument \"%i\": unknown token %i (tokens allowed: %% %C %D %f %h %k %t %U %u)"
        );
        assert!(check_template("P", PRINCIPALS_TOKENS, "/bin/echo %i %s %T %F %K").is_ok());
        assert!(matches!(
            check_template("K", KEYS_TOKENS, "cat %u"),
            Err(TemplateError::NotAbsolute { .. })
        ));
    }
}
