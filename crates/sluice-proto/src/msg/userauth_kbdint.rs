//! Method-specific user authentication messages that share number 60 with
//! PK_OK: keyboard-interactive INFO_REQUEST / INFO_RESPONSE (RFC 4256 3.2,
//! 3.4) and password PASSWD_CHANGEREQ (RFC 4252 8). Which one a 60 is
//! depends on the method in progress, so the caller picks the decoder.
//! No trailing data is allowed.

use super::{reader, text};
use crate::wire::{MsgNum, Reader, WireError, Writer};

/// One prompt of an INFO_REQUEST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Prompt text (UTF-8).
    pub prompt: String,
    /// The client should echo the user's answer.
    pub echo: bool,
}

/// SSH_MSG_USERAUTH_INFO_REQUEST (RFC 4256 3.2, number 60).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthInfoRequest {
    /// Name of the challenge (UTF-8), may be empty.
    pub name: String,
    /// Instruction (UTF-8), may be empty.
    pub instruction: String,
    /// Language tag (deprecated), usually empty.
    pub language: String,
    /// Prompts, in order; may be empty.
    pub prompts: Vec<Prompt>,
}

/// Reads a `uint32` count followed by that many items. The count is not
/// trusted for allocation: every item must actually be in the payload.
fn counted<T>(
    r: &mut Reader<'_>,
    mut item: impl FnMut(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<Vec<T>, WireError> {
    let count = r.u32()?;
    let mut v = Vec::new();
    for _ in 0..count {
        v.push(item(r)?);
    }
    Ok(v)
}

impl UserauthInfoRequest {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_PK_OK)?;
        let name = text(&mut r)?;
        let instruction = text(&mut r)?;
        let language = text(&mut r)?;
        let prompts = counted(&mut r, |r| {
            Ok(Prompt {
                prompt: text(r)?,
                echo: r.bool()?,
            })
        })?;
        r.finish()?;
        Ok(UserauthInfoRequest {
            name,
            instruction,
            language,
            prompts,
        })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.u8(MsgNum::USERAUTH_PK_OK.0)
            .utf8(&self.name)
            .utf8(&self.instruction)
            .utf8(&self.language);
        // Counts above u32::MAX cannot occur: packets are bounded far below.
        w.u32(self.prompts.len() as u32);
        for p in &self.prompts {
            w.utf8(&p.prompt).bool(p.echo);
        }
    }
}

/// SSH_MSG_USERAUTH_INFO_RESPONSE (RFC 4256 3.4, number 61).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthInfoResponse {
    /// One answer (UTF-8) per prompt, in order.
    pub responses: Vec<String>,
}

impl UserauthInfoResponse {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_INFO_RESPONSE)?;
        let responses = counted(&mut r, text)?;
        r.finish()?;
        Ok(UserauthInfoResponse { responses })
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer::new(out);
        w.u8(MsgNum::USERAUTH_INFO_RESPONSE.0)
            .u32(self.responses.len() as u32);
        for resp in &self.responses {
            w.utf8(resp);
        }
    }
}

/// SSH_MSG_USERAUTH_PASSWD_CHANGEREQ (RFC 4252 8, number 60).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserauthPasswdChangereq {
    /// Prompt to show (UTF-8).
    pub prompt: String,
    /// Language tag, usually empty.
    pub language: String,
}

impl UserauthPasswdChangereq {
    /// Decodes a whole payload.
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = reader(payload, MsgNum::USERAUTH_PK_OK)?;
        let m = UserauthPasswdChangereq {
            prompt: text(&mut r)?,
            language: text(&mut r)?,
        };
        r.finish()?;
        Ok(m)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(MsgNum::USERAUTH_PK_OK.0)
            .utf8(&self.prompt)
            .utf8(&self.language);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_request_known_bytes() {
        let m = UserauthInfoRequest {
            name: String::new(),
            instruction: String::new(),
            language: String::new(),
            prompts: vec![Prompt {
                prompt: "Password: ".into(),
                echo: false,
            }],
        };
        let mut v = Vec::new();
        m.encode(&mut v);
        let mut want = vec![
            60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 10,
        ];
        want.extend_from_slice(b"Password: ");
        want.push(0);
        assert_eq!(v, want);
        assert_eq!(UserauthInfoRequest::decode(&v).unwrap(), m);
    }

    #[test]
    fn huge_counts_fail_without_allocating() {
        assert_eq!(
            UserauthInfoResponse::decode(&[61, 0xff, 0xff, 0xff, 0xff]),
            Err(WireError::Truncated)
        );
        let v = [
            60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0,
        ];
        assert_eq!(UserauthInfoRequest::decode(&v), Err(WireError::Truncated));
    }
}
