//! One source file read as far as the layer checks need it: the modules it
//! opens, the names it defines, its `use` bindings and the paths written
//! in its code. Text, not a compiler: comments and literals are blanked
//! first, so a path quoted in a doc comment or a string is no import.

use std::collections::BTreeSet;

/// A module's path from the crate root (`["client", "app"]`).
pub(super) type Module = Vec<String>;

/// `use` in `module`: `name` (None for a glob) stands for `target`, a path
/// as written (relative to `module`).
pub(super) struct Binding {
    pub(super) module: Module,
    pub(super) name: Option<String>,
    pub(super) target: Vec<String>,
    pub(super) line: usize,
    pub(super) test: bool,
    /// `pub use`: a name handed on; who names it here is followed on.
    pub(super) public: bool,
}

/// A path written in code (`crate::net::x(..)`, `super::Y`, `app::z`).
pub(super) struct Written {
    pub(super) module: Module,
    pub(super) segs: Vec<String>,
    pub(super) line: usize,
    pub(super) test: bool,
}

/// What one file holds.
#[derive(Default)]
pub(super) struct Parsed {
    pub(super) bindings: Vec<Binding>,
    pub(super) written: Vec<Written>,
    /// (module, name) of every item defined (fn, struct, mod, ...).
    pub(super) defs: BTreeSet<(Module, String)>,
    /// Modules opened inline (`mod tests { .. }`).
    pub(super) inline: BTreeSet<Module>,
}

/// The text with comments, strings and character literals blanked to
/// spaces; newlines stay, so line numbers still hold.
pub(super) fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Skips c[from..to], keeping its newlines.
    let skip = |out: &mut String, from: usize, to: usize| {
        out.push(' ');
        out.extend(c[from..to.min(c.len())].iter().filter(|&&x| x == '\n'));
    };
    while i < c.len() {
        let prev_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            skip(&mut out, i, end);
            i = end;
        } else if at(0) == '/' && at(1) == '*' {
            let (mut k, mut depth) = (i, 0);
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            skip(&mut out, i, k);
            i = k;
        } else if let Some(end) = raw_string(&c, i).filter(|_| !prev_ident) {
            skip(&mut out, i, end);
            i = end;
        } else if at(0) == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            skip(&mut out, i, k + 1);
            i = k + 1;
        } else if at(0) == '\'' && at(1) == '\\' {
            let end = (i + 3..c.len()).find(|&k| c[k] == '\'').unwrap_or(c.len());
            skip(&mut out, i, end + 1);
            i = end + 1;
        } else if at(0) == '\'' && at(2) == '\'' {
            skip(&mut out, i, i + 3);
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The end of a raw string (`r"..."`, `br#"..."#`) starting at `i`.
fn raw_string(c: &[char], i: usize) -> Option<usize> {
    let mut k = i;
    if c.get(k) == Some(&'b') {
        k += 1;
    }
    if c.get(k) != Some(&'r') {
        return None;
    }
    k += 1;
    let hashes = c[k..].iter().take_while(|&&x| x == '#').count();
    k += hashes;
    if c.get(k) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat('#').take(hashes))
        .collect();
    (k + 1..c.len())
        .find(|&e| c[e..].starts_with(&close))
        .map(|e| e + close.len())
}

/// A token of blanked text and its line (1-based).
struct Tok {
    s: String,
    line: usize,
}

fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < c.len() {
        if c[i] == '\n' {
            line += 1;
            i += 1;
        } else if c[i].is_whitespace() {
            i += 1;
        } else if is_ident_char(c[i]) {
            let start = i;
            while i < c.len() && is_ident_char(c[i]) {
                i += 1;
            }
            out.push(Tok {
                s: c[start..i].iter().collect(),
                line,
            });
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok {
                s: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Tok {
                s: c[i].to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Keywords after which a name is defined.
const DEFINES: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

/// Reads one file whose module is `module`.
pub(super) fn parse(module: &Module, text: &str) -> Parsed {
    let t = tokens(&blank(text));
    let s = |k: usize| t.get(k).map_or("", |x| x.s.as_str());
    let mut p = Parsed::default();
    // Inline modules open, with the brace depth they opened at.
    let mut open: Vec<(Module, usize)> = Vec::new();
    // Brace depths at which a `#[cfg(test)]` block opened.
    let mut tests: Vec<usize> = Vec::new();
    let (mut depth, mut i, mut cfg_test) = (0, 0, false);
    while i < t.len() {
        let cur = open.last().map_or(module, |(m, _)| m).clone();
        let in_test = !tests.is_empty();
        match s(i) {
            "#" if s(i + 1) == "[" && s(i + 2) == "cfg" => {
                let end = (i..t.len()).find(|&k| s(k) == "]").unwrap_or(t.len());
                let inner: Vec<&str> = (i + 3..end).map(s).collect();
                cfg_test = inner.contains(&"test") && !inner.contains(&"not");
                i = end + 1;
                continue;
            }
            "mod" if is_ident(s(i + 1)) && (s(i + 2) == "{" || s(i + 2) == ";") => {
                let mut child = cur.clone();
                child.push(s(i + 1).to_string());
                p.defs.insert((cur, s(i + 1).to_string()));
                if s(i + 2) == "{" {
                    if cfg_test {
                        tests.push(depth);
                    }
                    open.push((child.clone(), depth));
                    p.inline.insert(child);
                    depth += 1;
                }
                cfg_test = false;
                i += 3;
                continue;
            }
            "use" => {
                let back = (i.saturating_sub(6)..i).rev().map(s);
                let public = back
                    .take_while(|x| !matches!(*x, ";" | "{" | "}" | "]"))
                    .any(|x| x == "pub");
                let mut k = i + 1;
                let mut found = Vec::new();
                use_tree(&t, &mut k, Vec::new(), &mut found);
                for (name, target) in found {
                    p.bindings.push(Binding {
                        module: cur.clone(),
                        name,
                        target,
                        line: t[i].line,
                        test: in_test || cfg_test,
                        public,
                    });
                }
                cfg_test = false;
                i = k;
                continue;
            }
            "{" => {
                if cfg_test {
                    tests.push(depth);
                    cfg_test = false;
                }
                depth += 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                if open.last().is_some_and(|(_, d)| *d == depth) {
                    open.pop();
                }
                if tests.last() == Some(&depth) {
                    tests.pop();
                }
            }
            ";" => cfg_test = false,
            kw if DEFINES.contains(&kw) && is_ident(s(i + 1)) && !DEFINES.contains(&s(i + 1)) => {
                p.defs.insert((cur, s(i + 1).to_string()));
            }
            first
                if is_ident(first)
                    && s(i + 1) == "::"
                    && !matches!(s(i.wrapping_sub(1)), "::" | "$" | "in") =>
            {
                let mut segs = vec![first.to_string()];
                let mut k = i + 1;
                while s(k) == "::" && is_ident(s(k + 1)) {
                    segs.push(s(k + 1).to_string());
                    k += 2;
                }
                p.written.push(Written {
                    module: cur,
                    segs,
                    line: t[i].line,
                    test: in_test || cfg_test,
                });
                i = k;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    p
}

/// One `use` tree from `t[*k]` to its `;` (or the `,`/`}` ending a group
/// member): each (bound name, full path). A glob binds no name.
fn use_tree(
    t: &[Tok],
    k: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    let s = |k: usize| t.get(k).map_or("", |x| x.s.as_str());
    let mut path = prefix;
    if s(*k) == "::" {
        *k += 1;
    }
    while is_ident(s(*k)) && s(*k) != "as" {
        path.push(s(*k).to_string());
        *k += 1;
        if s(*k) != "::" {
            break;
        }
        *k += 1;
    }
    match s(*k) {
        "*" => {
            out.push((None, path));
            *k += 1;
        }
        "{" => {
            *k += 1;
            while *k < t.len() && s(*k) != "}" {
                let before = *k;
                use_tree(t, k, path.clone(), out);
                if s(*k) == "," || *k == before {
                    *k += 1;
                }
            }
            *k += 1;
        }
        _ => {
            if path.last().is_some_and(|l| l == "self") {
                path.pop();
            }
            let mut name = path.last().cloned();
            if s(*k) == "as" {
                name = Some(s(*k + 1).to_string());
                *k += 2;
            }
            if !path.is_empty() {
                out.push((name.or(Some("_".into())), path));
            }
        }
    }
    if s(*k) == ";" {
        *k += 1;
    }
}
