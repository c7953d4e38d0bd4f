//! ssh's escape sequences (`~.`, `~^Z`, `~?`, `~#`, `~B`, `~I`, `~R`,
//! `~V`, `~v`, `~~`; `~&` answered with a message), seen only right after a
//! newline. With a pty, stdin is read here, filtered, and the
//! rest written into a pipe whose read end is the channel's source.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// EscapeChar / `-e`: a character, `^X` for a control character, or
/// `none`. Returns None for `none`.
pub fn parse_escape_char(
    v: &str,
) -> Result<Option<u8>, crate::client::setting_error::SettingError> {
    let b = v.as_bytes();
    match b {
        _ if v.eq_ignore_ascii_case("none") => Ok(None),
        [c] => Ok(Some(*c)),
        [b'^', c] => Ok(Some(c & 31)),
        _ => Err(crate::client::setting_error::SettingError::BadEscapeChar(
            v.to_owned(),
        )),
    }
}

/// What an escape sequence asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `~.`: disconnect.
    Quit,
    /// `~^Z`: suspend sluice.
    Suspend,
    /// `~?`: list the escapes.
    Help,
    /// `~#`: list the connections.
    List,
    /// `~B`: send a BREAK.
    Break,
    /// `~I`: the connection's figures so far (OpenSSH 10's escape; here
    /// the `Metrics` summary, client/metrics.rs).
    Info,
    /// `~R`: re-key now.
    Rekey,
    /// `~v` (true) and `~V`: one log level more or less verbose.
    Verbosity(bool),
    /// `~&`: ssh's background escape, answered with a message.
    Background,
}

/// The escape state machine (ssh's process_escapes).
#[derive(Debug)]
pub struct Filter {
    ch: u8,
    last_was_cr: bool,
    last_was_escape: bool,
}

impl Filter {
    /// A filter for escape character `ch`; the start counts as a new line.
    pub fn new(ch: u8) -> Self {
        Filter {
            ch,
            last_was_cr: true,
            last_was_escape: false,
        }
    }

    /// Appends the bytes to send to `out` and the escapes seen to `actions`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, actions: &mut Vec<Action>) {
        for &b in input {
            if std::mem::take(&mut self.last_was_escape) {
                let act = match b {
                    b'.' => Some(Action::Quit),
                    0x1a => Some(Action::Suspend),
                    b'?' => Some(Action::Help),
                    b'#' => Some(Action::List),
                    b'B' => Some(Action::Break),
                    b'I' => Some(Action::Info),
                    b'R' => Some(Action::Rekey),
                    b'v' => Some(Action::Verbosity(true)),
                    b'V' => Some(Action::Verbosity(false)),
                    b'&' => Some(Action::Background),
                    _ => None,
                };
                if let Some(a) = act {
                    actions.push(a);
                    if a == Action::Quit {
                        return;
                    }
                    continue;
                }
                // `~~` sends one `~`; `~x` sends both.
                if b != self.ch {
                    out.push(self.ch);
                }
            } else if self.last_was_cr && b == self.ch {
                self.last_was_escape = true;
                continue;
            }
            self.last_was_cr = b == b'\r' || b == b'\n';
            out.push(b);
        }
    }
}

/// Most filtered input held while the channel's pipe is full.
const READ_CHUNK: usize = 16 << 10;

/// stdin through the filter into a pipe the channel reads.
pub struct Relay {
    filter: Filter,
    read: OwnedFd,
    write: Option<OwnedFd>,
    pending: Vec<u8>,
    pos: usize,
    stdin_eof: bool,
}

impl Relay {
    /// A relay for escape character `ch`.
    pub fn new(ch: u8) -> std::io::Result<Self> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        Ok(Relay {
            filter: Filter::new(ch),
            read,
            write: Some(write),
            pending: Vec::new(),
            pos: 0,
            stdin_eof: false,
        })
    }

    /// The pipe's read end: the channel's source.
    pub fn source_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// stdin while there is room, the pipe while output waits.
    pub fn watch_fds(&self, out: &mut Vec<libc::pollfd>) {
        let (fd, events) = match &self.write {
            Some(w) if self.pos < self.pending.len() => (w.as_raw_fd(), libc::POLLOUT),
            Some(_) if !self.stdin_eof => (0, libc::POLLIN),
            _ => return,
        };
        out.push(libc::pollfd {
            fd,
            events,
            revents: 0,
        });
    }

    /// Moves what stdin has into the pipe; returns the escapes typed.
    pub fn pump(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        loop {
            self.flush();
            if self.pos < self.pending.len() || self.stdin_eof || self.write.is_none() {
                break;
            }
            let mut buf = [0u8; READ_CHUNK];
            match rustix::io::read(rustix::stdio::stdin(), &mut buf) {
                Ok(0) => self.stdin_eof = true,
                Err(e) => {
                    let e = std::io::Error::from(e);
                    if crate::sys::fdio::would_block(&e)
                        || e.kind() == std::io::ErrorKind::Interrupted
                    {
                        break;
                    }
                    self.stdin_eof = true;
                }
                Ok(n) => {
                    self.pending.clear();
                    self.pos = 0;
                    let input = buf.get(..n).unwrap_or_default();
                    self.filter.feed(input, &mut self.pending, &mut actions);
                    if actions.contains(&Action::Quit) {
                        return actions;
                    }
                }
            }
        }
        if self.stdin_eof && self.pos >= self.pending.len() {
            // EOF reaches the channel through the pipe.
            self.write = None;
        }
        actions
    }

    fn flush(&mut self) {
        let Some(w) = &self.write else { return };
        while let Some(rest) = self.pending.get(self.pos..).filter(|r| !r.is_empty()) {
            match crate::sys::fdio::write_some(w.as_raw_fd(), rest) {
                Ok(n) => self.pos += n,
                Err(_) => break,
            }
        }
    }
}

/// `~?`: the escapes this client knows, as ssh lists them.
pub fn print_help(ch: u8) {
    let c = ch as char;
    let text = format!(
        "Supported escape sequences:\r\n {c}.   - terminate connection (and any multiplexed sessions)\r\n {c}B   - send a BREAK to the remote system\r\n {c}I   - show connection information (what limits the transfer)\r\n {c}R   - request rekey\r\n {c}V/v - decrease/increase verbosity (LogLevel)\r\n {c}^Z  - suspend ssh\r\n {c}#   - list forwarded connections\r\n {c}?   - this message\r\n {c}{c}   - send the escape character by typing it twice\r\n(Note that escapes are only recognized immediately after newline.)\r\n"
    );
    let _ = crate::sys::fdio::write_some(2, text.as_bytes());
}

/// `~#`: the open connections (one session here).
pub fn print_list(channel: u32, host: &str) {
    let text = format!(
        "The following connections are open:\r\n  #{channel} client-session (t4 [session] r0 i0/0 o0/0 e[write]/0 fd 4/5/6 sock -1 cc -1 io 0x01/0x00) to {host}\r\n"
    );
    let _ = crate::sys::fdio::write_some(2, text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> (Vec<u8>, Vec<Action>) {
        let mut f = Filter::new(b'~');
        let (mut out, mut acts) = (Vec::new(), Vec::new());
        f.feed(input, &mut out, &mut acts);
        (out, acts)
    }

    #[test]
    fn escapes_only_after_newline() {
        assert_eq!(run(b"~."), (vec![], vec![Action::Quit]));
        assert_eq!(run(b"ls\r~."), (b"ls\r".to_vec(), vec![Action::Quit]));
        assert_eq!(run(b"a~.b"), (b"a~.b".to_vec(), vec![]));
        assert_eq!(run(b"~~x"), (b"~x".to_vec(), vec![]));
        assert_eq!(run(b"~x"), (b"~x".to_vec(), vec![]));
        assert_eq!(
            run(b"\n~?~."),
            (b"\n".to_vec(), vec![Action::Help, Action::Quit])
        );
        assert_eq!(run(b"~\x1a"), (vec![], vec![Action::Suspend]));
        assert_eq!(run(b"\r~I"), (b"\r".to_vec(), vec![Action::Info]));
        assert!(matches!(parse_escape_char("none"), Ok(None)));
        assert!(matches!(parse_escape_char("^]"), Ok(Some(0x1d))));
        assert!(matches!(parse_escape_char("%"), Ok(Some(b'%'))));
        assert!(matches!(
            parse_escape_char("ab"),
            Err(crate::client::setting_error::SettingError::BadEscapeChar(v)) if v == "ab"
        ));
    }
}
