//! The node layout shared by discovery, the cache and the provider: instance paths and names,
//! and the instance nodes that are not instances.

use crate::{Error, Result};

/// An instance node whose data is not a service instance.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// The node's path.
    pub path: String,
    /// What is wrong with its data.
    pub reason: String,
}

/// `parent/child`, with the root's single slash.
pub(crate) fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// Refuses a name that cannot be one node's name.
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(Error::InvalidName {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_one_node() {
        for bad in ["", ".", "..", "a/b", "a\0"] {
            assert!(check_name("instance id", bad).is_err(), "{bad:?}");
        }
        assert!(check_name("instance id", "0c6e-41").is_ok());
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/s", "a"), "/s/a");
    }
}
