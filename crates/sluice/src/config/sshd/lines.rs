//! Reading sshd_config into lines that keep their conditions: `Match`
//! starts a block whose lines apply only where its criteria hold, `Include`
//! (globs, relative to /etc/ssh) reads files in place and its lines inherit
//! the block it sits in. Which lines apply is decided later, once per
//! connection (see `ServerConfig::for_connection`).

use super::error::{BadKeyword, LineError, SshdConfigError};
use super::keyword_table;
use super::line::Line;
use super::matching::Criteria;
use crate::config::split_line;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What reading produced: the lines, warnings to log, and bad option messages.
#[derive(Default)]
pub(super) struct Read {
    pub(super) lines: Vec<Line>,
    pub(super) warnings: Vec<String>,
    bad: Vec<BadKeyword>,
    ports_from_cmdline: bool,
}

/// Deepest Include nesting, as sshd's.
const MAX_DEPTH: usize = 16;

/// Reads `-o` overrides (first, so they win) and then `path`; `ports`
/// (`-p`) replace the Port lines of the files, as in sshd.
pub(super) fn read(
    path: &Path,
    overrides: &[String],
    ports: &[String],
) -> Result<Read, SshdConfigError> {
    let mut r = Read::default();
    let cmdline: Arc<str> = Arc::from("command-line");
    for o in overrides {
        add(&mut r, &cmdline, 0, o, &[], 0)?;
    }
    for p in ports {
        add(&mut r, &cmdline, 0, &format!("Port {p}"), &[], 0)?;
    }
    r.ports_from_cmdline = !ports.is_empty();
    let text = super::snapshot::read_file(path).map_err(|error| SshdConfigError::Read {
        path: path.display().to_string(),
        error,
    })?;
    read_text(&mut r, &path.display().to_string(), &text, &[], 0)?;
    if !r.bad.is_empty() {
        return Err(SshdConfigError::BadOptions {
            path: path.display().to_string(),
            bad: std::mem::take(&mut r.bad),
        });
    }
    Ok(r)
}

fn read_text(
    r: &mut Read,
    file: &str,
    text: &str,
    outer: &[Arc<Criteria>],
    depth: usize,
) -> Result<(), SshdConfigError> {
    let file: Arc<str> = Arc::from(file);
    let mut conds = outer.to_vec();
    for (i, line) in text.lines().enumerate() {
        if let Some(c) = add(r, &file, i + 1, line, &conds, depth)? {
            conds = outer.to_vec();
            conds.push(Arc::new(c));
        }
    }
    Ok(())
}

/// Adds one line; returns the criteria when it is a `Match` line.
fn add(
    r: &mut Read,
    file: &Arc<str>,
    n: usize,
    text: &str,
    conds: &[Arc<Criteria>],
    depth: usize,
) -> Result<Option<Criteria>, SshdConfigError> {
    let Some((kw, args)) = split_line(text).map_err(|e| SshdConfigError::Line {
        file: file.to_string(),
        line: n,
        error: LineError::Syntax(e),
    })?
    else {
        return Ok(None);
    };
    let name = text
        .trim_start()
        .split(|c: char| c.is_whitespace() || c == '=')
        .next()
        .unwrap_or_default()
        .to_owned();
    let line = Line {
        file: file.clone(),
        n,
        kw,
        name,
        args,
        raw: rest_of_line(text),
        conds: conds.to_vec(),
    };
    if line.kw == "match" {
        if n == 0 {
            return Err(line.err(LineError::MatchOnCommandLine));
        }
        return Criteria::parse(&line.args)
            .map(Some)
            .map_err(|error| SshdConfigError::Match {
                file: file.to_string(),
                line: n,
                error,
            });
    }
    let known = keyword_table::known(&line.kw);
    if !known {
        r.bad.push(BadKeyword {
            file: file.to_string(),
            line: n,
            keyword: line.name.clone(),
        });
    }
    // At startup only `Match All` blocks are in force; anything else inside
    // a Match block must be a keyword sshd allows there.
    if !line.active(None) && !keyword_table::match_allowed(&line.kw) {
        return Err(SshdConfigError::NotAllowedInMatch {
            earlier: std::mem::take(&mut r.bad),
            file: file.to_string(),
            line: n,
            keyword: line.name.clone(),
        });
    }
    if !known {
        return Ok(None);
    }
    if let Some(w) = keyword_table::warning(&line.kw) {
        r.warnings
            .push(format!("{file} line {n}: {w} option {}", line.name));
    }
    if line.kw == "include" {
        if line.args.is_empty() {
            return Err(line.err(LineError::IncludeMissingFilename));
        }
        if depth >= MAX_DEPTH {
            return Err(line.err(LineError::IncludeTooDeep));
        }
        for a in &line.args {
            let p = if a.starts_with('/') {
                PathBuf::from(a)
            } else {
                Path::new("/etc/ssh").join(a)
            };
            for f in super::snapshot::glob(&p, glob) {
                let text = super::snapshot::read_file(&f).map_err(|error| {
                    line.err(LineError::IncludeRead {
                        path: f.display().to_string(),
                        error,
                    })
                })?;
                read_text(r, &f.display().to_string(), &text, conds, depth + 1)?;
            }
        }
        return Ok(None);
    }
    if !(line.kw == "port" && r.ports_from_cmdline) {
        r.lines.push(line);
    }
    Ok(None)
}

/// The text after the keyword and its separator, as written.
fn rest_of_line(text: &str) -> String {
    let t = text.trim();
    let i = t
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(t.len());
    let rest = t[i..].trim_start();
    rest.strip_prefix('=')
        .unwrap_or(rest)
        .trim_start()
        .to_owned()
}

/// Expands `*`, `?` in the last path component (sorted, as glob(3)); a
/// pattern or file that matches nothing is no error, as for sshd.
fn glob(p: &Path) -> Vec<PathBuf> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return if p.exists() {
            vec![p.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    let dir = p.parent().unwrap_or(Path::new("/"));
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let f = e.file_name().to_string_lossy().into_owned();
                    !f.starts_with('.') && crate::keys::pattern::match_pattern(&f, &name)
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
