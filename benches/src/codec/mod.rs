//! The codec benchmark (`src/bin/codec.rs`).
//!
//! Encode and decode throughput of four representative messages, measured for our `jute` codec
//! and, in the same run, for the reference Java serializer (`org.apache.jute.BinaryInputArchive`
//! / `BinaryOutputArchive` with the `org.apache.zookeeper.proto` classes of ZooKeeper 3.8) on the
//! very same bytes:
//!
//! 1. [`run`] builds the messages ([`CaseId`], `build_*` in `cases.rs`) and encodes them; each
//!    encoding is a frame body (header then record, no length prefix), checked to decode back to
//!    the message.
//! 2. Unless [`Options::no_java`], it writes the frames to a temporary directory, compiles
//!    `benches/java/CodecBench.java` (cached under the Cargo target directory by a hash of the
//!    source and classpath) and runs it ([`JavaTools`], `reference.rs`). The Java program builds
//!    the same messages with the reference classes, fails with exit status 3 unless its encoding
//!    is byte-identical to ours and decoding ours gives back its own records, then times decode
//!    and encode after a JIT warm-up.
//! 3. It times our decode and encode ([`jute::Encode`] of header and record into a reused
//!    buffer) with a warm-up and several rounds ([`measure_ours`] in `ours.rs`, [`measure`] in
//!    `timing.rs`). The decode is each message's real path: [`jute::ServerMessage::decode`] of a
//!    `Bytes` frame for the getData and getChildren2 replies (what the client does), the
//!    borrowed view for the watch notification ([`jute::ServerMessage::decode_notification`],
//!    what the client's session does) and for the create request (the header, then
//!    `CreateRequest`'s view of the rest, as a server would). For those two the owned decode
//!    (header then [`jute::decode_exact`] body; [`jute::ServerMessage::decode`]) is timed too,
//!    as the row's `owned` figures.
//! 4. The [`Report`] (`report.rs`) holds the median ns/op of both sides and the ratio ours /
//!    reference (below 1: we are faster), rendered as a table ([`Report::to_table`]) or one JSON
//!    document ([`Report::to_json`]).
//!
//! See `docs/benchmarks.md` for how to run it and how to read the figures.

pub mod allocations;
mod cases;
mod error;
mod ours;
mod reference;
mod report;
mod timing;

use std::time::Duration;

use bytes::Bytes;

pub use cases::{
    CaseId, build_create_request, build_get_children2_reply, build_get_data_reply,
    build_watcher_event, decode_create_request, decode_create_request_view,
    decode_get_children2_reply, decode_get_data_reply, decode_watcher_event,
    decode_watcher_event_view,
};
pub use error::BenchError;
pub use ours::{Ours, measure_ours};
pub use reference::{JavaReport, JavaTools};
pub use report::{Machine, Report, Row};
pub use timing::{Measurement, measure};

/// What to tell someone whose Java or ZooKeeper jars are missing.
pub const INSTALL_HINT: &str = "run scripts/install-deps.sh (Debian: apt-get install -y \
     default-jre-headless default-jdk-headless zookeeper), point ZK_CLASSPATH at the ZooKeeper \
     jars, or pass --no-java to time only our codec";

/// Command-line options of the codec benchmark (the `codec` binary's command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::Parser)]
#[command(
    name = "codec",
    override_usage = "cargo run --release -p zk-benches --bin codec -- [--json] [--quick] [--no-java]",
    about = "Encode and decode throughput of the jute codec against the reference Java serializer\
             \n(ZooKeeper 3.8 zookeeper-jute.jar) on the same bytes, with the ratio ours/reference\
             \n(below 1: we are faster).",
    after_help = "Environment: ZK_JAVA (java binary), ZK_CLASSPATH (ZooKeeper jars, default \
                  /usr/share/java).",
    help_template = crate::args::HELP_TEMPLATE,
    max_term_width = crate::args::HELP_WIDTH,
    args_override_self = true
)]
pub struct Options {
    /// print one JSON document on stdout instead of the table
    #[arg(long)]
    pub json: bool,
    /// a short run (a few seconds; smoke tests, not for quoting figures)
    #[arg(long)]
    pub quick: bool,
    /// skip the reference (no cross-check, no ratios)
    #[arg(long)]
    pub no_java: bool,
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
        let ours = measure_ours(*case, frame, &settings)?;
        rows.push(Row {
            case: *case,
            bytes: frame.len(),
            ours_decode: ours.decode,
            ours_owned_decode: ours.owned_decode,
            ours_encode: ours.encode,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_consistent() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
    }

    #[test]
    fn options_parse() {
        use clap::Parser as _;
        assert_eq!(
            Options::try_parse_from(["codec", "--json", "--quick"]).ok(),
            Some(Options {
                json: true,
                quick: true,
                no_java: false
            })
        );
        let help = Options::try_parse_from(["codec", "--help"]).expect_err("help");
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(
            help.to_string()
                .starts_with("usage: cargo run --release -p zk-benches --bin codec")
        );
        assert!(Options::try_parse_from(["codec", "--fast"]).is_err());
    }
}
