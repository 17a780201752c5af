//! Replies gathered under a deep pipeline: the read low-water mark the session names, its
//! bound by the replies owed, and its time limit.

use super::*;

/// `n` getData requests sent on an established connection; their xids.
fn in_flight(n: usize) -> (Harness, Vec<i32>) {
    let mut h = Harness::connected();
    for i in 0..n {
        h.submit(get_data(&format!("/{i}"), false));
    }
    let xids: Vec<i32> = h.sent().iter().map(|(header, _)| header.xid).collect();
    assert_eq!(xids.len(), n);
    (h, xids)
}

#[test]
fn below_the_backlog_every_byte_is_read_at_once() {
    let mut h = Harness::new(config());
    assert_eq!(h.session.read_low_water(), 1, "not connected");
    h.establish(1, 30_000);
    assert_eq!(h.session.read_low_water(), 1, "nothing in flight");
    let (h, _) = in_flight(BACKLOG_HOLD - 1);
    assert_eq!(h.session.read_low_water(), 1, "a shallow pipeline");
}

#[test]
fn a_deep_pipeline_gathers_no_more_than_the_owed_replies_bring() {
    let (mut h, xids) = in_flight(BACKLOG_HOLD);
    // 63 owed frames beyond a partial one, of 20 bytes at least: 1260, and a power of two.
    assert_eq!(h.session.read_low_water(), 1024);
    let mut owed: std::collections::VecDeque<i32> = xids.into();
    let mut capped = false;
    for n in 0..600 {
        h.submit(get_data(&format!("/more{n}"), false));
        owed.extend(h.sent().iter().map(|(header, _)| header.xid));
        // Answer two in five: the count goes up and down.
        if n % 5 < 2
            && let Some(xid) = owed.pop_front()
        {
            h.answer_empty_data(xid, 2);
        }
        let mark = h.session.read_low_water();
        assert_eq!(h.session.in_flight(), owed.len());
        if owed.len() < BACKLOG_HOLD {
            assert_eq!(mark, 1);
        } else {
            assert!(mark.is_power_of_two() && mark <= 4096, "{mark}");
            assert!(
                mark <= 20 * (owed.len() - 1),
                "{mark} bytes for {} owed",
                owed.len()
            );
        }
        capped |= mark == 4096;
    }
    assert!(capped, "a deep enough pipeline reaches the cap");
}

#[test]
fn the_gathering_lapses_a_millisecond_after_the_last_frame() {
    let (mut h, xids) = in_flight(BACKLOG_HOLD + 10);
    let since = h.now;
    assert!(h.session.read_low_water() > 1);
    assert_eq!(
        h.session.poll_timeout(),
        Some(since + config().read_gather_limit),
        "the timer that ends it"
    );
    h.advance(config().read_gather_limit);
    assert_eq!(h.session.read_low_water(), 1, "lapsed: every byte counts");
    let next = h
        .session
        .poll_timeout()
        .expect("the session's other timers");
    assert!(next > h.now, "a lapsed gathering asks for no timer");
    // A frame starts a new gathering, from its arrival.
    h.advance(Duration::from_millis(5));
    h.answer_empty_data(xids[0], 2);
    assert!(h.session.read_low_water() > 1);
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + config().read_gather_limit)
    );
}

#[test]
fn a_lost_connection_ends_the_gathering() {
    let (mut h, _) = in_flight(BACKLOG_HOLD);
    assert!(h.session.read_low_water() > 1);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(h.session.read_low_water(), 1);
}

#[test]
fn a_zero_limit_reads_every_reply_as_it_comes() {
    let mut h = Harness::new(SessionConfig {
        read_gather_limit: Duration::ZERO,
        ..config()
    });
    h.establish(1, 30_000);
    for i in 0..2 * BACKLOG_HOLD {
        h.submit(get_data(&format!("/{i}"), false));
    }
    assert_eq!(h.sent().len(), 2 * BACKLOG_HOLD);
    assert_eq!(h.session.read_low_water(), 1);
}
