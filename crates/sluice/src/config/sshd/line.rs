//! One sshd_config line as the reader (lines.rs) leaves it and the
//! keywords (keywords.rs, per_source.rs, timeouts.rs) take it: keyword,
//! arguments, where it was written and the Match criteria it sits under.

use super::error::{LineError, Refusal, SshdConfigError};
use super::matching::Criteria;
use std::sync::Arc;

/// One keyword line and the Match criteria (all must hold) it sits under.
#[derive(Debug, Clone)]
pub(super) struct Line {
    /// File name, or `command-line` for `-o`.
    pub(super) file: Arc<str>,
    /// Line number (0 for `-o`).
    pub(super) n: usize,
    /// Keyword, lower-case.
    pub(super) kw: String,
    /// Keyword as written (for messages).
    pub(super) name: String,
    /// Arguments, quotes removed.
    pub(super) args: Vec<String>,
    /// The rest of the line as written (ForceCommand, AuthorizedKeysCommand).
    pub(super) raw: String,
    /// Match criteria in force, outermost first.
    pub(super) conds: Vec<Arc<Criteria>>,
}

impl Line {
    /// `FILE line N: ERROR`, as sshd words most errors.
    pub(super) fn err(&self, error: impl Into<LineError>) -> SshdConfigError {
        SshdConfigError::Line {
            file: self.file.to_string(),
            line: self.n,
            error: error.into(),
        }
    }

    /// "unsupported option KW at FILE:LINE: why" (sluiced -t and startup exit 255).
    pub(super) fn refused(&self, reason: Refusal) -> SshdConfigError {
        SshdConfigError::Refused {
            file: self.file.to_string(),
            line: self.n,
            keyword: self.name.clone(),
            reason,
        }
    }

    /// Whether the line applies in `ctx` (None: at startup).
    pub(super) fn active(&self, ctx: Option<&super::MatchContext>) -> bool {
        self.conds.iter().all(|c| c.matches(ctx))
    }
}
