//! The read low-water mark on a real TCP socket (Linux), against a scripted server: replies
//! under a deep pipeline are gathered by the kernel, released by the session's time limit
//! when fewer come, and read at once when enough do. A log of the marks set and the bytes
//! read, in order, tells which happened, whatever the machine's speed.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::{SinkExt, StreamExt};
use jute::{
    ConnectRequest, ConnectResponse, ErrorCode, GetDataResponse, OpCode, ReplyHeader,
    RequestHeader, Stat, decode_exact,
};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio_util::codec::Framed;

use super::Dialer;
use crate::Client;
use crate::transport::{Connecting, ReadHalf, ReadSide, WriteHalf};

/// What the connection's read side did, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// A mark was set on the socket.
    Mark(usize),
    /// Bytes were read.
    Read(usize),
    /// The server wrote a batch of replies (logged by the script, same order).
    Wrote,
}

type Log = watch::Sender<Vec<Step>>;

/// The read half of a TCP connection that sets each mark on its socket, and logs the marks
/// and the reads.
struct Logged {
    inner: tokio::net::tcp::OwnedReadHalf,
    log: Log,
}

impl AsyncRead for Logged {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.log.send_modify(|log| log.push(Step::Read(read)));
        }
        polled
    }
}

impl ReadSide for Logged {
    fn set_read_low_water(&mut self, bytes: usize) -> io::Result<bool> {
        let set = self.inner.set_read_low_water(bytes)?;
        self.log.send_modify(|log| log.push(Step::Mark(bytes)));
        Ok(set)
    }
}

fn logging_dialer(addr: SocketAddr, log: Log) -> Dialer {
    std::sync::Arc::new(move |_host| {
        let log = log.clone();
        Box::pin(async move {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (read, write) = stream.into_split();
            let read = Logged { inner: read, log };
            Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
        }) as Connecting
    })
}

type ServerEnd = Framed<TcpStream, jute::FrameCodec>;

/// Accepts the client's connection and completes the handshake.
async fn accept(listener: &TcpListener) -> ServerEnd {
    let (stream, _) = listener.accept().await.expect("accept");
    let mut server = Framed::new(stream, jute::FrameCodec::new());
    let frame = server
        .next()
        .await
        .expect("a frame")
        .expect("a valid frame");
    decode_exact::<ConnectRequest>(frame).expect("a ConnectRequest");
    let response = ConnectResponse {
        protocol_version: 0,
        time_out: 30_000,
        session_id: 0x6a,
        passwd: Some(bytes::Bytes::from_static(&[6; 16])),
        read_only: Some(false),
    };
    server.send(response).await.expect("send");
    server
}

/// Writes getData replies for `xids` in one go, and logs it.
async fn answer(server: &mut ServerEnd, xids: &[i32], log: &Log) {
    for &xid in xids {
        let header = ReplyHeader {
            xid,
            zxid: 9,
            err: ErrorCode::OK,
        };
        let body = GetDataResponse {
            data: Some(bytes::Bytes::from_static(b"gathered")),
            stat: Stat::default(),
        };
        server.feed((header, body)).await.expect("feed");
    }
    SinkExt::<(ReplyHeader, GetDataResponse)>::flush(server)
        .await
        .expect("flush");
    log.send_modify(|log| log.push(Step::Wrote));
}

/// The mark in effect at each step of `log` (1 before any was set).
fn mark_at(log: &[Step], at: usize) -> usize {
    log[..at]
        .iter()
        .rev()
        .find_map(|step| match step {
            Step::Mark(mark) => Some(*mark),
            _ => None,
        })
        .unwrap_or(1)
}

/// The steps after the `n`th write (0-based) up to the first read after it; checks that the
/// write came while a raised mark was set.
fn after_write(log: &[Step], n: usize) -> &[Step] {
    let wrote = log
        .iter()
        .enumerate()
        .filter(|(_, step)| **step == Step::Wrote)
        .nth(n)
        .map(|(at, _)| at)
        .expect("the write was logged");
    let read = log[wrote..]
        .iter()
        .position(|step| matches!(step, Step::Read(_)))
        .expect("a read after the write");
    assert!(
        mark_at(log, wrote) > 1,
        "written under a raised mark: {log:?}"
    );
    &log[wrote + 1..wrote + read]
}

#[tokio::test]
async fn replies_below_the_mark_are_released_by_the_time_limit_and_a_batch_is_read_at_once() {
    const DEEP: usize = 100;
    // Long enough that the script's next write always lands inside it, however slow the
    // machine: the test is about which event releases the replies, not how fast.
    const LIMIT: Duration = Duration::from_secs(1);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (log, mut seen) = watch::channel(Vec::new());
    let (go_three, answer_three) = oneshot::channel::<()>();
    let (go_rest, answer_rest) = oneshot::channel::<()>();
    let server_log = log.clone();
    let server = tokio::spawn(async move {
        let mut server = accept(&listener).await;
        let mut xids = Vec::new();
        while xids.len() < DEEP {
            let frame = server.next().await.expect("a frame").expect("valid");
            let header: RequestHeader = decode_exact(frame.slice(..8)).expect("header");
            assert_eq!(header.op_code, OpCode::GET_DATA);
            xids.push(header.xid);
        }
        answer(&mut server, &xids[..1], &server_log).await;
        answer_three.await.expect("the test goes on");
        answer(&mut server, &xids[1..4], &server_log).await;
        answer_rest.await.expect("the test goes on");
        answer(&mut server, &xids[4..], &server_log).await;
        // Open until the client is done (it may send requests of its own meanwhile).
        while let Some(Ok(_)) = server.next().await {}
    });
    let client = Client::builder()
        .session_timeout(Duration::from_secs(30))
        .request_timeout(None)
        .read_gather_limit(LIMIT)
        .close_timeout(Duration::from_millis(100))
        .connect_with("127.0.0.1:2181", logging_dialer(addr, log))
        .await
        .expect("connect");
    let calls: Vec<_> = (0..DEEP)
        .map(|i| Box::pin(client.get_data(&format!("/n{i}"))))
        .collect();
    let mut calls = calls.into_iter();
    let within = |what: &'static str| move |_| panic!("{what} never came");
    let first = calls.next().expect("call 0");
    tokio::time::timeout(10 * LIMIT, first)
        .await
        .unwrap_or_else(within("the first reply"))
        .expect("the first reply");
    // The first reply read, the deep pipeline gathers again: then three replies (some 300
    // bytes) come, under a mark of 1 KiB.
    let reads_so_far = |log: &Vec<Step>| log.iter().filter(|s| matches!(s, Step::Read(_))).count();
    let reads = reads_so_far(&seen.borrow());
    seen.wait_for(|log| {
        log.iter()
            .rev()
            .take_while(|step| !matches!(step, Step::Read(_)))
            .any(|step| matches!(step, Step::Mark(mark) if *mark > 1))
            && reads_so_far(log) == reads
    })
    .await
    .expect("the mark raised after the first reply");
    let _ = go_three.send(());
    for call in calls.by_ref().take(3) {
        tokio::time::timeout(10 * LIMIT, call)
            .await
            .unwrap_or_else(within("a reply of the three"))
            .expect("a reply");
    }
    {
        let log = seen.borrow();
        assert_eq!(
            after_write(&log, 1).last(),
            Some(&Step::Mark(1)),
            "held by the kernel until the time limit lowered the mark: {log:?}"
        );
    }
    let mut rest: Vec<_> = calls.collect();
    assert!(
        futures_util::FutureExt::now_or_never(&mut rest[0]).is_none(),
        "the others are not answered yet"
    );

    // Then the other 96 replies (some 9 KiB), above the mark: read at once.
    seen.wait_for(|log| matches!(log.last(), Some(Step::Mark(mark)) if *mark > 1))
        .await
        .expect("the mark raised after the three");
    let _ = go_rest.send(());
    for call in rest {
        let (data, _) = tokio::time::timeout(10 * LIMIT, call)
            .await
            .unwrap_or_else(within("a reply of the rest"))
            .expect("a reply");
        assert_eq!(&data[..], b"gathered");
    }
    let log = seen.borrow().clone();
    assert!(
        after_write(&log, 2).is_empty(),
        "read with no change of the mark: {log:?}"
    );
    assert_eq!(
        mark_at(&log, log.len()),
        1,
        "a shallow pipeline: every byte: {log:?}"
    );
    drop(client);
    server.await.expect("the server script passed");
}
