//! Why connection sharing failed (ControlMaster, ControlPersist, `-O`),
//! by kind; `Display` keeps ssh's wording (mux.c's messages).

/// A failure of the master, a passenger or a `-O` command.
#[derive(Debug)]
pub enum MuxError {
    /// The engine refused a request made for a passenger.
    Engine(sluice_proto::Error),
    /// `-O` with a word ssh does not know.
    InvalidCommand,
    /// The control socket could not be reached.
    Connect {
        /// ControlPath.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The master did not answer the hello.
    Hello(std::io::Error),
    /// Writing a request to the master failed.
    Write(std::io::Error),
    /// Reading the master's answer failed.
    Read(std::io::Error),
    /// The master answered something else than an answer to the request.
    Unexpected {
        /// "forward" or "cancel".
        what: &'static str,
    },
    /// The master refused a forwarding request (its reason).
    Denied {
        /// "forward" or "cancel".
        what: &'static str,
        /// The master's reason.
        reason: String,
    },
    /// The master tried and failed (its reason).
    Failed {
        /// "forward" or "cancel".
        what: &'static str,
        /// The master's reason.
        reason: String,
    },
    /// A passenger's message did not parse.
    Malformed,
    /// A passenger's descriptor did not arrive.
    ReceiveFd {
        /// "stdin", "stdout" or "stderr".
        what: &'static str,
        /// The passenger's request id.
        rid: u32,
        /// Why.
        error: std::io::Error,
    },
    /// A passenger sent fewer descriptors than its request needs.
    DescriptorsMissing,
    /// A system call on the master's side (socket clone, fork, /dev/null).
    Io {
        /// What was tried ("fork", "/dev/null"); empty: the error alone.
        what: &'static str,
        /// Why.
        error: std::io::Error,
    },
}

impl std::fmt::Display for MuxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MuxError::Engine(e) => write!(f, "{e}"),
            MuxError::InvalidCommand => f.write_str("Invalid multiplex command."),
            MuxError::Connect { path, error } => write!(
                f,
                "Control socket connect({path}): {}",
                crate::io_error::describe_io_error(error)
            ),
            MuxError::Hello(e) => write!(f, "mux_client_hello_exchange: {e}"),
            MuxError::Write(e) => write!(f, "write to master: {e}"),
            MuxError::Read(e) => write!(f, "read from master: {e}"),
            MuxError::Unexpected { what } => {
                write!(f, "unexpected response from master to {what} request")
            }
            MuxError::Denied { what, reason } => {
                write!(f, "Master refused {what}ing request: {reason}")
            }
            MuxError::Failed { what, reason } => {
                write!(f, "mux_client_forward: {what}ing request failed: {reason}")
            }
            MuxError::Malformed => f.write_str("malformed message"),
            MuxError::ReceiveFd { what, rid, error } => {
                write!(
                    f,
                    "failed to receive fd for {what} (request {rid}): {error}"
                )
            }
            MuxError::DescriptorsMissing => f.write_str("descriptors missing"),
            MuxError::Io { what: "", error } => write!(f, "{error}"),
            MuxError::Io { what, error } => write!(f, "{what}: {error}"),
        }
    }
}

impl std::error::Error for MuxError {}

impl From<sluice_proto::Error> for MuxError {
    fn from(e: sluice_proto::Error) -> Self {
        MuxError::Engine(e)
    }
}
