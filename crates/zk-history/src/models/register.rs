//! A ZooKeeper node's data as a versioned register.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::history::Outcome;
use crate::model::Model;

/// A node's data version (`Stat.version`).
pub type Version = i32;

/// An operation on a node's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisterOp<V> {
    /// `getData`: returns [`RegisterRet::Read`].
    Read,
    /// `setData(value, -1)`: returns [`RegisterRet::Written`].
    Write(V),
    /// `setData(value, expected_version)`: returns [`RegisterRet::Written`], or fails with
    /// `BadVersion`.
    Cas {
        /// The version the data must have.
        expected_version: Version,
        /// The new data.
        value: V,
    },
}

/// A result of a [`RegisterOp`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegisterRet<V> {
    /// What a read saw.
    Read {
        /// The data.
        value: V,
        /// Its version.
        version: Version,
    },
    /// The version a write or a successful compare-and-set made.
    Written {
        /// The new version.
        version: Version,
    },
}

/// A register's state: the data and its version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RegisterState<V> {
    /// The data.
    pub value: V,
    /// Its version.
    pub version: Version,
}

/// A ZooKeeper node's data with `setData` compare-and-set: each successful write adds 1 to
/// the version. The node exists for the whole run (created before it, with the initial
/// value at the initial version).
///
/// Outcomes: a [`Cas`](RegisterOp::Cas) recorded as [`Fail`](crate::Outcome::Fail) means
/// `BadVersion` (the version was not the expected one when it was applied); record other
/// definite failures of a `Cas` as `Unknown` (always sound), or turn this off with
/// [`cas_failures_uninformative`](Self::cas_failures_uninformative). A failed `Read` or
/// `Write` tells nothing and is ignored.
///
/// For the search, values that no successful read returns are all mapped to one of them
/// ([`Model::specialize`]): reads cannot tell them apart, and writes of unknown outcome
/// with such values become interchangeable, which keeps the search small when many writes
/// have unknown outcomes.
#[derive(Debug, Clone)]
pub struct Register<V = i64> {
    initial: RegisterState<V>,
    cas_fail_is_bad_version: bool,
    /// Set by [`Model::specialize`]: the values reads returned, and the representative of
    /// all the others.
    unobserved: Option<Arc<(HashSet<V>, V)>>,
}

impl<V> Register<V> {
    /// A node holding `initial` at version 0.
    pub fn new(initial: V) -> Self {
        Register {
            initial: RegisterState {
                value: initial,
                version: 0,
            },
            cas_fail_is_bad_version: true,
            unobserved: None,
        }
    }

    /// Starts at `version` instead of 0.
    pub fn with_version(mut self, version: Version) -> Self {
        self.initial.version = version;
        self
    }

    /// Failed compare-and-sets tell nothing (their failures were not all `BadVersion`).
    pub fn cas_failures_uninformative(mut self) -> Self {
        self.cas_fail_is_bad_version = false;
        self
    }
}

impl<V: Clone + Eq + Hash> Register<V> {
    /// The value as the search keeps it: itself when a read returned it, else the
    /// representative of the values no read returned.
    fn canon(&self, value: &V) -> V {
        match &self.unobserved {
            Some(canon) if !canon.0.contains(value) => canon.1.clone(),
            _ => value.clone(),
        }
    }
}

impl<V: Clone + Debug + Eq + Hash> Model for Register<V> {
    type Input = RegisterOp<V>;
    type Output = RegisterRet<V>;
    type State = RegisterState<V>;

    fn init(&self) -> Self::State {
        RegisterState {
            value: self.canon(&self.initial.value),
            version: self.initial.version,
        }
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> Option<Self::State> {
        match (input, output) {
            (RegisterOp::Read, RegisterRet::Read { value, version }) => {
                (*value == state.value && *version == state.version).then(|| state.clone())
            }
            (RegisterOp::Write(value), RegisterRet::Written { version }) => {
                (state.version.checked_add(1) == Some(*version)).then(|| RegisterState {
                    value: self.canon(value),
                    version: *version,
                })
            }
            (
                RegisterOp::Cas {
                    expected_version,
                    value,
                },
                RegisterRet::Written { version },
            ) => (state.version == *expected_version
                && state.version.checked_add(1) == Some(*version))
            .then(|| RegisterState {
                value: self.canon(value),
                version: *version,
            }),
            _ => None,
        }
    }

    fn step_unknown(&self, state: &Self::State, input: &Self::Input) -> Option<Self::State> {
        match input {
            RegisterOp::Read => Some(state.clone()),
            RegisterOp::Write(value) => Some(RegisterState {
                value: self.canon(value),
                version: state.version.checked_add(1)?,
            }),
            RegisterOp::Cas {
                expected_version,
                value,
            } => (state.version == *expected_version)
                .then(|| {
                    Some(RegisterState {
                        value: self.canon(value),
                        version: state.version.checked_add(1)?,
                    })
                })
                .flatten(),
        }
    }

    fn is_read_only(&self, input: &Self::Input) -> bool {
        matches!(input, RegisterOp::Read)
    }

    fn fail_is_informative(&self, input: &Self::Input) -> bool {
        self.cas_fail_is_bad_version && matches!(input, RegisterOp::Cas { .. })
    }

    fn step_fail(&self, state: &Self::State, input: &Self::Input) -> bool {
        match input {
            RegisterOp::Cas {
                expected_version, ..
            } => state.version != *expected_version,
            RegisterOp::Read | RegisterOp::Write(_) => true,
        }
    }

    fn never_consistent(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> bool {
        // Versions only grow.
        match (input, output) {
            (RegisterOp::Read, RegisterRet::Read { version, .. }) => state.version > *version,
            (RegisterOp::Write(_), RegisterRet::Written { version }) => state.version >= *version,
            (
                RegisterOp::Cas {
                    expected_version, ..
                },
                RegisterRet::Written { version },
            ) => state.version > *expected_version || state.version >= *version,
            _ => false,
        }
    }

    fn specialize(&self, ops: &[(&Self::Input, &Outcome<Self::Output>)]) -> Option<Self> {
        let observed: HashSet<V> = ops
            .iter()
            .filter_map(|(_, outcome)| match outcome {
                Outcome::Ok(RegisterRet::Read { value, .. }) => Some(value.clone()),
                _ => None,
            })
            .collect();
        let written = ops.iter().filter_map(|(input, _)| match input {
            RegisterOp::Write(value) | RegisterOp::Cas { value, .. } => Some(value),
            RegisterOp::Read => None,
        });
        let representative = std::iter::once(&self.initial.value)
            .chain(written)
            .find(|value| !observed.contains(*value))?
            .clone();
        let mut tuned = self.clone();
        tuned.unobserved = Some(Arc::new((observed, representative)));
        Some(tuned)
    }

    fn unknown_class(&self, input: &Self::Input) -> Self::Input {
        match input {
            RegisterOp::Read => RegisterOp::Read,
            RegisterOp::Write(value) => RegisterOp::Write(self.canon(value)),
            RegisterOp::Cas {
                expected_version,
                value,
            } => RegisterOp::Cas {
                expected_version: *expected_version,
                value: self.canon(value),
            },
        }
    }

    fn check_output(&self, input: &Self::Input, output: &Self::Output) -> Result<(), String> {
        match (input, output) {
            (RegisterOp::Read, RegisterRet::Read { .. })
            | (RegisterOp::Write(_) | RegisterOp::Cas { .. }, RegisterRet::Written { .. }) => {
                Ok(())
            }
            (input, output) => Err(format!("{input:?} cannot return {output:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let m = Register::new(0i64);
        let s = m.init();
        let w = RegisterOp::Write(5);
        let s1 = m
            .step(&s, &w, &RegisterRet::Written { version: 1 })
            .unwrap();
        assert_eq!(
            s1,
            RegisterState {
                value: 5,
                version: 1
            }
        );
        assert!(
            m.step(&s, &w, &RegisterRet::Written { version: 2 })
                .is_none()
        );
        let cas = RegisterOp::Cas {
            expected_version: 0,
            value: 7,
        };
        assert!(
            m.step(&s1, &cas, &RegisterRet::Written { version: 1 })
                .is_none()
        );
        assert!(m.step_fail(&s1, &cas));
        assert!(!m.step_fail(&s, &cas));
        assert_eq!(m.step_unknown(&s1, &cas), None);
        assert!(m.never_consistent(
            &s1,
            &RegisterOp::Read,
            &RegisterRet::Read {
                value: 0,
                version: 0
            }
        ));
        assert!(
            m.check_output(&RegisterOp::Read, &RegisterRet::Written { version: 1 })
                .is_err()
        );
        let top = RegisterState {
            value: 0,
            version: Version::MAX,
        };
        assert_eq!(m.step_unknown(&top, &w), None);
        assert!(
            m.step(
                &top,
                &w,
                &RegisterRet::Written {
                    version: Version::MIN
                }
            )
            .is_none()
        );
    }
}
