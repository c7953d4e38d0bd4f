//! Connection protocol messages (RFC 4254 sections 4, 5.1-5.4, 7.1-7.2):
//! global requests, channel open / confirmation / failure, window adjust,
//! EOF, CLOSE, and the request replies, plus the `direct-tcpip` and
//! `forwarded-tcpip` channel-open data. Channel requests are in
//! `channel_request`; CHANNEL_DATA and EXTENDED_DATA take the fast path
//! elsewhere. GLOBAL_REQUEST, REQUEST_SUCCESS, CHANNEL_OPEN and
//! OPEN_CONFIRMATION end in type-specific data (RFC 4254 4, 5.1), kept raw
//! in `data`; the other messages allow no trailing bytes.

use super::{reader, text};
use crate::wire::{MsgNum, Reader, WireError, Writer};

/// The rest of the payload, raw (type-specific data).
fn rest(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    r.bytes(r.remaining().len()).map(<[u8]>::to_vec)
}

/// SSH_MSG_GLOBAL_REQUEST (RFC 4254 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalRequest {
    /// Request name, e.g. `tcpip-forward` or `keepalive@openssh.com`.
    pub name: String,
    /// The sender wants REQUEST_SUCCESS / REQUEST_FAILURE.
    pub want_reply: bool,
    /// Request-specific data: the rest of the payload.
    pub data: Vec<u8>,
}

impl GlobalRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::GLOBAL_REQUEST)?;
        Ok(GlobalRequest {
            name: text(&mut r)?,
            want_reply: r.bool()?,
            data: rest(&mut r)?,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::GLOBAL_REQUEST.0)
            .utf8(&self.name)
            .bool(self.want_reply)
            .bytes(&self.data);
    }
}

/// SSH_MSG_REQUEST_SUCCESS (RFC 4254 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSuccess {
    /// Response-specific data (e.g. the bound port): the rest of the payload.
    pub data: Vec<u8>,
}

impl RequestSuccess {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::REQUEST_SUCCESS)?;
        Ok(RequestSuccess {
            data: rest(&mut r)?,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::REQUEST_SUCCESS.0)
            .bytes(&self.data);
    }
}

/// SSH_MSG_REQUEST_FAILURE (RFC 4254 4): no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestFailure;

impl RequestFailure {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        reader(payload, MsgNum::REQUEST_FAILURE)?.finish()?;
        Ok(RequestFailure)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(MsgNum::REQUEST_FAILURE.0);
    }
}

/// SSH_MSG_CHANNEL_OPEN (RFC 4254 5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelOpen {
    /// Channel type, e.g. `session` or `direct-tcpip`.
    pub channel_type: String,
    /// The sender's channel number.
    pub sender_channel: u32,
    /// Initial window the sender grants.
    pub initial_window: u32,
    /// Largest data packet the sender accepts.
    pub max_packet: u32,
    /// Channel-type-specific data: the rest of the payload (see [`DirectTcpip`]).
    pub data: Vec<u8>,
}

impl ChannelOpen {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::CHANNEL_OPEN)?;
        Ok(ChannelOpen {
            channel_type: text(&mut r)?,
            sender_channel: r.u32()?,
            initial_window: r.u32()?,
            max_packet: r.u32()?,
            data: rest(&mut r)?,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::CHANNEL_OPEN.0)
            .utf8(&self.channel_type)
            .u32(self.sender_channel)
            .u32(self.initial_window)
            .u32(self.max_packet)
            .bytes(&self.data);
    }
}

/// SSH_MSG_CHANNEL_OPEN_CONFIRMATION (RFC 4254 5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelOpenConfirmation {
    /// Our channel number, from the CHANNEL_OPEN.
    pub recipient_channel: u32,
    /// The sender's channel number.
    pub sender_channel: u32,
    /// Initial window the sender grants.
    pub initial_window: u32,
    /// Largest data packet the sender accepts.
    pub max_packet: u32,
    /// Channel-type-specific data: the rest of the payload (empty for all
    /// types defined so far).
    pub data: Vec<u8>,
}

impl ChannelOpenConfirmation {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::CHANNEL_OPEN_CONFIRMATION)?;
        Ok(ChannelOpenConfirmation {
            recipient_channel: r.u32()?,
            sender_channel: r.u32()?,
            initial_window: r.u32()?,
            max_packet: r.u32()?,
            data: rest(&mut r)?,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::CHANNEL_OPEN_CONFIRMATION.0)
            .u32(self.recipient_channel)
            .u32(self.sender_channel)
            .u32(self.initial_window)
            .u32(self.max_packet)
            .bytes(&self.data);
    }
}

/// SSH_MSG_CHANNEL_OPEN_FAILURE (RFC 4254 5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelOpenFailure {
    /// Our channel number, from the CHANNEL_OPEN.
    pub recipient_channel: u32,
    /// Reason code; see [`super::ChannelOpenFailureReason`].
    pub reason_code: u32,
    /// Human-readable description (UTF-8).
    pub description: String,
    /// Language tag, usually empty.
    pub language: String,
}

impl ChannelOpenFailure {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::CHANNEL_OPEN_FAILURE)?;
        let m = ChannelOpenFailure {
            recipient_channel: r.u32()?,
            reason_code: r.u32()?,
            description: text(&mut r)?,
            language: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::CHANNEL_OPEN_FAILURE.0)
            .u32(self.recipient_channel)
            .u32(self.reason_code)
            .utf8(&self.description)
            .utf8(&self.language);
    }
}

/// SSH_MSG_CHANNEL_WINDOW_ADJUST (RFC 4254 5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelWindowAdjust {
    /// The receiver's channel number.
    pub recipient_channel: u32,
    /// Bytes added to the window.
    pub bytes_to_add: u32,
}

impl ChannelWindowAdjust {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::CHANNEL_WINDOW_ADJUST)?;
        let m = ChannelWindowAdjust {
            recipient_channel: r.u32()?,
            bytes_to_add: r.u32()?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::CHANNEL_WINDOW_ADJUST.0)
            .u32(self.recipient_channel)
            .u32(self.bytes_to_add);
    }
}

/// Messages whose only field is the recipient channel.
macro_rules! channel_only {
    ($($(#[$doc:meta])* $name:ident = $num:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            /// The receiver's channel number.
            pub recipient_channel: u32,
        }

        impl $name {
            /// Decodes a whole payload.
            pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
                let mut r = reader(payload, MsgNum::$num)?;
                let m = $name { recipient_channel: r.u32()? };
                r.finish()?;
                Ok(m)
            }

            /// Appends the payload to `out`.
            pub fn encode(&self, out: &mut Vec<u8>) {
                Writer::new(out).u8(MsgNum::$num.0).u32(self.recipient_channel);
            }
        }
    )*};
}

channel_only! {
    /// SSH_MSG_CHANNEL_EOF (RFC 4254 5.3).
    ChannelEof = CHANNEL_EOF;
    /// SSH_MSG_CHANNEL_CLOSE (RFC 4254 5.3).
    ChannelClose = CHANNEL_CLOSE;
    /// SSH_MSG_CHANNEL_SUCCESS (RFC 4254 5.4).
    ChannelSuccess = CHANNEL_SUCCESS;
    /// SSH_MSG_CHANNEL_FAILURE (RFC 4254 5.4).
    ChannelFailure = CHANNEL_FAILURE;
}

/// Channel-open data of a TCP/IP forwarding channel (RFC 4254 7.1-7.2):
/// both types share one layout, with different meanings of `host`.
macro_rules! tcpip_open_data {
    ($($(#[$doc:meta])* $name:ident = $ty:literal, $host_doc:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            #[doc = $host_doc]
            pub host: String,
            /// Port for `host`.
            pub port: u32,
            /// Address of the connection's originator.
            pub originator_host: String,
            /// Port of the connection's originator.
            pub originator_port: u32,
        }

        impl $name {
            /// The channel type name.
            pub const TYPE: &'static str = $ty;

            /// Decodes the `data` of a [`ChannelOpen`] of this type.
            pub fn decode(data: &[u8]) -> Result<Self, WireError> {
                let mut r = Reader::new(data);
                let m = $name {
                    host: text(&mut r)?,
                    port: r.u32()?,
                    originator_host: text(&mut r)?,
                    originator_port: r.u32()?,
                };
                r.finish()?;
                Ok(m)
            }

            /// Appends the channel-open data (not a whole message) to `out`.
            pub fn encode(&self, out: &mut Vec<u8>) {
                Writer::new(out).utf8(&self.host).u32(self.port).utf8(&self.originator_host).u32(self.originator_port);
            }
        }
    )*};
}

tcpip_open_data! {
    /// `direct-tcpip` open data (RFC 4254 7.2): a client asks the server to connect.
    DirectTcpip = "direct-tcpip", "Host to connect to.";
    /// `forwarded-tcpip` open data (RFC 4254 7.2): a connection arrived on a forwarded port.
    ForwardedTcpip = "forwarded-tcpip", "Address that was connected (the forwarded one).";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_tcpip_inside_channel_open() {
        let d = DirectTcpip {
            host: "example.org".into(),
            port: 443,
            originator_host: "127.0.0.1".into(),
            originator_port: 50000,
        };
        let mut data = Vec::new();
        d.encode(&mut data);
        let o = ChannelOpen {
            channel_type: DirectTcpip::TYPE.into(),
            sender_channel: 3,
            initial_window: 1 << 21,
            max_packet: 32768,
            data,
        };
        let mut v = Vec::new();
        o.encode(&mut v);
        let back = ChannelOpen::decode(&v).unwrap();
        assert_eq!(back, o);
        assert_eq!(DirectTcpip::decode(&back.data).unwrap(), d);
        assert_eq!(
            ForwardedTcpip::decode(&back.data[..back.data.len() - 1]),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn window_adjust_known_bytes() {
        let mut v = Vec::new();
        ChannelWindowAdjust {
            recipient_channel: 1,
            bytes_to_add: 0x0102_0304,
        }
        .encode(&mut v);
        assert_eq!(v, [93, 0, 0, 0, 1, 1, 2, 3, 4]);
        assert_eq!(ChannelEof::decode(&v), Err(WireError::BadValue));
    }
}
