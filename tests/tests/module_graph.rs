//! The source tree's shape: no Rust file over 800 lines, and no circle between the files of a
//! crate. Every library crate
//! (`crates/*`) and the test kit are read as text; a file depends on another when it names an
//! item of it by a `crate::`, `super::` or `self::` path (through a module's `pub use`
//! re-exports, to the file that defines the item). A file may name items of its own parent
//! modules (the types its functions serve); any other circle fails, listed with the paths
//! that make it. Test modules, test files and comments are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its path from the crate root (`[]` is the root).
type Module = Vec<String>;

/// The crates whose files must not depend in a circle.
fn source_roots() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the test kit is in the workspace")
        .to_path_buf();
    let mut roots: Vec<PathBuf> = std::fs::read_dir(workspace.join("crates"))
        .expect("crates/")
        .map(|entry| entry.expect("an entry of crates/").path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    roots.push(workspace.join("tests/src"));
    roots.sort();
    roots
}

/// Every Rust file under `root`, with its file name, skipping the directories `enter` refuses
/// (by name).
fn rust_files(root: &Path, enter: impl Fn(&str) -> bool) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a directory of the tree") {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            if path.is_dir() {
                if enter(&name) {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push((path, name));
            }
        }
    }
    found
}

/// Every non-test source file under `root`, by module.
fn modules(root: &Path) -> BTreeMap<Module, PathBuf> {
    // `src/bin/*` are crates of their own; `tests/` directories hold test modules.
    rust_files(root, |dir| dir != "bin" && dir != "tests")
        .into_iter()
        .filter(|(_, name)| !name.contains("tests"))
        .map(|(path, _)| {
            let relative = path.strip_prefix(root).expect("under the root");
            let mut module: Module = relative
                .with_extension("")
                .iter()
                .map(|part| part.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            (module, path)
        })
        .collect()
}

/// The text that counts: no comments, no test module, no `pub(in path)` visibility.
fn code_of(source: &str) -> String {
    let mut code = String::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            // A test module declared (`mod x_tests;`) is skipped; one written inline is the
            // file's last item: the rest is tests.
            match lines.next() {
                Some(next) if next.contains('{') => break,
                _ => continue,
            }
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    while let Some(at) = code.find("pub(in ") {
        let end = code[at..].find(')').map_or(code.len(), |e| at + e + 1);
        code.replace_range(at..end, "pub");
    }
    code
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path beginning with `crate::`, `super::` or `self::` in `code`, as its segments
/// (a `{a, b::c}` group gives one path per member, with its first segment).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    for start in [b"crate::".as_slice(), b"super::", b"self::"] {
        let mut from = 0;
        while let Some(at) = find(&bytes[from..], start).map(|a| a + from) {
            from = at + 1;
            if at > 0 && (is_ident(bytes[at - 1] as char) || bytes[at - 1] == b':') {
                continue;
            }
            let rest = &code[at..];
            let mut segments = Vec::new();
            let mut cursor = 0;
            loop {
                let ident: String = rest[cursor..]
                    .chars()
                    .take_while(|&c| is_ident(c))
                    .collect();
                if ident.is_empty() {
                    break;
                }
                cursor += ident.len();
                segments.push(ident);
                if rest[cursor..].starts_with("::") {
                    cursor += 2;
                } else {
                    break;
                }
            }
            if rest[cursor..].starts_with('{') {
                let group_end = rest[cursor..].find('}').map_or(rest.len(), |e| cursor + e);
                for member in rest[cursor + 1..group_end].split(',') {
                    let first = member.trim().split("::").next().unwrap_or_default();
                    let first: String = first.chars().take_while(|&c| is_ident(c)).collect();
                    if !first.is_empty() {
                        let mut path = segments.clone();
                        path.push(first);
                        paths.push(path);
                    }
                }
            } else {
                paths.push(segments);
            }
        }
    }
    paths
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The items a module file re-exports from its child modules (`pub use child::Item`), by name.
fn re_exports(
    module: &Module,
    code: &str,
    all: &BTreeMap<Module, PathBuf>,
) -> BTreeMap<String, Module> {
    let mut names = BTreeMap::new();
    for line in code.lines() {
        let line = line.trim_start();
        let Some(rest) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        else {
            continue;
        };
        let rest = rest.strip_prefix("self::").unwrap_or(rest);
        let Some((child, items)) = rest.split_once("::") else {
            continue;
        };
        let mut child_module = module.clone();
        child_module.push(child.to_owned());
        if !all.contains_key(&child_module) {
            continue;
        }
        for item in items
            .trim_end_matches(';')
            .trim_matches(['{', '}'])
            .split(',')
        {
            let name = item.split(" as ").last().unwrap_or_default().trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), child_module.clone());
            }
        }
    }
    names
}

/// The file modules each file depends on, each with the paths that make the dependency.
type Graph = BTreeMap<Module, BTreeMap<Module, BTreeSet<String>>>;

fn graph(root: &Path) -> Graph {
    let all = modules(root);
    let codes: BTreeMap<&Module, String> = all
        .iter()
        .map(|(module, path)| {
            (
                module,
                code_of(&std::fs::read_to_string(path).expect("a source file")),
            )
        })
        .collect();
    let exports: BTreeMap<&Module, BTreeMap<String, Module>> = codes
        .iter()
        .map(|(module, code)| (*module, re_exports(module, code, &all)))
        .collect();
    let mut graph = Graph::new();
    for (module, code) in &codes {
        let edges = graph.entry((*module).clone()).or_default();
        for path in paths_in(code) {
            let mut base: Module = match path[0].as_str() {
                "crate" => Vec::new(),
                "super" => {
                    let mut parent = (*module).clone();
                    parent.pop();
                    parent
                }
                _ => (*module).clone(),
            };
            let mut rest = &path[1..];
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            // The longest prefix that is a file, then through its re-exports.
            let Some((target, used)) = (0..=rest.len()).rev().find_map(|k| {
                let mut candidate = base.clone();
                candidate.extend(rest[..k].iter().cloned());
                all.contains_key(&candidate).then_some((candidate, k))
            }) else {
                continue;
            };
            let target = rest
                .get(used)
                .and_then(|item| exports.get(&target).and_then(|names| names.get(item)))
                .cloned()
                .unwrap_or(target);
            // A file may use its parent modules' items.
            let is_ancestor = target.len() < module.len() && module[..target.len()] == target[..];
            if target != **module && !is_ancestor {
                edges.entry(target).or_default().insert(path.join("::"));
            }
        }
    }
    graph
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(graph: &Graph) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, v: &'a Module) {
        let n = walk.index.len();
        walk.index.insert(v, n);
        walk.low.insert(v, n);
        walk.stack.push(v);
        walk.on_stack.insert(v);
        for w in walk.graph.get(v).into_iter().flat_map(BTreeMap::keys) {
            if !walk.index.contains_key(w) {
                visit(walk, w);
                let low = walk.low[w].min(walk.low[v]);
                walk.low.insert(v, low);
            } else if walk.on_stack.contains(w) {
                let low = walk.index[w].min(walk.low[v]);
                walk.low.insert(v, low);
            }
        }
        if walk.low[v] == walk.index[v] {
            let mut component = Vec::new();
            while let Some(w) = walk.stack.pop() {
                walk.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                walk.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            visit(&mut walk, v);
        }
    }
    walk.found
}

fn name(module: &Module) -> String {
    if module.is_empty() {
        "lib".to_owned()
    } else {
        module.join("/")
    }
}

/// The longest a Rust file of the tree may be: past it, a file is split by subject.
const MAX_LINES: usize = 800;

#[test]
fn no_rust_file_is_over_800_lines() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the test kit is in the workspace");
    // Build output, and version control.
    let long: Vec<String> = rust_files(workspace, |dir| dir != "target" && !dir.starts_with('.'))
        .into_iter()
        .filter_map(|(path, _)| {
            let lines = std::fs::read_to_string(&path)
                .expect("a Rust file")
                .lines()
                .count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

#[test]
fn no_two_files_of_a_crate_depend_on_each_other_in_a_circle() {
    let mut report = String::new();
    for root in source_roots() {
        let graph = graph(&root);
        for circle in circles(&graph) {
            report.push_str(&format!("{}: a circle of files:\n", root.display()));
            for from in &circle {
                for (to, paths) in &graph[from] {
                    if circle.contains(to) {
                        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                        report.push_str(&format!(
                            "  {} -> {}: {}\n",
                            name(from),
                            name(to),
                            paths.join(", ")
                        ));
                    }
                }
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_check_sees_a_circle_of_siblings_and_allows_a_child_to_use_its_parent() {
    let dir = std::env::temp_dir().join(format!("module-graph-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "mod a;\nmod b;\nmod m;\npub use a::A;\n");
    write("a.rs", "use crate::b::B;\npub struct A(B);\n");
    write(
        "b.rs",
        "// crate::a::A in a comment does not count\npub struct B;\n",
    );
    write("m/mod.rs", "mod c;\npub struct M;\npub use c::C;\n");
    write("m/c.rs", "use super::M;\npub struct C(M);\n");
    let allowed = graph(&dir);
    assert!(circles(&allowed).is_empty(), "{allowed:?}");
    write("b.rs", "pub struct B(Option<Box<crate::A>>);\n");
    let circle = graph(&dir);
    assert_eq!(
        circles(&circle),
        [vec![vec!["a".to_owned()], vec!["b".to_owned()]]],
        "b uses A through the root's re-export: a <-> b"
    );
    std::fs::remove_dir_all(&dir).expect("remove the temporary directory");
}
