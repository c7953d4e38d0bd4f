//! Typed SSH control messages with strict decoding (RFC 4253 sections 7 and
//! 10-11, RFC 4252, RFC 4254, RFC 4256, RFC 4335, RFC 5656 section 4,
//! RFC 8308), plus the reason codes of RFC 4253 11.1 and RFC 4254 5.1.
//!
//! Every message is a struct with owned fields and two methods:
//! `decode(payload)` takes a whole payload starting with the message number
//! (a wrong number is [`WireError::BadValue`]), reads every field through
//! [`Reader`] and rejects trailing bytes, except where the RFC lets the rest
//! of the message carry type-specific data (those fields are named `data`);
//! `encode(&self, out)` appends the message number and the fields to `out`.
//!
//! Text fields the RFCs define as UTF-8 are `String` (invalid UTF-8 is
//! [`WireError::BadUtf8`]), binary strings are `Vec<u8>`, name-lists are
//! `Vec<String>`. Encoding a name-list that holds an empty name or a comma
//! produces bytes the peer (and our own decoder) will reject.
//!
//! CHANNEL_DATA and CHANNEL_EXTENDED_DATA are not here: they take a separate
//! zero-copy path. NEWKEYS, REQUEST_FAILURE and USERAUTH_SUCCESS carry no
//! fields but still have types so that decoding checks them.

mod channel_request;
mod connection;
mod hostkeys;
mod kex;
mod path_info;
mod transport;
mod userauth;
mod userauth_kbdint;

#[cfg(test)]
mod tests;

pub use channel_request::{ChannelRequest, ChannelRequestKind};
pub use connection::{
    ChannelClose, ChannelEof, ChannelFailure, ChannelOpen, ChannelOpenConfirmation,
    ChannelOpenFailure, ChannelSuccess, ChannelWindowAdjust, DirectTcpip, ForwardedTcpip,
    GlobalRequest, RequestFailure, RequestSuccess,
};
pub use hostkeys::{prove_signed_data, HostKeyList, HOSTKEYS, HOSTKEYS_PROVE, MAX_HOST_KEYS};
pub use kex::{
    KexDhGexGroup, KexDhGexInit, KexDhGexReply, KexDhGexRequest, KexEcdhInit, KexEcdhReply,
    KexInit, NewKeys,
};
pub use path_info::{PathFigures, MAX_FIGURE_NAME, MAX_PATH_FIGURES, PATH_INFO_REQUEST};
pub use transport::{
    Debug, Disconnect, ExtInfo, Ignore, ServiceAccept, ServiceRequest, Unimplemented,
};
pub use userauth::{
    publickey_signed_data, AuthMethod, UserauthBanner, UserauthFailure, UserauthPkOk,
    UserauthRequest, UserauthSuccess, HOSTBOUND_EXTENSION, PUBLICKEY_HOSTBOUND,
};
pub use userauth_kbdint::{
    Prompt, UserauthInfoRequest, UserauthInfoResponse, UserauthPasswdChangereq,
};

use crate::wire::{MsgNum, Reader, WireError};

/// The message number of a payload (its first byte), or `None` if empty.
pub fn msg_num(payload: &[u8]) -> Option<MsgNum> {
    payload.first().map(|&b| MsgNum(b))
}

/// A reader positioned after the message number, which must be `num`.
fn reader(payload: &[u8], num: MsgNum) -> Result<Reader<'_>, WireError> {
    let mut r = Reader::new(payload);
    if r.u8()? != num.0 {
        return Err(WireError::BadValue);
    }
    Ok(r)
}

/// A UTF-8 `string` as an owned `String`.
fn text(r: &mut Reader<'_>) -> Result<String, WireError> {
    r.utf8().map(str::to_owned)
}

/// A binary `string` as an owned `Vec<u8>`.
fn blob(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    r.string().map(<[u8]>::to_vec)
}

/// A `name-list` as owned names (validated by [`Reader::name_list`]).
fn names(r: &mut Reader<'_>) -> Result<Vec<String>, WireError> {
    Ok(r.name_list()?.iter().map(str::to_owned).collect())
}

/// A DISCONNECT reason code (RFC 4253 section 11.1). Unknown codes keep
/// their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DisconnectReason(pub u32);

#[allow(missing_docs)]
impl DisconnectReason {
    pub const HOST_NOT_ALLOWED_TO_CONNECT: DisconnectReason = DisconnectReason(1);
    pub const PROTOCOL_ERROR: DisconnectReason = DisconnectReason(2);
    pub const KEY_EXCHANGE_FAILED: DisconnectReason = DisconnectReason(3);
    pub const RESERVED: DisconnectReason = DisconnectReason(4);
    pub const MAC_ERROR: DisconnectReason = DisconnectReason(5);
    pub const COMPRESSION_ERROR: DisconnectReason = DisconnectReason(6);
    pub const SERVICE_NOT_AVAILABLE: DisconnectReason = DisconnectReason(7);
    pub const PROTOCOL_VERSION_NOT_SUPPORTED: DisconnectReason = DisconnectReason(8);
    pub const HOST_KEY_NOT_VERIFIABLE: DisconnectReason = DisconnectReason(9);
    pub const CONNECTION_LOST: DisconnectReason = DisconnectReason(10);
    pub const BY_APPLICATION: DisconnectReason = DisconnectReason(11);
    pub const TOO_MANY_CONNECTIONS: DisconnectReason = DisconnectReason(12);
    pub const AUTH_CANCELLED_BY_USER: DisconnectReason = DisconnectReason(13);
    pub const NO_MORE_AUTH_METHODS_AVAILABLE: DisconnectReason = DisconnectReason(14);
    pub const ILLEGAL_USER_NAME: DisconnectReason = DisconnectReason(15);
}

impl DisconnectReason {
    /// A short English description, for logs.
    pub fn description(self) -> &'static str {
        match self.0 {
            1 => "host not allowed to connect",
            2 => "protocol error",
            3 => "key exchange failed",
            4 => "reserved",
            5 => "MAC error",
            6 => "compression error",
            7 => "service not available",
            8 => "protocol version not supported",
            9 => "host key not verifiable",
            10 => "connection lost",
            11 => "disconnected by application",
            12 => "too many connections",
            13 => "authentication cancelled by user",
            14 => "no more authentication methods available",
            15 => "illegal user name",
            _ => "unknown reason",
        }
    }
}

/// A CHANNEL_OPEN_FAILURE reason code (RFC 4254 section 5.1). Unknown codes
/// keep their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelOpenFailureReason(pub u32);

#[allow(missing_docs)]
impl ChannelOpenFailureReason {
    pub const ADMINISTRATIVELY_PROHIBITED: ChannelOpenFailureReason = ChannelOpenFailureReason(1);
    pub const CONNECT_FAILED: ChannelOpenFailureReason = ChannelOpenFailureReason(2);
    pub const UNKNOWN_CHANNEL_TYPE: ChannelOpenFailureReason = ChannelOpenFailureReason(3);
    pub const RESOURCE_SHORTAGE: ChannelOpenFailureReason = ChannelOpenFailureReason(4);
}

impl ChannelOpenFailureReason {
    /// A short English description, for logs.
    pub fn description(self) -> &'static str {
        match self.0 {
            1 => "administratively prohibited",
            2 => "connect failed",
            3 => "unknown channel type",
            4 => "resource shortage",
            _ => "unknown reason",
        }
    }
}
