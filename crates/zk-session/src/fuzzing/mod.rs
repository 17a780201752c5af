//! The check behind the `session_script` fuzz target: arbitrary interleavings of calls,
//! server frames, clock advances and connection events, played against a [`Session`] on a
//! virtual clock, with the session's promises checked after every step.
//!
//! **This module is for fuzzing and tests, not a stable API.** [`session_script`] takes
//! arbitrary bytes and **panics when it finds a bug, by design** (like `jute::fuzzing`): the
//! fuzz target `fuzz/fuzz_targets/session_script.rs` is a one-liner over it, and zk-proto's
//! `tests/fuzz_corpus.rs` replays the checked-in corpus `fuzz/corpus/session_script/` through
//! it in the normal test suite.
//!
//! # The script
//!
//! Three configuration bytes, then actions, each an action byte (taken modulo
//! [`ACTION_COUNT`]) followed by its arguments; an input that ends early reads zeros.
//!
//! - Byte 0: the session timeout (bits 0-1: 30 s, 10 s, 3 s, 400 ms), read-only allowed
//!   (bit 2), fail-fast (3), shuffled hosts (4), chroot `/app` (5), a 512-byte frame limit (6),
//!   a 16-byte SetWatches cap (7).
//! - Byte 1: 1 to 3 hosts (value mod 3), max in flight (bits 2-3: 1, 2, 3, 1024), connect
//!   timeout (bits 4-5: none, 5 s, 30 s, 2 min), a 100 ms close timeout (bit 6, else 2 s), no
//!   reconnect backoff (bit 7).
//! - Byte 2: the seed of the session's random numbers (host shuffle, backoff jitter); its
//!   bits 0-2 also renew expired sessions, run the quorum check, and turn off the gathering
//!   of replies.
//!
//! The actions (constants `SUBMIT` ... `PROBE` in this module) are the session's
//! inputs: submit a request (template, flags: watch, path, deadline; an extra byte), add_auth,
//! close, forget_watch, poll_connect, handle_connected (the ConnectRequest is taken at once,
//! as a driver would write it before any answer can come), handle_connect_failed,
//! poll_transmit (a few frames), server frames (a ConnectResponse; a reply to the oldest
//! request in flight, successful or with an error code; a ping reply; an auth reply; a watch
//! notification; malformed frames of several kinds), clock advances (firing every timer due, as
//! `poll_timeout` asks), handle_disconnected, reconnect_to, handle_oversized_frame, a
//! `handle_timeout` when nothing is due, and the read-only search's probes (`poll_probe`, an
//! outcome by `handle_probe_done`: a probe only while read-only, never to the current host, a
//! read/write answer moving the session). The script knows what it answers: it decodes every
//! frame the session transmits, and mirrors which request each reply reaches.
//!
//! At the end the script closes the session and advances the clock past every timer.
//!
//! # What it checks
//!
//! - **No panic** inside the session.
//! - **Every request is resolved exactly once.** Each id from `submit`, `add_auth` and
//!   `close` gets exactly one [`SessionEvent::Reply`]; no reply names an id never handed out;
//!   by the end (closed, clock past every timer) every id is resolved.
//! - **No reply reaches the wrong caller.** A successful reply goes only to the request whose
//!   reply frame the script delivered in that step, and its response type fits the request's
//!   op; a well-formed reply gives exactly the expected result (response or error, watch
//!   armed or not). Other errors are the ones the situation allows: ConnectionLoss only for a
//!   request in flight on a lost connection, RequestTimeout only past the request's deadline,
//!   and the terminal errors only once the state says so.
//! - **Xids.** Normal xids are positive, strictly increasing within a connection and never
//!   reused; the only negative ones are ping (-2) and auth (-4), with their op codes. Every
//!   frame is well formed, within the frame limit, and in order: the ConnectRequest first (with
//!   the session id, password and last zxid the script expects), then auth and SetWatches
//!   (naming exactly the live watches), then the callers' requests in call order, at most
//!   `max_in_flight` of them in flight.
//! - **No unbounded growth.** `in_flight`, `queued` and `watch_count` always equal what the
//!   script knows is in flight, queued and watched; after the session ends they are 0, and
//!   it asks for no timer, connection or transmission. The read low-water mark
//!   ([`Session::read_low_water`]) is 1, or no more than 20 bytes for each reply owed beyond
//!   the first.
//! - **State transitions** are allowed ones (`Connecting → Connected | ConnectedReadOnly`,
//!   `Connected* → Disconnected → Connected*`, any → a terminal state); terminal states are
//!   final, and [`Session::state`] agrees with the events.
//! - **Watches.** Watch events reach only ids whose request armed a watch, exactly those the
//!   notification (or the removeWatches reply) concerns, with the chroot stripped; a one-shot
//!   watch fires once; a removal or a WatchLost is final; a forgotten watch is silent; by the
//!   end every watch fired once, was removed, forgotten or reported lost.
//! - **Connection handling.** A protocol violation drops the connection
//!   ([`SessionEvent::DropConnection`]), and nothing else does unless the session ends; a
//!   ConnectResponse is accepted or refused (expired) exactly as the script predicts; every
//!   `poll_timeout` deadline, once handled, moves on (no timer livelock), and every request
//!   deadline that passed has fired.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use jute::codes::xid as reserved;
use jute::{
    Acl, AddWatchMode, AuthPacket, ClientInfo, ConnectRequest, ConnectResponse, Create2Response,
    CreateMode, Decode, Encode, ErrorCode, ErrorResponse, EventType, ExistsResponse,
    GetAclResponse, GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse,
    GetDataResponse, GetEphemeralsResponse, Id, KeeperState, MultiResponse, MultiResult, OpCode,
    Perms, ReconfigRequest, ReplyHeader, RequestHeader, Response, ServerMessage, SetAclResponse,
    SetDataResponse, SetWatches, SetWatches2, Stat, SyncResponse, WatcherEvent, WatcherType,
    WhoAmIResponse, decode_exact,
};

use crate::connect_string::HostAddr;
use crate::error::{ConnectFailure, Error, ProtocolError};
use crate::path::Chroot;
use crate::session::{
    MultiOperation, Op, ProbeId, ProbeOutcome, RequestId, Session, SessionConfig, SessionEvent,
    SessionState, WatchKind, WatchedEvent,
};

/// Plays the script `data` (see the [module](self) for the format) against a [`Session`] and
/// checks the session's invariants after every step.
///
/// # Panics
///
/// When the session panics or breaks one of the invariants listed in the [module](self) docs.
pub fn session_script(data: &[u8]) {
    run_script(data);
}

/// The number of distinct actions; an action byte is taken modulo this.
pub const ACTION_COUNT: u8 = 21;

/// Submit a request. Arguments: the template (modulo 20: getData, exists, getChildren,
/// getChildren2, create, delete, setData, getACL, setACL, sync, getAllChildrenNumber,
/// getEphemerals, multi, multiRead, addWatch, removeWatches, checkWatches, reconfig, whoAmI,
/// an invalid request), flags (bit 0: watch; bits 1-2: the path `/`, `/a`, `/a/b`, `/b`; bit 3:
/// a deadline, bits 4-6: how far), an extra byte (create mode, data size, watcher type).
pub const SUBMIT: u8 = 0;
/// `add_auth`. Argument: the credentials.
pub const ADD_AUTH: u8 = 1;
/// `close`.
pub const CLOSE: u8 = 2;
/// `forget_watch`. Argument: which live watch (or, with none, an arbitrary id).
pub const FORGET_WATCH: u8 = 3;
/// `poll_connect`.
pub const DIAL: u8 = 4;
/// `handle_connected`, then the ConnectRequest is transmitted.
pub const CONNECTED: u8 = 5;
/// `handle_connect_failed`. Argument: the failure.
pub const CONNECT_FAILED: u8 = 6;
/// `poll_transmit` (or `poll_transmit_into`, bit 7). Argument: 1 + (bits 0-3) frames at most.
pub const TRANSMIT: u8 = 7;
/// A ConnectResponse. Arguments: timeout (bits 0-2) and read-only flag (bits 3-4); session id.
pub const CONNECT_RESPONSE: u8 = 8;
/// A successful reply to the oldest request in flight. Argument: the zxid step.
pub const REPLY: u8 = 9;
/// An error reply to the oldest request in flight. Argument: the error code.
pub const ERROR_REPLY: u8 = 10;
/// A ping reply.
pub const PING_REPLY: u8 = 11;
/// An auth reply, when an auth packet was sent. Argument: OK, AuthFailed or another code.
pub const AUTH_REPLY: u8 = 12;
/// A watch notification. Argument: event type (bits 0-2) and path (bits 3-4).
pub const NOTIFY: u8 = 13;
/// A malformed frame. Argument: its kind (modulo 10: random bytes; a truncated reply to the
/// oldest request; a wrong xid; a reply to the second request (out of order); trailing bytes;
/// a random body; a random notification; a ping or auth reply cut short or too long; a
/// ConnectResponse out of place; another op's reply body), then the kind's own bytes.
pub const MALFORMED: u8 = 14;
/// Advance the clock, firing every timer due. Argument: how far (see [`ADVANCES_MS`]).
pub const ADVANCE: u8 = 15;
/// `handle_disconnected`. Argument: the cause.
pub const DISCONNECT: u8 = 16;
/// `reconnect_to`. Argument: the host index (modulo the number of hosts).
pub const RECONNECT_TO: u8 = 17;
/// `handle_oversized_frame`. Argument: which xid it carries.
pub const OVERSIZED: u8 = 18;
/// `handle_timeout` at the current time, whatever `poll_timeout` says.
pub const SPURIOUS_TIMEOUT: u8 = 19;
/// `poll_probe` (the search for a read/write server), then the outcome of the probe out, if
/// any, by `handle_probe_done`. Argument: the outcome (modulo 4: read/write, not read/write,
/// failed, none yet: the probe stays out).
pub const PROBE: u8 = 20;

/// The clock advances of [`ADVANCE`], ms, by argument (modulo the length).
pub const ADVANCES_MS: [u64; 16] = [
    0, 1, 10, 100, 500, 1_000, 2_000, 3_000, 5_000, 7_000, 10_000, 15_000, 20_000, 30_000, 60_000,
    600_000,
];

/// The request deadlines of [`SUBMIT`], ms after now, by flag bits 4-6.
const DEADLINES_MS: [u64; 8] = [0, 1, 50, 1_000, 5_000, 20_000, 60_000, 600_000];

/// The paths requests and notifications use (client paths).
const PATHS: [&str; 4] = ["/", "/a", "/a/b", "/b"];

/// The frame limit of the small-frame configuration.
const SMALL_FRAME_LEN: usize = 512;

/// Scripts are cut after this many actions (each action is cheap; this bounds a run).
const MAX_ACTIONS: usize = 4096;

/// Timer firings one clock advance may take before the timers are declared stuck.
const MAX_FIRINGS: usize = 10_000;

/// What a script did, for the tests to check that it exercised what it meant to.
#[derive(Debug, Default, Clone)]
struct Report {
    submitted: usize,
    ok_replies: usize,
    error_replies: usize,
    watch_events: usize,
    watches_lost: usize,
    frames_sent: usize,
    drops: usize,
    states: Vec<SessionState>,
    errors: Vec<Error>,
    /// Expired sessions renewed.
    renewals: usize,
}

fn run_script(data: &[u8]) -> Report {
    let mut input = Input { rest: data };
    let mut harness = Harness::new(&mut input);
    let mut actions = 0;
    while let Some(action) = input.next() {
        if actions == MAX_ACTIONS {
            break;
        }
        actions += 1;
        harness.act(action % ACTION_COUNT, &mut input);
    }
    harness.finish()
}

/// The script's bytes, read front to back; missing arguments read as zero.
struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    fn next(&mut self) -> Option<u8> {
        let (&first, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(first)
    }

    fn arg(&mut self) -> u8 {
        self.next().unwrap_or(0)
    }

    fn take(&mut self, len: usize) -> &'a [u8] {
        let (taken, rest) = self.rest.split_at(len.min(self.rest.len()));
        self.rest = rest;
        taken
    }
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn read_config(input: &mut Input<'_>) -> SessionConfig {
    let (a, b, seed) = (input.arg(), input.arg(), input.arg());
    SessionConfig {
        session_timeout: ms([30_000, 10_000, 3_000, 400][usize::from(a & 3)]),
        read_only: a & 4 != 0,
        fail_fast: a & 8 != 0,
        shuffle_hosts: a & 16 != 0,
        chroot: if a & 32 != 0 {
            Chroot::new("/app").unwrap_or_default()
        } else {
            Chroot::none()
        },
        max_frame_len: if a & 64 != 0 {
            SMALL_FRAME_LEN
        } else {
            SessionConfig::default().max_frame_len
        },
        set_watches_max_bytes: if a & 128 != 0 { 16 } else { 128 * 1024 },
        hosts: (0..1 + b % 3)
            .map(|i| HostAddr::new(format!("zk{i}"), 2181))
            .collect(),
        max_in_flight: [1, 2, 3, 1024][usize::from((b >> 2) & 3)],
        connect_timeout: [None, Some(ms(5_000)), Some(ms(30_000)), Some(ms(120_000))]
            [usize::from((b >> 4) & 3)],
        close_timeout: if b & 64 != 0 { ms(100) } else { ms(2_000) },
        // The SASL exchange is not in the fuzzed model yet (session/tests.rs scripts it).
        sasl: None,
        resume: None,
        // The session renews an expired session itself once the expiry's events were handed
        // out; the harness checks that step on its own.
        renew_expired: seed & 1 != 0,
        // The session's own syncs then run among the fuzzed traffic.
        quorum_check: seed & 2 != 0,
        // Replies gathered under a deep pipeline, for 1 ms or not at all.
        read_gather_limit: if seed & 4 != 0 { Duration::ZERO } else { ms(1) },
        backoff: if b & 128 != 0 {
            (Duration::ZERO, Duration::ZERO)
        } else {
            SessionConfig::default().backoff
        },
        rng_seed: Some(u64::from(seed)),
    }
}

mod checker;
mod harness;
mod requests;
mod server;
#[cfg(test)]
mod tests;
mod transmit;

use checker::*;
use harness::*;
use requests::*;
