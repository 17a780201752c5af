//! Shared helpers of the benchmark binaries.
//!
//! # The codec benchmark (`src/bin/codec.rs`)
//!
//! Encode and decode throughput of four representative messages, measured for our `jute` codec
//! and, in the same run, for the reference Java serializer (`org.apache.jute.BinaryInputArchive`
//! / `BinaryOutputArchive` with the `org.apache.zookeeper.proto` classes of ZooKeeper 3.8) on the
//! very same bytes:
//!
//! 1. [`run`] builds the messages ([`CaseId`], `build_*`) and encodes them; each encoding is a
//!    frame body (header then record, no length prefix), checked to decode back to the message.
//! 2. Unless [`Options::no_java`], it writes the frames to a temporary directory, compiles
//!    `benches/java/CodecBench.java` (cached under the Cargo target directory by a hash of the
//!    source and classpath) and runs it. The Java program builds the same messages with the
//!    reference classes, fails with exit status 3 unless its encoding is byte-identical to ours
//!    and decoding ours gives back its own records, then times decode and encode after a JIT
//!    warm-up.
//! 3. It times our decode (the client's real path: [`jute::ServerMessage::decode`] of a `Bytes`
//!    frame; header then [`jute::decode_exact`] body for the create request) and encode
//!    ([`jute::Encode::to_bytes`] of header and record) with a warm-up and several rounds.
//! 4. The [`Report`] holds the median ns/op of both sides and the ratio ours / reference
//!    (below 1: we are faster), rendered as a table ([`Report::to_table`]) or one JSON document
//!    ([`Report::to_json`]).
//!
//! See `docs/benchmarks.md` for how to run it and how to read the figures.

use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::hint::black_box;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use jute::{
    Acl, CreateMode, CreateRequest, DecodeError, Encode, ErrorCode, EventType,
    GetChildren2Response, GetDataResponse, Id, KeeperState, OpCode, Perms, Reader, ReplyHeader,
    RequestHeader, Response, ServerMessage, Stat, WatcherEvent, decode_exact,
};
use jute::{Decode, codes::xid};

pub mod latency;

/// What to tell someone whose Java or ZooKeeper jars are missing.
pub const INSTALL_HINT: &str = "run scripts/install-deps.sh (Debian: apt-get install -y \
     default-jre-headless default-jdk-headless zookeeper), point ZK_CLASSPATH at the ZooKeeper \
     jars, or pass --no-java to time only our codec";

/// Environment variable: the `java` binary (else `$JAVA_HOME/bin/java`, else `java` on `PATH`).
pub const ENV_JAVA: &str = "ZK_JAVA";
/// Environment variable: a complete classpath with the ZooKeeper jars, instead of Debian's.
pub const ENV_CLASSPATH: &str = "ZK_CLASSPATH";
/// Where Debian's `zookeeper` package installs the jars.
pub const DEBIAN_JAR_DIR: &str = "/usr/share/java";

/// The reference program, compiled at run time.
const JAVA_SOURCE: &str = include_str!("../java/CodecBench.java");
/// Its main class.
const JAVA_MAIN: &str = "CodecBench";
/// The exit status with which the Java program reports a failed cross-check.
const JAVA_CROSS_CHECK_FAILED: i32 = 3;

/// The command-line help of the `codec` binary.
pub const USAGE: &str = "\
usage: cargo run --release -p zk-benches --bin codec -- [--json] [--quick] [--no-java]

Encode and decode throughput of the jute codec against the reference Java serializer
(ZooKeeper 3.8 zookeeper-jute.jar) on the same bytes, with the ratio ours/reference
(below 1: we are faster).

  --json     print one JSON document on stdout instead of the table
  --quick    a short run (a few seconds; smoke tests, not for quoting figures)
  --no-java  skip the reference (no cross-check, no ratios)
  -h, --help print this help

Environment: ZK_JAVA (java binary), ZK_CLASSPATH (ZooKeeper jars, default /usr/share/java).";

// ---------------------------------------------------------------------------------------------
// Options and settings
// ---------------------------------------------------------------------------------------------

/// Command-line options of the codec benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Print JSON instead of a table.
    pub json: bool,
    /// A short run.
    pub quick: bool,
    /// Do not run the reference.
    pub no_java: bool,
}

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// Run the benchmark.
    Run(Options),
    /// Print [`USAGE`].
    Help,
}

impl Options {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    ///
    /// A message naming the first unknown argument.
    pub fn parse<I, S>(args: I) -> Result<Cli, String>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut options = Options::default();
        for arg in args {
            let arg = arg.into();
            match arg.to_str() {
                Some("--json") => options.json = true,
                Some("--quick") => options.quick = true,
                Some("--no-java") => options.no_java = true,
                Some("-h" | "--help") => return Ok(Cli::Help),
                _ => return Err(format!("unknown argument {}", arg.to_string_lossy())),
            }
        }
        Ok(Cli::Run(options))
    }
}

/// How long each side measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Warm-up of our codec before each measurement.
    pub warmup: Duration,
    /// Warm-up of the reference before each measurement (lets the JIT compile the loops).
    pub java_warmup: Duration,
    /// Timed rounds per measurement; the median is reported.
    pub rounds: usize,
    /// The approximate length of one round.
    pub round: Duration,
}

impl Settings {
    /// The default run: about 40 seconds in all.
    pub const FULL: Settings = Settings {
        warmup: Duration::from_millis(300),
        java_warmup: Duration::from_millis(1000),
        rounds: 15,
        round: Duration::from_millis(100),
    };

    /// `--quick`: a few seconds, for smoke tests.
    pub const QUICK: Settings = Settings {
        warmup: Duration::from_millis(30),
        java_warmup: Duration::from_millis(150),
        rounds: 5,
        round: Duration::from_millis(10),
    };

    /// The settings for `options`.
    pub fn for_options(options: &Options) -> Settings {
        if options.quick {
            Settings::QUICK
        } else {
            Settings::FULL
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The messages
// ---------------------------------------------------------------------------------------------

/// The measured messages. Each one is built identically by `benches/java/CodecBench.java`; the
/// Java cross-check fails when the two drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaseId {
    /// A getData reply with 1 KiB of data: `ReplyHeader` + `GetDataResponse`.
    GetDataReply,
    /// A getChildren2 reply with 1,000 children: `ReplyHeader` + `GetChildren2Response`.
    GetChildren2Reply,
    /// A create request with a two-entry ACL: `RequestHeader` + `CreateRequest`.
    CreateRequest,
    /// A watch notification: `ReplyHeader` (xid -1) + `WatcherEvent`.
    WatcherEvent,
}

impl CaseId {
    /// Every case, in report order.
    pub const ALL: [CaseId; 4] = [
        CaseId::GetDataReply,
        CaseId::GetChildren2Reply,
        CaseId::CreateRequest,
        CaseId::WatcherEvent,
    ];

    /// The identifier shared with the Java program and used in the JSON.
    pub const fn id(self) -> &'static str {
        match self {
            CaseId::GetDataReply => "get_data_reply",
            CaseId::GetChildren2Reply => "get_children2_reply",
            CaseId::CreateRequest => "create_request",
            CaseId::WatcherEvent => "watcher_event",
        }
    }

    /// A short human description.
    pub const fn label(self) -> &'static str {
        match self {
            CaseId::GetDataReply => "getData reply, 1 KiB data",
            CaseId::GetChildren2Reply => "getChildren2 reply, 1000 children",
            CaseId::CreateRequest => "create request, 2 ACL entries",
            CaseId::WatcherEvent => "watcher event notification",
        }
    }

    /// The case named `id`.
    pub fn from_id(id: &str) -> Option<CaseId> {
        CaseId::ALL.into_iter().find(|case| case.id() == id)
    }

    /// The encoded frame body (header then record) of this case.
    pub fn frame(self) -> Bytes {
        match self {
            CaseId::GetDataReply => build_get_data_reply().to_bytes(),
            CaseId::GetChildren2Reply => build_get_children2_reply().to_bytes(),
            CaseId::CreateRequest => build_create_request().to_bytes(),
            CaseId::WatcherEvent => build_watcher_event().to_bytes(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn stat(
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    data_length: i32,
    num_children: i32,
    pzxid: i64,
) -> Stat {
    Stat {
        czxid,
        mzxid,
        ctime,
        mtime,
        version,
        cversion,
        aversion: 0,
        ephemeral_owner: 0,
        data_length,
        num_children,
        pzxid,
    }
}

/// The getData reply: xid 1042, 1,024 bytes of data (byte `i` is `i * 31 + 7`), a full stat.
pub fn build_get_data_reply() -> (ReplyHeader, GetDataResponse) {
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 31 + 7) as u8).collect();
    (
        ReplyHeader {
            xid: 1042,
            zxid: 0x1_0000_0456,
            err: ErrorCode::OK,
        },
        GetDataResponse {
            data: Some(Bytes::from(data)),
            stat: stat(
                0x1_0000_0010,
                0x1_0000_0456,
                1_700_000_000_000,
                1_700_000_123_456,
                17,
                0,
                1024,
                0,
                0x1_0000_0010,
            ),
        },
    )
}

/// The getChildren2 reply: xid 1043, children `node-0000000000` to `node-0000000999`.
pub fn build_get_children2_reply() -> (ReplyHeader, GetChildren2Response) {
    let children = (0..1000).map(|i| Some(format!("node-{i:010}"))).collect();
    (
        ReplyHeader {
            xid: 1043,
            zxid: 0x1_0000_0457,
            err: ErrorCode::OK,
        },
        GetChildren2Response {
            children: Some(children),
            stat: stat(
                0x1_0000_0002,
                0x1_0000_0002,
                1_699_999_000_000,
                1_699_999_000_000,
                0,
                1000,
                0,
                1000,
                0x1_0000_0457,
            ),
        },
    )
}

/// The create request: xid 1044, an ephemeral sequential node with 32 bytes of data, ACL
/// `digest:app:...` ALL plus `world:anyone` READ.
pub fn build_create_request() -> (RequestHeader, CreateRequest) {
    let acl = |perms, scheme: &str, id: &str| Acl {
        perms,
        id: Id {
            scheme: Some(scheme.into()),
            id: Some(id.into()),
        },
    };
    (
        RequestHeader {
            xid: 1044,
            op_code: OpCode::CREATE,
        },
        CreateRequest {
            path: Some("/services/payments/instances/instance-".into()),
            data: Some(Bytes::from_static(br#"{"host":"10.0.0.12","port":8080}"#)),
            acl: Some(vec![
                acl(Perms::ALL, "digest", "app:NvHpU1Vq8K5XhbZrW2S0YcTb2ZE="),
                acl(Perms::READ, "world", "anyone"),
            ]),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        },
    )
}

/// The watch notification: xid -1, zxid -1, NodeDataChanged on `/services/payments/config`.
pub fn build_watcher_event() -> (ReplyHeader, WatcherEvent) {
    (
        ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::OK,
        },
        WatcherEvent {
            event_type: EventType::NODE_DATA_CHANGED,
            state: KeeperState::SYNC_CONNECTED,
            path: Some("/services/payments/config".into()),
        },
    )
}

/// Decodes a getData reply frame as the client does.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_get_data_reply(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_DATA)
}

/// Decodes a getChildren2 reply frame as the client does.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_get_children2_reply(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_CHILDREN2)
}

/// Decodes a notification frame as the client does (the op code lookup is never asked for xid
/// -1).
///
/// # Errors
///
/// Any decoding error.
pub fn decode_watcher_event(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_DATA)
}

/// Decodes a create request frame as a server would: the header, then the body exactly.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_create_request(frame: Bytes) -> Result<(RequestHeader, CreateRequest), DecodeError> {
    let mut reader = Reader::new(frame);
    let header = RequestHeader::decode(&mut reader)?;
    let body = decode_exact::<CreateRequest>(reader.into_rest())?;
    Ok((header, body))
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

/// One measurement: the median over rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Median nanoseconds per operation.
    pub median_ns: f64,
    /// Operations per timed round.
    pub iters_per_round: u64,
}

/// Times `op`: a warm-up of `settings.warmup` in doubling batches (which also sizes the rounds),
/// then `settings.rounds` rounds of about `settings.round` each. Every result goes through
/// [`black_box`] and is dropped inside the timed loop.
pub fn measure<R>(settings: &Settings, mut op: impl FnMut() -> R) -> Measurement {
    const MIN_BATCH: Duration = Duration::from_millis(1);
    let deadline = Instant::now() + settings.warmup;
    let mut batch: u64 = 1;
    let batch_time = loop {
        let start = Instant::now();
        for _ in 0..batch {
            black_box(op());
        }
        let elapsed = start.elapsed();
        if Instant::now() >= deadline && elapsed >= MIN_BATCH {
            break elapsed;
        }
        if elapsed < MIN_BATCH {
            batch = batch.saturating_mul(2);
        }
    };
    let per_op = batch_time.as_secs_f64() / batch as f64;
    let iters = ((settings.round.as_secs_f64() / per_op) as u64).max(1);
    let mut samples: Vec<f64> = (0..settings.rounds.max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(op());
            }
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    Measurement {
        median_ns: median(&mut samples),
        iters_per_round: iters,
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => samples[n / 2],
        _ => (samples[n / 2 - 1] + samples[n / 2]) / 2.0,
    }
}

/// Checks that `decode(frame)` gives `expected` and that `encode()` gives `frame` back, then
/// times both.
fn bench_ours<T, D, E>(
    case: CaseId,
    frame: &Bytes,
    expected: &T,
    decode: D,
    encode: E,
    settings: &Settings,
) -> Result<(Measurement, Measurement), BenchError>
where
    T: PartialEq + fmt::Debug,
    D: Fn(Bytes) -> Result<T, DecodeError>,
    E: Fn() -> Bytes,
{
    match decode(frame.clone()) {
        Ok(value) if &value == expected => {}
        Ok(value) => {
            return Err(BenchError::SelfCheck(format!(
                "{}: decoded {value:?}, expected {expected:?}",
                case.id()
            )));
        }
        Err(e) => {
            return Err(BenchError::SelfCheck(format!(
                "{}: our own frame does not decode: {e}",
                case.id()
            )));
        }
    }
    if encode() != *frame {
        return Err(BenchError::SelfCheck(format!(
            "{}: encoding is not deterministic",
            case.id()
        )));
    }
    let decoded = measure(settings, || decode(black_box(frame.clone())));
    let encoded = measure(settings, &encode);
    Ok((decoded, encoded))
}

/// Times our decode and encode of `case`; `frame` is [`CaseId::frame`].
///
/// # Errors
///
/// [`BenchError::SelfCheck`] if the frame does not decode back to the message.
pub fn measure_ours(
    case: CaseId,
    frame: &Bytes,
    settings: &Settings,
) -> Result<(Measurement, Measurement), BenchError> {
    match case {
        CaseId::GetDataReply => {
            let message = build_get_data_reply();
            let expected = ServerMessage::Reply {
                header: message.0.clone(),
                body: Some(Response::GetData(message.1.clone())),
            };
            bench_ours(
                case,
                frame,
                &expected,
                decode_get_data_reply,
                || black_box(&message).to_bytes(),
                settings,
            )
        }
        CaseId::GetChildren2Reply => {
            let message = build_get_children2_reply();
            let expected = ServerMessage::Reply {
                header: message.0.clone(),
                body: Some(Response::GetChildren2(message.1.clone())),
            };
            bench_ours(
                case,
                frame,
                &expected,
                decode_get_children2_reply,
                || black_box(&message).to_bytes(),
                settings,
            )
        }
        CaseId::CreateRequest => {
            let message = build_create_request();
            bench_ours(
                case,
                frame,
                &message,
                decode_create_request,
                || black_box(&message).to_bytes(),
                settings,
            )
        }
        CaseId::WatcherEvent => {
            let message = build_watcher_event();
            let expected = ServerMessage::Notification(message.0.clone(), message.1.clone());
            bench_ours(
                case,
                frame,
                &expected,
                decode_watcher_event,
                || black_box(&message).to_bytes(),
                settings,
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why the benchmark could not produce a report.
#[derive(Debug)]
pub enum BenchError {
    /// Java, javac or the ZooKeeper jars are missing.
    MissingJava(String),
    /// A file or process operation failed.
    Io(String, io::Error),
    /// javac failed.
    Compile(String),
    /// The reference encoding differs from ours, or decoding ours gave other records.
    CrossCheck(String),
    /// The Java program failed otherwise, or printed something unexpected.
    Java(String),
    /// Our own frame does not decode back to the message.
    SelfCheck(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::MissingJava(what) => write!(f, "{what}; {INSTALL_HINT}"),
            BenchError::Io(what, e) => write!(f, "{what}: {e}"),
            BenchError::Compile(out) => write!(f, "javac failed on {JAVA_MAIN}.java:\n{out}"),
            BenchError::CrossCheck(out) => write!(
                f,
                "the reference serializer disagrees with our codec; nothing was timed:\n{out}"
            ),
            BenchError::Java(out) => write!(f, "the reference benchmark failed:\n{out}"),
            BenchError::SelfCheck(out) => write!(f, "our codec failed its own round trip: {out}"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Io(_, e) => Some(e),
            _ => None,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> BenchError {
    let what = what.into();
    move |e| BenchError::Io(what, e)
}

// ---------------------------------------------------------------------------------------------
// The reference (Java)
// ---------------------------------------------------------------------------------------------

/// A located Java toolchain and ZooKeeper classpath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaTools {
    /// The `java` binary.
    pub java: PathBuf,
    /// The `javac` binary.
    pub javac: PathBuf,
    /// The classpath with `zookeeper.jar` (for `ByteBufferInputStream`) and
    /// `zookeeper-jute.jar` (the reference serializer).
    pub classpath: String,
}

impl JavaTools {
    /// Finds `java` ([`ENV_JAVA`], `JAVA_HOME`, `PATH`), `javac` (next to `java`, else on
    /// `PATH`) and the jars ([`ENV_CLASSPATH`], else [`DEBIAN_JAR_DIR`]).
    ///
    /// # Errors
    ///
    /// [`BenchError::MissingJava`], whose message names `scripts/install-deps.sh`.
    pub fn detect() -> Result<JavaTools, BenchError> {
        let java = find_java()?;
        let javac = fs::canonicalize(&java)
            .ok()
            .and_then(|real| real.parent().map(|dir| dir.join("javac")))
            .filter(|p| is_executable(p))
            .or_else(|| which("javac"))
            .ok_or_else(|| {
                BenchError::MissingJava("javac not found (package default-jdk-headless)".into())
            })?;
        let classpath = match env::var(ENV_CLASSPATH) {
            Ok(cp) if !cp.trim().is_empty() => cp,
            _ => {
                let mut entries = Vec::new();
                for jar in ["zookeeper.jar", "zookeeper-jute.jar"] {
                    let path = Path::new(DEBIAN_JAR_DIR).join(jar);
                    if !path.is_file() {
                        return Err(BenchError::MissingJava(format!(
                            "{} not found (package zookeeper)",
                            path.display()
                        )));
                    }
                    entries.push(path.display().to_string());
                }
                entries.join(":")
            }
        };
        Ok(JavaTools {
            java,
            javac,
            classpath,
        })
    }

    /// Compiles the reference program unless a build of the same source and classpath is cached
    /// (under the Cargo target directory); returns the class directory.
    ///
    /// # Errors
    ///
    /// [`BenchError::Compile`] with javac's output, or [`BenchError::Io`].
    pub fn compile(&self) -> Result<PathBuf, BenchError> {
        let key = fnv1a64(
            [
                JAVA_SOURCE.as_bytes(),
                self.classpath.as_bytes(),
                self.javac.as_os_str().as_encoded_bytes(),
            ]
            .join(&0u8)
            .as_slice(),
        );
        let root = cache_root();
        let dir = root.join(format!("codec-java-{key:016x}"));
        if dir.join(format!("{JAVA_MAIN}.class")).is_file() {
            return Ok(dir);
        }
        fs::create_dir_all(&root).map_err(io_err(format!("creating {}", root.display())))?;
        let staging = root.join(format!("codec-java-{key:016x}.tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&staging);
        fs::create_dir_all(&staging).map_err(io_err(format!("creating {}", staging.display())))?;
        let source = staging.join(format!("{JAVA_MAIN}.java"));
        fs::write(&source, JAVA_SOURCE).map_err(io_err(format!("writing {}", source.display())))?;
        let output = Command::new(&self.javac)
            .args([
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-cp",
                &self.classpath,
                "-d",
            ])
            .arg(&staging)
            .arg(&source)
            .output()
            .map_err(io_err(format!("running {}", self.javac.display())))?;
        if !output.status.success() {
            let _ = fs::remove_dir_all(&staging);
            return Err(BenchError::Compile(format!(
                "{}{}(classpath: {}; it needs the ZooKeeper 3.8 jars: {INSTALL_HINT})",
                first_lines(&String::from_utf8_lossy(&output.stdout), 30),
                first_lines(&String::from_utf8_lossy(&output.stderr), 30),
                self.classpath
            )));
        }
        // Builds of older sources are no longer needed.
        if let Ok(entries) = fs::read_dir(&root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("codec-java-") && !name.contains(".tmp-") {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
        // Another run may have finished the same build first; either copy will do.
        if fs::rename(&staging, &dir).is_err() {
            let _ = fs::remove_dir_all(&staging);
            if !dir.join(format!("{JAVA_MAIN}.class")).is_file() {
                return Err(BenchError::Io(
                    format!("moving the compiled classes to {}", dir.display()),
                    io::Error::other("rename failed"),
                ));
            }
        }
        Ok(dir)
    }

    /// Runs the reference on `frames`: cross-check, then timing.
    ///
    /// # Errors
    ///
    /// [`BenchError::CrossCheck`] when the reference disagrees with our bytes, else
    /// [`BenchError::Java`] or [`BenchError::Io`].
    pub fn run(
        &self,
        classes: &Path,
        frames: &[(CaseId, Bytes)],
        settings: &Settings,
    ) -> Result<JavaReport, BenchError> {
        let vectors = TempDir::new("zk-codec-bench")?;
        for (case, frame) in frames {
            let path = vectors.path().join(format!("{}.bin", case.id()));
            fs::write(&path, frame).map_err(io_err(format!("writing {}", path.display())))?;
        }
        let classpath = format!("{}:{}", classes.display(), self.classpath);
        let output = Command::new(&self.java)
            .arg("-cp")
            .arg(&classpath)
            .arg(JAVA_MAIN)
            .arg(vectors.path())
            .arg(settings.java_warmup.as_millis().to_string())
            .arg(settings.rounds.max(1).to_string())
            .arg(settings.round.as_millis().max(1).to_string())
            .args(frames.iter().map(|(case, _)| case.id()))
            .output()
            .map_err(io_err(format!("running {}", self.java.display())))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(JAVA_CROSS_CHECK_FAILED) {
            return Err(BenchError::CrossCheck(stderr.trim_end().to_owned()));
        }
        if !output.status.success() {
            return Err(BenchError::Java(format!(
                "{} exited with {}\n{}{}",
                self.java.display(),
                output.status,
                stdout,
                stderr.trim_end()
            )));
        }
        let report = JavaReport::parse(&stdout).map_err(BenchError::Java)?;
        for (case, frame) in frames {
            match report.checked.iter().find(|(c, _)| c == case) {
                Some((_, len)) if *len == frame.len() => {}
                Some((_, len)) => {
                    return Err(BenchError::CrossCheck(format!(
                        "{}: the reference checked {len} bytes, ours are {}",
                        case.id(),
                        frame.len()
                    )));
                }
                None => {
                    return Err(BenchError::Java(format!(
                        "no cross-check reported for {}:\n{stdout}",
                        case.id()
                    )));
                }
            }
            if report.result(*case).is_none() {
                return Err(BenchError::Java(format!(
                    "no timing reported for {}:\n{stdout}",
                    case.id()
                )));
            }
        }
        Ok(report)
    }
}

/// What the Java program printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JavaReport {
    /// `info` lines: Java version, VM, GC, heap.
    pub info: Vec<(String, String)>,
    /// Cases whose cross-check passed, with the byte count the reference checked.
    pub checked: Vec<(CaseId, usize)>,
    /// Decode and encode timings per case.
    pub results: Vec<(CaseId, Option<Measurement>, Option<Measurement>)>,
}

impl JavaReport {
    /// Parses the program's stdout (see the header of `CodecBench.java`).
    ///
    /// # Errors
    ///
    /// A message quoting the first line that does not parse.
    pub fn parse(stdout: &str) -> Result<JavaReport, String> {
        let mut report = JavaReport::default();
        for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
            let bad = || format!("unexpected line from the reference benchmark: {line:?}");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("info") => {
                    let key = words.next().ok_or_else(bad)?;
                    let value = words.collect::<Vec<_>>().join(" ");
                    report.info.push((key.to_owned(), value));
                }
                Some("check") => {
                    let case = words.next().and_then(CaseId::from_id).ok_or_else(bad)?;
                    if words.next() != Some("ok") {
                        return Err(bad());
                    }
                    let len = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    report.checked.push((case, len));
                }
                Some("result") => {
                    let case = words.next().and_then(CaseId::from_id).ok_or_else(bad)?;
                    let op = words.next().ok_or_else(bad)?;
                    let median_ns: f64 =
                        words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    let iters_per_round =
                        words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    let m = Measurement {
                        median_ns,
                        iters_per_round,
                    };
                    let index = match report.results.iter().position(|(c, _, _)| *c == case) {
                        Some(index) => index,
                        None => {
                            report.results.push((case, None, None));
                            report.results.len() - 1
                        }
                    };
                    match op {
                        "decode" => report.results[index].1 = Some(m),
                        "encode" => report.results[index].2 = Some(m),
                        _ => return Err(bad()),
                    }
                }
                _ => return Err(bad()),
            }
        }
        Ok(report)
    }

    /// The decode and encode timings of `case`, if both were reported.
    pub fn result(&self, case: CaseId) -> Option<(Measurement, Measurement)> {
        self.results
            .iter()
            .find(|(c, _, _)| *c == case)
            .and_then(|(_, d, e)| Some(((*d)?, (*e)?)))
    }

    /// The `info` value of `key`.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn find_java() -> Result<PathBuf, BenchError> {
    if let Some(java) = env::var_os(ENV_JAVA).filter(|v| !v.is_empty()) {
        let java = PathBuf::from(java);
        return if is_executable(&java) {
            Ok(java)
        } else {
            Err(BenchError::MissingJava(format!(
                "{ENV_JAVA}={} is not an executable file",
                java.display()
            )))
        };
    }
    if let Some(home) = env::var_os("JAVA_HOME").filter(|v| !v.is_empty()) {
        let java = Path::new(&home).join("bin/java");
        if is_executable(&java) {
            return Ok(java);
        }
    }
    which("java").ok_or_else(|| {
        BenchError::MissingJava("java not found on PATH (package default-jre-headless)".into())
    })
}

/// The first `n` lines of `text`, each with its newline, and a note of how many were left out.
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines.iter().take(n).map(|l| format!("{l}\n")).collect();
    if lines.len() > n {
        out += &format!("[{} more lines]\n", lines.len() - n);
    }
    out
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn which(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// `zk-benches/` in the Cargo target directory this program was built in (found by its
/// `CACHEDIR.TAG`), else in the system temporary directory.
fn cache_root() -> PathBuf {
    let target = env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .skip(1)
            .find(|dir| dir.join("CACHEDIR.TAG").is_file())
            .map(Path::to_path_buf)
    });
    target.unwrap_or_else(env::temp_dir).join("zk-benches")
}

/// 64-bit FNV-1a: a stable hash for the compile cache key.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Result<TempDir, BenchError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&path).map_err(io_err(format!("creating {}", path.display())))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------------

/// The machine the figures come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Logical cores available to this process.
    pub cores: usize,
    /// `model name` of `/proc/cpuinfo`, when readable.
    pub cpu: Option<String>,
    /// The 1-minute load average at the start, when readable (a noisy machine shows here).
    pub load_1m: Option<f64>,
    /// `std::env::consts::OS`.
    pub os: &'static str,
    /// `std::env::consts::ARCH`.
    pub arch: &'static str,
    /// `release` or `debug`: our figures mean nothing in a debug build.
    pub rust_profile: &'static str,
}

impl Machine {
    /// Describes this machine.
    pub fn detect() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned());
        let load_1m = fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            load_1m,
            os: env::consts::OS,
            arch: env::consts::ARCH,
            rust_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }
}

/// The figures of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The message.
    pub case: CaseId,
    /// Its encoded size (header + record).
    pub bytes: usize,
    /// Our decode.
    pub ours_decode: Measurement,
    /// Our encode.
    pub ours_encode: Measurement,
    /// The reference's decode and encode, absent with `--no-java`.
    pub reference: Option<(Measurement, Measurement)>,
}

impl Row {
    /// Our decode throughput in MB/s (10^6 bytes per second).
    pub fn ours_decode_mb_s(&self) -> f64 {
        mb_per_s(self.bytes, self.ours_decode.median_ns)
    }

    /// Our encode throughput in MB/s.
    pub fn ours_encode_mb_s(&self) -> f64 {
        mb_per_s(self.bytes, self.ours_encode.median_ns)
    }

    /// Our decode time over the reference's (below 1: we are faster).
    pub fn decode_ratio(&self) -> Option<f64> {
        self.reference
            .map(|(decode, _)| self.ours_decode.median_ns / decode.median_ns)
    }

    /// Our encode time over the reference's (below 1: we are faster).
    pub fn encode_ratio(&self) -> Option<f64> {
        self.reference
            .map(|(_, encode)| self.ours_encode.median_ns / encode.median_ns)
    }
}

fn mb_per_s(bytes: usize, ns: f64) -> f64 {
    bytes as f64 / ns * 1e3
}

/// A whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `quick` or `full`.
    pub mode: &'static str,
    /// The timing settings.
    pub settings: Settings,
    /// Where it ran.
    pub machine: Machine,
    /// The reference's `info` lines; `None` with `--no-java`.
    pub reference: Option<JavaReport>,
    /// One row per message, in [`CaseId::ALL`] order.
    pub rows: Vec<Row>,
}

/// Runs the benchmark. Progress goes to stderr.
///
/// # Errors
///
/// Missing Java (unless `no_java`), a failed cross-check, or a Java failure.
pub fn run(options: &Options) -> Result<Report, BenchError> {
    let settings = Settings::for_options(options);
    let machine = Machine::detect();
    let frames: Vec<(CaseId, Bytes)> = CaseId::ALL.iter().map(|&c| (c, c.frame())).collect();

    let reference = if options.no_java {
        None
    } else {
        let tools = JavaTools::detect()?;
        let classes = tools.compile()?;
        eprintln!(
            "codec: cross-checking and timing the reference ({})...",
            tools.java.display()
        );
        Some(tools.run(&classes, &frames, &settings)?)
    };

    eprintln!("codec: timing our codec...");
    let mut rows = Vec::with_capacity(frames.len());
    for (case, frame) in &frames {
        let (ours_decode, ours_encode) = measure_ours(*case, frame, &settings)?;
        rows.push(Row {
            case: *case,
            bytes: frame.len(),
            ours_decode,
            ours_encode,
            reference: reference.as_ref().and_then(|r| r.result(*case)),
        });
    }
    Ok(Report {
        mode: if options.quick { "quick" } else { "full" },
        settings,
        machine,
        reference,
        rows,
    })
}

impl Report {
    /// One JSON document (see `docs/benchmarks.md`).
    pub fn to_json(&self) -> String {
        use json::{num, opt_num, string};
        let m = &self.machine;
        let mut out = String::from("{\n");
        out += "  \"benchmark\": \"codec\",\n";
        out += &format!("  \"mode\": {},\n", string(self.mode));
        out += &format!(
            "  \"settings\": {{\"warmup_ms\": {}, \"java_warmup_ms\": {}, \"rounds\": {}, \"round_ms\": {}}},\n",
            self.settings.warmup.as_millis(),
            self.settings.java_warmup.as_millis(),
            self.settings.rounds,
            self.settings.round.as_millis()
        );
        out += &format!(
            "  \"machine\": {{\"cores\": {}, \"cpu\": {}, \"load_1m\": {}, \"os\": {}, \"arch\": {}, \"rust_profile\": {}}},\n",
            m.cores,
            m.cpu.as_deref().map_or("null".into(), string),
            opt_num(m.load_1m),
            string(m.os),
            string(m.arch),
            string(m.rust_profile)
        );
        match &self.reference {
            None => out += "  \"reference\": null,\n",
            Some(r) => {
                let info = |key| r.info(key).map_or("null".into(), string);
                out += &format!(
                    "  \"reference\": {{\"serializer\": \"org.apache.jute.BinaryInputArchive/BinaryOutputArchive (ZooKeeper 3.8)\", \"java_version\": {}, \"vm\": {}, \"gc\": {}, \"max_heap_mb\": {}, \"cross_check\": \"passed\"}},\n",
                    info("java_version"),
                    info("vm"),
                    info("gc"),
                    r.info("max_heap_mb")
                        .and_then(|v| v.parse::<u64>().ok())
                        .map_or("null".into(), |v| v.to_string())
                );
            }
        }
        out += "  \"messages\": [\n";
        for (i, row) in self.rows.iter().enumerate() {
            let reference = row.reference;
            out += &format!(
                "    {{\"id\": {}, \"name\": {}, \"bytes\": {}, \"cross_check\": {}, \
                 \"ours_decode_ns\": {}, \"ours_decode_mb_s\": {}, \"ref_decode_ns\": {}, \"decode_ratio\": {}, \
                 \"ours_encode_ns\": {}, \"ours_encode_mb_s\": {}, \"ref_encode_ns\": {}, \"encode_ratio\": {}}}{}\n",
                string(row.case.id()),
                string(row.case.label()),
                row.bytes,
                string(if reference.is_some() {
                    "passed"
                } else {
                    "skipped"
                }),
                num(row.ours_decode.median_ns),
                num(row.ours_decode_mb_s()),
                opt_num(reference.map(|(d, _)| d.median_ns)),
                opt_num(row.decode_ratio()),
                num(row.ours_encode.median_ns),
                num(row.ours_encode_mb_s()),
                opt_num(reference.map(|(_, e)| e.median_ns)),
                opt_num(row.encode_ratio()),
                if i + 1 < self.rows.len() { "," } else { "" }
            );
        }
        out += "  ]\n}\n";
        out
    }

    /// The human-readable table.
    pub fn to_table(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "codec benchmark ({} run): median of {} rounds of ~{} ms after a {} ms warm-up ({} ms for Java)\n",
            self.mode,
            self.settings.rounds,
            self.settings.round.as_millis(),
            self.settings.warmup.as_millis(),
            self.settings.java_warmup.as_millis()
        );
        out += &format!(
            "machine: {} cores, {}, {}/{}, load {}, Rust {} build\n",
            m.cores,
            m.cpu.as_deref().unwrap_or("unknown CPU"),
            m.os,
            m.arch,
            m.load_1m.map_or("unknown".into(), |l| format!("{l:.2}")),
            m.rust_profile
        );
        match &self.reference {
            Some(r) => {
                out += &format!(
                    "reference: zookeeper-jute 3.8 on Java {} ({}; GC {}); cross-check: byte-identical\n",
                    r.info("java_version").unwrap_or("?"),
                    r.info("vm").unwrap_or("?"),
                    r.info("gc").unwrap_or("?")
                );
            }
            None => out += "reference: skipped (--no-java)\n",
        }
        out += "\n";
        out += &format!(
            "{:<34} {:>6} | {:>9} {:>8} {:>9} {:>6} | {:>9} {:>8} {:>9} {:>6}\n",
            "message",
            "bytes",
            "decode ns",
            "MB/s",
            "ref ns",
            "ratio",
            "encode ns",
            "MB/s",
            "ref ns",
            "ratio"
        );
        out += &format!("{}\n", "-".repeat(34 + 7 + 3 + 35 + 3 + 35));
        let opt = |v: Option<f64>, precision: usize| {
            v.map_or("-".to_owned(), |v| format!("{v:.precision$}"))
        };
        for row in &self.rows {
            out += &format!(
                "{:<34} {:>6} | {:>9.1} {:>8.0} {:>9} {:>6} | {:>9.1} {:>8.0} {:>9} {:>6}\n",
                row.case.label(),
                row.bytes,
                row.ours_decode.median_ns,
                row.ours_decode_mb_s(),
                opt(row.reference.map(|(d, _)| d.median_ns), 1),
                opt(row.decode_ratio(), 2),
                row.ours_encode.median_ns,
                row.ours_encode_mb_s(),
                opt(row.reference.map(|(_, e)| e.median_ns), 1),
                opt(row.encode_ratio(), 2),
            );
        }
        out += "\nns = median nanoseconds per message; MB/s = 10^6 bytes/s of our codec; \
                ratio = ours / reference (below 1: we are faster).\n";
        if m.rust_profile == "debug" {
            out += "warning: a debug build; run with --release for meaningful figures.\n";
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// Just enough JSON to write the report and to read it back in tests.
pub mod json {
    /// A JSON string literal.
    pub fn string(s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// A JSON number, or `null` when not finite (JSON has no NaN or infinity).
    pub fn num(v: f64) -> String {
        if v.is_finite() {
            format!("{v:.3}")
        } else {
            "null".into()
        }
    }

    /// [`num`], or `null` for `None`.
    pub fn opt_num(v: Option<f64>) -> String {
        v.map_or("null".into(), num)
    }

    /// A parsed JSON value.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        /// `null`.
        Null,
        /// `true` or `false`.
        Bool(bool),
        /// A number.
        Number(f64),
        /// A string.
        String(String),
        /// An array.
        Array(Vec<Value>),
        /// An object, keys in document order.
        Object(Vec<(String, Value)>),
    }

    impl Value {
        /// The member `key` of an object.
        pub fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }

        /// The number, if this is one.
        pub fn as_f64(&self) -> Option<f64> {
            match self {
                Value::Number(n) => Some(*n),
                _ => None,
            }
        }

        /// The string, if this is one.
        pub fn as_str(&self) -> Option<&str> {
            match self {
                Value::String(s) => Some(s),
                _ => None,
            }
        }

        /// The elements, if this is an array.
        pub fn as_array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(items) => Some(items),
                _ => None,
            }
        }
    }

    /// Parses one JSON document (RFC 8259; surrounding whitespace allowed).
    ///
    /// # Errors
    ///
    /// A message with the byte offset of the first error.
    pub fn parse(text: &str) -> Result<Value, String> {
        let mut parser = Parser {
            bytes: text.as_bytes(),
            pos: 0,
        };
        let value = parser.value(0)?;
        parser.ws();
        if parser.pos != parser.bytes.len() {
            return Err(parser.err("trailing characters"));
        }
        Ok(value)
    }

    struct Parser<'a> {
        bytes: &'a [u8],
        pos: usize,
    }

    impl Parser<'_> {
        fn err(&self, what: &str) -> String {
            format!("{what} at byte {}", self.pos)
        }

        fn ws(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
        }

        fn eat(&mut self, b: u8) -> bool {
            if self.bytes.get(self.pos) == Some(&b) {
                self.pos += 1;
                true
            } else {
                false
            }
        }

        fn literal(&mut self, word: &str, value: Value) -> Result<Value, String> {
            if self.bytes[self.pos..].starts_with(word.as_bytes()) {
                self.pos += word.len();
                Ok(value)
            } else {
                Err(self.err("invalid literal"))
            }
        }

        fn value(&mut self, depth: usize) -> Result<Value, String> {
            if depth > 64 {
                return Err(self.err("nesting too deep"));
            }
            self.ws();
            match self.bytes.get(self.pos) {
                None => Err(self.err("unexpected end")),
                Some(b'n') => self.literal("null", Value::Null),
                Some(b't') => self.literal("true", Value::Bool(true)),
                Some(b'f') => self.literal("false", Value::Bool(false)),
                Some(b'"') => self.string().map(Value::String),
                Some(b'[') => {
                    self.pos += 1;
                    let mut items = Vec::new();
                    self.ws();
                    if self.eat(b']') {
                        return Ok(Value::Array(items));
                    }
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        if self.eat(b']') {
                            return Ok(Value::Array(items));
                        }
                        if !self.eat(b',') {
                            return Err(self.err("expected , or ]"));
                        }
                    }
                }
                Some(b'{') => {
                    self.pos += 1;
                    let mut members = Vec::new();
                    self.ws();
                    if self.eat(b'}') {
                        return Ok(Value::Object(members));
                    }
                    loop {
                        self.ws();
                        if self.bytes.get(self.pos) != Some(&b'"') {
                            return Err(self.err("expected a key"));
                        }
                        let key = self.string()?;
                        self.ws();
                        if !self.eat(b':') {
                            return Err(self.err("expected :"));
                        }
                        members.push((key, self.value(depth + 1)?));
                        self.ws();
                        if self.eat(b'}') {
                            return Ok(Value::Object(members));
                        }
                        if !self.eat(b',') {
                            return Err(self.err("expected , or }"));
                        }
                    }
                }
                Some(b'-' | b'0'..=b'9') => self.number(),
                Some(_) => Err(self.err("unexpected character")),
            }
        }

        fn number(&mut self) -> Result<Value, String> {
            let start = self.pos;
            self.eat(b'-');
            let digits = |p: &mut Self| {
                let from = p.pos;
                while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                    p.pos += 1;
                }
                p.pos > from
            };
            if self.eat(b'0') {
                // No leading zeros.
            } else if !digits(self) {
                return Err(self.err("invalid number"));
            }
            if self.eat(b'.') && !digits(self) {
                return Err(self.err("invalid fraction"));
            }
            if self.eat(b'e') || self.eat(b'E') {
                let _ = self.eat(b'+') || self.eat(b'-');
                if !digits(self) {
                    return Err(self.err("invalid exponent"));
                }
            }
            let text = std::str::from_utf8(&self.bytes[start..self.pos])
                .map_err(|_| self.err("invalid number"))?;
            text.parse()
                .map(Value::Number)
                .map_err(|_| self.err("invalid number"))
        }

        fn string(&mut self) -> Result<String, String> {
            self.pos += 1; // the opening quote
            let mut out = String::new();
            loop {
                let start = self.pos;
                while let Some(&b) = self.bytes.get(self.pos) {
                    if b == b'"' || b == b'\\' || b < 0x20 {
                        break;
                    }
                    self.pos += 1;
                }
                out.push_str(
                    std::str::from_utf8(&self.bytes[start..self.pos])
                        .map_err(|_| self.err("invalid UTF-8"))?,
                );
                match self.bytes.get(self.pos) {
                    Some(b'"') => {
                        self.pos += 1;
                        return Ok(out);
                    }
                    Some(b'\\') => {
                        self.pos += 1;
                        let escaped = match self.bytes.get(self.pos) {
                            Some(b'"') => '"',
                            Some(b'\\') => '\\',
                            Some(b'/') => '/',
                            Some(b'b') => '\u{8}',
                            Some(b'f') => '\u{c}',
                            Some(b'n') => '\n',
                            Some(b'r') => '\r',
                            Some(b't') => '\t',
                            Some(b'u') => {
                                let hex = self
                                    .bytes
                                    .get(self.pos + 1..self.pos + 5)
                                    .and_then(|h| std::str::from_utf8(h).ok())
                                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                                    .ok_or_else(|| self.err("invalid \\u escape"))?;
                                self.pos += 4;
                                // Surrogate pairs are not needed for our reports.
                                char::from_u32(hex).ok_or_else(|| self.err("unpaired surrogate"))?
                            }
                            _ => return Err(self.err("invalid escape")),
                        };
                        self.pos += 1;
                        out.push(escaped);
                    }
                    _ => return Err(self.err("unterminated string")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        assert_eq!(
            Options::parse(["--json", "--quick"]),
            Ok(Cli::Run(Options {
                json: true,
                quick: true,
                no_java: false
            }))
        );
        assert_eq!(Options::parse(["--help"]), Ok(Cli::Help));
        assert!(Options::parse(["--fast"]).is_err());
    }

    #[test]
    fn every_case_round_trips_through_our_codec() {
        let settings = Settings {
            warmup: Duration::ZERO,
            java_warmup: Duration::ZERO,
            rounds: 1,
            round: Duration::from_micros(1),
        };
        for case in CaseId::ALL {
            let frame = case.frame();
            measure_ours(case, &frame, &settings).expect("round trip");
            assert_eq!(CaseId::from_id(case.id()), Some(case));
        }
        assert_eq!(CaseId::GetDataReply.frame().len(), 16 + 4 + 1024 + 68);
        assert_eq!(
            CaseId::GetChildren2Reply.frame().len(),
            16 + 4 + 1000 * 19 + 68
        );
    }

    #[test]
    fn java_output_parses() {
        let out = "info java_version 17.0.15\ninfo vm OpenJDK 64-Bit Server VM 17\n\
                   check watcher_event ok 45\nresult watcher_event decode 51.250 100000\n\
                   result watcher_event encode 60.000 90000\n";
        let report = JavaReport::parse(out).expect("parses");
        assert_eq!(report.info("vm"), Some("OpenJDK 64-Bit Server VM 17"));
        assert_eq!(report.checked, vec![(CaseId::WatcherEvent, 45)]);
        let (decode, encode) = report.result(CaseId::WatcherEvent).expect("timed");
        assert_eq!(decode.median_ns, 51.25);
        assert_eq!(encode.iters_per_round, 90000);
        assert!(JavaReport::parse("result nope decode 1 1").is_err());
    }

    #[test]
    fn json_round_trip() {
        let text = format!(
            "{{\"a\": [1, -2.5e3, true, null, {}], \"b\": {{}}}}",
            json::string("q\"\\\n\u{1}é")
        );
        let value = json::parse(&text).expect("valid");
        let items = value
            .get("a")
            .and_then(json::Value::as_array)
            .expect("array");
        assert_eq!(items[1].as_f64(), Some(-2500.0));
        assert_eq!(items[4].as_str(), Some("q\"\\\n\u{1}é"));
        for bad in ["", "{", "[1,]", "01", "\"x", "{\"a\" 1}", "1 2", "nul"] {
            assert!(json::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(json::num(f64::NAN), "null");
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
