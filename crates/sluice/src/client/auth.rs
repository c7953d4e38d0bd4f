//! The client's choice of authentication methods, as ssh makes it: the
//! methods of PreferredAuthentications (publickey, keyboard-interactive,
//! password) in that order, each tried while it has something left (keys,
//! NumberOfPasswordPrompts) and the server lists it as able to continue.
//! Passwords and prompts are asked on /dev/tty or through SSH_ASKPASS
//! (client/prompt.rs); BatchMode never asks.

use super::prompt;
use crate::log;
use sluice_proto::crypto::hostkey::{cert, Signer};
use sluice_proto::{Connection, Event};
use std::sync::Arc;

/// A key the client can offer: its public blob, where it came from, and
/// how to get a signer for it (loading a file may ask for a passphrase).
pub struct Identity {
    /// What to call it in logs (`/root/.ssh/id_ed25519`, `agent key ...`).
    pub label: String,
    /// Public key blob.
    pub public_blob: Vec<u8>,
    /// Signature algorithms, preferred first.
    pub sig_algs: Vec<&'static str>,
    /// Produces the signer when the server accepts the key.
    pub load: Box<dyn FnMut() -> Result<Arc<dyn Signer>, LoadError>>,
    /// `load` needs no passphrase, agent or token (an unencrypted key
    /// file): the signed request goes out at once, without asking first
    /// whether the server would take the key (saves a round trip).
    pub in_memory: bool,
    /// The agent that signs for the key, bound to the session before
    /// authentication (session-bind@openssh.com), as ssh does.
    pub agent: Option<Arc<crate::keys::agent::Agent>>,
}

const PUBLICKEY: &str = "publickey";

/// Why a key's signed request did not go out.
enum SignError {
    /// The private key did not load (passphrase, agent) or match.
    Load(LoadError),
    /// Loading worked, signing did not (an agent declined).
    Sign {
        /// The identity's label.
        label: String,
        /// Why.
        error: sluice_proto::Error,
    },
}

impl std::fmt::Display for SignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignError::Load(e) => write!(f, "{e}"),
            SignError::Sign { label, error } => write!(f, "{label}: {error}"),
        }
    }
}

/// Why an identity's private key could not be had for signing.
#[derive(Debug)]
pub enum LoadError {
    /// The key file or agent failed (passphrase, format, agent).
    Key(crate::keys::error::KeyError),
    /// A certificate that does not certify the private key found for it.
    CertMismatch,
    /// The private key is not the public key offered.
    KeyMismatch {
        /// The identity's label.
        label: String,
    },
    /// No identity at that index.
    NoSuchKey,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Key(e) => write!(f, "{e}"),
            LoadError::CertMismatch => {
                f.write_str("the certificate does not match its private key")
            }
            LoadError::KeyMismatch { label } => {
                write!(f, "{label}: the private key does not match its public key")
            }
            LoadError::NoSuchKey => f.write_str("no such key"),
        }
    }
}

impl std::error::Error for LoadError {}
/// Why authentication ended without success.
#[derive(Debug)]
pub enum AuthError {
    /// The engine refused an answer of ours.
    Engine(sluice_proto::Error),
    /// Every method the server lists was tried or is off: ssh's
    /// `USER@HOST: Permission denied (METHODS).`
    Denied {
        /// `user@host`.
        login: String,
        /// The methods the server last listed.
        methods: Vec<String>,
    },
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Engine(e) => write!(f, "{e}"),
            AuthError::Denied { login, methods } => {
                write!(f, "{login}: Permission denied ({}).", methods.join(","))
            }
        }
    }
}

impl std::error::Error for AuthError {}

const KBDINT: &str = "keyboard-interactive";
const PASSWORD: &str = "password";

/// The ssh_config settings that steer authentication.
#[derive(Debug, Clone)]
pub struct AuthPrefs {
    /// PreferredAuthentications, in order.
    pub preferred: Vec<String>,
    /// PubkeyAuthentication.
    pub pubkey: bool,
    /// KbdInteractiveAuthentication (ChallengeResponseAuthentication).
    pub kbdint: bool,
    /// PasswordAuthentication.
    pub password: bool,
    /// BatchMode: never ask the user anything.
    pub batch: bool,
    /// NumberOfPasswordPrompts: password and keyboard-interactive attempts.
    pub password_prompts: u32,
    /// KbdInteractiveDevices: the submethods hint sent with
    /// keyboard-interactive ("" lets the server choose).
    pub kbdint_devices: String,
}

impl Default for AuthPrefs {
    fn default() -> Self {
        AuthPrefs {
            preferred: ["gssapi-with-mic", "hostbased", PUBLICKEY, KBDINT, PASSWORD]
                .map(String::from)
                .to_vec(),
            pubkey: true,
            kbdint: true,
            password: true,
            batch: false,
            password_prompts: 3,
            kbdint_devices: String::new(),
        }
    }
}

/// What is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Idle,
    None,
    Querying(usize),
    Signing(usize),
    KbdInt,
    Password,
}

/// Client-side authentication for one connection.
pub struct ClientAuth {
    user: String,
    /// `user@host`, as ssh names the login in prompts and "Permission denied".
    login: String,
    identities: Vec<Identity>,
    prefs: AuthPrefs,
    step: Step,
    /// The next identity to offer.
    next_key: usize,
    kbdint_tries: u32,
    password_tries: u32,
    /// Methods given up on (nothing left, or the user could not be asked).
    exhausted: Vec<&'static str>,
    /// The server's last "can continue" list.
    server_methods: Option<Vec<String>>,
    tried_sig_alg: &'static str,
    /// The first request waits for the server's `server-sig-algs` (an RSA
    /// key's algorithm depends on them) or its SERVICE_ACCEPT.
    waiting_for_sig_algs: bool,
}

impl ClientAuth {
    /// Authentication for `user` at `host` offering `identities` in order.
    pub fn new(user: String, host: &str, identities: Vec<Identity>) -> Self {
        ClientAuth {
            login: format!("{user}@{host}"),
            user,
            identities,
            prefs: AuthPrefs::default(),
            step: Step::Idle,
            next_key: 0,
            kbdint_tries: 0,
            password_tries: 0,
            exhausted: Vec::new(),
            server_methods: None,
            tried_sig_alg: "",
            waiting_for_sig_algs: false,
        }
    }

    /// Replaces the ssh_config settings.
    pub fn set_prefs(&mut self, prefs: AuthPrefs) {
        self.prefs = prefs;
    }

    /// The method that succeeded, for the log.
    pub fn method(&self) -> &'static str {
        match self.step {
            Step::Idle | Step::None => "none",
            Step::Querying(_) | Step::Signing(_) => PUBLICKEY,
            Step::KbdInt => KBDINT,
            Step::Password => PASSWORD,
        }
    }

    /// Binds each agent that holds a key on offer to this session, so
    /// that keys added with destination constraints (`ssh-add -h`) may be
    /// used here. An agent without the extension is used as it is.
    fn bind_agents(&self, conn: &Connection) {
        let Some(b) = conn.session_binding() else {
            return;
        };
        let mut bound: Vec<&Arc<crate::keys::agent::Agent>> = Vec::new();
        for a in self.identities.iter().filter_map(|i| i.agent.as_ref()) {
            if bound.iter().any(|x| Arc::ptr_eq(x, a)) {
                continue;
            }
            bound.push(a);
            match a.bind_session(&b) {
                Ok(()) => log!(Debug1, "get_agent_identities: bound agent to hostkey"),
                Err(e) => log!(Debug1, "get_agent_identities: ssh_agent_bind_hostkey: {e}"),
            }
        }
    }

    fn enabled(&self, m: &str) -> bool {
        let asks = !self.prefs.batch;
        match m {
            PUBLICKEY => self.prefs.pubkey,
            KBDINT => self.prefs.kbdint && asks,
            PASSWORD => self.prefs.password && asks,
            _ => false,
        }
    }

    /// Handles the authentication events; others are left to the caller.
    pub fn on_event(&mut self, conn: &mut Connection, event: &Event) -> Result<(), AuthError> {
        match event {
            Event::AuthReady => {
                self.bind_agents(conn);
                // With a key to offer first, offer it at once: the `none`
                // probe ssh sends first only learns the method list, at the
                // cost of a round trip (0.24 s at 240 ms) before any data.
                let first = self.prefs.preferred.iter().find(|m| self.enabled(m));
                if first.is_some_and(|m| m == PUBLICKEY) && !self.identities.is_empty() {
                    // AuthReady comes right after our NEWKEYS, maybe before
                    // the server's EXT_INFO has been read.
                    let rsa = self.identities[0]
                        .sig_algs
                        .iter()
                        .any(|a| cert::plain_sig_alg(a).unwrap_or(a) == "rsa-sha2-256");
                    if rsa && conn.server_sig_algs().is_none() {
                        self.waiting_for_sig_algs = true;
                        return Ok(());
                    }
                    return self.next(conn);
                }
                conn.auth_none(&self.user);
                self.step = Step::None;
            }
            Event::ServerSigAlgs | Event::ServiceAccepted if self.waiting_for_sig_algs => {
                self.waiting_for_sig_algs = false;
                return self.next(conn);
            }
            Event::AuthFailure { methods, partial } => {
                log!(
                    Debug1,
                    "Authentications that can continue: {}",
                    methods.join(",")
                );
                if *partial {
                    log!(
                        Info,
                        "Authenticated using \"{}\" with partial success.",
                        self.method()
                    );
                    self.exhausted.clear();
                }
                if let Step::Querying(i) | Step::Signing(i) = self.step {
                    self.next_key = i + 1;
                }
                self.server_methods = Some(methods.clone());
                return self.next(conn);
            }
            Event::AuthPkOk { .. } => {
                if let Step::Querying(i) = self.step {
                    return self.sign_with(conn, i);
                }
            }
            Event::AuthInfoRequest {
                name,
                instruction,
                prompts,
            } => {
                // As ssh: INFO lines (to the -E log file if there is one).
                if !name.is_empty() {
                    log!(Info, "{name}");
                }
                if !instruction.is_empty() {
                    log!(Info, "{instruction}");
                }
                let mut answers = Vec::with_capacity(prompts.len());
                for p in prompts {
                    let a = prompt::read_passphrase(&p.prompt, p.echo);
                    answers.push(a.map(|a| a.to_string()).unwrap_or_default());
                }
                conn.auth_info_response(answers)
                    .map_err(AuthError::Engine)?;
            }
            Event::AuthPasswdChangeReq { prompt } => {
                log!(
                    Error,
                    "{}: the server requires a password change ({}); sluice cannot change passwords: log in with ssh or change it on the server",
                    self.login,
                    prompt.trim_end()
                );
                self.exhausted.push(PASSWORD);
                return self.next(conn);
            }
            _ => {}
        }
        Ok(())
    }

    /// Sends the next request: the current method while it has tries left,
    /// then the next preferred one the server lists; or gives up.
    fn next(&mut self, conn: &mut Connection) -> Result<(), AuthError> {
        let listed = |m: &str, list: &Option<Vec<String>>| {
            list.as_ref().is_none_or(|l| l.iter().any(|x| x == m))
        };
        let order: Vec<&'static str> = self
            .prefs
            .preferred
            .iter()
            .filter_map(|m| [PUBLICKEY, KBDINT, PASSWORD].into_iter().find(|x| x == m))
            .collect();
        for m in order {
            if !self.enabled(m) || self.exhausted.contains(&m) || !listed(m, &self.server_methods) {
                continue;
            }
            let sent = match m {
                PUBLICKEY => self.try_key(conn),
                KBDINT => self.try_kbdint(conn),
                _ => self.try_password(conn),
            };
            if sent {
                return Ok(());
            }
            log!(Debug1, "No more {m} attempts");
            self.exhausted.push(m);
        }
        self.step = Step::Idle;
        Err(AuthError::Denied {
            login: self.login.clone(),
            methods: self.server_methods.clone().unwrap_or_default(),
        })
    }

    fn pick_alg(&self, conn: &Connection, idx: usize) -> &'static str {
        let Some(id) = self.identities.get(idx) else {
            return "";
        };
        let server = conn.server_sig_algs();
        // server-sig-algs names plain algorithms; a certificate's goes by
        // the algorithm it signs with.
        let plain = |a: &'static str| cert::plain_sig_alg(a).unwrap_or(a);
        id.sig_algs
            .iter()
            .copied()
            .find(|a| server.is_none_or(|s| s.iter().any(|x| x == plain(a))))
            .or_else(|| id.sig_algs.first().copied())
            .unwrap_or("")
    }

    fn try_key(&mut self, conn: &mut Connection) -> bool {
        let idx = self.next_key;
        let Some(id) = self.identities.get(idx) else {
            return false;
        };
        let alg = self.pick_alg(conn, idx);
        log!(Debug1, "Offering public key: {}", id.label);
        self.tried_sig_alg = alg;
        if id.in_memory {
            return self.sign_at_once(conn, idx);
        }
        conn.auth_publickey_query(&self.user, alg, &id.public_blob);
        self.step = Step::Querying(idx);
        true
    }

    /// Sends the signed request without the query first; a key that will
    /// not load or sign is skipped, as after a refused query.
    fn sign_at_once(&mut self, conn: &mut Connection, idx: usize) -> bool {
        match self.send_signed(conn, idx) {
            Ok(()) => true,
            Err(e) => {
                log!(Info, "{e}");
                self.next_key = idx + 1;
                self.try_key(conn)
            }
        }
    }

    /// Loads key `idx` and sends the signed request; on success the answer
    /// is awaited (`Step::Signing`).
    fn send_signed(&mut self, conn: &mut Connection, idx: usize) -> Result<(), SignError> {
        let Some(id) = self.identities.get_mut(idx) else {
            return Err(SignError::Load(LoadError::NoSuchKey));
        };
        let signer = (id.load)().map_err(SignError::Load)?;
        if signer.public_blob() != id.public_blob {
            return Err(SignError::Load(LoadError::KeyMismatch {
                label: id.label.clone(),
            }));
        }
        conn.auth_publickey_sign(&self.user, self.tried_sig_alg, signer.as_ref())
            .map_err(|error| SignError::Sign {
                label: id.label.clone(),
                error,
            })?;
        self.step = Step::Signing(idx);
        Ok(())
    }

    fn sign_with(&mut self, conn: &mut Connection, idx: usize) -> Result<(), AuthError> {
        let Some(id) = self.identities.get(idx) else {
            return Ok(());
        };
        log!(Debug1, "Server accepts key: {}", id.label);
        match self.send_signed(conn, idx) {
            Ok(()) => Ok(()),
            // An agent may refuse (a key added with -c, declined): go on
            // with the next key, as ssh does.
            Err(e) => {
                match &e {
                    SignError::Sign { .. } => {
                        log!(Error, "sign_and_send_pubkey: signing failed for {e}")
                    }
                    SignError::Load(m) => log!(Info, "{m}"),
                }
                self.next_key = idx + 1;
                self.next(conn)
            }
        }
    }

    fn try_kbdint(&mut self, conn: &mut Connection) -> bool {
        if self.kbdint_tries >= self.prefs.password_prompts || !prompt::available() {
            return false;
        }
        self.kbdint_tries += 1;
        log!(Debug1, "Next authentication method: {KBDINT}");
        conn.auth_kbdint(&self.user, &self.prefs.kbdint_devices);
        self.step = Step::KbdInt;
        true
    }

    fn try_password(&mut self, conn: &mut Connection) -> bool {
        if self.password_tries >= self.prefs.password_prompts {
            return false;
        }
        if self.password_tries > 0 {
            log!(Error, "Permission denied, please try again.");
        }
        self.password_tries += 1;
        log!(Debug1, "Next authentication method: {PASSWORD}");
        let Some(pw) = prompt::read_passphrase(&format!("{}'s password: ", self.login), false)
        else {
            return false;
        };
        conn.auth_password(&self.user, &pw);
        self.step = Step::Password;
        true
    }
}
