//! The file graph: every path a file binds with `use` or writes in its
//! code, followed through `use` and `pub use` to the file that defines what
//! it names; and the graph's cycles, by Tarjan's algorithm.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::{parse, Binding, Module, Parsed};

/// One source: its path under src/ (`client/app.rs`) and its text.
pub(super) struct Source {
    pub(super) path: String,
    pub(super) text: String,
}

/// Where one file names another: the line and the path as written.
pub(super) struct Use {
    pub(super) line: usize,
    pub(super) path: String,
    /// Inside `#[cfg(test)]` code.
    pub(super) test: bool,
}

/// Files (by index into `files`) and who names whom.
pub(super) struct Graph {
    pub(super) files: Vec<String>,
    pub(super) edges: BTreeMap<(usize, usize), Vec<Use>>,
}

/// How far a name is followed through `use` before giving up (a loop).
const DEPTH: usize = 12;

/// The module a file under src/ holds; None outside the library (bin/).
pub(super) fn module_of(path: &str) -> Option<Module> {
    if path.starts_with("bin/") {
        return None;
    }
    let mut m: Module = path
        .strip_suffix(".rs")?
        .split('/')
        .map(String::from)
        .collect();
    if m.last().is_some_and(|l| l == "mod") || m == ["lib"] {
        m.pop();
    }
    Some(m)
}

struct Tree {
    file_of: BTreeMap<Module, usize>,
    parsed: Vec<Parsed>,
    /// Every module, files' and inline ones.
    all: BTreeSet<Module>,
}

impl Tree {
    /// The file holding module `m`.
    fn holder(&self, m: &[String]) -> Option<usize> {
        (0..=m.len())
            .rev()
            .find_map(|k| self.file_of.get(&m[..k]).copied())
    }

    fn bindings<'a>(&'a self, m: &'a [String]) -> impl Iterator<Item = &'a Binding> + 'a {
        let file = self.holder(m).map(|f| &self.parsed[f]);
        file.into_iter()
            .flat_map(|p| &p.bindings)
            .filter(move |b| b.module == m)
    }

    fn defines(&self, m: &[String], name: &str) -> bool {
        self.holder(m).is_some_and(|f| {
            self.parsed[f]
                .defs
                .contains(&(m.to_vec(), name.to_string()))
        })
    }

    /// What `first` (a path's first segment) stands for in module `m`;
    /// None for another crate's name (std, libc, sluice_proto).
    fn start(&self, m: &[String], first: &str, depth: usize) -> Option<Module> {
        let with = |m: &[String]| {
            let mut c = m.to_vec();
            c.push(first.to_string());
            c
        };
        match first {
            _ if depth > DEPTH => None,
            "crate" => Some(Vec::new()),
            "self" => Some(m.to_vec()),
            "super" => m.split_last().map(|(_, parent)| parent.to_vec()),
            _ if self.all.contains(&with(m)) || self.defines(m, first) => Some(with(m)),
            _ => {
                let named = self.bindings(m).find(|b| b.name.as_deref() == Some(first));
                if let Some(b) = named {
                    return self.absolute(&b.module, &b.target, depth + 1);
                }
                self.bindings(m).filter(|b| b.name.is_none()).find_map(|g| {
                    let from = self.absolute(&g.module, &g.target, depth + 1)?;
                    self.start(&from, first, depth + 1)
                })
            }
        }
    }

    /// `segs`, written in module `m`, as a path from the crate root.
    fn absolute(&self, m: &[String], segs: &[String], depth: usize) -> Option<Module> {
        let mut p = self.start(m, segs.first()?, depth)?;
        for s in &segs[1..] {
            match s.as_str() {
                "super" => {
                    p.pop()?;
                }
                "self" => {}
                _ => p.push(s.clone()),
            }
        }
        Some(p)
    }

    /// The file defining what the path `abs` names; None for a module
    /// itself (`use crate::net;` is followed where `net::x` is written).
    fn locate(&self, abs: &[String], depth: usize) -> Option<usize> {
        if depth > DEPTH {
            return None;
        }
        let k = (0..=abs.len())
            .rev()
            .find(|&k| self.all.contains(&abs[..k]))?;
        let (m, name, rest) = (&abs[..k], abs.get(k)?, &abs[k + 1..]);
        if self.defines(m, name) {
            return self.holder(m);
        }
        let via = |target: &[String], module: &[String], tail: &[String]| {
            let mut t = self.absolute(module, target, depth + 1)?;
            t.extend_from_slice(tail);
            self.locate(&t, depth + 1)
        };
        if let Some(b) = self.bindings(m).find(|b| b.name.as_deref() == Some(name)) {
            return via(&b.target, &b.module, rest);
        }
        let globs = self.bindings(m).filter(|b| b.name.is_none());
        globs
            .filter_map(|g| via(&g.target, &g.module, &abs[k..]))
            .next()
            .or_else(|| self.holder(m))
    }
}

/// Reads the sources and draws who names whom.
pub(super) fn graph(sources: &[Source]) -> Graph {
    let mut tree = Tree {
        file_of: BTreeMap::new(),
        parsed: Vec::new(),
        all: BTreeSet::new(),
    };
    let mut files = Vec::new();
    for s in sources {
        let Some(m) = module_of(&s.path) else {
            continue;
        };
        let p = parse(&m, &s.text);
        tree.all.extend(p.inline.iter().cloned());
        tree.all.insert(m.clone());
        tree.file_of.insert(m, files.len());
        tree.parsed.push(p);
        files.push(s.path.clone());
    }
    let mut edges: BTreeMap<(usize, usize), Vec<Use>> = BTreeMap::new();
    for (from, p) in tree.parsed.iter().enumerate() {
        let mut add = |to: Option<usize>, line, segs: &[String], test| {
            if let Some(to) = to.filter(|&to| to != from) {
                let path = segs.join("::");
                edges
                    .entry((from, to))
                    .or_default()
                    .push(Use { line, path, test });
            }
        };
        for b in &p.bindings {
            let abs = tree.absolute(&b.module, &b.target, 0);
            // A module's face handing on its own children's names.
            if b.public && abs.as_ref().is_some_and(|a| a.starts_with(&b.module)) {
                continue;
            }
            let to = match (&abs, &b.name) {
                (Some(a), None) if tree.all.contains(a) => tree.holder(a),
                (Some(a), _) => tree.locate(a, 0),
                (None, _) => None,
            };
            add(to, b.line, &b.target, b.test);
        }
        for w in &p.written {
            let to = tree
                .absolute(&w.module, &w.segs, 0)
                .and_then(|a| tree.locate(&a, 0));
            add(to, w.line, &w.segs, w.test);
        }
    }
    Graph { files, edges }
}

/// The graph's strongly connected components of two files or more, each
/// sorted; only arrows with a use that `keep` accepts count.
pub(super) fn cycles(g: &Graph, keep: impl Fn(&Use) -> bool) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); g.files.len()];
    for (&(a, b), uses) in &g.edges {
        if uses.iter().any(&keep) {
            adj[a].push(b);
        }
    }
    let mut t = Tarjan {
        index: vec![None; adj.len()],
        low: vec![0; adj.len()],
        on_stack: vec![false; adj.len()],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..adj.len() {
        if t.index[v].is_none() {
            t.visit(v, &adj);
        }
    }
    t.found.sort();
    t.found
}

struct Tarjan {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize, adj: &[Vec<usize>]) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &adj[v] {
            match self.index[w] {
                None => {
                    self.visit(w, adj);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                self.found.push(scc);
            }
        }
    }
}
