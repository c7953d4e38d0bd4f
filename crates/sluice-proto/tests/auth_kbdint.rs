//! Keyboard-interactive (RFC 4256) and password authentication through the
//! in-memory pair: prompt rounds, answers, refusals, bounds, abandoning.

mod common;

use common::{host_key_for, owned, Pair};
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::Prompt;
use sluice_proto::{AuthMethodRequest, Connection, Error, Event, ServerConfig, Violation};

/// A pair whose server offers `methods`, with MaxAuthTries `max`.
fn pair(methods: &[&str], max: u32) -> Pair {
    let mut p = Pair::default_algs();
    let common = common::config(
        "curve25519-sha256",
        "ssh-ed25519",
        "aes128-gcm@openssh.com",
        "hmac-sha2-256",
    );
    p.server = Connection::server(
        ServerConfig {
            common,
            host_keys: vec![host_key_for("ssh-ed25519")],
            auth_methods: owned(methods),
            max_auth_tries: max,
            banner: None,
        },
        Box::new(SystemRng),
    );
    p
}

type Hook<'a> = &'a mut dyn FnMut(&mut Connection, Event);

/// Moves bytes both ways until quiet, handing each end's events to its hook
/// (host keys are accepted here). Returns the first side's error, if any.
fn run(p: &mut Pair, client: Hook<'_>, server: Hook<'_>) -> Result<(), Error> {
    for _ in 0..1000 {
        let (c0, s0) = (p.c2s.len(), p.s2c.len());
        p.client.poll_transmit(p.now, &mut p.c2s);
        p.server.poll_transmit(p.now, &mut p.s2c);
        let moved = p.c2s.len() != c0 || p.s2c.len() != s0;
        let mut sink = Vec::new();
        if !p.server.is_closed() {
            Pair::feed(
                &mut p.server,
                &mut p.c2s,
                usize::MAX,
                p.now,
                &mut sink,
                true,
            )?;
        }
        Pair::feed(
            &mut p.client,
            &mut p.s2c,
            usize::MAX,
            p.now,
            &mut sink,
            true,
        )?;
        let mut any = false;
        while let Some(e) = p.client.poll_event() {
            any = true;
            p.client_events.push(e.clone());
            match e {
                Event::HostKey { .. } => p.client.accept_host_key(),
                e => client(&mut p.client, e),
            }
        }
        while let Some(e) = p.server.poll_event() {
            any = true;
            p.server_events.push(e.clone());
            server(&mut p.server, e);
        }
        if !moved && !any {
            return Ok(());
        }
    }
    panic!("no quiescence");
}

fn prompt(text: &str, echo: bool) -> Prompt {
    Prompt {
        prompt: text.into(),
        echo,
    }
}

fn authenticated(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Authenticated { .. }))
}

#[test]
fn two_rounds_of_prompts_then_success() {
    let mut p = pair(&["publickey", "keyboard-interactive"], 6);
    let mut seen = Vec::new();
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_kbdint("alice", ""),
        Event::AuthInfoRequest {
            name,
            instruction,
            prompts,
        } => {
            seen.push((name, instruction, prompts.clone()));
            let answers = prompts
                .iter()
                .map(|p| format!("answer to {}", p.prompt))
                .collect();
            c.auth_info_response(answers).unwrap();
        }
        _ => {}
    };
    let mut round = 0;
    let mut server = |s: &mut Connection, e: Event| match e {
        Event::AuthRequest {
            user,
            method: AuthMethodRequest::KeyboardInteractive { submethods },
        } => {
            assert_eq!((user.as_str(), submethods.as_str()), ("alice", ""));
            s.auth_info_request("Login", "Say it twice", vec![prompt("Password: ", false)])
                .unwrap();
        }
        Event::AuthInfoResponse { answers } => {
            round += 1;
            if round == 1 {
                assert_eq!(answers, vec!["answer to Password: ".to_string()]);
                let two = vec![prompt("Code: ", true), prompt("PIN: ", false)];
                s.auth_info_request("", "", two).unwrap();
            } else {
                assert_eq!(answers, vec!["answer to Code: ", "answer to PIN: "]);
                s.auth_accept();
            }
        }
        _ => {}
    };
    run(&mut p, &mut client, &mut server).unwrap();
    assert!(authenticated(&p.client_events), "{:?}", p.client_events);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, "Login");
    assert_eq!(seen[0].1, "Say it twice");
    assert_eq!(
        seen[1].2,
        vec![prompt("Code: ", true), prompt("PIN: ", false)]
    );
}

#[test]
fn rejected_answers_give_failure_with_the_methods() {
    let mut p = pair(&["publickey", "password", "keyboard-interactive"], 6);
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_kbdint("alice", ""),
        Event::AuthInfoRequest { prompts, .. } => {
            assert!(prompts.is_empty());
            c.auth_info_response(Vec::new()).unwrap();
        }
        _ => {}
    };
    let mut server = |s: &mut Connection, e: Event| match e {
        Event::AuthRequest { .. } => s.auth_info_request("", "", Vec::new()).unwrap(),
        Event::AuthInfoResponse { answers } => {
            assert!(answers.is_empty());
            s.auth_reject();
        }
        _ => {}
    };
    run(&mut p, &mut client, &mut server).unwrap();
    let failure = p.client_events.iter().find_map(|e| match e {
        Event::AuthFailure { methods, .. } => Some(methods.clone()),
        _ => None,
    });
    assert_eq!(
        failure,
        Some(owned(&["publickey", "password", "keyboard-interactive"]))
    );
    assert!(!authenticated(&p.client_events));
}

#[test]
fn password_accepted_and_refused() {
    for (given, ok) in [("right", true), ("wrong", false)] {
        let mut p = pair(&["password"], 6);
        let mut client = |c: &mut Connection, e: Event| {
            if let Event::AuthReady = e {
                c.auth_password("bob", given)
            }
        };
        let mut server = |s: &mut Connection, e: Event| {
            if let Event::AuthRequest {
                method: AuthMethodRequest::Password { password },
                ..
            } = e
            {
                if password == "right" {
                    s.auth_accept()
                } else {
                    s.auth_reject()
                }
            }
        };
        run(&mut p, &mut client, &mut server).unwrap();
        assert_eq!(authenticated(&p.client_events), ok);
    }
}

#[test]
fn methods_not_offered_fail_without_asking_the_runtime() {
    let mut p = pair(&["publickey"], 6);
    let mut tries = 0;
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_kbdint("alice", ""),
        Event::AuthFailure { .. } if tries == 0 => {
            tries += 1;
            c.auth_password("alice", "x");
        }
        _ => {}
    };
    let mut server = |_: &mut Connection, e: Event| {
        assert!(!matches!(e, Event::AuthRequest { .. }), "{e:?}");
    };
    run(&mut p, &mut client, &mut server).unwrap();
    let failures = p
        .client_events
        .iter()
        .filter(|e| matches!(e, Event::AuthFailure { .. }))
        .count();
    assert_eq!(failures, 2);
}

#[test]
fn wrong_number_of_answers_is_a_protocol_error() {
    let mut p = pair(&["keyboard-interactive"], 6);
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_kbdint("alice", ""),
        Event::AuthInfoRequest { .. } => {
            c.auth_info_response(vec!["a".into(), "b".into()]).unwrap()
        }
        _ => {}
    };
    let mut server = |s: &mut Connection, e: Event| {
        if let Event::AuthRequest { .. } = e {
            s.auth_info_request("", "", vec![prompt("Password: ", false)])
                .unwrap()
        }
    };
    let err = run(&mut p, &mut client, &mut server).unwrap_err();
    assert_eq!(
        err,
        Error::Protocol(Violation::WrongAnswerCount {
            prompts: 1,
            answers: 2
        })
    );
    assert!(!p
        .server_events
        .iter()
        .any(|e| matches!(e, Event::AuthInfoResponse { .. })));
}

#[test]
fn answers_and_prompts_only_when_asked_and_bounded() {
    let mut p = pair(&["keyboard-interactive"], 6);
    // The client has nothing to answer before a request.
    assert!(p.client.auth_info_response(Vec::new()).is_err());
    let mut checked = false;
    let mut client = |c: &mut Connection, e: Event| {
        if let Event::AuthReady = e {
            c.auth_kbdint("alice", "pam")
        }
    };
    let mut server = |s: &mut Connection, e: Event| {
        if let Event::AuthRequest { .. } = e {
            let many = (0..101).map(|i| prompt(&format!("{i}: "), false)).collect();
            assert!(s.auth_info_request("", "", many).is_err());
            s.auth_info_request("", "", vec![prompt("P: ", false)])
                .unwrap();
            // One round at a time.
            assert!(s.auth_info_request("", "", Vec::new()).is_err());
            checked = true;
        }
    };
    run(&mut p, &mut client, &mut server).unwrap();
    assert!(checked);
    // Nothing pending on the server for a password request.
    assert!(p.server.auth_info_request("", "", Vec::new()).is_err());
}

#[test]
fn abandoning_prompts_counts_as_a_failure() {
    let mut p = pair(&["password", "keyboard-interactive"], 2);
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_kbdint("alice", ""),
        // Instead of answering, switch to a password.
        Event::AuthInfoRequest { .. } => c.auth_password("alice", "pw"),
        _ => {}
    };
    let mut server = |s: &mut Connection, e: Event| match e {
        Event::AuthRequest {
            method: AuthMethodRequest::KeyboardInteractive { .. },
            ..
        } => s
            .auth_info_request("", "", vec![prompt("Password: ", false)])
            .unwrap(),
        // The abandoned attempt was the first failure; this is the second.
        Event::AuthRequest { .. } => s.auth_reject(),
        _ => {}
    };
    let err = run(&mut p, &mut client, &mut server).unwrap_err();
    assert!(
        err.to_string().contains("Too many authentication failures"),
        "{err}"
    );
    assert!(p.server_events.iter().any(|e| matches!(
        e,
        Event::AuthRequest {
            method: AuthMethodRequest::Password { .. },
            ..
        }
    )));
}

/// One step of several (the runtime's AuthenticationMethods): a partial
/// success names what can continue and does not count as a failure; the
/// next step completes it; `switch` makes the client name another user
/// for the second step, which ends the connection.
fn partial_then(switch: bool) -> Pair {
    let mut p = pair(&["password"], 1);
    let mut step = 0;
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_password("alice", "first"),
        Event::AuthFailure { methods, partial } => {
            assert!(partial, "a partial success");
            assert_eq!(methods, ["keyboard-interactive"]);
            c.auth_kbdint(if switch { "mallory" } else { "alice" }, "");
        }
        _ => {}
    };
    let mut server = |s: &mut Connection, e: Event| match e {
        Event::AuthRequest { user, .. } => {
            assert_eq!(user, "alice");
            step += 1;
            if step == 1 {
                s.auth_partial(owned(&["keyboard-interactive"]));
            } else {
                s.auth_accept();
            }
        }
        _ => {}
    };
    let _ = run(&mut p, &mut client, &mut server);
    p
}

#[test]
fn partial_success_then_the_next_step() {
    let p = partial_then(false);
    assert!(authenticated(&p.server_events), "{:?}", p.server_events);
    assert!(!p.server.is_closed());
}

#[test]
fn another_user_after_partial_success_ends_the_connection() {
    let p = partial_then(true);
    assert!(!authenticated(&p.server_events));
    assert!(p.server.is_closed());
}

/// sshd's rule from the first request on, not only after a partial
/// success: another user (Match and MaxAuthTries are per user) ends the
/// connection with PROTOCOL_ERROR and sshd's words; the BSD auth style of
/// `user:style` may vary.
#[test]
fn another_user_in_any_later_request_ends_the_connection() {
    let mut p = pair(&["password"], 6);
    let mut failures = 0;
    let mut client = |c: &mut Connection, e: Event| match e {
        Event::AuthReady => c.auth_none("alice:pam"),
        Event::AuthFailure { .. } => {
            failures += 1;
            c.auth_password(if failures == 1 { "alice" } else { "bob" }, "x");
        }
        _ => {}
    };
    let mut users = Vec::new();
    let mut server = |s: &mut Connection, e: Event| {
        if let Event::AuthRequest { user, .. } = e {
            users.push(user);
            s.auth_reject();
        }
    };
    let err = run(&mut p, &mut client, &mut server).unwrap_err();
    assert_eq!(
        err,
        Error::Protocol(Violation::UserChanged {
            from: "alice".into(),
            to: "bob".into()
        })
    );
    // The runtime saw only alice's requests, the name as sent.
    assert_eq!(users, ["alice:pam", "alice"]);
    assert!(p.server.is_closed());
    p.server.poll_transmit(p.now, &mut p.s2c);
    let told = Pair::feed(
        &mut p.client,
        &mut p.s2c,
        usize::MAX,
        p.now,
        &mut Vec::new(),
        true,
    );
    let Err(Error::PeerDisconnected {
        reason,
        description,
    }) = told
    else {
        panic!("{told:?}");
    };
    assert_eq!(reason, 2, "SSH_DISCONNECT_PROTOCOL_ERROR");
    assert_eq!(
        description,
        "Change of username or service not allowed: (alice,ssh-connection) -> (bob,ssh-connection)"
    );
}

#[test]
fn too_many_prompts_is_a_protocol_error() {
    // A server asking more than the client answers (sshd's own cap).
    let mut p = pair(&["keyboard-interactive"], 6);
    let mut client = |c: &mut Connection, e: Event| {
        if let Event::AuthReady = e {
            c.auth_kbdint("alice", "")
        }
    };
    // The server leaves the request undecided, then misbehaves by hand.
    let mut server = |_: &mut Connection, _: Event| {};
    run(&mut p, &mut client, &mut server).unwrap();
    let n = sluice_proto::auth::MAX_KBDINT_PROMPTS + 1;
    let mut m = Vec::new();
    sluice_proto::msg::UserauthInfoRequest {
        name: String::new(),
        instruction: String::new(),
        language: String::new(),
        prompts: vec![prompt("?", false); n],
    }
    .encode(&mut m);
    let mut wire = Vec::new();
    p.server.seal_raw(&m, false, &mut wire);
    let mut sink = Vec::new();
    let err = Pair::feed(&mut p.client, &mut wire, usize::MAX, p.now, &mut sink, true);
    assert_eq!(err, Err(Error::Protocol(Violation::TooManyPrompts(n))));
    assert!(!p
        .client_events
        .iter()
        .any(|e| matches!(e, Event::AuthInfoRequest { .. })));
}
