//! ssh_config(5) TOKENS (`%h`, `%p`, `%C`, ...) and `~` in file names, each
//! keyword with the set of tokens ssh accepts in it.

/// Tokens of file-name keywords (IdentityFile, ControlPath, IdentityAgent,
/// UserKnownHostsFile, CertificateFile) and of Match exec / RemoteCommand.
pub const FILE: &str = "CdhikLlnpru";
/// LocalCommand: the file tokens and %T (the tunnel device, "NONE").
pub const LOCAL_COMMAND: &str = "CdhikLlnpruT";
/// ProxyCommand.
pub const PROXY: &str = "hnpr";
/// HostName.
pub const HOSTNAME: &str = "h";

/// What the tokens stand for in one connection.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// %n: the host as typed.
    pub original_host: String,
    /// %h: the remote host name after HostName.
    pub host: String,
    /// %p.
    pub port: u16,
    /// %r: the remote user.
    pub remote_user: String,
    /// %u: the local user.
    pub local_user: String,
    /// %d: the local user's home directory.
    pub home: String,
    /// %k: HostKeyAlias, if set.
    pub host_key_alias: Option<String>,
}

/// The local host name (%l), from gethostname(2).
pub fn local_hostname() -> String {
    // glibc's gethostname is uname's nodename too.
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

impl Tokens {
    /// %C: SHA-1 of %l%h%p%r in hex, as ssh computes it for ControlPath.
    pub fn conn_hash(&self) -> String {
        let s = format!(
            "{}{}{}{}",
            local_hostname(),
            self.host,
            self.port,
            self.remote_user
        );
        let d =
            aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, s.as_bytes());
        d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn value(&self, c: char) -> String {
        match c {
            'C' => self.conn_hash(),
            'd' => self.home.clone(),
            'h' => self.host.clone(),
            'i' => rustix::process::getuid().as_raw().to_string(),
            'k' => self
                .host_key_alias
                .clone()
                .unwrap_or_else(|| self.original_host.clone()),
            'L' => {
                let l = local_hostname();
                l.split('.').next().unwrap_or_default().to_owned()
            }
            'l' => local_hostname(),
            'n' => self.original_host.clone(),
            'p' => self.port.to_string(),
            'r' => self.remote_user.clone(),
            'u' => self.local_user.clone(),
            'T' => "NONE".into(),
            _ => String::new(),
        }
    }

    /// Expands `%x` tokens among `allowed` (and `%%`); others are an error,
    /// worded as ssh's.
    pub fn expand(&self, s: &str, allowed: &str) -> Result<String, ExpandError> {
        self.expand_tokens(s, allowed, false)
    }

    /// `${VAR}` and then tokens in the result: Unix socket paths of
    /// LocalForward and RemoteForward, as ssh expands them in two steps.
    pub fn expand_env(&self, s: &str, allowed: &str) -> Result<String, ExpandError> {
        self.expand(&dollar(s)?, allowed)
    }

    /// `~`, then `${VAR}` and tokens in one pass (a variable's value is not
    /// read for tokens): how ssh expands file names (IdentityFile,
    /// CertificateFile, ControlPath, IdentityAgent, ForwardAgent,
    /// UserKnownHostsFile).
    pub fn path(&self, s: &str, allowed: &str) -> Result<String, ExpandError> {
        self.expand_tokens(&tilde(s)?, allowed, true)
    }

    fn expand_tokens(&self, s: &str, allowed: &str, env: bool) -> Result<String, ExpandError> {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find(|c| c == '%' || (env && c == '$')) {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            if tail.starts_with("${") {
                let n = var_len(tail, s)?;
                out.push_str(&dollar(&tail[..n])?);
                rest = &tail[n..];
                continue;
            }
            if tail.starts_with('$') {
                out.push('$');
                rest = &tail[1..];
                continue;
            }
            let mut it = tail[1..].chars();
            match it.next() {
                Some('%') => out.push('%'),
                Some(k) if allowed.contains(k) => out.push_str(&self.value(k)),
                Some(k) => return Err(ExpandError::UnknownKey(k)),
                None => return Err(ExpandError::InvalidFormat),
            }
            rest = it.as_str();
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// The length of the `${NAME}` that `tail` starts with (`whole`: for the
/// message).
fn var_len(tail: &str, whole: &str) -> Result<usize, ExpandError> {
    tail.find('}')
        .map(|e| e + 1)
        .ok_or_else(|| ExpandError::UnclosedVariable {
            text: whole.to_owned(),
        })
}

/// `${VAR}` from the environment (ssh_config(5) ENVIRONMENT VARIABLES); an
/// unset variable is an error, as in ssh. `$` not followed by `{` stays.
pub fn dollar(s: &str) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = i + var_len(&rest[i..], s)?;
        let name = &rest[i + 2..end - 1];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(ExpandError::BadVariableName {
                name: name.to_owned(),
                text: s.to_owned(),
            });
        }
        let value = std::env::var(name).map_err(|_| ExpandError::UnsetVariable {
            name: name.to_owned(),
            text: s.to_owned(),
        })?;
        out.push_str(&value);
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `~/x` and `~user/x` (tilde_expand_filename); other strings unchanged.
pub fn tilde(s: &str) -> Result<String, ExpandError> {
    let Some(rest) = s.strip_prefix('~') else {
        return Ok(s.to_owned());
    };
    let (name, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let home = if name.is_empty() {
        own_home()
    } else {
        home_of(Some(name))
    }
    .ok_or_else(|| ExpandError::NoSuchUser {
        name: name.to_owned(),
    })?;
    // `~` alone is the home directory with a slash, as ssh's tilde_expand.
    let tail = if tail.is_empty() { "/" } else { tail };
    Ok(format!("{}{tail}", home.trim_end_matches('/')))
}

/// The local user's home directory (%d): $HOME, else the password
/// database's; no trailing slash.
pub fn home_dir() -> String {
    own_home()
        .map(|h| h.trim_end_matches('/').to_owned())
        .unwrap_or_default()
}

/// $HOME, else the password database's home for our uid.
fn own_home() -> Option<String> {
    std::env::var("HOME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| home_of(None))
}

/// A user's home directory from the password database (None: our own uid).
pub fn home_of(user: Option<&str>) -> Option<String> {
    match user {
        Some(u) => crate::users::by_name(u),
        None => crate::users::current(),
    }
    .map(|u| u.home)
}

/// A `%` token, `${VAR}` or `~user` that cannot be expanded, in ssh's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// A token the keyword does not take: `percent_expand: unknown key %K`.
    UnknownKey(char),
    /// A `%` at the end: `percent_expand: invalid format`.
    InvalidFormat,
    /// `${` without `}`.
    UnclosedVariable {
        /// The whole string.
        text: String,
    },
    /// `${NAME}` with a name of other than letters, digits and `_`.
    BadVariableName {
        /// The name.
        name: String,
        /// The whole string.
        text: String,
    },
    /// `${NAME}` unset.
    UnsetVariable {
        /// The name.
        name: String,
        /// The whole string.
        text: String,
    },
    /// `~user` of a user the password database does not know.
    NoSuchUser {
        /// The user ("" for our own uid).
        name: String,
    },
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::UnknownKey(k) => write!(f, "percent_expand: unknown key %{k}"),
            ExpandError::InvalidFormat => f.write_str("percent_expand: invalid format"),
            ExpandError::UnclosedVariable { text } => write!(
                f,
                "environment variable in \"{text}\" is missing its closing '}}'"
            ),
            ExpandError::BadVariableName { name, text } => write!(
                f,
                "bad environment variable name \"${{{name}}}\" in \"{text}\""
            ),
            ExpandError::UnsetVariable { name, text } => {
                write!(f, "env var ${{{name}}} has no value (in \"{text}\")")
            }
            ExpandError::NoSuchUser { name } => write!(f, "tilde_expand: No such user {name}"),
        }
    }
}

impl std::error::Error for ExpandError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_tilde() {
        let t = Tokens {
            original_host: "foo".into(),
            host: "foo.example.com".into(),
            port: 2222,
            remote_user: "bob".into(),
            local_user: "me".into(),
            home: "/home/me".into(),
            host_key_alias: None,
        };
        assert_eq!(
            t.expand("%d/%u/%r@%h:%p %n %k %%h", FILE).unwrap(),
            "/home/me/me/bob@foo.example.com:2222 foo foo %h"
        );
        assert_eq!(
            t.expand("%T", FILE).unwrap_err().to_string(),
            "percent_expand: unknown key %T"
        );
        assert_eq!(
            t.expand("%d", PROXY).unwrap_err(),
            ExpandError::UnknownKey('d')
        );
        assert_eq!(t.expand("x%", FILE), Err(ExpandError::InvalidFormat));
        // %C is SHA-1 of %l%h%p%r.
        let want: String = aws_lc_rs::digest::digest(
            &aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY,
            format!("{}foo.example.com2222bob", local_hostname()).as_bytes(),
        )
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
        assert_eq!(t.expand("%C", FILE).unwrap(), want);
        assert_eq!(
            t.expand("%i", FILE).unwrap(),
            rustix::process::getuid().as_raw().to_string()
        );
        let home = std::env::var("HOME").unwrap();
        assert_eq!(tilde("~/.ssh/x").unwrap(), format!("{home}/.ssh/x"));
        assert_eq!(
            tilde("~root/x").unwrap(),
            format!("{}/x", home_of(Some("root")).unwrap())
        );
        assert_eq!(tilde("/a/~b").unwrap(), "/a/~b");
        assert_eq!(
            tilde("~").unwrap(),
            format!("{}/", home.trim_end_matches('/'))
        );
        std::env::set_var("SLUICE_TOKENS_TEST", "v%h");
        assert_eq!(
            t.path("/a/${SLUICE_TOKENS_TEST}/$HOME/%%", FILE).unwrap(),
            "/a/v%h/$HOME/%"
        );
        assert_eq!(
            t.expand_env("/a/${SLUICE_TOKENS_TEST}/%%", FILE).unwrap(),
            "/a/vfoo.example.com/%"
        );
        assert!(matches!(
            t.path("${SLUICE_NO_SUCH_VAR_XYZ}", FILE),
            Err(ExpandError::UnsetVariable { .. })
        ));
        assert!(matches!(
            dollar("${SLUICE_TOKENS_TEST"),
            Err(ExpandError::UnclosedVariable { .. })
        ));
        assert!(matches!(
            dollar("${a b}"),
            Err(ExpandError::BadVariableName { .. })
        ));
        assert!(matches!(
            tilde("~no-such-user-xyz/a"),
            Err(ExpandError::NoSuchUser { .. })
        ));
    }
}
