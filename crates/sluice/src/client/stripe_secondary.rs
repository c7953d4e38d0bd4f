//! One secondary connection of a striped session (client/stripe.rs): its
//! own thread and pump dial the primary's address, check the host key,
//! join with the grant's token and carry one stripe of the channel.

use crate::client::dial::Dial;
use crate::client::stripe_error::SecondaryError;
use crate::log;
use crate::net::crypto_pool::CryptoThreads;
use crate::net::pump::{ChanIo, ChannelFds, Handler, Pump};
use crate::net::stripe::{CarrierEnd, ConnKey, Hub};
use sluice_proto::crypto::SystemRng;
use sluice_proto::stripe::codec::CarrierOpen;
use sluice_proto::stripe::token::Joiner;
use sluice_proto::stripe::CARRIER_CHANNEL;
use sluice_proto::{ClientConfig, Config, Connection, Event};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::streams_auto::LOOK_EVERY;

/// Everything a secondary is dialled with, kept for `auto`'s later steps.
pub(super) struct Dialler {
    pub(super) joiner: Arc<Mutex<Joiner>>,
    pub(super) host_key: Vec<u8>,
    pub(super) remote: u32,
    /// Secondaries the grant allows, and dialled so far.
    pub(super) allowed: u32,
    pub(super) dialled: u32,
    pub(super) counts: Arc<Counts>,
    /// The secondaries' connection keys, in the order dialled (to withdraw
    /// the last step's).
    pub(super) keys: Vec<ConnKey>,
    /// Bytes each secondary's TCP moved (acknowledged + received), as its
    /// thread last read them.
    pub(super) moved: Vec<Arc<AtomicU64>>,
}

/// Secondaries coming up and up, counted by their threads.
#[derive(Default)]
pub(super) struct Counts {
    /// Dialled, carrier not open yet (and not failed).
    pub(super) pending: AtomicU32,
    /// With a carrier open.
    pub(super) live: AtomicU32,
}

/// One secondary connection: dial, key exchange showing the primary's host
/// key, join, one carrier.
pub(super) struct Secondary {
    pub(super) n: u32,
    pub(super) user: String,
    pub(super) host_key: Vec<u8>,
    pub(super) joiner: Arc<Mutex<Joiner>>,
    pub(super) hub: Arc<Hub>,
    pub(super) remote: u32,
    pub(super) key: ConnKey,
    pub(super) done: bool,
    pub(super) counts: Arc<Counts>,
    /// Its carrier is open (counted live).
    pub(super) live: bool,
    /// Its socket, and what its TCP moved for `auto`'s measurements.
    pub(super) sock: Option<RawFd>,
    pub(super) moved: Arc<AtomicU64>,
    /// When `moved` was last read (the pump ticks every loop turn).
    pub(super) sampled: Option<Instant>,
}

impl Secondary {
    pub(super) fn run(mut self, dial: &Dial, proto: Config) {
        let n = self.n;
        let sock = match dial.connect() {
            Ok(s) => s,
            Err(e) => {
                log!(Debug1, "secondary {n}: {e}; going on without it");
                return;
            }
        };
        let mut conn = Connection::client(ClientConfig { common: proto }, Box::new(SystemRng));
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        self.sock = Some(fd);
        let mut pump = Pump::new(fd);
        pump.set_crypto_threads(&mut conn, CryptoThreads::Fixed(1));
        let r = pump.run(&mut conn, &mut self);
        self.count_moved();
        match r {
            Ok(()) => log!(Debug1, "secondary {n}: closed"),
            Err(e) => log!(Debug1, "{e}; going on without it"),
        }
    }

    /// What its TCP moved so far, for `auto` (the socket is still open).
    fn count_moved(&self) {
        if let Some(i) = self.sock.and_then(crate::net::path::tcp_info) {
            self.moved
                .store(i.bytes_acked + i.bytes_received, Ordering::Relaxed);
        }
    }
}

impl Drop for Secondary {
    /// Counted out however its thread ends.
    fn drop(&mut self) {
        let c = if self.live {
            &self.counts.live
        } else {
            &self.counts.pending
        };
        c.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Handler for Secondary {
    type Error = SecondaryError;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), SecondaryError> {
        let n = self.n;
        match event {
            Event::HostKey { key_blob, .. } => {
                if key_blob == self.host_key {
                    conn.accept_host_key();
                } else {
                    conn.reject_host_key();
                    return Err(SecondaryError::OtherHostKey { n });
                }
            }
            Event::AuthReady => {
                let mut j = self.joiner.lock().unwrap_or_else(|p| p.into_inner());
                let number = conn
                    .auth_stripe_join(&self.user, &mut j)
                    .map_err(|error| SecondaryError::Engine { n, error })?;
                log!(Debug1, "secondary {n}: joining as number {number}");
            }
            Event::AuthFailure { .. } => {
                return Err(SecondaryError::JoinRefused { n });
            }
            Event::Authenticated { .. } => {
                let open = CarrierOpen {
                    striped_channel: self.remote,
                }
                .encode();
                conn.open_channel(CARRIER_CHANNEL, &open)
                    .map_err(|error| SecondaryError::Engine { n, error })?;
            }
            Event::ChannelOpened(id) => match CarrierEnd::new(&self.hub, self.key) {
                Some(end) => {
                    log!(Debug1, "secondary {n}: carrier open");
                    fds.insert(id, ChanIo::in_process(Box::new(end)));
                    if !self.live {
                        self.live = true;
                        self.counts.pending.fetch_sub(1, Ordering::Relaxed);
                        self.counts.live.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => {
                    let _ = conn.close_channel(id);
                    self.done = true;
                }
            },
            Event::ChannelOpenFailed { description, .. } => {
                return Err(SecondaryError::CarrierRefused { n, description });
            }
            Event::ChannelClosed(_) => self.done = true,
            Event::GlobalRequest {
                want_reply: true, ..
            } => conn.answer_global(false, &[]),
            _ => {}
        }
        Ok(())
    }

    fn tick(
        &mut self,
        _conn: &mut Connection,
        _fds: &mut ChannelFds,
    ) -> Result<(), SecondaryError> {
        let now = Instant::now();
        if self
            .sampled
            .is_none_or(|t| now.duration_since(t) >= LOOK_EVERY)
        {
            self.sampled = Some(now);
            self.count_moved();
        }
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(LOOK_EVERY)
    }

    fn finished(&self) -> bool {
        self.done
    }
}
