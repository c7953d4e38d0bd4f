//! The fields of the kernel's `struct tcp_info` that sluice reads
//! (linux/tcp.h), and their parse: shared by the path feed (path.rs, which
//! reads them with getsockopt) and the transfer metrics (metrics/).

use std::time::Duration;

/// The fields of `struct tcp_info` (linux/tcp.h) we use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Smoothed RTT of our own segments.
    pub rtt: Duration,
    /// The receiver's RTT estimate (per window of data received).
    pub rcv_rtt: Duration,
    /// Lowest RTT seen.
    pub min_rtt: Duration,
    /// Congestion window, in segments.
    pub snd_cwnd: u32,
    /// Delivery rate of our data, bytes per second (kernel 4.9+; 0 before).
    pub delivery_rate: u64,
    /// Bytes of ours the peer has acknowledged (kernel 4.1+; 0 before).
    pub bytes_acked: u64,
    /// Bytes of the peer's received in order (kernel 4.1+; 0 before).
    pub bytes_received: u64,
    /// Bytes in the send queue not yet sent (kernel 4.6+; 0 before).
    pub notsent_bytes: u32,
    /// Segments of ours sent again, since the connection began.
    pub total_retrans: u32,
    /// Segments received out of order, since the connection began
    /// (kernel 5.4+; 0 before): a receiver's sign of losses upstream.
    pub rcv_ooopack: u32,
    /// Our maximum segment size, bytes (the congestion window's unit).
    pub snd_mss: u32,
    /// The delivery rate sample was limited by us, not the path (we had
    /// nothing to send): kernel 4.9+.
    pub app_limited: bool,
    /// Time with data of ours in flight or queued (kernel 4.10+; 0 before).
    pub busy: Duration,
    /// Of that, time the peer's receive window held us (its socket buffer).
    pub rwnd_limited: Duration,
    /// Of that, time our own send buffer held us.
    pub sndbuf_limited: Duration,
    /// The window the peer advertises now, bytes (kernel 5.4+; 0 before).
    pub snd_wnd: u32,
}

impl TcpInfo {
    /// The round-trip time to size windows with: the path's own, without
    /// queueing. The smoothed RTTs include the time our own segments wait
    /// behind full socket buffers (on loopback, 36 ms was seen where the
    /// path has 0.05 ms), which would grow windows for queues rather than
    /// for the path. `tcpi_min_rtt` has a sample from the handshake on.
    pub fn path_rtt(&self) -> Duration {
        [self.min_rtt, self.rtt, self.rcv_rtt]
            .into_iter()
            .find(|d| !d.is_zero())
            .unwrap_or_default()
    }

    /// Signs of loss on the path either way, counted since the connection
    /// began: our segments sent again, and the peer's arriving out of
    /// order (each loss the peer repairs shows as a run of them).
    pub fn loss_signs(&self) -> u64 {
        u64::from(self.total_retrans) + u64::from(self.rcv_ooopack)
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_ne_bytes(a)
    })
}

/// Parses the kernel's `struct tcp_info`; fields past `len` (older
/// kernels fill less) read as 0.
pub(super) fn parse(b: &[u8]) -> TcpInfo {
    let us = |off| Duration::from_micros(u64::from(u32_at(b, off)));
    let us64 = |off| Duration::from_micros(u64_at(b, off));
    TcpInfo {
        rtt: us(68),
        rcv_rtt: us(92),
        min_rtt: us(148),
        snd_cwnd: u32_at(b, 80),
        delivery_rate: u64_at(b, 160),
        bytes_acked: u64_at(b, 120),
        bytes_received: u64_at(b, 128),
        notsent_bytes: u32_at(b, 144),
        total_retrans: u32_at(b, 100),
        rcv_ooopack: u32_at(b, 224),
        snd_mss: u32_at(b, 16),
        app_limited: b.get(7).is_some_and(|f| f & 1 != 0),
        busy: us64(168),
        rwnd_limited: us64(176),
        sndbuf_limited: us64(184),
        snd_wnd: u32_at(b, 228),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_structs_read_as_zero() {
        let mut b = vec![0u8; 100];
        b[68..72].copy_from_slice(&5000u32.to_ne_bytes());
        let i = parse(&b);
        assert_eq!(i.rtt, Duration::from_millis(5));
        assert_eq!(i.min_rtt, Duration::ZERO);
        assert_eq!(i.path_rtt(), Duration::from_millis(5));
        b.resize(200, 0);
        b[148..152].copy_from_slice(&700u32.to_ne_bytes());
        assert_eq!(parse(&b).path_rtt(), Duration::from_micros(700));
        b[100..104].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(parse(&b).loss_signs(), 3, "no rcv_ooopack before 5.4");
        b.resize(232, 0);
        b[224..228].copy_from_slice(&40u32.to_ne_bytes());
        assert_eq!(parse(&b).loss_signs(), 43);
    }
}
