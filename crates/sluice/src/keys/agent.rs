//! ssh-agent client (draft-miller-ssh-agent): list identities, sign, and
//! bind a connection to the session it serves (OpenSSH's PROTOCOL.agent
//! `session-bind@openssh.com`, which lets an agent enforce the destination
//! constraints of `ssh-add -h`). Each key is a [`Signer`], so agent keys
//! authenticate like key files.

/// The session channel request asking for agent forwarding (OpenSSH's
/// PROTOCOL.agent); here because client and server both speak it.
pub const FORWARD_REQUEST: &str = "auth-agent-req@openssh.com";
/// The channel type the server opens for each forwarded agent connection.
pub const FORWARD_CHANNEL: &str = "auth-agent@openssh.com";

use sluice_proto::crypto::hostkey::Signer;
use sluice_proto::crypto::CryptoError;
use sluice_proto::wire::{Reader, Writer};
use sluice_proto::SessionBinding;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const REQUEST_IDENTITIES: u8 = 11;
const IDENTITIES_ANSWER: u8 = 12;
const SIGN_REQUEST: u8 = 13;
const SIGN_RESPONSE: u8 = 14;
const SUCCESS: u8 = 6;
const ADD_IDENTITY: u8 = 17;
const ADD_ID_CONSTRAINED: u8 = 25;
const CONSTRAIN_LIFETIME: u8 = 1;
const CONSTRAIN_CONFIRM: u8 = 2;
const EXTENSION: u8 = 27;
const SESSION_BIND: &str = "session-bind@openssh.com";
const RSA_SHA2_256: u32 = 2;
const RSA_SHA2_512: u32 = 4;
/// Longest agent reply accepted.
const MAX_REPLY: usize = 256 * 1024;

/// Why talking to an agent failed.
#[derive(Debug)]
pub enum AgentError {
    /// No path given and SSH_AUTH_SOCK unset.
    NoSocket,
    /// The socket cannot be connected to.
    Connect {
        /// The agent's socket.
        path: PathBuf,
        /// The system's reason.
        error: std::io::Error,
    },
    /// Another thread panicked while talking to the agent.
    LockPoisoned,
    /// Writing the request or reading the reply failed.
    Io(std::io::Error),
    /// A reply of length zero or longer than the limit.
    ReplyTooLong,
    /// SSH_AGENTC_ADD_IDENTITY answered with a failure.
    KeyRefused,
    /// The identities answer does not parse.
    MalformedIdentities,
    /// The request for identities answered with a failure.
    ListRefused,
    /// session-bind@openssh.com answered with a failure (an agent without
    /// the extension, or one that found the binding wrong).
    BindRefused,
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::NoSocket => f.write_str("SSH_AUTH_SOCK is not set"),
            AgentError::Connect { path, error } => {
                write!(f, "Error connecting to agent {}: {error}", path.display())
            }
            AgentError::LockPoisoned => f.write_str("agent lock poisoned"),
            AgentError::Io(e) => write!(f, "agent: {e}"),
            AgentError::ReplyTooLong => f.write_str("agent: reply too long"),
            AgentError::KeyRefused => f.write_str("the agent refused the key"),
            AgentError::MalformedIdentities => f.write_str("agent: malformed identities answer"),
            AgentError::ListRefused => f.write_str("agent refused to list keys"),
            AgentError::BindRefused => f.write_str("agent refused the session binding"),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Connect { error, .. } | AgentError::Io(error) => Some(error),
            _ => None,
        }
    }
}

/// A connection to an agent.
pub struct Agent {
    sock: Mutex<UnixStream>,
}

impl Agent {
    /// Connects to `path` (IdentityAgent, or SSH_AUTH_SOCK when None).
    pub fn connect(path: Option<&Path>) -> Result<Agent, AgentError> {
        let p: PathBuf = match path {
            Some(p) => p.to_path_buf(),
            None => std::env::var_os("SSH_AUTH_SOCK")
                .map(PathBuf::from)
                .ok_or(AgentError::NoSocket)?,
        };
        let s = match UnixStream::connect(&p) {
            Ok(s) => s,
            Err(error) => return Err(AgentError::Connect { path: p, error }),
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        Ok(Agent {
            sock: Mutex::new(s),
        })
    }

    fn request(&self, msg: &[u8]) -> Result<Vec<u8>, AgentError> {
        let mut s = self.sock.lock().map_err(|_| AgentError::LockPoisoned)?;
        exchange(&mut s, msg)
    }

    /// Binds this connection to the session `b` (not forwarded): an agent
    /// holding keys with destination constraints signs only for the host
    /// it was bound to.
    pub fn bind_session(&self, b: &SessionBinding<'_>) -> Result<(), AgentError> {
        let mut s = self.sock.lock().map_err(|_| AgentError::LockPoisoned)?;
        bind_session(&mut s, b, false)
    }

    /// SSH_AGENTC_ADD_IDENTITY (or ADD_ID_CONSTRAINED with a lifetime in
    /// seconds or the confirm constraint): `fields` are the key type and
    /// private fields as an OpenSSH key file's private section has them.
    pub fn add_identity(
        &self,
        fields: &[u8],
        comment: &str,
        lifetime: Option<u32>,
        confirm: bool,
    ) -> Result<(), AgentError> {
        let constrained = lifetime.is_some() || confirm;
        let mut msg = Vec::new();
        let mut w = Writer::new(&mut msg);
        w.u8(if constrained {
            ADD_ID_CONSTRAINED
        } else {
            ADD_IDENTITY
        })
        .bytes(fields)
        .string(comment.as_bytes());
        if let Some(t) = lifetime {
            w.u8(CONSTRAIN_LIFETIME).u32(t);
        }
        if confirm {
            w.u8(CONSTRAIN_CONFIRM);
        }
        let reply = self.request(&msg);
        msg.fill(0); // the private key's bytes
        match reply?.first() {
            Some(&SUCCESS) => Ok(()),
            _ => Err(AgentError::KeyRefused),
        }
    }

    /// The agent's keys: (public blob, comment).
    pub fn identities(&self) -> Result<Vec<(Vec<u8>, String)>, AgentError> {
        let reply = self.request(&[REQUEST_IDENTITIES])?;
        let mut r = Reader::new(&reply);
        let bad = |_| AgentError::MalformedIdentities;
        if r.u8().map_err(bad)? != IDENTITIES_ANSWER {
            return Err(AgentError::ListRefused);
        }
        let n = r.u32().map_err(bad)?;
        let mut out = Vec::new();
        for _ in 0..n {
            let blob = r.string().map_err(bad)?.to_vec();
            let comment = String::from_utf8_lossy(r.string().map_err(bad)?).into_owned();
            out.push((blob, comment));
        }
        Ok(out)
    }
}

/// One request and its reply on an agent connection.
fn exchange(s: &mut UnixStream, msg: &[u8]) -> Result<Vec<u8>, AgentError> {
    let mut framed = Vec::with_capacity(msg.len() + 4);
    Writer::new(&mut framed).string(msg);
    s.write_all(&framed).map_err(AgentError::Io)?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).map_err(AgentError::Io)?;
    let n = u32::from_be_bytes(len) as usize;
    if n == 0 || n > MAX_REPLY {
        return Err(AgentError::ReplyTooLong);
    }
    let mut reply = vec![0u8; n];
    s.read_exact(&mut reply).map_err(AgentError::Io)?;
    Ok(reply)
}

/// session-bind@openssh.com on agent connection `s`: the server's host key,
/// the session id, the host key's signature of it, and whether `s` is a
/// forwarded connection (one the server opened back to us). The agent
/// checks the signature and records the hop.
pub fn bind_session(
    s: &mut UnixStream,
    b: &SessionBinding<'_>,
    forwarding: bool,
) -> Result<(), AgentError> {
    let mut msg = Vec::new();
    Writer::new(&mut msg)
        .u8(EXTENSION)
        .string(SESSION_BIND.as_bytes())
        .string(b.host_key)
        .string(b.session_id)
        .string(b.signature)
        .bool(forwarding);
    match exchange(s, &msg)?.first() {
        Some(&SUCCESS) => Ok(()),
        _ => Err(AgentError::BindRefused),
    }
}

/// One key held by an agent.
pub struct AgentKey {
    /// The agent, shared by its keys.
    pub agent: std::sync::Arc<Agent>,
    /// Public key blob.
    pub blob: Vec<u8>,
}

impl Signer for AgentKey {
    fn public_blob(&self) -> Vec<u8> {
        self.blob.clone()
    }

    fn sig_algs(&self) -> Vec<&'static str> {
        let t = sluice_proto::crypto::hostkey::blob_key_type(&self.blob).unwrap_or_default();
        sluice_proto::crypto::hostkey::sig_algs_for_key_type(t).to_vec()
    }

    fn sign(&self, sig_alg: &str, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        // A certificate is signed for under its plain algorithm's flags.
        let plain = sluice_proto::crypto::hostkey::cert::plain_sig_alg(sig_alg).unwrap_or(sig_alg);
        let flags = match plain {
            "rsa-sha2-256" => RSA_SHA2_256,
            "rsa-sha2-512" => RSA_SHA2_512,
            _ => 0,
        };
        let mut msg = Vec::new();
        Writer::new(&mut msg)
            .u8(SIGN_REQUEST)
            .string(&self.blob)
            .string(data)
            .u32(flags);
        let reply = self.agent.request(&msg).map_err(|_| CryptoError)?;
        let mut r = Reader::new(&reply);
        if r.u8().map_err(|_| CryptoError)? != SIGN_RESPONSE {
            return Err(CryptoError);
        }
        Ok(r.string().map_err(|_| CryptoError)?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn lists_and_signs_with_a_real_agent() {
        let dir = std::env::temp_dir().join(format!("sluice-agent-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("agent.sock");
        let Ok(mut agent) = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(std::process::Stdio::null())
            .spawn()
        else {
            return;
        };
        for _ in 0..100 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for t in ["ed25519", "rsa"] {
            let k = dir.join(t);
            assert!(Command::new("ssh-keygen")
                .args(["-q", "-N", "", "-t", t, "-f"])
                .arg(&k)
                .status()
                .unwrap()
                .success());
            assert!(Command::new("ssh-add")
                .arg("-q")
                .arg(&k)
                .env("SSH_AUTH_SOCK", &sock)
                .status()
                .unwrap()
                .success());
        }
        let missing = dir.join("no-such.sock");
        let e = Agent::connect(Some(&missing)).err().unwrap();
        assert!(matches!(&e, AgentError::Connect { path, .. } if *path == missing));
        assert!(e.to_string().starts_with("Error connecting to agent "));
        let a = std::sync::Arc::new(Agent::connect(Some(&sock)).unwrap());
        let ids = a.identities().unwrap();
        assert_eq!(ids.len(), 2);
        for (blob, _) in ids {
            let key = AgentKey {
                agent: a.clone(),
                blob: blob.clone(),
            };
            for alg in key.sig_algs() {
                let sig = key.sign(alg, b"data to sign").unwrap();
                sluice_proto::crypto::hostkey::verify(alg, &blob, &sig, b"data to sign").unwrap();
            }
        }
        let _ = agent.kill();
        let _ = agent.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
