//! The sequential specifications the linearizability checker judges histories against: the
//! [`Model`] trait, and the [`Keyed`] wrapper that checks each key on its own.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::history::{Operation, Outcome};

/// A sequential specification: a state machine that says which results an operation may
/// return in a given state, and the state after it.
///
/// Models must be deterministic: the same state and operation give the same successor.
/// States are compared and hashed for the checker's memoization, so keep them small.
pub trait Model {
    /// An operation with its arguments. Equal inputs must mean equal operations: the
    /// checker treats pending operations of unknown outcome with equal inputs as
    /// interchangeable.
    type Input: Clone + Debug + Eq + Hash;
    /// An operation's result.
    type Output: Clone + Debug;
    /// The object's state.
    type State: Clone + Debug + Eq + Hash;

    /// The state before the first operation.
    fn init(&self) -> Self::State;

    /// The state after `input` in `state`, when it may return `output` there; `None` when it
    /// may not.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> Option<Self::State>;

    /// The state after `input` in `state` when its result is unknown (the operation took
    /// effect but nobody saw its result); `None` when it cannot take effect in `state`.
    /// Returning `state` unchanged is the same as `None`: the operation need not take effect.
    fn step_unknown(&self, state: &Self::State, input: &Self::Input) -> Option<Self::State>;

    /// Whether an operation that took no effect does not change the state whatever its
    /// result: such operations (reads) are dropped when their outcome is unknown or failed,
    /// since they tell nothing then. The default says no, which is always sound.
    fn is_read_only(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

    /// Whether a failure of `input` tells something about the state at some instant between
    /// its invocation and its completion (a compare-and-set that failed with `BadVersion`
    /// saw another version). When it does, the checker linearizes the failed operation as a
    /// no-op that [`step_fail`](Self::step_fail) must accept; otherwise failed operations are
    /// ignored (they had no effect). The default says no.
    fn fail_is_informative(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

    /// Whether `input` may fail in `state` (only asked when
    /// [`fail_is_informative`](Self::fail_is_informative) says yes).
    fn step_fail(&self, state: &Self::State, input: &Self::Input) -> bool {
        let _ = (state, input);
        true
    }

    /// Whether `input` returning `output` can never be accepted in `state` nor in any state
    /// reachable from it (a read of version 3 once the version is 4, when versions only
    /// grow). The checker uses it to prune: it must never say yes wrongly. The default says
    /// no, which only costs time.
    fn never_consistent(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> bool {
        let _ = (state, input, output);
        false
    }

    /// Checks that `output` is a possible kind of result for `input` at all (a read must not
    /// return a write's result); a mismatch is a malformed history, reported as an error
    /// before any search. The default accepts everything.
    ///
    /// # Errors
    ///
    /// A description of the mismatch.
    fn check_output(&self, input: &Self::Input, output: &Self::Output) -> Result<(), String> {
        let _ = (input, output);
        Ok(())
    }

    /// A model tuned to one partition's operations (their inputs and outcomes), used for
    /// that partition's search instead of `self`; `None` (the default) keeps `self`. The
    /// tuned model must accept exactly the same histories of these operations as `self`;
    /// it may abstract what they cannot tell apart (the register maps values no read ever
    /// returned to one representative, which makes the search much cheaper).
    fn specialize(&self, ops: &[(&Self::Input, &Outcome<Self::Output>)]) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = ops;
        None
    }

    /// The symmetry class of an operation of unknown outcome: two pending unknown
    /// operations of one class (and one deadline) must have the same effect
    /// ([`step_unknown`](Self::step_unknown)) in every state, and the checker then only
    /// tries the earliest invoked of them. The default is the input itself.
    fn unknown_class(&self, input: &Self::Input) -> Self::Input {
        input.clone()
    }

    /// Splits a history into parts that can be checked independently (P-compositionality:
    /// a history is linearizable iff each part is). Each part has a label (shown in a
    /// violation) and the indices of its operations in `ops`. The default is one part with
    /// every operation.
    fn partition(&self, ops: &[Operation<Self::Input, Self::Output>]) -> Vec<Partition> {
        vec![Partition {
            label: None,
            ops: (0..ops.len()).collect(),
        }]
    }
}

/// A part of a history that can be checked on its own (see [`Model::partition`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The part's name, for a human (a key).
    pub label: Option<String>,
    /// The indices of its operations in the history's operations.
    pub ops: Vec<usize>,
}

/// An operation on one key of a [`Keyed`] model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyedOp<K, I> {
    /// The key (a znode path).
    pub key: K,
    /// The operation on that key's object.
    pub op: I,
}

impl<K, I> KeyedOp<K, I> {
    /// `op` on `key`.
    pub fn new(key: impl Into<K>, op: I) -> Self {
        KeyedOp {
            key: key.into(),
            op,
        }
    }
}

/// Many independent objects of model `M`, one per key (a znode per path): each key's
/// operations are checked on their own, which is both what the objects promise and much
/// faster than checking them together.
///
/// Its [`step`](Model::step) works on one key's state: the checker always
/// [partitions](Model::partition) by key first, so a search only ever sees one key.
#[derive(Debug, Clone)]
pub struct Keyed<M, K = String> {
    inner: M,
    _key: PhantomData<fn() -> K>,
}

impl<M, K> Keyed<M, K> {
    /// Each key is an object of model `inner`, starting in `inner.init()`.
    pub fn new(inner: M) -> Self {
        Keyed {
            inner,
            _key: PhantomData,
        }
    }

    /// The model of one key.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: Model, K: Clone + Debug + Ord + Hash> Model for Keyed<M, K> {
    type Input = KeyedOp<K, M::Input>;
    type Output = M::Output;
    type State = M::State;

    fn init(&self) -> Self::State {
        self.inner.init()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> Option<Self::State> {
        self.inner.step(state, &input.op, output)
    }

    fn step_unknown(&self, state: &Self::State, input: &Self::Input) -> Option<Self::State> {
        self.inner.step_unknown(state, &input.op)
    }

    fn is_read_only(&self, input: &Self::Input) -> bool {
        self.inner.is_read_only(&input.op)
    }

    fn fail_is_informative(&self, input: &Self::Input) -> bool {
        self.inner.fail_is_informative(&input.op)
    }

    fn step_fail(&self, state: &Self::State, input: &Self::Input) -> bool {
        self.inner.step_fail(state, &input.op)
    }

    fn never_consistent(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Self::Output,
    ) -> bool {
        self.inner.never_consistent(state, &input.op, output)
    }

    fn check_output(&self, input: &Self::Input, output: &Self::Output) -> Result<(), String> {
        self.inner.check_output(&input.op, output)
    }

    fn specialize(&self, ops: &[(&Self::Input, &Outcome<Self::Output>)]) -> Option<Self> {
        let inner: Vec<(&M::Input, &Outcome<M::Output>)> = ops
            .iter()
            .map(|(input, outcome)| (&input.op, *outcome))
            .collect();
        Some(Keyed::new(self.inner.specialize(&inner)?))
    }

    fn unknown_class(&self, input: &Self::Input) -> Self::Input {
        KeyedOp {
            key: input.key.clone(),
            op: self.inner.unknown_class(&input.op),
        }
    }

    fn partition(&self, ops: &[Operation<Self::Input, Self::Output>]) -> Vec<Partition> {
        let mut by_key: BTreeMap<&K, Vec<usize>> = BTreeMap::new();
        for (index, op) in ops.iter().enumerate() {
            by_key.entry(&op.op.key).or_default().push(index);
        }
        by_key
            .into_iter()
            .map(|(key, ops)| Partition {
                label: Some(format!("{key:?}")),
                ops,
            })
            .collect()
    }
}
