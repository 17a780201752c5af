//! The search: Wing & Gong's backtracking over a list of call and return entries, with
//! Lowe's memoization of (linearized set, state) pairs, extended with operations of unknown
//! outcome (a call entry without a return entry: they may be linearized, or not).
//!
//! The entries of one partition, sorted by time (calls before returns at equal times, so
//! that touching operations count as concurrent), form a doubly linked list. Scanning from
//! the head, a call entry is an operation that may be linearized next (no return entry of
//! an unlinearized operation precedes it); linearizing it removes its call and return
//! entries and restarts the scan. Reaching a return entry means that operation should have
//! been linearized already: undo the last choice and try the next entry after it. The
//! history is linearizable when every operation with a definite outcome is linearized.
//!
//! Memoization: a (linearized set, state) pair reached once and left is never entered
//! again, since what can follow depends only on the pair. The set is kept as two bitsets
//! (definite and unknown operations); the memo key stores the run of leading full words of
//! the first as a count, so keys stay small when, as usual, the linearized operations are
//! mostly a prefix.
//!
//! Pruning, all sound: an unknown operation that would leave the state unchanged is not
//! linearized (not linearizing it is the same and keeps more options); a choice after
//! which the most urgent pending operation with a result (the first such return entry) can never be accepted
//! ([`Model::never_consistent`]) is not taken; of unknown operations of one symmetry class
//! ([`Model::unknown_class`]: equal inputs by default) and one deadline, only the earliest
//! invoked one not yet linearized is tried; and a definite operation that is consistent now
//! and leaves the state unchanged is linearized at once, with no alternative tried. The
//! symmetry rule loses nothing: in any linearization, the linearized operations of a class
//! can be swapped for the first ones in invocation order (the k-th earliest is invoked no
//! later than the k-th linearization point, and a class has one effect), which turns 2^n
//! subsets of n interchangeable unknown adds into n + 1 counts.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::{Duration, Instant};

use crate::model::Model;

/// How an operation of the search ended.
pub(crate) enum Kind<'a, O> {
    /// It took effect and returned this.
    Ok(&'a O),
    /// It failed, and the failure tells something: linearized as a checked no-op.
    Fail,
    /// It may have taken effect, until its deadline if any.
    Unknown { deadline: Option<Duration> },
}

/// One operation as the search sees it.
pub(crate) struct SearchOp<'a, I, O> {
    pub(crate) input: &'a I,
    pub(crate) kind: Kind<'a, O>,
    pub(crate) call: Duration,
    /// `None` for an unknown outcome.
    pub(crate) ret: Option<Duration>,
}

/// The shared budget of one check.
pub(crate) struct Budget {
    pub(crate) max_steps: u64,
    pub(crate) max_memo_entries: u64,
    pub(crate) deadline: Option<Instant>,
    pub(crate) steps: u64,
    pub(crate) memo_entries: u64,
}

pub(crate) enum Exhausted {
    Steps,
    Time,
    Memory,
}

/// The deepest point the search reached before it had to give up on a branch.
pub(crate) struct Best<S> {
    /// Where it got stuck: the position (in time order) of the return entry it could not
    /// pass, then how many operations of definite outcome it linearized. Dead ends are
    /// ranked by this: the true culprit's return entry is the furthest any attempt reaches
    /// (the rest of the history up to it is linearizable), and counting unknown operations
    /// would favour attempts that wrongly applied them.
    pub(crate) rank: (usize, usize),
    /// The linearized operations, in order (indices into the search's operations).
    pub(crate) prefix: Vec<usize>,
    /// The operation whose return entry was reached unlinearized.
    pub(crate) blocking: usize,
    /// The state there.
    pub(crate) state: S,
}

pub(crate) enum Outcome<S> {
    Linearizable,
    Violation(Best<S>),
    OutOfBudget(Exhausted),
}

/// FxHash-like: fast for the small keys of the memo.
#[derive(Default)]
struct FastHasher {
    hash: u64,
}

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // fmix64 (MurmurHash3): spread the bits, since the table uses the top ones.
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[derive(PartialEq, Eq, Hash)]
struct MemoKey<S> {
    /// Leading words of the definite bitset that are all ones.
    full: u32,
    /// The definite bitset's words after those, without trailing zero words.
    definite: Box<[u64]>,
    /// The unknown bitset, without trailing zero words.
    unknown: Box<[u64]>,
    state: S,
}

fn trimmed(words: &[u64]) -> Box<[u64]> {
    let end = words.iter().rposition(|w| *w != 0).map_or(0, |i| i + 1);
    words[..end].into()
}

#[derive(Clone, Copy)]
enum Slot {
    Definite(usize),
    Unknown(usize),
}

struct Bits {
    definite: Vec<u64>,
    unknown: Vec<u64>,
}

impl Bits {
    fn flip(&mut self, slot: Slot) {
        let (words, i) = match slot {
            Slot::Definite(i) => (&mut self.definite, i),
            Slot::Unknown(i) => (&mut self.unknown, i),
        };
        if let Some(word) = words.get_mut(i / 64) {
            *word ^= 1 << (i % 64);
        }
    }

    fn get(&self, slot: Slot) -> bool {
        let (words, i) = match slot {
            Slot::Definite(i) => (&self.definite, i),
            Slot::Unknown(i) => (&self.unknown, i),
        };
        words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn key<S>(&self, state: S) -> MemoKey<S> {
        let full = self.definite.iter().take_while(|w| **w == u64::MAX).count();
        MemoKey {
            full: u32::try_from(full).unwrap_or(u32::MAX),
            definite: trimmed(&self.definite[full..]),
            unknown: trimmed(&self.unknown),
            state,
        }
    }
}

const NONE: u32 = u32::MAX;

/// The entry list: index 0 is the head, the last index the tail; the others are entries.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The operation of each entry (`NONE` for the sentinels).
    op: Vec<u32>,
    is_call: Vec<bool>,
    /// For a call entry, its return entry (`NONE` when the outcome is unknown).
    ret_of: Vec<u32>,
}

impl List {
    fn build<I, O>(ops: &[SearchOp<'_, I, O>]) -> List {
        // (time, calls before returns, op)
        let mut entries: Vec<(Duration, bool, u32)> = Vec::with_capacity(ops.len() * 2);
        for (i, op) in ops.iter().enumerate() {
            let i = i as u32;
            entries.push((op.call, false, i));
            if let Some(ret) = op.ret {
                entries.push((ret, true, i));
            }
        }
        entries.sort_unstable();
        let n = entries.len() + 2;
        let mut list = List {
            next: (1..=n as u32).collect(),
            prev: (0..n as u32).map(|i| i.wrapping_sub(1)).collect(),
            op: vec![NONE; n],
            is_call: vec![false; n],
            ret_of: vec![NONE; n],
        };
        let mut call_entry = vec![NONE; ops.len()];
        for (position, (_, is_return, op)) in entries.iter().enumerate() {
            let e = position + 1;
            list.op[e] = *op;
            list.is_call[e] = !is_return;
            if *is_return {
                if let Some(call) = call_entry.get(*op as usize).copied()
                    && call != NONE
                {
                    list.ret_of[call as usize] = e as u32;
                }
            } else if let Some(slot) = call_entry.get_mut(*op as usize) {
                *slot = e as u32;
            }
        }
        list
    }

    fn head(&self) -> usize {
        0
    }

    fn tail(&self) -> usize {
        self.next.len() - 1
    }

    fn unlink(&mut self, e: usize) {
        let (p, n) = (self.prev[e] as usize, self.next[e] as usize);
        self.next[p] = n as u32;
        self.prev[n] = p as u32;
    }

    fn relink(&mut self, e: usize) {
        let (p, n) = (self.prev[e] as usize, self.next[e] as usize);
        self.next[p] = e as u32;
        self.prev[n] = e as u32;
    }

    /// Removes a call entry and its return entry.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        let ret = self.ret_of[call];
        if ret != NONE {
            self.unlink(ret as usize);
        }
    }

    /// Undoes [`lift`](Self::lift) (in the reverse order, as dancing links require).
    fn unlift(&mut self, call: usize) {
        let ret = self.ret_of[call];
        if ret != NONE {
            self.relink(ret as usize);
        }
        self.relink(call);
    }

    /// The first return entry after `from` whose operation is not `skip_op` and passes
    /// `wanted`.
    fn first_return_after(
        &self,
        from: usize,
        skip_op: u32,
        wanted: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let tail = self.tail();
        let mut e = from;
        while e != tail {
            if !self.is_call[e] && self.op[e] != skip_op && wanted(self.op[e] as usize) {
                return Some(e);
            }
            e = self.next[e] as usize;
        }
        None
    }
}

struct Frame<S> {
    call: usize,
    prev_state: S,
    prev_lin_time: Duration,
    /// A definite operation that left the state unchanged: linearizing it was not a choice
    /// (see [`search`]), so undoing it undoes the choice before it too.
    forced: bool,
}

/// Searches for a linearization of `ops` from `model.init()`.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M::Input, M::Output>],
    budget: &mut Budget,
) -> Outcome<M::State> {
    let mut slots = Vec::with_capacity(ops.len());
    let (mut definite, mut unknown) = (0usize, 0usize);
    for op in ops {
        if matches!(op.kind, Kind::Unknown { .. }) {
            slots.push(Slot::Unknown(unknown));
            unknown += 1;
        } else {
            slots.push(Slot::Definite(definite));
            definite += 1;
        }
    }
    // Of unknown operations of the same class and deadline, the one invoked just before
    // (ties: the earlier in `ops`, which is the list's order too).
    let mut previous_alike: Vec<Option<usize>> = vec![None; ops.len()];
    {
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| (ops[i].call, i));
        let mut last: HashMap<(M::Input, Option<Duration>), usize> = HashMap::new();
        for i in order {
            if let Kind::Unknown { deadline } = ops[i].kind {
                let class = model.unknown_class(ops[i].input);
                previous_alike[i] = last.insert((class, deadline), i);
            }
        }
    }
    let mut remaining = definite;
    if remaining == 0 {
        return Outcome::Linearizable;
    }
    let mut bits = Bits {
        definite: vec![0; definite.div_ceil(64)],
        unknown: vec![0; unknown.div_ceil(64)],
    };
    let mut list = List::build(ops);
    let mut memo: HashSet<MemoKey<M::State>, BuildHasherDefault<FastHasher>> = HashSet::default();
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let mut state = model.init();
    let mut lin_time = Duration::ZERO;
    let mut best: Option<Best<M::State>> = None;
    let tail = list.tail();
    let mut e = list.next[list.head()] as usize;

    loop {
        if remaining == 0 {
            return Outcome::Linearizable;
        }
        budget.steps += 1;
        if budget.steps > budget.max_steps {
            return Outcome::OutOfBudget(Exhausted::Steps);
        }
        if budget.steps.is_multiple_of(1024)
            && let Some(deadline) = budget.deadline
            && Instant::now() >= deadline
        {
            return Outcome::OutOfBudget(Exhausted::Time);
        }

        if e != tail && list.is_call[e] {
            let index = list.op[e] as usize;
            let Some(op) = ops.get(index) else {
                e = list.next[e] as usize;
                continue;
            };
            let next_state = match op.kind {
                Kind::Ok(output) => model.step(&state, op.input, output),
                Kind::Fail => model.step_fail(&state, op.input).then(|| state.clone()),
                Kind::Unknown { deadline } => {
                    let point = lin_time.max(op.call);
                    let alike_pending = previous_alike[index].is_some_and(|p| !bits.get(slots[p]));
                    if alike_pending || deadline.is_some_and(|d| point > d) {
                        None
                    } else {
                        model
                            .step_unknown(&state, op.input)
                            .filter(|next| *next != state)
                    }
                }
            };
            // The most urgent other operation with a result, when it could never be accepted
            // after this. (Any unlinearized operation would do, since each must still be
            // linearized; the most urgent one is the likeliest to be doomed. Failed ones have
            // no result to judge.)
            let doomed = next_state.as_ref().and_then(|next| {
                let with_result =
                    |i: usize| matches!(ops.get(i).map(|o| &o.kind), Some(Kind::Ok(_)));
                let r = list.first_return_after(e, index as u32, with_result)?;
                let urgent = list.op[r] as usize;
                let op = ops.get(urgent)?;
                match op.kind {
                    Kind::Ok(output) if model.never_consistent(next, op.input, output) => {
                        Some((urgent, r))
                    }
                    _ => None,
                }
            });
            let pruned = doomed.is_some();
            let depth =
                definite - remaining + usize::from(matches!(slots[index], Slot::Definite(_)));
            if let (Some((urgent, position)), Some(next)) = (doomed, &next_state)
                && best.as_ref().is_none_or(|b| (position, depth) > b.rank)
            {
                // As deep as linearizing this one and then reaching the urgent one's return.
                let mut prefix: Vec<usize> =
                    stack.iter().map(|f| list.op[f.call] as usize).collect();
                prefix.push(index);
                best = Some(Best {
                    rank: (position, depth),
                    prefix,
                    blocking: urgent,
                    state: next.clone(),
                });
            }
            // A definite operation that is consistent now and leaves the state unchanged (a
            // read, a failed compare-and-set) is linearized now without trying the others
            // first: any linearization from here can be rewritten to place it now (every
            // operation not yet linearized completed after it was invoked, or its return
            // entry would come first), with the same states. So if that fails, this
            // configuration fails. Deadlines of unknown operations are no exception: the
            // scan reaches this entry only after every earlier call failed here, so any
            // linearization from here starts with an operation invoked no earlier than
            // this one, which moves `lin_time` at least as far.
            let forced = !matches!(op.kind, Kind::Unknown { .. })
                && next_state.as_ref().is_some_and(|next| *next == state);
            let mut dead_end = forced && pruned;
            if let (Some(next), false) = (next_state, pruned) {
                bits.flip(slots[index]);
                if memo.insert(bits.key(next.clone())) {
                    budget.memo_entries += 1;
                    if budget.memo_entries > budget.max_memo_entries {
                        return Outcome::OutOfBudget(Exhausted::Memory);
                    }
                    stack.push(Frame {
                        call: e,
                        prev_state: std::mem::replace(&mut state, next),
                        prev_lin_time: lin_time,
                        forced,
                    });
                    lin_time = lin_time.max(op.call);
                    if let Slot::Definite(_) = slots[index] {
                        remaining -= 1;
                    }
                    list.lift(e);
                    e = list.next[list.head()] as usize;
                    continue;
                }
                bits.flip(slots[index]);
                dead_end = forced;
            }
            if !dead_end {
                e = list.next[e] as usize;
                continue;
            }
        } else {
            // A return entry (or the end, which cannot come first while definite operations
            // remain, since each has a return entry): undo the last choice.
            // A real dead end replaces a pruned one of the same rank: it is the better witness.
            let depth = definite - remaining;
            if e != tail && best.as_ref().is_none_or(|b| (e, depth) >= b.rank) {
                best = Some(Best {
                    rank: (e, depth),
                    prefix: stack.iter().map(|f| list.op[f.call] as usize).collect(),
                    blocking: list.op[e] as usize,
                    state: state.clone(),
                });
            }
        }
        // Undo the last choice, and the forced steps after it.
        loop {
            let Some(frame) = stack.pop() else {
                return match best {
                    Some(best) => Outcome::Violation(best),
                    // Unreachable: the first entry reached without a choice to undo is a
                    // return entry, which sets `best`. Say so rather than panic.
                    None => Outcome::OutOfBudget(Exhausted::Steps),
                };
            };
            let index = list.op[frame.call] as usize;
            state = frame.prev_state;
            lin_time = frame.prev_lin_time;
            bits.flip(slots[index]);
            if let Slot::Definite(_) = slots[index] {
                remaining += 1;
            }
            list.unlift(frame.call);
            if !frame.forced {
                e = list.next[frame.call] as usize;
                break;
            }
        }
    }
}
