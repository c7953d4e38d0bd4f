//! AuthenticationMethods (sshd_config(5)) as authentication goes on: each
//! list is a sequence of steps, every step of one list must succeed in
//! order, and only the methods next in some list are offered. A method
//! that succeeds advances every list it is next in; a list emptied means
//! the user is in, otherwise the client is told "partial success" with the
//! methods that can now continue (RFC 4252 5.1).
//!
//! sshd's rules kept here: a keyboard-interactive step may name a device
//! (`keyboard-interactive:pam`) and is then met only through that device;
//! a public key that met one step cannot meet another (`publickey,publickey`
//! needs two different keys). The state lives where the decision is made:
//! in the privilege-separation monitor, never in the pre-auth child.

use super::ServerConfig;

/// One step of a list: a method and, for keyboard-interactive, a device.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    method: String,
    device: Option<String>,
}

impl Step {
    fn parse(s: &str) -> Step {
        match s.split_once(':') {
            Some((m, d)) => Step {
                method: m.to_owned(),
                device: Some(d.to_owned()),
            },
            None => Step {
                method: s.to_owned(),
                device: None,
            },
        }
    }

    /// Whether `method` through `device` meets this step (a step without
    /// a device is met by any).
    fn met_by(&self, method: &str, device: Option<&str>) -> bool {
        self.method == method && (self.device.is_none() || self.device.as_deref() == device)
    }
}

/// What a successful method leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A list is complete: the user is authenticated.
    Complete,
    /// More steps are needed: the methods that can continue.
    Partial(Vec<String>),
}

/// One user's progress through AuthenticationMethods.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The steps still to do of each list; None when AuthenticationMethods
    /// is `any` (one method is enough).
    lists: Option<Vec<Vec<Step>>>,
    /// Methods enabled by the configuration, in sshd's order.
    enabled: Vec<String>,
    /// Public key blobs that met a step.
    used_keys: Vec<Vec<u8>>,
    /// Steps met so far (`publickey`, `keyboard-interactive/pam`...).
    done: Vec<String>,
}

impl Progress {
    /// The start, under `cfg` (Match blocks applied for the user).
    pub fn new(cfg: &ServerConfig) -> Self {
        let enabled = cfg.enabled_methods();
        // As sshd, a list with a method that is not enabled (`none`,
        // `hostbased`, `password` under PasswordAuthentication no) is
        // skipped: it could never be completed.
        let lists = (!cfg.authentication_methods.is_empty()).then(|| {
            cfg.authentication_methods
                .iter()
                .map(|l| l.split(',').map(Step::parse).collect::<Vec<_>>())
                .filter(|l| l.iter().all(|s| enabled.contains(&s.method)))
                .collect()
        });
        Progress {
            lists,
            enabled,
            used_keys: Vec::new(),
            done: Vec::new(),
        }
    }

    /// The methods that can continue: enabled and next in some list.
    pub fn offered(&self) -> Vec<String> {
        self.enabled
            .iter()
            .filter(|m| match &self.lists {
                None => true,
                Some(lists) => lists
                    .iter()
                    .any(|l| l.first().is_some_and(|s| &s.method == *m)),
            })
            .cloned()
            .collect()
    }

    /// `method` (through `device`) may be tried now.
    pub fn allows(&self, method: &str, device: Option<&str>) -> bool {
        self.enabled.iter().any(|m| m == method)
            && match &self.lists {
                None => true,
                Some(lists) => lists
                    .iter()
                    .any(|l| l.first().is_some_and(|s| s.met_by(method, device))),
            }
    }

    /// Whether `method` succeeding now would end authentication (for
    /// the log line: sshd says "Accepted" or "Partial").
    pub fn would_complete(&self, method: &str, device: Option<&str>) -> bool {
        match &self.lists {
            None => true,
            Some(lists) => lists
                .iter()
                .any(|l| l.len() == 1 && l.first().is_some_and(|s| s.met_by(method, device))),
        }
    }

    /// "Accepted" or "Partial", as sshd's log line starts.
    pub fn verdict_word(&self, method: &str, device: Option<&str>) -> &'static str {
        if self.would_complete(method, device) {
            "Accepted"
        } else {
            "Partial"
        }
    }

    /// `method` succeeded: every list it is next in moves on.
    pub fn complete(&mut self, method: &str, device: Option<&str>) -> Outcome {
        self.done.push(match device {
            Some(d) => format!("{method}/{d}"),
            None => method.to_owned(),
        });
        let Some(lists) = self.lists.as_mut() else {
            return Outcome::Complete;
        };
        let mut finished = false;
        for l in lists.iter_mut() {
            if l.first().is_some_and(|s| s.met_by(method, device)) {
                l.remove(0);
                finished |= l.is_empty();
            }
        }
        if finished {
            Outcome::Complete
        } else {
            Outcome::Partial(self.offered())
        }
    }

    /// Some step has been met (the user can no longer change).
    pub fn started(&self) -> bool {
        !self.done.is_empty()
    }

    /// The steps met so far, in order.
    pub fn done(&self) -> &[String] {
        &self.done
    }

    /// This public key already met a step.
    pub fn key_used(&self, blob: &[u8]) -> bool {
        self.used_keys.iter().any(|k| k == blob)
    }

    /// Records a public key that met a step.
    pub fn record_key(&mut self, blob: &[u8]) {
        self.used_keys.push(blob.to_vec());
    }
}

impl ServerConfig {
    /// Authentication methods to offer first under this configuration:
    /// those enabled that begin some AuthenticationMethods list when it is
    /// set (later steps are offered as earlier ones succeed). Here, beside
    /// `Progress`, so the configuration's file does not import this one.
    pub fn auth_methods(&self) -> Vec<String> {
        Progress::new(self).offered()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(lists: &[&str], use_pam: bool) -> Progress {
        let cfg = ServerConfig {
            authentication_methods: lists.iter().map(|s| (*s).to_owned()).collect(),
            use_pam,
            ..ServerConfig::default()
        };
        Progress::new(&cfg)
    }

    #[test]
    fn any_is_one_method() {
        let mut p = progress(&[], false);
        assert_eq!(
            p.offered(),
            ["publickey", "password", "keyboard-interactive"]
        );
        assert!(p.allows("password", None));
        assert_eq!(p.complete("password", None), Outcome::Complete);
    }

    #[test]
    fn steps_are_taken_in_order() {
        let mut p = progress(
            &["publickey,password", "publickey,keyboard-interactive"],
            false,
        );
        assert_eq!(p.offered(), ["publickey"]);
        assert!(!p.allows("password", None));
        assert_eq!(p.verdict_word("publickey", None), "Partial");
        assert_eq!(
            p.complete("publickey", None),
            Outcome::Partial(vec!["password".into(), "keyboard-interactive".into()])
        );
        assert!(!p.allows("publickey", None));
        assert_eq!(p.verdict_word("password", None), "Accepted");
        assert_eq!(p.complete("password", None), Outcome::Complete);
    }

    #[test]
    fn a_list_not_followed_stays_as_it_was() {
        let mut p = progress(&["publickey,password", "password,publickey"], false);
        assert_eq!(p.offered(), ["publickey", "password"]);
        // The first list still starts with publickey, the second now does.
        assert_eq!(
            p.complete("password", None),
            Outcome::Partial(vec!["publickey".into()])
        );
        assert_eq!(p.complete("publickey", None), Outcome::Complete);
    }

    #[test]
    fn devices_must_match() {
        let p = progress(&["keyboard-interactive:pam,password"], true);
        assert_eq!(p.offered(), ["keyboard-interactive"]);
        assert!(p.allows("keyboard-interactive", Some("pam")));
        assert!(!p.allows("keyboard-interactive", None));
        let p = progress(&["keyboard-interactive"], true);
        assert!(p.allows("keyboard-interactive", Some("pam")));
    }

    #[test]
    fn publickey_twice_needs_two_keys() {
        let mut p = progress(&["publickey,publickey"], false);
        assert_eq!(
            p.complete("publickey", None),
            Outcome::Partial(vec!["publickey".into()])
        );
        p.record_key(b"k1");
        assert!(p.key_used(b"k1"));
        assert!(!p.key_used(b"k2"));
        assert_eq!(p.complete("publickey", None), Outcome::Complete);
    }

    #[test]
    fn lists_with_a_disabled_method_are_skipped_as_sshd_does() {
        let cfg = ServerConfig {
            authentication_methods: vec!["publickey,password".into(), "publickey".into()],
            password_authentication: false,
            ..ServerConfig::default()
        };
        let mut p = Progress::new(&cfg);
        assert_eq!(p.offered(), ["publickey"]);
        assert_eq!(p.complete("publickey", None), Outcome::Complete);
        assert!(!p.allows("password", None));
        // `none` is never enabled: a list of it alone leaves nothing to offer.
        let mut p = progress(&["none", "publickey,password"], false);
        assert_eq!(p.offered(), ["publickey"]);
        assert!(!p.allows("none", None));
        assert_eq!(
            p.complete("publickey", None),
            Outcome::Partial(vec!["password".into()])
        );
        assert!(progress(&["none"], false).offered().is_empty());
    }
}
