//! A set, for group membership (children of a node).

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::model::Model;

/// An operation on a set.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetOp<T> {
    /// Adds a member (idempotent); returns [`SetRet::Done`].
    Add(T),
    /// Removes a member (idempotent); returns [`SetRet::Done`].
    Remove(T),
    /// Returns the members ([`SetRet::Members`]).
    Read,
}

/// A result of a [`SetOp`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetRet<T: Ord> {
    /// An add or a remove was applied.
    Done,
    /// What a read saw.
    Members(BTreeSet<T>),
}

/// A set of members, starting empty: the children of a group node.
#[derive(Debug, Clone)]
pub struct SetModel<T> {
    _member: PhantomData<fn() -> T>,
}

impl<T> SetModel<T> {
    /// An empty set.
    pub fn new() -> Self {
        SetModel {
            _member: PhantomData,
        }
    }
}

impl<T> Default for SetModel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Debug + Ord + Hash> Model for SetModel<T> {
    type Input = SetOp<T>;
    type Output = SetRet<T>;
    type State = BTreeSet<T>;

    fn init(&self) -> Self::State {
        BTreeSet::new()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> Option<Self::State> {
        match (input, output) {
            (SetOp::Read, SetRet::Members(members)) => (members == state).then(|| state.clone()),
            (SetOp::Add(_) | SetOp::Remove(_), SetRet::Done) => self.step_unknown(state, input),
            _ => None,
        }
    }

    fn step_unknown(&self, state: &Self::State, input: &Self::Input) -> Option<Self::State> {
        let mut next = state.clone();
        match input {
            SetOp::Add(member) => {
                next.insert(member.clone());
            }
            SetOp::Remove(member) => {
                next.remove(member);
            }
            SetOp::Read => {}
        }
        Some(next)
    }

    fn is_read_only(&self, input: &Self::Input) -> bool {
        matches!(input, SetOp::Read)
    }

    fn check_output(&self, input: &Self::Input, output: &Self::Output) -> Result<(), String> {
        match (input, output) {
            (SetOp::Read, SetRet::Members(_))
            | (SetOp::Add(_) | SetOp::Remove(_), SetRet::Done) => Ok(()),
            (input, output) => Err(format!("{input:?} cannot return {output:?}")),
        }
    }
}
