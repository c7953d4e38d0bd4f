//! The manual pages in man/ checked against the code, so they cannot drift:
//! every flag a parser accepts is in its page's SYNOPSIS and in its
//! `--help` usage (and the reverse), and every keyword of the
//! configuration parsers' tables is in its page's KEYWORDS list with the
//! status the code gives it.

#[cfg(test)]
mod tests {
    use crate::cli::usage::UsageError;
    use crate::cli::{scp_main, sftp_main, ssh_args, sshd_args};
    use crate::config::ssh as ssh_config;
    use crate::config::sshd::keyword_table as sshd_keywords;
    use std::collections::{BTreeMap, BTreeSet};

    const SLUICE_1: &str = include_str!("../../../../man/sluice.1");
    const SLUICED_8: &str = include_str!("../../../../man/sluiced.8");
    const SFTP_1: &str = include_str!("../../../../man/sluice-sftp.1");
    const SCP_1: &str = include_str!("../../../../man/sluice-scp.1");
    const SLUICE_CONFIG_5: &str = include_str!("../../../../man/sluice_config.5");
    const SLUICED_CONFIG_5: &str = include_str!("../../../../man/sluiced_config.5");

    /// Documented ahead of the branch that implements them (the package
    /// work: `sluiced -A`, sshd_config PAMServiceName). The tests below
    /// fail once the code has them: then delete the entry.
    const PENDING_SLUICED_FLAGS: &[char] = &[];
    const PENDING_SERVER_KEYWORDS: &[&str] = &[];

    /// Flags without a value, and flags taking one.
    #[derive(Debug, Default, PartialEq, Eq)]
    struct Flags {
        plain: BTreeSet<char>,
        valued: BTreeSet<char>,
    }

    impl Flags {
        fn all(&self) -> BTreeSet<char> {
            self.plain.union(&self.valued).copied().collect()
        }
    }

    /// The lines of section `name` (`.Sh name` up to the next `.Sh`).
    fn section<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
        let head = format!(".Sh {name}");
        page.lines()
            .skip_while(|l| *l != head)
            .skip(1)
            .take_while(|l| !l.starts_with(".Sh "))
            .collect()
    }

    /// The first form of the SYNOPSIS (up to the second `.Nm`): its
    /// `.Op Fl X` groups and `.Op Fl x Ar value` options.
    fn synopsis_flags(page: &str) -> Flags {
        let mut f = Flags::default();
        let lines = section(page, "SYNOPSIS");
        for l in lines.iter().skip(1).take_while(|l| !l.starts_with(".Nm")) {
            let Some(rest) = l.strip_prefix(".Op Fl ") else {
                continue;
            };
            let mut words = rest.split_whitespace();
            let name = words.next().unwrap_or_default();
            if words.next().is_some() {
                assert_eq!(name.chars().count(), 1, "{l}");
                f.valued.extend(name.chars());
            } else {
                f.plain.extend(name.chars());
            }
        }
        f
    }

    /// A usage text's first form, as ssh prints it: `[-abc]` groups and
    /// `[-x value]` options.
    fn usage_flags(usage: &str) -> Flags {
        let first = usage.split("\n       sluice ").next().unwrap_or_default();
        let mut f = Flags::default();
        for part in first.split("[-").skip(1) {
            let end = part
                .find(|c: char| c.is_whitespace() || c == ']')
                .unwrap_or(part.len());
            let name = &part[..end];
            if part[end..].starts_with(']') {
                f.plain.extend(name.chars());
            } else {
                assert_eq!(name.chars().count(), 1, "{part}");
                f.valued.extend(name.chars());
            }
        }
        f
    }

    /// getopt's option string: letters, `:` after those taking a value.
    fn optstring_flags(spec: &str) -> Flags {
        let mut f = Flags::default();
        let chars: Vec<char> = spec.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if *c == ':' {
                continue;
            }
            if chars.get(i + 1) == Some(&':') {
                f.valued.insert(*c);
            } else {
                f.plain.insert(*c);
            }
        }
        f
    }

    /// What a parser accepts, found by asking it about every letter and
    /// digit: `probe(c)` is an unknown option for a flag it refuses and a
    /// missing argument for one wanting a value.
    fn probe(probe: impl Fn(char) -> Result<(), UsageError>) -> Flags {
        let mut f = Flags::default();
        for c in ('0'..='9').chain('A'..='Z').chain('a'..='z') {
            match probe(c) {
                Err(UsageError::UnknownOption { .. }) => {}
                Err(UsageError::MissingArgument { .. }) => {
                    f.valued.insert(c);
                }
                _ => {
                    f.plain.insert(c);
                }
            }
        }
        f
    }

    /// The parser's flags, without ssh's protocol-version flags -1 and -2
    /// (accepted or refused as ssh does, and in neither's SYNOPSIS).
    fn ssh_parser() -> Flags {
        let f = probe(|c| ssh_args::parse(&[format!("-{c}")]).map(|_| ()));
        without(&f, &['1', '2'])
    }

    fn sshd_parser() -> Flags {
        probe(|c| sshd_args::parse(&[format!("-{c}")]).map(|_| ()))
    }

    fn without(f: &Flags, drop: &[char]) -> Flags {
        Flags {
            plain: f
                .plain
                .iter()
                .filter(|c| !drop.contains(c))
                .copied()
                .collect(),
            valued: f
                .valued
                .iter()
                .filter(|c| !drop.contains(c))
                .copied()
                .collect(),
        }
    }

    /// Whether the page describes `-c` outside the SYNOPSIS (`.It Fl c`,
    /// `.It Fl a , c`, or `.Fl c` in running text).
    fn described(page: &str, c: char) -> bool {
        page.lines().any(|l| {
            let Some(rest) = l.strip_prefix(".It Fl ").or(l.strip_prefix(".Fl ")) else {
                return false;
            };
            rest.split(|ch: char| ch.is_whitespace() || ch == ',')
                .take_while(|w| *w != "Ar")
                .any(|w| w.len() == 1 && w.starts_with(c))
        })
    }

    #[test]
    fn sluice_synopsis_usage_and_parser_agree() {
        let page = synopsis_flags(SLUICE_1);
        assert_eq!(page, ssh_parser(), "sluice(1) SYNOPSIS vs cli/ssh_args.rs");
        assert_eq!(
            usage_flags(ssh_args::USAGE),
            page,
            "sluice --help vs sluice(1)"
        );
        assert!(SLUICE_1.contains(".Fl \\-help"), "sluice(1) lacks --help");
    }

    #[test]
    fn sluiced_synopsis_usage_and_parser_agree() {
        let page = synopsis_flags(SLUICED_8);
        let parser = sshd_parser();
        // -R: the re-executed listener's own flag, described but not in
        // the SYNOPSIS, as in sshd(8).
        assert!(parser.plain.contains(&'R') && described(SLUICED_8, 'R'));
        for c in PENDING_SLUICED_FLAGS {
            assert!(
                !parser.all().contains(c),
                "sluiced now accepts -{c}: remove it from PENDING_SLUICED_FLAGS in cli/manpages.rs"
            );
        }
        assert_eq!(
            without(&page, PENDING_SLUICED_FLAGS),
            without(&parser, &['R']),
            "sluiced(8) SYNOPSIS vs cli/sshd_args.rs"
        );
        assert_eq!(
            usage_flags(sshd_args::USAGE),
            page,
            "sluiced --help vs sluiced(8)"
        );
        assert!(SLUICED_8.contains(".Fl \\-help"));
    }

    #[test]
    fn sftp_and_scp_synopsis_usage_and_parser_agree() {
        for (name, page, options, usage) in [
            ("sluice-sftp", SFTP_1, sftp_main::OPTIONS, sftp_main::USAGE),
            ("sluice-scp", SCP_1, scp_main::OPTIONS, scp_main::USAGE),
        ] {
            let parser = optstring_flags(options);
            // -D and -S are parsed, then refused with a message: the page
            // says so instead of offering them.
            let refused = ['D', 'S'];
            for c in refused {
                assert!(parser.valued.contains(&c), "{name} -{c}");
                assert!(described(page, c), "{name}'s page does not describe -{c}");
            }
            let synopsis = synopsis_flags(page);
            assert_eq!(
                synopsis,
                without(&parser, &refused),
                "{name} SYNOPSIS vs getopt"
            );
            assert_eq!(usage_flags(usage), synopsis, "{name} --help vs its page");
            assert!(page.contains(".Fl \\-help"), "{name}");
        }
    }

    /// The long options of a subcommand's usage and of its SYNOPSIS form.
    #[test]
    fn demo_and_bench_crypto_forms_agree() {
        for (sub, usage, probe_args) in [
            (
                "demo",
                ssh_args::DEMO_USAGE,
                &[("--size", "1M"), ("--cipher", "aes128-ctr"), ("-v", "")][..],
            ),
            (
                "bench-crypto",
                ssh_args::BENCH_USAGE,
                &[
                    ("--size", "1M"),
                    ("--cipher", "aes128-ctr"),
                    ("--mac", "hmac-sha1"),
                    ("--threads", "1"),
                ][..],
            ),
        ] {
            let in_usage: BTreeSet<String> = usage
                .split('[')
                .skip(1)
                .filter_map(|p| p.split([' ', ']']).next())
                .map(str::to_owned)
                .collect();
            let form: Vec<&str> = SLUICE_1
                .lines()
                .skip_while(|l| *l != format!(".Cm {sub}"))
                .skip(1)
                .take_while(|l| l.starts_with(".Op"))
                .collect();
            let in_page: BTreeSet<String> = form
                .iter()
                .filter_map(|l| l.strip_prefix(".Op Fl "))
                .filter_map(|r| r.split_whitespace().next())
                .map(|w| format!("-{}", w.replace("\\-", "-")))
                .collect();
            assert_eq!(in_usage, in_page, "sluice {sub}: usage vs sluice(1)");
            let documented: BTreeSet<String> =
                probe_args.iter().map(|(f, _)| (*f).to_owned()).collect();
            assert_eq!(
                in_usage, documented,
                "sluice {sub}: the options this test probes"
            );
            for (flag, value) in probe_args {
                let mut argv = vec![sub.to_owned(), (*flag).to_owned()];
                if !value.is_empty() {
                    argv.push((*value).to_owned());
                }
                assert!(ssh_args::parse(&argv).is_ok(), "sluice {argv:?}");
            }
            assert!(matches!(
                ssh_args::parse(&[sub.to_owned(), "--help".into()]),
                Ok(ssh_args::Invocation::Help(_))
            ));
        }
    }

    /// KEYWORDS: `.It Cm Name` then its status text, by lower-case name.
    fn keywords(page: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut current: Option<String> = None;
        for l in section(page, "KEYWORDS") {
            if let Some(name) = l.strip_prefix(".It Cm ") {
                let key = name.trim().to_ascii_lowercase();
                assert!(
                    out.insert(key.clone(), String::new()).is_none(),
                    "{name} twice"
                );
                current = Some(key);
            } else if l.starts_with(".El") {
                current = None;
            } else if let Some(k) = &current {
                let text = out.get_mut(k).expect("entry");
                if !text.is_empty() {
                    text.push(' ');
                }
                text.push_str(l);
            }
        }
        out
    }

    /// The status class: the status text's first word.
    fn class(status: &str) -> &str {
        status
            .split(|c: char| !c.is_alphanumeric() && c != '-')
            .next()
            .unwrap_or_default()
    }

    const CLASSES: &[&str] = &[
        "As",
        "Sluice-only",
        "Extended",
        "Partly",
        "Ignored",
        "Refused",
        "Deprecated",
        "Warned",
        "Inert",
    ];

    /// What is wrong with sluice_config(5)'s KEYWORDS against config/ssh.rs
    /// and config/ssh/limits.rs: a keyword acted on has a status saying so;
    /// one that is not is "Refused", "Warned" or "Inert" as its limit is,
    /// and the page gives the code's reason.
    fn client_keyword_errors(page: &str) -> Vec<String> {
        use crate::config::ssh::limits::{How, LIMITS};
        let page = keywords(page);
        let known: BTreeSet<&str> = ssh_config::SUPPORTED
            .iter()
            .copied()
            .chain(LIMITS.iter().map(|l| l.kw))
            .collect();
        let mut errors = Vec::new();
        for kw in &known {
            let Some(status) = page.get(*kw) else {
                errors.push(format!("sluice_config(5) KEYWORDS lacks {kw}"));
                continue;
            };
            let c = class(status);
            match LIMITS.iter().find(|l| l.kw == *kw) {
                Some(l) => {
                    let want = match l.how {
                        How::Refuse => "Refused",
                        How::Warn => "Warned",
                        How::Inert => "Inert",
                    };
                    if c != want || !status.contains(l.why) {
                        errors.push(format!(
                            "{kw}: the code has it {want}: {}; the page says: {status}",
                            l.why
                        ));
                    }
                }
                None => {
                    if !CLASSES.contains(&c) || ["Refused", "Deprecated", "Ignored"].contains(&c) {
                        errors.push(format!(
                            "{kw} is acted on (SUPPORTED); the page says: {status}"
                        ));
                    }
                }
            }
        }
        for kw in page.keys() {
            if !known.contains(kw.as_str()) {
                errors.push(format!(
                    "sluice_config(5) lists {kw}, unknown to config/ssh.rs"
                ));
            }
        }
        errors
    }

    /// What is wrong with sluiced_config(5)'s KEYWORDS against
    /// config/sshd/keywords.rs.
    fn server_keyword_errors(page: &str) -> Vec<String> {
        let page = keywords(page);
        let other: Vec<&str> = sshd_keywords::OTHER.iter().map(|(k, _)| *k).collect();
        // `match` is read by lines.rs ahead of the tables.
        let known: BTreeSet<&str> = sshd_keywords::OWN
            .iter()
            .chain(sshd_keywords::DEPRECATED)
            .chain(&other)
            .chain(&["match"])
            .copied()
            .collect();
        let mut errors = Vec::new();
        for kw in &known {
            let Some(status) = page.get(*kw) else {
                errors.push(format!("sluiced_config(5) KEYWORDS lacks {kw}"));
                continue;
            };
            let c = class(status);
            let canonical = sshd_keywords::canonical(kw);
            let refused = sshd_keywords::UNSUPPORTED
                .iter()
                .find(|(k, _, _)| *k == canonical);
            let wrong = if sshd_keywords::DEPRECATED.contains(kw) {
                c != "Deprecated"
            } else if let Some((_, off, why)) = refused {
                c != "Refused" || !status.contains(&format!(" {off}\"")) || !status.contains(why)
            } else if other.contains(&canonical) && canonical != "modulifile" {
                // ModuliFile is kept with the ignored ones for -T, but
                // server/daemon.rs reads it.
                c != "Ignored"
            } else {
                !CLASSES.contains(&c) || ["Refused", "Deprecated"].contains(&c)
            };
            if wrong {
                let code = match refused {
                    Some((_, off, why)) => format!("refused unless {off}: {why}"),
                    None if sshd_keywords::DEPRECATED.contains(kw) => "deprecated".into(),
                    None if other.contains(&canonical) => "ignored".into(),
                    None => "acted on".into(),
                };
                errors.push(format!(
                    "{kw}: the code has it {code}; the page says: {status}"
                ));
            }
        }
        for kw in page.keys() {
            if !known.contains(kw.as_str()) && !PENDING_SERVER_KEYWORDS.contains(&kw.as_str()) {
                errors.push(format!(
                    "sluiced_config(5) lists {kw}, unknown to config/sshd/keywords.rs"
                ));
            }
        }
        errors
    }

    #[test]
    fn sluice_config_lists_every_keyword() {
        assert_eq!(client_keyword_errors(SLUICE_CONFIG_5), Vec::<String>::new());
    }

    #[test]
    fn sluiced_config_lists_every_keyword_with_the_codes_status() {
        assert_eq!(
            server_keyword_errors(SLUICED_CONFIG_5),
            Vec::<String>::new()
        );
        for kw in PENDING_SERVER_KEYWORDS {
            assert!(
                !sshd_keywords::known(kw),
                "sluiced now knows {kw}: remove it from PENDING_SERVER_KEYWORDS in cli/manpages.rs"
            );
        }
    }

    /// The checks themselves: what they must catch, caught.
    #[test]
    fn the_checks_catch_omissions() {
        let page = SLUICE_1.replace(".Op Fl m Ar mac_spec\n", "");
        assert_ne!(synopsis_flags(&page), ssh_parser());
        assert!(synopsis_flags(SLUICE_1).all().len() > 40);
        assert_eq!(
            usage_flags("usage: x [-ab] [-c file] [-D [a:]p]"),
            Flags {
                plain: ['a', 'b'].into(),
                valued: ['c', 'D'].into()
            }
        );
        // A keyword left out, a refused one called ignored, an acted-on
        // one called ignored, a deprecated one called acted on.
        let cases = [
            (
                ".It Cm MaxStreams\n",
                ".It Cm NoSuchThing\n",
                "lacks maxstreams",
            ),
            (
                "Refused unless \"UseDNS no\"",
                "Ignored: \"UseDNS no\"",
                "usedns",
            ),
            (
                "sluiced does not look up client host names",
                "client host names are not looked up",
                "usedns",
            ),
            (
                ".It Cm KerberosAuthentication\nIgnored",
                ".It Cm KerberosAuthentication\nAs OpenSSH",
                "kerberosauthentication",
            ),
            (
                ".It Cm UseLogin\nDeprecated",
                ".It Cm UseLogin\nIgnored",
                "uselogin",
            ),
        ];
        for (from, to, expect) in cases {
            assert!(SLUICED_CONFIG_5.contains(from), "{from}");
            let errors = server_keyword_errors(&SLUICED_CONFIG_5.replacen(from, to, 1));
            assert!(
                errors.iter().any(|e| e.contains(expect)),
                "{expect}: {errors:?}"
            );
        }
        let errors = client_keyword_errors(
            &SLUICE_CONFIG_5.replace(".It Cm Streams\nSluice-only", ".It Cm Streams\nIgnored"),
        );
        assert!(errors.iter().any(|e| e.contains("streams")), "{errors:?}");
        let errors =
            client_keyword_errors(&SLUICE_CONFIG_5.replace(".It Cm Tag\n", ".It Cm Nag\n"));
        assert!(errors.iter().any(|e| e.contains("lacks tag")), "{errors:?}");
    }
}
