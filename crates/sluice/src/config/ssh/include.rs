//! `Include` paths as ssh resolves them: relative names live in ~/.ssh for
//! user files and /etc/ssh for system files, `~` only in user files, then
//! glob(3) in sorted order; no match is not an error.

use super::tokens::{self, ExpandError};

/// Files an Include argument names, sorted (glob's order).
pub fn expand(arg: &str, user_file: bool) -> Result<Vec<String>, IncludeError> {
    if arg.starts_with('~') && !user_file {
        return Err(IncludeError::TildeInSystemFile {
            arg: arg.to_owned(),
        });
    }
    let path = if arg.starts_with('/') || arg.starts_with('~') {
        arg.to_owned()
    } else if user_file {
        format!("~/.ssh/{arg}")
    } else {
        format!("/etc/ssh/{arg}")
    };
    let path = tokens::tilde(&path)?;
    glob(&path)
}

fn glob(pattern: &str) -> Result<Vec<String>, IncludeError> {
    let c = std::ffi::CString::new(pattern).map_err(|_| IncludeError::Nul {
        pattern: pattern.to_owned(),
    })?;
    match crate::sys::glob::glob(&c) {
        Ok(paths) => Ok(paths
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()),
        Err(_) => Err(IncludeError::GlobFailed {
            pattern: pattern.to_owned(),
        }),
    }
}

/// An Include argument ssh refuses (after "FILE line N: ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IncludeError {
    /// `~` in /etc/ssh/ssh_config or a file it includes.
    TildeInSystemFile {
        /// The argument.
        arg: String,
    },
    /// `~user` that does not expand.
    Tilde(ExpandError),
    /// A NUL byte in the pattern: `Bad Include PATTERN`.
    Nul {
        /// The pattern.
        pattern: String,
    },
    /// glob(3) failed (other than matching nothing).
    GlobFailed {
        /// The pattern.
        pattern: String,
    },
}

impl std::fmt::Display for IncludeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IncludeError::TildeInSystemFile { arg } => {
                write!(f, "tilde expansion not supported in system config: {arg}")
            }
            IncludeError::Tilde(e) => e.fmt(f),
            IncludeError::Nul { pattern } => write!(f, "Bad Include {pattern}"),
            IncludeError::GlobFailed { pattern } => write!(f, "{pattern}: glob failed"),
        }
    }
}

impl std::error::Error for IncludeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IncludeError::Tilde(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ExpandError> for IncludeError {
    fn from(e: ExpandError) -> Self {
        IncludeError::Tilde(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchoring_and_glob() {
        let dir = std::env::temp_dir().join(format!("sluice-inc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["b.conf", "a.conf", "c.txt"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let got = expand(&format!("{}/*.conf", dir.display()), true).unwrap();
        assert_eq!(
            got,
            [dir.join("a.conf"), dir.join("b.conf")].map(|p| p.display().to_string())
        );
        assert!(expand("nothing-here-*.conf", false).unwrap().is_empty());
        assert!(matches!(
            expand("~/x", false),
            Err(IncludeError::TildeInSystemFile { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
