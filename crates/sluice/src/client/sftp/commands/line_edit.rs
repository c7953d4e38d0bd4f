//! The prompt's line editing when stdin is a terminal, as sftp's libedit
//! gives it: arrows move and recall earlier commands, Home/End and ^A/^E,
//! Backspace/Delete, ^U/^K/^W to cut, ^C to drop the line, ^D on an empty
//! line to leave. The terminal is raw only while a line is read, so
//! `!command` and transfers see it as usual. Characters are taken as one
//! column each.

use rustix::termios::{
    tcgetattr, tcsetattr, InputModes, LocalModes, OptionalActions, SpecialCodeIndex, Termios,
};
use std::io::Write;

/// One key, from the bytes the terminal sends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Key {
    Byte(u8),
    Left,
    Right,
    Home,
    End,
    Up,
    Down,
    Backspace,
    Delete,
    KillStart,
    KillEnd,
    KillWord,
    Enter,
    Eof,
    Cancel,
    Ignore,
}

/// The line being edited and the cursor (a byte offset on a character
/// boundary).
#[derive(Default)]
struct Line {
    buf: Vec<u8>,
    cur: usize,
}

fn is_cont(b: u8) -> bool {
    b & 0xc0 == 0x80
}

impl Line {
    fn prev(&self, mut i: usize) -> usize {
        while i > 0 {
            i -= 1;
            if !self.buf.get(i).copied().is_some_and(is_cont) {
                break;
            }
        }
        i
    }

    fn next(&self, mut i: usize) -> usize {
        if i < self.buf.len() {
            i += 1;
            while self.buf.get(i).copied().is_some_and(is_cont) {
                i += 1;
            }
        }
        i
    }

    fn set(&mut self, text: &[u8]) {
        self.buf = text.to_vec();
        self.cur = self.buf.len();
    }

    /// Applies an editing key (history and Enter are the editor's).
    fn apply(&mut self, k: Key) {
        match k {
            Key::Byte(b) => {
                self.buf.insert(self.cur, b);
                self.cur += 1;
            }
            Key::Left => self.cur = self.prev(self.cur),
            Key::Right => self.cur = self.next(self.cur),
            Key::Home => self.cur = 0,
            Key::End => self.cur = self.buf.len(),
            Key::Backspace if self.cur > 0 => {
                let p = self.prev(self.cur);
                self.buf.drain(p..self.cur);
                self.cur = p;
            }
            Key::Delete => {
                let n = self.next(self.cur);
                self.buf.drain(self.cur..n);
            }
            Key::KillStart => {
                self.buf.drain(..self.cur);
                self.cur = 0;
            }
            Key::KillEnd => self.buf.truncate(self.cur),
            Key::KillWord => {
                let mut p = self.cur;
                while p > 0 && self.buf.get(p - 1) == Some(&b' ') {
                    p -= 1;
                }
                while p > 0 && self.buf.get(p - 1) != Some(&b' ') {
                    p -= 1;
                }
                self.buf.drain(p..self.cur);
                self.cur = p;
            }
            _ => {}
        }
    }

    /// Columns from the cursor to the end of the line.
    fn after_cursor(&self) -> usize {
        self.buf
            .get(self.cur..)
            .unwrap_or_default()
            .iter()
            .filter(|b| !is_cont(**b))
            .count()
    }
}

/// Reads one key from `next` (a byte source).
fn key(next: &mut dyn FnMut() -> Option<u8>) -> Key {
    let Some(b) = next() else {
        return Key::Eof;
    };
    match b {
        b'\r' | b'\n' => Key::Enter,
        0x7f | 0x08 => Key::Backspace,
        0x01 => Key::Home,
        0x05 => Key::End,
        0x02 => Key::Left,
        0x06 => Key::Right,
        0x10 => Key::Up,
        0x0e => Key::Down,
        0x15 => Key::KillStart,
        0x0b => Key::KillEnd,
        0x17 => Key::KillWord,
        0x04 => Key::Eof,
        0x03 => Key::Cancel,
        0x1b => match next() {
            Some(b'[') | Some(b'O') => {
                let mut p = next();
                let mut num = 0u32;
                while let Some(d @ b'0'..=b'9') = p {
                    num = num * 10 + u32::from(d - b'0');
                    p = next();
                }
                match (p, num) {
                    (Some(b'A'), _) => Key::Up,
                    (Some(b'B'), _) => Key::Down,
                    (Some(b'C'), _) => Key::Right,
                    (Some(b'D'), _) => Key::Left,
                    (Some(b'H'), _) => Key::Home,
                    (Some(b'F'), _) => Key::End,
                    (Some(b'~'), 1 | 7) => Key::Home,
                    (Some(b'~'), 4 | 8) => Key::End,
                    (Some(b'~'), 3) => Key::Delete,
                    _ => Key::Ignore,
                }
            }
            _ => Key::Ignore,
        },
        b if b < 0x20 => Key::Ignore,
        b => Key::Byte(b),
    }
}

/// The prompt's editor, with the session's earlier lines.
#[derive(Default)]
pub(super) struct Editor {
    history: Vec<Vec<u8>>,
}

/// The terminal's settings while raw; put back when dropped.
struct Raw(Termios);

impl Raw {
    fn enter() -> Option<Raw> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut t = saved.clone();
        // No ISIG: ^C drops the line here instead of killing the program
        // with the terminal still raw.
        t.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO | LocalModes::IEXTEN | LocalModes::ISIG);
        t.input_modes.remove(InputModes::ICRNL | InputModes::IXON);
        t.special_codes[SpecialCodeIndex::VMIN] = 1;
        t.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Drain, &t).ok()?;
        Some(Raw(saved))
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Drain, &self.0);
    }
}

fn read_byte() -> Option<u8> {
    let mut b = [0u8];
    loop {
        match rustix::io::read(std::io::stdin(), &mut b) {
            Ok(1) => return Some(b[0]),
            Err(rustix::io::Errno::INTR) => {}
            _ => return None,
        }
    }
}

impl Editor {
    /// Shows `prompt` and reads a line (without its newline); None at the
    /// end of input. Falls back to a plain read when the terminal cannot
    /// be made raw.
    pub(super) fn read_line(&mut self, prompt: &str) -> Option<Vec<u8>> {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{prompt}");
        let _ = out.flush();
        let Some(_raw) = Raw::enter() else {
            let mut line = Vec::new();
            while let Some(b) = read_byte() {
                if b == b'\n' {
                    return Some(line);
                }
                line.push(b);
            }
            return (!line.is_empty()).then_some(line);
        };
        let mut line = Line::default();
        // Position in the history; `history.len()` is the line being typed.
        let mut at = self.history.len();
        let mut draft = Vec::new();
        loop {
            let k = key(&mut read_byte);
            match k {
                Key::Enter => {
                    let _ = out.write_all(b"\r\n");
                    let _ = out.flush();
                    if !line.buf.is_empty() && self.history.last() != Some(&line.buf) {
                        self.history.push(line.buf.clone());
                    }
                    return Some(line.buf);
                }
                Key::Eof if line.buf.is_empty() => return None,
                Key::Cancel => {
                    let _ = out.write_all(b"^C\r\n");
                    let _ = out.flush();
                    return Some(Vec::new());
                }
                Key::Eof => line.apply(Key::Delete),
                Key::Up if at > 0 => {
                    if at == self.history.len() {
                        draft = line.buf.clone();
                    }
                    at -= 1;
                    line.set(self.history.get(at).map_or(&[][..], |h| h));
                }
                Key::Down if at < self.history.len() => {
                    at += 1;
                    let text = self
                        .history
                        .get(at)
                        .cloned()
                        .unwrap_or_else(|| draft.clone());
                    line.set(&text);
                }
                k => line.apply(k),
            }
            // Redraw: prompt and line, cleared to the end, cursor put back.
            let _ = write!(out, "\r{prompt}");
            let _ = out.write_all(&super::listing::printable(&line.buf));
            let _ = out.write_all(b"\x1b[K");
            let back = line.after_cursor();
            if back > 0 {
                let _ = write!(out, "\x1b[{back}D");
            }
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(bytes: &[u8]) -> Vec<Key> {
        let mut it = bytes.iter().copied();
        let mut next = || it.next();
        let mut v = Vec::new();
        loop {
            match key(&mut next) {
                Key::Eof => return v,
                k => v.push(k),
            }
        }
    }

    #[test]
    fn escape_sequences_become_keys() {
        assert_eq!(
            keys_of(b"a\x1b[A\x1b[B\x1b[C\x1b[D\x1b[3~\x1b[H\x1bOF\x1b[1~\x7f\r"),
            vec![
                Key::Byte(b'a'),
                Key::Up,
                Key::Down,
                Key::Right,
                Key::Left,
                Key::Delete,
                Key::Home,
                Key::End,
                Key::Home,
                Key::Backspace,
                Key::Enter
            ]
        );
        assert_eq!(keys_of(b"\x1b[99Z\x07"), vec![Key::Ignore, Key::Ignore]);
    }

    #[test]
    fn editing_moves_over_whole_characters() {
        let mut l = Line::default();
        for b in "put é.txt".bytes() {
            l.apply(Key::Byte(b));
        }
        l.apply(Key::Left);
        l.apply(Key::Left);
        l.apply(Key::Left);
        l.apply(Key::Left);
        l.apply(Key::Left);
        assert_eq!(l.after_cursor(), 5, "before é");
        l.apply(Key::Delete);
        assert_eq!(l.buf, b"put .txt");
        l.apply(Key::End);
        l.apply(Key::KillWord);
        assert_eq!(l.buf, b"put ");
        l.apply(Key::Backspace);
        l.apply(Key::Home);
        l.apply(Key::KillEnd);
        assert!(l.buf.is_empty());
        l.apply(Key::Backspace);
        assert_eq!(l.cur, 0);
    }
}
