//! Command-line parsing: pure, so it is unit-tested without root.

use std::fmt;

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;
/// Largest accepted RTT or queue time: far beyond any real WAN, small enough
/// that byte computations stay well inside u64.
const MAX_TIME_NS: u64 = 60 * NS_PER_SEC;
const MAX_RATE_BPS: u64 = 1_000_000_000_000; // 1 Tbit/s
/// Default queue: one BDP, but never less than this much time at the rate,
/// so short RTTs still absorb a few 64 KiB GSO bursts.
pub(crate) const MIN_DEFAULT_QUEUE_NS: u64 = 5 * NS_PER_MS;

pub(crate) const USAGE: &str = "\
delayline: WAN emulator for benchmarks. Two network namespaces joined by TUN
devices; one process forwards packets between them, each direction delayed by
RTT/2 behind a bottleneck of the given rate with a drop-tail queue.

usage:
  delayline up --rtt TIME --rate RATE [--queue QUEUE] [--loss P] [--jitter TIME]
               [--seed N] [--ns-a NAME] [--ns-b NAME] [--net A.B.C] [--ring BYTES]
               [--no-offload]
  delayline down [--ns-a NAME] [--ns-b NAME]
  delayline --help

up     creates the two namespaces (they must not exist yet), a TUN device in
       each (dla in A with A.B.C.1/24, dlb in B with A.B.C.2/24; MTU 1500; lo
       up), prints one line starting with \"ready:\" on stdout, forwards until
       SIGINT or SIGTERM, then prints per-direction counters on stderr and
       deletes the namespaces. Per-namespace sysctls (tcp_rmem...) are left to
       the caller: ip netns exec NAME sysctl -w ...
down   removes leftover namespaces: sends SIGTERM to processes still running
       in them, then deletes them.

options:
  --rtt TIME     round-trip time added, split evenly between the directions:
                 0, 250us, 10ms, 1.5s (a unit is required except for 0)
  --rate RATE    bottleneck rate per direction: 100mbit, 1gbit, 2.5gbit, 800kbit,
                 or 0 / unlimited (no pacing, delay only). Rates are decimal
                 (1mbit = 10^6 bit/s) and count on-the-wire bytes: a GSO
                 super-packet costs the IP/TCP headers of all its segments.
  --queue QUEUE  drop-tail queue in front of the bottleneck, as a multiple of the
                 bandwidth-delay product (1bdp, 0.5bdp), a time at the rate
                 (20ms), or bytes (1500000, 512k, 4m; k/m/g are 1024-based).
                 Default: 1bdp = rate x RTT, at least 5 ms at the rate.
                 Ignored when the rate is unlimited.
  --loss P       random loss per direction: each packet is lost independently
                 with probability P (0.1%, 1%, or a fraction: 0.001). Implies
                 --no-offload, so a packet is one segment and P is per segment
                 (a lost GSO super-packet would be a burst of up to 45).
  --jitter TIME  delay variation: each direction's delay varies uniformly
                 within RTT/2 +- TIME/2, so a round trip by up to +-TIME. Order
                 is kept: a packet never overtakes the one ahead of it.
  --seed N       seed of the loss and jitter draws (default: from the clock;
                 the ready line prints it, so a run can be repeated)
  --ns-a NAME    namespace of side A (default sla)
  --ns-b NAME    namespace of side B (default slb)
  --net A.B.C    /24 prefix for the two addresses (default 10.201.0)
  --ring BYTES   per-direction packet buffer (default: sized from rate, delay and
                 queue; for unlimited rate, as if the rate were 40 gbit)
  --no-offload   no virtio-net header / TSO on the TUN devices: every 1500-byte
                 packet costs the forwarder a read and a write (~5x the CPU)

Needs root, /dev/net/tun and iproute2. The kernel needs no netem or qdisc.
";

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cmd {
    Help,
    Up(Up),
    Down { ns_a: String, ns_b: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Queue {
    Bdp { milli: u64 },
    Time { ns: u64 },
    Bytes(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Up {
    pub(crate) rtt_ns: u64,
    /// None = unlimited.
    pub(crate) rate_bps: Option<u64>,
    /// None = default (1 BDP with a floor).
    pub(crate) queue: Option<Queue>,
    pub(crate) ns_a: String,
    pub(crate) ns_b: String,
    pub(crate) net: [u8; 3],
    pub(crate) ring: Option<u64>,
    pub(crate) offload: bool,
    /// Loss per direction, parts per billion (impair::PPB = always).
    pub(crate) loss_ppb: u64,
    /// Round-trip delay variation (each direction moves by half of it).
    pub(crate) jitter_ns: u64,
    /// None = from the clock.
    pub(crate) seed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgError(pub(crate) String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ArgError> {
    Err(ArgError(msg.into()))
}

/// Parse argv without the program name.
pub(crate) fn parse(args: &[String]) -> Result<Cmd, ArgError> {
    let Some((sub, rest)) = args.split_first() else {
        return err("missing command (up, down or --help)");
    };
    if rest.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Cmd::Help);
    }
    let mut up = Up {
        rtt_ns: 0,
        rate_bps: None,
        queue: None,
        ns_a: "sla".into(),
        ns_b: "slb".into(),
        net: [10, 201, 0],
        ring: None,
        offload: true,
        loss_ppb: 0,
        jitter_ns: 0,
        seed: None,
    };
    let (mut rtt, mut rate) = (false, false);
    // First option that only `up` takes, to reject it for `down`.
    let mut up_only: Option<&str> = None;
    let mut it = rest.iter();
    while let Some(opt) = it.next() {
        // All options but --no-offload take a value, as "--opt v" or "--opt=v".
        let (name, inline) = match opt.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (opt.as_str(), None),
        };
        if !matches!(name, "--ns-a" | "--ns-b") {
            up_only = up_only.or(Some(opt));
        }
        if name == "--no-offload" && inline.is_none() {
            up.offload = false;
            continue;
        }
        let mut value = || match inline.clone().or_else(|| it.next().cloned()) {
            Some(v) => Ok(v),
            None => err(format!("{name} needs a value")),
        };
        match name {
            "--rtt" => (up.rtt_ns, rtt) = (parse_time(&value()?)?, true),
            "--rate" => (up.rate_bps, rate) = (parse_rate(&value()?)?, true),
            "--queue" => up.queue = Some(parse_queue(&value()?)?),
            "--ns-a" => up.ns_a = parse_ns(&value()?)?,
            "--ns-b" => up.ns_b = parse_ns(&value()?)?,
            "--net" => up.net = parse_net(&value()?)?,
            "--ring" => up.ring = Some(parse_bytes(&value()?)?),
            "--loss" => up.loss_ppb = parse_loss(&value()?)?,
            "--jitter" => up.jitter_ns = parse_time(&value()?)?,
            "--seed" => {
                let v = value()?;
                up.seed = Some(
                    v.parse()
                        .map_err(|_| ArgError(format!("--seed '{v}': expected an integer")))?,
                )
            }
            _ => return err(format!("unknown option '{opt}' (see delayline --help)")),
        }
    }
    // Loss is per segment: no GSO super-packets (see --loss).
    if up.loss_ppb > 0 {
        up.offload = false;
    }
    if up.ns_a == up.ns_b {
        return err("--ns-a and --ns-b must differ");
    }
    match sub.as_str() {
        "-h" | "--help" | "help" => Ok(Cmd::Help),
        "up" if !rtt => err("up needs --rtt (e.g. --rtt 100ms, or --rtt 0)"),
        "up" if !rate => err("up needs --rate (e.g. --rate 1gbit, or --rate unlimited)"),
        "up" => Ok(Cmd::Up(up)),
        "down" if up_only.is_some() => err(format!(
            "down only takes --ns-a and --ns-b, not '{}'",
            up_only.unwrap_or("")
        )),
        "down" => Ok(Cmd::Down {
            ns_a: up.ns_a,
            ns_b: up.ns_b,
        }),
        _ => err(format!("unknown command '{sub}' (up, down or --help)")),
    }
}

/// Split "12.5ms" into (12.5, "ms"). The number must be plain decimal.
fn split_num(s: &str) -> Result<(f64, String), ArgError> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && !num.starts_with('.') => Ok((v, unit.to_ascii_lowercase())),
        _ => err(format!("'{s}' does not start with a number")),
    }
}

/// Scale and round a non-negative value, rejecting anything above `max`.
fn scaled(v: f64, mult: f64, max: u64, what: &str) -> Result<u64, ArgError> {
    let x = (v * mult).round();
    if x > max as f64 {
        return err(format!("{what} is too large"));
    }
    Ok(x as u64)
}

pub(crate) fn parse_time(s: &str) -> Result<u64, ArgError> {
    let (v, unit) = split_num(s)?;
    let mult = match unit.as_str() {
        "" if v == 0.0 => 0.0,
        "" => return err(format!("time '{s}' needs a unit: ns, us, ms or s")),
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return err(format!("time '{s}': unknown unit (ns, us, ms, s)")),
    };
    scaled(v, mult, MAX_TIME_NS, &format!("time '{s}'"))
}

/// Bits per second; None = unlimited.
pub(crate) fn parse_rate(s: &str) -> Result<Option<u64>, ArgError> {
    let t = s.trim().to_ascii_lowercase();
    if t == "unlimited" || t == "inf" {
        return Ok(None);
    }
    let (v, unit) = split_num(&t)?;
    let mult = match unit.as_str() {
        "" if v == 0.0 => return Ok(None),
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        _ => {
            return err(format!(
                "rate '{s}': use bit, kbit, mbit, gbit, tbit, or unlimited"
            ))
        }
    };
    match scaled(v, mult, MAX_RATE_BPS, &format!("rate '{s}'"))? {
        0 => Ok(None),
        r => Ok(Some(r)),
    }
}

pub(crate) fn parse_bytes(s: &str) -> Result<u64, ArgError> {
    let (v, unit) = split_num(s)?;
    let mult = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return err(format!("size '{s}': use bytes or k, m, g (1024-based)")),
    };
    scaled(v, mult, 1 << 40, &format!("size '{s}'"))
}

pub(crate) fn parse_queue(s: &str) -> Result<Queue, ArgError> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(num) = t.strip_suffix("bdp") {
        let (v, rest) = split_num(num)?;
        if !rest.is_empty() {
            return err(format!("queue '{s}': expected e.g. 1bdp"));
        }
        return Ok(Queue::Bdp {
            milli: scaled(v, 1000.0, 1_000_000, &format!("queue '{s}'"))?,
        });
    }
    let (_, unit) = split_num(&t)?;
    if matches!(unit.as_str(), "ns" | "us" | "ms" | "s") {
        return Ok(Queue::Time {
            ns: parse_time(&t)?,
        });
    }
    Ok(Queue::Bytes(parse_bytes(&t)?))
}

/// A loss probability: "0.1%" or a fraction "0.001", in parts per billion;
/// below 100%.
pub(crate) fn parse_loss(s: &str) -> Result<u64, ArgError> {
    let t = s.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n, 1e7),
        None => (t, 1e9),
    };
    let (v, rest) = split_num(num)?;
    if !rest.is_empty() {
        return err(format!("loss '{s}': expected e.g. 0.1% or 0.001"));
    }
    let ppb = scaled(v, scale, crate::impair::PPB, &format!("loss '{s}'"))?;
    if ppb >= crate::impair::PPB {
        return err(format!("loss '{s}': must be below 100%"));
    }
    Ok(ppb)
}

/// Namespace names become paths under /run/netns and ip(8) arguments.
fn parse_ns(s: &str) -> Result<String, ArgError> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && !s.starts_with(['-', '.'])
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(s.to_string())
    } else {
        err(format!(
            "bad namespace name '{s}' (letters, digits, - _ . only)"
        ))
    }
}

fn parse_net(s: &str) -> Result<[u8; 3], ArgError> {
    let parts: Vec<&str> = s.split('.').collect();
    let mut net = [0u8; 3];
    if parts.len() != 3 {
        return err(format!("--net '{s}': expected three octets, e.g. 10.201.0"));
    }
    for (o, p) in net.iter_mut().zip(&parts) {
        *o = p
            .parse()
            .map_err(|_| ArgError(format!("--net '{s}': bad octet '{p}'")))?;
    }
    Ok(net)
}

/// Derived sizes for one direction of `up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) delay_ns: [u64; 2],
    /// For sched::Link: u64::MAX when unlimited.
    pub(crate) rate_bps: u64,
    pub(crate) queue_ns: u64,
    pub(crate) queue_bytes: u64,
    pub(crate) ring_bytes: u64,
    /// Each direction's delay moves by up to this much either way.
    pub(crate) half_jitter_ns: u64,
}

/// Largest packet a TUN read can return: 64 KiB GSO packet + vnet header.
pub(crate) const MAX_PKT: usize = 65536 + 64;
/// Time at the rate the ring keeps for packets delivered late.
const SLACK_NS: u64 = 10 * NS_PER_MS;
/// Sizing rate when the rate is unlimited: above what the forwarder carries
/// on a small machine, since bursts arrive faster than the average rate.
const NOMINAL_UNLIMITED_BPS: u64 = 40_000_000_000;

fn bytes_at(rate_bps: u64, ns: u64) -> u64 {
    (rate_bps as u128 * ns as u128 / 8 / NS_PER_SEC as u128) as u64
}

impl Up {
    pub(crate) fn plan(&self) -> Plan {
        // Odd nanosecond goes A->B; RTT is exact either way.
        let delay_ns = [self.rtt_ns.div_ceil(2), self.rtt_ns / 2];
        let sizing_bps = self.rate_bps.unwrap_or(NOMINAL_UNLIMITED_BPS);
        let (queue_ns, queue_bytes) = match self.rate_bps {
            None => (u64::MAX / 4, 0),
            Some(r) => {
                let ns = match &self.queue {
                    None => self.rtt_ns.max(MIN_DEFAULT_QUEUE_NS),
                    Some(Queue::Bdp { milli }) => (self.rtt_ns as u128 * *milli as u128 / 1000)
                        .min(u64::MAX as u128 / 4)
                        as u64,
                    Some(Queue::Time { ns }) => *ns,
                    Some(Queue::Bytes(b)) => (*b as u128 * 8 * NS_PER_SEC as u128 / r as u128)
                        .min(u64::MAX as u128 / 4)
                        as u64,
                };
                (ns, bytes_at(r, ns))
            }
        };
        // The ring holds what is in flight in the delay stage plus the queue,
        // plus packets already due when the forwarder falls behind (it
        // shares the CPU with the endpoints): allow SLACK_NS of those.
        // Stored bytes can exceed wire bytes by the 10-byte vnet header per
        // packet (at most ~20% for bare ACKs), hence 5/4; plus room for a few
        // maximal reads and the waste when the ring wraps.
        let ring_bytes = self.ring.unwrap_or_else(|| {
            // Jitter holds packets up to half of it longer.
            let held = delay_ns[0].saturating_add(self.jitter_ns / 2);
            let wire =
                bytes_at(sizing_bps, held.saturating_add(SLACK_NS)).saturating_add(queue_bytes);
            (wire / 4 * 5)
                .saturating_add(4 * MAX_PKT as u64)
                .clamp(4 << 20, 4 << 30)
        });
        Plan {
            delay_ns,
            rate_bps: self.rate_bps.unwrap_or(u64::MAX),
            queue_ns,
            queue_bytes,
            ring_bytes: ring_bytes.max(2 * MAX_PKT as u64),
            half_jitter_ns: self.jitter_ns / 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("100ms"), Ok(100 * NS_PER_MS));
        assert_eq!(parse_time("1.5s"), Ok(1_500 * NS_PER_MS));
        assert_eq!(parse_time("250us"), Ok(250_000));
        assert!(parse_time("100").is_err());
        assert!(parse_time("-5ms").is_err());
        assert!(parse_time("ms").is_err());
        assert!(parse_time("1e3ms").is_err());
        assert!(parse_time("5min").is_err());
        assert!(parse_time("61s").is_err());
        assert!(parse_time("").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1gbit"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_rate("2.5Gbit"), Ok(Some(2_500_000_000)));
        assert_eq!(parse_rate("100mbit"), Ok(Some(100_000_000)));
        assert_eq!(parse_rate("unlimited"), Ok(None));
        assert_eq!(parse_rate("0"), Ok(None));
        assert!(parse_rate("100").is_err());
        assert!(parse_rate("1gbps").is_err());
        assert!(parse_rate("2tbit").is_err());
        assert!(parse_rate("99999999999999999999999999999gbit").is_err());
    }

    #[test]
    fn queues_and_sizes() {
        assert_eq!(parse_queue("1bdp"), Ok(Queue::Bdp { milli: 1000 }));
        assert_eq!(parse_queue("0.5BDP"), Ok(Queue::Bdp { milli: 500 }));
        assert_eq!(parse_queue("20ms"), Ok(Queue::Time { ns: 20 * NS_PER_MS }));
        assert_eq!(parse_queue("512k"), Ok(Queue::Bytes(512 * 1024)));
        assert_eq!(parse_queue("1500000"), Ok(Queue::Bytes(1_500_000)));
        assert!(parse_queue("bdp").is_err());
        assert!(parse_queue("1xbdp").is_err());
        assert!(parse_queue("3 apples").is_err());
        assert_eq!(parse_bytes("4m"), Ok(4 << 20));
        assert!(parse_bytes("4t").is_err());
    }

    #[test]
    fn up_command() {
        let Ok(Cmd::Up(up)) = parse(&args(
            "up --rtt 100ms --rate=1gbit --ns-a x1 --ns-b x2 --net 10.9.8",
        )) else {
            panic!("parse failed");
        };
        assert_eq!(
            (up.rtt_ns, up.rate_bps),
            (100 * NS_PER_MS, Some(1_000_000_000))
        );
        assert_eq!(
            (up.ns_a.as_str(), up.ns_b.as_str(), up.net),
            ("x1", "x2", [10, 9, 8])
        );
        assert!(up.offload);
        let p = up.plan();
        assert_eq!(p.delay_ns, [50 * NS_PER_MS, 50 * NS_PER_MS]);
        // Default queue: 1 BDP = 100 ms at 1 Gbit/s = 12.5 MB.
        assert_eq!((p.queue_ns, p.queue_bytes), (100 * NS_PER_MS, 12_500_000));
        // Ring: (6.25 MB in flight + 1.25 MB slack + 12.5 MB queue) * 5/4 + 4 max reads.
        assert_eq!(p.ring_bytes, 20_000_000 / 4 * 5 + 4 * MAX_PKT as u64);
    }

    #[test]
    fn plan_edges() {
        let Ok(Cmd::Up(mut up)) = parse(&args("up --rtt 0 --rate 100mbit")) else {
            panic!("parse failed");
        };
        // RTT 0: queue floor of 5 ms = 62.5 kB at 100 Mbit/s; ring minimum.
        let p = up.plan();
        assert_eq!(
            (p.queue_ns, p.queue_bytes, p.ring_bytes),
            (5 * NS_PER_MS, 62_500, 4 << 20)
        );
        up.queue = Some(Queue::Bytes(125_000));
        assert_eq!(up.plan().queue_ns, 10 * NS_PER_MS);
        up.rtt_ns = 3;
        assert_eq!(up.plan().delay_ns, [2, 1]);
        up.rate_bps = None;
        let p = up.plan();
        assert_eq!((p.rate_bps, p.queue_bytes), (u64::MAX, 0));
        up.ring = Some(1);
        assert_eq!(up.plan().ring_bytes, 2 * MAX_PKT as u64);
    }

    #[test]
    fn loss_jitter_seed() {
        assert_eq!(parse_loss("0.1%"), Ok(1_000_000));
        assert_eq!(parse_loss("0.001"), Ok(1_000_000));
        assert_eq!(parse_loss("2.5%"), Ok(25_000_000));
        assert_eq!(parse_loss("0"), Ok(0));
        assert!(parse_loss("100%").is_err());
        assert!(parse_loss("1").is_err());
        assert!(parse_loss("-1%").is_err());
        assert!(parse_loss("lots").is_err());
        let Ok(Cmd::Up(up)) = parse(&args(
            "up --rtt 100ms --rate 1gbit --loss 0.1% --jitter 10ms --seed 7",
        )) else {
            panic!("parse failed");
        };
        assert_eq!(
            (up.loss_ppb, up.jitter_ns, up.seed),
            (1_000_000, 10 * NS_PER_MS, Some(7))
        );
        // Loss turns the offload off: one segment per packet.
        assert!(!up.offload);
        let p = up.plan();
        assert_eq!(p.half_jitter_ns, 5 * NS_PER_MS);
        // The ring holds the jittered delay too: 55 ms + 10 ms slack + 100 ms queue.
        assert_eq!(p.ring_bytes, 20_625_000 / 4 * 5 + 4 * MAX_PKT as u64);
        let Ok(Cmd::Up(up)) = parse(&args("up --rtt 10ms --rate 1gbit --jitter 2ms")) else {
            panic!("parse failed");
        };
        // Jitter alone keeps the offload.
        assert!(up.offload && up.seed.is_none() && up.loss_ppb == 0);
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --seed x")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --jitter 5")).is_err());
        assert!(parse(&args("down --loss 1%")).is_err());
    }

    #[test]
    fn bad_commands() {
        assert!(parse(&[]).is_err());
        assert!(parse(&args("up --rate 1gbit")).is_err());
        assert!(parse(&args("up --rtt 10ms")).is_err());
        assert!(parse(&args("up --rtt")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --bogus 1")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --ns-a x --ns-b x")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --ns-a ../etc")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --net 10.0.0.0")).is_err());
        assert!(parse(&args("up --rtt 10ms --rate 1gbit --net 10.300.0")).is_err());
        assert!(parse(&args("down --rtt 10ms")).is_err());
        assert!(parse(&args("sideways")).is_err());
        assert_eq!(parse(&args("up --help")), Ok(Cmd::Help));
        assert_eq!(
            parse(&args("down --ns-b q")),
            Ok(Cmd::Down {
                ns_a: "sla".into(),
                ns_b: "q".into()
            })
        );
    }
}
