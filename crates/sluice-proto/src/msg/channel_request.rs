//! SSH_MSG_CHANNEL_REQUEST (RFC 4254 sections 5.4 and 6.2-6.10) with the
//! request types of RFC 4254 6 and `break` (RFC 4335). Known types are
//! decoded strictly (no trailing bytes); unknown ones keep their
//! type-specific fields raw, as RFC 4254 5.4 leaves them to the type.

use super::{blob, reader, text};
use crate::wire::{MsgNum, WireError, Writer};

/// A channel request type and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelRequestKind {
    /// `pty-req` (RFC 4254 6.2).
    PtyReq {
        /// TERM environment value, e.g. `xterm-256color`.
        term: String,
        /// Width in characters.
        cols: u32,
        /// Height in rows.
        rows: u32,
        /// Width in pixels.
        width_px: u32,
        /// Height in pixels.
        height_px: u32,
        /// Encoded terminal modes (RFC 4254 8), raw.
        modes: Vec<u8>,
    },
    /// `x11-req` (RFC 4254 6.3.1).
    X11Req {
        /// Forward only one connection.
        single_connection: bool,
        /// X11 authentication protocol, e.g. `MIT-MAGIC-COOKIE-1`.
        auth_protocol: String,
        /// Authentication cookie, hexadecimal text.
        auth_cookie: String,
        /// X11 screen number.
        screen: u32,
    },
    /// `env` (RFC 4254 6.4).
    Env {
        /// Variable name.
        name: String,
        /// Variable value: bytes, as environment values need not be UTF-8.
        value: Vec<u8>,
    },
    /// `shell` (RFC 4254 6.5).
    Shell,
    /// `exec` (RFC 4254 6.5).
    Exec {
        /// The command line: bytes, as commands need not be UTF-8.
        command: Vec<u8>,
    },
    /// `subsystem` (RFC 4254 6.5).
    Subsystem {
        /// Subsystem name, e.g. `sftp`.
        name: String,
    },
    /// `window-change` (RFC 4254 6.7).
    WindowChange {
        /// Width in characters.
        cols: u32,
        /// Height in rows.
        rows: u32,
        /// Width in pixels.
        width_px: u32,
        /// Height in pixels.
        height_px: u32,
    },
    /// `xon-xoff` (RFC 4254 6.8).
    XonXoff {
        /// The client may do flow control itself.
        client_can_do: bool,
    },
    /// `signal` (RFC 4254 6.9).
    Signal {
        /// Signal name without `SIG`, e.g. `TERM`.
        name: String,
    },
    /// `exit-status` (RFC 4254 6.10).
    ExitStatus {
        /// Exit status of the command.
        status: u32,
    },
    /// `exit-signal` (RFC 4254 6.10).
    ExitSignal {
        /// Signal name without `SIG`.
        signal: String,
        /// A core dump was written.
        core_dumped: bool,
        /// Error message (UTF-8).
        message: String,
        /// Language tag, usually empty.
        language: String,
    },
    /// `break` (RFC 4335 3).
    Break {
        /// Break length in milliseconds.
        ms: u32,
    },
    /// Any other request type: its fields undecoded.
    Other {
        /// Request type name.
        name: String,
        /// Type-specific data: the rest of the payload.
        data: Vec<u8>,
    },
}

impl ChannelRequestKind {
    /// The request type as on the wire.
    pub fn name(&self) -> &str {
        match self {
            ChannelRequestKind::PtyReq { .. } => "pty-req",
            ChannelRequestKind::X11Req { .. } => "x11-req",
            ChannelRequestKind::Env { .. } => "env",
            ChannelRequestKind::Shell => "shell",
            ChannelRequestKind::Exec { .. } => "exec",
            ChannelRequestKind::Subsystem { .. } => "subsystem",
            ChannelRequestKind::WindowChange { .. } => "window-change",
            ChannelRequestKind::XonXoff { .. } => "xon-xoff",
            ChannelRequestKind::Signal { .. } => "signal",
            ChannelRequestKind::ExitStatus { .. } => "exit-status",
            ChannelRequestKind::ExitSignal { .. } => "exit-signal",
            ChannelRequestKind::Break { .. } => "break",
            ChannelRequestKind::Other { name, .. } => name,
        }
    }
}

/// SSH_MSG_CHANNEL_REQUEST (RFC 4254 5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRequest {
    /// The receiver's channel number.
    pub recipient_channel: u32,
    /// The sender wants CHANNEL_SUCCESS / CHANNEL_FAILURE.
    pub want_reply: bool,
    /// Request type and fields.
    pub request: ChannelRequestKind,
}

impl ChannelRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        use ChannelRequestKind as K;
        let mut r = reader(payload, MsgNum::CHANNEL_REQUEST)?;
        let recipient_channel = r.u32()?;
        let name = text(&mut r)?;
        let want_reply = r.bool()?;
        let request = match name.as_str() {
            "pty-req" => K::PtyReq {
                term: text(&mut r)?,
                cols: r.u32()?,
                rows: r.u32()?,
                width_px: r.u32()?,
                height_px: r.u32()?,
                modes: blob(&mut r)?,
            },
            "x11-req" => K::X11Req {
                single_connection: r.bool()?,
                auth_protocol: text(&mut r)?,
                auth_cookie: text(&mut r)?,
                screen: r.u32()?,
            },
            "env" => K::Env {
                name: text(&mut r)?,
                value: blob(&mut r)?,
            },
            "shell" => K::Shell,
            "exec" => K::Exec {
                command: blob(&mut r)?,
            },
            "subsystem" => K::Subsystem {
                name: text(&mut r)?,
            },
            "window-change" => K::WindowChange {
                cols: r.u32()?,
                rows: r.u32()?,
                width_px: r.u32()?,
                height_px: r.u32()?,
            },
            "xon-xoff" => K::XonXoff {
                client_can_do: r.bool()?,
            },
            "signal" => K::Signal {
                name: text(&mut r)?,
            },
            "exit-status" => K::ExitStatus { status: r.u32()? },
            "exit-signal" => K::ExitSignal {
                signal: text(&mut r)?,
                core_dumped: r.bool()?,
                message: text(&mut r)?,
                language: text(&mut r)?,
            },
            "break" => K::Break { ms: r.u32()? },
            _ => K::Other {
                name,
                data: r.bytes(r.remaining().len())?.to_vec(),
            },
        };
        r.finish()?;
        Ok(ChannelRequest {
            recipient_channel,
            want_reply,
            request,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        use ChannelRequestKind as K;
        let mut w = Writer::new(out);
        w.u8(MsgNum::CHANNEL_REQUEST.0)
            .u32(self.recipient_channel)
            .utf8(self.request.name())
            .bool(self.want_reply);
        match &self.request {
            K::PtyReq {
                term,
                cols,
                rows,
                width_px,
                height_px,
                modes,
            } => {
                w.utf8(term)
                    .u32(*cols)
                    .u32(*rows)
                    .u32(*width_px)
                    .u32(*height_px)
                    .string(modes);
            }
            K::X11Req {
                single_connection,
                auth_protocol,
                auth_cookie,
                screen,
            } => {
                w.bool(*single_connection)
                    .utf8(auth_protocol)
                    .utf8(auth_cookie)
                    .u32(*screen);
            }
            K::Env { name, value } => {
                w.utf8(name).string(value);
            }
            K::Shell => {}
            K::Exec { command } => {
                w.string(command);
            }
            K::Subsystem { name } | K::Signal { name } => {
                w.utf8(name);
            }
            K::WindowChange {
                cols,
                rows,
                width_px,
                height_px,
            } => {
                w.u32(*cols).u32(*rows).u32(*width_px).u32(*height_px);
            }
            K::XonXoff { client_can_do } => {
                w.bool(*client_can_do);
            }
            K::ExitStatus { status: v } | K::Break { ms: v } => {
                w.u32(*v);
            }
            K::ExitSignal {
                signal,
                core_dumped,
                message,
                language,
            } => {
                w.utf8(signal)
                    .bool(*core_dumped)
                    .utf8(message)
                    .utf8(language);
            }
            K::Other { data, .. } => {
                w.bytes(data);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_known_bytes_and_non_utf8_command() {
        let m = ChannelRequest {
            recipient_channel: 0,
            want_reply: true,
            request: ChannelRequestKind::Exec {
                command: vec![b'l', b's', b' ', 0xff],
            },
        };
        let mut v = Vec::new();
        m.encode(&mut v);
        let mut want = vec![98, 0, 0, 0, 0, 0, 0, 0, 4];
        want.extend_from_slice(b"exec");
        want.extend_from_slice(&[1, 0, 0, 0, 4, b'l', b's', b' ', 0xff]);
        assert_eq!(v, want);
        assert_eq!(ChannelRequest::decode(&v).unwrap(), m);
    }

    #[test]
    fn shell_with_trailing_bytes_is_rejected() {
        let mut v = Vec::new();
        ChannelRequest {
            recipient_channel: 7,
            want_reply: false,
            request: ChannelRequestKind::Shell,
        }
        .encode(&mut v);
        v.push(0);
        assert_eq!(ChannelRequest::decode(&v), Err(WireError::TrailingData));
    }
}
