//! authorized_keys options (sshd(8) AUTHORIZED_KEYS FILE FORMAT) enforced
//! by sluiced, each checked against Debian's sshd with OpenSSH's client:
//! `restrict` and its exceptions, `permitlisten=`/`permitopen=`,
//! `expiry-time=`, `from=`, `environment=`, and lines sshd would reject
//! (skipped with a log line naming file and line). A `cert-authority`
//! line never lets its own key in; FIDO policies on a plain key change
//! nothing (tests/sk_keys.rs has them on security keys).

mod agent_util;
mod common;
mod fwd_util;

use agent_util::Agent;
use common::*;
use fwd_util::tcp_echo;
use std::process::Output;

/// Both servers: (OpenSSH's sshd?, label).
const SERVERS: [(bool, &str); 2] = [(false, "sluiced"), (true, "sshd")];

fn sshd_here() -> bool {
    !missing("/usr/sbin/sshd")
}

/// authorized_keys holds the test key under `opts` (one line per entry).
fn authorize(s: &Setup, lines: &[&str]) {
    let key = std::fs::read_to_string(s.dir.path("id_ed25519.pub")).unwrap();
    let text: String = lines
        .iter()
        .map(|o| {
            if o.is_empty() {
                key.clone()
            } else {
                format!("{o} {key}")
            }
        })
        .collect();
    std::fs::write(s.dir.path("authorized_keys"), text).unwrap();
}

/// OpenSSH's ssh running `command` (extra options first).
fn ssh(s: &Setup, server: &Server, extra: &[&str], command: &str) -> Output {
    let mut c = s.client(true, server, extra);
    c.arg(command);
    run(c, b"", 30)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn logs_in(s: &Setup, server: &Server) -> bool {
    let out = ssh(s, server, &[], "echo in");
    text(&out.stdout) == "in\n"
}

/// `-tt tty`: Some(pty name) or None when no pty was given.
fn pty(s: &Setup, server: &Server) -> Option<String> {
    let out = ssh(s, server, &["-tt"], "tty");
    let o = text(&out.stdout);
    if o.starts_with("/dev/pts/") {
        return Some(o.trim().to_owned());
    }
    let e = text(&out.stderr);
    assert!(
        e.contains("PTY allocation request failed") || o.contains("not a tty"),
        "stdout {o:?} stderr {e:?}"
    );
    None
}

/// `-W 127.0.0.1:port` (a direct-tcpip channel) to an echo server.
fn opens(s: &Setup, server: &Server, port: u16) -> bool {
    let mut c = s.client(true, server, &["-W", &format!("127.0.0.1:{port}")]);
    c.arg("true");
    let out = run(c, b"ping\n", 30);
    out.stdout == b"ping\n"
}

/// `-R bind:port:127.0.0.1:echo` with ExitOnForwardFailure; the remote
/// command goes through the forward (bound before the session starts).
fn listens(s: &Setup, server: &Server, bind: Option<&str>, echo: u16) -> bool {
    let port = free_port();
    let spec = match bind {
        Some(b) => format!("{b}:{port}:127.0.0.1:{echo}"),
        None => format!("{port}:127.0.0.1:{echo}"),
    };
    let probe =
        format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo ping >&3 && head -n1 <&3'");
    let out = ssh(
        s,
        server,
        &["-o", "ExitOnForwardFailure=yes", "-R", &spec],
        &probe,
    );
    let ok = out.status.success() && out.stdout == b"ping\n";
    if !ok {
        assert_eq!(out.status.code(), Some(255), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&format!(
                "remote port forwarding failed for listen port {port}"
            )),
            "{}",
            text(&out.stderr)
        );
    }
    ok
}

/// `-A` with an agent: whether the session got SSH_AUTH_SOCK.
fn agent_forwarded(s: &Setup, server: &Server, agent: &Agent) -> bool {
    let mut c = s.client(true, server, &["-A"]);
    c.env("SSH_AUTH_SOCK", &agent.sock)
        .arg("echo ${SSH_AUTH_SOCK:-none}");
    let out = run(c, b"", 30);
    let o = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    o.trim() != "none"
}

#[test]
fn restrict_and_its_exceptions() {
    if !sshd_here() {
        return;
    }
    let s = Setup::new("ak-restrict");
    let echo = tcp_echo();
    let agent = Agent::start(&s.dir, &[]);
    for (openssh, label) in SERVERS {
        let server = s.start(openssh, "");
        authorize(&s, &[""]);
        assert!(pty(&s, &server).is_some(), "{label}: plain key, pty");
        assert!(opens(&s, &server, echo), "{label}: plain key, -W");
        assert!(
            agent_forwarded(&s, &server, &agent),
            "{label}: plain key, -A"
        );

        // restrict: no pty, no forwarding of any kind, no agent.
        authorize(&s, &["restrict"]);
        assert_eq!(pty(&s, &server), None, "{label}: restrict, pty");
        assert!(!opens(&s, &server, echo), "{label}: restrict, -W");
        assert!(
            !listens(&s, &server, Some("127.0.0.1"), echo),
            "{label}: restrict, -R"
        );
        assert!(
            !agent_forwarded(&s, &server, &agent),
            "{label}: restrict, -A"
        );
        if !openssh {
            let log = server.log_text();
            assert!(log.contains("pty-req refused: key option no-pty"), "{log}");
            assert!(
                log.contains("no-port-forwarding in authorized_keys"),
                "{log}"
            );
        }

        // Each exception lifts its own restriction only.
        authorize(&s, &["restrict,pty"]);
        assert!(pty(&s, &server).is_some(), "{label}: restrict,pty");
        assert!(!opens(&s, &server, echo), "{label}: restrict,pty -W");
        authorize(&s, &["restrict,port-forwarding"]);
        assert!(
            opens(&s, &server, echo),
            "{label}: restrict,port-forwarding -W"
        );
        assert!(
            listens(&s, &server, Some("127.0.0.1"), echo),
            "{label}: restrict,port-forwarding -R"
        );
        assert_eq!(pty(&s, &server), None, "{label}: restrict,port-forwarding");
        authorize(&s, &["restrict,agent-forwarding"]);
        assert!(
            agent_forwarded(&s, &server, &agent),
            "{label}: restrict,agent-forwarding"
        );
        assert!(
            !opens(&s, &server, echo),
            "{label}: restrict,agent-forwarding -W"
        );

        // The no- forms one by one.
        authorize(&s, &["no-pty"]);
        assert_eq!(pty(&s, &server), None, "{label}: no-pty");
        assert!(opens(&s, &server, echo), "{label}: no-pty -W");
        authorize(&s, &["no-port-forwarding"]);
        assert!(!opens(&s, &server, echo), "{label}: no-port-forwarding -W");
        assert!(
            pty(&s, &server).is_some(),
            "{label}: no-port-forwarding pty"
        );
        authorize(&s, &["no-agent-forwarding"]);
        assert!(
            !agent_forwarded(&s, &server, &agent),
            "{label}: no-agent-forwarding"
        );
        // Options of features sluiced does not serve are valid lines.
        authorize(
            &s,
            &["no-X11-forwarding,X11-forwarding,no-user-rc,user-rc,tunnel=\"0\""],
        );
        assert!(logs_in(&s, &server), "{label}: x11/user-rc/tunnel options");
    }
}

#[test]
fn permitlisten_and_permitopen() {
    if !sshd_here() {
        return;
    }
    let s = Setup::new("ak-permit");
    let echo = tcp_echo();
    let other_echo = tcp_echo();
    for (openssh, label) in SERVERS {
        let server = s.start(openssh, "");
        // The listed host:port only; another port, or the same port asked
        // as "localhost" (ssh's default bind name), is refused as by sshd.
        let port = free_port();
        let line = format!("permitlisten=\"127.0.0.1:{port}\",permitopen=\"127.0.0.1:{echo}\"");
        authorize(&s, &[&line]);
        let spec = format!("127.0.0.1:{port}:127.0.0.1:{echo}");
        let probe =
            format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo ping >&3 && head -n1 <&3'");
        let out = ssh(
            &s,
            &server,
            &["-o", "ExitOnForwardFailure=yes", "-R", &spec],
            &probe,
        );
        assert_eq!(
            text(&out.stdout),
            "ping\n",
            "{label}: {}",
            text(&out.stderr)
        );
        assert!(
            !listens(&s, &server, Some("127.0.0.1"), echo),
            "{label}: -R on an unlisted port"
        );
        // permitopen: the listed target only.
        assert!(opens(&s, &server, echo), "{label}: permitopen target");
        assert!(!opens(&s, &server, other_echo), "{label}: another target");
        if !openssh {
            let log = server.log_text();
            assert!(log.contains("permitlisten in authorized_keys"), "{log}");
            assert!(log.contains("permitopen in authorized_keys"), "{log}");
        }

        // A bare port: any listen host, that port only.
        let port = free_port();
        authorize(&s, &[&format!("permitlisten=\"{port}\"")]);
        let spec = format!("{port}:127.0.0.1:{echo}");
        let probe =
            format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo ping >&3 && head -n1 <&3'");
        let out = ssh(
            &s,
            &server,
            &["-o", "ExitOnForwardFailure=yes", "-R", &spec],
            &probe,
        );
        assert_eq!(
            text(&out.stdout),
            "ping\n",
            "{label}: {}",
            text(&out.stderr)
        );
        assert!(
            !listens(&s, &server, None, echo),
            "{label}: bare port, other port"
        );
        // Without permitlisten, any port.
        authorize(&s, &[""]);
        assert!(listens(&s, &server, None, echo), "{label}: no permitlisten");
    }
}

#[test]
fn expiry_time() {
    if !sshd_here() {
        return;
    }
    let s = Setup::new("ak-expiry");
    for (openssh, label) in SERVERS {
        let server = s.start(openssh, "");
        for (opt, ok) in [
            ("expiry-time=\"20200101\"", false),
            ("expiry-time=\"202001010000Z\"", false),
            ("expiry-time=\"20991231\"", true),
            ("expiry-time=\"20991231235959Z\"", true),
            // Malformed: the line is skipped (was: never expires).
            ("expiry-time=\"0000\"", false),
            ("expiry-time=\"2099\"", false),
            ("expiry-time=\"20991341\"", false),
            ("expiry-time=20991231", false),
        ] {
            authorize(&s, &[opt]);
            assert_eq!(logs_in(&s, &server), ok, "{label}: {opt}");
        }
        // A skipped or refused line does not hide a later one for the key.
        authorize(
            &s,
            &["expiry-time=\"2099\"", "expiry-time=\"20200101\"", "no-pty"],
        );
        assert!(logs_in(&s, &server), "{label}: later line");
        if !openssh {
            let log = server.log_text();
            let ak = s.dir.path("authorized_keys");
            for want in [
                format!("{}:1: bad key options: invalid expires time", ak.display()),
                format!("{}:2: key refused: entry expired", ak.display()),
                format!("{}:1: bad key options: missing start quote", ak.display()),
            ] {
                assert!(log.contains(&want), "{want}\n{log}");
            }
        }
    }
}

#[test]
fn bad_options_skip_the_line() {
    if !sshd_here() {
        return;
    }
    let s = Setup::new("ak-bad");
    for (openssh, label) in SERVERS {
        let server = s.start(openssh, "PermitUserEnvironment yes");
        for (opt, why) in [
            ("nonsense", "unknown key option"),
            ("pty=\"yes\"", "unknown key option"),
            ("command=\"echo", "invalid key option string"),
            (
                "command=\"echo a\",command=\"echo b\"",
                "multiple \"command\" clauses",
            ),
            ("environment=\"A-B=1\"", "invalid environment string"),
            ("environment=\"NOVALUE\"", "invalid environment string"),
            ("permitopen=\"127.0.0.1\"", "invalid permission port"),
            ("permitlisten=\"none\"", "invalid permission port"),
            ("tunnel=\"x\"", "invalid tun device"),
            (
                "from=\"127.0.0.1\",from=\"::1\"",
                "multiple \"from\" clauses",
            ),
        ] {
            authorize(&s, &[opt]);
            assert!(!logs_in(&s, &server), "{label}: {opt}");
            if !openssh {
                let want = format!(
                    "{}:1: {}{why}",
                    s.dir.path("authorized_keys").display(),
                    if opt == "command=\"echo" {
                        ""
                    } else {
                        "bad key options: "
                    }
                );
                assert!(server.log_text().contains(&want), "{want}");
            }
        }
        // from=, command= and environment= as sshd applies them.
        authorize(&s, &["from=\"10.0.0.0/8\"", "from=\"127.0.0.1,::1\",environment=\"KEYVAR=from key\",command=\"echo $KEYVAR:$SSH_ORIGINAL_COMMAND\""]);
        let out = ssh(&s, &server, &[], "asked");
        assert_eq!(text(&out.stdout), "from key:asked\n", "{label}");
    }
}

#[test]
fn unsupported_lines_are_skipped_and_logged() {
    let s = Setup::new("ak-unsup");
    let server = s.start(false, "");
    // A CA line does not let its own key in as a plain key (sshd); a
    // principals= on a plain key line is ignored, as sshd does
    // (certificates: tests/certificates.rs).
    authorize(&s, &["cert-authority"]);
    assert!(!logs_in(&s, &server), "cert-authority");
    authorize(&s, &["principals=\"nobody\""]);
    assert!(logs_in(&s, &server), "principals=");
    // FIDO policies bind only security keys (tests/sk_keys.rs); on a
    // plain key they change nothing, as in sshd.
    for opt in ["no-touch-required", "verify-required"] {
        authorize(&s, &[opt]);
        assert!(logs_in(&s, &server), "{opt}");
    }
    authorize(&s, &["touch-required,no-verify-required"]);
    assert!(logs_in(&s, &server), "the defaults are fine");
}

/// The administrator's ForceCommand wins over a key's command= (sshd's
/// order; OpenSSH's regress forcecommand.sh), for OpenSSH's sshd and sluiced.
#[test]
fn force_command_overrides_the_keys_command() {
    for openssh in [false, true] {
        if openssh && !sshd_here() {
            continue;
        }
        let s = Setup::new("ak-force");
        let server = s.start(openssh, "ForceCommand echo admin\n");
        authorize(&s, &["command=\"echo key\""]);
        let out = ssh(&s, &server, &[], "asked");
        assert_eq!(text(&out.stdout), "admin\n", "openssh {openssh}");
    }
}
