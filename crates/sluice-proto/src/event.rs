//! Events the engine reports to the runtime. Every decision with a side
//! effect (host key trust, authorisation, running commands) is the
//! runtime's: the engine asks through an event and waits for the answer.

use crate::msg::ChannelRequestKind;
use crate::negotiate::Algorithms;

/// A channel, by our local number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId(pub u32);

/// A user authentication method as the server sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMethodRequest {
    /// `none`: usually answered with the list of methods.
    None,
    /// `publickey`; `signed` is true when a signature came with it and
    /// verified (the runtime then only decides whether the key is authorised).
    PublicKey {
        /// Signature algorithm.
        algorithm: String,
        /// Public key blob.
        key_blob: Vec<u8>,
        /// `publickey-hostbound-v00@openssh.com`: the host key the client
        /// bound the request to (checked here against this connection's
        /// first key exchange, and part of what the signature covers).
        host_key: Option<Vec<u8>>,
        /// A valid signature was included.
        signed: bool,
        /// The signature blob when `signed`, so a privilege-separation
        /// monitor can verify it itself against its own session id rather
        /// than trust the process that parsed the request.
        signature: Option<Vec<u8>>,
    },
    /// `password`.
    Password {
        /// The password.
        password: String,
    },
    /// `keyboard-interactive` (RFC 4256): answer with `auth_info_request`
    /// rounds, then `auth_accept` or `auth_reject`.
    KeyboardInteractive {
        /// The client's submethod hints (comma-separated, usually empty).
        submethods: String,
    },
}

/// Something the runtime must look at, from [`crate::Connection::poll_event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Client: the server's host key, with the exchange signature already
    /// verified. Answer with `accept_host_key` or `reject_host_key`.
    HostKey {
        /// Signature algorithm negotiated.
        algorithm: String,
        /// Public key blob.
        key_blob: Vec<u8>,
    },
    /// A key exchange finished; `initial` for the first one.
    KexDone {
        /// First exchange of the connection.
        initial: bool,
        /// What was negotiated.
        algorithms: Box<Algorithms>,
    },
    /// Client: the user-auth service was asked for right behind our first
    /// NEWKEYS; authentication requests may go out now (the server's
    /// SERVICE_ACCEPT comes later, as [`Event::ServiceAccepted`]).
    AuthReady,
    /// Client: the server accepted the user-auth service (all it sent
    /// before, such as EXT_INFO, has been read).
    ServiceAccepted,
    /// Client: the server's EXT_INFO named its `server-sig-algs`.
    ServerSigAlgs,
    /// Client: the server sent a banner to show before authentication.
    AuthBanner(String),
    /// Client: the last request failed; these methods can continue.
    AuthFailure {
        /// Methods that may continue.
        methods: Vec<String>,
        /// The request succeeded but more is needed.
        partial: bool,
    },
    /// Client: the server would accept a signature from this key.
    AuthPkOk {
        /// Signature algorithm.
        algorithm: String,
        /// Public key blob.
        key_blob: Vec<u8>,
    },
    /// Client: keyboard-interactive prompts (RFC 4256 3.2); answer with
    /// `auth_info_response`, one answer per prompt (none for no prompts).
    AuthInfoRequest {
        /// Name of the challenge, may be empty.
        name: String,
        /// Instruction to show, may be empty.
        instruction: String,
        /// The prompts, each with whether to echo the answer.
        prompts: Vec<crate::msg::Prompt>,
    },
    /// Client: the server wants the password changed (PASSWD_CHANGEREQ,
    /// RFC 4252 8). The attempt did not authenticate: send another request
    /// (any method) or give up.
    AuthPasswdChangeReq {
        /// The server's prompt.
        prompt: String,
    },
    /// Server: the client's answers to `auth_info_request`, as many as
    /// there were prompts. Answer with another `auth_info_request`, or
    /// `auth_accept` / `auth_reject`.
    AuthInfoResponse {
        /// One answer per prompt, in order.
        answers: Vec<String>,
    },
    /// Authentication succeeded (both sides).
    Authenticated {
        /// The user name.
        user: String,
    },
    /// Server: decide an authentication request with `auth_accept`,
    /// `auth_pk_ok` or `auth_reject` (keyboard-interactive first asks with
    /// `auth_info_request`). A request that arrives while the client owes
    /// answers to an INFO_REQUEST abandons that keyboard-interactive
    /// attempt (counted as a failure) and is reported as a new AuthRequest.
    AuthRequest {
        /// User name asked for.
        user: String,
        /// Method and its data.
        method: AuthMethodRequest,
    },
    /// Server, after `enable_stripe_join`: a secondary connection asks to
    /// join a striped session as `user` (`stripe-join-v00@sluice.dev`).
    /// Check it with that session's `stripe::token::Admission::admit`
    /// (this connection's session id: `Connection::session_id`) and
    /// answer with `auth_accept` or `auth_reject` (a refusal counts
    /// against MaxAuthTries).
    StripeJoinRequest {
        /// User name asked for (the primary's, if genuine).
        user: String,
        /// The request's fields.
        join: crate::stripe::codec::JoinRequest,
    },
    /// Server: the peer wants to open a channel; answer with `accept_channel`
    /// or `reject_channel`.
    ChannelOpenRequest {
        /// Our number for it.
        channel: ChannelId,
        /// `session`, `direct-tcpip`, ...
        channel_type: String,
        /// Type-specific data.
        data: Vec<u8>,
    },
    /// Our channel open was confirmed.
    ChannelOpened(ChannelId),
    /// Our channel open was refused.
    ChannelOpenFailed {
        /// The channel.
        channel: ChannelId,
        /// RFC 4254 5.1 reason code.
        reason: u32,
        /// The peer's description.
        description: String,
    },
    /// A channel request from the peer; if `want_reply`, answer with `channel_reply`.
    ChannelRequest {
        /// The channel.
        channel: ChannelId,
        /// The peer waits for an answer.
        want_reply: bool,
        /// The request.
        request: ChannelRequestKind,
    },
    /// The peer's answer to one of our channel requests.
    ChannelReply {
        /// The channel.
        channel: ChannelId,
        /// SUCCESS or FAILURE.
        success: bool,
    },
    /// The peer's send window grew: more data can be sent.
    ChannelWindow(ChannelId),
    /// The peer sent EOF.
    ChannelEof(ChannelId),
    /// Both sides closed the channel; its number may be reused.
    ChannelClosed(ChannelId),
    /// The peer closed a channel whose close is held
    /// ([`crate::Connection::hold_close`]): send what is left, then
    /// `close_channel`.
    ChannelCloseHeld(ChannelId),
    /// A DEBUG message the peer wants displayed.
    Debug(String),
    /// Server: the client asks us to size this connection's socket buffers
    /// (`sockbuf-v00@sluice.dev`, bytes, 0 = leave as is); answer with
    /// [`crate::Connection::answer_sockbuf`].
    SockBufRequest {
        /// Receive buffer wanted.
        rcvbuf: u64,
        /// Send buffer wanted.
        sndbuf: u64,
    },
    /// Client: the answer to [`crate::Connection::request_sockbuf`]: the
    /// receive and send buffers the server now has, or None if it declined.
    SockBufReply(Option<(u64, u64)>),
    /// Client: the answer to [`crate::Connection::request_hostkeys_prove`]:
    /// the signatures, one per key asked about and in that order (their
    /// count and validity are the runtime's to check), or None when the
    /// server refused.
    HostKeysProof(Option<Vec<Vec<u8>>>),
    /// Client: the answer to [`crate::Connection::request_path_info`]: the
    /// server's figures of this connection, or None when it declined (a
    /// stock server does not know the request).
    PathInfoReply(Option<crate::msg::PathFigures>),
    /// The peer's answer to [`crate::Connection::global_request`]: SUCCESS
    /// (with its data, e.g. the port a `tcpip-forward` bound) or FAILURE.
    GlobalReply {
        /// The request it answers (replies come in the order of the
        /// requests, so each owner gets its own: a keepalive's FAILURE is
        /// never taken for a `tcpip-forward`'s answer).
        request: String,
        /// SUCCESS.
        success: bool,
        /// The reply's request-specific data.
        data: Vec<u8>,
    },
    /// A global request from the peer after authentication (`tcpip-forward`,
    /// `keepalive@openssh.com`, ...). If `want_reply`, answer with
    /// [`crate::Connection::answer_global`], in the order they came.
    GlobalRequest {
        /// Request name.
        name: String,
        /// The peer waits for an answer.
        want_reply: bool,
        /// Request-specific data.
        data: Vec<u8>,
    },
}
