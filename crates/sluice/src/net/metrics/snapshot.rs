//! One end's figures at one moment ([`Snapshot`]): its clock and CPU time,
//! the connection's TCP_INFO, socket buffers and the kernel's caps, and the
//! loop's tally. The same figures travel in sluiced's answer to
//! `path-info-v00@sluice.dev` under the names of [`Figure`] (PROTOCOL.md
//! lists them), and two snapshots of one end make an [`Interval`].

use super::{system, tally};
use crate::net::{path, sockbuf};
use sluice_proto::msg::PathFigures;
use std::os::fd::RawFd;

/// Whether a figure counts up from the start (take the difference over an
/// interval) or says how things are now (take the later value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
}

macro_rules! figures {
    ($($(#[$doc:meta])* $name:ident = $wire:literal, $kind:ident;)*) => {
        /// A figure one end reports, named on the wire as PROTOCOL.md says.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[allow(missing_docs)]
        pub enum Figure { $($(#[$doc])* $name,)* }
        const TABLE: &[(Figure, &str, Kind)] = &[$((Figure::$name, $wire, Kind::$kind),)*];
    };
}

figures! {
    /// Time since the reporting process started, microseconds.
    ElapsedUs = "elapsed-us", Counter;
    /// The process's CPU time, user and system, all threads.
    CpuUs = "cpu-us", Counter;
    /// The driver loop's thread's CPU time.
    CpuThreadUs = "cpu-thread-us", Counter;
    /// Cores the process may use.
    Cores = "cores", Gauge;
    RttUs = "rtt-us", Gauge;
    MinRttUs = "min-rtt-us", Gauge;
    RttSumUs = "rtt-sum-us", Counter;
    RttSamples = "rtt-samples", Counter;
    /// Congestion window, segments.
    Cwnd = "cwnd", Gauge;
    Mss = "mss", Gauge;
    /// The latest delivery rate sample, bytes per second.
    DeliveryRate = "delivery-rate", Gauge;
    /// The largest one the loop read.
    DeliveryMax = "delivery-rate-max", Gauge;
    /// Segments sent again.
    Retrans = "retrans", Counter;
    BytesAcked = "bytes-acked", Counter;
    BytesReceived = "bytes-received", Counter;
    BusyUs = "busy-us", Counter;
    RwndLimitedUs = "rwnd-limited-us", Counter;
    SndbufLimitedUs = "sndbuf-limited-us", Counter;
    /// The window the other end's kernel advertises.
    SndWnd = "snd-wnd", Gauge;
    /// Bytes in the socket's send queue, sent or not, unacknowledged.
    SendQueue = "send-queue", Gauge;
    SoRcvbuf = "so-rcvbuf", Gauge;
    SoSndbuf = "so-sndbuf", Gauge;
    /// What the process asked SO_RCVBUF to be (0: autotuned).
    RcvbufAsked = "rcvbuf-asked", Gauge;
    SndbufAsked = "sndbuf-asked", Gauge;
    RmemMax = "rmem-max", Gauge;
    WmemMax = "wmem-max", Gauge;
    TcpRmemMax = "tcp-rmem-max", Gauge;
    TcpWmemMax = "tcp-wmem-max", Gauge;
    /// Time the driver loops ran, summed over the loops (one per
    /// connection): what the waits are shares of.
    LoopUs = "loop-us", Counter;
    WaitSocketUs = "wait-socket-us", Counter;
    WaitWindowUs = "wait-window-us", Counter;
    WaitSinkUs = "wait-sink-us", Counter;
    WaitSourceUs = "wait-source-us", Counter;
    DataSent = "data-sent", Counter;
    DataReceived = "data-received", Counter;
    PeerWindowMax = "peer-window-max", Gauge;
    /// The largest receive window the end granted.
    RecvWindowMax = "recv-window-max", Gauge;
}

const COUNT: usize = TABLE.len();

impl Figure {
    fn idx(self) -> usize {
        self as usize
    }

    /// The name on the wire.
    pub fn name(self) -> &'static str {
        TABLE.get(self.idx()).map_or("", |t| t.1)
    }
}

/// One end's figures at one moment; None where unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    values: [Option<u64>; COUNT],
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            values: [None; COUNT],
        }
    }
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Snapshot {
    /// The figure, if known.
    pub fn get(&self, f: Figure) -> Option<u64> {
        self.values.get(f.idx()).copied().flatten()
    }

    /// Sets a figure.
    pub fn set(&mut self, f: Figure, v: u64) {
        if let Some(slot) = self.values.get_mut(f.idx()) {
            *slot = Some(v);
        }
    }

    /// This process's figures now, for the connection on `sock` (None or
    /// not TCP: the socket's figures stay unknown). `asked`: the receive
    /// and send buffer sizes the process set (0: autotuned). Call it on the
    /// driver loop's thread: the thread's CPU time is that loop's.
    pub fn take(sock: Option<RawFd>, asked: (u64, u64)) -> Snapshot {
        use Figure::*;
        let mut s = Snapshot::default();
        s.set(ElapsedUs, micros(system::elapsed()));
        s.set(CpuUs, micros(system::cpu_process()));
        s.set(CpuThreadUs, micros(system::cpu_thread()));
        s.set(Cores, u64::from(system::cores()));
        let t = tally::read();
        s.set(LoopUs, t.loop_us);
        let waits = [WaitSocketUs, WaitWindowUs, WaitSinkUs, WaitSourceUs];
        for (f, w) in waits.into_iter().zip(tally::Wait::ALL) {
            s.set(f, t.wait(w));
        }
        s.set(DataSent, t.data_sent);
        s.set(DataReceived, t.data_received);
        s.set(PeerWindowMax, t.peer_window_max);
        s.set(RecvWindowMax, t.recv_window_max);
        let caps = system::caps();
        for (f, v) in [
            (RmemMax, caps.rmem_max),
            (WmemMax, caps.wmem_max),
            (TcpRmemMax, caps.tcp_rmem_max),
            (TcpWmemMax, caps.tcp_wmem_max),
        ] {
            if let Some(v) = v {
                s.set(f, v);
            }
        }
        let Some(fd) = sock else { return s };
        let Some(i) = path::tcp_info(fd) else {
            return s;
        };
        s.set(RttSumUs, t.rtt_sum_us);
        s.set(RttSamples, t.rtt_samples);
        s.set(DeliveryMax, t.delivery_max.max(i.delivery_rate));
        s.set(RttUs, micros(i.rtt));
        s.set(MinRttUs, micros(i.path_rtt()));
        s.set(Cwnd, u64::from(i.snd_cwnd));
        s.set(Mss, u64::from(i.snd_mss));
        s.set(DeliveryRate, i.delivery_rate);
        s.set(Retrans, u64::from(i.total_retrans));
        s.set(BytesAcked, i.bytes_acked);
        s.set(BytesReceived, i.bytes_received);
        s.set(BusyUs, micros(i.busy));
        s.set(RwndLimitedUs, micros(i.rwnd_limited));
        s.set(SndbufLimitedUs, micros(i.sndbuf_limited));
        s.set(SndWnd, u64::from(i.snd_wnd));
        if let Some(q) = path::send_queue(fd) {
            s.set(SendQueue, q);
        }
        for (f, b) in [
            (SoRcvbuf, sockbuf::Buf::Recv),
            (SoSndbuf, sockbuf::Buf::Send),
        ] {
            if let Some(v) = sockbuf::get(fd, b) {
                s.set(f, v);
            }
        }
        s.set(RcvbufAsked, asked.0);
        s.set(SndbufAsked, asked.1);
        s
    }

    /// The figures as a `path-info-v00@sluice.dev` reply carries them.
    pub fn to_wire(&self) -> PathFigures {
        let mut out = PathFigures::default();
        for (f, name, _) in TABLE {
            if let Some(v) = self.get(*f) {
                out.push(name, v);
            }
        }
        out
    }

    /// A peer's reply: the names we know; others are ignored (a newer peer
    /// may send more).
    pub fn from_wire(w: &PathFigures) -> Snapshot {
        let mut s = Snapshot::default();
        for (f, name, _) in TABLE {
            if let Some(v) = w.get(name) {
                s.set(*f, v);
            }
        }
        s
    }
}

/// One end over a span: the figures that count up, as differences; the
/// others as they were at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    before: Option<Snapshot>,
    after: Snapshot,
}

impl Interval {
    /// From `before` (None: from the process's start) to `after`.
    pub fn new(before: Option<Snapshot>, after: Snapshot) -> Interval {
        Interval { before, after }
    }

    /// The figure over the span.
    pub fn get(&self, f: Figure) -> Option<u64> {
        let now = self.after.get(f)?;
        let kind = TABLE.get(f.idx()).map_or(Kind::Gauge, |t| t.2);
        match (kind, self.before.as_ref().and_then(|b| b.get(f))) {
            (Kind::Counter, Some(then)) => Some(now.saturating_sub(then)),
            _ => Some(now),
        }
    }

    /// A microsecond figure as seconds.
    pub fn secs(&self, f: Figure) -> Option<f64> {
        self.get(f).map(|us| us as f64 / 1e6)
    }

    /// The span's length, seconds (0 when unknown).
    pub fn span(&self) -> f64 {
        self.secs(Figure::ElapsedUs).unwrap_or(0.0)
    }

    /// `f` (microseconds) as a fraction of the span.
    pub fn share(&self, f: Figure) -> Option<f64> {
        let span = self.span();
        (span > 0.0).then(|| self.secs(f).unwrap_or(0.0) / span)
    }

    /// A wait (microseconds) as a share of the time the loops ran, which
    /// is the span times the number of loops (one per connection); of the
    /// span where the loops' time is unknown.
    pub fn wait_share(&self, f: Figure) -> Option<f64> {
        match self.secs(Figure::LoopUs).filter(|l| *l > 0.0) {
            Some(ran) => Some((self.secs(f).unwrap_or(0.0) / ran).min(1.0)),
            None => self.share(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<_> = TABLE.iter().map(|t| t.1).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COUNT);
        for (i, t) in TABLE.iter().enumerate() {
            assert_eq!(t.0.idx(), i);
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        use std::os::fd::AsRawFd;
        let s = Snapshot::take(Some(c.as_raw_fd()), (0, 1 << 20));
        assert!(s.get(Figure::SoRcvbuf).is_some() && s.get(Figure::Cwnd).is_some());
        assert_eq!(s.get(Figure::SndbufAsked), Some(1 << 20));
        let wire = s.to_wire();
        let back =
            Snapshot::from_wire(&sluice_proto::msg::PathFigures::decode(&wire.encode()).unwrap());
        assert_eq!(back, s);
        // A pipe: no socket figures, the rest still there.
        let (r, _w) = std::io::pipe().unwrap();
        let p = Snapshot::take(Some(r.as_raw_fd()), (0, 0));
        assert_eq!(p.get(Figure::Cwnd), None);
        assert!(p.get(Figure::CpuUs).is_some());
    }

    #[test]
    fn intervals_take_differences_of_counters_only() {
        let mut a = Snapshot::default();
        a.set(Figure::ElapsedUs, 1_000_000);
        a.set(Figure::WaitSocketUs, 100_000);
        a.set(Figure::SoRcvbuf, 10);
        let mut b = a.clone();
        b.set(Figure::ElapsedUs, 3_000_000);
        b.set(Figure::WaitSocketUs, 1_100_000);
        b.set(Figure::SoRcvbuf, 20);
        let i = Interval::new(Some(a), b.clone());
        assert_eq!(i.span(), 2.0);
        assert_eq!(i.share(Figure::WaitSocketUs), Some(0.5));
        assert_eq!(i.get(Figure::SoRcvbuf), Some(20));
        assert_eq!(i.get(Figure::Retrans), None);
        // Without the loops' time, waits are shares of the span; with it
        // (two loops: twice the span), of that.
        assert_eq!(i.wait_share(Figure::WaitSocketUs), Some(0.5));
        let mut c = b.clone();
        c.set(Figure::LoopUs, 4_000_000);
        let two = Interval::new(None, c);
        assert_eq!(two.wait_share(Figure::WaitSocketUs), Some(0.275));
        let whole = Interval::new(None, b);
        assert_eq!(whole.get(Figure::WaitSocketUs), Some(1_100_000));
    }
}
