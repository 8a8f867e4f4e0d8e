//! No import cycles: within every module of the workspace's crates (the library, the CLI, the
//! visualizer and the browser crate), the child modules must form a directed acyclic graph under
//! "uses". A child A uses a sibling B when a file in A's subtree names a path into B's subtree —
//! in a `use` line (`use crate::…`, `use super::…`, `use self::…`, braces expanded) or inline
//! (`crate::a::f()`, `super::b::X`). References to the parent itself (its own items and
//! re-exports) do not count: a module looks down on its children.
//!
//! The check runs on the source text (comments and string literals removed), not on rustc's name
//! resolution, so a `use` of a re-export is attributed to the module that re-exports it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports known to close a cycle, being removed, as (crate root, parent module, from, to). The
/// check ignores these edges, and fails when one of them no longer exists (then delete it here).
/// Once the list is empty, the check covers every module without exception.
const ALLOWED: &[(&str, &str, &str, &str)] = &[];

/// Crate roots; their modules are the `.rs` files beside and below them.
const ROOTS: &[&str] = &["src/lib.rs", "src/bin/fdsr/main.rs", "demo/src/lib.rs", "web/src/lib.rs"];

#[test]
fn no_module_imports_a_sibling_that_imports_it_back() {
    let mut problems = Vec::new();
    for &name in ROOTS {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        let modules = modules(&root);
        let mut edges: BTreeMap<Vec<String>, BTreeSet<(String, String)>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = strip(&std::fs::read_to_string(file).unwrap());
            for target in references(&text, module) {
                if let Some((parent, a, b)) = sibling_edge(module, &target, &modules) {
                    edges.entry(parent).or_default().insert((a, b));
                }
            }
        }
        for &(_, parent, from, to) in ALLOWED.iter().filter(|a| a.0 == name) {
            let key: Vec<String> =
                if parent == "crate" { Vec::new() } else { parent.split("::").map(String::from).collect() };
            let removed = edges.get_mut(&key).is_some_and(|set| set.remove(&(from.to_string(), to.to_string())));
            if !removed {
                problems.push(format!(
                    "{name}: allowed import {parent}: {from} -> {to} no longer exists; remove it from ALLOWED"
                ));
            }
        }
        for (parent, set) in &edges {
            let parent_name = if parent.is_empty() { "crate".to_string() } else { parent.join("::") };
            for cycle in cycles(set) {
                problems.push(format!("{name}: in {parent_name}: {}", cycle.join(", ")));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "import cycles between sibling modules (each line: the modules that import each other around a cycle):\n{}",
        problems.join("\n")
    );
}

/// Every module file of the crate rooted at `root`: module path → file.
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    out.insert(Vec::new(), root.to_path_buf());
    walk(root.parent().unwrap(), &[], root, &mut out);
    out
}

fn walk(dir: &Path, prefix: &[String], root: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        // Another crate's root folder (src/bin) is not part of the library.
        if path.is_dir() && !(prefix.is_empty() && stem == "bin" && root.ends_with("lib.rs")) {
            let sub: Vec<String> = prefix.iter().cloned().chain([stem]).collect();
            walk(&path, &sub, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") && path != root {
            let module = match stem.as_str() {
                "mod" => prefix.to_vec(),
                "main" | "lib" if prefix.is_empty() => continue,
                _ => prefix.iter().cloned().chain([stem]).collect(),
            };
            out.insert(module, path);
        }
    }
}

/// The text without comments, string and char literals (their contents become spaces).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x', '\n', '\''); lifetimes ('a) are left alone.
            let end = text[i + 2..].find('\'').map_or(b.len(), |e| i + 2 + e + 1);
            i = end;
            out.push_str("' '");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Absolute module paths that `text` (the file of `module`) refers to.
fn references(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` trees, braces expanded.
    let mut rest = text;
    while let Some(at) = find_word(rest, "use") {
        let tail = &rest[at + 3..];
        let end = tail.find(';').unwrap_or(tail.len());
        for path in expand(&drop_renames(&tail[..end])) {
            out.extend(resolve(&path, module));
        }
        rest = &tail[end..];
    }
    // Inline paths.
    for word in ["crate", "super", "self"] {
        let mut rest = text;
        while let Some(at) = find_word(rest, word) {
            let tail = &rest[at..];
            let len = tail.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(tail.len());
            let path: Vec<String> = tail[..len].split("::").filter(|s| !s.is_empty()).map(String::from).collect();
            out.extend(resolve(&path, module));
            rest = &tail[len.max(1)..];
        }
    }
    out
}

/// A use tree without its renames (`a::B as C` → `a::B`).
fn drop_renames(tree: &str) -> String {
    let mut out = String::new();
    let mut words = tree.split_whitespace();
    while let Some(w) = words.next() {
        if w == "as" {
            let renamed = words.next().unwrap_or("");
            out.push_str(renamed.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
        } else {
            out.push_str(w);
        }
    }
    out
}

/// Byte offset of `word` standing alone (not part of a longer identifier) in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| from + i) {
        let before = i == 0 || !is_ident(b[i - 1]);
        let after = b.get(i + word.len()).is_none_or(|&c| !is_ident(c));
        if before && after {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

/// The paths of a use tree (`a::{b, c::{d, self}}` → `a::b`, `a::c::d`, `a::c`).
fn expand(tree: &str) -> Vec<Vec<String>> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split("::").filter(|s| !s.is_empty()).map(String::from).collect()];
    };
    let prefix: Vec<String> = tree[..open].split("::").filter(|s| !s.is_empty()).map(String::from).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        for sub in expand(part) {
            let sub: Vec<String> = sub.into_iter().filter(|s| s != "self").collect();
            out.push(prefix.iter().cloned().chain(sub).collect());
        }
    }
    out
}

/// A path written in `module` as an absolute module path, or `None` for an external crate.
fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut segs = path.iter().cloned().peekable();
    let mut base: Vec<String> = match segs.peek()?.as_str() {
        "crate" => {
            segs.next();
            Vec::new()
        }
        "self" | "super" => module.to_vec(),
        _ => return None,
    };
    // In module `a::b` (file `a/b.rs` or `a/b/mod.rs`) `super` is `a`, `self` is `a::b`.
    while let Some(s) = segs.peek() {
        match s.as_str() {
            "self" => {}
            "super" => {
                base.pop()?;
            }
            _ => break,
        }
        segs.next();
    }
    Some(base.into_iter().chain(segs).collect())
}

/// The (parent, child of the source, child of the target) edge that `module` → `target` makes,
/// if they are in different children of a common parent and the target child is a module.
fn sibling_edge(
    module: &[String],
    target: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<(Vec<String>, String, String)> {
    let common = module.iter().zip(target).take_while(|(a, b)| a == b).count();
    let (a, b) = (module.get(common)?, target.get(common)?);
    let parent = module[..common].to_vec();
    let child = |c: &String| parent.iter().cloned().chain([c.clone()]).collect::<Vec<_>>();
    (modules.contains_key(&child(a)) && modules.contains_key(&child(b))).then(|| (parent, a.clone(), b.clone()))
}

/// Every elementary cycle's node set, found once per strongly connected component (reported as
/// one cycle through all its nodes).
fn cycles(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for (a, b) in edges {
                if *a == n && seen.insert(b.clone()) {
                    stack.push(b.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) || !reachable[n].contains(*n) {
            continue;
        }
        let component: Vec<String> = nodes
            .iter()
            .filter(|m| reachable[n].contains(**m) && reachable[*m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        done.extend(component.iter().cloned());
        out.push(component);
    }
    out
}
