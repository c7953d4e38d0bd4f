//! sluiced's `Match` against Debian's sshd: the same configuration given
//! to `sshd -T -C spec` and `sluiced -T -C spec` for many connection specs
//! must give the same values for the keywords the Match blocks set; the
//! same bad lines must be refused by both. Criteria sshd 9.2 does not have
//! (Invalid-User, Version: sshd 10) are tested in the unit tests; RDomain
//! here through `-C rdomain=` only (a VRF device is not made in tests).

mod common;

use common::*;
use std::collections::BTreeMap;
use std::process::Command;

/// The keywords the Match blocks below set: the ones compared.
const DECIDED: &[&str] = &[
    "permittty",
    "x11forwarding",
    "maxauthtries",
    "forcecommand",
    "allowtcpforwarding",
    "maxsessions",
    "permitrootlogin",
    "clientalivecountmax",
    "banner",
    "permitopen",
];

fn dump(bin: &str, cfg: &std::path::Path, spec: &str) -> (bool, BTreeMap<String, String>, String) {
    let mut c = Command::new(bin);
    c.arg("-T").arg("-f").arg(cfg).args(["-C", spec]);
    let out = run(c, b"", 20);
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        if DECIDED.contains(&k) {
            m.insert(k.to_owned(), v.to_owned());
        }
    }
    (
        out.status.success(),
        m,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn match_criteria_decide_as_in_sshd() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let _ = std::fs::create_dir_all("/run/sshd");
    let s = Setup::new("matchcmp");
    let d = s.dir.0.display().to_string();
    let cfg = s.dir.path("sshd_config");
    std::fs::write(
        &cfg,
        format!(
            "HostKey {d}/host_ed25519\nPidFile none\n\
             Match Address 192.168.0.0/16,!192.168.30.0/24,10.0.0.0/8,host.example.com\n  PermitTTY no\n\
             Match Address 2001:db8::/32,!2001:db8::1\n  X11Forwarding yes\n\
             Match LocalAddress 127.0.0.0/8,::1 LocalPort 2222\n  MaxAuthTries 2\n\
             Match User=alice,b?b,!bobby Host *.example.com,!bad.example.com\n  ForceCommand echo listed\n\
             Match Group root\n  AllowTcpForwarding local\n\
             Match User root Address 10.1\n  MaxSessions 3\n\
             Match Host *.EXAMPLE.org\n  PermitRootLogin no\n\
             Match User Carol\n  ClientAliveCountMax 9\n\
             Match Address 172.16.*,fe80::*\n  Banner /etc/issue.net\n\
             Match Address 10.0.0.0/8 User !root,*\n  PermitOpen 127.0.0.1:80\n\
             Match LocalPort 0\n  PermitTTY yes\n\
             Match RDomain rdom*,!rdom2\n  MaxSessions 7\n"
        ),
    )
    .unwrap();
    let specs = [
        "addr=192.168.0.1,lport=22",
        "addr=192.168.30.5,lport=22",
        "addr=10.9.8.7,user=bob,host=www.example.com,lport=22",
        "addr=10.0.0.1,user=root,host=x,lport=22",
        "addr=2001:db8::2,lport=22",
        "addr=2001:db8::1,lport=22",
        "addr=1.2.3.4,laddr=127.0.0.1,lport=2222",
        "addr=1.2.3.4,laddr=::1,lport=2222",
        "addr=1.2.3.4,laddr=10.0.0.1,lport=2222",
        "user=bobby,host=www.example.com,lport=22",
        "user=bob,host=bad.example.com,lport=22",
        "user=bob,host=WWW.Example.COM,lport=22",
        "user=carol,lport=22",
        "user=Carol,lport=22",
        "host=a.example.org,lport=22",
        "addr=172.16.3.4,lport=22",
        "addr=fe80::1,lport=22",
        "addr=not-an-address,lport=22",
        "user=root,lport=22",
        "rdomain=rdom1,lport=22",
        "rdomain=rdom2,lport=22",
        "rdomain=Rdom1,lport=22",
        "lport=22",
    ];
    for spec in specs {
        let (ok_ours, ours, err_ours) = dump(SLUICED, &cfg, spec);
        let (ok_theirs, theirs, err_theirs) = dump("/usr/sbin/sshd", &cfg, spec);
        assert!(
            ok_ours && ok_theirs,
            "{spec}: sluiced {err_ours}; sshd {err_theirs}"
        );
        assert_eq!(ours, theirs, "-C {spec}: sluiced (left) and sshd differ");
    }
    // The brief's list: loaded, and the first entry matches 192.168.0.1.
    let (_, v, _) = dump(SLUICED, &cfg, "addr=192.168.0.1,lport=22");
    assert_eq!(v["permittty"], "no");
}

#[test]
fn bad_match_lines_are_refused_as_sshd_refuses_them() {
    if missing("/usr/sbin/sshd") {
        return;
    }
    let _ = std::fs::create_dir_all("/run/sshd");
    let s = Setup::new("matchbad");
    let d = s.dir.0.display().to_string();
    let cases = [
        ("Match Address 192.168.1.1/24", false),
        ("Match Address 1.2.3.4/33", false),
        ("Match Address 1.2.3.0/24,", false),
        ("Match LocalAddress 1.2.3.4/40", false),
        ("Match Address 1.2.3.4/200", true),
        ("Match Address host.example.com,::1", true),
        ("Match LocalPort 0", true),
        ("Match LocalPort x", false),
        ("Match User", false),
        ("Match All User x", false),
        ("Match Nonsense x", false),
        ("Match User bob # a comment", true),
    ];
    for (line, loads) in cases {
        let cfg = s.dir.path("cfg");
        std::fs::write(
            &cfg,
            format!("HostKey {d}/host_ed25519\n{line}\n  PermitTTY no\n"),
        )
        .unwrap();
        for bin in [SLUICED, "/usr/sbin/sshd"] {
            let mut c = Command::new(bin);
            c.arg("-t").arg("-f").arg(&cfg);
            let out = run(c, b"", 20);
            assert_eq!(
                out.status.success(),
                loads,
                "{bin}: {line}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
