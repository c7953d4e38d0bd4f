//! Forwardings added and cancelled while the connection runs: a
//! passenger's `-O forward` / `-O cancel` through the master (PROTOCOL.mux
//! MUX_C_OPEN_FWD, MUX_C_CLOSE_FWD), with ssh's answers: an existing
//! forwarding asked again is fine, cancelling one that is not there fails.

use super::{ClientForward, Endpoint, Forward, ForwardError, RemoteRefusal};
use crate::log;
use sluice_proto::wire::Writer;
use sluice_proto::Connection;

/// The server's answer to a remote forward asked while running.
#[derive(Debug, PartialEq, Eq)]
pub struct RemoteOutcome {
    /// The ticket [`ClientForward::add_remote`] gave.
    pub ticket: usize,
    /// Err: the server refused.
    pub result: Result<Option<u16>, RemoteRefusal>,
}

/// What [`ClientForward::add_remote`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum RemoteAdd {
    /// Asked the server; the outcome will carry this ticket.
    Asked(usize),
    /// It was there already (the port the server chose for it, if it did).
    Already(Option<u16>),
}

/// The global request that asks for (or cancels) a remote listener.
fn remote_request(f: &Forward, cancel: bool) -> (&'static str, Vec<u8>) {
    let mut d = Vec::new();
    let name = match &f.listen {
        Endpoint::Tcp { host, port } => {
            let h = match host.as_deref() {
                None => "localhost",
                Some("*") => "",
                Some(h) => h,
            };
            Writer::new(&mut d).utf8(h).u32((*port).into());
            if cancel {
                "cancel-tcpip-forward"
            } else {
                "tcpip-forward"
            }
        }
        Endpoint::Unix(p) => {
            Writer::new(&mut d).utf8(p);
            if cancel {
                "cancel-streamlocal-forward@openssh.com"
            } else {
                "streamlocal-forward@openssh.com"
            }
        }
    };
    (name, d)
}

impl ClientForward {
    /// The global request for remote forward `f` (at start and when added).
    pub(super) fn request_remote(
        &mut self,
        conn: &mut Connection,
        i: usize,
    ) -> Result<(), ForwardError> {
        let Some(f) = self.plan.remote.get(i) else {
            return Ok(());
        };
        let (name, d) = remote_request(f, false);
        log!(Debug1, "Requesting {name} for {}", f.listen);
        conn.global_request(name, true, &d)?;
        self.remote_pending.push_back(i);
        Ok(())
    }

    /// Adds a local or dynamic listener; one already there is kept (Ok).
    pub fn add_local(&mut self, f: Forward) -> Result<(), ForwardError> {
        if self.listeners.iter().any(|l| l.spec == f) {
            return Ok(());
        }
        self.listen(&f).map_err(|e| {
            log!(Error, "{e}");
            ForwardError::AddLocal
        })
    }

    /// Asks the server for a remote listener: its answer comes as a
    /// [`RemoteOutcome`] from `on_global_reply`, unless that forwarding is
    /// already there (with the port the server chose, for a `-R 0:...`).
    pub fn add_remote(
        &mut self,
        conn: &mut Connection,
        f: Forward,
    ) -> Result<RemoteAdd, ForwardError> {
        if let Some(i) = self.live_remote(&f) {
            return Ok(RemoteAdd::Already(self.allocated.get(&i).copied()));
        }
        self.plan.remote.push(f);
        let i = self.plan.remote.len() - 1;
        self.tickets.insert(i);
        self.request_remote(conn, i)?;
        Ok(RemoteAdd::Asked(i))
    }

    /// The remote forward `f` names, not cancelled: the same listener
    /// (the server's default address written either way, or the port the
    /// server chose for a `-R 0:...`) and the same target.
    fn live_remote(&self, f: &Forward) -> Option<usize> {
        let key = |e: &Endpoint| match e {
            Endpoint::Tcp { host, port } => {
                (host.clone().unwrap_or_else(|| "localhost".into()), *port)
            }
            Endpoint::Unix(p) => (p.clone(), u16::MAX),
        };
        let (host, port) = key(&f.listen);
        (0..self.plan.remote.len()).find(|i| {
            let g = &self.plan.remote[*i];
            let (h, p) = key(&g.listen);
            let allocated = self.allocated.get(i) == Some(&port);
            !self.cancelled.contains(i)
                && g.connect == f.connect
                && h == host
                && (p == port || allocated)
        })
    }

    /// Closes a local or dynamic listener; false when there is none.
    pub fn cancel_local(&mut self, f: &Forward) -> bool {
        let before = self.listeners.len();
        self.listeners.retain(|l| l.spec != *f);
        if let (true, Endpoint::Unix(path)) = (self.listeners.len() < before, &f.listen) {
            let _ = std::fs::remove_file(path);
        }
        self.listeners.len() < before
    }

    /// Cancels a remote listener (no reply asked, as ssh); false when
    /// there is none.
    pub fn cancel_remote(
        &mut self,
        conn: &mut Connection,
        f: &Forward,
    ) -> Result<bool, ForwardError> {
        let Some(i) = self.live_remote(f) else {
            return Ok(false);
        };
        // `-R 0:...` was given a port: that is the one to cancel.
        let mut asked = self.plan.remote[i].clone();
        if let (Endpoint::Tcp { port, .. }, Some(p)) = (&mut asked.listen, self.allocated.get(&i)) {
            *port = *p;
        }
        let (name, d) = remote_request(&asked, true);
        log!(Debug1, "Requesting {name} for {}", asked.listen);
        conn.global_request(name, false, &d)?;
        self.cancelled.insert(i);
        Ok(true)
    }
}
