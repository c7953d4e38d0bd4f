//! `sluiced` arguments, as sshd's: `-D -d -e -E log_file -f config -p port
//! -h hostkey -o opt -T -t -C spec`, and `-V`.

use crate::cli::usage::UsageError;
pub use crate::server::daemon::ServerArgs;

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// Run (or test, or print) the server: the arguments, and the
    /// `-E log_file` given (the last one).
    Serve(ServerArgs, Option<String>),
    /// `-V`: the version line on stderr, exit 0, as `sshd -V`.
    Version,
    /// `--help`: [`USAGE`] and [`SEE_PAGE`] on stdout, exit 0.
    Help,
}

/// The usage text (cli/manpages.rs checks it against the parser and
/// sluiced(8)). `-R` is left out as sshd leaves it out: the re-executed
/// listener's own flag. `-A` is the package branch's (host key generation).
pub const USAGE: &str = "usage: sluiced [-46ADdeiqTtV] [-C connection_spec] [-c host_cert_file]
            [-E log_file] [-f config_file] [-g login_grace_time]
            [-h host_key_file] [-o option] [-p port] [-u len]";

/// The line `--help` adds under the usage.
pub const SEE_PAGE: &str =
    "See sluiced(8) for the options and sluiced_config(5) for the configuration.";

/// Parses argv (without the program name). As sshd's, `-E` implies `-e`:
/// lines go to the file rather than syslog; `-V` is acted on where it
/// stands (an illegal option before it is still an error, what follows
/// it is not looked at).
pub fn parse(argv: &[String]) -> Result<Invocation, UsageError> {
    let mut a = ServerArgs::default();
    let mut log_file = None;
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        // Not sshd's (its getopt knows no long options), acted on where it
        // stands as -V is.
        if arg == "--help" {
            return Ok(Invocation::Help);
        }
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(UsageError::ExtraArgument {
                prog: "sluiced",
                arg: arg.clone(),
                usage: USAGE,
            });
        };
        for (pos, c) in flags.char_indices() {
            match c {
                'A' => a.generate_host_keys = true,
                'D' => a.foreground = true,
                'd' => {
                    a.debug += 1;
                    a.foreground = true;
                    a.log_stderr = true;
                }
                'e' => a.log_stderr = true,
                'T' => a.print_config = true,
                't' => a.test_config = true,
                'i' => a.inetd = true,
                'R' => a.reexec = true,
                'q' => a.quiet = true,
                'V' => return Ok(Invocation::Version),
                '4' | '6' => {}
                'f' | 'p' | 'h' | 'o' | 'C' | 'c' | 'E' | 'g' | 'u' => {
                    let rest = &flags[pos + 1..];
                    let v = if rest.is_empty() {
                        i += 1;
                        argv.get(i).cloned().ok_or(UsageError::MissingArgument {
                            prog: Some("sluiced"),
                            opt: c,
                            usage: Some(USAGE),
                        })?
                    } else {
                        rest.to_owned()
                    };
                    match c {
                        'f' => a.config_file = Some(v),
                        'p' => a.ports.push(v),
                        'h' => a.host_keys.push(v),
                        'o' => a.options.push(v),
                        'g' => a.options.push(format!("LoginGraceTime={v}")),
                        'E' => {
                            a.log_stderr = true;
                            log_file = Some(v);
                        }
                        'C' => {
                            let spec = a.connection_spec.get_or_insert_with(String::new);
                            if !spec.is_empty() {
                                spec.push(',');
                            }
                            spec.push_str(&v);
                        }
                        _ => {}
                    }
                    break;
                }
                _ => {
                    return Err(UsageError::UnknownOption {
                        opt: c,
                        usage: Some(USAGE),
                    })
                }
            }
        }
        i += 1;
    }
    Ok(Invocation::Serve(a, log_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(argv: &[&str]) -> (ServerArgs, Option<String>) {
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        match parse(&argv) {
            Ok(Invocation::Serve(a, f)) => (a, f),
            other => panic!("{argv:?}: {other:?}"),
        }
    }

    #[test]
    fn like_sshd() {
        let (a, _) = serve(&["-De", "-f", "/x", "-p2222", "-oPort=1"]);
        assert!(a.foreground && a.log_stderr);
        assert_eq!(a.config_file.as_deref(), Some("/x"));
        assert_eq!(a.ports, ["2222"]);
        assert!(parse(&["-Z".into()]).is_err());
        let (a, f) = serve(&["-E/tmp/l", "-D"]);
        assert!(a.log_stderr && a.foreground);
        assert_eq!(f.as_deref(), Some("/tmp/l"));
        let (a, _) = serve(&["-A", "-f", "/x"]);
        assert!(a.generate_host_keys && !a.foreground);
    }

    #[test]
    fn version_where_it_stands() {
        let v = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
            matches!(parse(&argv), Ok(Invocation::Version))
        };
        assert!(v(&["-V"]));
        assert!(v(&["-DeV"]));
        assert!(v(&["-f", "/x", "-V", "-Z"]));
        assert!(!v(&["-Z", "-V"]));
        assert!(!v(&["-D"]));
    }
}
