//! Test support: history builders, and simulators of a real atomic register and counter that
//! produce histories with random interleavings (linearizable by construction, since every
//! effect happens at one instant inside its operation's interval).
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::time::Duration;

use zk_history::models::{CounterOp, RegisterOp, RegisterRet};
use zk_history::{History, KeyedOp, Operation, Outcome};

pub type RegHistory = History<RegisterOp<i64>, RegisterRet<i64>>;
pub type KeyedRegHistory = History<KeyedOp<String, RegisterOp<i64>>, RegisterRet<i64>>;
pub type CounterHistory = History<CounterOp, i64>;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Builds histories by hand: times in milliseconds, ids in order.
pub struct Builder<I, O> {
    pub history: History<I, O>,
}

impl<I, O> Builder<I, O> {
    pub fn new() -> Self {
        Builder {
            history: History::new(),
        }
    }

    /// An operation of `process` from `invoke` to `complete` (ms; `None`: never completed).
    pub fn op(
        &mut self,
        process: u64,
        invoke: u64,
        complete: Option<u64>,
        op: I,
        outcome: Outcome<O>,
    ) -> &mut Self {
        let id = self.history.ops.len() as u64;
        self.history.ops.push(Operation {
            id,
            process,
            invoke: ms(invoke),
            complete: complete.map(ms),
            op,
            outcome,
        });
        self
    }

    pub fn build(&mut self) -> History<I, O>
    where
        I: Clone,
        O: Clone,
    {
        self.history.clone()
    }
}

pub fn read(value: i64, version: i32) -> Outcome<RegisterRet<i64>> {
    Outcome::Ok(RegisterRet::Read { value, version })
}

pub fn written(version: i32) -> Outcome<RegisterRet<i64>> {
    Outcome::Ok(RegisterRet::Written { version })
}

/// SplitMix64: a tiny deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

/// One operation to simulate: who, what kind, timing, and fate.
#[derive(Debug, Clone)]
pub struct OpSpec {
    pub process: u64,
    /// 0: read, 1: write, 2: compare-and-set (register); 0: get, else add (counter).
    pub kind: u8,
    /// Pause before the invocation (µs).
    pub gap: u64,
    /// Duration (µs, at least 1).
    pub duration: u64,
    /// Where in its interval (per mille) the effect happens.
    pub lin: u64,
    /// 0..100: below `unknown_percent` the outcome is unknown.
    pub fate: u8,
    /// A compare-and-set expects the current version plus this (-1, 0, 1).
    pub skew: i8,
    /// The key (modulo the number of keys).
    pub key: u8,
}

impl OpSpec {
    pub fn random(rng: &mut Rng, processes: u64) -> OpSpec {
        OpSpec {
            process: rng.below(processes),
            kind: rng.below(3) as u8,
            gap: rng.below(50),
            duration: 1 + rng.below(200),
            lin: rng.below(1001),
            fate: rng.below(100) as u8,
            skew: [0i8, 0, 0, -1, 1][rng.below(5) as usize],
            key: rng.below(256) as u8,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SimOptions {
    /// Operations never overlap (one global timeline).
    pub sequential: bool,
    /// Outcomes below this fate are unknown.
    pub unknown_percent: u8,
    /// How many keys.
    pub keys: u8,
}

struct Laid {
    invoke: u64,
    complete: u64,
    /// When its effect happens, if it happens.
    effect: Option<u64>,
    unknown: bool,
    recorded_complete: bool,
}

fn lay_out(specs: &[OpSpec], options: SimOptions) -> Vec<Laid> {
    let mut clocks: BTreeMap<u64, u64> = BTreeMap::new();
    let mut global = 0u64;
    specs
        .iter()
        .map(|s| {
            let clock = if options.sequential {
                &mut global
            } else {
                clocks.entry(s.process).or_insert(0)
            };
            let invoke = *clock + s.gap;
            let duration = s.duration.max(1);
            let complete = invoke + duration;
            *clock = complete;
            let unknown = s.fate < options.unknown_percent;
            let effect = if !unknown {
                Some(invoke + s.lin.min(1000) * duration / 1000)
            } else if s.fate % 2 == 0 {
                // It took effect, possibly long after the client gave up.
                Some(invoke + s.lin.min(1000) * 3 * duration / 1000)
            } else {
                None
            };
            Laid {
                invoke,
                complete,
                effect,
                unknown,
                recorded_complete: !unknown || s.fate % 3 != 0,
            }
        })
        .collect()
}

/// Simulates an atomic register per key (ZooKeeper node data with versions).
pub fn simulate_register(specs: &[OpSpec], options: SimOptions) -> KeyedRegHistory {
    let laid = lay_out(specs, options);
    let keys = u64::from(options.keys.max(1));
    let key_of = |s: &OpSpec| format!("k{}", u64::from(s.key) % keys);
    // Effects in time order (ties by id).
    let mut order: Vec<usize> = (0..specs.len())
        .filter(|&i| laid[i].effect.is_some())
        .collect();
    order.sort_by_key(|&i| (laid[i].effect, i));
    let mut state: BTreeMap<String, (i64, i32)> = BTreeMap::new();
    let mut inputs: Vec<Option<RegisterOp<i64>>> = vec![None; specs.len()];
    let mut outcomes: Vec<Outcome<RegisterRet<i64>>> = vec![Outcome::Unknown; specs.len()];
    for &i in &order {
        let s = &specs[i];
        let (value, version) = state.entry(key_of(s)).or_insert((0, 0));
        let unique = i as i64 + 1;
        let (input, outcome) = match s.kind % 3 {
            0 => (RegisterOp::Read, read(*value, *version)),
            1 => {
                *value = unique;
                *version += 1;
                (RegisterOp::Write(unique), written(*version))
            }
            _ => {
                let expected = *version + i32::from(s.skew);
                let input = RegisterOp::Cas {
                    expected_version: expected,
                    value: unique,
                };
                if expected == *version {
                    *value = unique;
                    *version += 1;
                    (input, written(*version))
                } else {
                    (input, Outcome::Fail)
                }
            }
        };
        inputs[i] = Some(input);
        outcomes[i] = if laid[i].unknown {
            Outcome::Unknown
        } else {
            outcome
        };
    }
    let mut history = History::new();
    for (i, s) in specs.iter().enumerate() {
        let input = inputs[i].clone().unwrap_or(match s.kind % 3 {
            0 => RegisterOp::Read,
            1 => RegisterOp::Write(i as i64 + 1),
            _ => RegisterOp::Cas {
                expected_version: 0,
                value: i as i64 + 1,
            },
        });
        history.ops.push(Operation {
            id: i as u64,
            process: s.process,
            invoke: Duration::from_micros(laid[i].invoke),
            complete: laid[i]
                .recorded_complete
                .then(|| Duration::from_micros(laid[i].complete)),
            op: KeyedOp {
                key: key_of(s),
                op: input,
            },
            outcome: outcomes[i].clone(),
        });
    }
    history
}

/// The same history without keys (meaningful with one key).
pub fn unkeyed(history: &KeyedRegHistory) -> RegHistory {
    let mut out = History::new();
    for op in &history.ops {
        out.ops.push(Operation {
            id: op.id,
            process: op.process,
            invoke: op.invoke,
            complete: op.complete,
            op: op.op.op.clone(),
            outcome: op.outcome.clone(),
        });
    }
    out
}

/// Simulates an atomic counter: adds of 1 to 5, gets; some adds fail (no effect).
pub fn simulate_counter(specs: &[OpSpec], options: SimOptions) -> CounterHistory {
    let laid = lay_out(specs, options);
    let mut order: Vec<usize> = (0..specs.len())
        .filter(|&i| laid[i].effect.is_some())
        .collect();
    order.sort_by_key(|&i| (laid[i].effect, i));
    let input_of = |s: &OpSpec| {
        if s.kind.is_multiple_of(3) {
            CounterOp::Get
        } else {
            CounterOp::Add(1 + i64::from(s.key % 5))
        }
    };
    let mut value = 0i64;
    let mut outcomes: Vec<Outcome<i64>> = vec![Outcome::Unknown; specs.len()];
    for &i in &order {
        let s = &specs[i];
        let outcome = match input_of(s) {
            CounterOp::Get => Outcome::Ok(value),
            // Out of retries: no effect.
            CounterOp::Add(_) if s.fate >= 95 => Outcome::Fail,
            CounterOp::Add(delta) => {
                value += delta;
                Outcome::Ok(value)
            }
        };
        outcomes[i] = if laid[i].unknown {
            Outcome::Unknown
        } else {
            outcome
        };
    }
    let mut history = History::new();
    for (i, s) in specs.iter().enumerate() {
        history.ops.push(Operation {
            id: i as u64,
            process: s.process,
            invoke: Duration::from_micros(laid[i].invoke),
            complete: laid[i]
                .recorded_complete
                .then(|| Duration::from_micros(laid[i].complete)),
            op: input_of(s),
            outcome: outcomes[i].clone(),
        });
    }
    history
}

/// Random specs: `n` operations of `processes` processes.
pub fn random_specs(seed: u64, n: usize, processes: u64) -> Vec<OpSpec> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| OpSpec::random(&mut rng, processes))
        .collect()
}
