//! One channel striped over several connections (`Streams`, PROTOCOL.md
//! "Channel striping") through the delay line: uploads and downloads hash
//! right with the secondaries joined, and a secondary whose TCP connection
//! is destroyed mid-transfer (`ss -K` on the server's side: a reset, as when
//! a middlebox drops the flow) leaves the transfer to the others: the hash
//! is still right, or sluice fails loudly (exit 255), never short data with
//! success. Needs root, /dev/net/tun and the delayline binary; skipped
//! otherwise, saying why.

mod common;
mod wan_util;
use common::*;
use std::time::{Duration, Instant};
use wan_util::*;

/// The client ports of the secondaries sluiced admitted, from its log
/// ("Accepted stripe-join for USER from ADDR port P ssh2: join N").
fn joined_ports(log: &str) -> Vec<u16> {
    log.lines()
        .filter(|l| l.contains("Accepted stripe-join"))
        .filter_map(|l| l.split(" port ").nth(1)?.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn striped_transfers_over_the_delay_line_survive_a_lost_secondary() {
    let line = match Line::up(40, "200mbit") {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("wan-stripe");
    let port = 2200 + (std::process::id() % 1000) as u16;
    let (server, log) = start_sluiced(&s, &line, port, "LogLevel VERBOSE\nMaxStreams 4\n");
    let data = random_data(64 << 20, 77);
    let hash = sha256(&data);
    let streams = ["-v", "-o", "Streams=4"];

    // Up, into sha256sum: three secondaries join and carry.
    let mut c = client(&s, &line, false, port, &streams);
    c.arg("sha256sum");
    let out = run(c, &data, 180);
    ok(&out, "striped upload over the delay line");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("carrier open").count(), 3, "{err}");
    assert_eq!(
        joined_ports(&std::fs::read_to_string(&log).unwrap()).len(),
        3
    );

    // Down, from cat.
    let file = s.dir.path("wan_stripe_data");
    std::fs::write(&file, &data).unwrap();
    let mut c = client(&s, &line, false, port, &streams);
    c.arg(format!("cat {}", file.display()));
    let out = run(c, b"", 180);
    ok(&out, "striped download over the delay line");
    assert_eq!(sha256(&out.stdout), hash);

    // Down again at a pace slow enough to cut a secondary in the middle.
    let before = joined_ports(&std::fs::read_to_string(&log).unwrap()).len();
    let mut c = client(&s, &line, false, port, &streams);
    c.arg(format!("cat {}", file.display()));
    let t = std::thread::spawn(move || run(c, b"", 180));
    let deadline = Instant::now() + Duration::from_secs(30);
    let victim = loop {
        let ports = joined_ports(&std::fs::read_to_string(&log).unwrap());
        if ports.len() > before {
            break ports[before];
        }
        assert!(Instant::now() < deadline, "no secondary joined");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(600));
    let killed = line
        .in_ns(true, "ss")
        .args(["-K", "-tn", &format!("dport = :{victim}")])
        .output()
        .unwrap();
    let out = t.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "killed secondary port {victim}: {}; client exit {:?}",
        String::from_utf8_lossy(&killed.stdout).trim(),
        out.status.code()
    );
    if out.status.success() {
        assert_eq!(sha256(&out.stdout), hash, "success with wrong data");
    } else {
        assert_eq!(out.status.code(), Some(255), "{err}");
        assert!(err.contains("striped") || err.contains("lost"), "{err}");
        assert!(out.stdout.len() < data.len() || sha256(&out.stdout) == hash);
    }
    drop(server);
}
