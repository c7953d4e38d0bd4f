//! What limited a transfer, in one line of words with what to do about it:
//! a pure function ([`classify`]) over the numbers both ends measured
//! ([`Measured`]), with no I/O, so each case is a unit test.
//!
//! The evidence, strongest first:
//! - where each end's driver loop slept (net/metrics/tally.rs): waiting for
//!   its local reader (the sender's source empty) or writer (the receiver's
//!   sink full), for the socket (its send buffer full: TCP held it), or for
//!   the peer's channel window;
//! - the sending kernel's own account of why TCP waited (TCP_INFO's
//!   `tcpi_rwnd_limited` and `tcpi_sndbuf_limited` against `tcpi_busy_time`):
//!   the receiver's socket buffer or the sender's;
//! - whether what was in flight (rate x RTT, the bandwidth-delay product
//!   measured) fills that buffer or window, which tells a buffer too small
//!   for the path from a receiver that read too slowly;
//! - each end's CPU time against the time it took;
//! - the sender's best delivery rate: a rate close to it with none of the
//!   above means the path itself.

use std::time::Duration;

/// Bytes below which nothing is said: slow start alone may take that.
const MIN_BYTES: u64 = 1 << 20;
/// Share of the time a loop waited on its local reader or writer that makes
/// it the limit.
const LOCAL_SHARE: f64 = 0.5;
/// Share of the time the sender's socket was full that makes TCP the limit.
const SOCKET_SHARE: f64 = 0.4;
/// Share of TCP's busy time the kernel counted as held by a buffer.
const TCP_LIMITED_SHARE: f64 = 0.25;
/// Share of the time the sender's TCP had data queued or in flight that
/// makes TCP the limit even when the loop did not wait for the socket: a
/// send buffer as large as the rest of the data took it all at once.
const TCP_BUSY_SHARE: f64 = 0.6;
/// Share of the time the sender waited for the channel window.
const WINDOW_SHARE: f64 = 0.3;
/// TCP's congestion window this many times what was in flight: it was
/// not what held the sender.
const CWND_ROOM: f64 = 1.5;
/// A core this busy is the limit.
const CPU_BUSY: f64 = 0.85;
/// What was in flight against a buffer or window: at least this share of
/// it means the buffer (the window) is what the path needed more of.
const FILLED: f64 = 0.5;
/// A rate this close to the best delivery rate is the path's.
const NEAR_PATH: f64 = 0.7;

/// One end of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// This program.
    Client,
    /// The server.
    Server,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// Which way the bulk of the data went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Upload,
    /// Server to client.
    Download,
}

impl Direction {
    fn receiver(self) -> Side {
        match self {
            Direction::Upload => Side::Server,
            Direction::Download => Side::Client,
        }
    }
}

/// A socket buffer and what sized it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Buffer {
    /// Bytes of data it holds (getsockopt's figure halved).
    pub size: u64,
    /// What the process asked for (0: left to autotuning).
    pub asked: u64,
    /// `net.core.rmem_max` / `wmem_max`: the cap on a size asked for.
    pub core_max: Option<u64>,
    /// `net.ipv4.tcp_rmem` / `tcp_wmem`'s third value: autotuning's cap.
    pub autotune_max: Option<u64>,
}

/// Shares of an end's time its loop slept for each reason (0 to 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Waits {
    /// Output waited for the socket.
    pub socket: f64,
    /// Data waited for the peer's channel window.
    pub window: f64,
    /// Received data waited for the local writer.
    pub sink: f64,
    /// The local reader had nothing.
    pub source: f64,
}

/// What one end measured over the transfer.
#[derive(Debug, Clone, PartialEq)]
pub struct EndNumbers {
    /// Which end.
    pub side: Side,
    /// The driver loop's thread, busy share of one core.
    pub thread_cpu: Option<f64>,
    /// The whole process, in cores (above 1 with worker threads).
    pub process_cpu: Option<f64>,
    /// Cores it may use.
    pub cores: u32,
    /// Where its loop slept.
    pub waits: Waits,
    /// The share of its time its TCP had data queued or in flight.
    pub tcp_busy: Option<f64>,
    /// Its TCP congestion window at the end, bytes.
    pub cwnd_bytes: Option<u64>,
    /// Of its kernel's time with data in flight, the share the peer's
    /// receive window held it.
    pub rwnd_limited: Option<f64>,
    /// Of that time, the share its own send buffer held it.
    pub sndbuf_limited: Option<f64>,
    /// Its receive buffer.
    pub rcvbuf: Option<Buffer>,
    /// Its send buffer.
    pub sndbuf: Option<Buffer>,
}

impl EndNumbers {
    /// How busy its busiest part was: the loop's thread, or the process
    /// spread over its cores.
    fn cpu_load(&self) -> f64 {
        let spread = self
            .process_cpu
            .map_or(0.0, |p| p / f64::from(self.cores.max(1)));
        self.thread_cpu.unwrap_or(0.0).max(spread)
    }
}

/// Everything the classifier looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Which way the bulk went.
    pub direction: Direction,
    /// Channel data bytes that way.
    pub bytes: u64,
    /// How long it took.
    pub seconds: f64,
    /// The path's round trip (its lowest).
    pub rtt: Option<Duration>,
    /// The sender's best delivery rate, bytes per second.
    pub delivery_rate: Option<f64>,
    /// Segments the sender sent again.
    pub retransmits: Option<u64>,
    /// The largest channel window the receiver granted, bytes.
    pub window: Option<u64>,
    /// The cipher the bulk went under.
    pub cipher: String,
    /// The compression that ran on it (engine and level), if any.
    pub compression: Option<String>,
    /// Connections the data went over (1: not striped).
    pub streams: u32,
    /// This client's numbers.
    pub client: EndNumbers,
    /// The server's, when it reported them (sluiced).
    pub server: Option<EndNumbers>,
}

/// What the limit was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Too little data to tell.
    TooLittle,
    /// The sending end's local reader (our stdin, the remote command).
    Reader(Side),
    /// The receiving end's local writer.
    Writer(Side),
    /// The receiving end's socket buffer.
    ReceiverBuffer(Side),
    /// The sending end's socket buffer.
    SenderBuffer(Side),
    /// The receiving end's channel window.
    Window(Side),
    /// An end's CPU.
    Cpu(Side),
    /// The network path itself.
    Path,
    /// Nothing stood out.
    Unclear,
}

/// The limit and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The limit.
    pub limit: Limit,
    /// One line: "limited by ...", with what to do.
    pub line: String,
}

/// Bytes in a short human form: "2.0 MiB", "208 KiB", "900 bytes".
pub fn bytes_text(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / f64::from(1u32 << 30))
    } else if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20))
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// A rate in MB/s (10^6), as transfer tools print it.
pub fn rate_text(bytes_per_sec: f64) -> String {
    format!("{:.1} MB/s", bytes_per_sec / 1e6)
}

/// A duration in milliseconds.
pub fn ms_text(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// What to raise a buffer to: twice what was in flight, or twice the
/// buffer if more (each doubling can double the rate until the path's own
/// limit), rounded up to a whole MiB.
fn suggested(in_flight: Option<f64>, size: u64) -> u64 {
    let base = in_flight.map_or(0.0, |b| b.max(0.0)).max(size as f64) * 2.0;
    let mib = 1u64 << 20;
    (base as u64).div_ceil(mib).max(1).saturating_mul(mib)
}

/// The facts of the transfer the lines quote.
struct Ctx<'a> {
    m: &'a Measured,
    rate: f64,
    in_flight: Option<f64>,
}

impl Ctx<'_> {
    /// " (X in flight: R x RTT)", when the RTT is known.
    fn in_flight_text(&self) -> String {
        match (self.in_flight, self.m.rtt) {
            (Some(b), Some(rtt)) => format!(
                " ({} in flight: {} x {})",
                bytes_text(b as u64),
                rate_text(self.rate),
                ms_text(rtt)
            ),
            _ => String::new(),
        }
    }
}

/// The single line saying what limited the transfer.
pub fn classify(m: &Measured) -> Verdict {
    let rate = if m.seconds > 0.0 {
        m.bytes as f64 / m.seconds
    } else {
        0.0
    };
    let c = Ctx {
        m,
        rate,
        in_flight: m.rtt.map(|r| rate * r.as_secs_f64()),
    };
    if m.bytes < MIN_BYTES || m.seconds <= 0.0 {
        return Verdict {
            limit: Limit::TooLittle,
            line: format!(
                "too little data moved ({} bytes) to say what limited it",
                m.bytes
            ),
        };
    }
    let (sender, receiver) = match m.direction {
        Direction::Upload => (Some(&m.client), m.server.as_ref()),
        Direction::Download => (m.server.as_ref(), Some(&m.client)),
    };
    if let Some(s) = sender.filter(|s| s.waits.source >= LOCAL_SHARE) {
        return reader(s.side, s.waits.source);
    }
    if let Some(r) = receiver.filter(|r| r.waits.sink >= LOCAL_SHARE) {
        return writer(r.side, r.waits.sink);
    }
    let receiver_busy = receiver.is_some_and(|r| r.cpu_load() >= CPU_BUSY);
    let rcvbuf = receiver.and_then(|r| r.rcvbuf);
    let fills = |b: Option<Buffer>| match (b, c.in_flight) {
        (Some(b), Some(f)) => f >= FILLED * b.size as f64,
        _ => true,
    };
    // The peer's receive window held TCP: the kernel says so, or TCP's own
    // window had room for far more than was in flight while what was in
    // flight filled the receiver's buffer (the kernel's account misses
    // the turns where it deferred a send the window could not fit whole).
    let rwnd_bound = |s: &EndNumbers| {
        let measured = s.rwnd_limited.unwrap_or(0.0) >= TCP_LIMITED_SHARE;
        let cwnd_room = match (s.cwnd_bytes, c.in_flight) {
            (Some(w), Some(f)) => f > 0.0 && w as f64 >= CWND_ROOM * f,
            _ => false,
        };
        let sndbuf_bound = s.sndbuf_limited.unwrap_or(0.0) >= TCP_LIMITED_SHARE;
        measured || (cwnd_room && !sndbuf_bound && rcvbuf.is_some() && fills(rcvbuf))
    };
    // TCP held the sender: its loop waited for the socket, or the socket
    // held data most of the time, held there by a buffer.
    let tcp_held = |s: &EndNumbers| {
        let buffer_bound = rwnd_bound(s) || s.sndbuf_limited.unwrap_or(0.0) >= TCP_LIMITED_SHARE;
        s.waits.socket >= SOCKET_SHARE
            || (buffer_bound && s.tcp_busy.unwrap_or(0.0) >= TCP_BUSY_SHARE)
    };
    if let Some(s) = sender.filter(|s| tcp_held(s)) {
        if rwnd_bound(s) {
            // A full receive buffer the path did not need is a slow
            // reader behind it: the CPU below says which.
            if fills(rcvbuf) || !receiver_busy {
                return receiver_buffer(&c, m.direction.receiver(), rcvbuf);
            }
        } else if s.sndbuf_limited.unwrap_or(0.0) >= TCP_LIMITED_SHARE && fills(s.sndbuf) {
            return sender_buffer(&c, s);
        } else if !receiver_busy && s.waits.socket >= SOCKET_SHARE {
            return path(&c, Some(s.waits.socket));
        }
    }
    if let Some(s) = sender.filter(|s| s.waits.window >= WINDOW_SHARE) {
        let fills = match (m.window, c.in_flight) {
            (Some(w), Some(f)) => f >= FILLED * w as f64,
            _ => true,
        };
        if fills {
            return window(&c, m.direction.receiver(), Some(s.waits.window));
        }
        // The window stayed shut with far less than it in flight: not the
        // window's size but the far end taking the data slowly (a busy far
        // end is named by the CPU rule below).
        if !receiver_busy {
            return slow_consumer(&c, m.direction.receiver(), s.waits.window);
        }
    }
    let busiest = [Some(&m.client), m.server.as_ref()]
        .into_iter()
        .flatten()
        .map(|e| (e.side, e.cpu_load()))
        .filter(|(_, load)| *load >= CPU_BUSY)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((side, load)) = busiest {
        return cpu(&c, side, load);
    }
    if sender.is_none() {
        // A stock server sent: judge from this end what could have held it.
        let near = |size: u64| c.in_flight.is_some_and(|f| f >= NEAR_PATH * size as f64);
        if m.window.is_some_and(near) {
            return window(&c, Side::Client, None);
        }
        if let Some(b) = m.client.rcvbuf.filter(|b| near(b.size)) {
            return receiver_buffer(&c, Side::Client, Some(b));
        }
    }
    if m.delivery_rate.is_some_and(|d| rate >= NEAR_PATH * d) && sender.is_some() {
        return path(&c, None);
    }
    Verdict {
        limit: Limit::Unclear,
        line: if m.server.is_none() {
            "no single limit stood out on this side; the server's side is not known (not sluiced)"
                .into()
        } else {
            "no single limit stood out: neither end waited long for anything".into()
        },
    }
}

fn reader(side: Side, share: f64) -> Verdict {
    let line = match side {
        Side::Client => format!(
            "limited by the reader: standard input had nothing to send {} of the time; the program writing into sluice is slower than the connection",
            pct(share)
        ),
        Side::Server => format!(
            "limited by the remote command's output: the server waited for it {} of the time; the command is slower than the connection",
            pct(share)
        ),
    };
    Verdict {
        limit: Limit::Reader(side),
        line,
    }
}

fn writer(side: Side, share: f64) -> Verdict {
    let line = match side {
        Side::Client => format!(
            "limited by the writer: standard output took no more {} of the time; the program reading from sluice is slower than the connection",
            pct(share)
        ),
        Side::Server => format!(
            "limited by the remote command's input: it read slower than the connection carried data (the server waited {} of the time)",
            pct(share)
        ),
    };
    Verdict {
        limit: Limit::Writer(side),
        line,
    }
}

/// Which of a buffer's caps held it, as "capped by ...; raise it ...".
fn cap_advice(
    side: Side,
    b: &Buffer,
    recv: bool,
    suggest: u64,
    direction_keyword: (&str, &str),
) -> String {
    let (core, autotune, opt) = if recv {
        ("net.core.rmem_max", "net.ipv4.tcp_rmem", "SO_RCVBUF")
    } else {
        ("net.core.wmem_max", "net.ipv4.tcp_wmem", "SO_SNDBUF")
    };
    let at = match side {
        Side::Client => "here",
        Side::Server => "on the server",
    };
    let size = bytes_text(b.size);
    // Within 5% of the sysctl: held there (root may force a size past it,
    // and then the sysctl is not what held it).
    let core_cap = b.core_max.filter(|c| {
        let (size, cap) = (b.size as f64, *c as f64);
        size >= 0.95 * cap && size <= 1.05 * cap
    });
    if let (true, Some(cap)) = (b.asked > 0 || b.autotune_max.is_none(), core_cap) {
        return format!(
            "{opt} {size}, capped by {core}={cap} {at}; raise it with sysctl -w {core}={suggest}"
        );
    }
    if b.asked > 0 {
        let (server_kw, client_kw) = direction_keyword;
        let how = match side {
            Side::Server => format!(
                "ask for more with -o {server_kw}={suggest}, up to the server's RemoteBufMax"
            ),
            Side::Client => format!("raise it with -o {client_kw}={suggest}"),
        };
        let there = if side == Side::Server { " there" } else { "" };
        return format!("{opt} {size} {at}, as configured{there}; {how}");
    }
    match b.autotune_max {
        Some(max) => format!(
            "{opt} {size} {at}, autotuned up to {autotune}'s maximum {max}; raise that third value to {suggest} (sysctl -w {autotune}=\"4096 131072 {suggest}\")"
        ),
        None => format!("{opt} {size} {at}; raise it to {suggest}"),
    }
}

fn receiver_buffer(c: &Ctx<'_>, side: Side, buf: Option<Buffer>) -> Verdict {
    let detail = match buf {
        Some(b) => {
            let suggest = suggested(c.in_flight, b.size);
            cap_advice(side, &b, true, suggest, ("RemoteRcvBuf", "TcpRcvBuf"))
        }
        None => {
            let suggest = suggested(c.in_flight, 0);
            format!(
                "its size is not reported (not sluiced); raise net.core.rmem_max and net.ipv4.tcp_rmem's maximum on the {} to {suggest}",
                side.name()
            )
        }
    };
    Verdict {
        limit: Limit::ReceiverBuffer(side),
        line: format!(
            "limited by the receiver's socket buffer: {detail}{}",
            c.in_flight_text()
        ),
    }
}

fn sender_buffer(c: &Ctx<'_>, s: &EndNumbers) -> Verdict {
    let detail = match s.sndbuf {
        Some(b) => cap_advice(
            s.side,
            &b,
            false,
            suggested(c.in_flight, b.size),
            ("RemoteSndBuf", "TcpSndBuf"),
        ),
        None => "its size is not known".into(),
    };
    Verdict {
        limit: Limit::SenderBuffer(s.side),
        line: format!(
            "limited by the sender's socket buffer: {detail}{}",
            c.in_flight_text()
        ),
    }
}

fn window(c: &Ctx<'_>, receiver: Side, share: Option<f64>) -> Verdict {
    let w = c.m.window.map(bytes_text).unwrap_or_else(|| "?".into());
    let allows = match (c.m.window, c.m.rtt) {
        (Some(w), Some(rtt)) if !rtt.is_zero() => format!(
            "; over {} it allows {}",
            ms_text(rtt),
            rate_text(w as f64 / rtt.as_secs_f64())
        ),
        _ => String::new(),
    };
    let held = share
        .map(|s| format!(", which held the sender {} of the time", pct(s)))
        .unwrap_or_default();
    let advice = match (receiver, c.m.server.is_some()) {
        (Side::Server, false) => {
            "a stock sshd's window stays near 2 MiB; sluiced's grows with the path, or split the transfer (-o Streams with sluiced, or several sessions)"
        }
        (Side::Server, true) => "raise ChannelWindowMax in the server's sluiced_config",
        (Side::Client, _) => "raise it with -o ChannelWindowMax",
    };
    Verdict {
        limit: Limit::Window(receiver),
        line: format!(
            "limited by the peer's window: the {}'s channel window ({w}){held}{allows}; {advice}",
            receiver.name()
        ),
    }
}

fn slow_consumer(c: &Ctx<'_>, receiver: Side, share: f64) -> Verdict {
    Verdict {
        limit: Limit::Writer(receiver),
        line: format!(
            "limited by the {} taking the data: its channel window held the sender {} of the time though far less than the window was in flight{}; the {} (its CPU, or the command or disk behind it) took the data slower than it came",
            receiver.name(),
            pct(share),
            c.in_flight_text(),
            receiver.name()
        ),
    }
}

fn cpu(c: &Ctx<'_>, side: Side, load: f64) -> Verdict {
    let m = c.m;
    let what = match &m.compression {
        Some(z) => format!("cipher {} with compression {z}", m.cipher),
        None => format!("cipher {}", m.cipher),
    };
    let advice = if m.compression.is_some() {
        "try -o Compression=no".to_owned()
    } else if m.cipher.starts_with("chacha20") {
        "try aes128-gcm@openssh.com (-c aes128-gcm@openssh.com)".to_owned()
    } else if m.server.is_some() && m.streams <= 1 {
        "try -o Streams=4 to spread it over cores and connections".to_owned()
    } else {
        "fewer programs sharing its cores, or a faster CPU".to_owned()
    };
    Verdict {
        limit: Limit::Cpu(side),
        line: format!(
            "limited by CPU on the {}: {what} at {} of a core; {advice}",
            side.name(),
            pct(load)
        ),
    }
}

fn path(c: &Ctx<'_>, socket_share: Option<f64>) -> Verdict {
    let m = c.m;
    let delivery = m
        .delivery_rate
        .map(|d| format!(", delivery rate {}", rate_text(d)))
        .unwrap_or_default();
    let retrans = m
        .retransmits
        .map(|r| format!(", {r} segments sent again"))
        .unwrap_or_default();
    let how = match socket_share {
        Some(s) => format!(
            "the sender's socket was full {} of the time and neither end's buffer was the cause: TCP's congestion control set the pace",
            pct(s)
        ),
        None => "the rate is near what the path delivered and neither end waited long".to_owned(),
    };
    Verdict {
        limit: Limit::Path,
        line: format!(
            "limited by the path: {how} ({}{delivery}{retrans})",
            rate_text(c.rate)
        ),
    }
}

#[cfg(test)]
mod tests;
