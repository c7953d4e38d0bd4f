//! Forwardings through a master (PROTOCOL.mux MUX_C_OPEN_FWD and
//! MUX_C_CLOSE_FWD): the master adds or cancels them on its connection
//! (`ssh -O forward -L ...` or `sluice -O cancel -R ...` toward it), and
//! client/mux_control.rs asks a master (sluice's or ssh's) for them.

use super::forward::{ClientForward, ForwardError, RemoteAdd, RemoteOutcome};
use super::forward_spec::Kind;
use super::mux::FwdAsk;
use super::mux_wire as mux;
use crate::log;
use sluice_proto::Connection;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::net::UnixStream;

/// The master's pending answers to remote forwards it asked the server for.
#[derive(Default)]
pub struct MuxForwards {
    waiting: BTreeMap<usize, (UnixStream, u32)>,
}

fn send(s: &mut UnixStream, m: &[u8]) {
    let _ = s.write_all(m);
}

impl MuxForwards {
    /// Adds or cancels what a control connection asked for; answers at
    /// once but for a remote forward, whose answer is the server's.
    pub fn apply(&mut self, fwd: &mut ClientForward, conn: &mut Connection, ask: FwdAsk) {
        let FwdAsk {
            mut reply,
            request_id: rid,
            close,
            kind,
            forward,
        } = ask;
        log!(
            Debug1,
            "multiplex: {} {:?} forwarding {}",
            if close { "close" } else { "open" },
            kind,
            forward.listen
        );
        let answer = match (close, kind) {
            (false, Kind::Remote) => match fwd.add_remote(conn, forward) {
                Ok(RemoteAdd::Asked(ticket)) => {
                    self.waiting.insert(ticket, (reply, rid));
                    return;
                }
                Ok(RemoteAdd::Already(Some(port))) => {
                    let m = mux::frame(&[mux::S_REMOTE_PORT, rid, port.into()], None);
                    send(&mut reply, &m);
                    return;
                }
                Ok(RemoteAdd::Already(None)) => Ok(()),
                Err(e) => Err(e),
            },
            (false, _) => fwd.add_local(forward),
            (true, Kind::Remote) => match fwd.cancel_remote(conn, &forward) {
                Ok(true) => Ok(()),
                Ok(false) => Err(ForwardError::NotForwarded),
                Err(e) => Err(e),
            },
            (true, _) => {
                if fwd.cancel_local(&forward) {
                    Ok(())
                } else {
                    Err(ForwardError::NotFound)
                }
            }
        };
        let m = match answer {
            Ok(()) => mux::frame(&[mux::S_OK, rid], None),
            Err(e) => mux::frame(&[mux::S_FAILURE, rid], Some(&e.to_string())),
        };
        send(&mut reply, &m);
    }

    /// The server answered a remote forward a control connection asked for.
    pub fn on_outcome(&mut self, o: RemoteOutcome) {
        let Some((mut s, rid)) = self.waiting.remove(&o.ticket) else {
            return;
        };
        let m = match o.result {
            Ok(Some(port)) => mux::frame(&[mux::S_REMOTE_PORT, rid, port.into()], None),
            Ok(None) => mux::frame(&[mux::S_OK, rid], None),
            Err(e) => mux::frame(&[mux::S_FAILURE, rid], Some(&e.to_string())),
        };
        send(&mut s, &m);
    }
}
