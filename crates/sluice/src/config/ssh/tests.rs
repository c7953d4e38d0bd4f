use super::*;

fn cfg(opts: &[&str], text: &str) -> ClientConfig {
    let o: Vec<String> = opts.iter().map(|s| (*s).to_owned()).collect();
    let mut c = ClientConfig::load(&o, Some(Path::new("none"))).unwrap();
    c.add_text(text, "cfg").unwrap();
    c
}

#[test]
fn host_blocks_first_wins_and_options_precede() {
    let c = cfg(
        &["Port=2200"],
        "Host db* !db1\n  User dba\nHost *\n  User other\n  Port 22\n  IdentityFile ~/a\n  IdentityFile ~/b\n",
    );
    let r = c.resolve("db2").unwrap();
    assert_eq!(r.get("user"), Some("dba"));
    assert_eq!(r.port(), 2200);
    assert_eq!(r.all("identityfile"), ["~/a", "~/b"]);
    assert_eq!(c.resolve("db1").unwrap().user(), "other");
    let e = c
        .clone()
        .add_text("Bogus 1\n", "cfg")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cfg: line 1: Bad configuration option: bogus"));
    let e = c
        .clone()
        .add_text("BatchMode maybe\n", "f")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "f line 1: unsupported option \"maybe\".\nf: terminating, 1 bad configuration options"
    );
}

#[test]
fn hostname_tokens_and_match() {
    let c = cfg(
        &[],
        "Host web\n  HostName %h.example.com\nMatch host *.example.com user root,alice\n  Port 2022\n\
         Match originalhost web !localuser nobody-here\n  User alice\nMatch user alice\n  IdentitiesOnly yes\n",
    );
    let r = c.resolve("web").unwrap();
    assert_eq!(r.hostname(), "web.example.com");
    // `Match host` sees the HostName; `Match user` the user set so far (the
    // local user until the User line below it).
    let local = local_user();
    assert_eq!(
        r.port(),
        if local == "root" || local == "alice" {
            2022
        } else {
            22
        }
    );
    assert_eq!(r.user(), "alice");
    assert_eq!(r.get("identitiesonly"), Some("yes"));
    // Host lines match case-sensitively; the host name is lower-cased.
    assert_eq!(c.resolve("WEB").unwrap().hostname(), "web");
    assert_eq!(c.resolve("Other").unwrap().hostname(), "other");
}

#[test]
fn final_pass_matches_host_lines_against_the_hostname() {
    let c = cfg(
        &[],
        "Host x\n HostName y\nMatch final\n User z\nHost y\n Port 99\nMatch canonical\n ConnectTimeout 5\n",
    );
    let r = c.resolve("x").unwrap();
    assert_eq!((r.user(), r.hostname(), r.port()), ("z", "y", 99));
    assert_eq!(r.get("connecttimeout"), Some("5"));
    // Without `final`, no second pass.
    let c = cfg(&[], "Host x\n HostName y\nHost y\n Port 99\n");
    assert_eq!(c.resolve("x").unwrap().port(), 22);
}

#[test]
fn includes_relative_glob_and_conditional() {
    let dir = std::env::temp_dir().join(format!("sluice-cfginc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.conf"), "Host a\n  User from_a\n").unwrap();
    std::fs::write(dir.join("b.conf"), "Port 2000\n").unwrap();
    let c = cfg(
        &[],
        &format!(
            "Host b\n  Include {d}/b.conf\nHost *\n  Include {d}/*.conf\n  User last\n",
            d = dir.display()
        ),
    );
    assert_eq!(c.resolve("b").unwrap().port(), 2000);
    let a = c.resolve("a").unwrap();
    // a.conf's `Host a` block, then the outer block is active again.
    assert_eq!((a.user(), a.port()), ("from_a", 2000));
    assert_eq!(c.resolve("z").unwrap().user(), "last");
    let _ = std::fs::remove_dir_all(dir);
    assert!(ClientConfig::load(&["Include x".into()], Some(Path::new("none"))).is_err());
}

#[test]
fn proxy_rivals_and_raw_commands() {
    let c = cfg(
        &["ProxyJump=j1"],
        "ProxyCommand sh -c \"nc %h %p\"  # not a comment\nRemoteCommand echo '%h'\n",
    );
    let r = c.resolve("h").unwrap();
    assert_eq!(r.get("proxyjump"), Some("j1"));
    assert_eq!(r.get("proxycommand"), None);
    let c = cfg(&[], "ProxyCommand sh -c \"nc %h %p\"\nProxyJump j\n");
    let r = c.resolve("h").unwrap();
    assert_eq!(r.get("proxycommand"), Some("sh -c \"nc %h %p\""));
    assert_eq!(r.get("proxyjump"), None);
    let c = cfg(&["UserKnownHostsFile=~/k1 /k2"], "UserKnownHostsFile /k3\n");
    assert_eq!(
        c.resolve("h").unwrap().all("userknownhostsfile"),
        ["~/k1", "/k2"]
    );
}

#[test]
fn errors_by_kind_in_ssh_words() {
    use crate::config::error::{BadLine, UnmatchedQuote, ValueError};
    let bad = |text: &str| ClientConfig::default().add_text(text, "f").unwrap_err();
    assert!(matches!(
        bad("Bogus 1\n"),
        ConfigError::Bad { error: BadLine::UnknownKeyword(k), line: 1, .. } if k == "bogus"
    ));
    assert_eq!(
        bad("Port\n"),
        ConfigError::Bad {
            file: "f".into(),
            line: 1,
            error: BadLine::MissingArgument
        }
    );
    assert!(matches!(
        bad("Port x\n"),
        ConfigError::Bad {
            error: BadLine::Value(ValueError::BadPort { .. }),
            ..
        }
    ));
    assert_eq!(
        bad("Banner \"x\n"),
        ConfigError::Syntax {
            file: "f".into(),
            line: 1,
            error: UnmatchedQuote
        }
    );
    let e = bad("Match foo\n");
    assert!(matches!(
        &e,
        ConfigError::Bad {
            error: BadLine::Match(matching::MatchError::Unsupported { .. }),
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "Unsupported Match attribute foo\nf line 1: Bad Match condition\nf: terminating, 1 bad configuration options"
    );
    assert_eq!(
        ClientConfig::load(&["Include x".into()], Some(Path::new("none"))).unwrap_err(),
        ConfigError::IncludeOnCommandLine
    );
    let c = cfg(&[], "Match exec \"%T\"\n");
    assert!(matches!(
        c.resolve("h"),
        Err(ResolveError::Match(matching::EvalError::Token(
            tokens::ExpandError::UnknownKey('T')
        )))
    ));
}
