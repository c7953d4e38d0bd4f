//! Why a striping join failed, on either side of the join socket
//! (stripe_join.rs); `Display` is the log's text.

use super::join_policy::PolicyRefusal;
use super::wire::WireError;
use sluice_proto::stripe::token::JoinRefused;
use std::path::PathBuf;

/// Why a striping join failed, on either side of the join socket;
/// `Display` is the log's text (and, for a refusal, what the asker is
/// told in `JoinRefused`).
#[derive(Debug)]
pub enum JoinError {
    /// A path of the socket directory could not be read or set up.
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        err: std::io::Error,
    },
    /// The socket directory's parent is not root's alone.
    ParentNotRootOnly(PathBuf),
    /// The socket directory is not root's alone (0700).
    DirNotRootOnly(PathBuf),
    /// The socket's path does not fit a socket address.
    PathTooLong(PathBuf),
    /// socket(2) failed.
    Socket(std::io::Error),
    /// bind or listen on the join socket failed.
    Listen {
        /// The socket's path.
        path: PathBuf,
        /// "bind" or "listen".
        call: &'static str,
        /// Why.
        err: std::io::Error,
    },
    /// The thread answering joins could not be started.
    Thread(std::io::Error),
    /// The admission's lock is poisoned.
    Poisoned,
    /// The asker is not root (not a monitor).
    NotRoot,
    /// The other side sent nothing within the time limit.
    TimedOut,
    /// The join socket failed.
    Wire(WireError),
    /// The request does not parse.
    Malformed,
    /// The admission refused the proof.
    Refused(JoinRefused),
    /// The session's policy refused the login.
    Policy(PolicyRefusal),
    /// After the admission: no handover came.
    ExpectedHandover(u32),
    /// After the admission: the handover broke off.
    MalformedHandover(u32),
    /// The admitted connection could not be passed to the user's process.
    PassOn(u32, WireError),
    /// No session listens under that reference.
    NoSession,
    /// The session's monitor could not be asked.
    Ask(WireError),
    /// The session's monitor refused: its reason, as it sent it.
    RefusedThere(String),
    /// The session's monitor did not answer in time.
    NoAnswer,
    /// The session's monitor answered with another message.
    UnexpectedAnswer,
    /// Waiting for the session's monitor failed.
    Monitor(WireError),
    /// The handover to the session's monitor failed.
    HandingOver(WireError),
    /// The session's monitor did not confirm in time.
    NotConfirmed,
    /// The session's monitor did not take the connection.
    NotTaken,
    /// Another message on the user process's join socket.
    UnexpectedOnJoinSocket,
    /// A broken handover on the user process's join socket.
    MalformedOnJoinSocket,
    /// The handover came without its socket.
    NoSocket,
}

impl std::fmt::Display for JoinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JoinError::Path { path, err } => write!(f, "{}: {err}", path.display()),
            JoinError::ParentNotRootOnly(p) => write!(
                f,
                "{}: must be owned by root and writable by root only",
                p.display()
            ),
            JoinError::DirNotRootOnly(p) => write!(
                f,
                "{}: must be a directory owned by root, mode 0700 (fix or remove it)",
                p.display()
            ),
            JoinError::PathTooLong(p) => write!(f, "{}: path too long for a socket", p.display()),
            JoinError::Socket(e) => write!(f, "socket: {e}"),
            JoinError::Listen { path, call, err } => {
                write!(f, "{}: {call}: {err}", path.display())
            }
            JoinError::Thread(e) => write!(f, "join thread: {e}"),
            JoinError::Poisoned => f.write_str("admission lock poisoned"),
            JoinError::NotRoot => f.write_str("asker is not root"),
            JoinError::TimedOut => f.write_str("timed out"),
            JoinError::Wire(e) => write!(f, "{e}"),
            JoinError::Malformed => f.write_str("malformed request"),
            JoinError::Refused(r) => write!(f, "{r}"),
            JoinError::Policy(why) => write!(f, "{why}"),
            JoinError::ExpectedHandover(n) => {
                write!(f, "join {n}: expected the connection's handover")
            }
            JoinError::MalformedHandover(n) => write!(f, "join {n}: malformed handover"),
            JoinError::PassOn(n, e) => {
                write!(f, "join {n}: passing the connection to the session: {e}")
            }
            JoinError::NoSession => f.write_str("no such session"),
            JoinError::Ask(e) => write!(f, "asking the session's monitor: {e}"),
            JoinError::RefusedThere(why) => f.write_str(why),
            JoinError::NoAnswer => f.write_str("the session's monitor did not answer"),
            JoinError::UnexpectedAnswer => {
                f.write_str("unexpected answer from the session's monitor")
            }
            JoinError::Monitor(e) => write!(f, "the session's monitor: {e}"),
            JoinError::HandingOver(e) => write!(f, "handing over: {e}"),
            JoinError::NotConfirmed => f.write_str("the session's monitor did not confirm"),
            JoinError::NotTaken => {
                f.write_str("the session's monitor did not take the connection (see its log)")
            }
            JoinError::UnexpectedOnJoinSocket => {
                f.write_str("unexpected message on the join socket")
            }
            JoinError::MalformedOnJoinSocket => {
                f.write_str("malformed handover on the join socket")
            }
            JoinError::NoSocket => f.write_str("no socket"),
        }
    }
}

impl std::error::Error for JoinError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JoinError::Path { err, .. }
            | JoinError::Listen { err, .. }
            | JoinError::Socket(err)
            | JoinError::Thread(err) => Some(err),
            JoinError::Wire(e)
            | JoinError::PassOn(_, e)
            | JoinError::Ask(e)
            | JoinError::Monitor(e)
            | JoinError::HandingOver(e) => Some(e),
            _ => None,
        }
    }
}
