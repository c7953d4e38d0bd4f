//! Channel striping, `stripe-v00@sluice.dev` (PROTOCOL.md, "Channel
//! striping"): one channel's data over several connections between sluice
//! peers, as plain data structures the runtime drives.
//!
//! - [`token`]: the join key and the proof a secondary connection shows
//!   instead of user authentication; the server's single-use bookkeeping.
//! - [`codec`]: strict decode and encode of the request, grant, join
//!   method, carrier open, chunk and acknowledgement data.
//! - [`send`]: the sender: a byte stream cut into chunks, handed to
//!   whichever carrier has room, kept until acknowledged, sent again when
//!   a carrier is lost; bounded.
//! - [`reassemble`]: the receiver: chunks back in order within a fixed
//!   budget, a byte-exact stream out, acknowledgements.
//!
//! Nothing here has sockets, clocks or randomness: random join secrets and
//! session references come from the caller. The engine's part is small:
//! the client's join request goes through
//! [`crate::Connection::auth_stripe_join`], the server's comes out as
//! [`crate::Event::StripeJoinRequest`] after
//! [`crate::Connection::enable_stripe_join`]; global and channel requests,
//! carrier opens and chunk data use the engine's generic paths.

pub mod codec;
pub mod reassemble;
pub mod send;
pub mod token;

mod engine;

/// The global request and the channel request that stripe a channel.
pub const STRIPE_REQUEST: &str = "stripe-v00@sluice.dev";
/// The user authentication method of a secondary connection.
pub const JOIN_METHOD: &str = "stripe-join-v00@sluice.dev";
/// The channel type that carries chunks.
pub const CARRIER_CHANNEL: &str = "stripe-carrier-v00@sluice.dev";
/// The channel request that acknowledges chunks.
pub const ACK_REQUEST: &str = "stripe-ack-v00@sluice.dev";

/// Most secondary connections a client may ask for.
pub const MAX_SECONDARIES: u32 = 255;
/// Most chunks a sender keeps unacknowledged, and most separate ranges a
/// receiver holds out of order: bounds the receiver's bookkeeping however
/// small the chunks.
pub const MAX_UNACKED_CHUNKS: usize = 1024;
/// Most data sluice puts in one chunk: big enough that the 8-byte header
/// costs nothing and that [`MAX_UNACKED_CHUNKS`] of them cover a long fast
/// path (128 MiB), small enough to spread well over several connections
/// and to fit a carrier's packet (sluice's are 255 KiB; a smaller slot
/// cuts the chunk).
pub const DEFAULT_CHUNK: usize = 128 * 1024;
/// Most of a stream's first bytes a client sends as plain data on the
/// striped channel before its first chunk (PROTOCOL.md): what TCP moves in
/// the round trip before the carrier is confirmed, many times over; a
/// reassembly budget is never smaller.
pub const PLAIN_MAX: u64 = 4 << 20;
/// Bytes of the chunk header (the offset).
pub const CHUNK_HEADER: usize = 8;

/// A way the peer broke the striping protocol: the runtime ends the
/// session with a protocol error (RFC 4253 11.1 reason 2) and this text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StripeError {
    /// A field did not decode (what it was).
    Malformed(&'static str),
    /// A chunk reaches past the limit the receiver announced.
    BeyondLimit,
    /// Bytes received again differ from those held for the same offsets.
    InconsistentOverlap,
    /// More separate ranges out of order than [`MAX_UNACKED_CHUNKS`].
    TooManyRanges,
    /// A chunk after the sender's EOF, or EOF with data still out of order.
    AfterEof,
    /// EOF while bytes before the end are missing.
    EofWithGap,
    /// An acknowledgement that goes backwards, passes its limit or
    /// acknowledges bytes never sent.
    BadAck,
    /// A chunk offset plus length overflows 64 bits.
    OffsetOverflow,
}

impl std::fmt::Display for StripeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StripeError::Malformed(what) => write!(f, "striping: malformed {what}"),
            StripeError::BeyondLimit => {
                f.write_str("striping: peer sent a chunk past the reassembly limit")
            }
            StripeError::InconsistentOverlap => {
                f.write_str("striping: peer re-sent bytes that differ from the first copy")
            }
            StripeError::TooManyRanges => {
                f.write_str("striping: peer left too many ranges out of order")
            }
            StripeError::AfterEof => f.write_str("striping: chunk after end of data"),
            StripeError::EofWithGap => f.write_str("striping: end of data with bytes missing"),
            StripeError::BadAck => f.write_str("striping: invalid acknowledgement"),
            StripeError::OffsetOverflow => f.write_str("striping: chunk offset overflows"),
        }
    }
}

impl std::error::Error for StripeError {}

impl StripeError {
    /// The RFC 4253 11.1 reason code to disconnect with.
    pub fn reason_code(self) -> u32 {
        crate::msg::DisconnectReason::PROTOCOL_ERROR.0
    }
}
