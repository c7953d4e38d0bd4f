//! The runtime's layers, checked: arrows point only downward.
//!
//! ```text
//! cli (argv), demo, bench_crypto,     the programs' front ends
//! path_bench
//!   -> client, server                 one connection's side each
//!     -> config, keys, net            files, keys, sockets and the loop
//!       -> users, log, ttymodes, datagen, fds
//!         -> sluice-proto
//! ```
//!
//! A test reads the sources and fails on a `crate::` path that climbs.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Module roots (files or directories under src/) and the crate paths
    /// their sources must not name.
    const RULES: &[(&str, &[&str])] = &[
        (
            "client",
            &[
                "crate::server",
                "crate::cli",
                "crate::demo",
                "crate::bench_crypto",
                "crate::path_bench",
            ],
        ),
        (
            "server",
            &[
                "crate::client",
                "crate::cli",
                "crate::demo",
                "crate::bench_crypto",
                "crate::path_bench",
            ],
        ),
        ("config", UPWARD),
        ("keys", UPWARD),
        ("net", UPWARD),
        ("users.rs", UPWARD),
        ("fds.rs", UPWARD),
        ("log.rs", UPWARD),
        ("ttymodes.rs", UPWARD),
        ("datagen.rs", UPWARD),
    ];
    const UPWARD: &[&str] = &[
        "crate::client",
        "crate::server",
        "crate::cli",
        "crate::demo",
        "crate::bench_crypto",
        "crate::path_bench",
    ];

    fn sources(p: &Path, out: &mut Vec<PathBuf>) {
        if p.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(p)
                .expect("read_dir")
                .map(|e| e.expect("entry").path())
                .collect();
            entries.sort();
            for e in entries {
                sources(&e, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.to_owned());
        }
    }

    /// `line` names the module `path` (`crate::cli` is not `crate::client`).
    fn names(line: &str, path: &str) -> bool {
        line.match_indices(path).any(|(i, _)| {
            !line[i + path.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    }

    #[test]
    fn arrows_point_down() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut bad = Vec::new();
        for (root, forbidden) in RULES {
            let mut files = Vec::new();
            sources(&src.join(root), &mut files);
            assert!(!files.is_empty(), "{root}: no sources");
            for f in files {
                let text = std::fs::read_to_string(&f).expect("read source");
                for (n, line) in text.lines().enumerate() {
                    if line.trim_start().starts_with("//") {
                        continue;
                    }
                    for path in *forbidden {
                        if names(line, path) {
                            bad.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        assert!(bad.is_empty(), "upward imports:\n{}", bad.join("\n"));
    }
}
