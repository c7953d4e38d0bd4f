//! Global requests (RFC 4254 4) and sluice's own, `sockbuf-v00@sluice.dev`
//! (RemoteRcvBuf, PROTOCOL.md): the client asks the server to size the
//! server's socket buffers for this connection, so pushing data to a server
//! can be as fast as pulling from it. The runtime owns the sockets, so the
//! engine only carries the question and the answer.
//!
//! Replies to global requests must come in the order of the requests
//! (RFC 4254 4). A sockbuf request waits for the runtime's answer, so later
//! replies queue behind it. The client's `hostkeys-prove-00@openssh.com`
//! (OpenSSH PROTOCOL 2.5, codecs in msg/hostkeys.rs) gets its reply decoded
//! here, as [`Event::HostKeysProof`]; so does the client's
//! `path-info-v00@sluice.dev` (PROTOCOL.md, codec in msg/path_info.rs), as
//! [`Event::PathInfoReply`]. A server gets that one as an ordinary
//! [`Event::GlobalRequest`] after authentication (never before: those are
//! answered FAILURE here unread) and answers with `answer_global`.

use crate::core::Connection;
use crate::error::{Error, Violation};
use crate::event::Event;
use crate::msg;
use crate::wire::{MsgNum, Reader, WireError, Writer};
use std::collections::VecDeque;

/// The request's name.
pub const SOCKBUF_REQUEST: &str = "sockbuf-v00@sluice.dev";

/// A reply we owe, in request order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owed {
    /// Ready to send (a whole payload).
    Ready(Vec<u8>),
    /// A sockbuf request the runtime has not answered yet.
    SockBuf,
    /// Another request the runtime has not answered yet
    /// ([`Event::GlobalRequest`]).
    Waiting,
}

/// One of our requests that wants a reply: what its reply becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    /// [`Event::GlobalReply`], naming the request it answers.
    Other(String),
    /// [`Event::SockBufReply`].
    SockBuf,
    /// [`Event::HostKeysProof`].
    HostKeysProve,
    /// [`Event::PathInfoReply`].
    PathInfo,
}

/// Global request bookkeeping, both directions.
#[derive(Debug, Default)]
pub(crate) struct Globals {
    owed: VecDeque<Owed>,
    /// Our requests that want a reply, oldest first.
    asked: VecDeque<Asked>,
}

/// Sizes in a sockbuf request or reply: receive then send buffer, bytes.
fn encode_sizes(out: &mut Vec<u8>, rcv: u64, snd: u64) {
    Writer::new(out).u64(rcv).u64(snd);
}

fn decode_sizes(data: &[u8]) -> Result<(u64, u64), WireError> {
    let mut r = Reader::new(data);
    let sizes = (r.u64()?, r.u64()?);
    r.finish()?;
    Ok(sizes)
}

impl Connection {
    /// Handles GLOBAL_REQUEST, REQUEST_SUCCESS and REQUEST_FAILURE.
    pub(crate) fn handle_global(&mut self, num: MsgNum, payload: &[u8]) -> Result<(), Error> {
        let bad = |e: WireError| Error::Protocol(Violation::Malformed(num, e));
        if num == MsgNum::GLOBAL_REQUEST {
            let r = msg::GlobalRequest::decode(payload).map_err(bad)?;
            let sockbuf = r.name == SOCKBUF_REQUEST && self.role == crate::core::Role::Server;
            if sockbuf {
                let (rcvbuf, sndbuf) = decode_sizes(&r.data).map_err(bad)?;
                self.events
                    .push_back(Event::SockBufRequest { rcvbuf, sndbuf });
            } else if self.auth.authenticated {
                // Forwarding, keepalives, no-more-sessions: the runtime
                // decides, and answers with `answer_global` if asked to.
                self.events.push_back(Event::GlobalRequest {
                    name: r.name,
                    want_reply: r.want_reply,
                    data: r.data,
                });
            }
            if r.want_reply {
                self.globals.owed.push_back(if sockbuf {
                    Owed::SockBuf
                } else if self.auth.authenticated {
                    Owed::Waiting
                } else {
                    Owed::Ready(vec![MsgNum::REQUEST_FAILURE.0])
                });
                self.send_owed_replies();
            }
            return Ok(());
        }
        // A reply to one of ours; one we did not ask for is ignored, as
        // OpenSSH does.
        let Some(asked) = self.globals.asked.pop_front() else {
            return Ok(());
        };
        if asked == Asked::SockBuf {
            let granted = if num == MsgNum::REQUEST_SUCCESS {
                let s = msg::RequestSuccess::decode(payload).map_err(bad)?;
                Some(decode_sizes(&s.data).map_err(bad)?)
            } else {
                None
            };
            self.events.push_back(Event::SockBufReply(granted));
        } else if asked == Asked::HostKeysProve {
            let signatures = if num == MsgNum::REQUEST_SUCCESS {
                let s = msg::RequestSuccess::decode(payload).map_err(bad)?;
                Some(msg::HostKeyList::decode(&s.data).map_err(bad)?.items)
            } else {
                None
            };
            self.events.push_back(Event::HostKeysProof(signatures));
        } else if asked == Asked::PathInfo {
            let figures = if num == MsgNum::REQUEST_SUCCESS {
                let s = msg::RequestSuccess::decode(payload).map_err(bad)?;
                Some(msg::PathFigures::decode(&s.data).map_err(bad)?)
            } else {
                None
            };
            self.events.push_back(Event::PathInfoReply(figures));
        } else if let Asked::Other(request) = asked {
            let data = if num == MsgNum::REQUEST_SUCCESS {
                msg::RequestSuccess::decode(payload).map_err(bad)?.data
            } else {
                Vec::new()
            };
            self.events.push_back(Event::GlobalReply {
                request,
                success: num == MsgNum::REQUEST_SUCCESS,
                data,
            });
        }
        Ok(())
    }

    fn send_owed_replies(&mut self) {
        while let Some(Owed::Ready(_)) = self.globals.owed.front() {
            if let Some(Owed::Ready(p)) = self.globals.owed.pop_front() {
                self.queue_with(|out| out.extend_from_slice(&p));
            }
        }
    }

    /// Client: asks the server to set its socket buffers for this
    /// connection to `rcvbuf` / `sndbuf` bytes (0: leave as is).
    /// [`Event::SockBufReply`] brings what it granted, or None when it
    /// declined (a stock server does not know the request).
    pub fn request_sockbuf(&mut self, rcvbuf: u64, sndbuf: u64) -> Result<(), Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("global request before authentication"));
        }
        let mut data = Vec::with_capacity(16);
        encode_sizes(&mut data, rcvbuf, sndbuf);
        let r = msg::GlobalRequest {
            name: SOCKBUF_REQUEST.into(),
            want_reply: true,
            data,
        };
        self.queue_with(|p| r.encode(p));
        self.globals.asked.push_back(Asked::SockBuf);
        Ok(())
    }

    /// Sends any other global request (`keepalive@openssh.com`, say); with
    /// `want_reply`, [`Event::GlobalReply`] brings the answer.
    pub fn global_request(
        &mut self,
        name: &str,
        want_reply: bool,
        data: &[u8],
    ) -> Result<(), Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("global request before authentication"));
        }
        let r = msg::GlobalRequest {
            name: name.into(),
            want_reply,
            data: data.to_vec(),
        };
        self.queue_with(|p| r.encode(p));
        if want_reply {
            self.globals.asked.push_back(Asked::Other(name.to_owned()));
        }
        Ok(())
    }

    /// Client: asks the server to prove it holds the private halves of
    /// `keys` (blobs from its `hostkeys-00@openssh.com`);
    /// [`Event::HostKeysProof`] brings the signatures.
    pub fn request_hostkeys_prove(&mut self, keys: &[Vec<u8>]) -> Result<(), Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("global request before authentication"));
        }
        if keys.is_empty() || keys.len() > msg::MAX_HOST_KEYS {
            return Err(Error::InvalidState("hostkeys-prove needs 1 to 64 keys"));
        }
        let r = msg::GlobalRequest {
            name: msg::HOSTKEYS_PROVE.into(),
            want_reply: true,
            data: msg::HostKeyList {
                items: keys.to_vec(),
            }
            .encode(),
        };
        self.queue_with(|p| r.encode(p));
        self.globals.asked.push_back(Asked::HostKeysProve);
        Ok(())
    }

    /// Client: asks the server for its figures of this connection
    /// (`path-info-v00@sluice.dev`); [`Event::PathInfoReply`] brings them,
    /// or None when the server declined (a stock server does not know the
    /// request).
    pub fn request_path_info(&mut self) -> Result<(), Error> {
        if !self.auth.authenticated {
            return Err(Error::InvalidState("global request before authentication"));
        }
        let r = msg::GlobalRequest {
            name: msg::PATH_INFO_REQUEST.into(),
            want_reply: true,
            data: Vec::new(),
        };
        self.queue_with(|p| r.encode(p));
        self.globals.asked.push_back(Asked::PathInfo);
        Ok(())
    }

    /// Answers the oldest unanswered [`Event::GlobalRequest`] that wanted a
    /// reply: SUCCESS with `data` (a `tcpip-forward` for port 0 carries the
    /// port bound) or FAILURE. Replies still go out in request order.
    pub fn answer_global(&mut self, success: bool, data: &[u8]) {
        let Some(slot) = self.globals.owed.iter_mut().find(|o| **o == Owed::Waiting) else {
            return;
        };
        let mut p = Vec::with_capacity(1 + data.len());
        if success {
            p.push(MsgNum::REQUEST_SUCCESS.0);
            p.extend_from_slice(data);
        } else {
            p.push(MsgNum::REQUEST_FAILURE.0);
        }
        *slot = Owed::Ready(p);
        self.send_owed_replies();
    }

    /// Server: answers the oldest unanswered [`Event::SockBufRequest`] with
    /// what was granted (bytes of data the kernel reports), or declines.
    pub fn answer_sockbuf(&mut self, granted: Option<(u64, u64)>) {
        let Some(slot) = self.globals.owed.iter_mut().find(|o| **o == Owed::SockBuf) else {
            return;
        };
        let mut p = Vec::with_capacity(17);
        match granted {
            Some((rcv, snd)) => {
                p.push(MsgNum::REQUEST_SUCCESS.0);
                encode_sizes(&mut p, rcv, snd);
            }
            None => p.push(MsgNum::REQUEST_FAILURE.0),
        }
        *slot = Owed::Ready(p);
        self.send_owed_replies();
    }
}
