//! A connection's work in a copy in ranges: ranges taken from the queue
//! and copied on the connection's own pipeline (pipeline/), one after
//! another with no pause between them; a connection that dies hands its
//! ranges back.

use super::super::errors::{RemoteOp, TransferError, TransferResult};
use super::super::pipeline::{self, Span};
use super::super::session::Sftp;
use super::{Copy, Open, Range, Shared};
use sluice_proto::sftp::{pflags, Attrs};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Shared {
    /// An extra connection's program: ranges until the run ends, it is
    /// retired, or its session fails (its range then goes back).
    pub(super) fn work(&self, link: super::super::Link) {
        let mut s = match Sftp::init(link) {
            Ok(s) => s,
            Err(e) => {
                crate::log!(Debug1, "Streams: extra connection's SFTP failed: {e}");
                self.lock().starting -= 1;
                return;
            }
        };
        {
            let mut st = self.lock();
            st.starting -= 1;
            st.live += 1;
            crate::log!(Debug1, "Streams: {} connections", 1 + st.live);
        }
        let mut open: Open = None;
        loop {
            let r = {
                let mut st = self.lock();
                loop {
                    if st.closed {
                        break None;
                    }
                    if st.retire > 0 {
                        st.retire -= 1;
                        break None;
                    }
                    if let Some(r) = st.queue.pop_front() {
                        break Some(r);
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(r) = r else { break };
            match self.run(&mut s, &mut open, r, true, &|| {}) {
                (held, Err(TransferError::Fatal(m))) => {
                    crate::log!(
                        Debug1,
                        "Streams: a connection failed ({m}); its ranges go again"
                    );
                    let mut st = self.lock();
                    for r in held.into_iter().rev() {
                        r.copy.again(&r);
                        st.queue.push_front(r);
                    }
                    drop(st);
                    self.cv.notify_all();
                    open = None;
                    break;
                }
                (held, res) => self.finish(&held, res.err()),
            }
        }
        if let Some((_, h)) = open.take() {
            let _ = s.close(&h);
        }
        self.lock().live -= 1;
        self.cv.notify_all();
        s.finish();
    }

    /// Copies range `r` on `s` (opening the file there first if needed),
    /// then, on the same pipeline with no pause between them, more ranges
    /// of the same file while the queue has them (a worker that may
    /// retire stops taking them when asked to). Returns every range it
    /// held, for the caller to count done or hand back.
    pub(super) fn run(
        &self,
        s: &mut Sftp,
        open: &mut Open,
        r: Range,
        may_retire: bool,
        between: &dyn Fn(),
    ) -> (Vec<Range>, TransferResult<()>) {
        let c = r.copy.clone();
        let mut held = vec![r];
        let res = self.run_held(s, open, &c, &mut held, may_retire, between);
        (held, res)
    }

    fn run_held(
        &self,
        s: &mut Sftp,
        open: &mut Open,
        c: &Arc<Copy>,
        held: &mut Vec<Range>,
        may_retire: bool,
        between: &dyn Fn(),
    ) -> TransferResult<()> {
        if c.left.lock().unwrap_or_else(|e| e.into_inner()).1.is_some() {
            return Ok(()); // the copy failed elsewhere: skip
        }
        if !open.as_ref().is_some_and(|(o, _)| Arc::ptr_eq(o, c)) {
            if let Some((_, h)) = open.take() {
                // As before typed errors: any failed CLOSE here ends this
                // connection's work (its ranges go again elsewhere).
                s.close(&h).map_err(TransferError::Fatal)?;
            }
            let h = if c.up {
                s.open(&c.remote, pflags::WRITE, Attrs::default())
            } else {
                s.open_read(&c.remote)
            }
            .map_err(|e| TransferError::remote(RemoteOp::Open, &c.remote, e))?;
            *open = Some((c.clone(), h));
        }
        let h = open.as_ref().map(|(_, h)| h.clone()).unwrap_or_default();
        let span = |r: &Range| Span {
            start: r.start,
            end: Some(r.end),
            exact: true,
        };
        let first = held.first().map(span).unwrap_or(Span {
            start: 0,
            end: Some(0),
            exact: true,
        });
        let mut more = || {
            between();
            let mut st = self.lock();
            if may_retire && (st.retire > 0 || st.closed) {
                return None;
            }
            let i = st.queue.iter().position(|q| Arc::ptr_eq(&q.copy, c))?;
            let r = st.queue.remove(i)?;
            let sp = span(&r);
            held.push(r);
            Some(sp)
        };
        let mut tally = |off: u64, n: u64| {
            self.moved.fetch_add(n, Ordering::Relaxed);
            c.meter.lock().unwrap_or_else(|e| e.into_inner()).add(n);
            c.acked(off, n);
        };
        let (file, local, remote, pace) = (&c.file, &c.local, &c.remote, &c.pace);
        if c.up {
            pipeline::send_file(
                s,
                &h,
                file,
                first,
                &[],
                local,
                remote,
                pace,
                &mut more,
                &mut tally,
                pipeline::Closing::No,
            )
            .map(|_| ())
        } else {
            // An exact span fails on an early EOF: the file shrank.
            pipeline::fetch(
                s,
                &h,
                remote,
                file,
                first,
                &[],
                local,
                pace,
                &mut more,
                &mut tally,
            )
            .map(|_| ())
        }
    }

    /// Ranges of one copy are done (or failed for good): count them,
    /// wake the waiter.
    pub(super) fn finish(&self, held: &[Range], err: Option<TransferError>) {
        let Some(r) = held.first() else { return };
        let _st = self.lock();
        let mut left = r.copy.left.lock().unwrap_or_else(|e| e.into_inner());
        left.0 = left.0.saturating_sub(held.len());
        if left.1.is_none() {
            left.1 = err;
        }
        drop(left);
        self.cv.notify_all();
    }
}
