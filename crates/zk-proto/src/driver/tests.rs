//! The driver over in-memory streams on a paused clock, and against scripted TCP servers.

use super::*;
use crate::session::SessionConfig;
use crate::transport::{ReadHalf, WriteHalf};
use futures_util::SinkExt;
use jute::{Encode, FrameCodec, ReplyHeader, WatcherEvent};
use tokio::io::DuplexStream;
use tokio_util::codec::Framed;

fn driver(hosts: u16) -> Driver {
    let hosts = (1..=hosts).map(|port| HostAddr::new("h", port)).collect();
    let (_, commands) = mpsc::unbounded_channel();
    let (published, _) = watch::channel(Published {
        state: SessionState::Connecting,
        session_id: 0,
        password: crate::Secret::default(),
        hosts: Arc::from(Vec::new()),
        server: None,
        negotiated_timeout: None,
        auth_failure: None,
        gave_up_with: None,
    });
    let (states, _) = watch::channel(SessionState::Connecting);
    Driver {
        session: Session::new(SessionConfig {
            hosts,
            shuffle_hosts: false,
            ..SessionConfig::default()
        }),
        dialer: tcp_dialer(),
        probes: crate::transport::Transport::Tcp,
        commands,
        published,
        states,
        max_frame_len: jute::DEFAULT_MAX_FRAME_LEN,
        first_connect: None,
        replies: IdMap::default(),
        watches: IdMap::default(),
        stamps: crate::request_timing::SendStamps::new(crate::request_timing::Recorder::new()),
    }
}

fn connect_response(timeout_ms: i32, session_id: i64) -> ConnectResponse {
    ConnectResponse {
        protocol_version: 0,
        time_out: timeout_ms,
        session_id,
        passwd: Some(Bytes::from_static(&[2; 16])),
        read_only: Some(false),
    }
}

use jute::ConnectResponse;

/// A frame body sent as is (to send malformed ones).
#[derive(Clone)]
struct RawFrame(Bytes);

impl Encode for RawFrame {
    fn encoded_len(&self) -> usize {
        self.0.len()
    }
    fn encode<B: bytes::BufMut>(&self, buf: &mut B) {
        buf.put_slice(&self.0);
    }
}

#[test]
fn the_session_is_published_before_connect_returns() {
    let mut d = driver(1);
    let (tx, mut first) = oneshot::channel();
    d.first_connect = Some(tx);
    let mut states = d.states.subscribe();
    let now = Instant::now().into_std();
    d.session.handle_connected(now);
    assert!(d.session.poll_transmit(now).is_some(), "a ConnectRequest");
    d.session
        .handle_frame(now, connect_response(30_000, 0x55).to_bytes());
    while let Some(event) = d.session.poll_event() {
        d.dispatch(event);
        if first.try_recv().is_ok() {
            // The moment `connect` may return, the handle already sees the session.
            let published = d.published.borrow().clone();
            assert_eq!(published.session_id, 0x55);
            assert_eq!(published.state, SessionState::Connected);
            assert_eq!(published.negotiated_timeout, Some(Duration::from_secs(30)));
            // So do the state watchers (a lock guard's validity), with no task between.
            assert!(states.has_changed().expect("driver alive"));
            assert_eq!(*states.borrow_and_update(), SessionState::Connected);
            return;
        }
    }
    panic!("connect was never told");
}

/// A dialer of in-memory streams of `capacity` bytes each way: the test gets the server
/// end of every connection the client opens, and the connections are counted.
fn duplex_dialer(
    capacity: usize,
) -> (
    Dialer,
    mpsc::UnboundedReceiver<Framed<DuplexStream, FrameCodec>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let dialer: Dialer = Arc::new(move |_host: HostAddr| {
        let (client, server) = tokio::io::duplex(capacity);
        let _ = tx.send(Framed::new(server, FrameCodec::new()));
        Box::pin(async move {
            let (read, write) = tokio::io::split(client);
            Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
        }) as Connecting
    });
    (dialer, rx)
}

/// Reads the ConnectRequest on `server` and answers it with a session.
async fn handshake(server: &mut Framed<DuplexStream, FrameCodec>, timeout_ms: i32) {
    let request = server
        .next()
        .await
        .expect("a ConnectRequest")
        .expect("a frame");
    let request: jute::ConnectRequest = jute::decode_exact(request).expect("decodes");
    let session_id = if request.session_id == 0 {
        0x66
    } else {
        request.session_id
    };
    server
        .send(connect_response(timeout_ms, session_id))
        .await
        .expect("send");
}

/// Waits (on the paused clock) until the client's state is `state`; fails after a
/// minute of virtual time instead of hanging.
async fn wait_state(client: &crate::Client, state: SessionState) -> Instant {
    let mut states = client.state_watcher();
    tokio::time::timeout(Duration::from_secs(60), states.wait_for(|s| *s == state))
        .await
        .unwrap_or_else(|_| panic!("never {state}; still {}", client.state()))
        .expect("client alive");
    Instant::now()
}

#[tokio::test(start_paused = true)]
async fn a_write_the_server_never_takes_does_not_stop_the_session_clock() {
    // A server that completes the handshake, then never reads: the client's writes
    // fill the 1 KiB stream and stay pending.
    let (dialer, mut accepted) = duplex_dialer(1024);
    let connecting = tokio::spawn(
        crate::Client::builder()
            .session_timeout(Duration::from_secs(3))
            .connect_with("127.0.0.1:2181", dialer),
    );
    let mut server = accepted.recv().await.expect("a connection");
    let handshake_sent = Instant::now();
    handshake(&mut server, 3_000).await;
    let client = connecting.await.expect("task").expect("connected");
    let calls: Vec<_> = (0..60)
        .map(|_| client.set_data("/n", vec![7u8; 900_000], None))
        .collect();
    // Read timeout 2T/3 after the last frame received (the handshake reply): the
    // connection is dropped although a write is still pending.
    let disconnected = wait_state(&client, SessionState::Disconnected).await;
    assert_eq!(
        disconnected - handshake_sent,
        Duration::from_secs(2),
        "the read timeout fired on time"
    );
    // Nothing answers the reconnection's handshakes: expired T after the handshake was
    // sent, the last thing the server answered.
    let expired = wait_state(&client, SessionState::Expired).await;
    assert_eq!(expired - handshake_sent, Duration::from_secs(3));
    // Every call got a definite answer: the one being written lost its connection, the
    // ones never written failed with the session.
    let mut lost = 0;
    for call in calls {
        match call.await {
            Err(Error::ConnectionLoss) => lost += 1,
            Err(Error::SessionExpired) => {}
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert!(
        lost >= 1,
        "the request being written failed with ConnectionLoss"
    );
    drop(server);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_breaks_every_connection_gets_a_handful_of_attempts_per_second() {
    let (dialer, mut accepted) = duplex_dialer(64 * 1024);
    let connecting = tokio::spawn(
        crate::Client::builder()
            .session_timeout(Duration::from_secs(30))
            .connect_with("127.0.0.1:2181", dialer),
    );
    let mut server = accepted.recv().await.expect("a connection");
    handshake(&mut server, 30_000).await;
    let client = connecting.await.expect("task").expect("connected");
    let session_id = client.session_id();
    // From now on: every connection gets its session back, then a malformed watch event.
    let started = Instant::now();
    let malformed = (
        ReplyHeader {
            xid: -1,
            zxid: 0,
            err: jute::ErrorCode::OK,
        },
        WatcherEvent {
            event_type: jute::EventType(1),
            state: jute::KeeperState(3),
            path: Some("/a".into()),
        },
    )
        .to_bytes();
    let malformed = RawFrame(malformed.slice(..malformed.len() - 2));
    let mut connections = 0u32;
    let _ = server.send(malformed.clone()).await;
    drop(server);
    while started.elapsed() < Duration::from_secs(10) {
        let Ok(Some(mut server)) =
            tokio::time::timeout(Duration::from_secs(10), accepted.recv()).await
        else {
            break;
        };
        connections += 1;
        handshake(&mut server, 30_000).await;
        let _ = server.send(malformed.clone()).await;
    }
    // Doubling from 40 ms to the 1 s cap: about 8 attempts in the first 2 s, then at
    // most 2 per second (without the backoff: thousands per second).
    assert!(
        (8..=22).contains(&connections),
        "{connections} connections in 10 s"
    );
    // The server behaves again: the same session resumes.
    let mut server = accepted.recv().await.expect("a connection");
    handshake(&mut server, 30_000).await;
    wait_state(&client, SessionState::Connected).await;
    assert_eq!(client.session_id(), session_id);
    drop(server);
}

/// A scripted server: the first connection gets a session (timeout `timeout_ms`) and
/// is closed; every later one is accepted and closed at once. Counts the connections.
async fn flaky_server(timeout_ms: i32) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::AtomicUsize;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            if count.fetch_add(1, Ordering::SeqCst) > 0 {
                continue;
            }
            let mut framed = Framed::new(stream, FrameCodec::new());
            let _ = framed.next().await;
            let _ = framed.send(connect_response(timeout_ms, 0x66)).await;
        }
    });
    (addr, accepted)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_abandons_the_attempt_waiting_for_its_backoff() {
    // A 1 s session: local expiry 1 s after the loss, while the client backs off
    // (an attempt is always pending then).
    let (addr, accepted) = flaky_server(1_000).await;
    let client = crate::Client::builder()
        .session_timeout(Duration::from_secs(1))
        .connect(&addr)
        .await
        .expect("connect");
    let mut states = client.state_watcher();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("expired in time")
    .expect("client alive");
    let at_expiry = accepted.load(Ordering::SeqCst);
    assert!(at_expiry >= 2, "it tried to reconnect");
    // Longer than the largest backoff (T/6): a window of observation.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        at_expiry,
        "no connection after the session expired"
    );
}

#[cfg(feature = "request-timing")]
#[tokio::test]
async fn request_timing_counts_each_request_when_written_and_each_reply_when_read() {
    let (client, mut server) = connected_client().await;
    let before = client.request_timing();
    let calls: Vec<_> = (0..3).map(|_| client.delete("/n", None)).collect();
    for _ in 0..3 {
        let frame = server.next().await.expect("a request").expect("a frame");
        let xid = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let reply = ReplyHeader {
            xid,
            zxid: 1,
            err: jute::ErrorCode::OK,
        };
        server.send(reply).await.expect("send");
    }
    for call in calls {
        call.await.expect("deleted");
    }
    let timing = client.request_timing().since(&before);
    assert_eq!((timing.send.count(), timing.receive.count()), (3, 3));
    // A request written whose connection is then lost: sent, never received.
    let lost = client.delete("/n", None);
    server.next().await.expect("a request").expect("a frame");
    drop(server);
    assert_eq!(lost.await, Err(Error::ConnectionLoss));
    let timing = client.request_timing().since(&before);
    assert_eq!((timing.send.count(), timing.receive.count()), (4, 3));
}

/// Connects a client (session timeout 30 s, no reads of the ensemble's configuration) over
/// an in-memory stream; returns it with the server's end.
async fn connected_client() -> (crate::Client, Framed<DuplexStream, FrameCodec>) {
    let (dialer, mut accepted) = duplex_dialer(64 * 1024);
    let connecting = tokio::spawn(
        crate::Client::builder()
            .session_timeout(Duration::from_secs(30))
            .follow_ensemble(false)
            .connect_with("127.0.0.1:2181", dialer),
    );
    let mut server = accepted.recv().await.expect("a connection");
    handshake(&mut server, 30_000).await;
    let client = connecting.await.expect("task").expect("connected");
    (client, server)
}

/// The xid of a request frame.
fn xid_of(frame: &[u8]) -> i32 {
    i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]])
}

fn ok_reply(xid: i32) -> ReplyHeader {
    ReplyHeader {
        xid,
        zxid: 1,
        err: jute::ErrorCode::OK,
    }
}

#[tokio::test(start_paused = true)]
async fn replies_read_in_one_go_are_each_handed_over_and_a_violation_is_the_last_frame_read() {
    let (client, mut server) = connected_client().await;
    let calls: Vec<_> = (0..4).map(|_| client.delete("/n", None)).collect();
    let mut xids = Vec::new();
    for _ in 0..4 {
        let frame = server.next().await.expect("a request").expect("a frame");
        xids.push(xid_of(&frame));
    }
    // One write, so the client reads the four replies together: two answers, a reply to
    // no request in flight, then the answer to the fourth request.
    for xid in [xids[0], xids[1], xids[3] + 100, xids[3]] {
        server.feed(ok_reply(xid)).await.expect("send");
    }
    SinkExt::<ReplyHeader>::flush(&mut server)
        .await
        .expect("flush");
    let mut outcomes = Vec::new();
    for call in calls {
        outcomes.push(call.await);
    }
    // The frame out of order drops the connection: the one after it was never handed to the
    // session (it belonged to the dropped connection), so its call fails as lost.
    assert_eq!(
        outcomes,
        [
            Ok(()),
            Ok(()),
            Err(Error::ConnectionLoss),
            Err(Error::ConnectionLoss)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn many_replies_read_in_one_go_all_reach_their_callers_in_order() {
    let (client, mut server) = connected_client().await;
    // More than one turn of the loop takes (256 frames), in one write.
    let calls: Vec<_> = (0..600).map(|i| client.exists(&format!("/n{i}"))).collect();
    let mut xids = Vec::new();
    for _ in 0..600 {
        let frame = server.next().await.expect("a request").expect("a frame");
        xids.push(xid_of(&frame));
    }
    for (i, xid) in xids.iter().enumerate() {
        let stat = jute::Stat {
            version: i32::try_from(i).expect("small"),
            ..jute::Stat::default()
        };
        server.feed((ok_reply(*xid), stat)).await.expect("send");
    }
    SinkExt::<ReplyHeader>::flush(&mut server)
        .await
        .expect("flush");
    for (i, call) in calls.into_iter().enumerate() {
        let stat = call.await.expect("answered").expect("exists");
        assert_eq!(stat.version, i32::try_from(i).expect("small"));
    }
}

#[tokio::test(start_paused = true)]
async fn request_timeouts_fire_on_time_when_each_is_earlier_than_the_timer_armed() {
    let (client, mut server) = connected_client().await;
    let start = Instant::now();
    // The timer is armed for the ping; each request's deadline comes before the one armed.
    let slow = client
        .with_request_timeout(Duration::from_secs(5))
        .delete("/slow", None);
    let fast = client
        .with_request_timeout(Duration::from_secs(1))
        .delete("/fast", None);
    for _ in 0..2 {
        server.next().await.expect("a request").expect("a frame");
    }
    // The server answers neither.
    assert_eq!(fast.await, Err(Error::RequestTimeout));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(slow.await, Err(Error::RequestTimeout));
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    // The timer moves on to the ping: one comes a ping interval after the last write.
    let ping = server.next().await.expect("a ping").expect("a frame");
    assert_eq!(xid_of(&ping), jute::codes::xid::PING);
    drop(server);
}

#[test]
fn request_ids_spread_over_the_map() {
    use std::hash::BuildHasher;
    // Consecutive ids, as the session hands them out, land in distinct buckets of a table
    // of their number (the low bits hashbrown indexes with) and differ in their top bits
    // (its control bytes).
    let build = BuildHasherDefault::<IdHasher>::default();
    let hashes: Vec<u64> = (1..=1024u64)
        .map(|id| build.hash_one(RequestId(id)))
        .collect();
    let buckets: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
    assert_eq!(buckets.len(), 1024);
    let tops: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
    assert!(tops.len() > 100, "{} distinct top bits", tops.len());
    let mut map = IdMap::default();
    for id in 1..=1024 {
        map.insert(RequestId(id), id);
    }
    assert!((1..=1024).all(|id| map.get(&RequestId(id)) == Some(&id)));
}

#[tokio::test(start_paused = true)]
async fn a_call_future_holds_little_more_than_its_reply_channel() {
    let (client, mut server) = connected_client().await;
    // A caller that keeps many calls in flight moves each future into its queue and out:
    // they stay small (the `async` version held room for the reply, 120 bytes).
    let call = client.get_data("/n");
    assert!(
        std::mem::size_of_val(&call) <= 64,
        "{} bytes",
        std::mem::size_of_val(&call)
    );
    let frame = server.next().await.expect("a request").expect("a frame");
    let reply = jute::GetDataResponse {
        data: Some(Bytes::from_static(b"value")),
        stat: jute::Stat::default(),
    };
    server
        .send((ok_reply(xid_of(&frame)), reply))
        .await
        .expect("send");
    let (data, _) = call.await.expect("answered");
    assert_eq!(&data[..], b"value");
    // A call dropped before its reply: the reply is read and discarded, the next call is
    // answered with its own.
    let dropped = client.exists("/gone");
    let kept = client.exists("/kept");
    drop(dropped);
    for version in [1, 2] {
        let frame = server.next().await.expect("a request").expect("a frame");
        let stat = jute::Stat {
            version,
            ..jute::Stat::default()
        };
        server
            .send((ok_reply(xid_of(&frame)), stat))
            .await
            .expect("send");
    }
    let stat = kept.await.expect("answered").expect("exists");
    assert_eq!(stat.version, 2);
}

/// The op code of a request frame.
fn op_of(frame: &[u8]) -> i32 {
    i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]])
}

/// Reads request frames (answering pings) until a removeWatches; returns its body. Fails
/// after a minute of virtual time (the session's pings keep the connection up meanwhile).
async fn next_removal(
    server: &mut Framed<DuplexStream, FrameCodec>,
) -> (i32, jute::RemoveWatchesRequest) {
    let read = async {
        loop {
            let frame = server.next().await.expect("a request").expect("a frame");
            let op = op_of(&frame);
            if op == jute::OpCode::PING.0 {
                server.send(ok_reply(xid_of(&frame))).await.expect("send");
                continue;
            }
            assert_eq!(op, jute::OpCode::REMOVE_WATCHES.0, "only a removal is due");
            let body: jute::RemoveWatchesRequest =
                jute::decode_exact(frame.slice(8..)).expect("decodes");
            return (xid_of(&frame), body);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("a removeWatches within a minute")
}

/// Answers the addWatch request next on `server` with success.
async fn arm_watch(server: &mut Framed<DuplexStream, FrameCodec>) {
    let frame = server.next().await.expect("a request").expect("a frame");
    assert_eq!(op_of(&frame), jute::OpCode::ADD_WATCH.0);
    let answer = (
        ok_reply(xid_of(&frame)),
        jute::ErrorResponse {
            err: jute::ErrorCode::OK,
        },
    );
    server.send(answer).await.expect("send");
}

#[tokio::test(start_paused = true)]
async fn an_add_watch_dropped_before_its_reply_has_its_watch_removed_when_armed() {
    let (client, mut server) = connected_client().await;
    // The request is sent when the call is made; the caller gives up before the reply.
    drop(client.add_watch("/q", jute::AddWatchMode::PERSISTENT_RECURSIVE));
    arm_watch(&mut server).await;
    // No event on the path is needed for the watch to go.
    let (_, removal) = next_removal(&mut server).await;
    assert_eq!(removal.path.as_deref(), Some("/q"));
    assert_eq!(removal.watcher_type, jute::WatcherType::ANY);
}

#[tokio::test(start_paused = true)]
async fn an_add_watch_dropped_after_its_reply_arrived_but_before_it_was_taken_is_removed() {
    let (client, mut server) = connected_client().await;
    let pending = client.add_watch("/q", jute::AddWatchMode::PERSISTENT_RECURSIVE);
    arm_watch(&mut server).await;
    // A call answered after the addWatch: once it returns, the addWatch's reply has reached
    // the pending future, which nobody polls.
    let later = client.delete("/n", None);
    let frame = server.next().await.expect("a request").expect("a frame");
    server.send(ok_reply(xid_of(&frame))).await.expect("send");
    later.await.expect("deleted");
    drop(pending);
    let (_, removal) = next_removal(&mut server).await;
    assert_eq!(removal.path.as_deref(), Some("/q"));
}
