//! AddKeysToAgent (ssh_config(5)): a key read from a file to sign is also
//! given to the agent (SSH_AGENTC_ADD_IDENTITY, RFC draft-miller-ssh-agent
//! section 3.2), with a lifetime (a time value) or a confirmation
//! constraint (`confirm`), or after asking (`ask`), so the next connection
//! needs no passphrase. OpenSSH-format key files only (the agent takes the
//! same fields as the file's private section); FIDO keys and PEM files are
//! left out with a debug line.

use crate::config::ssh::Resolved;
use crate::log;
use std::path::{Path, PathBuf};

/// What AddKeysToAgent asks for, and where the agent is.
#[derive(Debug, Clone)]
pub(super) struct AddToAgent {
    agent: Option<PathBuf>,
    lifetime: Option<u32>,
    confirm: bool,
    ask: bool,
}

/// The plan for this destination; None for `no` (the default) or when
/// there is no agent to add to.
pub(super) fn plan(r: &Resolved, agent: Option<PathBuf>) -> Option<AddToAgent> {
    let v = r.get("addkeystoagent")?.to_ascii_lowercase();
    let mut p = AddToAgent {
        agent: agent.filter(|a| a != Path::new("none")),
        lifetime: None,
        confirm: false,
        ask: false,
    };
    for w in v.split_whitespace() {
        match w {
            "no" | "false" => return None,
            "yes" | "true" => {}
            "confirm" => p.confirm = true,
            "ask" => p.ask = true,
            t => p.lifetime = crate::config::parse_time(t).and_then(|s| u32::try_from(s).ok()),
        }
    }
    if p.agent.is_none() && std::env::var_os("SSH_AUTH_SOCK").is_none() {
        log!(Debug1, "AddKeysToAgent: no agent to add keys to");
        return None;
    }
    Some(p)
}

/// Why a key was not added (a debug line, as in ssh).
#[derive(Debug)]
enum AddError {
    /// The key file did not read or decrypt.
    Key(ssh_key::Error),
    /// Encrypted, and no passphrase was given.
    NoPassphrase,
    /// A FIDO key (ssh-add adds those).
    SecurityKey,
    /// The user said no (AddKeysToAgent ask).
    Declined,
    /// The private fields did not encode.
    Encode(ssh_encoding::Error),
    /// The agent could not be reached or refused.
    Agent(crate::keys::agent::AgentError),
}

impl std::fmt::Display for AddError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddError::Key(e) => write!(f, "{e}"),
            AddError::NoPassphrase => f.write_str("no passphrase"),
            AddError::SecurityKey => f.write_str("a FIDO key is added with ssh-add"),
            AddError::Declined => f.write_str("declined"),
            AddError::Encode(e) => write!(f, "{e}"),
            AddError::Agent(e) => write!(f, "{e}"),
        }
    }
}

impl AddToAgent {
    /// Gives the key in `path` (decrypted with `pass` when it has one) to
    /// the agent; a failure is a debug line, as in ssh.
    pub(super) fn add(&self, path: &Path, pass: Option<&[u8]>) {
        if let Err(e) = self.try_add(path, pass) {
            log!(
                Debug1,
                "could not add identity {} to agent: {e}",
                path.display()
            );
        }
    }

    fn try_add(&self, path: &Path, pass: Option<&[u8]>) -> Result<(), AddError> {
        use ssh_encoding::Encode;
        let key = crate::keys::ecdsa_pad::read_file(path).map_err(AddError::Key)?;
        let key = match (key.is_encrypted(), pass) {
            (false, _) => key,
            (true, Some(p)) => crate::keys::ecdsa_pad::decrypt(&key, p).map_err(AddError::Key)?,
            (true, None) => return Err(AddError::NoPassphrase),
        };
        if matches!(
            key.key_data(),
            ssh_key::private::KeypairData::SkEd25519(_)
                | ssh_key::private::KeypairData::SkEcdsaSha2NistP256(_)
        ) {
            return Err(AddError::SecurityKey);
        }
        if self.ask && !ask(path) {
            return Err(AddError::Declined);
        }
        // The private fields, wiped when dropped.
        let mut fields = zeroize::Zeroizing::new(Vec::new());
        key.key_data()
            .encode(&mut *fields)
            .map_err(AddError::Encode)?;
        let comment = match key.comment() {
            "" => path.display().to_string(),
            c => c.to_owned(),
        };
        let agent =
            crate::keys::agent::Agent::connect(self.agent.as_deref()).map_err(AddError::Agent)?;
        agent
            .add_identity(&fields, &comment, self.lifetime, self.confirm)
            .map_err(AddError::Agent)?;
        log!(Debug1, "identity added to agent: {}", path.display());
        Ok(())
    }
}

/// `ask`: the question on /dev/tty.
fn ask(path: &Path) -> bool {
    use std::io::{BufRead, Write};
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    let _ = write!(&tty, "Add key {} to agent? (yes/no) ", path.display());
    let mut line = String::new();
    let _ = std::io::BufReader::new(&tty).read_line(&mut line);
    line.trim().eq_ignore_ascii_case("yes")
}
