//! What a striping secondary must pass besides its proof: every check a
//! fresh login from its address would pass with the credentials the
//! primary used (PROTOCOL.md "Channel striping", *Joining*). Two monitors
//! share the work:
//!
//! - the secondary's monitor M' (mauth.rs) judges what depends only on the
//!   address and the account, under its Match blocks for the secondary:
//!   MaxStreams, the account's state, AllowUsers/DenyUsers/AllowGroups/
//!   DenyGroups (`user@host` forms against the secondary's address),
//!   `PermitRootLogin no`, and with UsePAM the PAM account modules with
//!   PAM_RHOST set to the secondary's address (pam_access);
//! - the session's monitor M judges here, after the proof verified, what
//!   depends on how the primary authenticated, which only M knows, under
//!   the Match blocks for the secondary's connection (Address, Host,
//!   LocalAddress, LocalPort): the primary's methods, in order, must be
//!   enabled there and complete an AuthenticationMethods list; each public
//!   key or certificate it used goes through the publickey decision again
//!   as for a login from there (conn/publickey.rs: authorized_keys as it
//!   reads now, with `from=` and `expiry-time=`, a certificate's validity
//!   and `source-address`, RevokedKeys, RequiredRSASize, PermitRootLogin);
//!   root after a password or keyboard-interactive needs `PermitRootLogin
//!   yes`. A password or a keyboard-interactive answer cannot be asked
//!   again: the join proof stands in for it, as it does for the key's
//!   signature.
//!
//! Refusals are logged in sshd's words; the lines the shared checks log
//! here start with the join they were made for (`log::with_context`).

use super::accepted::Accepted;
use crate::config::sshd::auth_methods::{Outcome, Progress};
use crate::config::sshd::{MatchContext, PermitRootLogin, ServerConfig as Sshd};
use crate::keys::cert::Cert;
use crate::keys::identity::fingerprint_sha256;
use crate::keys::key_type::sshd_key_type;
use sluice_proto::crypto::hostkey;
use std::net::SocketAddr;

/// One method the primary completed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// `publickey` with this key or certificate.
    PublicKey(Vec<u8>),
    /// Another method and, for keyboard-interactive, its device.
    Other {
        method: String,
        device: Option<String>,
    },
}

impl Step {
    /// The method and device as AuthenticationMethods names them.
    fn name(&self) -> (&str, Option<&str>) {
        match self {
            Step::PublicKey(_) => ("publickey", None),
            Step::Other { method, device } => (method, device.as_deref()),
        }
    }
}

/// The primary's credentials, as its monitor accepted them, to judge joins.
#[derive(Debug, Clone)]
pub struct JoinPolicy {
    user: String,
    uid: u32,
    /// The user's configuration (its lines are evaluated again for each
    /// secondary's connection).
    cfg: Sshd,
    steps: Vec<Step>,
}

impl JoinPolicy {
    /// The policy for the session `accepted` opened under `cfg`.
    pub fn new(accepted: &Accepted, cfg: &Sshd) -> JoinPolicy {
        JoinPolicy {
            user: accepted.user.name.clone(),
            uid: accepted.user.uid,
            cfg: cfg.clone(),
            steps: steps(&accepted.auth_info),
        }
    }

    /// Ok if a login from `peer` to `local` with the primary's credentials
    /// would succeed; otherwise why not (its details logged).
    pub fn check(&self, peer: SocketAddr, local: SocketAddr) -> Result<(), PolicyRefusal> {
        let ctx = MatchContext::connection(&self.user, peer, local);
        let cfg = self.cfg.for_connection(&ctx);
        let (ip, port) = (super::show_ip(peer), peer.port());
        let mut progress = Progress::new(&cfg);
        for step in &self.steps {
            let (method, device) = step.name();
            if !progress.allows(method, device) {
                return Err(PolicyRefusal::Method {
                    method: method.to_owned(),
                    user: self.user.clone(),
                });
            }
            match step {
                Step::PublicKey(blob) => {
                    let decided = crate::server::conn::publickey::decide(
                        &cfg,
                        (peer, local),
                        &self.user,
                        blob,
                        false,
                        "",
                    );
                    if decided.is_none() {
                        return Err(PolicyRefusal::Key {
                            key: described(blob),
                            ip,
                        });
                    }
                    progress.record_key(&crate::keys::cert::plain_key(blob));
                }
                Step::Other { .. } => {
                    if self.uid == 0 && cfg.permit_root_login != PermitRootLogin::Yes {
                        return Err(PolicyRefusal::Root { ip, port });
                    }
                }
            }
            if progress.complete(method, device) == Outcome::Complete {
                return Ok(());
            }
        }
        let done: Vec<&str> = self.steps.iter().map(|s| s.name().0).collect();
        Err(PolicyRefusal::Incomplete {
            methods: done.join(","),
            ip,
        })
    }
}

/// Why a login with the primary's credentials would not pass from the
/// secondary's addresses; `Display` is the refusal's text (logged, and
/// sent to the asking monitor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyRefusal {
    /// A method the primary used is not allowed at its step.
    Method {
        /// The method.
        method: String,
        /// The user.
        user: String,
    },
    /// The primary's key would be refused (as sshd's log names it).
    Key {
        /// The key, described.
        key: String,
        /// The secondary's address, as logs show it.
        ip: String,
    },
    /// Root, and PermitRootLogin refuses the other methods.
    Root {
        /// The secondary's address, as logs show it.
        ip: String,
        /// Its port.
        port: u16,
    },
    /// The primary's methods do not complete AuthenticationMethods here.
    Incomplete {
        /// The methods, comma-separated.
        methods: String,
        /// The secondary's address, as logs show it.
        ip: String,
    },
}

impl std::fmt::Display for PolicyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyRefusal::Method { method, user } => write!(
                f,
                "{method} authentication for {user} refused: not enabled or not allowed at this step of AuthenticationMethods"
            ),
            PolicyRefusal::Key { key, ip } => {
                write!(f, "the session's key {key} would be refused from {ip}")
            }
            PolicyRefusal::Root { ip, port } => {
                write!(f, "ROOT LOGIN REFUSED FROM {ip} port {port}")
            }
            PolicyRefusal::Incomplete { methods, ip } => write!(
                f,
                "the session's methods ({methods}) do not complete AuthenticationMethods from {ip}"
            ),
        }
    }
}

impl std::error::Error for PolicyRefusal {}

/// A key as sshd's log lines name it: `ED25519 SHA256:...`, a certificate
/// `ED25519-CERT SHA256:...` (its key's fingerprint).
fn described(blob: &[u8]) -> String {
    let key_type = hostkey::blob_key_type(blob).unwrap_or_default();
    match hostkey::cert::is_cert_type(key_type).then(|| Cert::parse(blob)) {
        Some(Ok(c)) => format!("{} {}", c.type_name(), c.fingerprint()),
        _ => format!("{} {}", sshd_key_type(blob), fingerprint_sha256(blob)),
    }
}

/// The steps of ExposeAuthInfo's text (server/auth_info.rs), which the
/// monitor wrote: `publickey TYPE BASE64`, `password`,
/// `keyboard-interactive[/DEVICE]`, one per line. A line that does not
/// read so gives no step (and the join is refused: nothing completes).
fn steps(auth_info: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for line in auth_info.lines() {
        let mut words = line.split(' ');
        let step = match (words.next(), words.next(), words.next()) {
            (Some("publickey"), Some(_), Some(b64)) => {
                match crate::keys::known_hosts::base64_decode(b64) {
                    Some(blob) => Step::PublicKey(blob),
                    None => return Vec::new(),
                }
            }
            (Some(m), None, None) if m != "publickey" && !m.is_empty() => {
                let (method, device) = match m.split_once('/') {
                    Some((m, d)) => (m, Some(d.to_owned())),
                    None => (m, None),
                };
                Step::Other {
                    method: method.to_owned(),
                    device,
                }
            }
            _ => return Vec::new(),
        };
        out.push(step);
    }
    out
}

/// A policy for `user` (uid `uid`) after the steps `auth_info` names,
/// under the sshd_config text `cfg_text`.
#[cfg(test)]
pub(super) fn test_policy(user: &str, uid: u32, auth_info: &str, cfg_text: &str) -> JoinPolicy {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("sluice-joinpol-{}-{n}", std::process::id()));
    std::fs::write(&p, cfg_text).unwrap();
    let cfg = Sshd::load(&p, &[]).unwrap().0;
    let _ = std::fs::remove_file(&p);
    JoinPolicy {
        user: user.to_owned(),
        uid,
        cfg,
        steps: steps(auth_info),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth_info::method_line;

    fn policy(info: &str, cfg_text: &str) -> JoinPolicy {
        test_policy("root", 0, info, cfg_text)
    }

    const HERE: &str = "127.0.0.1:22";

    fn from(ip: &str) -> SocketAddr {
        format!("{ip}:40000").parse().unwrap()
    }

    #[test]
    fn steps_read_back_from_auth_info() {
        let blob = vec![
            0, 0, 0, 11, b's', b's', b'h', b'-', b'e', b'd', b'2', b'5', b'5', b'1', b'9',
        ];
        let mut info = method_line("publickey", Some(&blob));
        info.push_str(&method_line("keyboard-interactive/pam", None));
        info.push_str(&method_line("password", None));
        assert_eq!(
            steps(&info),
            [
                Step::PublicKey(blob),
                Step::Other {
                    method: "keyboard-interactive".into(),
                    device: Some("pam".into())
                },
                Step::Other {
                    method: "password".into(),
                    device: None
                },
            ]
        );
        assert!(steps("publickey ssh-ed25519 !!!\n").is_empty());
        assert!(steps("publickey\n").is_empty());
        assert!(steps("").is_empty());
    }

    #[test]
    fn methods_must_be_enabled_and_complete_a_list_from_the_address() {
        let here = HERE.parse().unwrap();
        // Nothing recorded: nothing completes.
        let p = policy("", "PermitRootLogin yes\n");
        assert!(p.check(from("127.0.0.1"), here).is_err());
        let p = policy(
            "password\n",
            "PermitRootLogin yes\nMatch Address 10.0.0.0/8\n  PasswordAuthentication no\n\
             Match Address 192.0.2.0/24\n  AuthenticationMethods password,keyboard-interactive\n\
             Match Address 198.51.100.0/24\n  PermitRootLogin prohibit-password\n",
        );
        assert_eq!(p.check(from("127.0.0.1"), here), Ok(()));
        let e = p.check(from("10.1.2.3"), here).unwrap_err();
        assert!(matches!(e, PolicyRefusal::Method { .. }));
        let e = e.to_string();
        assert!(
            e.starts_with("password authentication for root refused"),
            "{e}"
        );
        let e = p.check(from("192.0.2.1"), here).unwrap_err().to_string();
        assert!(e.contains("do not complete AuthenticationMethods"), "{e}");
        let e = p.check(from("198.51.100.9"), here).unwrap_err();
        assert!(matches!(e, PolicyRefusal::Root { port: 40000, .. }));
        assert_eq!(
            e.to_string(),
            "ROOT LOGIN REFUSED FROM 198.51.100.9 port 40000"
        );
        // Match LocalPort: the address the secondary arrived on counts.
        let p = policy(
            "keyboard-interactive\n",
            "PermitRootLogin yes\nMatch LocalPort 2222\n  KbdInteractiveAuthentication no\n",
        );
        assert_eq!(p.check(from("127.0.0.1"), here), Ok(()));
        let other = "127.0.0.1:2222".parse().unwrap();
        assert!(p.check(from("127.0.0.1"), other).is_err());
    }
}
