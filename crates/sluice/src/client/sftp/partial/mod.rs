//! The partial file every copy writes, one stream or many, and what a
//! resume needs of it (issue 42): a download goes to `.NAME.sluice-part`
//! beside the target (down.rs), an upload to the same name beside the
//! remote target when the server can rename it into place (up.rs); the
//! completed pieces go into the copy's record (resume.rs) as they are
//! written or acknowledged, and the part is renamed over the target only
//! when whole, then the record removed.
//!
//! A copy that fails keeps both (ssh_config `KeepPartial yes`, the
//! default) with a line naming the part, so `reget`, `reput`, `-a` and
//! `sluice-scp -a` copy only what is missing; `KeepPartial no` removes
//! them on any failure the program sees (a kill leaves them either way).
//! A plain get or put starts over, as OpenSSH's does: the part is
//! truncated. The name is fixed, not salted, so the next run finds it.
//!
//! The record is a hint: against sluiced each range in it is checked by
//! SHA-256 on both sides (sha256-range@sluice.dev, hash.rs) before
//! it is skipped; against a stock server only the source's size and
//! mtime vouch for it, as only the size does for OpenSSH's reget.

pub mod down;
pub mod hash;
pub mod up;

use super::errors::TransferResult;
use super::pipeline::Span;
use super::resume::{self, Record};
use super::session::Sftp;
use std::fs::File;
use std::sync::Arc;

/// A single stream saves its record after this many new bytes: a kill
/// costs at most this much again, and a 1 GiB copy writes the small record
/// 128 times (measured as nothing beside the copy itself).
const CHECKPOINT: u64 = 8 << 20;

/// Whether the first `len` bytes of `local` and `remote` are the same, by
/// sha256-range@sluice.dev; None when the server cannot tell (not sluiced:
/// OpenSSH's rule, trust the size, applies).
pub(super) fn same_prefix(
    s: &mut Sftp,
    remote: &[u8],
    local: &File,
    len: u64,
) -> TransferResult<Option<bool>> {
    hash::same_range(s, remote, local, 0, len)
}

/// A single stream's record kept up to date: the pieces written (or
/// acknowledged) are joined as they come, in whatever order, and saved
/// every [`CHECKPOINT`] bytes; a copy in ranges keeps its own record
/// range by range (parallel/).
pub(super) struct Checkpoint {
    record: Option<Arc<Record>>,
    /// Complete, sorted and joined: what the record will say.
    done: Vec<(u64, u64)>,
    /// Bytes completed since the last save.
    since: u64,
}

impl Checkpoint {
    /// Keeps `record` (None: nothing to keep) starting from `done`.
    pub(super) fn new(record: Option<Arc<Record>>, done: &[(u64, u64)]) -> Checkpoint {
        Checkpoint {
            record,
            done: resume::merge(done.to_vec()),
            since: 0,
        }
    }

    /// `n` bytes at `off` are complete. Cheap: pieces mostly land at the
    /// end of the last one.
    pub(super) fn add(&mut self, off: u64, n: u64) {
        if self.record.is_none() || n == 0 {
            return;
        }
        let (a, b) = (off, off + n);
        let i = self.done.partition_point(|r| r.1 < a);
        let mut j = i;
        let (mut lo, mut hi) = (a, b);
        while let Some(r) = self.done.get(j).filter(|r| r.0 <= b) {
            lo = lo.min(r.0);
            hi = hi.max(r.1);
            j += 1;
        }
        self.done.splice(i..j, [(lo, hi)]);
        self.since += n;
        if self.since >= CHECKPOINT {
            self.save();
        }
    }

    /// Saves what is complete now.
    pub(super) fn save(&mut self) {
        if let Some(r) = &self.record {
            if self.since > 0 {
                r.reset(&self.done);
                self.since = 0;
            }
        }
    }
}

/// The spans a single stream copies: `[start, size)` when nothing is
/// done yet (not exact: the file may have grown since its STAT), else the
/// gaps between the completed ranges, exactly (the record is for this
/// size and mtime). The first span, and the rest in order.
pub(super) fn spans(
    start: u64,
    size: Option<u64>,
    done: &[(u64, u64)],
) -> (Span, std::vec::IntoIter<Span>) {
    let size = match size {
        Some(sz) if !done.is_empty() => sz,
        _ => {
            let first = Span {
                start,
                end: size,
                exact: false,
            };
            return (first, Vec::new().into_iter());
        }
    };
    let mut gaps = resume::missing(size, done, u64::MAX)
        .into_iter()
        .map(|(a, b)| Span {
            start: a,
            end: Some(b),
            exact: true,
        });
    let first = gaps.next().unwrap_or(Span {
        start: size,
        end: Some(size),
        exact: true,
    });
    (first, gaps.collect::<Vec<_>>().into_iter())
}

/// The line a failed copy prints when it keeps its partial file (never
/// left hidden without a word).
pub(super) fn say_kept(part: &str, how: &str) {
    crate::log!(
        Info,
        "Kept the partial file \"{part}\": {how} continues it (KeepPartial no removes it)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_join_pieces_in_any_order() {
        let dir = std::env::temp_dir().join(format!("sluice-ckpt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = Arc::new(Record::for_download(
            "h:22",
            b"/r",
            &dir.join("t"),
            64 << 20,
            1,
        ));
        let mut c = Checkpoint::new(Some(r.clone()), &[]);
        c.add(1 << 20, 1 << 20);
        c.add(3 << 20, 1 << 20);
        c.add(0, 1 << 20);
        assert!(r.load().is_empty(), "nothing saved before 8 MiB");
        assert_eq!(c.done, vec![(0, 2 << 20), (3 << 20, 4 << 20)]);
        c.add(2 << 20, 6 << 20);
        assert_eq!(r.load(), vec![(0, 8 << 20)]);
        r.remove();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn single_stream_spans() {
        let (f, rest) = spans(0, Some(100), &[]);
        assert_eq!((f.start, f.end, f.exact), (0, Some(100), false));
        assert_eq!(rest.len(), 0);
        let (f, rest) = spans(0, Some(100), &[(0, 40), (60, 70)]);
        assert_eq!((f.start, f.end, f.exact), (40, Some(60), true));
        let r: Vec<_> = rest.map(|s| (s.start, s.end)).collect();
        assert_eq!(r, vec![(70, Some(100))]);
        let (f, rest) = spans(0, Some(100), &[(0, 100)]);
        assert_eq!((f.start, f.end), (100, Some(100)));
        assert_eq!(rest.len(), 0);
    }
}
