//! The runtime's layers, checked: arrows point only downward, and no two
//! files import each other, directly or around a loop.
//!
//! ```text
//! cli                                 argv of ssh, sshd, sftp and scp
//!   -> demo, bench_crypto, path_bench the programs' extra modes
//!     -> client, server               one connection's side each
//!       -> config                     ssh_config, sshd_config
//!         -> keys                     key material, patterns
//!           -> net                    sockets and the driver loop
//!             -> users, log, ttymodes, datagen, fds, ls_style
//!               -> io_error           an I/O error in OpenSSH's words
//!                 -> sys              system calls no safe crate offers
//!                   -> sluice-proto
//! ```
//!
//! The tests read the sources (`scan.rs`), resolve every path a file names,
//! in any form (`use crate::a::b`, `super::super::x`, grouped
//! `use crate::{a, b::{c}}`, a path written in code, a name that a `pub use`
//! hands on) to the file that defines it (`graph.rs`), and fail on a cycle
//! between files and on an arrow to a module of the same layer or above.
//! Test code counts as much as the rest. A module's face (`mod.rs` handing
//! on its own children's names with `pub use`) imports nothing: whoever
//! names a name through it is followed to the child that defines it.

#[cfg(test)]
mod doc;
#[cfg(test)]
mod graph;
#[cfg(test)]
mod scan;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::graph::{cycles, graph, module_of, Graph, Source};

    /// The crate's top-level modules by layer, the top first: a module may
    /// name modules of the layers below its own only.
    const LAYERS: &[&[&str]] = &[
        &["cli"],
        &["demo", "bench_crypto", "path_bench", "layers"],
        &["client", "server"],
        &["config"],
        &["keys"],
        &["net"],
        &["users", "log", "ttymodes", "datagen", "fds", "ls_style"],
        &["io_error"],
        &["sys"],
    ];

    /// Cycles not cut yet, each as its files: the list may only shrink. A
    /// cycle not listed fails, and so does a listed one that is gone or has
    /// changed (write down what is left).
    const KNOWN_CYCLES: &[&[&str]] = &[];

    /// The layer of a file under src/ (by its top-level module); None for
    /// lib.rs and the binaries.
    fn layer(path: &str) -> Option<(usize, String)> {
        let top = module_of(path)?.first()?.clone();
        let n = LAYERS.iter().position(|l| l.contains(&top.as_str()));
        Some((n.unwrap_or(usize::MAX), top))
    }

    fn read(dir: &Path, under: &str, out: &mut Vec<Source>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().expect("name").to_string_lossy();
            let path = format!("{under}{name}");
            if p.is_dir() {
                read(&p, &format!("{path}/"), out);
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&p).expect("read source");
                out.push(Source { path, text });
            }
        }
    }

    fn tree() -> Graph {
        let mut sources = Vec::new();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        read(&src, "", &mut sources);
        graph(&sources)
    }

    /// Each cycle not in `known`: its files, then every arrow inside it
    /// with where; then each of `known` that is no longer a cycle.
    fn cycle_report(g: &Graph, known: &[&[&str]]) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for scc in cycles(g, |_| true) {
            let names: Vec<&str> = scc.iter().map(|&f| g.files[f].as_str()).collect();
            if known.contains(&names.as_slice()) {
                seen.push(names);
                continue;
            }
            out.push(format!("cycle of {}: {}", scc.len(), names.join(", ")));
            for (&(a, b), uses) in &g.edges {
                if scc.contains(&a) && scc.contains(&b) {
                    let at: Vec<String> = uses
                        .iter()
                        .map(|u| {
                            format!(
                                "{}: {}{}",
                                u.line,
                                u.path,
                                if u.test { " (test)" } else { "" }
                            )
                        })
                        .collect();
                    out.push(format!(
                        "  {} -> {}  ({})",
                        g.files[a],
                        g.files[b],
                        at.join("; ")
                    ));
                }
            }
        }
        for k in known.iter().filter(|k| !seen.contains(&k.to_vec())) {
            out.push(format!("listed in KNOWN_CYCLES but not a cycle now: {k:?}"));
        }
        out
    }

    /// Every arrow to a module of the same layer or above.
    fn layer_report(g: &Graph) -> Vec<String> {
        let mut out = Vec::new();
        for (&(a, b), uses) in &g.edges {
            let (Some((la, ma)), Some((lb, mb))) = (layer(&g.files[a]), layer(&g.files[b])) else {
                continue;
            };
            if ma != mb && la >= lb {
                for u in uses {
                    out.push(format!(
                        "{}:{}: {} ({ma} -> {mb})",
                        g.files[a], u.line, u.path
                    ));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_module_has_a_layer() {
        let g = tree();
        let lost: Vec<_> = g
            .files
            .iter()
            .filter_map(|f| layer(f))
            .filter(|l| l.0 == usize::MAX)
            .collect();
        assert!(lost.is_empty(), "modules in no layer of LAYERS: {lost:?}");
    }

    #[test]
    fn no_cycles_between_files() {
        let bad = cycle_report(&tree(), KNOWN_CYCLES);
        assert!(bad.is_empty(), "import cycles:\n{}", bad.join("\n"));
    }

    #[test]
    fn arrows_point_down() {
        let bad = layer_report(&tree());
        assert!(
            bad.is_empty(),
            "imports of the same layer or above:\n{}",
            bad.join("\n")
        );
    }

    fn sample(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<Source> = files
            .iter()
            .map(|(p, t)| Source {
                path: p.to_string(),
                text: t.to_string(),
            })
            .collect();
        graph(&sources)
    }

    #[test]
    fn the_checker_sees_a_cycle_through_a_written_path_and_a_re_export() {
        let g = sample(&[
            ("lib.rs", "pub mod config; pub mod client;"),
            ("client/mod.rs", "mod a; mod b; pub use self::b::Plan;"),
            ("client/a.rs", "use super::Plan;\npub fn expand() {}"),
            (
                "client/b.rs",
                "pub struct Plan;\nfn f() { let _ = crate::client::a::expand(); }",
            ),
            (
                "config/mod.rs",
                "// use crate::client::a;\nconst S: &str = \"crate::client::a::expand\";",
            ),
        ]);
        let report = cycle_report(&g, &[]);
        assert_eq!(report.len(), 3, "{report:#?}");
        assert_eq!(report[0], "cycle of 2: client/a.rs, client/b.rs");
        assert!(
            report[1].contains("client/a.rs -> client/b.rs  (1: super::Plan)"),
            "{report:#?}"
        );
        assert!(
            report[2].contains("2: crate::client::a::expand"),
            "{report:#?}"
        );
        assert!(
            layer_report(&g).is_empty(),
            "comments and strings name nothing"
        );
        let known: &[&[&str]] = &[&["client/a.rs", "client/b.rs"]];
        assert!(cycle_report(&g, known).is_empty(), "a listed cycle passes");
        let stale: &[&[&str]] = &[&["client/a.rs", "client/mod.rs"]];
        let report = cycle_report(&g, stale);
        assert_eq!(report.len(), 4, "{report:#?}");
        assert!(report[3].starts_with("listed in KNOWN_CYCLES but not a cycle now"));
    }

    #[test]
    fn the_checker_sees_upward_and_same_layer_imports_in_any_form() {
        let g = sample(&[
            ("lib.rs", "pub mod client; pub mod net; pub mod keys; pub mod log; pub mod server;"),
            ("client/mod.rs", "pub fn connect() { crate::server::serve() }"),
            ("keys/mod.rs", "pub mod agent;"),
            ("keys/agent.rs", "pub struct Agent;"),
            ("log.rs", "pub fn f() { crate::net::describe(); }"),
            ("net/mod.rs", "pub mod pump; pub fn describe() {}"),
            ("net/pump/mod.rs", "pub mod deep;"),
            (
                "net/pump/deep.rs",
                "use crate::{keys::{agent::{self, Agent}}, log};\n\
                 #[cfg(test)]\nmod tests {\n    fn t() { super::super::super::super::client::connect() }\n}",
            ),
            ("server/mod.rs", "pub fn serve() {}"),
        ]);
        let report = layer_report(&g);
        let want = [
            "client/mod.rs:1: crate::server::serve (client -> server)",
            "log.rs:1: crate::net::describe (log -> net)",
            "net/pump/deep.rs:1: crate::keys::agent::Agent (net -> keys)",
            "net/pump/deep.rs:4: super::super::super::super::client::connect (net -> client)",
        ];
        assert_eq!(report, want);
        assert!(cycle_report(&g, &[]).is_empty());
    }
}
