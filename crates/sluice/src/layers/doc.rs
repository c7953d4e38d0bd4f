//! ARCHITECTURE.md kept true: its module tables are generated from the
//! sources (each module's name and the first sentence of its `//!` doc),
//! every top-level module directory of both crates has one, and every path
//! its prose names exists. `SLUICE_BLESS=1 cargo test --release -p sluice
//! --lib architecture` rewrites the tables after a module is added, moved
//! or documented anew.

use std::fs;
use std::path::{Path, PathBuf};

const DOC: &str = "ARCHITECTURE.md";
const OPEN: &str = "<!-- modules ";
const CLOSE: &str = "<!-- /modules -->";
/// The crates whose module directories need a table.
const SOURCES: &[&str] = &["crates/sluice/src", "crates/sluice-proto/src"];
/// Where a path in the prose may be rooted, besides the directories of its
/// own section's tables.
const ROOTS: &[&str] = &[
    "",
    "crates/sluice",
    "crates/sluice-proto",
    "crates/sluice/src",
    "crates/sluice-proto/src",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The first sentence of a file's `//!` doc (one paragraph at most).
fn summary(file: &Path) -> String {
    let text = fs::read_to_string(file).unwrap_or_default();
    let mut para = String::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("//!") else {
            break;
        };
        let rest = rest.trim();
        if rest.is_empty() {
            if para.is_empty() {
                continue;
            }
            break;
        }
        if !para.is_empty() {
            para.push(' ');
        }
        para.push_str(rest);
    }
    let end = para
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .find(|&i| !para[..i].ends_with("e.g.") && !para[..i].ends_with("i.e."))
        .unwrap_or(para.len());
    let mut s = para[..end].to_owned();
    if s.chars().count() > 150 {
        let cut: String = s.chars().take(147).collect();
        s = format!("{}…", &cut[..cut.rfind(' ').unwrap_or(cut.len())]);
    }
    s.replace('|', "\\|")
}

/// The table for one directory: a row per module (a file, or a directory
/// with its `mod.rs` or its sibling `name.rs`).
fn table(dir: &Path) -> String {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !matches!(n.as_str(), "mod.rs" | "lib.rs" | "tests.rs" | "main.rs"))
        .filter(|n| n.ends_with(".rs") || dir.join(n).is_dir())
        .collect();
    names.sort();
    let mut out = String::from("| module | its job (first line of its doc) |\n| --- | --- |\n");
    for n in &names {
        let path = dir.join(n);
        let (shown, doc) = if path.is_dir() {
            if dir.join(format!("{n}.rs")).exists() {
                continue; // listed with its file
            }
            let m = path.join("mod.rs");
            let doc = if m.exists() {
                summary(&m)
            } else {
                let mut files: Vec<String> = fs::read_dir(&path)
                    .unwrap()
                    .filter_map(|e| e.ok())
                    .map(|e| format!("`{}`", e.file_name().to_string_lossy()))
                    .collect();
                files.sort();
                files.join(", ")
            };
            (format!("`{n}/`"), doc)
        } else {
            let stem = n.trim_end_matches(".rs");
            let shown = if dir.join(stem).is_dir() {
                format!("`{n}` + `{stem}/`")
            } else {
                format!("`{n}`")
            };
            (shown, summary(&path))
        };
        out.push_str(&format!("| {shown} | {doc} |\n"));
    }
    out
}

/// The document with every table generated anew; the directories named.
fn regenerate(doc: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut dirs = Vec::new();
    let mut rest = doc;
    while let Some(i) = rest.find(OPEN) {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let line_end = tail.find('\n').expect("marker line");
        let dir = tail[OPEN.len()..line_end].trim_end_matches("-->").trim();
        let close = tail
            .find(CLOSE)
            .unwrap_or_else(|| panic!("{DOC}: no {CLOSE} after {OPEN}{dir}"));
        out.push_str(&tail[..=line_end]);
        out.push_str(&table(&repo().join(dir)));
        out.push_str(CLOSE);
        dirs.push(dir.to_owned());
        rest = &tail[close + CLOSE.len()..];
    }
    out.push_str(rest);
    (out, dirs)
}

/// Per section (`## `), the paths its prose names that exist neither under
/// [`ROOTS`] nor under the directory of one of the section's tables.
fn missing_paths(doc: &str) -> Vec<String> {
    let mut gone = Vec::new();
    for section in doc.split("\n## ") {
        let (_, dirs) = regenerate(section);
        let mut roots: Vec<PathBuf> = ROOTS.iter().map(|r| repo().join(r)).collect();
        roots.extend(dirs.iter().map(|d| repo().join(d)));
        gone.extend(
            named_paths(section)
                .into_iter()
                .filter(|p| !roots.iter().any(|r| r.join(p).exists())),
        );
    }
    gone
}

/// Backquoted spans outside the generated tables that look like paths.
fn named_paths(doc: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut rest = doc;
    while let Some(i) = rest.find(OPEN) {
        prose.push_str(&rest[..i]);
        rest = rest[i..].find(CLOSE).map_or("", |j| &rest[i + j..]);
    }
    prose.push_str(rest);
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
                && !s.starts_with('/')
                && !s.starts_with('-')
                && (s.contains('/') || s.ends_with(".rs") || s.ends_with(".md"))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn architecture_doc_matches_the_tree() {
    let path = repo().join(DOC);
    let doc = fs::read_to_string(&path).expect("ARCHITECTURE.md");
    let (fresh, dirs) = regenerate(&doc);
    if std::env::var_os("SLUICE_BLESS").is_some() {
        fs::write(&path, &fresh).unwrap();
    } else {
        assert!(
            fresh == doc,
            "{DOC}'s module tables differ from the sources: run `SLUICE_BLESS=1 cargo test --release -p sluice --lib architecture` and read the diff"
        );
    }
    let mut missing = Vec::new();
    for src in SOURCES {
        let mut want = vec![src.to_string()];
        for e in fs::read_dir(repo().join(src)).unwrap().flatten() {
            if e.path().is_dir() {
                want.push(format!("{src}/{}", e.file_name().to_string_lossy()));
            }
        }
        missing.extend(want.into_iter().filter(|d| !dirs.contains(d)));
    }
    assert!(
        missing.is_empty(),
        "{DOC} has no module table for {missing:?}"
    );
    let gone = missing_paths(&doc);
    assert!(
        gone.is_empty(),
        "{DOC} names paths that do not exist: {gone:?}"
    );
}

#[test]
fn first_sentence_of_a_doc() {
    let dir = std::env::temp_dir().join(format!("sluice-archdoc-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let f = dir.join("x.rs");
    fs::write(
        &f,
        "//! One job, e.g. this. And more\n//! text.\n\nfn x() {}\n",
    )
    .unwrap();
    assert_eq!(summary(&f), "One job, e.g. this.");
    fs::write(&f, "//! a | b\n//!\n//! later\n").unwrap();
    assert_eq!(summary(&f), "a \\| b");
    let _ = fs::remove_dir_all(&dir);
}
