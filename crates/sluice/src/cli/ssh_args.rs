//! `sluice` arguments, parsed as ssh's getopt does: bundled flags (`-vvv`),
//! attached values (`-p22`, `-oKey=Value`), options end at the destination.

use crate::cli::usage::UsageError;

/// Flags that take no value.
const FLAGS: &str = "46AaCfGgKkMNnqsTtVvXxYy";
/// Options that take a value.
const WITH_VALUE: &str = "BbcDEeFIiJLlmOoPpQRSWw";

/// What the user asked `sluice` to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Connect and run a session.
    Connect(ClientArgs),
    /// `sluice demo [--size N] [--cipher C] [-v]`.
    Demo {
        /// Bytes each way.
        size: u64,
        /// Cipher.
        cipher: Option<String>,
        /// Verbose.
        verbose: bool,
    },
    /// `sluice -Q what`.
    Query(String),
    /// `sluice -V`.
    Version,
    /// `sluice demo-helper ...` (remote end of the demo).
    DemoHelper(Vec<String>),
    /// `sluice bench [options] [user@]host`: this path measured.
    Bench(crate::path_bench::Options),
    /// `sluice bench-crypto [--size N] [--cipher C]... [--mac M] [--threads 1,2]`.
    BenchCrypto(crate::bench_crypto::Options),
    /// `--help` (of `sluice`, `sluice demo` or `sluice bench-crypto`):
    /// the text for stdout, exit 0.
    Help(String),
}

/// Parsed client arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientArgs {
    /// `-v` count.
    pub verbose: u8,
    /// `-q`.
    pub quiet: bool,
    /// `-4`/`-6`.
    pub family: Option<u8>,
    /// `-C`.
    pub compression: bool,
    /// `-G`: print the configuration and exit.
    pub print_config: bool,
    /// `-N`.
    pub no_command: bool,
    /// `-T`/`-t` count (-1 for -T).
    pub tty: i8,
    /// `-p` (also in `options`, where it stands on the command line).
    pub port: Option<u16>,
    /// `-l` (also in `options`, where it stands on the command line).
    pub login: Option<String>,
    /// `-i` (repeatable).
    pub identities: Vec<String>,
    /// `-F`.
    pub config_file: Option<String>,
    /// `-o` values, with `-l` (`User=`), `-p` (`Port=`) and the
    /// destination's user (and port) among them in command-line order:
    /// ssh takes the first of those.
    pub options: Vec<String>,
    /// `-c`.
    pub ciphers: Option<String>,
    /// `-m`.
    pub macs: Option<String>,
    /// `-J`: ProxyJump.
    pub jump: Option<String>,
    /// `-s`: the command is a subsystem.
    pub subsystem: bool,
    /// Destination host.
    pub host: String,
    /// `user@` or `ssh://user@host:port` user.
    pub user: Option<String>,
    /// Remote command words.
    pub command: Vec<String>,
    /// `-L` specs.
    pub local_forwards: Vec<String>,
    /// `-R` specs.
    pub remote_forwards: Vec<String>,
    /// `-D` specs.
    pub dynamic_forwards: Vec<String>,
    /// `-W host:port`.
    pub stdio_forward: Option<String>,
    /// `-E log_file`: log lines appended to this file instead of stderr.
    pub log_file: Option<String>,
    /// `-y`: log lines to syslog (facility USER) instead of stderr.
    pub syslog: bool,
    /// `-e` (the last one).
    pub escape: Option<String>,
    /// `-O ctl_cmd`: a request to a ControlMaster instead of a session.
    pub control_command: Option<String>,
    /// `-S ctl_path` (the last one).
    pub control_path: Option<String>,
    /// `-M` count: ControlMaster yes, twice ask.
    pub control_master: u8,
    /// `-f`.
    pub fork: bool,
    /// `-n` (also implied by `-f`).
    pub null_stdin: bool,
}

// The subcommands' usage lines, shared by USAGE and their own `--help`.
macro_rules! demo_line {
    () => {
        "sluice demo [--size BYTES] [--cipher NAME] [-v]"
    };
}
macro_rules! path_bench_line {
    () => {
        "sluice bench [--json] [--time seconds] [--sample file] [--no-ssh] [ssh options] [user@]host"
    };
}
macro_rules! bench_line {
    () => {
        "sluice bench-crypto [--size BYTES] [--cipher NAME]... [--mac NAME] [--threads N,N]"
    };
}

/// The usage text, as ssh prints it (the flags of FLAGS and WITH_VALUE;
/// cli/manpages.rs checks them against the parser and sluice(1)).
pub const USAGE: &str = concat!(
    "usage: sluice [-46AaCfGgKkMNnqsTtVvXxYy] [-B bind_interface] [-b bind_address]
           [-c cipher_spec] [-D [bind_address:]port] [-E log_file]
           [-e escape_char] [-F configfile] [-I pkcs11] [-i identity_file]
           [-J destination] [-L address] [-l login_name] [-m mac_spec]
           [-O ctl_cmd] [-o option] [-P tag] [-p port] [-Q query_option]
           [-R address] [-S ctl_path] [-W host:port] [-w local_tun[:remote_tun]]
           destination [command [argument ...]]
       ",
    demo_line!(),
    "\n       ",
    path_bench_line!(),
    "\n       ",
    bench_line!()
);

/// `sluice demo`'s usage line.
pub const DEMO_USAGE: &str = concat!("usage: ", demo_line!());
/// `sluice bench-crypto`'s usage line.
pub const BENCH_USAGE: &str = concat!("usage: ", bench_line!());

/// The line `--help` adds under the usage: where the rest is.
pub const SEE_PAGE: &str = "See sluice(1) for the options and sluice_config(5) for ssh_config.";

/// `--help`'s text: a usage and the manual page's name.
fn help(usage: &str) -> Invocation {
    Invocation::Help(format!("{usage}\n{SEE_PAGE}"))
}

/// Parses argv (without the program name).
pub fn parse(argv: &[String]) -> Result<Invocation, UsageError> {
    match argv.first().map(String::as_str) {
        Some("demo") => return parse_demo(argv.get(1..).unwrap_or_default()),
        Some("bench-crypto") => return parse_bench_crypto(argv.get(1..).unwrap_or_default()),
        Some("bench") => {
            let rest = argv.get(1..).unwrap_or_default();
            if rest.iter().any(|a| a == "--help") {
                return Ok(help(crate::path_bench::USAGE));
            }
            let o = crate::path_bench::parse(rest).map_err(UsageError::Bench)?;
            // Its runs choose their own commands: words after the
            // destination would be dropped, so they are refused.
            if let Ok(Invocation::Connect(c)) = parse(&o.ssh_args) {
                if !c.command.is_empty() {
                    return Err(UsageError::ExtraWords {
                        words: c.command,
                        usage: crate::path_bench::USAGE,
                    });
                }
            }
            return Ok(Invocation::Bench(o));
        }
        Some("demo-helper") => {
            return Ok(Invocation::DemoHelper(
                argv.get(1..).unwrap_or_default().to_vec(),
            ))
        }
        _ => {}
    }
    let mut a = ClientArgs::default();
    let mut forward_agent = None;
    let mut i = 0;
    // As ssh: options, the destination, then options again (`ssh host -p
    // 2222 ls`) up to the first word that is not one, or `--`.
    let terminated = match options(argv, &mut i, &mut a, &mut forward_agent)? {
        Parsed::Done(inv) => return Ok(*inv),
        Parsed::Stopped { terminated } => terminated,
    };
    let dest = argv.get(i).ok_or(UsageError::Usage(USAGE))?;
    parse_destination(dest, &mut a)?;
    i += 1;
    if !terminated {
        if let Parsed::Done(inv) = options(argv, &mut i, &mut a, &mut forward_agent)? {
            return Ok(*inv);
        }
    }
    // The last of -A / -a wins over -o and ssh_config (first value wins), as in ssh.
    if let Some(v) = forward_agent {
        a.options.insert(0, format!("ForwardAgent={v}"));
    }
    a.command = argv.get(i..).unwrap_or_default().to_vec();
    Ok(Invocation::Connect(a))
}

/// Where an option run ended.
enum Parsed {
    /// `-V` or `-Q`: nothing else matters.
    Done(Box<Invocation>),
    /// At `argv[i]`, a word that is not an option; `terminated` if `--` came before it.
    Stopped { terminated: bool },
}

/// Parses options from `argv[*i]` on, as getopt does.
fn options(
    argv: &[String],
    i: &mut usize,
    a: &mut ClientArgs,
    forward_agent: &mut Option<&'static str>,
) -> Result<Parsed, UsageError> {
    while *i < argv.len() {
        let arg = &argv[*i];
        if arg == "--" {
            *i += 1;
            return Ok(Parsed::Stopped { terminated: true });
        }
        // Not ssh's (its getopt knows no long options): short help on stdout.
        if arg == "--help" {
            return Ok(Parsed::Done(Box::new(help(USAGE))));
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        let mut chars = arg[1..].char_indices();
        while let Some((pos, c)) = chars.next() {
            // As ssh: -2 is accepted and means nothing (SSH-2 is all there
            // is); -1 is an error. Neither is in the usage line.
            match c {
                '2' => continue,
                '1' => {
                    return Err(UsageError::Refused(
                        "SSH protocol v.1 is no longer supported",
                    ))
                }
                _ => {}
            }
            if FLAGS.contains(c) {
                if let Some(done) = flag(c, a, forward_agent) {
                    return Ok(done);
                }
                continue;
            }
            if !WITH_VALUE.contains(c) {
                return Err(UsageError::UnknownOption {
                    opt: c,
                    usage: Some(USAGE),
                });
            }
            let rest = &arg[1 + pos + c.len_utf8()..];
            let value = if !rest.is_empty() {
                rest.to_owned()
            } else {
                *i += 1;
                argv.get(*i).cloned().ok_or(UsageError::MissingArgument {
                    prog: Some("sluice"),
                    opt: c,
                    usage: Some(USAGE),
                })?
            };
            if let Some(done) = with_value(c, value, a)? {
                return Ok(done);
            }
            break;
        }
        *i += 1;
    }
    Ok(Parsed::Stopped { terminated: false })
}

/// A flag without a value (one of [`FLAGS`]); `Some` when nothing else matters (`-V`).
fn flag(c: char, a: &mut ClientArgs, forward_agent: &mut Option<&'static str>) -> Option<Parsed> {
    match c {
        'v' => a.verbose = a.verbose.saturating_add(1),
        'q' => a.quiet = true,
        '4' => a.family = Some(4),
        '6' => a.family = Some(6),
        'C' => a.compression = true,
        'G' => a.print_config = true,
        'N' => a.no_command = true,
        'f' => a.fork = true,
        'n' => a.null_stdin = true,
        'T' => a.tty = -1,
        't' => a.tty = a.tty.max(0) + 1,
        's' => a.subsystem = true,
        'V' => return Some(Parsed::Done(Box::new(Invocation::Version))),
        'A' => *forward_agent = Some("yes"),
        'a' => *forward_agent = Some("no"),
        'M' => a.control_master = a.control_master.saturating_add(1),
        // The flags that stand for a keyword, as in ssh: the
        // keyword's handling (or its "Unsupported option"
        // warning) applies, and -G shows them.
        'g' => a.options.push("GatewayPorts=yes".into()),
        'X' => a.options.push("ForwardX11=yes".into()),
        'x' => a.options.push("ForwardX11=no".into()),
        'Y' => {
            a.options.push("ForwardX11=yes".into());
            a.options.push("ForwardX11Trusted=yes".into());
        }
        'K' => {
            a.options.push("GSSAPIAuthentication=yes".into());
            a.options.push("GSSAPIDelegateCredentials=yes".into());
        }
        'k' => a.options.push("GSSAPIDelegateCredentials=no".into()),
        'y' => a.syslog = true,
        _ => {}
    }
    None
}

/// An option with its value (one of [`WITH_VALUE`]); `Some` when nothing else matters (`-Q`).
fn with_value(c: char, value: String, a: &mut ClientArgs) -> Result<Option<Parsed>, UsageError> {
    match c {
        'p' => {
            a.port = Some(
                value
                    .parse()
                    .map_err(|_| UsageError::bad("Bad port", &value))?,
            );
            a.options.push(format!("Port={value}"));
        }
        'l' => {
            a.options.push(format!("User={value}"));
            a.login = Some(value);
        }
        // As ssh: a file that cannot be stat'ed is warned about and
        // left out (the other identities and the agent still go on).
        'i' => {
            let path = crate::config::ssh::tokens::tilde(&value).unwrap_or(value);
            match std::fs::metadata(&path) {
                Ok(_) => a.identities.push(path),
                Err(e) => crate::errln!(
                    "Warning: Identity file {path} not accessible: {}.",
                    crate::io_error::describe_io_error(&e)
                ),
            }
        }
        'F' => a.config_file = Some(value),
        'o' => a.options.push(value),
        'c' => a.ciphers = Some(value),
        'm' => a.macs = Some(value),
        'Q' => return Ok(Some(Parsed::Done(Box::new(Invocation::Query(value))))),
        'e' => a.escape = Some(value),
        'J' if a.jump.is_some() => {
            return Err(UsageError::Refused("Only a single -J option is permitted"))
        }
        'J' => a.jump = Some(value),
        'L' => a.local_forwards.push(value),
        'R' => a.remote_forwards.push(value),
        'D' => a.dynamic_forwards.push(value),
        'W' => a.stdio_forward = Some(value),
        'E' => a.log_file = Some(value),
        'O' => {
            crate::client::mux_control::check_command(&value).map_err(UsageError::Mux)?;
            a.control_command = Some(value);
        }
        'S' => a.control_path = Some(value),
        'b' => a.options.push(format!("BindAddress={value}")),
        'B' => a.options.push(format!("BindInterface={value}")),
        'I' => a.options.push(format!("PKCS11Provider={value}")),
        'P' => a.options.push(format!("Tag={value}")),
        'w' => {
            a.options.push("Tunnel=yes".into());
            a.options.push(format!("TunnelDevice={value}"));
        }
        _ => {}
    }
    Ok(None)
}

fn parse_destination(dest: &str, a: &mut ClientArgs) -> Result<(), UsageError> {
    let d = match dest.strip_prefix("ssh://") {
        Some(rest) => {
            let rest = rest.trim_end_matches('/');
            let (userhost, port) = match rest.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, Some(p)),
                _ => (rest, None),
            };
            if let Some(p) = port {
                a.port = Some(p.parse().map_err(|_| UsageError::bad("Bad port", p))?);
                a.options.push(format!("Port={p}"));
            }
            userhost.to_owned()
        }
        None => dest.to_owned(),
    };
    match d.rsplit_once('@') {
        Some((u, h)) => {
            a.options.push(format!("User={u}"));
            a.user = Some(u.to_owned());
            a.host = h.trim_start_matches('[').trim_end_matches(']').to_owned();
        }
        None => a.host = d.trim_start_matches('[').trim_end_matches(']').to_owned(),
    }
    if a.host.is_empty() {
        return Err(UsageError::Usage(USAGE));
    }
    Ok(())
}

fn parse_demo(args: &[String]) -> Result<Invocation, UsageError> {
    let mut size = 1u64 << 30;
    let mut cipher = None;
    let mut verbose = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => {
                let v = it.next().ok_or(UsageError::NeedsValue {
                    prog: "demo",
                    arg: "--size".into(),
                })?;
                size = crate::config::parse_size(v)
                    .ok_or_else(|| UsageError::bad("demo: bad size", v))?;
            }
            "--cipher" => {
                let v = it.next().ok_or(UsageError::NeedsValue {
                    prog: "demo",
                    arg: "--cipher".into(),
                })?;
                cipher = Some(v.clone());
            }
            "-v" => verbose = true,
            "--help" => return Ok(help(DEMO_USAGE)),
            _ => {
                return Err(UsageError::UnknownArgument {
                    prog: "demo",
                    arg: a.clone(),
                    usage: DEMO_USAGE,
                })
            }
        }
    }
    Ok(Invocation::Demo {
        size,
        cipher,
        verbose,
    })
}

fn parse_bench_crypto(args: &[String]) -> Result<Invocation, UsageError> {
    let mut o = crate::bench_crypto::Options {
        size: 1 << 30,
        ciphers: Vec::new(),
        mac: "hmac-sha2-256-etm@openssh.com".into(),
        threads: vec![1, 2],
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next().ok_or(UsageError::NeedsValue {
                prog: "bench-crypto",
                arg: a.clone(),
            })
        };
        match a.as_str() {
            "--size" => {
                let v = value()?;
                o.size = crate::config::parse_size(v)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| UsageError::bad("bench-crypto: bad size", v))?;
            }
            "--cipher" => o.ciphers.push(value()?.clone()),
            "--mac" => o.mac = value()?.clone(),
            "--threads" => {
                let v = value()?;
                o.threads = v
                    .split(',')
                    .map(|t| t.parse().ok().filter(|n| (1..=64).contains(n)))
                    .collect::<Option<_>>()
                    .ok_or_else(|| UsageError::bad("bench-crypto: bad thread list", v))?;
            }
            "--help" => return Ok(help(BENCH_USAGE)),
            _ => {
                return Err(UsageError::UnknownArgument {
                    prog: "bench-crypto",
                    arg: a.clone(),
                    usage: BENCH_USAGE,
                })
            }
        }
    }
    if o.ciphers.is_empty() {
        o.ciphers = [
            "aes128-gcm@openssh.com",
            "aes256-gcm@openssh.com",
            "chacha20-poly1305@openssh.com",
            "aes128-ctr",
        ]
        .map(String::from)
        .to_vec();
    }
    Ok(Invocation::BenchCrypto(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_that_stand_for_keywords_become_options() {
        let Invocation::Connect(a) =
            p("-g -X -x -Y -K -k -y -b 10.0.0.1 -B eth0 -I /lib/p.so -P t -w 0:1 h").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            a.options,
            [
                "GatewayPorts=yes",
                "ForwardX11=yes",
                "ForwardX11=no",
                "ForwardX11=yes",
                "ForwardX11Trusted=yes",
                "GSSAPIAuthentication=yes",
                "GSSAPIDelegateCredentials=yes",
                "GSSAPIDelegateCredentials=no",
                "BindAddress=10.0.0.1",
                "BindInterface=eth0",
                "PKCS11Provider=/lib/p.so",
                "Tag=t",
                "Tunnel=yes",
                "TunnelDevice=0:1",
            ]
        );
        assert!(a.syslog);
    }

    #[test]
    fn bench_is_a_subcommand_with_its_own_usage() {
        assert_eq!(
            crate::path_bench::USAGE,
            concat!("usage: ", path_bench_line!())
        );
        let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        match parse(&words("bench --json -p 2 h")).unwrap() {
            Invocation::Bench(o) => assert_eq!(o.ssh_args, words("-p 2 h")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&words("bench --help")).unwrap(),
            Invocation::Help(_)
        ));
        assert!(parse(&words("bench")).is_err());
        let e = parse(&words("bench -p 2 h cat x")).unwrap_err();
        assert!(matches!(&e, UsageError::ExtraWords { words, .. } if words == &["cat", "x"]));
        assert!(
            e.to_string()
                .starts_with("bench: unexpected words after the destination: cat x"),
            "{e}"
        );
    }

    fn p(s: &str) -> Result<Invocation, UsageError> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn like_ssh() {
        let Invocation::Connect(a) = p("-vvp22 -oBatchMode=yes -i k -C bob@host ls -l").unwrap()
        else {
            panic!()
        };
        assert_eq!((a.verbose, a.port, a.compression), (2, Some(22), true));
        // -p, -o, then the destination's user: in command-line order.
        assert_eq!(a.options, ["Port=22", "BatchMode=yes", "User=bob"]);
        assert_eq!((a.user.as_deref(), a.host.as_str()), (Some("bob"), "host"));
        assert_eq!(a.command, ["ls", "-l"]);
        let Invocation::Connect(a) = p("ssh://u@h:2222").unwrap() else {
            panic!()
        };
        assert_eq!((a.port, a.host.as_str()), (Some(2222), "h"));
        // Options after the destination, up to the command or `--`, as ssh's.
        let Invocation::Connect(a) = p("h -p 2222 -l bob ls -p 1").unwrap() else {
            panic!()
        };
        assert_eq!((a.port, a.login.as_deref()), (Some(2222), Some("bob")));
        assert_eq!(a.command, ["ls", "-p", "1"]);
        for line in ["h -- -p 1", "-- h -p 1"] {
            let Invocation::Connect(a) = p(line).unwrap() else {
                panic!()
            };
            assert_eq!(
                (a.port, a.command.clone()),
                (None, vec!["-p".into(), "1".into()])
            );
        }
        assert!(matches!(
            p("-Z host"),
            Err(UsageError::UnknownOption { opt: 'Z', .. })
        ));
        assert!(matches!(
            p("host -Z"),
            Err(UsageError::UnknownOption { opt: 'Z', .. })
        ));
        assert!(p("-Z host")
            .unwrap_err()
            .to_string()
            .starts_with("unknown option -- Z\nusage: "));
        assert!(matches!(
            p("-p"),
            Err(UsageError::MissingArgument { opt: 'p', .. })
        ));
        assert_eq!(p("-Q cipher").unwrap(), Invocation::Query("cipher".into()));
        assert!(matches!(
            p("demo --size 1M").unwrap(),
            Invocation::Demo { size: 1048576, .. }
        ));
    }
}
