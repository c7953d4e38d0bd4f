//! Transfer metrics (`Metrics`, `MetricsPath`, `~I`; sluiced's answer to
//! `path-info-v00@sluice.dev`): what each end measured of a connection and
//! the one line that says what limited the transfer.
//!
//! - `tally.rs`: the driver loop's counters (why it slept, data moved,
//!   windows) and the path's figures at each TCP_INFO reading;
//! - `system.rs`: CPU time, cores and the kernel's socket buffer caps;
//! - `snapshot.rs`: one end's figures at one moment, their names on the
//!   wire, and intervals between two moments;
//! - `classify.rs`: the pure classifier, unit-tested case by case;
//! - `report.rs`: the summary's text;
//! - `samples.rs`: `MetricsPath`'s JSON lines.
//!
//! The client's side (when to ask, when to print) is `client/metrics.rs`;
//! sluiced answers in `server/conn/path_info.rs`.

pub mod classify;
pub mod report;
pub mod samples;
pub mod snapshot;
pub mod system;
pub mod tally;

pub use snapshot::{Figure, Interval, Snapshot};
