//! Command lines of AuthorizedKeysCommand and AuthorizedPrincipalsCommand
//! as sshd reads them: split into words as its argv_split does, `%x`
//! tokens expanded in every word but the first, and the check made when
//! the configuration loads (server/keys_command.rs runs them).

/// sshd's argv_split ([`crate::config::argv_split`], no comments), with
/// sshd's words for an unclosed quote.
pub(crate) fn split_argv(s: &str) -> Result<Vec<String>, String> {
    crate::config::argv_split(s, false).map_err(|_| "contains invalid quotes".into())
}

/// Expands `%x` tokens from `values`; `%%` is a percent sign. An unknown
/// token or a lone `%` at the end is an error naming it.
pub(crate) fn expand(arg: &str, values: &[(char, String)]) -> Result<String, String> {
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
                None => return Err(format!("unknown token %{t}")),
            },
            None => {
                return Err(
                    "a lone % at the end of an argument (write %% for a percent sign)".into(),
                )
            }
        }
    }
    Ok(out)
}

/// The load-time check of a command line (sshd checks the path at load and
/// the rest at each login; a token it does not know would fail every
/// login, so it is refused here, before the server starts).
pub(crate) fn check_template(keyword: &str, tokens: &str, raw: &str) -> Result<(), String> {
    let argv = split_argv(raw).map_err(|e| format!("{keyword} \"{raw}\" {e}"))?;
    let Some(program) = argv.first() else {
        return Err(format!("{keyword} \"{raw}\" yielded no arguments"));
    };
    if !program.starts_with('/') {
        return Err(format!("{keyword} must be an absolute path"));
    }
    let dummy: Vec<(char, String)> = tokens.chars().map(|c| (c, String::new())).collect();
    for a in argv.iter().skip(1) {
        expand(a, &dummy).map_err(|e| {
            let allowed: Vec<String> = tokens.chars().map(|c| format!("%{c}")).collect();
            format!(
                "{keyword} argument \"{a}\": {e} (tokens allowed: %% {})",
                allowed.join(" ")
            )
        })?;
    }
    Ok(())
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
        assert!(split_argv("/bin/x \"open").is_err());
        let v = vec![('u', "bob".to_owned()), ('U', "1000".to_owned())];
        assert_eq!(expand("%u:%U:%%", &v).unwrap(), "bob:1000:%");
        assert!(expand("%x", &v).is_err());
        assert!(expand("50%", &v).is_err());
        assert!(
            check_template("K", KEYS_TOKENS, "/bin/cat %h/keys %f %k %t %C %D %U %u %%").is_ok()
        );
        assert!(check_template("K", KEYS_TOKENS, "/bin/cat %i").is_err());
        assert!(check_template("P", PRINCIPALS_TOKENS, "/bin/echo %i %s %T %F %K").is_ok());
        assert!(check_template("K", KEYS_TOKENS, "cat %u").is_err());
    }
}
