//! The server's login policy and its password and keyboard-interactive
//! checks, as sshd: the user must exist and pass AllowUsers / DenyUsers /
//! AllowGroups / DenyGroups (server/allow.rs); passwords are checked by PAM
//! (UsePAM yes, server/pam.rs, on a thread) or the shadow file (UsePAM no,
//! server/shadow.rs); PermitRootLogin other than yes refuses root passwords;
//! PermitEmptyPasswords; a failure is answered only after a delay (PAM's
//! own, or sshd's few milliseconds per user) without blocking the loop;
//! LoginGraceTime ends connections that have not authenticated.
//! MaxAuthTries is counted by the engine; this logs when it is reached.
//! AuthenticationMethods' progress (config/sshd/auth_methods.rs) is kept
//! here, so under privilege separation it lives in the monitor.

use crate::config::sshd::auth_methods::{Outcome, Progress};
use crate::config::sshd::{PermitRootLogin, ServerConfig as Sshd};
use crate::log;
use crate::server::pam::{self, FromPam};
use crate::server::session::{self, UserInfo};
use crate::server::{allow, shadow};
use sluice_proto::msg::{DisconnectReason, Prompt};
use sluice_proto::AuthMethodRequest;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

mod answers;

pub use answers::Answers;

/// What sshd gives PAM for users that must fail (invalid, or root refused),
/// so the check takes as long as a real one.
const BAD_PASSWORD: &str = "\u{8}\n\r\u{7f}INCORRECT";

/// The user name of a USERAUTH_REQUEST without a BSD authentication
/// style (`user:style`): sshd drops the style and logs in the user.
pub fn without_style(mut user: String) -> String {
    if let Some(at) = user.find(':') {
        user.truncate(at);
    }
    user
}

/// The methods listed as able to continue, in sshd's order.
pub fn offered_methods(cfg: &Sshd) -> Vec<String> {
    cfg.auth_methods()
}

/// The largest Banner file sent. It must fit, with the rest of the policy,
/// in one monitor message (privsep/wire.rs); sshd's own limit is 1 MiB.
pub const MAX_BANNER: usize = 112 * 1024;

/// The Banner file's text, or None (no banner) when it is missing,
/// unreadable, empty or too large; the last two are logged, as a person
/// would otherwise not know why the banner is not shown.
pub fn read_banner(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    let f = std::fs::File::open(path).ok()?;
    let read = f.take(MAX_BANNER as u64 + 1).read_to_string(&mut text);
    if let Err(e) = read {
        crate::log!(Error, "Banner {}: {e}; no banner sent", path.display());
        return None;
    }
    if text.len() > MAX_BANNER {
        crate::log!(
            Error,
            "Banner {} is larger than {MAX_BANNER} bytes; no banner sent (make it smaller)",
            path.display()
        );
        return None;
    }
    (!text.is_empty()).then_some(text)
}

/// PermitRootLogin: only `yes` lets root use a password (or an empty
/// one through `none`).
fn password_allowed_for(cfg: &Sshd, info: &UserInfo) -> bool {
    info.uid != 0 || cfg.permit_root_login == PermitRootLogin::Yes
}

/// A check in progress.
enum Work {
    Idle,
    /// PAM on its thread; `method` as logged.
    Pam {
        worker: pam::Worker,
        method: &'static str,
        /// The client owes answers to prompts we relayed.
        prompted: bool,
    },
    /// Keyboard-interactive without PAM: one "Password: " round.
    ShadowPrompt,
}

/// Per-connection authentication state of the server.
pub struct ServerAuth {
    peer: SocketAddr,
    started: Instant,
    /// The user of the current request, and its account if it may log in
    /// (looked up, and the refusal logged, once per name).
    user: Option<(String, Option<UserInfo>)>,
    work: Work,
    /// A failure waiting out its delay: when to send it, and the method.
    reject_at: Option<Instant>,
    timed_out: bool,
    /// AuthenticationMethods steps met so far, for the user of `user`
    /// (made when that user's configuration is known).
    progress: Option<Progress>,
    /// The user `progress` is for.
    progress_user: Option<String>,
    /// A `none` request was tried as an empty password (sshd tries it once).
    none_tried: bool,
}

impl ServerAuth {
    /// State for a connection from `peer`, accepted now.
    pub fn new(peer: SocketAddr) -> Self {
        ServerAuth {
            peer,
            started: Instant::now(),
            user: None,
            work: Work::Idle,
            reject_at: None,
            timed_out: false,
            progress: None,
            progress_user: None,
            none_tried: false,
        }
    }

    /// The user's progress through AuthenticationMethods under `cfg` (the
    /// configuration for the user of the current request).
    fn progress(&mut self, cfg: &Sshd) -> &mut Progress {
        self.progress.get_or_insert_with(|| Progress::new(cfg))
    }

    /// A request names `user`: false when an earlier step of
    /// AuthenticationMethods was met by another user (the engine refuses
    /// that: "Change of username or service not allowed"; a monitor ends
    /// the connection). Another user before any step starts afresh.
    pub fn same_user(&mut self, user: &str) -> bool {
        if self.progress_user.as_deref() == Some(user) {
            return true;
        }
        if self.progress.as_ref().is_some_and(Progress::started) {
            return false;
        }
        self.progress = None;
        self.progress_user = Some(user.to_owned());
        true
    }

    /// Ends the connection of a client that named another user after a
    /// step of AuthenticationMethods was met, as sshd does.
    pub fn change_of_user(&mut self, conn: &mut dyn Answers, user: &str) {
        log!(
            Info,
            "Change of username not allowed: {} -> {user} from {} port {}",
            self.progress_user.as_deref().unwrap_or(""),
            self.peer.ip(),
            self.peer.port()
        );
        conn.disconnect(
            DisconnectReason::PROTOCOL_ERROR,
            "Change of username or service not allowed",
        );
    }

    /// Whether `method` (keyboard-interactive: through `device`) can be
    /// tried now: enabled and next in some AuthenticationMethods list.
    pub fn method_allowed(&mut self, cfg: &Sshd, method: &str, device: Option<&str>) -> bool {
        self.progress(cfg).allows(method, device)
    }

    /// The methods to offer now (all of AuthenticationMethods' first
    /// steps, or what can continue after a partial success).
    pub fn offered(&mut self, cfg: &Sshd) -> Vec<String> {
        self.progress(cfg).offered()
    }

    /// "Accepted" or "Partial": what sshd's log line says for `method`
    /// succeeding now.
    pub fn verdict_word(&mut self, cfg: &Sshd, method: &str, device: Option<&str>) -> &'static str {
        self.progress(cfg).verdict_word(method, device)
    }

    /// A public key may meet a step: publickey is allowed now and the key
    /// did not meet an earlier step (logged as sshd does).
    pub fn publickey_allowed(&mut self, cfg: &Sshd, key_blob: &[u8]) -> bool {
        let p = self.progress(cfg);
        if !p.allows("publickey", None) {
            return false;
        }
        if p.key_used(&crate::keys::cert::plain_key(key_blob)) {
            log!(
                Info,
                "refusing previously-used {} key",
                crate::keys::key_type::sshd_key_type(key_blob)
            );
            return false;
        }
        true
    }

    /// `method` succeeded for the pending request (a signed one, for
    /// publickey: `key_blob`): accepted when that completes a list of
    /// AuthenticationMethods (true), partial success otherwise.
    pub fn succeed(
        &mut self,
        conn: &mut dyn Answers,
        cfg: &Sshd,
        method: &str,
        device: Option<&str>,
        key_blob: Option<&[u8]>,
    ) -> bool {
        let p = self.progress(cfg);
        if let Some(k) = key_blob {
            p.record_key(&crate::keys::cert::plain_key(k));
        }
        match p.complete(method, device) {
            Outcome::Complete => {
                conn.auth_accept();
                true
            }
            Outcome::Partial(methods) => {
                log!(
                    Debug1,
                    "{method} met a step of AuthenticationMethods; can continue: {}",
                    methods.join(",")
                );
                conn.auth_partial(methods);
                false
            }
        }
    }

    /// `user`'s account if it exists and may log in; logs why not, once.
    pub fn valid_user(&mut self, cfg: &Sshd, user: &str) -> Option<UserInfo> {
        if let Some((name, info)) = &self.user {
            if name == user {
                return info.clone();
            }
        }
        let (ip, port) = (self.peer.ip(), self.peer.port());
        let info = match session::lookup_user(user) {
            None => {
                log!(Info, "Invalid user {user} from {ip} port {port}");
                None
            }
            Some(info) => match allow::check(cfg, &info, ip) {
                Ok(()) => Some(info),
                Err(why) => {
                    log!(Info, "{why}");
                    None
                }
            },
        };
        self.user = Some((user.to_owned(), info.clone()));
        info
    }

    /// The user asked for, when the lookup found no such user (or one
    /// AllowUsers and friends refuse): sshd's "invalid user".
    pub fn invalid_user(&self) -> Option<&str> {
        match &self.user {
            Some((name, None)) => Some(name),
            _ => None,
        }
    }

    fn who(&self) -> String {
        match &self.user {
            Some((name, Some(_))) => name.clone(),
            Some((name, None)) => format!("invalid user {name}"),
            None => String::new(),
        }
    }

    /// Whether root may use a password here; logs the refusal as sshd.
    fn root_ok(&self, cfg: &Sshd, info: &UserInfo) -> bool {
        if password_allowed_for(cfg, info) {
            return true;
        }
        log!(
            Info,
            "ROOT LOGIN REFUSED FROM {} port {}",
            self.peer.ip(),
            self.peer.port()
        );
        false
    }

    /// A password, keyboard-interactive or none request (publickey is
    /// server/conn.rs's). Returns the account when it succeeded at once.
    pub fn on_request(
        &mut self,
        conn: &mut dyn Answers,
        cfg: &Sshd,
        user: &str,
        method: AuthMethodRequest,
    ) -> Option<UserInfo> {
        // A new request supersedes keyboard-interactive in progress.
        self.work = Work::Idle;
        if !self.same_user(user) {
            self.change_of_user(conn, user);
            return None;
        }
        let info = self.valid_user(cfg, user);
        // The engine offers only these; checked again where the decision
        // is made (the monitor must not trust its child to have filtered).
        let (name, device) = match &method {
            AuthMethodRequest::Password { .. } => ("password", None),
            AuthMethodRequest::KeyboardInteractive { .. } => {
                ("keyboard-interactive", cfg.use_pam.then_some("pam"))
            }
            _ => ("", None),
        };
        if !name.is_empty() && !self.method_allowed(cfg, name, device) {
            log!(
                Info,
                "{name} authentication for {user} refused: not enabled or not allowed at this step of AuthenticationMethods"
            );
            self.reject(conn);
            return None;
        }
        let allowed = info.as_ref().is_some_and(|i| self.root_ok(cfg, i));
        let rhost = self.peer.ip().to_string();
        match method {
            AuthMethodRequest::Password { password } => {
                let password = Zeroizing::new(password);
                let empty_ok = !password.is_empty() || cfg.permit_empty_passwords;
                if cfg.use_pam {
                    let pw = if allowed && empty_ok {
                        password
                    } else {
                        Zeroizing::new(BAD_PASSWORD.to_owned())
                    };
                    let mode = pam::Mode::Password(pw);
                    self.start_pam(conn, user, &rhost, mode, cfg, "password");
                    None
                } else {
                    let ok = shadow::check(user, &password, cfg.permit_empty_passwords);
                    self.finish(conn, cfg, ok && allowed && empty_ok, "password", None)
                }
            }
            AuthMethodRequest::KeyboardInteractive { .. } => {
                if cfg.use_pam {
                    let method = "keyboard-interactive/pam";
                    self.start_pam(conn, user, &rhost, pam::Mode::Interactive, cfg, method);
                } else {
                    let p = vec![Prompt {
                        prompt: "Password: ".into(),
                        echo: false,
                    }];
                    match conn.auth_info_request("", "", p) {
                        Ok(()) => self.work = Work::ShadowPrompt,
                        Err(_) => conn.auth_reject(),
                    }
                }
                None
            }
            // sshd's `none` method: with PermitEmptyPasswords and
            // PasswordAuthentication, an account whose password is empty
            // logs in without being asked (once per connection, and only
            // under AuthenticationMethods any, as no list can name it).
            AuthMethodRequest::None
                if !self.none_tried
                    && cfg.permit_empty_passwords
                    && cfg.password_authentication
                    && cfg.authentication_methods.is_empty() =>
            {
                self.none_tried = true;
                // As a password: an unknown user or refused root is checked
                // all the same (the time a check takes tells nothing), but
                // without sshd's ROOT LOGIN REFUSED line, as every ssh
                // connection sends `none`.
                let allowed = info.as_ref().is_some_and(|i| password_allowed_for(cfg, i));
                if cfg.use_pam {
                    let pw = if allowed { "" } else { BAD_PASSWORD };
                    let empty = pam::Mode::Password(Zeroizing::new(pw.to_owned()));
                    self.start_pam(conn, user, &rhost, empty, cfg, "none");
                    None
                } else {
                    let ok = shadow::check(user, "", true);
                    self.finish(conn, cfg, ok && allowed, "none", None)
                }
            }
            _ => {
                // `none` (and anything else): the list, without counting.
                conn.auth_reject();
                None
            }
        }
    }

    fn start_pam(
        &mut self,
        conn: &mut dyn Answers,
        user: &str,
        rhost: &str,
        mode: pam::Mode,
        cfg: &Sshd,
        method: &'static str,
    ) {
        match pam::start(
            &cfg.pam_service(),
            user,
            rhost,
            mode,
            cfg.permit_empty_passwords,
        ) {
            Ok(worker) => {
                self.work = Work::Pam {
                    worker,
                    method,
                    prompted: false,
                }
            }
            Err(e) => {
                log!(Error, "{e}");
                self.finish(conn, cfg, false, method, None);
            }
        }
    }

    /// The client's keyboard-interactive answers.
    pub fn on_info_response(
        &mut self,
        conn: &mut dyn Answers,
        cfg: &Sshd,
        answers: Vec<String>,
    ) -> Option<UserInfo> {
        let answers: Vec<Zeroizing<String>> = answers.into_iter().map(Zeroizing::new).collect();
        match std::mem::replace(&mut self.work, Work::Idle) {
            Work::Pam {
                worker,
                method,
                prompted: true,
            } => {
                worker.answer(answers);
                self.work = Work::Pam {
                    worker,
                    method,
                    prompted: false,
                };
                None
            }
            Work::ShadowPrompt => {
                let (name, info) = self.user.clone()?;
                let allowed = info.as_ref().is_some_and(|i| self.root_ok(cfg, i));
                let pw = answers.first().map_or("", |a| a.as_str());
                let empty_ok = !pw.is_empty() || cfg.permit_empty_passwords;
                let ok = shadow::check(&name, pw, cfg.permit_empty_passwords);
                self.finish(
                    conn,
                    cfg,
                    ok && allowed && empty_ok,
                    "keyboard-interactive",
                    None,
                )
            }
            other => {
                self.work = other;
                None
            }
        }
    }

    /// Logs the verdict and answers it: success at once, failure after
    /// `delay` (PAM's) or sshd's per-user few milliseconds.
    fn finish(
        &mut self,
        conn: &mut dyn Answers,
        cfg: &Sshd,
        ok: bool,
        method: &str,
        delay: Option<Duration>,
    ) -> Option<UserInfo> {
        self.work = Work::Idle;
        let (ip, port) = (self.peer.ip(), self.peer.port());
        let who = self.who();
        let info = self.user.as_ref().and_then(|(_, i)| i.clone());
        if ok && info.is_some() {
            // "keyboard-interactive/pam": the method and its device.
            let (name, device) = match method.split_once('/') {
                Some((m, d)) => (m, Some(d)),
                None => (method, None),
            };
            let word = self.verdict_word(cfg, name, device);
            log!(Info, "{word} {method} for {who} from {ip} port {port} ssh2");
            return self
                .succeed(conn, cfg, name, device, None)
                .then_some(info)
                .flatten();
        }
        // sshd logs a failed `none` (the empty password) at VERBOSE only:
        // every client sends one.
        if method == "none" {
            log!(Verbose, "Failed none for {who} from {ip} port {port} ssh2");
        } else {
            log!(Info, "Failed {method} for {who} from {ip} port {port} ssh2");
        }
        let name = self.user.as_ref().map_or("", |(n, _)| n.as_str());
        let delay = delay.unwrap_or_else(|| user_delay(name));
        self.reject_at = Some(Instant::now() + delay);
        None
    }

    /// Rejects a publickey request after sshd's per-user delay, so that an
    /// unknown user, a known one and a key not listed all take as long.
    pub fn reject_publickey(&mut self) {
        let name = self.user.as_ref().map_or("", |(n, _)| n.as_str());
        self.reject_at = Some(Instant::now() + user_delay(name));
    }

    /// Rejects the pending request now, logging when MaxAuthTries ended
    /// the connection.
    pub fn reject(&mut self, conn: &mut dyn Answers) {
        conn.auth_reject();
        if conn.is_closed() {
            let (ip, port) = (self.peer.ip(), self.peer.port());
            log!(
                Error,
                "maximum authentication attempts exceeded for {} from {ip} port {port} ssh2",
                self.who()
            );
            log!(
                Info,
                "Disconnecting authenticating user {} {ip} port {port}: Too many authentication failures",
                self.user.as_ref().map_or("", |(n, _)| n.as_str())
            );
        }
    }

    /// Runs every loop turn: LoginGraceTime, delayed failures, PAM's
    /// prompts and verdicts. Returns the account when PAM accepted.
    pub fn tick(
        &mut self,
        conn: &mut dyn Answers,
        cfg: &Sshd,
        authenticated: bool,
    ) -> Option<UserInfo> {
        let now = Instant::now();
        if !authenticated
            && !self.timed_out
            && cfg.login_grace_time > 0
            && now.duration_since(self.started) >= Duration::from_secs(cfg.login_grace_time)
        {
            self.timed_out = true;
            let (ip, port) = (self.peer.ip(), self.peer.port());
            log!(Info, "Timeout before authentication for {ip} port {port}");
            conn.disconnect(
                DisconnectReason::PROTOCOL_ERROR,
                "Timeout before authentication",
            );
            return None;
        }
        if self.reject_at.is_some_and(|t| now >= t) {
            self.reject_at = None;
            self.reject(conn);
        }
        let Work::Pam {
            worker,
            method,
            prompted,
        } = &mut self.work
        else {
            return None;
        };
        match worker.poll()? {
            FromPam::Prompts {
                instruction,
                prompts,
            } => {
                let prompts = prompts
                    .into_iter()
                    .map(|(prompt, echo)| Prompt { prompt, echo })
                    .collect();
                match conn.auth_info_request("", &instruction, prompts) {
                    Ok(()) => *prompted = true,
                    // Not keyboard-interactive: PAM cannot be answered.
                    Err(_) => worker.answer(Vec::new()),
                }
                None
            }
            FromPam::Done(r, delay) => {
                let method = *method;
                // sshd's words: an error through keyboard-interactive
                // (sshpam_query), a debug line for a password.
                match &r {
                    Err(e) if method == "password" || method == "none" => log!(
                        Debug1,
                        "PAM: password authentication failed for {}: {e}",
                        self.who()
                    ),
                    Err(e) => {
                        log!(Error, "PAM: {e} for {} from {}", self.who(), self.peer.ip())
                    }
                    Ok(_) => {}
                }
                // Refusals were logged with the request.
                let allowed = match &self.user {
                    Some((_, Some(info))) => {
                        info.uid != 0 || cfg.permit_root_login == PermitRootLogin::Yes
                    }
                    _ => false,
                };
                self.finish(conn, cfg, r.is_ok() && allowed, method, Some(delay))
            }
        }
    }

    /// How soon `tick` must run: PAM polling, a delayed failure, the grace time.
    pub fn tick_interval(&self, cfg: &Sshd, authenticated: bool) -> Option<Duration> {
        let now = Instant::now();
        let mut t: Option<Duration> = None;
        let mut min = |d: Duration| t = Some(t.map_or(d, |x| x.min(d)));
        if matches!(self.work, Work::Pam { .. }) {
            min(Duration::from_millis(10));
        }
        if let Some(at) = self.reject_at {
            min(at.saturating_duration_since(now));
        }
        if !authenticated && !self.timed_out && cfg.login_grace_time > 0 {
            let end = self.started + Duration::from_secs(cfg.login_grace_time);
            min(end.saturating_duration_since(now));
        }
        t
    }
}

/// sshd's user_specific_delay: 5 ms plus up to 4 ms derived from the name,
/// so failures take the same time for a given user whether it exists or not.
fn user_delay(user: &str) -> Duration {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, user.as_bytes());
    let b = d.as_ref();
    let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Duration::from_micros(5000 + u64::from(n % 4000))
}
