//! Why a privilege-separated process gave up on its monitor socket: the
//! link's own errors (`WireError`), a request out of turn or refused
//! (`Violation`: the authentication rules mauth.rs enforces), and the
//! handover's checks, shared by the monitor (monitor.rs, postauth.rs) and
//! its children (preauth.rs, postauth.rs, signer.rs). `Display` is the
//! text sshd's logs carry today.

use super::policy::OutOfTurn;
use super::wire::WireError;
use sluice_proto::handover::DecodeError;

/// A child's request the monitor did not expect: the connection ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A request while the previous one still waits for its verdict.
    OutOfTurn(&'static str),
    /// Keyboard-interactive answers without prompts.
    UnaskedAnswers,
    /// A publickey signature that does not verify over the monitor's
    /// session id (the child's engine claimed it did).
    BadSignature,
    /// A signed publickey request before any key exchange was signed.
    NoSession,
    /// A publickey algorithm the configuration or key does not allow.
    BadAlgorithm,
    /// Another user named than in the first request (the child's engine
    /// should have ended the connection: "Change of username or service
    /// not allowed").
    UserChanged,
    /// A `publickey-hostbound-v00@openssh.com` request naming another host
    /// key than the one that signed the first exchange.
    WrongHostKey,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::OutOfTurn(what) => write!(f, "{what} out of turn"),
            Violation::UnaskedAnswers => {
                f.write_str("keyboard-interactive answers without prompts")
            }
            Violation::BadSignature => f.write_str("publickey signature does not verify"),
            Violation::NoSession => f.write_str("signed publickey request before the key exchange"),
            Violation::BadAlgorithm => f.write_str("publickey algorithm not allowed"),
            Violation::UserChanged => f.write_str("another user named than at first"),
            Violation::WrongHostKey => {
                f.write_str("hostbound publickey request names another host key")
            }
        }
    }
}

/// Why the monitor refused to sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignRefusal {
    /// No host key with that number.
    NoSuchKey,
    /// The algorithm does not belong to the key.
    WrongAlgorithm,
    /// The transcript is not a key exchange of this connection with this
    /// host key.
    NotAnExchange,
    /// An unknown hash function.
    BadHash,
    /// A host key proof before any key exchange.
    NoSession,
    /// The key failed to sign.
    Failed,
}

impl std::fmt::Display for SignRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SignRefusal::NoSuchKey => "sign request for a host key that does not exist",
            SignRefusal::WrongAlgorithm => "sign request with an algorithm the key has not",
            SignRefusal::NotAnExchange => {
                "sign request for data that is not a key exchange of this connection"
            }
            SignRefusal::BadHash => "sign request with an unknown hash",
            SignRefusal::NoSession => "host key proof requested before a key exchange",
            SignRefusal::Failed => "host key signing failed",
        })
    }
}

/// A privsep link that cannot go on.
#[derive(Debug)]
pub enum PrivsepError {
    /// The socket failed, closed, or carried a malformed message.
    Wire(WireError),
    /// A request the monitor's table does not allow now.
    OutOfTurn(OutOfTurn),
    /// A sign request the monitor refused.
    Sign(SignRefusal),
    /// An authentication request that broke the monitor's rules.
    Auth(Violation),
    /// A request the monitor's table lets through but it does not serve.
    UnexpectedRequest,
    /// The monitor answered the pre-auth child with another message.
    UnexpectedMessage,
    /// The monitor answered a request with another message.
    UnexpectedAnswer,
    /// The post-auth process did not get `Start` first.
    ExpectedStart,
    /// The post-auth process did not get `State` after `Start`.
    ExpectedState,
    /// A handover before the monitor accepted a user.
    HandoverBeforeAuth,
    /// The handover's input did not end in time.
    HandoverTimedOut,
    /// Another message inside the handover.
    UnexpectedInHandover,
    /// The handed-over transport state does not decode.
    HandoverState(DecodeError),
    /// A handover, or a striping grant, before any key exchange.
    NoKeyExchange {
        /// What asked for the session id ("handover", "striping").
        what: &'static str,
    },
    /// The handed-over state is another session's.
    OtherSession,
    /// The handed-over state names a user the monitor did not accept.
    OtherUser,
    /// A relayed log line with a level that does not exist.
    BadLogLevel,
    /// A pty released that the monitor did not give.
    UnknownPty,
    /// The pre-auth engine was asked to hand over before its time.
    NotAtHandover,
    /// Exporting the engine's transport failed.
    Export(sluice_proto::Error),
    /// A socket pair or descriptor for the post-auth process.
    Os(std::io::Error),
    /// The post-auth process could not be started.
    StartPostauth(std::io::Error),
}

impl std::fmt::Display for PrivsepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrivsepError::Wire(e) => write!(f, "{e}"),
            PrivsepError::OutOfTurn(e) => write!(f, "{e}"),
            PrivsepError::Sign(e) => write!(f, "{e}"),
            PrivsepError::Auth(e) => write!(f, "{e}"),
            PrivsepError::UnexpectedRequest => f.write_str("unexpected request"),
            PrivsepError::UnexpectedMessage => f.write_str("unexpected message from the monitor"),
            PrivsepError::UnexpectedAnswer => f.write_str("unexpected answer from the monitor"),
            PrivsepError::ExpectedStart => f.write_str("expected the start message"),
            PrivsepError::ExpectedState => f.write_str("expected the transport state"),
            PrivsepError::HandoverBeforeAuth => f.write_str("handover before authentication"),
            PrivsepError::HandoverTimedOut => f.write_str("handover timed out"),
            PrivsepError::UnexpectedInHandover => f.write_str("unexpected message in the handover"),
            PrivsepError::HandoverState(e) => write!(f, "handover state: {e}"),
            PrivsepError::NoKeyExchange { what } => write!(f, "{what} without a key exchange"),
            PrivsepError::OtherSession => f.write_str("handover state for another session"),
            PrivsepError::OtherUser => f.write_str("handover state names another user"),
            PrivsepError::BadLogLevel => f.write_str("log line with a bad level"),
            PrivsepError::UnknownPty => f.write_str("release of a pty the monitor did not give"),
            PrivsepError::NotAtHandover => f.write_str("the engine is not at the handover point"),
            PrivsepError::Export(e) => write!(f, "{e}"),
            PrivsepError::Os(e) => write!(f, "{e}"),
            PrivsepError::StartPostauth(e) => write!(f, "starting the post-auth process: {e}"),
        }
    }
}

impl std::error::Error for PrivsepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrivsepError::Wire(e) => Some(e),
            PrivsepError::Os(e) | PrivsepError::StartPostauth(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WireError> for PrivsepError {
    fn from(e: WireError) -> Self {
        PrivsepError::Wire(e)
    }
}

impl From<OutOfTurn> for PrivsepError {
    fn from(e: OutOfTurn) -> Self {
        PrivsepError::OutOfTurn(e)
    }
}

impl From<SignRefusal> for PrivsepError {
    fn from(e: SignRefusal) -> Self {
        PrivsepError::Sign(e)
    }
}

impl From<Violation> for PrivsepError {
    fn from(e: Violation) -> Self {
        PrivsepError::Auth(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording() {
        assert_eq!(
            PrivsepError::from(WireError::Closed).to_string(),
            "monitor socket closed"
        );
        assert_eq!(
            PrivsepError::NoKeyExchange { what: "handover" }.to_string(),
            "handover without a key exchange"
        );
        assert_eq!(
            PrivsepError::NoKeyExchange { what: "striping" }.to_string(),
            "striping without a key exchange"
        );
        assert!(matches!(
            PrivsepError::from(SignRefusal::NoSuchKey),
            PrivsepError::Sign(SignRefusal::NoSuchKey)
        ));
    }
}
