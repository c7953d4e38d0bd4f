//! `Streams auto` on a path one socket covers but that loses packets
//! (its own test binary: a delay line's namespaces are named after the
//! process). Needs root, /dev/net/tun and the delayline binary; skipped
//! otherwise, saying why.

mod common;
mod wan_util;
use common::*;
use wan_util::*;

/// The `Streams auto` decision lines of a `-v` log.
fn decisions(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.contains("Streams auto: ") && l.contains(" MB/s"))
        .collect()
}

/// On a 40 ms path with 1% loss, `auto` stripes the channel over the
/// primary alone, sees the losses on its TCP (segments sent again going
/// up, arriving out of order coming down) and opens three more at once;
/// whatever the steps decide from there (with loss-bound congestion
/// control more connections multiply the rate, with BBR they may not and
/// are given back: their carriers close), every byte arrives, both ways.
#[test]
fn streams_auto_sees_losses_and_tries_more_connections() {
    let line = match Line::up_with(40, "50mbit", &["--loss", "1%", "--seed", "11"]) {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let s = Setup::new("wan-stripe-loss");
    let port = 4200 + (std::process::id() % 1000) as u16;
    let (server, _log) = start_sluiced(&s, &line, port, "LogLevel VERBOSE\n");
    let data = random_data(40 << 20, 79);
    let hash = sha256(&data);
    let check = |err: &str, what: &str| {
        eprintln!("{what}:\n{}", decisions(err).join("\n"));
        assert!(err.contains("striped over this connection alone"), "{err}");
        assert!(err.contains("signs of loss"), "{what}: {err}");
        assert!(
            decisions(err)
                .first()
                .is_some_and(|d| d.contains("signs of loss") && d.contains("opening 3 more")),
            "{what}: {err}"
        );
        if err.contains("giving back") {
            // Given back, or kept when the data had all been sent.
            assert!(
                err.contains("carriers; no more are added")
                    || err.contains("keeping the connections, no more steps"),
                "{err}"
            );
        }
    };

    let mut c = client(&s, &line, false, port, &["-v", "-o", "Streams=auto"]);
    c.arg("sha256sum");
    let out = run(c, &data, 240);
    ok(&out, "upload with Streams auto through 1% loss");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&hash));
    check(&String::from_utf8_lossy(&out.stderr), "up");

    let file = s.dir.path("wan_stripe_loss_data");
    std::fs::write(&file, &data).unwrap();
    let mut c = client(&s, &line, false, port, &["-v", "-o", "Streams=auto"]);
    c.arg(format!("cat {}", file.display()));
    let out = run(c, b"", 240);
    ok(&out, "download with Streams auto through 1% loss");
    assert_eq!(sha256(&out.stdout), hash, "downloaded data differs");
    check(&String::from_utf8_lossy(&out.stderr), "down");
    drop(server);
}
