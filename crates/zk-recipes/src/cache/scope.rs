//! Which nodes a cache holds: under its root, down to its depth, as its filter selects.

use super::{Filter, Keep};

/// The selection of a cache.
pub(crate) struct Scope {
    root: String,
    /// The deepest level cached below the root (0: the root alone).
    levels: usize,
    /// What is kept of a node when there is no filter.
    keep: Keep,
    filter: Option<Filter>,
}

impl Scope {
    pub(crate) fn new(root: &str, levels: usize, keep: Keep, filter: Option<Filter>) -> Scope {
        Scope {
            root: root.to_owned(),
            levels,
            keep,
            filter,
        }
    }

    pub(crate) fn root(&self) -> &str {
        &self.root
    }

    /// How far below the root `path` is (0 for the root); `None` when it is not under it.
    fn depth(&self, path: &str) -> Option<usize> {
        if path == self.root {
            return Some(0);
        }
        let rest = if self.root == "/" {
            path.strip_prefix('/')?
        } else {
            path.strip_prefix(self.root.as_str())?.strip_prefix('/')?
        };
        Some(1 + rest.matches('/').count())
    }

    /// Whether the children of `path` (a cached node) are cached too.
    pub(crate) fn lists_children(&self, path: &str) -> bool {
        self.depth(path).is_some_and(|d| d < self.levels)
    }

    /// What is kept of `path`, a node whose parent is cached (or the root): the filter's
    /// answer for it alone.
    pub(crate) fn keep(&self, path: &str) -> Keep {
        match &self.filter {
            Some(filter) => filter(path),
            None => self.keep,
        }
    }

    /// What is kept of `path` knowing nothing of its ancestors (a watch event): nothing when
    /// it is outside the root or too deep, or when the filter refuses it or an ancestor.
    pub(crate) fn keep_event(&self, path: &str) -> Keep {
        match self.depth(path) {
            Some(depth) if depth <= self.levels => {}
            _ => return Keep::Nothing,
        }
        if self.filter.is_some() && path != self.root {
            let start = if self.root == "/" { 0 } else { self.root.len() };
            let ancestors = std::iter::once(self.root.as_str()).chain(
                path.match_indices('/')
                    .filter(|(i, _)| *i > start)
                    .map(|(i, _)| &path[..i]),
            );
            for ancestor in ancestors {
                if self.keep(ancestor) == Keep::Nothing {
                    return Keep::Nothing;
                }
            }
        }
        self.keep(path)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn depth_and_filter_select_the_nodes() {
        let scope = Scope::new("/app", 1, Keep::Data, None);
        assert_eq!(scope.keep_event("/app"), Keep::Data);
        assert_eq!(scope.keep_event("/app/a"), Keep::Data);
        assert_eq!(scope.keep_event("/app/a/b"), Keep::Nothing);
        assert_eq!(scope.keep_event("/apple"), Keep::Nothing);
        assert_eq!(scope.keep_event("/"), Keep::Nothing);
        assert!(scope.lists_children("/app"));
        assert!(!scope.lists_children("/app/a"));

        let whole = Scope::new("/", usize::MAX, Keep::Stat, None);
        assert_eq!(whole.keep_event("/x/y/z"), Keep::Stat);
        assert!(whole.lists_children("/x/y/z"));

        let filter: Filter = Arc::new(|path: &str| {
            if path.ends_with("/private") {
                Keep::Nothing
            } else if path.ends_with("/big") {
                Keep::Stat
            } else {
                Keep::Data
            }
        });
        let filtered = Scope::new("/app", usize::MAX, Keep::Data, Some(filter));
        assert_eq!(filtered.keep_event("/app/private"), Keep::Nothing);
        assert_eq!(filtered.keep_event("/app/private/x/y"), Keep::Nothing);
        assert_eq!(filtered.keep_event("/app/x/big"), Keep::Stat);
        assert_eq!(filtered.keep_event("/app/x/y"), Keep::Data);
    }
}
