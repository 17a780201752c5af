//! What one request costs on its way to the socket and back: heap allocations and bytes
//! allocated per request, counted by a counting global allocator, for a `getData`, a `create`
//! and pipelined `getData`s; and the client's CPU time per pipelined `getData`.
//!
//! Two measurements:
//!
//! - **the session alone** (`Session`, sans I/O): `submit`, `poll_transmit_into` into a
//!   reused write buffer, the reply frame given to `handle_frame`, the reply taken from
//!   `poll_event`. Only the session's calls are counted, not the scripted server's work.
//! - **the whole client** against a local ZooKeeper the test kit starts: `Client::get_data`,
//!   `Client::create` one at a time and 64 `get_data`s at once; every allocation of the
//!   process is counted (the client's tasks and the runtime), the server is another process.
//!
//! ```sh
//! cargo bench -p zk-proto --bench request_path
//! ```
//!
//! Prints a table and one JSON line. Figures vary between machines: compare runs made one
//! after the other (docs/benchmarks.md).

use std::alloc::System;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use jute::{ConnectResponse, Encode, GetDataResponse, ReplyHeader, Stat};
use rustix::time::{ClockId, clock_gettime};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use zk_proto::session::{Op, Session, SessionConfig, SessionEvent};
use zk_proto::{Client, CreateOptions};

/// Counts every allocation and reallocation, and the bytes asked for, in every thread.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations (reallocations included) and bytes allocated so far.
fn counted() -> (u64, u64) {
    let stats = GLOBAL.stats();
    (
        (stats.allocations + stats.reallocations) as u64,
        (stats.bytes_allocated + stats.bytes_reallocated.max(0) as usize) as u64,
    )
}

/// Sums what the measured calls allocate, leaving out the harness between them.
#[derive(Default)]
struct Tally {
    allocs: u64,
    bytes: u64,
}

impl Tally {
    fn measure<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let (a, b) = counted();
        let out = f();
        let (a2, b2) = counted();
        self.allocs += a2 - a;
        self.bytes += b2 - b;
        out
    }
}

/// One row of the report.
struct Row {
    name: &'static str,
    ops: u64,
    allocs: u64,
    bytes: u64,
    cpu: Option<Duration>,
}

impl Row {
    fn per_op(&self) -> (f64, f64) {
        let ops = self.ops.max(1) as f64;
        (self.allocs as f64 / ops, self.bytes as f64 / ops)
    }
}

const SESSION_OPS: u64 = 20_000;
const CLIENT_OPS: u64 = 5_000;
const PIPELINE: usize = 64;

fn main() {
    let mut rows = vec![session_get(false), session_create(), session_get(true)];
    match zk_testkit::ZkServer::start() {
        Ok(server) => rows.extend(whole_client(&server.connect_string())),
        Err(e) => {
            eprintln!("request_path: no local server ({e}); the whole-client rows are skipped")
        }
    }
    println!(
        "{:<32} {:>8} {:>12} {:>14} {:>16}",
        "request path", "ops", "allocs/op", "bytes/op", "CPU µs/op"
    );
    let mut json = serde_json::Map::new();
    for row in &rows {
        let (allocs, bytes) = row.per_op();
        let cpu = row
            .cpu
            .map(|cpu| cpu.as_secs_f64() * 1e6 / row.ops.max(1) as f64);
        println!(
            "{:<32} {:>8} {:>12.2} {:>14.1} {:>16}",
            row.name,
            row.ops,
            allocs,
            bytes,
            cpu.map_or("-".to_owned(), |c| format!("{c:.2}"))
        );
        json.insert(
            row.name.to_owned(),
            serde_json::json!({
                "ops": row.ops,
                "allocs_per_op": allocs,
                "bytes_per_op": bytes,
                "cpu_us_per_op": cpu,
            }),
        );
    }
    println!("{}", serde_json::Value::Object(json));
}

/// A session past its handshake, with nothing left to send.
fn connected_session(now: Instant) -> (Session, BytesMut) {
    let config = SessionConfig {
        hosts: vec!["127.0.0.1:2181".parse().expect("a valid host")],
        shuffle_hosts: false,
        rng_seed: Some(1),
        max_in_flight: 4096,
        ..SessionConfig::default()
    };
    let mut session = Session::new(config);
    let _ = session.poll_connect(now);
    session.handle_connected(now);
    let mut out = BytesMut::with_capacity(64 * 1024);
    while session.poll_transmit_into(now, &mut out) {}
    out.clear();
    let response = ConnectResponse {
        protocol_version: 0,
        time_out: 30_000,
        session_id: 1,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: None,
    };
    session.handle_frame(now, response.to_bytes());
    while session.poll_event().is_some() {}
    while session.poll_transmit_into(now, &mut out) {}
    out.clear();
    (session, out)
}

/// The xids of the frames in `out` (each with its length prefix), in order.
fn sent_xids(out: &[u8]) -> Vec<i32> {
    let mut xids = Vec::new();
    let mut at = 0;
    while at + 8 <= out.len() {
        let len = u32::from_be_bytes([out[at], out[at + 1], out[at + 2], out[at + 3]]) as usize;
        xids.push(i32::from_be_bytes([
            out[at + 4],
            out[at + 5],
            out[at + 6],
            out[at + 7],
        ]));
        at += 4 + len;
    }
    xids
}

/// A reply frame (without its length prefix) for `xid` with `body`.
fn reply(xid: i32, zxid: i64, body: &impl Encode) -> Bytes {
    let header = ReplyHeader {
        xid,
        zxid,
        err: jute::ErrorCode(0),
    };
    let mut frame = BytesMut::with_capacity(header.encoded_len() + body.encoded_len());
    header.encode(&mut frame);
    body.encode(&mut frame);
    frame.freeze()
}

fn take_replies(session: &mut Session, expected: usize) {
    let mut replies = 0;
    while let Some(event) = session.poll_event() {
        if matches!(event, SessionEvent::Reply { result: Ok(_), .. }) {
            replies += 1;
        }
    }
    assert_eq!(replies, expected, "every request answered");
}

/// `getData` through the session, one at a time or `PIPELINE` at once.
fn session_get(pipelined: bool) -> Row {
    let now = Instant::now();
    let (mut session, mut out) = connected_session(now);
    let body = GetDataResponse {
        data: Some(Bytes::from_static(b"value")),
        stat: Stat::default(),
    };
    let batch = if pipelined { PIPELINE } else { 1 };
    let mut tally = Tally::default();
    let mut done = 0;
    while done < SESSION_OPS {
        for _ in 0..batch {
            tally
                .measure(|| {
                    session.submit(
                        Op::GetData {
                            path: "/bench/node".to_owned(),
                            watch: false,
                        },
                        None,
                    )
                })
                .expect("a valid request");
        }
        while tally.measure(|| session.poll_transmit_into(now, &mut out)) {}
        let frames: Vec<Bytes> = sent_xids(&out)
            .into_iter()
            .map(|xid| reply(xid, 1, &body))
            .collect();
        out.clear();
        for frame in frames {
            tally.measure(|| session.handle_frame(now, frame));
        }
        tally.measure(|| take_replies(&mut session, batch));
        done += batch as u64;
    }
    Row {
        name: if pipelined {
            "session: pipelined getData"
        } else {
            "session: getData"
        },
        ops: done,
        allocs: tally.allocs,
        bytes: tally.bytes,
        cpu: None,
    }
}

/// `create` through the session, one at a time.
fn session_create() -> Row {
    let now = Instant::now();
    let (mut session, mut out) = connected_session(now);
    let mut tally = Tally::default();
    for _ in 0..SESSION_OPS {
        tally
            .measure(|| {
                session.submit(
                    Op::Create {
                        path: "/bench/node".to_owned(),
                        data: Bytes::from_static(b"value"),
                        acl: zk_proto::acl::open_acl_unsafe(),
                        mode: jute::CreateMode::PERSISTENT,
                        ttl: None,
                    },
                    None,
                )
            })
            .expect("a valid request");
        while tally.measure(|| session.poll_transmit_into(now, &mut out)) {}
        let xids = sent_xids(&out);
        out.clear();
        let created = jute::Create2Response {
            path: Some("/bench/node".to_owned()),
            stat: Stat::default(),
        };
        for xid in xids {
            let frame = reply(xid, 1, &created);
            tally.measure(|| session.handle_frame(now, frame));
        }
        tally.measure(|| take_replies(&mut session, 1));
    }
    Row {
        name: "session: create",
        ops: SESSION_OPS,
        allocs: tally.allocs,
        bytes: tally.bytes,
        cpu: None,
    }
}

/// The process's CPU time (user and system, every thread), as the lock-latency benchmark
/// reads it.
fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The whole client against a real server.
fn whole_client(connect: &str) -> Vec<Row> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = Client::builder()
            .connect(connect)
            .await
            .expect("connected to the local server");
        client
            .create("/bench", "", &CreateOptions::persistent())
            .await
            .expect("created /bench");
        let mut rows = Vec::new();
        // One at a time: every allocation of the process, per request.
        let (a, b) = counted();
        for i in 0..CLIENT_OPS {
            client
                .create(
                    &format!("/bench/n{i}"),
                    "value",
                    &CreateOptions::persistent(),
                )
                .await
                .expect("created");
        }
        let (a2, b2) = counted();
        // The path's `format!` is the caller's: one allocation of the name's length.
        rows.push(Row {
            name: "client: create",
            ops: CLIENT_OPS,
            allocs: a2 - a - CLIENT_OPS,
            bytes: b2 - b,
            cpu: None,
        });
        let (a, b) = counted();
        for _ in 0..CLIENT_OPS {
            client.get_data("/bench/n0").await.expect("read");
        }
        let (a2, b2) = counted();
        rows.push(Row {
            name: "client: getData",
            ops: CLIENT_OPS,
            allocs: a2 - a,
            bytes: b2 - b,
            cpu: None,
        });
        let rounds = (CLIENT_OPS * 4) / PIPELINE as u64;
        let cpu_before = process_cpu();
        let (a, b) = counted();
        for _ in 0..rounds {
            let reads = (0..PIPELINE).map(|_| client.get_data("/bench/n0"));
            for result in futures_util::future::join_all(reads).await {
                result.expect("read");
            }
        }
        let (a2, b2) = counted();
        let cpu = Some(process_cpu().saturating_sub(cpu_before));
        rows.push(Row {
            name: "client: pipelined getData",
            ops: rounds * PIPELINE as u64,
            allocs: a2 - a,
            bytes: b2 - b,
            cpu,
        });
        rows
    })
}
