//! What the monitor answers, when, and how often: the table of requests
//! of the two processes it serves, as OpenSSH's monitor keeps one
//! (MON_ONCE, MON_AUTH, MON_PERMIT). The monitor looks every request up
//! here before it acts on it; a request the table does not allow in the
//! state the monitor is in, or one past its count, ends the connection
//! (the child is treated as taken over: nothing it asks after that is
//! trusted).
//!
//! The pre-auth child (sandboxed, parses the peer's bytes):
//!
//! | request       | allowed while                          | how often                 |
//! |---------------|----------------------------------------|---------------------------|
//! | Log           | always                                 | any (marked `[preauth]`)  |
//! | SignExchange  | no session id yet (the first exchange) | once                      |
//! | Auth          | session id fixed, no verdict pending,  | 2 x MaxAuthTries + 16     |
//! |               | not authenticated (prompts may be out) |                           |
//! | InfoResponse  | keyboard-interactive prompts are out   | once per prompts          |
//! | Handover      | authenticated (or a join admitted)     | once                      |
//! | anything else | never                                  |                           |
//!
//! Once authentication has failed for good (MaxAuthTries, LoginGraceTime)
//! only log lines are taken: a child that goes on asking (a password
//! guessed past MaxAuthTries) is out of turn.
//!
//! One exchange is signed before authentication, as sshd's MON_ONCE: the
//! session id. A client that re-keys before authenticating is refused
//! (sshd does not re-key there either).
//!
//! The post-auth process (runs as the user; logs by itself, so a `Log`
//! from it is out of turn):
//!
//! | request       | how often                                                   |
//! |---------------|-------------------------------------------------------------|
//! | SignExchange  | any: re-keys; each transcript checked (signer.rs)            |
//! | ProveHostKey  | any: the data signed is built by the monitor, not asked for |
//! | SockBuf       | any: sizes capped by RemoteBufMax, on the monitor's socket  |
//! | PtyRequest    | while fewer than MaxSessions of its ptys are open           |
//! | PtyRelease    | for a pty the monitor gave and that is still open           |
//! | StripeGrant   | once                                                        |
//! | anything else | never                                                       |

use super::wire::Msg;

/// A request, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Req {
    /// A log line.
    Log,
    /// A key exchange hash to sign.
    SignExchange,
    /// A USERAUTH_REQUEST relayed.
    Auth,
    /// Keyboard-interactive answers.
    InfoResponse,
    /// The transport state after authentication (`State`, then input).
    Handover,
    /// A host key proof.
    ProveHostKey,
    /// RemoteRcvBuf / RemoteSndBuf.
    SockBuf,
    /// A pty.
    PtyRequest,
    /// A pty's session ended.
    PtyRelease,
    /// A striping grant.
    StripeGrant,
    /// Anything else: what the monitor sends, or another channel's message.
    Other,
}

impl Req {
    /// The kind of `m` when a child sends it.
    pub fn of(m: &Msg) -> Req {
        match m {
            Msg::Log { .. } => Req::Log,
            Msg::SignExchange { .. } => Req::SignExchange,
            Msg::Auth { .. } => Req::Auth,
            Msg::InfoResponse(_) => Req::InfoResponse,
            Msg::State(_) => Req::Handover,
            Msg::ProveHostKey { .. } => Req::ProveHostKey,
            Msg::SockBuf { .. } => Req::SockBuf,
            Msg::PtyRequest => Req::PtyRequest,
            Msg::PtyRelease { .. } => Req::PtyRelease,
            Msg::StripeGrant { .. } => Req::StripeGrant,
            _ => Req::Other,
        }
    }

    /// Every kind, for tests that try each.
    pub const ALL: [Req; 11] = [
        Req::Log,
        Req::SignExchange,
        Req::Auth,
        Req::InfoResponse,
        Req::Handover,
        Req::ProveHostKey,
        Req::SockBuf,
        Req::PtyRequest,
        Req::PtyRelease,
        Req::StripeGrant,
        Req::Other,
    ];
}

/// Where the pre-auth phase is, as the monitor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pre {
    /// No exchange signed yet.
    Kex,
    /// The session id is fixed; authentication requests may come.
    Auth,
    /// A request waits for its verdict (PAM, a delayed failure).
    Waiting,
    /// Keyboard-interactive prompts went to the child.
    Prompted,
    /// The user was accepted (or a striping join admitted).
    Accepted,
    /// Authentication is over without success (MaxAuthTries,
    /// LoginGraceTime): the child is to disconnect, nothing more.
    Closed,
}

impl Pre {
    /// Every state, for tests that try each.
    pub const ALL: [Pre; 6] = [
        Pre::Kex,
        Pre::Auth,
        Pre::Waiting,
        Pre::Prompted,
        Pre::Accepted,
        Pre::Closed,
    ];
}

/// A request refused by the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfTurn {
    /// The request.
    pub req: Req,
    /// Why, for the log.
    pub why: &'static str,
}

impl std::fmt::Display for OutOfTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} request {}", self.req, self.why)
    }
}

/// The pre-auth table: the states each request is allowed in.
fn pre_allowed(req: Req) -> &'static [Pre] {
    use Pre::*;
    match req {
        Req::Log => &[Kex, Auth, Waiting, Prompted, Accepted, Closed],
        Req::SignExchange => &[Kex],
        Req::Auth => &[Auth, Prompted],
        Req::InfoResponse => &[Prompted],
        Req::Handover => &[Accepted],
        _ => &[],
    }
}

/// Counts of one child's requests against the table.
#[derive(Debug, Default)]
pub struct Turns {
    auth: u32,
    handover: u32,
    ptys_open: u32,
    stripe: u32,
}

impl Turns {
    /// A new child's counts.
    pub fn new() -> Turns {
        Turns::default()
    }

    /// May the pre-auth child ask `req` in `state`, under MaxAuthTries
    /// `max_auth_tries` (the user's, Match applied)? Counts it if so.
    pub fn pre(&mut self, state: Pre, req: Req, max_auth_tries: u32) -> Result<(), OutOfTurn> {
        if !pre_allowed(req).contains(&state) {
            return Err(OutOfTurn {
                req,
                why: match state {
                    Pre::Kex => "before the key exchange",
                    Pre::Waiting => "while a verdict is pending",
                    Pre::Accepted => "after authentication",
                    Pre::Closed => "after authentication failed for good",
                    Pre::Auth | Pre::Prompted => "out of turn before authentication",
                },
            });
        }
        match req {
            Req::Auth => {
                self.auth += 1;
                if self.auth > max_auth_tries.saturating_mul(2).saturating_add(16) {
                    return Err(OutOfTurn {
                        req,
                        why: "past the limit (MaxAuthTries)",
                    });
                }
            }
            Req::Handover => {
                self.handover += 1;
                if self.handover > 1 {
                    return Err(OutOfTurn { req, why: "twice" });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// May the post-auth process ask `req`, under MaxSessions
    /// `max_sessions`? Counts it if so; [`Turns::pty_released`] takes a
    /// pty back.
    pub fn post(&mut self, req: Req, max_sessions: u32) -> Result<(), OutOfTurn> {
        match req {
            Req::SignExchange | Req::ProveHostKey | Req::SockBuf => Ok(()),
            Req::PtyRequest if self.ptys_open < max_sessions => {
                self.ptys_open += 1;
                Ok(())
            }
            Req::PtyRequest => Err(OutOfTurn {
                req,
                why: "past MaxSessions open ptys",
            }),
            Req::PtyRelease if self.ptys_open > 0 => Ok(()),
            Req::PtyRelease => Err(OutOfTurn {
                req,
                why: "with no pty open",
            }),
            Req::StripeGrant => {
                self.stripe += 1;
                if self.stripe > 1 {
                    Err(OutOfTurn { req, why: "twice" })
                } else {
                    Ok(())
                }
            }
            Req::Log => Err(OutOfTurn {
                req,
                why: "from the post-auth process (it logs by itself)",
            }),
            _ => Err(OutOfTurn {
                req,
                why: "after authentication",
            }),
        }
    }

    /// A pty request was refused after all (PermitTTY, no-pty), or a
    /// released one was checked: one fewer open.
    pub fn pty_released(&mut self) {
        self.ptys_open = self.ptys_open.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pre_auth_table_allows_each_request_only_in_its_states() {
        for state in Pre::ALL {
            for req in Req::ALL {
                let want = match req {
                    Req::Log => true,
                    Req::SignExchange => state == Pre::Kex,
                    Req::Auth => matches!(state, Pre::Auth | Pre::Prompted),
                    Req::InfoResponse => state == Pre::Prompted,
                    Req::Handover => state == Pre::Accepted,
                    _ => false,
                };
                let got = Turns::new().pre(state, req, 6).is_ok();
                assert_eq!(got, want, "{req:?} in {state:?}");
            }
        }
    }

    #[test]
    fn pre_auth_counts() {
        let mut t = Turns::new();
        for _ in 0..(2 * 6 + 16) {
            t.pre(Pre::Auth, Req::Auth, 6).unwrap();
        }
        assert!(t.pre(Pre::Auth, Req::Auth, 6).is_err());
        t.pre(Pre::Accepted, Req::Handover, 6).unwrap();
        assert!(t.pre(Pre::Accepted, Req::Handover, 6).is_err());
    }

    #[test]
    fn the_post_auth_table_and_its_counts() {
        for req in Req::ALL {
            let want = matches!(
                req,
                Req::SignExchange
                    | Req::ProveHostKey
                    | Req::SockBuf
                    | Req::PtyRequest
                    | Req::StripeGrant
            );
            assert_eq!(Turns::new().post(req, 10).is_ok(), want, "{req:?}");
        }
        let mut t = Turns::new();
        assert!(t.post(Req::PtyRelease, 2).is_err(), "nothing to release");
        t.post(Req::PtyRequest, 2).unwrap();
        t.post(Req::PtyRequest, 2).unwrap();
        assert!(t.post(Req::PtyRequest, 2).is_err(), "MaxSessions 2");
        t.post(Req::PtyRelease, 2).unwrap();
        t.pty_released();
        t.post(Req::PtyRequest, 2).unwrap();
        assert!(
            Turns::new().post(Req::PtyRequest, 0).is_err(),
            "MaxSessions 0"
        );
        let mut t = Turns::new();
        t.post(Req::StripeGrant, 2).unwrap();
        assert!(t.post(Req::StripeGrant, 2).is_err());
        for _ in 0..1000 {
            t.post(Req::SignExchange, 2).unwrap();
        }
    }
}
