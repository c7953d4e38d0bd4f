//! The monitor's stand-in for the engine in server/auth.rs's calls: the
//! verdict each request gets is recorded for the child instead of sent,
//! with MaxAuthTries counted as the engine counts it.

use super::super::wire::Msg;
use crate::server::auth::Answers;
use sluice_proto::msg::{DisconnectReason, Prompt};

/// The verdicts [`ServerAuth`] gives, kept for the child.
#[derive(Default)]
pub(super) struct Recorder {
    pub(super) verdict: Option<Msg>,
    pub(super) failures: u32,
    pub(super) max_tries: u32,
    pub(super) closed: bool,
    /// The pending request is `none` (its rejection is not counted).
    pub(super) none: bool,
    /// LoginGraceTime ran out (ServerAuth disconnects for it).
    pub(super) timed_out: bool,
}

impl Answers for Recorder {
    fn auth_accept(&mut self) {
        self.verdict = Some(Msg::Accept);
    }
    fn auth_reject(&mut self) {
        if !self.none {
            self.failures += 1;
            if self.max_tries > 0 && self.failures >= self.max_tries {
                self.closed = true;
            }
        }
        self.verdict = Some(Msg::Reject);
    }
    fn auth_partial(&mut self, methods: Vec<String>) {
        self.verdict = Some(Msg::Partial { methods });
    }
    fn auth_info_request(
        &mut self,
        _name: &str,
        instruction: &str,
        prompts: Vec<Prompt>,
    ) -> Result<(), sluice_proto::Error> {
        self.verdict = Some(Msg::InfoRequest {
            instruction: instruction.to_owned(),
            prompts: prompts.into_iter().map(|p| (p.prompt, p.echo)).collect(),
        });
        Ok(())
    }
    fn is_closed(&self) -> bool {
        self.closed
    }
    fn disconnect(&mut self, _reason: DisconnectReason, _description: &str) {
        self.closed = true;
        self.timed_out = true;
    }
}
