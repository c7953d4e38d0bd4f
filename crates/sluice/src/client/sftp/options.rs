//! How to transfer: sftp's and scp's flags ([`Options`]). The request
//! loops take only their [`Pace`] (pipeline/), which a copy over several
//! connections carries without the rest.

use super::bwlimit::BwLimit;
use super::parallel::Parallel;
use super::pipeline::Pace;
use super::progress::Tally;
use std::sync::Arc;

/// How to transfer (sftp's and scp's flags).
#[derive(Debug, Clone)]
pub struct Options {
    /// -p: keep modes and times.
    pub preserve: bool,
    /// -a / reget / reput: continue from what the target already holds.
    pub resume: bool,
    /// -f: fsync after an upload (fsync@openssh.com) and a download.
    pub fsync: bool,
    /// -R: requests in flight (0: sized from the path, see depth.rs).
    pub requests: usize,
    /// -B: the size of one READ or WRITE (0: the server's limit).
    pub buffer: u32,
    /// Show the progress meter.
    pub progress: bool,
    /// Extra connections for large files (ssh_config Streams).
    pub parallel: Option<Parallel>,
    /// -l: the bandwidth limit, shared by every connection.
    pub limit: Option<Arc<BwLimit>>,
    /// What messages of extra connections start with (scp's "scp: ").
    pub tag: &'static str,
    /// A recursive copy's files and total (progress.rs), shared with the
    /// extra connections.
    pub tally: Option<Arc<Tally>>,
    /// Who the copies are with, `user@host:port` (resume records are keyed
    /// by it).
    pub place: String,
    /// ssh_config KeepPartial: a failed copy keeps its partial file and
    /// record for a resume (partial/).
    pub keep_partial: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            preserve: false,
            resume: false,
            fsync: false,
            requests: 0,
            buffer: 0,
            progress: false,
            parallel: None,
            limit: None,
            tag: "",
            tally: None,
            place: String::new(),
            keep_partial: true,
        }
    }
}

impl Options {
    /// What the request loops take of these options.
    pub fn pace(&self) -> Pace {
        Pace {
            requests: self.requests,
            buffer: self.buffer,
            limit: self.limit.clone(),
        }
    }
}
