//! The client's side of the transfer metrics: `Metrics yes` (a summary on
//! stderr when the session ends), `MetricsPath` (JSON lines every
//! `MetricsInterval`) and the escape `~I` (the summary so far).
//!
//! After authentication this end takes a snapshot of its own figures and
//! asks the server for its own (`path-info-v00@sluice.dev`), so the summary
//! covers the session, not the login; when the session channel closes it
//! takes its last snapshot and asks once more, and the run waits for that
//! answer (at most [`FINAL_WAIT`]). A stock server answers FAILURE at once:
//! its half is then "not reported" and it is not asked again. The figures,
//! their names and the classifier are in net/metrics/.

use crate::net::metrics::report::{self, Facts};
use crate::net::metrics::samples::Sampler;
use crate::net::metrics::{Interval, Snapshot};
use sluice_proto::msg::PathFigures;
use sluice_proto::negotiate::Algorithms;
use sluice_proto::Connection;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// The longest the end of a run waits for the server's last figures.
const FINAL_WAIT: Duration = Duration::from_secs(2);

/// `Metrics`, `MetricsInterval`, `MetricsPath` as resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsPlan {
    /// `Metrics yes`: the summary at the end.
    pub summary: bool,
    /// `MetricsPath` (tokens expanded): where the samples go.
    pub path: Option<String>,
    /// `MetricsInterval`: how often to sample.
    pub interval: Duration,
}

/// What a reply we wait for is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// The figures at the start.
    Start,
    /// The figures at the end.
    End,
    /// `~I`: print the summary so far.
    Info,
}

/// One run's metrics.
pub struct ClientMetrics {
    plan: MetricsPlan,
    sock: Option<RawFd>,
    /// The buffer sizes this client set (0: autotuned).
    asked: (u64, u64),
    sampler: Option<Sampler>,
    facts: Facts,
    /// Ours and the server's at the start.
    start: Option<Snapshot>,
    server_start: Option<Snapshot>,
    /// Ours and the server's at the end.
    end: Option<Snapshot>,
    server_end: Option<Snapshot>,
    /// The server answered with figures (Some(true)) or declined.
    server_reports: Option<bool>,
    asked_queue: VecDeque<Asked>,
    /// Until when the end of the run waits for the server's last figures.
    final_deadline: Option<Instant>,
}

impl ClientMetrics {
    /// Metrics for a run under `plan`; the sample file is created now, and
    /// an error names it.
    pub fn new(
        plan: MetricsPlan,
        asked: (u64, u64),
    ) -> Result<Self, crate::net::metrics::samples::CreateError> {
        let sampler = match &plan.path {
            Some(p) => Some(Sampler::create(p, plan.interval)?),
            None => None,
        };
        crate::net::metrics::system::mark_start();
        Ok(ClientMetrics {
            plan,
            sock: None,
            asked,
            sampler,
            facts: Facts {
                streams: 1,
                ..Facts::default()
            },
            start: None,
            server_start: None,
            end: None,
            server_end: None,
            server_reports: None,
            asked_queue: VecDeque::new(),
            final_deadline: None,
        })
    }

    /// The connection's socket (None: a ProxyCommand's pipes).
    pub fn set_socket(&mut self, fd: Option<RawFd>) {
        self.sock = fd;
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot::take(self.sock, self.asked)
    }

    fn ask(&mut self, conn: &mut Connection, why: Asked) {
        match conn.request_path_info() {
            Ok(()) => self.asked_queue.push_back(why),
            Err(e) => crate::log!(Debug1, "path-info request: {e}"),
        }
    }

    /// Authentication succeeded: the start of what the summary covers.
    pub fn on_authenticated(&mut self, conn: &mut Connection) {
        self.facts.server_version = conn.peer_version().unwrap_or_default().to_owned();
        self.start = Some(self.snapshot());
        if self.plan.summary {
            self.ask(conn, Asked::Start);
        }
    }

    /// A key exchange completed: the algorithms the summary names.
    pub fn on_kex_done(&mut self, a: &Algorithms) {
        self.facts.ciphers = (a.cipher_c2s.clone(), a.cipher_s2c.clone());
        self.facts.compression = (a.comp_c2s.clone(), a.comp_s2c.clone());
    }

    /// Connections the session's data goes over.
    pub fn set_streams(&mut self, n: u32) {
        self.facts.streams = n.max(1);
    }

    /// The server's answer to our latest unanswered request.
    pub fn on_reply(&mut self, figures: Option<PathFigures>) {
        let snap = figures.as_ref().map(Snapshot::from_wire);
        self.server_reports = Some(snap.is_some());
        match self.asked_queue.pop_front() {
            Some(Asked::Start) => self.server_start = snap,
            Some(Asked::End) => {
                self.server_end = snap;
                self.final_deadline = None;
            }
            Some(Asked::Info) => {
                let text = self.text(self.snapshot(), snap, "\r\n");
                crate::err!("{text}");
            }
            None => {}
        }
    }

    /// `~I`: the summary so far, once the server answered (at once from a
    /// server known not to).
    pub fn on_info_escape(&mut self, conn: &mut Connection) {
        if self.server_reports == Some(false) {
            let text = self.text(self.snapshot(), None, "\r\n");
            crate::err!("{text}");
        } else {
            self.ask(conn, Asked::Info);
        }
    }

    /// The session channel closed: the end of what the summary covers. The
    /// server is asked for its last figures; true while the run should
    /// wait for them.
    pub fn on_session_closed(&mut self, conn: &mut Connection) {
        if self.end.is_some() {
            return;
        }
        self.end = Some(self.snapshot());
        if self.plan.summary && self.server_reports != Some(false) {
            self.ask(conn, Asked::End);
            self.final_deadline = Some(Instant::now() + FINAL_WAIT);
        }
    }

    /// The run should not end yet: the server's last figures are awaited.
    pub fn awaiting(&self) -> bool {
        self.final_deadline.is_some_and(|d| Instant::now() < d)
    }

    /// Writes a sample when one is due; `peer_window`: the session
    /// channel's send window now.
    pub fn tick(&mut self, peer_window: Option<u32>) {
        let sock = self.sock;
        if let Some(s) = self.sampler.as_mut() {
            s.tick(Instant::now(), sock, peer_window);
        }
    }

    /// When the loop should next run for us.
    pub fn tick_interval(&self) -> Option<Duration> {
        let now = Instant::now();
        let sample = self.sampler.as_ref().map(|s| s.wait(now));
        let last = self.final_deadline.map(|d| {
            d.saturating_duration_since(now)
                .min(Duration::from_millis(100))
        });
        sample.into_iter().chain(last).min()
    }

    fn text(&self, now: Snapshot, server_now: Option<Snapshot>, eol: &str) -> String {
        let client = Interval::new(self.start.clone(), now);
        let server = server_now.map(|s| Interval::new(self.server_start.clone(), s));
        let (received, sent) = crate::net::pump::socket_totals();
        let facts = Facts {
            socket_bytes: (received, sent),
            ..self.facts.clone()
        };
        report::summary(&facts, &client, server.as_ref(), eol)
    }

    /// After the run: prints the summary (`Metrics yes`), with the
    /// compression counts of the connection.
    pub fn finish(&mut self, conn: &Connection) {
        if !self.plan.summary {
            return;
        }
        let (out, inc) = conn.compression_stats();
        self.facts.compression_stats = (out, inc);
        self.facts.compression_level = conn.compression_level().map(|l| l.get());
        let end = self.end.take().unwrap_or_else(|| self.snapshot());
        let server_end = self.server_end.take();
        let text = self.text(end, server_end, "\n");
        crate::err!("{text}");
    }
}
