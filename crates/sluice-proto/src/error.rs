//! Errors of the protocol engine: one [`Violation`] variant per way a peer can
//! misbehave, so the runtime can log what happened and the disconnect reason
//! sent to the peer matches (RFC 4253 section 11.1).

use crate::crypto::CryptoError;
use crate::wire::{MsgNum, WireError};
use std::fmt;

/// Why a connection ended or an operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The peer broke the protocol; a DISCONNECT has been queued for it.
    Protocol(Violation),
    /// The peer sent DISCONNECT.
    PeerDisconnected {
        /// RFC 4253 11.1 reason code.
        reason: u32,
        /// The peer's description.
        description: String,
    },
    /// We ended the connection on request of the runtime (host key rejected,
    /// authentication given up, ...); a DISCONNECT has been queued.
    LocalDisconnect {
        /// RFC 4253 11.1 reason code.
        reason: u32,
        /// What we told the peer.
        description: String,
    },
    /// The call does not fit the connection's state (a bug in the caller).
    InvalidState(&'static str),
    /// The connection is already closed.
    Closed,
}

/// A protocol violation by the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The identification line is not `SSH-2.0-...` (or `SSH-1.99-`).
    BadVersion(String),
    /// Too much data before the identification line, or a line over 255 bytes.
    VersionTooLong,
    /// A packet length outside the allowed range or not a block multiple.
    BadPacketLength(u32),
    /// padding_length below 4 or past the packet's end.
    BadPadding,
    /// The MAC or AEAD tag did not verify.
    MacFailure,
    /// A field of a message could not be parsed.
    Malformed(MsgNum, WireError),
    /// A packet with no message number (an empty payload).
    EmptyPayload,
    /// A message that is not allowed in the state the connection is in.
    UnexpectedMessage {
        /// The message's number.
        num: MsgNum,
        /// Where the connection was when it arrived.
        state: Phase,
    },
    /// A key-exchange message that may come once per exchange came again
    /// (KEXINIT, the client's public value, a group request).
    RepeatedKexMessage(MsgNum),
    /// NEWKEYS before the exchange's reply was sent or received, or twice.
    NewKeysTooEarly,
    /// Keyboard-interactive (RFC 4256 3.2): an INFO_REQUEST with more
    /// prompts than we answer.
    TooManyPrompts(usize),
    /// Keyboard-interactive (RFC 4256 3.4): an INFO_RESPONSE whose number
    /// of answers differs from the prompts sent.
    WrongAnswerCount {
        /// Prompts we sent.
        prompts: usize,
        /// Answers that came.
        answers: usize,
    },
    /// A USERAUTH_REQUEST while the previous one is still being decided
    /// (RFC 4252 5: a client waits for the answer).
    AuthRequestWhilePending,
    /// CHANNEL_OPEN_CONFIRMATION or _FAILURE for a channel we are not
    /// opening (RFC 4254 5.1).
    ChannelNotOpening {
        /// The message's number (91 or 92).
        num: MsgNum,
        /// Our number of the channel it named.
        channel: u32,
    },
    /// Channel data after the peer's CHANNEL_EOF (RFC 4254 5.3).
    DataAfterEof(u32),
    /// Strict KEX (Terrapin countermeasure): a message other than the key
    /// exchange's own arrived during the initial key exchange.
    StrictKex(MsgNum),
    /// No algorithm both sides support.
    NoCommonAlgorithm {
        /// Which list.
        what: AlgorithmKind,
        /// What we offered.
        ours: String,
        /// What the peer offered.
        theirs: String,
    },
    /// The key exchange's public value from the peer was invalid.
    BadKexValue,
    /// Group exchange: the server's group is not of a size we asked for.
    DhGroupOutOfRange {
        /// Width of the server's p.
        bits: u32,
        /// The smallest we asked for.
        min: u32,
        /// The largest we asked for.
        max: u32,
    },
    /// The server's signature over the exchange hash did not verify.
    BadHostSignature,
    /// The host key changed during a re-key.
    HostKeyChanged,
    /// Data beyond the advertised channel window.
    WindowExceeded(u32),
    /// Data beyond the channel's maximum packet size.
    PacketExceedsMaximum(u32),
    /// A message for a channel that does not exist or is closed.
    UnknownChannel(u32),
    /// Compressed data did not inflate, or inflated past the limit.
    BadCompression,
    /// Too many failed authentication attempts.
    TooManyAuthFailures,
    /// Client: the server takes a wrong KEX guess as its real first packet
    /// (paramiko), so this connection cannot go on; a new one without the
    /// guess works (the client reconnects once by itself).
    KexGuessNotIgnored,
    /// The peer made us queue or answer more than a cap allows.
    Flood(FloodKind),
    /// A user authentication request named another user than the first
    /// (RFC 4252 5: a server that cannot flush its state for the old name
    /// must disconnect; sshd always does).
    UserChanged {
        /// The first request's user.
        from: String,
        /// This request's.
        to: String,
    },
    /// A `publickey-hostbound-v00@openssh.com` request named another host
    /// key than the one of the first key exchange (OpenSSH PROTOCOL 2.5).
    HostboundKeyMismatch,
}

impl Violation {
    /// The RFC 4253 11.1 reason code sent with the DISCONNECT.
    pub fn reason_code(&self) -> u32 {
        use crate::msg::DisconnectReason as R;
        match self {
            Violation::BadVersion(_) | Violation::VersionTooLong => {
                R::PROTOCOL_VERSION_NOT_SUPPORTED.0
            }
            Violation::MacFailure => R::MAC_ERROR.0,
            Violation::NoCommonAlgorithm { .. }
            | Violation::BadKexValue
            | Violation::DhGroupOutOfRange { .. }
            | Violation::BadHostSignature => R::KEY_EXCHANGE_FAILED.0,
            Violation::HostKeyChanged => R::HOST_KEY_NOT_VERIFIABLE.0,
            Violation::BadCompression => R::COMPRESSION_ERROR.0,
            Violation::TooManyAuthFailures => R::NO_MORE_AUTH_METHODS_AVAILABLE.0,
            _ => R::PROTOCOL_ERROR.0,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::BadVersion(v) => write!(f, "bad protocol identification '{v}'"),
            Violation::VersionTooLong => f.write_str("protocol identification too long or missing"),
            Violation::BadPacketLength(n) => write!(f, "bad packet length {n}"),
            Violation::BadPadding => f.write_str("bad padding length"),
            Violation::MacFailure => f.write_str("message authentication code incorrect"),
            Violation::Malformed(m, e) => write!(f, "malformed message {}: {e}", m.0),
            Violation::EmptyPayload => f.write_str("empty packet (no message type)"),
            // ssh says "protocol error: rcvd type %d"; the state says where.
            Violation::UnexpectedMessage { num, state } => {
                write!(f, "unexpected message type {} {state}", num.0)
            }
            Violation::RepeatedKexMessage(m) => {
                write!(f, "message type {} twice in one key exchange", m.0)
            }
            Violation::NewKeysTooEarly => {
                f.write_str("unexpected message type 21 before the exchange completed")
            }
            Violation::TooManyPrompts(n) => {
                write!(f, "keyboard-interactive request with too many prompts ({n})")
            }
            Violation::WrongAnswerCount { prompts, answers } => write!(
                f,
                "keyboard-interactive response with the wrong number of answers ({answers} for {prompts} prompts)"
            ),
            Violation::AuthRequestWhilePending => {
                f.write_str("authentication request while a request is being decided")
            }
            Violation::ChannelNotOpening { num, channel } => write!(
                f,
                "channel {channel}: unexpected message type {} for a channel not being opened",
                num.0
            ),
            Violation::DataAfterEof(c) => write!(f, "channel {c}: data after EOF"),
            Violation::StrictKex(m) => {
                write!(
                    f,
                    "strict KEX violation: unexpected message type {} during initial key exchange",
                    m.0
                )
            }
            Violation::NoCommonAlgorithm { what, ours, theirs } => {
                write!(
                    f,
                    "no matching {what} found. Their offer: {theirs} (ours: {ours})"
                )
            }
            Violation::BadKexValue => f.write_str("invalid key exchange value from peer"),
            // OpenSSH's words, so a log search finds both.
            Violation::DhGroupOutOfRange { bits, min, max } => write!(
                f,
                "DH_GEX group out of range: {min} !< {bits} !< {max} (the server's group is not a size we asked for)"
            ),
            Violation::BadHostSignature => {
                f.write_str("incorrect signature over the exchange hash")
            }
            Violation::HostKeyChanged => f.write_str("server host key changed during re-key"),
            Violation::WindowExceeded(c) => write!(f, "channel {c}: peer ignored channel window"),
            Violation::PacketExceedsMaximum(c) => {
                write!(f, "channel {c}: data packet exceeds maximum size")
            }
            Violation::UnknownChannel(c) => write!(f, "message for unknown channel {c}"),
            Violation::BadCompression => f.write_str("decompression failed"),
            Violation::TooManyAuthFailures => f.write_str("Too many authentication failures"),
            Violation::KexGuessNotIgnored => f.write_str(
                "the server does not ignore a wrong KEX guess (connect with -o KexGuess=no)",
            ),
            Violation::Flood(what) => write!(f, "too many {what}: peer flooding, disconnecting"),
            // sshd's words; the service is always ssh-connection here.
            Violation::UserChanged { from, to } => write!(
                f,
                "Change of username or service not allowed: ({from},ssh-connection) -> ({to},ssh-connection)"
            ),
            Violation::HostboundKeyMismatch => {
                write!(f, "publickey-hostbound-v00@openssh.com packet contained wrong host key")
            }
        }
    }
}

/// Where the connection was when a message arrived that does not belong
/// there ([`Violation::UnexpectedMessage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the peer's KEXINIT, which a strict-KEX peer sends first.
    BeforeKexInit,
    /// A key-exchange method message outside any key exchange (before
    /// the peer's KEXINIT or after NEWKEYS).
    OutsideKex,
    /// During a key exchange, a message its method does not send this way.
    KeyExchange,
    /// Group exchange (RFC 4419): before the group was requested or sent.
    BeforeGroup,
    /// Group exchange: a message the group exchange does not send this way.
    GroupExchange,
    /// An authentication message before the first key exchange finished.
    BeforeKeyExchange,
    /// Client authentication: a message a server does not send now.
    ClientAuth,
    /// Server authentication: a message a client does not send now.
    ServerAuth,
    /// A connection-protocol message before authentication succeeded.
    BeforeAuthentication,
    /// A number in the connection protocol's range (80-127) it does not define.
    Connection,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::BeforeKexInit => "before KEXINIT",
            Phase::OutsideKex => "outside a key exchange",
            Phase::KeyExchange => "during key exchange",
            Phase::BeforeGroup => "before the group exchange's group",
            Phase::GroupExchange => "during group exchange",
            Phase::BeforeKeyExchange => "before key exchange",
            Phase::ClientAuth => "in client authentication",
            Phase::ServerAuth => "in server authentication",
            Phase::BeforeAuthentication => "before authentication",
            Phase::Connection => "unknown to the connection protocol",
        })
    }
}

/// Which algorithm list found no match ([`Violation::NoCommonAlgorithm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgorithmKind {
    /// Key exchange methods.
    Kex,
    /// Host key (signature) algorithms.
    HostKey,
    /// Ciphers, either direction.
    Cipher,
    /// MACs, either direction.
    Mac,
    /// Compression methods, either direction.
    Compression,
}

impl fmt::Display for AlgorithmKind {
    // ssh's words: "no matching cipher found", "no matching MAC found".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AlgorithmKind::Kex => "key exchange method",
            AlgorithmKind::HostKey => "host key type",
            AlgorithmKind::Cipher => "cipher",
            AlgorithmKind::Mac => "MAC",
            AlgorithmKind::Compression => "compression method",
        })
    }
}

/// What a peer made us queue or answer past its cap ([`Violation::Flood`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodKind {
    /// Replies held while a key exchange runs.
    HeldDuringKex,
    /// Replies queued for sending faster than they go out.
    QueuedForSending,
    /// UNIMPLEMENTED answers to unknown message numbers before authentication.
    UnknownBeforeAuth,
    /// UNIMPLEMENTED answers to connection messages before authentication.
    ConnectionBeforeAuth,
}

impl fmt::Display for FloodKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FloodKind::HeldDuringKex => "replies held during key exchange",
            FloodKind::QueuedForSending => "replies queued for sending",
            FloodKind::UnknownBeforeAuth => "unknown messages before authentication",
            FloodKind::ConnectionBeforeAuth => "connection messages before authentication",
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Protocol(v) => v.fmt(f),
            Error::PeerDisconnected {
                reason,
                description,
            } => {
                write!(f, "disconnected by peer ({reason}): {description}")
            }
            Error::LocalDisconnect { description, .. } => f.write_str(description),
            Error::InvalidState(s) => write!(f, "invalid state: {s}"),
            Error::Closed => f.write_str("connection closed"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Violation> for Error {
    fn from(v: Violation) -> Self {
        Error::Protocol(v)
    }
}

impl From<CryptoError> for Error {
    fn from(_: CryptoError) -> Self {
        Error::Protocol(Violation::MacFailure)
    }
}
