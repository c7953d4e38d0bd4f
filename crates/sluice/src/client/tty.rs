//! The client's terminal, as ssh handles it: whether to ask for a pty
//! (-t, -tt, -T, RequestTTY), the pty-req built from the local terminal
//! (TERM, size, RFC 4254 8 modes), raw mode restored on every exit path
//! (return, error, fatal signal, suspend), SIGWINCH sent as window-change,
//! and stdin read through the escape filter (client/escape.rs).

use crate::client::escape::{self, Action, Relay};
use crate::client::setting_error::SettingError;
use crate::log;
use rustix::process::Signal;
use rustix::termios::{tcgetattr, tcsetattr, Termios};
use rustix::termios::{InputModes, LocalModes, OptionalActions, OutputModes, SpecialCodeIndex};
use sluice_proto::msg::ChannelRequestKind;
use sluice_proto::{ChannelId, Connection};
use std::ffi::c_int;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Why the session's terminal could not be set up.
#[derive(Debug)]
pub enum TtyError {
    /// The engine refused the pty-req.
    Engine(sluice_proto::Error),
    /// The escape filter's pipe could not be made.
    Pipe(std::io::Error),
    /// The server refused the pty and one was required (-t, RequestTTY yes).
    Refused,
}

impl std::fmt::Display for TtyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TtyError::Engine(e) => write!(f, "{e}"),
            TtyError::Pipe(e) => write!(f, "pipe: {e}"),
            TtyError::Refused => f.write_str("PTY allocation request failed on channel 0"),
        }
    }
}

impl std::error::Error for TtyError {}

/// Whether to request a pty, as ssh decides: RequestTTY (or -t/-T, which
/// override it) with auto meaning "for a shell"; never when stdin is not a
/// terminal unless forced. Returns (request a pty, print ssh's warning).
pub fn decide(
    flag: i8,
    config: Option<&str>,
    has_command: bool,
    no_session: bool,
    stdin_tty: bool,
) -> Result<(bool, bool), SettingError> {
    let mode = match flag {
        f if f < 0 => "no".to_owned(),
        1 => "yes".to_owned(),
        f if f > 1 => "force".to_owned(),
        _ => config.unwrap_or("auto").to_ascii_lowercase(),
    };
    let mut want = match mode.as_str() {
        "yes" | "force" => true,
        "no" | "auto" => false,
        _ => {
            return Err(SettingError::bad(
                "RequestTTY",
                config.unwrap_or_default(),
                "yes, no, force or auto",
            ))
        }
    };
    if !has_command {
        want = mode != "no";
    }
    if no_session {
        want = false;
    }
    if !stdin_tty && mode != "force" {
        return Ok((false, want));
    }
    Ok((want, false))
}

/// fd 0 is a terminal.
pub fn stdin_is_tty() -> bool {
    rustix::termios::isatty(std::io::stdin())
}

/// What goes into the pty-req, and how to handle the local terminal.
#[derive(Debug, Clone)]
pub struct TtyPlan {
    /// Escape character, None for `none`.
    pub escape: Option<u8>,
    /// Explicitly asked for (-t, RequestTTY yes/force): a refused pty ends
    /// the session, as in ssh.
    pub required: bool,
}

/// The window size of `fd`'s terminal: (cols, rows, width px, height px),
/// zeros when it is not a terminal.
pub(crate) fn window_size(fd: impl AsFd) -> (u32, u32, u32, u32) {
    let Ok(ws) = rustix::termios::tcgetwinsize(fd) else {
        return (0, 0, 0, 0);
    };
    (
        u32::from(ws.ws_col),
        u32::from(ws.ws_row),
        u32::from(ws.ws_xpixel),
        u32::from(ws.ws_ypixel),
    )
}

/// `fd`'s terminal modes encoded for a pty-req (RFC 4254 8); none when it
/// is not a terminal.
///
/// By number: client/mux_session.rs hands a passenger's stdin so
/// (sys::tty says why that is safe).
pub(crate) fn modes_of(fd: RawFd) -> Vec<u8> {
    match crate::sys::tty::tcgetattr_of_number(fd) {
        Ok(tio) => crate::ttymodes::encode(&tio),
        Err(_) => vec![0],
    }
}

/// The terminal as it was before raw mode; read by the signal handler.
static SAVED: OnceLock<Termios> = OnceLock::new();
/// Raw mode is on.
static RAW: AtomicBool = AtomicBool::new(false);
/// The SIGWINCH pipe (read end, write end), made once for the process:
/// the handler writes to it, each session reads a duplicate of the read
/// end.
static WINCH: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();

pub(crate) fn enter_raw() {
    // fd 0 as rustix names it: no std handle (its lock) on this path.
    let stdin = rustix::stdio::stdin();
    let Ok(mut tio) = tcgetattr(stdin) else {
        return;
    };
    let _ = SAVED.set(tio.clone());
    // ssh's enter_raw_mode.
    tio.input_modes |= InputModes::IGNPAR;
    tio.input_modes -= InputModes::ISTRIP
        | InputModes::INLCR
        | InputModes::IGNCR
        | InputModes::ICRNL
        | InputModes::IXON
        | InputModes::IXANY
        | InputModes::IXOFF
        | InputModes::IUCLC;
    tio.local_modes -= LocalModes::ISIG
        | LocalModes::ICANON
        | LocalModes::ECHO
        | LocalModes::ECHOE
        | LocalModes::ECHOK
        | LocalModes::ECHONL
        | LocalModes::IEXTEN;
    tio.output_modes -= OutputModes::OPOST;
    tio.special_codes[SpecialCodeIndex::VMIN] = 1;
    tio.special_codes[SpecialCodeIndex::VTIME] = 0;
    install_fatal_handlers();
    if tcsetattr(stdin, OptionalActions::Drain, &tio).is_ok() {
        RAW.store(true, Ordering::SeqCst);
        crate::log::RAW_TERMINAL.store(true, Ordering::SeqCst);
    }
}

/// Puts the terminal back; async-signal-safe (a signal handler calls it).
pub(crate) fn leave_raw() {
    if RAW.swap(false, Ordering::SeqCst) {
        crate::log::RAW_TERMINAL.store(false, Ordering::SeqCst);
        if let Some(t) = SAVED.get() {
            // A raw ioctl (TCSETSW2): async-signal-safe.
            let _ = tcsetattr(rustix::stdio::stdin(), OptionalActions::Drain, t);
        }
    }
}

extern "C" fn on_fatal(sig: c_int) {
    leave_raw();
    // Re-raised with the default action (both async-signal-safe).
    crate::sys::signal::default(sig);
    crate::sys::signal::raise(sig);
}

extern "C" fn on_winch(_: c_int) {
    // OnceLock::get is an atomic load, write(2) a raw system call: both
    // async-signal-safe; a full pipe just drops the byte.
    if let Some((_, w)) = WINCH.get() {
        let _ = rustix::io::write(w, &[1u8]);
    }
}

fn install_fatal_handlers() {
    for sig in [Signal::HUP, Signal::INT, Signal::TERM, Signal::QUIT] {
        crate::sys::signal::set_handler(sig.as_raw(), on_fatal);
    }
}

/// The SIGWINCH pipe's read end (a duplicate: the pipe stays open for the
/// process, the handler writes to it).
fn winch_pipe() -> Option<OwnedFd> {
    use rustix::pipe::{pipe_with, PipeFlags};
    if WINCH.get().is_none() {
        let pipe = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).ok()?;
        // Lost only to another thread that made one at the same moment.
        let _ = WINCH.set(pipe);
    }
    let r = WINCH.get()?.0.try_clone().ok()?;
    crate::sys::signal::set_handler(Signal::WINCH.as_raw(), on_winch);
    Some(r)
}

/// The terminal side of a session with a pty.
pub struct TtySession {
    plan: TtyPlan,
    host: String,
    channel: Option<ChannelId>,
    /// The pty-req's reply has not arrived yet (it comes before the
    /// shell's or exec's: replies are in order).
    reply_pending: bool,
    winch: Option<OwnedFd>,
    relay: Option<Relay>,
    size: (u32, u32, u32, u32),
    /// `~I` was typed: the session prints the connection's figures.
    info_wanted: bool,
}

impl TtySession {
    /// A session for `host` (named in "Connection to host closed.").
    pub fn new(plan: TtyPlan, host: &str) -> Self {
        TtySession {
            plan,
            host: host.to_owned(),
            channel: None,
            reply_pending: false,
            winch: None,
            relay: None,
            size: (0, 0, 0, 0),
            info_wanted: false,
        }
    }

    /// Sends the pty-req for the opened channel and takes over the local
    /// terminal; returns the fd the channel's data is read from (stdin, or
    /// the escape filter's pipe).
    pub fn start(&mut self, conn: &mut Connection, id: ChannelId) -> Result<RawFd, TtyError> {
        let term = std::env::var("TERM").unwrap_or_default();
        let modes = modes_of(0);
        self.size = window_size(std::io::stdin());
        let (cols, rows, width_px, height_px) = self.size;
        let req = ChannelRequestKind::PtyReq {
            term,
            cols,
            rows,
            width_px,
            height_px,
            modes,
        };
        conn.channel_request(id, req, true)
            .map_err(TtyError::Engine)?;
        self.channel = Some(id);
        self.reply_pending = true;
        if !stdin_is_tty() {
            // -tt with stdin not a terminal: no raw mode, no escapes (ssh).
            return Ok(0);
        }
        enter_raw();
        self.winch = winch_pipe();
        match self.plan.escape {
            Some(ch) => {
                let relay = Relay::new(ch).map_err(TtyError::Pipe)?;
                let fd = relay.source_fd();
                self.relay = Some(relay);
                Ok(fd)
            }
            None => Ok(0),
        }
    }

    /// A channel reply: true if it answered the pty-req (consumed here).
    pub fn on_reply(&mut self, success: bool) -> Result<bool, TtyError> {
        if !std::mem::take(&mut self.reply_pending) {
            return Ok(false);
        }
        if !success {
            leave_raw();
            if self.plan.required {
                return Err(TtyError::Refused);
            }
            crate::log!(Error, "{}", TtyError::Refused);
        }
        Ok(true)
    }

    /// Fds to wake for: stdin and the escape pipe, the SIGWINCH pipe.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        if let Some(w) = &self.winch {
            out.push(libc::pollfd {
                fd: w.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if let Some(r) = &self.relay {
            r.watch_fds(out);
        }
    }

    /// `~I` was typed since the last call.
    pub fn take_info_request(&mut self) -> bool {
        std::mem::take(&mut self.info_wanted)
    }

    /// Moves stdin through the escape filter, acts on escapes and window
    /// size changes. Returns true when the user asked to disconnect (`~.`).
    pub fn tick(&mut self, conn: &mut Connection) -> bool {
        let Some(id) = self.channel else {
            return false;
        };
        if let Some(w) = &self.winch {
            let mut buf = [0u8; 64];
            // Non-blocking: Err(EAGAIN) when no size change came.
            if rustix::io::read(w, &mut buf).is_ok_and(|n| n > 0) {
                self.send_size(conn, id);
            }
        }
        let actions = match self.relay.as_mut() {
            Some(r) => r.pump(),
            None => return false,
        };
        for a in actions {
            match a {
                Action::Quit => {
                    self.finish();
                    return true;
                }
                Action::Suspend => {
                    self.suspend();
                    self.send_size(conn, id);
                }
                Action::Help => escape::print_help(self.plan.escape.unwrap_or(b'~')),
                Action::List => escape::print_list(id.0, &self.host),
                Action::Info => self.info_wanted = true,
                Action::Break => {
                    let _ = conn.channel_request(id, ChannelRequestKind::Break { ms: 1000 }, false);
                }
                Action::Rekey => {
                    log!(Debug1, "re-key requested (~R)");
                    conn.rekey();
                }
                Action::Verbosity(up) => {
                    let l = crate::log::step_level(up);
                    let ch = self.plan.escape.unwrap_or(b'~') as char;
                    let c = if up { 'v' } else { 'V' };
                    crate::err!("{ch}{c} [LogLevel {}]\r\n", l.name());
                }
                Action::Background => self.background(),
            }
        }
        false
    }

    fn send_size(&mut self, conn: &mut Connection, id: ChannelId) {
        let size = window_size(std::io::stdin());
        if size == self.size {
            return;
        }
        self.size = size;
        let (cols, rows, width_px, height_px) = size;
        log!(Debug2, "window-change {cols}x{rows}");
        let req = ChannelRequestKind::WindowChange {
            cols,
            rows,
            width_px,
            height_px,
        };
        let _ = conn.channel_request(id, req, false);
    }

    /// `~&`: not offered; said, as the escapes ssh knows and sluice lacks.
    /// (Going to the background here lost the session's end now and then
    /// in tests/interactive.rs: left for a later stop.)
    fn background(&mut self) {
        let ch = self.plan.escape.unwrap_or(b'~') as char;
        crate::err!(
            "{ch}& is not supported by sluice: start it with -f (ForkAfterAuthentication) to run in the background\r\n"
        );
    }

    /// `~^Z`: the terminal restored and blocking while we are stopped.
    fn suspend(&mut self) {
        let ch = self.plan.escape.unwrap_or(b'~') as char;
        crate::err!("{ch}^Z [suspend ssh]\r\n");
        leave_raw();
        let flags: Vec<(i32, i32)> = [0, 1, 2]
            .iter()
            .filter_map(|&fd| {
                crate::sys::fdio::set_nonblocking(fd, false)
                    .ok()
                    .map(|f| (fd, f))
            })
            .collect();
        // Stops this process until SIGCONT.
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TSTP);
        // Reversed: 0, 1 and 2 often share one open file (the terminal),
        // so only the first call saw the original flags.
        for (fd, f) in flags.into_iter().rev() {
            crate::sys::fdio::restore_flags(fd, f);
        }
        enter_raw();
    }

    /// The session ended (channel closed or `~.`): the terminal restored,
    /// and ssh's closing line at the Info level.
    pub fn finish(&mut self) {
        let was_raw = RAW.load(Ordering::SeqCst);
        leave_raw();
        if self.channel.take().is_some() && was_raw {
            log!(Info, "Connection to {} closed.", self.host);
        }
    }
}

impl Drop for TtySession {
    fn drop(&mut self) {
        leave_raw();
    }
}

#[cfg(test)]
mod tests {
    use super::decide;

    #[test]
    fn decisions_follow_ssh() {
        // (flag, RequestTTY, command, stdin tty) -> (pty, warning)
        let d = |f, c, cmd, tty| decide(f, c, cmd, false, tty).unwrap();
        assert_eq!(d(0, None, false, true), (true, false));
        assert_eq!(d(0, None, true, true), (false, false));
        assert_eq!(d(1, None, true, true), (true, false));
        assert_eq!(d(1, None, true, false), (false, true));
        assert_eq!(d(0, None, false, false), (false, true));
        assert_eq!(d(-1, None, false, false), (false, false));
        assert_eq!(d(2, None, true, false), (true, false));
        assert_eq!(d(0, Some("force"), true, false), (true, false));
        assert_eq!(d(0, Some("no"), false, true), (false, false));
        assert_eq!(d(-1, Some("yes"), false, true), (false, false));
        assert!(decide(0, Some("bogus"), false, false, true).is_err());
    }
}
