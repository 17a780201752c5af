//! What the scale benchmarks share (`idle_sessions`, `many_watches`, `lock_contenders`, and
//! the tree cache at a million nodes): the process's memory, its file-descriptor limit, the
//! server's counters (`mntr`, `srvr`), percentiles, and a proxy that counts the client's
//! request frames by op code and size and can cut every connection.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), if readable.
pub fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status
        .lines()
        .find(|l| l.split(':').next() == Some(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Resident memory now (`VmRSS`), in bytes.
pub fn rss() -> Option<u64> {
    status_bytes("VmRSS")
}

/// Another process's CPU time (user + system) from `/proc/<pid>/stat`: clock ticks of 10 ms
/// (`CLK_TCK` is 100 on Linux), so read it over seconds, not milliseconds.
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Raises the soft limit of open files (`RLIMIT_NOFILE`) to the hard limit when it is below
/// `need`, so that one process may hold `need` sockets; a local server started afterwards
/// inherits it. Returns the soft limit in force.
///
/// # Errors
///
/// When the hard limit is below `need` (say which, and how to raise it), or the limit cannot
/// be read or set.
pub fn raise_nofile(need: u64) -> Result<u64, String> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= need {
        return Ok(soft);
    }
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if hard < need {
        return Err(format!(
            "{need} open files needed, the hard limit is {hard} (raise it: `ulimit -Hn {need}` \
             as root, or LimitNOFILE= for a service)"
        ));
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    )
    .map_err(|e| format!("raising the open-files limit to {hard}: {e}"))?;
    Ok(hard)
}

/// The numeric counters of one `mntr` answer, by key (`zk_packets_received`, ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mntr(BTreeMap<String, f64>);

impl Mntr {
    /// Reads `mntr` on every server of `addrs` and sums each counter over them.
    ///
    /// # Errors
    ///
    /// A server that does not answer `mntr` (it must be whitelisted: `4lw.commands.whitelist`).
    pub fn read(addrs: &[SocketAddr]) -> io::Result<Mntr> {
        let mut sum = BTreeMap::new();
        for &addr in addrs {
            let answer = zk_testkit::four_letter(addr, "mntr", Duration::from_secs(10))?;
            for (key, value) in Mntr::parse(&answer).0 {
                *sum.entry(key).or_insert(0.0) += value;
            }
        }
        Ok(Mntr(sum))
    }

    /// The numeric lines of an `mntr` answer (`key<TAB>value`).
    pub fn parse(answer: &str) -> Mntr {
        Mntr(
            answer
                .lines()
                .filter_map(|line| {
                    let (key, value) = line.split_once('\t')?;
                    Some((key.trim().to_owned(), value.trim().parse().ok()?))
                })
                .collect(),
        )
    }

    /// One counter, if the servers report it.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.0.get(key).copied()
    }

    /// `after[key] - self[key]`, if both have it.
    pub fn delta(&self, after: &Mntr, key: &str) -> Option<f64> {
        Some(after.get(key)? - self.get(key)?)
    }
}

/// The largest `Zxid` of `srvr` over the servers of `addrs`: a session that expires or closes
/// commits a transaction, so an unchanged zxid over a stretch with no writes proves none did.
pub fn zxid(addrs: &[SocketAddr]) -> Option<i64> {
    addrs
        .iter()
        .filter_map(|&addr| {
            let answer = zk_testkit::four_letter(addr, "srvr", Duration::from_secs(10)).ok()?;
            answer.lines().find_map(|l| {
                let hex = l.trim().strip_prefix("Zxid: 0x")?;
                i64::from_str_radix(hex.trim(), 16).ok()
            })
        })
        .max()
}

/// A local server for a scale run: the full JIT ([`PRODUCTION_JIT`](crate::latency::PRODUCTION_JIT)),
/// the small machine's thread settings ([`SMALL_MACHINE_SERVER`](crate::latency::SMALL_MACHINE_SERVER))
/// and a heap of `heap_mb` MiB. Says `<program>: starting a local ZooKeeper (<what>)...` on
/// standard error.
pub fn tuned_server(program: &str, what: &str, heap_mb: u32) -> zk_testkit::ZkServerBuilder {
    eprintln!("{program}: starting a local ZooKeeper ({what})...");
    let mut builder = zk_testkit::ZkServer::builder()
        .jvm_arg(crate::latency::PRODUCTION_JIT)
        .max_heap_mb(heap_mb);
    for (key, value) in crate::latency::SMALL_MACHINE_SERVER {
        builder = builder.system_property(key, value);
    }
    builder
}

/// The `p`-th percentile (0..=100) of sorted `values`, nearest rank; `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Durations in microseconds, sorted.
pub fn sorted_us(samples: &[Duration]) -> Vec<f64> {
    let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    us
}

/// A TCP proxy on loopback that counts the request frames clients send through it, by op code,
/// with the size of each frame of the op codes it is told to record, and that can cut every
/// connection it relays (the client then reconnects through it). Dropping it cuts everything
/// and stops accepting.
///
/// Client-to-server bytes are relayed as they come, one write per read, while a small state
/// machine follows the frame boundaries (a 4-byte length, then for every frame but the first
/// of a connection, the ConnectRequest, the request header's xid and op code). Server-to-client
/// bytes are copied untouched.
#[derive(Debug)]
pub struct FrameProxy {
    addr: SocketAddr,
    shared: Arc<ProxyShared>,
    accept: AbortHandle,
}

#[derive(Debug)]
struct ProxyShared {
    target: SocketAddr,
    /// Op codes whose frame sizes are kept.
    recorded: Vec<i32>,
    counts: Mutex<HashMap<i32, u64>>,
    /// `(op code, frame size with its length prefix, when it was relayed)` of the recorded op
    /// codes, in order.
    frames: Mutex<Vec<(i32, usize, Instant)>>,
    /// When each connection's ConnectRequest was relayed, and its server's first bytes (the
    /// ConnectResponse).
    connects: Mutex<Vec<Instant>>,
    first_replies: Mutex<Vec<Instant>>,
    links: Mutex<Vec<AbortHandle>>,
    accepted: Mutex<u64>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl FrameProxy {
    /// Starts a proxy to `target` on a free loopback port; the sizes of the frames with an op
    /// code in `recorded` are kept.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound.
    pub async fn start(target: SocketAddr, recorded: &[i32]) -> io::Result<FrameProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(ProxyShared {
            target,
            recorded: recorded.to_vec(),
            counts: Mutex::default(),
            frames: Mutex::default(),
            connects: Mutex::default(),
            first_replies: Mutex::default(),
            links: Mutex::default(),
            accepted: Mutex::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone())).abort_handle();
        Ok(FrameProxy {
            addr,
            shared,
            accept,
        })
    }

    /// The proxy's address, to connect to.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        *lock(&self.shared.accepted)
    }

    /// Frames with op code `op` relayed so far.
    pub fn count(&self, op: i32) -> u64 {
        lock(&self.shared.counts).get(&op).copied().unwrap_or(0)
    }

    /// Every op code seen, with its count.
    pub fn counts(&self) -> BTreeMap<i32, u64> {
        lock(&self.shared.counts)
            .iter()
            .map(|(&k, &v)| (k, v))
            .collect()
    }

    /// The sizes (length prefix included) of the recorded frames of op code `op`, in order.
    pub fn frame_sizes(&self, op: i32) -> Vec<usize> {
        self.frames(op).into_iter().map(|(len, _)| len).collect()
    }

    /// The recorded frames of op code `op`: their sizes (length prefix included) and when each
    /// was relayed, in order.
    pub fn frames(&self, op: i32) -> Vec<(usize, Instant)> {
        lock(&self.shared.frames)
            .iter()
            .filter(|(o, _, _)| *o == op)
            .map(|&(_, len, at)| (len, at))
            .collect()
    }

    /// When each connection's ConnectRequest was relayed to the server, in order.
    pub fn connect_requests(&self) -> Vec<Instant> {
        lock(&self.shared.connects).clone()
    }

    /// When each connection's first bytes from the server (its ConnectResponse) came, in order.
    pub fn first_replies(&self) -> Vec<Instant> {
        lock(&self.shared.first_replies).clone()
    }

    /// Closes every relayed connection, on both sides. New connections are accepted.
    pub fn cut(&self) {
        for link in lock(&self.shared.links).drain(..) {
            link.abort();
        }
    }
}

impl Drop for FrameProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<ProxyShared>) {
    while let Ok((inbound, _)) = listener.accept().await {
        *lock(&shared.accepted) += 1;
        let Ok(outbound) = TcpStream::connect(shared.target).await else {
            continue;
        };
        let _ = inbound.set_nodelay(true);
        let _ = outbound.set_nodelay(true);
        let (client_read, mut client_write) = inbound.into_split();
        let (mut server_read, server_write) = outbound.into_split();
        let up = tokio::spawn(relay_requests(client_read, server_write, shared.clone()));
        let replies = shared.clone();
        let down = tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut first = true;
            loop {
                let n = match server_read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if first {
                    lock(&replies.first_replies).push(Instant::now());
                    first = false;
                }
                if client_write.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            let _ = client_write.shutdown().await;
        });
        let mut links = lock(&shared.links);
        links.retain(|l| !l.is_finished());
        links.push(up.abort_handle());
        links.push(down.abort_handle());
    }
}

/// Where the request relay is in the byte stream.
#[derive(Debug, Default)]
struct FrameParser {
    /// The bytes of the current frame's head read so far: length, xid, op code.
    head: [u8; 12],
    have: usize,
    /// Body bytes of the current frame still to pass.
    skip: usize,
    /// The connection's first frame (the ConnectRequest, which has no request header) is done.
    past_connect: bool,
}

impl FrameParser {
    /// Follows `bytes`; calls `frame(op, size)` for each frame whose head is complete (`op`
    /// `None` for the ConnectRequest).
    fn feed(&mut self, mut bytes: &[u8], mut frame: impl FnMut(Option<i32>, usize)) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let want = if self.past_connect { 12 } else { 4 };
            let n = (want - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have < want {
                continue;
            }
            let len = u32::from_be_bytes([self.head[0], self.head[1], self.head[2], self.head[3]])
                as usize;
            if self.past_connect {
                let op =
                    i32::from_be_bytes([self.head[8], self.head[9], self.head[10], self.head[11]]);
                frame(Some(op), len + 4);
                self.skip = len.saturating_sub(8);
            } else {
                frame(None, len + 4);
                self.skip = len;
                self.past_connect = true;
            }
            self.have = 0;
        }
    }
}

async fn relay_requests(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    shared: Arc<ProxyShared>,
) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut parser = FrameParser::default();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let now = Instant::now();
            let mut counts = lock(&shared.counts);
            let mut frames = lock(&shared.frames);
            parser.feed(&buf[..n], |op, size| {
                let Some(op) = op else {
                    lock(&shared.connects).push(now);
                    return;
                };
                *counts.entry(op).or_insert(0) += 1;
                if shared.recorded.contains(&op) {
                    frames.push((op, size, now));
                }
            });
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(op: i32, body_len: usize) -> Vec<u8> {
        let mut f = ((8 + body_len) as u32).to_be_bytes().to_vec();
        f.extend(7_i32.to_be_bytes());
        f.extend(op.to_be_bytes());
        f.extend(std::iter::repeat_n(0xAB, body_len));
        f
    }

    #[test]
    fn the_parser_follows_frames_across_any_split() {
        let mut stream = 5_u32.to_be_bytes().to_vec();
        stream.extend([1, 2, 3, 4, 5]);
        stream.extend(frame(101, 300));
        stream.extend(frame(11, 0));
        stream.extend(frame(3, 20));
        for chunk in [1, 3, 7, 64, 1000] {
            let mut parser = FrameParser::default();
            let mut seen = Vec::new();
            for piece in stream.chunks(chunk) {
                parser.feed(piece, |op, size| seen.push((op, size)));
            }
            assert_eq!(
                seen,
                [(None, 9), (Some(101), 312), (Some(11), 12), (Some(3), 32)],
                "chunks of {chunk}"
            );
        }
    }

    #[test]
    fn mntr_lines_parse_and_subtract() {
        let before = Mntr::parse("zk_version\t3.8.0\nzk_packets_received\t10\nzk_avg_x\t1.5\n");
        let after = Mntr::parse("zk_packets_received\t25\nzk_avg_x\t2.5\n");
        assert_eq!(before.get("zk_version"), None);
        assert_eq!(before.delta(&after, "zk_packets_received"), Some(15.0));
        assert_eq!(before.delta(&after, "zk_missing"), None);
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), Some(50.0));
        assert_eq!(percentile(&values, 99.0), Some(99.0));
        assert_eq!(percentile(&values, 100.0), Some(100.0));
        assert_eq!(percentile(&[3.0], 1.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
