//! Node paths as the user gives them: checked with ZooKeeper's rules before anything is sent,
//! and joined with child names.

use zk_proto::path::{validate_path, validate_sequential_prefix};

use crate::exit::Failure;

/// Checks a node path with ZooKeeper's rules (those of the Java client).
///
/// # Errors
///
/// A usage failure naming the path and its first problem.
pub(crate) fn check(path: &str) -> Result<(), Failure> {
    validate_path(path).map_err(|e| Failure::usage(e.to_string()))
}

/// Checks the path of a sequential create (the server appends ten digits, so `/jobs/` is
/// fine).
///
/// # Errors
///
/// A usage failure naming the path and its first problem.
pub(crate) fn check_sequential(path: &str) -> Result<(), Failure> {
    validate_sequential_prefix(path).map_err(|e| Failure::usage(e.to_string()))
}

/// The path of `name` under `parent`.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent of `path`; `None` for the root.
pub(crate) fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(at) => Some(&path[..at]),
    }
}

/// The last segment of `path` (`/` for the root).
pub(crate) fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(at) if path.len() > 1 => &path[at + 1..],
        _ => path,
    }
}

/// The ancestors of `path` from the top, without the root and without `path` itself
/// (`/a/b/c` gives `/a`, `/a/b`).
pub(crate) fn ancestors(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = parent(path);
    while let Some(p) = at.filter(|p| *p != "/") {
        out.push(p);
        at = parent(p);
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::ExitClass;

    #[test]
    fn invalid_paths_are_usage_errors_that_name_the_problem() {
        assert!(check("/").is_ok());
        assert!(check("/a/b").is_ok());
        for (bad, problem) in [
            ("", "empty path"),
            ("a", "must start with '/'"),
            ("/a/", "must not end with '/'"),
            ("/a//b", "empty segment"),
            ("/a/../b", "relative segment"),
            ("/a\u{1}", "forbidden character"),
        ] {
            let failure = check(bad).expect_err(bad);
            assert_eq!(failure.class, ExitClass::Usage);
            assert!(failure.message.contains(problem), "{}", failure.message);
        }
        assert!(check_sequential("/jobs/").is_ok());
        assert!(check_sequential("jobs").is_err());
    }

    #[test]
    fn children_parents_and_names() {
        assert_eq!(child("/", "a"), "/a");
        assert_eq!(child("/a", "b"), "/a/b");
        assert_eq!(parent("/"), None);
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(name("/"), "/");
        assert_eq!(name("/a/b"), "b");
        assert_eq!(ancestors("/a/b/c"), vec!["/a", "/a/b"]);
        assert!(ancestors("/a").is_empty());
        assert!(ancestors("/").is_empty());
    }
}
