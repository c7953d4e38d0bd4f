//! ssh-agent at both ends against Debian's OpenSSH: authentication with
//! keys held by `ssh-agent` (RSA with rsa-sha2-256 and -512, a refusing
//! agent), agent forwarding in every pairing with a second hop that
//! authenticates through the forwarded agent, refusal when the server
//! disallows it, and a hostile server opening agent channels unasked.

mod agent_util;
mod common;
use agent_util::*;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn agent_authentication_with_rsa_sha2_signatures() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentauth");
    let agent = Agent::start(&s.dir, &[&rsa]);
    for openssh in [true, false] {
        for alg in ["rsa-sha2-256", "rsa-sha2-512"] {
            let server = s.start(openssh, &format!("PubkeyAcceptedAlgorithms {alg}"));
            let label = format!("sluice->{} {alg}", if openssh { "sshd" } else { "sluiced" });
            // The agent from SSH_AUTH_SOCK, then from IdentityAgent.
            // ssh too picks the alg from the server's server-sig-algs, which
            // sshd 9.2 fills with every algorithm it knows: the client is
            // told the one to use.
            let ia = format!("IdentityAgent={}", agent.sock.display());
            let pa = format!("PubkeyAcceptedAlgorithms={alg}");
            for (sock, extra) in [
                (Some(agent.sock.as_path()), vec!["-o", &pa]),
                (None, vec!["-o", &ia, "-o", &pa]),
            ] {
                let mut c = agent_client(&s, false, server.port, sock, &extra);
                c.arg("echo ok");
                let out = run(c, b"", 60);
                assert_eq!(
                    text(&out.stdout),
                    "ok\n",
                    "{label}: {}\n{}",
                    text(&out.stderr),
                    server.log_text()
                );
            }
        }
    }
    // IdentityAgent none: no agent, no key, refused.
    let server = s.start(false, "");
    let mut c = agent_client(
        &s,
        false,
        server.port,
        Some(&agent.sock),
        &["-o", "IdentityAgent=none"],
    );
    c.arg("echo ok");
    let out = run(c, b"", 60);
    assert_eq!(out.status.code(), Some(255));
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    // The agent refuses to sign with its first key (added with -c, no
    // askpass to confirm): the next key is tried, as ssh does.
    let confirm = s.dir.path("agent_confirm");
    keygen(&confirm, "ed25519");
    let mut auth = std::fs::read_to_string(s.dir.path("authorized_keys")).unwrap();
    auth.push_str(&std::fs::read_to_string(s.dir.path("agent_confirm.pub")).unwrap());
    std::fs::write(s.dir.path("authorized_keys"), auth).unwrap();
    let agent2 = Agent::start(&s.dir, &[]);
    agent2.add(&confirm, true);
    agent2.add(&rsa, false);
    let mut c = agent_client(&s, false, server.port, Some(&agent2.sock), &[]);
    c.arg("echo ok");
    let out = run(c, b"", 60);
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("signing failed"),
        "{}",
        text(&out.stderr)
    );
}

/// In the remote session: list the forwarded agent's keys, then log in to
/// `hop_port` with it.
fn two_hop_command(hop_port: u16) -> String {
    format!(
        "echo sock=$SSH_AUTH_SOCK; ssh-add -l; echo rc=$?; \
         ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
         -o LogLevel=ERROR -o IdentityFile=/nonexistent -p {hop_port} 127.0.0.1 echo hop"
    )
}

#[test]
fn agent_forwarding_every_pairing_with_a_second_hop() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentfwd");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let fp = fingerprint(&s.dir.path("agent_rsa.pub"));
    let hop = s.start(false, "");
    for (oc, os, label) in [
        (false, false, "sluice->sluiced"),
        (false, true, "sluice->sshd"),
        (true, false, "ssh->sluiced"),
    ] {
        let server = s.start(os, "AllowAgentForwarding yes");
        // -A, ForwardAgent with the socket's path, with `${VAR}` expanded
        // in a path and with `$VAR` naming the variable that holds it.
        let fa = format!("ForwardAgent={}", agent.sock.display());
        std::env::set_var("SLUICE_TEST_FWD_SOCK", &agent.sock);
        let variants: Vec<Vec<&str>> = vec![
            vec!["-A"],
            vec!["-o", &fa],
            vec!["-o", "ForwardAgent=${SLUICE_TEST_FWD_SOCK}"],
            vec!["-o", "ForwardAgent=$SLUICE_TEST_FWD_SOCK"],
        ];
        for extra in variants {
            let mut c = agent_client(&s, oc, server.port, Some(&agent.sock), &extra);
            c.arg(two_hop_command(hop.port));
            let out = run(c, b"", 60);
            let o = text(&out.stdout);
            let why = format!(
                "{label} {extra:?}: {o}\n{}\nserver log:\n{}\nhop log:\n{}",
                text(&out.stderr),
                server.log_text(),
                hop.log_text()
            );
            assert!(o.contains(&fp) && o.contains("rc=0"), "{why}");
            assert!(o.ends_with("hop\n"), "{why}");
            if !os {
                // sluiced removes the socket and its directory when the
                // connection ends.
                let sock = o
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("sock=");
                let dir = Path::new(sock).parent().unwrap().to_owned();
                assert!(dir.to_string_lossy().starts_with("/tmp/ssh-"), "{why}");
                let deadline = Instant::now() + Duration::from_secs(10);
                while dir.exists() {
                    assert!(Instant::now() < deadline, "{} left behind", dir.display());
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
}

/// `-i key.pub` with IdentitiesOnly: the agent's key with that public half
/// is used, as ssh does; without the agent the key cannot sign and both
/// clients are refused.
#[test]
fn a_public_key_file_selects_the_agent_key() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentpub");
    let agent = Agent::start(&s.dir, &[&rsa]);
    // Only the public half, away from its private key.
    let pubdir = s.dir.path("pubonly");
    std::fs::create_dir_all(&pubdir).unwrap();
    let pubkey = pubdir.join("agent_rsa.pub");
    std::fs::copy(s.dir.path("agent_rsa.pub"), &pubkey).unwrap();
    // A second agent key that the server does not accept, listed first, so
    // that IdentitiesOnly has something to leave out.
    let other = s.dir.path("agent_other");
    keygen(&other, "ed25519");
    let agent2 = Agent::start(&s.dir, &[&other, &rsa]);
    let server = s.start(true, "MaxAuthTries 1");
    let i = pubkey.display().to_string();
    for openssh in [true, false] {
        let who = if openssh { "ssh" } else { "sluice" };
        for sock in [&agent.sock, &agent2.sock] {
            let mut c = agent_client(
                &s,
                openssh,
                server.port,
                Some(sock),
                &["-i", &i, "-o", "IdentitiesOnly=yes"],
            );
            c.arg("echo ok");
            let out = run(c, b"", 60);
            assert_eq!(text(&out.stdout), "ok\n", "{who}: {}", text(&out.stderr));
        }
        let mut c = agent_client(
            &s,
            openssh,
            server.port,
            None,
            &["-i", &i, "-o", "IdentitiesOnly=yes"],
        );
        c.env_remove("SSH_AUTH_SOCK").arg("echo ok");
        let out = run(c, b"", 60);
        assert_eq!(out.status.code(), Some(255), "{who}: {}", text(&out.stderr));
    }
}

#[test]
fn agent_forwarding_refused_when_the_server_disallows_it() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentno");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let hop = s.start(false, "");
    for (oc, os, cfg) in [
        (false, false, "AllowAgentForwarding no"),
        (false, false, "DisableForwarding yes"),
        (false, true, "AllowAgentForwarding no"),
        (true, false, "AllowAgentForwarding no"),
    ] {
        let server = s.start(os, cfg);
        let mut c = agent_client(&s, oc, server.port, Some(&agent.sock), &["-A"]);
        c.arg(two_hop_command(hop.port));
        let out = run(c, b"", 60);
        let o = text(&out.stdout);
        let why = format!(
            "{oc} {os} {cfg}: {o}\n{}\n{}",
            text(&out.stderr),
            server.log_text()
        );
        assert!(o.starts_with("sock=\n") && o.contains("rc=2"), "{why}");
        assert!(!o.contains("hop"), "{why}");
        assert_eq!(out.status.code(), Some(255), "{why}");
        if !os {
            assert!(
                server.log_text().contains("agent forwarding refused"),
                "{why}"
            );
        }
    }
}

/// Keys added with destination constraints (`ssh-add -h`, OpenSSH 8.9+):
/// the agent signs only for the hosts and hops it was told, and checks that
/// against what clients bind its connections to (session-bind@openssh.com)
/// and the host key in hostbound publickey requests. So sluice binds its
/// agent connections, forwarded ones marked so, and sluiced offers
/// publickey-hostbound. All servers here share the setup's host keys, so
/// the one hop is "hosta>hosta".
#[test]
fn destination_constrained_keys_at_each_hop() {
    if missing("/usr/sbin/sshd") || missing("ssh-agent") {
        return;
    }
    let (s, rsa) = agent_setup("agentdest");
    let kh = s.dir.path("constraint_hosts");
    let mut hosts = String::new();
    for t in ["ed25519", "ecdsa", "rsa"] {
        let k = std::fs::read_to_string(s.dir.path(&format!("host_{t}.pub"))).unwrap();
        hosts.push_str(&format!("hosta {k}"));
    }
    std::fs::write(&kh, hosts).unwrap();
    let constrained = |hops: &[&str]| {
        let agent = Agent::start(&s.dir, &[]);
        let mut c = Command::new("ssh-add");
        c.arg("-q").arg("-H").arg(&kh);
        for h in hops {
            c.args(["-h", h]);
        }
        let st = c
            .arg(&rsa)
            .env("SSH_AUTH_SOCK", &agent.sock)
            .status()
            .unwrap();
        assert!(st.success(), "ssh-add -h {hops:?}");
        agent
    };
    let hop = s.start(false, "");
    let sluiced = s.start(false, "AllowAgentForwarding yes");
    let sshd = s.start(true, "AllowAgentForwarding yes");
    let login = |agent: &Agent, oc: bool, port: u16, extra: &[&str], command: &str| {
        let mut c = agent_client(&s, oc, port, Some(&agent.sock), extra);
        c.arg(command);
        let out = run(c, b"", 60);
        (text(&out.stdout), text(&out.stderr))
    };
    // The first hop only: sluice logs in with the key (an unbound agent
    // connection would be refused); a second hop through it is not allowed.
    let agent = constrained(&["hosta"]);
    for (oc, port, label) in [
        (false, sluiced.port, "sluice->sluiced"),
        (false, sshd.port, "sluice->sshd"),
        (true, sluiced.port, "ssh->sluiced"),
    ] {
        let (o, e) = login(&agent, oc, port, &[], "echo in");
        assert_eq!(o, "in\n", "{label}: {e}");
        let (o, e) = login(&agent, oc, port, &["-A"], &two_hop_command(hop.port));
        assert!(
            !o.contains("hop"),
            "{label}: a hop the key was not given\n{o}{e}"
        );
    }
    // With the hop allowed, the second login through the forwarded agent
    // works from each pairing.
    let agent = constrained(&["hosta", "hosta>hosta"]);
    for (oc, port, label) in [
        (false, sluiced.port, "sluice->sluiced"),
        (false, sshd.port, "sluice->sshd"),
        (true, sluiced.port, "ssh->sluiced"),
    ] {
        let (o, e) = login(&agent, oc, port, &["-A"], &two_hop_command(hop.port));
        assert!(
            o.ends_with("hop\n"),
            "{label}: {o}{e}\nserver:\n{}\nhop:\n{}",
            sluiced.log_text(),
            hop.log_text()
        );
    }
}

/// A hostile server (paramiko) opens an agent channel: refused and logged
/// unless forwarding was asked for, bridged to the agent when it was.
#[test]
fn client_refuses_agent_channels_it_did_not_ask_for() {
    use std::io::BufRead;
    let has_paramiko = Command::new("python3")
        .args(["-c", "import paramiko"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_paramiko || missing("ssh-agent") {
        assert!(
            std::env::var("CI").is_err(),
            "paramiko is required under CI"
        );
        return;
    }
    let (s, rsa) = agent_setup("agentprobe");
    let agent = Agent::start(&s.dir, &[&rsa]);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/peers/agent_probe_server.py"
    );
    for (extra, want) in [
        (vec![], "agent channel: refused\n"),
        (vec!["-A"], "agent channel: 1 keys\n"),
    ] {
        let port = free_port();
        let mut server = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(s.dir.path("host_ed25519"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let _ = std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line);
        assert_eq!(line, "ready\n");
        let mut c = agent_client(&s, false, port, Some(&agent.sock), &extra);
        c.arg("probe");
        let out = run(c, b"", 60);
        let _ = server.kill();
        let _ = server.wait();
        let err = text(&out.stderr);
        assert_eq!(text(&out.stdout), want, "{extra:?}: {err}");
        assert_eq!(
            err.contains("Warning: ssh server tried agent forwarding."),
            extra.is_empty(),
            "{err}"
        );
    }
}
