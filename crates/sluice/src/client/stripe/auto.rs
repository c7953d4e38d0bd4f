//! `Streams auto` (client/stripe.rs): how many connections to ask for and
//! start with, and the steps that add more while each raises the rate.

use crate::client::streams_auto::LOOK_EVERY;
use crate::client::streams_auto::{self, Steer, Step, AUTO_MAX};
use crate::client::stripe_secondary::Dialler;
use crate::log;
use crate::net::stripe::Hub;
use sluice_proto::Connection;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Connections `Streams auto` starts with on a long path.
pub(super) const AUTO_STREAMS: u32 = 4;
/// Round trips in one of `auto`'s measurements (and in the warm-up before
/// it, while new connections' TCP windows open), at least a second.
const AUTO_PERIOD_RTTS: u32 = 10;
/// The shortest path on which `auto` stripes to watch for loss.
const AUTO_LOSS_RTT: Duration = Duration::from_millis(20);
/// Bytes one connection moves per round trip below which its losses are
/// taken to hold it back: a loss-bound connection keeps a few hundred
/// segments in flight, a path-filling one thousands (1 Gbit/s at 20 ms is
/// 2.5 MB). A trial on a path one connection fills costs: a new connection
/// ramping up disturbs the others for seconds (bbr at 240 ms: 27%).
const AUTO_LOSS_INFLIGHT: f64 = 2.0 * 1024.0 * 1024.0;

/// `Streams auto` steering a striped channel.
pub(super) struct AutoSteer {
    steer: Steer,
    /// When the last step's connections were all up (warm-up from there).
    up_since: Option<Instant>,
    /// Steps wait for a loss on the primary (a path one socket covers).
    gate: Option<LossGate>,
    /// When the rates were last looked at (the loop turns far more often).
    looked: Option<Instant>,
}

/// Holds `auto`'s first step until the primary's TCP shows a loss while
/// it moves little per round trip.
struct LossGate {
    /// The primary's socket.
    sock: RawFd,
    /// The path's round trip.
    rtt: Duration,
    /// Loss signs counted at the start of the current period (None: the
    /// warm-up just ended).
    base: Option<u64>,
    /// When the watch began and the bytes moved then: the lone
    /// connection's rate to beat is its average since (a loss-bound cubic
    /// flow's rate swings by several times within a second).
    watched: Option<(Instant, u64)>,
}

impl AutoSteer {
    /// Steering from now on a path of round trip `rtt`; `gated`: its first
    /// step waits for a loss on the primary's socket `primary` (a path one
    /// socket covers).
    pub(super) fn new(rtt: Duration, gated: bool, primary: Option<RawFd>) -> AutoSteer {
        let period = (rtt * AUTO_PERIOD_RTTS).max(Duration::from_secs(1));
        let gate = match (gated, primary) {
            (true, Some(sock)) => Some(LossGate {
                sock,
                rtt,
                base: None,
                watched: None,
            }),
            _ => None,
        };
        AutoSteer {
            steer: Steer::new(Instant::now(), 0, period),
            up_since: None,
            gate,
            looked: None,
        }
    }
}

/// What a look at the rates calls for.
pub(super) enum Look {
    /// Nothing now.
    Go,
    /// Dial this many more secondaries.
    Dial(u32),
    /// Stop steering (what is up stays).
    Stop,
}

impl AutoSteer {
    /// Once the last step's connections are up and warm, measures the
    /// channel's rate (the primary's socket `primary`, the secondaries of
    /// `d`, the hub's progress) and says whether to add connections.
    pub(super) fn look(&mut self, primary: Option<RawFd>, d: &Dialler, hub: &Hub) -> Look {
        let a = self;
        let now = Instant::now();
        if a.looked.is_some_and(|t| now.duration_since(t) < LOOK_EVERY) {
            return Look::Go;
        }
        a.looked = Some(now);
        let (acked, received) = hub.progress();
        let flowing = acked + received > 0;
        // The rate by TCP's count on every connection: the channel's own
        // (in order, acknowledged a quarter of its budget at a time) stalls
        // for seconds behind one connection's repair on a lossy path.
        let primary = primary
            .and_then(crate::net::path::tcp_info)
            .map_or(acked + received, |i| i.bytes_acked + i.bytes_received);
        let moved = primary
            + d.moved
                .iter()
                .map(|m| m.load(Ordering::Relaxed))
                .sum::<u64>();
        if d.counts.pending.load(Ordering::Relaxed) > 0 || !flowing {
            // Connections still coming up, or nothing flowing yet.
            a.up_since = None;
            a.steer.mark(now, moved);
            return Look::Go;
        }
        let up = *a.up_since.get_or_insert(now);
        if now.duration_since(up) < a.steer.period() {
            // Warm-up: the new connections' TCP windows are still opening.
            a.steer.mark(now, moved);
            return Look::Go;
        }
        if let Some(g) = a.gate.as_mut() {
            // One connection covers the path unless it loses: each period
            // (its rate the first step's "before") ends with a look at the
            // primary's loss signs; none, and it starts again.
            let Some(signs) = crate::net::path::tcp_info(g.sock).map(|i| i.loss_signs()) else {
                return Look::Stop;
            };
            let Some(base) = g.base else {
                g.base = Some(signs);
                g.watched = Some((now, moved));
                a.steer.mark(now, moved);
                return Look::Go;
            };
            if !a.steer.due(now) {
                return Look::Go;
            }
            let per_rtt = a.steer.rate(now, moved) * g.rtt.as_secs_f64();
            if signs == base || per_rtt >= AUTO_LOSS_INFLIGHT {
                g.base = Some(signs);
                a.steer.mark(now, moved);
                return Look::Go;
            }
            // Several connections at once, as on a path one socket cannot
            // cover: each loss-bound flow adds about as much as the first,
            // and a step of one reads as noise beside a cubic flow's swings.
            let (t0, m0) = g.watched.unwrap_or((now, moved));
            let lone =
                moved.saturating_sub(m0) as f64 / now.duration_since(t0).as_secs_f64().max(1e-3);
            let add = (AUTO_STREAMS - 1).min(d.allowed - d.dialled);
            log!(
                Debug1,
                "Streams auto: the connection showed {} signs of loss (segments sent again or out of order) in {:.1} s, moves {} per round trip and {:.1} MB/s on average: opening {add} more",
                signs - base,
                a.steer.period().as_secs_f64(),
                crate::net::sockbuf::human(per_rtt as u64),
                lone / 1e6
            );
            a.gate = None;
            a.up_since = None;
            a.steer.stepped(now, moved, lone, add as usize);
            return Look::Dial(add);
        }
        let live = 1 + d.counts.live.load(Ordering::Relaxed) as usize;
        let room = (d.allowed - d.dialled) as usize;
        match a.steer.decide(now, moved, live) {
            Step::Wait => Look::Go,
            Step::Add(k) if room > 0 => {
                a.up_since = None;
                Look::Dial(k.min(room) as u32)
            }
            Step::Add(_) => {
                log!(
                    Debug1,
                    "Streams auto: the server's grant allows no more connections"
                );
                Look::Stop
            }
            Step::GiveBack(_) if hub.sending_ended() => {
                // An upload that sent its last bytes: the period saw the
                // data run out, not the step fail.
                log!(
                    Debug1,
                    "Streams auto: all the data has been sent, so that period's rate says nothing of the step: keeping the connections, no more steps"
                );
                Look::Stop
            }
            Step::GiveBack(k) => {
                log!(
                    Debug1,
                    "Streams auto: closing the last {k} connection(s)' carriers; no more are added"
                );
                for key in d.keys.iter().rev().take(k) {
                    hub.withdraw(*key);
                }
                Look::Stop
            }
            Step::Settle => Look::Stop,
        }
    }
}

/// `Streams auto`'s counts: when the path's bandwidth-delay product (at
/// [`streams_auto::ASSUMED_RATE`]) exceeds what one socket may buffer, a grant of
/// [`AUTO_MAX`] asked and [`AUTO_STREAMS`] to start with (measurements add
/// the rest); on a path of [`AUTO_LOSS_RTT`] or more, the grant asked and
/// one to start with (a loss starts the steps); else one connection and no
/// grant.
pub(super) fn auto_counts(conn: &Connection) -> (u32, u32) {
    let Some(rtt) = conn.path_rtt() else {
        log!(
            Debug1,
            "Streams auto: no path RTT measured yet: one connection"
        );
        return (1, 1);
    };
    let (bdp, cap) = streams_auto::bdp_and_cap(rtt);
    let stripe = bdp > cap;
    log!(
        Debug1,
        "Streams auto: RTT {:?}, bandwidth-delay product at 1 Gbit/s {} against one socket's send buffer cap {}: {}",
        rtt,
        crate::net::sockbuf::human(bdp),
        crate::net::sockbuf::human(cap),
        if stripe {
            format!("starting with {AUTO_STREAMS} connections, up to {AUTO_MAX} while each step helps")
        } else if rtt >= AUTO_LOSS_RTT {
            format!("one connection, up to {AUTO_MAX} while each step helps if it loses segments")
        } else {
            "one connection".to_owned()
        }
    );
    if stripe {
        (AUTO_STREAMS, AUTO_MAX as u32)
    } else if rtt >= AUTO_LOSS_RTT {
        (1, AUTO_MAX as u32)
    } else {
        (1, 1)
    }
}
