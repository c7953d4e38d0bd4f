//! Protocol version exchange (RFC 4253 section 4.2).
//!
//! The identification line is `SSH-protoversion-softwareversion [comments]`
//! followed by CR LF (a bare LF is accepted, as OpenSSH does). A server may
//! send other lines first; we accept those from a server only, and bound both
//! the line length (255 bytes) and the total before the banner.

use crate::error::Violation;

/// Longest identification line, CR LF included (RFC 4253 4.2).
pub(crate) const MAX_LINE: usize = 255;
/// Most bytes of pre-banner lines accepted from a server.
const MAX_PREAMBLE: usize = 64 * 1024;

/// Reads the peer's identification line from the start of the input.
#[derive(Debug, Default)]
pub(crate) struct VersionReader {
    /// Bytes of pre-banner lines seen so far.
    preamble: usize,
}

/// Outcome of offering input to the [`VersionReader`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum VersionStep {
    /// A complete line was not yet received.
    NeedMore,
    /// A non-banner line of `n` bytes was skipped.
    Skipped(usize),
    /// The identification line (without CR LF) and the bytes it occupied.
    Done(String, usize),
}

impl VersionReader {
    /// Looks for one line at the start of `input`. `allow_preamble` is true
    /// on the client, which must tolerate lines a server sends first.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
        allow_preamble: bool,
    ) -> Result<VersionStep, Violation> {
        let window = input.get(..input.len().min(MAX_LINE)).unwrap_or(input);
        let Some(nl) = window.iter().position(|&b| b == b'\n') else {
            if input.len() >= MAX_LINE {
                return Err(Violation::VersionTooLong);
            }
            return Ok(VersionStep::NeedMore);
        };
        let line = window.get(..nl).unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let used = nl + 1;
        if line.starts_with(b"SSH-") {
            let text = std::str::from_utf8(line).map_err(|_| Violation::BadVersion(lossy(line)))?;
            if !(text.starts_with("SSH-2.0-") || text.starts_with("SSH-1.99-"))
                || text.bytes().any(|b| b.is_ascii_control())
            {
                return Err(Violation::BadVersion(lossy(line)));
            }
            return Ok(VersionStep::Done(text.to_owned(), used));
        }
        if !allow_preamble {
            return Err(Violation::BadVersion(lossy(line)));
        }
        self.preamble += used;
        if self.preamble > MAX_PREAMBLE {
            return Err(Violation::VersionTooLong);
        }
        Ok(VersionStep::Skipped(used))
    }
}

/// A short printable rendering of a bad line for logs.
fn lossy(line: &[u8]) -> String {
    let s: String = String::from_utf8_lossy(line).chars().take(64).collect();
    s.escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_crlf_and_lf() {
        let mut r = VersionReader::default();
        assert_eq!(
            r.step(b"SSH-2.0-OpenSSH_9.2p1 Debian\r\nrest", false)
                .unwrap(),
            VersionStep::Done("SSH-2.0-OpenSSH_9.2p1 Debian".into(), 30)
        );
        assert!(matches!(
            r.step(b"SSH-2.0-x\n", false).unwrap(),
            VersionStep::Done(_, 10)
        ));
    }

    #[test]
    fn preamble_only_for_clients() {
        let mut r = VersionReader::default();
        assert_eq!(
            r.step(b"hello\r\nSSH-2.0-x\r\n", true).unwrap(),
            VersionStep::Skipped(7)
        );
        assert!(r.step(b"hello\r\n", false).is_err());
    }

    #[test]
    fn bounded() {
        let mut r = VersionReader::default();
        assert_eq!(
            r.step(b"SSH-2.0-abc", false).unwrap(),
            VersionStep::NeedMore
        );
        assert_eq!(r.step(&[b'A'; 300], false), Err(Violation::VersionTooLong));
        assert!(r.step(b"SSH-1.5-old\r\n", false).is_err());
        let mut r = VersionReader::default();
        let line = [b'x'; 200];
        let mut n = 0;
        let err = loop {
            let mut buf = line.to_vec();
            buf.push(b'\n');
            match r.step(&buf, true) {
                Ok(_) => n += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(err, Violation::VersionTooLong);
        assert!(n > 100);
    }
}
