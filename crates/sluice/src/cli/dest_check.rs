//! The user and host names given on the command line, checked as ssh (9.6
//! and Debian's backport) checks them: a name that a ProxyCommand, a
//! LocalCommand or a Match exec would hand to a shell must not carry shell
//! syntax or control characters. Names from a config file are the
//! administrator's and are not checked, as in ssh.

/// ssh's words when the user name fails.
const BAD_USER: &str = "remote username contains invalid characters";
/// ssh's words when the host name fails.
const BAD_HOST: &str = "hostname contains invalid characters";

/// Characters a command-line user name may not contain.
const USER_SHELL: &[u8] = b"'`\";&<>|(){}";
/// Characters a command-line host name may not contain.
const HOST_SHELL: &[u8] = b"'`\"$\\;&<>|(){},";

/// A user name from `-l`, `user@host` or `-o User`.
fn valid_user(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0] != b'-'
        && !b.ends_with(b"\\")
        && b.iter().enumerate().all(|(i, &c)| {
            !USER_SHELL.contains(&c)
                && !c.is_ascii_control()
                // `-` after white space would read as an option.
                && !(c.is_ascii_whitespace() && b.get(i + 1) == Some(&b'-'))
        })
}

/// The destination's host name as typed.
fn valid_host(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0] != b'-'
        && b.iter()
            .all(|&c| !HOST_SHELL.contains(&c) && !c.is_ascii_control() && c != b' ')
}

/// Checks the destination host and the first command-line User (`opts` in
/// the precedence the config loader takes, first wins).
pub(super) fn check(host: &str, opts: &[String]) -> Result<(), &'static str> {
    if !valid_host(host) {
        return Err(BAD_HOST);
    }
    let user = opts.iter().find_map(|o| {
        let o = o.trim_start();
        let end = o.find(|c: char| c == '=' || c.is_whitespace())?;
        o[..end].eq_ignore_ascii_case("user").then(|| {
            o[end..]
                .trim_start_matches(|c: char| c.is_whitespace())
                .trim_start_matches('=')
                .trim_start()
        })
    });
    match user {
        Some(u) if !valid_user(u) => Err(BAD_USER),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_as_ssh_checks_them() {
        for ok in [
            "bob", "a$b", "a\\b", "a b", "a*b", "a!b", "a#b", "a%b", "aéb",
        ] {
            assert!(valid_user(ok), "{ok:?}");
        }
        for bad in [
            "", "a{b", "a}b", "ab\\", "a -b", "-ab", "a'b", "a`b", "a\tb", "a\x7fb", "a;b",
        ] {
            assert!(!valid_user(bad), "{bad:?}");
        }
    }

    #[test]
    fn hosts_as_ssh_checks_them() {
        for ok in [
            "h", "a*b", "a_b", "a%b", "a!b", "a/b", "a:b", "::1", "aéb", "a=b",
        ] {
            assert!(valid_host(ok), "{ok:?}");
        }
        for bad in [
            "-h", "a$b", "a{b", "a\\b", "a b", "a'b", "a,b", "a;b", "a\x7fb",
        ] {
            assert!(!valid_host(bad), "{bad:?}");
        }
    }

    #[test]
    fn first_command_line_user_is_checked() {
        let o = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(check("h", &o(&["Port=22", "User=${FOO}"])), Err(BAD_USER));
        assert_eq!(check("h", &o(&["user a;b"])), Err(BAD_USER));
        assert_eq!(check("h", &o(&["User=ok", "User=a;b"])), Ok(()));
        assert_eq!(check("h;x", &o(&[])), Err(BAD_HOST));
        assert_eq!(check("h", &o(&["UserKnownHostsFile=/a;b"])), Ok(()));
    }
}
