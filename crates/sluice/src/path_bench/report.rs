//! What `sluice bench` prints: the table of runs, the settings it
//! recommends for the path (as ssh_config lines to paste), and the same as
//! JSON for scripts. Plain functions over the measured figures.

use super::row::{Direction, Outcome, Spec};
use std::fmt::Write as _;

/// What the runs were for, so the recommendation can compare like with like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// One cipher, one connection, no compression, random data.
    Cipher,
    /// The best cipher over `Streams auto`.
    Streams,
    /// The sample without compression.
    SampleRaw,
    /// The sample with `Compression auto`.
    SampleAuto,
    /// A download, for the table only.
    Download,
    /// OpenSSH's ssh with its defaults, for the table only.
    Stock,
}

/// One finished run.
#[derive(Debug, Clone)]
pub(super) struct Done {
    /// What it was.
    pub(super) spec: Spec,
    /// Its part in the recommendation.
    pub(super) role: Role,
    /// The cipher it asked for, if one.
    pub(super) cipher: Option<String>,
    /// What it measured.
    pub(super) outcome: Outcome,
}

/// About the path, measured before the runs.
#[derive(Debug, Clone, Default)]
pub(super) struct Path {
    /// The host as given (`Host` line of the recommendation).
    pub(super) host: String,
    /// Where it connects.
    pub(super) address: String,
    /// The port.
    pub(super) port: u16,
    /// The server's identification line, if read.
    pub(super) server: Option<String>,
    /// The TCP handshake's round trip, if measured.
    pub(super) rtt_ms: Option<f64>,
    /// Seconds per run.
    pub(super) secs: f64,
}

/// A run counts as better only when this much faster (20%): closer than
/// that is within one run's noise on most paths.
const MARGIN: f64 = 1.20;

/// The ssh_config lines that this path's figures call for, beyond
/// sluice's defaults (Compression auto, Streams auto, the default cipher
/// order); empty when the defaults did best. Streams is sluice's own, so
/// `IgnoreUnknown` keeps stock ssh reading the same file.
pub(super) fn recommend(runs: &[Done]) -> Vec<String> {
    let rate = |r: &Done| r.outcome.rate();
    let ok = |r: &&Done| r.outcome.error.is_none() && r.outcome.rate() > 0.0;
    let mut lines = Vec::new();
    let ciphers: Vec<&Done> = runs
        .iter()
        .filter(|r| r.role == Role::Cipher)
        .filter(ok)
        .collect();
    let first = ciphers.first().and_then(|r| r.cipher.as_deref());
    let preferred = preferred_cipher(runs);
    if let Some(c) = preferred.as_ref().filter(|c| Some(c.as_str()) != first) {
        lines.push(format!("Ciphers ^{c}"));
    }
    // Streams auto ran with the preferred cipher: weighed against its run.
    let one = ciphers
        .iter()
        .find(|r| r.cipher == preferred)
        .map_or(0.0, |r| rate(r));
    let find = |role| runs.iter().filter(ok).find(|r| r.role == role).map(rate);
    if let Some(auto) = find(Role::Streams) {
        if one > 0.0 && auto * MARGIN < one {
            lines.push("IgnoreUnknown Streams".into());
            lines.push("Streams 1".into());
        }
    }
    if let (Some(raw), Some(auto)) = (find(Role::SampleRaw), find(Role::SampleAuto)) {
        if auto * MARGIN < raw {
            lines.push("Compression no".into());
        }
    }
    lines
}

/// The cipher to use on this path: the default's first choice (the first
/// cipher run) unless another was faster by [`MARGIN`].
pub(super) fn preferred_cipher(runs: &[Done]) -> Option<String> {
    let ciphers: Vec<&Done> = runs
        .iter()
        .filter(|r| r.role == Role::Cipher && r.outcome.error.is_none())
        .filter(|r| r.outcome.rate() > 0.0)
        .collect();
    let first = ciphers.first()?;
    let best = ciphers
        .iter()
        .max_by(|a, b| a.outcome.rate().total_cmp(&b.outcome.rate()))?;
    let pick = if best.outcome.rate() > first.outcome.rate() * MARGIN {
        best
    } else {
        first
    };
    pick.cipher.clone()
}

fn mb(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The table and the recommendation, for a person.
pub(super) fn text(path: &Path, runs: &[Done], advice: &[String]) -> String {
    let mut s = String::new();
    let server = path.server.as_deref().unwrap_or("server not identified");
    let rtt = path
        .rtt_ms
        .map_or("RTT not measured".into(), |r| format!("RTT {r:.1} ms"));
    let _ = writeln!(
        s,
        "sluice bench: {} port {} ({server}), {rtt}, {:.0} s per run",
        path.address, path.port, path.secs
    );
    let best = runs.iter().map(|r| r.outcome.rate()).fold(0.0, f64::max);
    let w = runs
        .iter()
        .map(|r| r.spec.name.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let dw = runs
        .iter()
        .map(|r| r.spec.data_name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        s,
        "\n{:<w$}  {:<4}  {:<dw$}  {:>8}  {:>10}  {:>6}",
        "run", "way", "data", "MB/s", "client CPU", "x best"
    );
    for r in runs {
        let o = &r.outcome;
        let way = r.spec.direction.word();
        match &o.error {
            Some(e) => {
                let _ = writeln!(
                    s,
                    "{:<w$}  {way:<4}  {:<dw$}  failed: {e}",
                    r.spec.name, r.spec.data_name
                );
            }
            None => {
                let ratio = if best > 0.0 { o.rate() / best } else { 0.0 };
                let _ = writeln!(
                    s,
                    "{:<w$}  {way:<4}  {:<dw$}  {:>8}  {:>9.0}%  {:>6.2}",
                    r.spec.name,
                    r.spec.data_name,
                    mb(o.rate()),
                    o.cpu_share() * 100.0,
                    ratio
                );
            }
        }
    }
    s.push('\n');
    if best <= 0.0 {
        s.push_str("No run moved data.\n");
    } else if advice.is_empty() {
        s.push_str("sluice's defaults did best on this path: nothing to change.\n");
    } else {
        let _ = writeln!(
            s,
            "For this path, in ~/.ssh/config (or the file given with -F):\n\nHost {}",
            path.host
        );
        for l in advice {
            let _ = writeln!(s, "    {l}");
        }
    }
    s
}

/// A JSON string literal.
fn js(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn opt_js(v: Option<&str>) -> String {
    v.map_or("null".into(), js)
}

/// The same as one JSON object, for scripts.
pub(super) fn json(path: &Path, runs: &[Done], advice: &[String]) -> String {
    let mut s = String::from("{");
    let _ = write!(
        s,
        "\"host\":{},\"address\":{},\"port\":{},\"server\":{},\"rtt_ms\":{},\"seconds_per_run\":{:.1},\"runs\":[",
        js(&path.host),
        js(&path.address),
        path.port,
        opt_js(path.server.as_deref()),
        path.rtt_ms.map_or("null".into(), |r| format!("{r:.2}")),
        path.secs
    );
    for (i, r) in runs.iter().enumerate() {
        let o = &r.outcome;
        let _ = write!(
            s,
            "{}{{\"name\":{},\"direction\":{},\"data\":{},\"cipher\":{},\"bytes\":{},\"seconds\":{:.3},\"mb_per_s\":{:.2},\"client_cpu_seconds\":{:.3},\"error\":{}}}",
            if i > 0 { "," } else { "" },
            js(&r.spec.name),
            js(match r.spec.direction {
                Direction::Up => "up",
                Direction::Down => "down",
            }),
            js(&r.spec.data_name),
            opt_js(r.cipher.as_deref()),
            o.bytes,
            o.secs,
            o.rate(),
            o.cpu,
            opt_js(o.error.as_deref())
        );
    }
    s.push_str("],\"recommended\":[");
    for (i, l) in advice.iter().enumerate() {
        let _ = write!(s, "{}{}", if i > 0 { "," } else { "" }, js(l));
    }
    s.push_str("]}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn done(role: Role, cipher: Option<&str>, mb_s: f64) -> Done {
        Done {
            spec: Spec {
                name: cipher.unwrap_or("x").into(),
                data_name: "random".into(),
                program: "sluice".into(),
                args: Vec::new(),
                direction: Direction::Up,
                data: Arc::new(Vec::new()),
            },
            role,
            cipher: cipher.map(str::to_owned),
            outcome: Outcome {
                bytes: (mb_s * 1e6) as u64,
                secs: 1.0,
                steady: None,
                cpu: 0.5,
                error: None,
            },
        }
    }

    #[test]
    fn the_defaults_are_left_alone_when_they_did_best() {
        let runs = [
            done(Role::Cipher, Some("chacha20-poly1305@openssh.com"), 100.0),
            done(Role::Cipher, Some("aes128-gcm@openssh.com"), 105.0),
            done(Role::Streams, None, 300.0),
            done(Role::SampleRaw, None, 100.0),
            done(Role::SampleAuto, None, 250.0),
        ];
        assert!(recommend(&runs).is_empty(), "{:?}", recommend(&runs));
    }

    #[test]
    fn a_faster_cipher_fewer_streams_and_no_compression_are_named() {
        let runs = [
            done(Role::Cipher, Some("chacha20-poly1305@openssh.com"), 400.0),
            done(Role::Cipher, Some("aes128-gcm@openssh.com"), 900.0),
            done(Role::Streams, None, 600.0),
            done(Role::SampleRaw, None, 900.0),
            done(Role::SampleAuto, None, 500.0),
        ];
        assert_eq!(
            recommend(&runs),
            [
                "Ciphers ^aes128-gcm@openssh.com",
                "IgnoreUnknown Streams",
                "Streams 1",
                "Compression no"
            ]
        );
    }

    #[test]
    fn failed_runs_count_for_nothing() {
        let mut slow = done(Role::Cipher, Some("aes256-gcm@openssh.com"), 0.0);
        slow.outcome.error = Some("no matching cipher".into());
        let runs = [
            done(Role::Cipher, Some("chacha20-poly1305@openssh.com"), 100.0),
            slow,
        ];
        assert!(recommend(&runs).is_empty());
        let t = text(&Path::default(), &runs, &[]);
        assert!(t.contains("failed: no matching cipher"), "{t}");
        let j = json(&Path::default(), &runs, &[]);
        assert!(j.contains("\"error\":\"no matching cipher\""), "{j}");
        assert!(j.starts_with('{') && j.ends_with('}'));
    }
}
