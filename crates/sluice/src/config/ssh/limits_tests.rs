//! limits.rs's table against the parser: every limited keyword refused or
//! warned of with its file and line, none both acted on and limited.
//! Beside limits.rs, not inside it, because it drives the whole parser
//! (ssh.rs), which reads limits.rs.

use super::limits::*;
use super::{values, ClientConfig, SUPPORTED};

/// A value `values::check` takes for `kw` that is not inert.
fn live_value(l: &Limit) -> String {
    let candidates = ["yes", "ask", "md5", "verbose", "2048x", "4096", "1", "x"];
    candidates
        .iter()
        .find(|v| {
            !l.inert.contains(v)
                && values::check(l.kw, &[v.to_string()]).is_ok()
                && applies(l.kw, v).is_some()
        })
        .map(|v| v.to_string())
        .unwrap_or_else(|| panic!("no live value for {}", l.kw))
}

/// The audit: no keyword is both acted on and limited, and every
/// limited one, given a value sluice lacks, is refused or warned of,
/// with the file and line.
#[test]
fn every_limited_keyword_speaks() {
    for l in LIMITS {
        assert!(
            !SUPPORTED.contains(&l.kw),
            "{} is both SUPPORTED and limited",
            l.kw
        );
        assert_eq!(l.kw, l.kw.to_ascii_lowercase());
        if l.how == How::Inert {
            continue;
        }
        let v = live_value(l);
        let cfg = ClientConfig::from_text(&format!("Host *\n  {} {v}\n", l.kw)).unwrap();
        let r = cfg.resolve("example").unwrap();
        let said: Vec<_> = r.limited.iter().filter(|x| x.limit.kw == l.kw).collect();
        assert_eq!(said.len(), 1, "{} {v}", l.kw);
        assert!(
            said[0].message.contains("ssh_config line 2"),
            "{}",
            said[0].message
        );
        assert!(said[0].message.contains(l.why));
        let refused = report(&r.limited);
        assert_eq!(
            refused.is_err(),
            l.how == How::Refuse || r.limited.iter().any(|x| x.limit.how == How::Refuse)
        );
        for inert in l.inert {
            let cfg = ClientConfig::from_text(&format!("{} {inert}\n", l.kw)).unwrap();
            assert!(
                cfg.resolve("example").unwrap().limited.is_empty(),
                "{} {inert}",
                l.kw
            );
        }
    }
}

#[test]
fn only_the_matching_host_and_ignore_unknown() {
    let cfg = ClientConfig::from_text("Host other\n  ProxyUseFdpass yes\nHost *\n  Protocol 2\n")
        .unwrap();
    assert!(cfg.resolve("example").unwrap().limited.is_empty());
    let r = cfg.resolve("other").unwrap();
    let e = report(&r.limited).unwrap_err();
    assert_eq!(e.0.limit.kw, "proxyusefdpass");
    let e = e.to_string();
    assert!(
        e.contains("ssh_config line 2: unsupported option \"proxyusefdpass yes\""),
        "{e}"
    );
    let cfg = ClientConfig::from_text(
        "IgnoreUnknown proxyusefdpass,usekeychain\nUseKeychain yes\nProxyUseFdpass yes\n",
    )
    .unwrap();
    assert!(cfg.resolve("x").unwrap().limited.is_empty());
    assert!(ClientConfig::from_text("UseKeychain yes\n").is_err());
}

/// Every keyword sluice says it acts on is read by code outside the
/// parser's tables and -G: a keyword added to SUPPORTED and used
/// nowhere fails here.
#[test]
fn every_supported_keyword_is_read_somewhere() {
    fn walk(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        if p.is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                walk(&e.unwrap().path(), out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.to_owned());
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let tables = [
        "config/ssh.rs",
        "config/ssh/values.rs",
        "config/ssh/dump.rs",
        "config/ssh/limits.rs",
        "config/ssh/limits_tests.rs",
        "cli/manpages.rs",
    ];
    let text: String = files
        .iter()
        .filter(|f| !tables.iter().any(|t| f.ends_with(t)))
        .filter(|f| {
            !f.to_string_lossy().contains("/sshd/") && !f.to_string_lossy().contains("/server/")
        })
        .map(|f| {
            let t = std::fs::read_to_string(f).unwrap();
            // Code only: a keyword named in a test alone is not read.
            t.split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for kw in SUPPORTED {
        if ["host", "match", "include", "ignoreunknown"].contains(kw) {
            continue; // the parser's own (config/ssh.rs, resolve.rs)
        }
        assert!(
            text.contains(&format!("\"{kw}\"")),
            "{kw} is SUPPORTED but no code reads it"
        );
    }
}
