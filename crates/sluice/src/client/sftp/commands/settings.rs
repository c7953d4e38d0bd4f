//! How sftp was started (its flags), for the first command's guess
//! (first.rs) and the shell (mod.rs).

use super::super::options::Options;

/// How the program was started (sftp's flags).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// -b: the batch file ("-" for stdin).
    pub batch: Option<String>,
    /// -q, or batch mode: no "Fetching ..." lines.
    pub quiet: bool,
    /// Transfer flags (-a, -f, -p, -r, -B, -R, the meter).
    pub transfer: Options,
    /// -r: every get and put is recursive.
    pub recursive: bool,
    /// The destination's path: a directory to start in, or a file to fetch.
    pub start_path: Option<String>,
}
