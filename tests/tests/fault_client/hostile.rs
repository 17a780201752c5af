//! The client against the hostile scripted server, one test per [`Misbehaviour`]: it drops
//! the connection promptly, fails what was in flight, and recovers.

use super::*;

/// Connects, sends two pipelined getData, lets the server misbehave in place of their
/// replies, and checks: both requests resolve with the expected typed errors within the
/// read timeout; the client closed the connection (promptly unless `prompt` is false); the
/// next connection resumes the same session and serves; exactly one reconnect happened.
async fn misbehaves_then_recovers(
    misbehaviour: Misbehaviour,
    session_timeout: Duration,
    expected_first: Error,
    prompt: bool,
) {
    let server = HostileServer::start(misbehaviour)
        .await
        .expect("hostile server");
    let client = connect_hostile(&server, session_timeout)
        .await
        .expect("the first handshake is correct");
    let session = client.session_id();
    let read_timeout = session_timeout * 2 / 3;

    let started = Instant::now();
    let first = client.get_data("/first");
    let second = client.get_data("/second");
    let (first, second) = within("the requests in flight", read_timeout + PROMPT, async {
        tokio::join!(first, second)
    })
    .await;
    let failed_after = started.elapsed();
    assert_eq!(first.map(|_| ()), Err(expected_first), "{misbehaviour:?}");
    assert_eq!(
        second.map(|_| ()),
        Err(Error::ConnectionLoss),
        "{misbehaviour:?}: the other request in flight"
    );
    assert_eq!(server.misbehaved_on(), Some(1));

    let reaction = within("the client closes", GUARD, server.reaction()).await;
    assert_eq!(reaction.connection, 1);
    if prompt {
        assert!(
            reaction.closed_after < PROMPT && failed_after < PROMPT,
            "{misbehaviour:?}: detected after {:?} / failed after {failed_after:?}, \
             not promptly (the read timeout is {read_timeout:?})",
            reaction.closed_after
        );
    } else {
        // Only the read timeout can end a silence; it did, and no later than it should.
        assert!(
            failed_after >= read_timeout / 2 && failed_after <= read_timeout + PROMPT,
            "{misbehaviour:?}: failed after {failed_after:?}, read timeout {read_timeout:?}"
        );
    }

    // The session recovers on the next connection.
    wait_for_state(&client, SessionState::Connected, GUARD).await;
    let (data, _) = within("getData after recovery", GUARD, client.get_data("/after"))
        .await
        .expect("served on the next connection");
    assert_eq!(&data[..], FIXED_DATA);
    assert_eq!(client.session_id(), session, "the same session");
    let requests = server.connect_requests();
    assert_eq!(requests.len(), 2, "{misbehaviour:?}: {requests:?}");
    assert_eq!(requests[0].session_id, 0);
    assert_eq!(
        requests[1].session_id, session,
        "asked to resume the session"
    );
    assert_eq!(server.connections(), 2, "exactly one reconnect, no loop");
    within("close", GUARD, client.close()).await.expect("close");
}

#[tokio::test]
async fn hostile_garbage_bytes() {
    misbehaves_then_recovers(
        Misbehaviour::Garbage,
        HOSTILE_TIMEOUT,
        Error::ConnectionLoss,
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_truncated_frame_then_silence_ends_at_the_read_timeout() {
    // A shorter session (read timeout 2 s): the silence lasts until it fires.
    misbehaves_then_recovers(
        Misbehaviour::TruncatedFrame,
        Duration::from_secs(3),
        Error::ConnectionLoss,
        false,
    )
    .await;
}

#[tokio::test]
async fn hostile_huge_length_prefix_is_refused_before_allocating() {
    // The typed error carries the length read from the prefix: the frame was judged by its
    // prefix alone. Had the client reserved the buffer and waited for the ~2 GiB body, only
    // the read timeout (8 s) would have ended the wait; `prompt` asserts it took under 2 s.
    let len = usize::try_from(HUGE_LENGTH).expect("positive");
    misbehaves_then_recovers(
        Misbehaviour::HugeLength,
        HOSTILE_TIMEOUT,
        Error::ReplyTooLarge {
            len,
            max: jute::DEFAULT_MAX_FRAME_LEN,
        },
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_negative_length_prefix() {
    misbehaves_then_recovers(
        Misbehaviour::NegativeLength,
        HOSTILE_TIMEOUT,
        Error::ConnectionLoss,
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_reply_for_an_unknown_xid() {
    misbehaves_then_recovers(
        Misbehaviour::UnknownXid,
        HOSTILE_TIMEOUT,
        Error::ConnectionLoss,
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_replies_out_of_order() {
    misbehaves_then_recovers(
        Misbehaviour::OutOfOrder,
        HOSTILE_TIMEOUT,
        Error::ConnectionLoss,
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_malformed_watch_event() {
    misbehaves_then_recovers(
        Misbehaviour::MalformedWatchEvent,
        HOSTILE_TIMEOUT,
        Error::ConnectionLoss,
        true,
    )
    .await;
}

#[tokio::test]
async fn hostile_connect_response_with_timeout_zero_expires_the_session() {
    // On the very first connection: connect itself reports the expiry.
    let server = HostileServer::start(Misbehaviour::ZeroTimeout)
        .await
        .expect("hostile server");
    let connected = connect_hostile(&server, HOSTILE_TIMEOUT).await;
    assert_eq!(connected.map(|_| ()), Err(Error::SessionExpired));
    let reaction = within("the client closes", GUARD, server.reaction()).await;
    assert!(reaction.closed_after < PROMPT, "{reaction:?}");
    assert_eq!(server.connections(), 1, "no reconnect after the expiry");

    // On a reconnect, with requests waiting for it: every one gets SessionExpired.
    let server = HostileServer::start_on(Misbehaviour::ZeroTimeout, 2)
        .await
        .expect("hostile server");
    let client = connect_hostile(&server, HOSTILE_TIMEOUT)
        .await
        .expect("the first handshake is correct");
    let session = client.session_id();
    server.hold_handshakes(true);
    server.cut();
    wait_for_state(&client, SessionState::Disconnected, GUARD).await;
    let paths: Vec<String> = (0..100).map(|i| format!("/pending-{i}")).collect();
    let pending: Vec<_> = paths.iter().map(|path| client.get_data(path)).collect();
    let requests = within("the reconnect", GUARD, server.wait_for_connect_requests(2)).await;
    assert_eq!(
        requests[1].session_id, session,
        "asked to resume the session"
    );
    server.hold_handshakes(false);
    for (i, request) in pending.into_iter().enumerate() {
        let result = within("a pending request", GUARD, request).await;
        assert_eq!(
            result.map(|_| ()),
            Err(Error::SessionExpired),
            "request {i}"
        );
        // A caller woken by the session's end reads the state that caused it.
        assert_eq!(client.state(), SessionState::Expired, "request {i}");
    }
    assert_eq!(
        client.get_data("/later").await.map(|_| ()),
        Err(Error::SessionExpired)
    );
    let reaction = within("the client closes", GUARD, server.reaction()).await;
    assert_eq!(reaction.connection, 2);
    assert!(reaction.closed_after < PROMPT, "{reaction:?}");
    assert_eq!(server.connections(), 2, "no reconnect after the expiry");

    // The server behaves on the next connection: a new session works.
    let fresh = connect_hostile(&server, HOSTILE_TIMEOUT)
        .await
        .expect("a new session");
    let (data, _) = within("getData", GUARD, fresh.get_data("/x"))
        .await
        .expect("served");
    assert_eq!(&data[..], FIXED_DATA);
    assert_ne!(fresh.session_id(), session);
}
