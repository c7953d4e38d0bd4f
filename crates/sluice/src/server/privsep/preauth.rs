//! The pre-auth child: forked by the monitor before it reads any host
//! key (its public halves come over the link), it applies the sandbox
//! (chroot, the unprivileged user, rlimits, seccomp) before it reads the
//! peer's first byte, then runs the engine in handover mode. Host keys are
//! proxies ([`ProxySigner`]); each authentication request goes to the
//! monitor and its verdict is applied to the engine. Once the monitor
//! accepted, the engine's USERAUTH_SUCCESS is flushed, and the transport
//! state and the raw unread input go to the monitor; then the child exits.

use super::error::PrivsepError;
use super::signer::{Link, ProxySigner};
use super::wire::{Method, Msg, INPUT_CHUNK};
use crate::log::{self, Level};
use crate::net::pump::{ChannelFds, Handler, Pump};
use crate::server::sandbox::Sandbox;
use sluice_proto::crypto::hostkey::Signer;
use sluice_proto::crypto::SystemRng;
use sluice_proto::msg::Prompt;
use sluice_proto::{AuthMethodRequest, Connection, Event, ServerConfig};
use std::net::SocketAddr;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use zeroize::Zeroizing;

/// A copy of the monitor socket, for the log sink (a plain fn pointer):
/// sent on without the link's lock, which a request waiting for its
/// answer holds.
static LOG_FD: OnceLock<OwnedFd> = OnceLock::new();

/// In the chroot syslog's socket is unreachable: lines go to the monitor.
fn log_to_monitor(level: Level, line: &str) {
    let Some(fd) = LOG_FD.get() else {
        return;
    };
    let mut line = line.to_owned();
    line.truncate(2000);
    let m = Msg::Log {
        level: level as u8,
        line,
    };
    let _ = super::datagram::send(fd, &m);
}

/// What the child was given by the monitor before the fork.
pub struct ChildSetup {
    /// The engine's configuration, host keys left out.
    pub server_cfg: ServerConfig,
    /// The peer's socket (non-blocking).
    pub sock: RawFd,
    /// The client's address, for log lines.
    pub peer: SocketAddr,
    /// Striping may be allowed (MaxStreams above 1 somewhere): the
    /// `stripe-join-v00@sluice.dev` method goes to the monitor, which
    /// decides with the user's configuration.
    pub stripe_join: bool,
}

/// Runs the child on its end of the monitor socket, `c_end`; never
/// returns.
pub fn run(setup: ChildSetup, sandbox: Option<Sandbox>, c_end: OwnedFd) -> ! {
    // Even with -e/-d: fd 2 may be a regular file, which RLIMIT_FSIZE 0
    // forbids writing (SIGXFSZ); the monitor writes the lines instead,
    // sent on a copy of the socket (close-on-exec, as the original).
    if let Ok(fd) = c_end.try_clone() {
        let _ = LOG_FD.set(fd);
        log::use_sink(log_to_monitor);
    }
    let link = Link::new(c_end);
    let code = match sandbox.map(Sandbox::apply).transpose() {
        Ok(None) => serve(setup, link),
        Ok(Some(a)) => {
            log::write(
                Level::Debug2,
                format_args!(
                    "pre-auth child sandboxed as {} (seccomp {})",
                    a.user, a.seccomp
                ),
            );
            serve(setup, link)
        }
        Err(e) => {
            crate::log!(Error, "{e}");
            255
        }
    };
    // Leaving without running destructors or atexit handlers of the
    // monitor's image.
    crate::sys::process::exit_now(code)
}

fn serve(setup: ChildSetup, link: Arc<Link>) -> i32 {
    // The monitor reads the host keys after the fork; their public halves
    // come first on the link.
    let blobs = match link.next() {
        Ok(Msg::HostKeys(b)) if !b.is_empty() => b,
        Ok(_) => {
            crate::log!(Error, "expected the host keys from the monitor");
            return 255;
        }
        // The monitor could not read them (it says why) or is gone.
        Err(_) => return 255,
    };
    let mut cfg = setup.server_cfg;
    cfg.host_keys = blobs
        .into_iter()
        .enumerate()
        .map(|(i, blob)| {
            let k: Arc<dyn Signer> = Arc::new(ProxySigner::new(link.clone(), i as u32, blob));
            k
        })
        .collect();
    let mut conn = Connection::server(cfg, Box::new(SystemRng));
    if let Err(e) = conn.enable_handover() {
        crate::log!(Error, "handover: {e}");
        return 255;
    }
    if setup.stripe_join {
        conn.enable_stripe_join();
    }
    let mut handler = Preauth {
        link: link.clone(),
        authenticated: false,
        user: None,
    };
    let mut pump = Pump::new(setup.sock);
    let r = pump.run(&mut conn, &mut handler);
    if handler.authenticated && r.is_ok() {
        return match hand_over(&mut conn, &mut pump, &link) {
            Ok(()) => 0,
            Err(e) => {
                crate::log!(Error, "handover to the monitor: {e}");
                255
            }
        };
    }
    let who = handler
        .user
        .as_deref()
        .map(|u| format!("authenticating user {u} "))
        .unwrap_or_default();
    super::log_end(
        r.map_err(|e| e.map_handler(crate::server::error::ServerError::Privsep)),
        &who,
        setup.peer,
    )
}

fn hand_over(conn: &mut Connection, pump: &mut Pump, link: &Link) -> Result<(), PrivsepError> {
    if !conn.handover_ready() {
        return Err(PrivsepError::NotAtHandover);
    }
    let state = conn
        .export_transport(Instant::now())
        .map_err(PrivsepError::Export)?;
    let rest = pump.take_unread();
    let send = |m: &Msg| link.tell(m).map_err(PrivsepError::Wire);
    send(&Msg::State(state.encode()))?;
    for chunk in rest.chunks(INPUT_CHUNK) {
        send(&Msg::Input(chunk.to_vec()))?;
    }
    send(&Msg::End)
}

/// The child's event handling: everything the peer asks is relayed.
struct Preauth {
    link: Arc<Link>,
    authenticated: bool,
    user: Option<String>,
}

impl Preauth {
    /// Waits for the monitor's verdict on what was just sent, applying
    /// a policy update first if one comes.
    fn verdict(&self, conn: &mut Connection) -> Result<(), PrivsepError> {
        loop {
            match self.link.next()? {
                Msg::Policy {
                    methods,
                    max_tries,
                    banner,
                } => conn.set_auth_policy(methods, max_tries, banner),
                Msg::Accept => {
                    conn.auth_accept();
                    return Ok(());
                }
                Msg::Reject => {
                    conn.auth_reject();
                    return Ok(());
                }
                Msg::Partial { methods } => {
                    conn.auth_partial(methods);
                    return Ok(());
                }
                Msg::InfoRequest {
                    instruction,
                    prompts,
                } => {
                    let prompts = prompts
                        .into_iter()
                        .map(|(prompt, echo)| Prompt { prompt, echo })
                        .collect();
                    if conn.auth_info_request("", &instruction, prompts).is_err() {
                        conn.auth_reject();
                    }
                    return Ok(());
                }
                _ => return Err(PrivsepError::UnexpectedMessage),
            }
        }
    }

    fn send(&self, m: &Msg) -> Result<(), PrivsepError> {
        Ok(self.link.tell(m)?)
    }
}

impl Handler for Preauth {
    type Error = PrivsepError;

    fn on_event(
        &mut self,
        conn: &mut Connection,
        _fds: &mut ChannelFds,
        event: Event,
    ) -> Result<(), PrivsepError> {
        match event {
            Event::AuthRequest { user, method } => {
                let method = match method {
                    AuthMethodRequest::None => Method::None,
                    AuthMethodRequest::Password { password } => {
                        Method::Password(Zeroizing::new(password))
                    }
                    AuthMethodRequest::KeyboardInteractive { .. } => Method::KeyboardInteractive,
                    AuthMethodRequest::PublicKey {
                        algorithm,
                        key_blob,
                        host_key,
                        signature,
                        ..
                    } => Method::PublicKey {
                        algorithm,
                        key_blob,
                        host_key,
                        signature,
                    },
                    #[allow(unreachable_patterns)]
                    _ => {
                        conn.auth_reject();
                        return Ok(());
                    }
                };
                // The monitor gets the name as sent: a signature covers it.
                self.user = Some(crate::server::auth::without_style(user.clone()));
                self.send(&Msg::Auth { user, method })?;
                self.verdict(conn)
            }
            Event::StripeJoinRequest { user, join } => {
                self.user = Some(crate::server::auth::without_style(user.clone()));
                self.send(&Msg::Auth {
                    user,
                    method: Method::StripeJoin(join),
                })?;
                self.verdict(conn)
            }
            Event::AuthInfoResponse { answers } => {
                let answers = answers.into_iter().map(Zeroizing::new).collect();
                self.send(&Msg::InfoResponse(answers))?;
                self.verdict(conn)
            }
            Event::Authenticated { .. } => {
                self.authenticated = true;
                Ok(())
            }
            Event::KexDone { algorithms, .. } => {
                crate::log!(
                    Debug1,
                    "kex: client->server cipher: {} MAC: {} compression: {}",
                    algorithms.cipher_c2s,
                    algorithms.mac_c2s,
                    algorithms.comp_c2s
                );
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn finished(&self) -> bool {
        self.authenticated
    }
}
