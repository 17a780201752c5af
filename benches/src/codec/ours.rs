//! Our side: checks that each frame decodes back to its message (owned, and as a borrowed view
//! where that is the real path) and encodes back to the same bytes, then times decode and
//! encode.

use std::fmt;
use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use jute::{DecodeError, Encode, Response, ServerMessage};

use super::cases::{
    CaseId, build_create_request, build_get_children2_reply, build_get_data_reply,
    build_watcher_event, decode_create_request, decode_create_request_view,
    decode_get_children2_reply, decode_get_data_reply, decode_watcher_event,
    decode_watcher_event_view,
};
use super::timing::{Measurement, measure};
use super::{BenchError, Settings};

/// Checks that `decode(frame)` gives `expected` and that `message` encodes back to `frame`,
/// then times both. The encode is timed into a reused buffer, as the client encodes a request
/// straight into its connection's write buffer.
fn bench_ours<T, D, M>(
    case: CaseId,
    frame: &Bytes,
    expected: &T,
    decode: D,
    message: &M,
    settings: &Settings,
) -> Result<(Measurement, Measurement), BenchError>
where
    T: PartialEq + fmt::Debug,
    D: Fn(Bytes) -> Result<T, DecodeError>,
    M: Encode,
{
    check_decoded(case, "", decode(frame.clone()), expected)?;
    if message.to_bytes() != *frame {
        return Err(BenchError::SelfCheck(format!(
            "{}: encoding is not deterministic",
            case.id()
        )));
    }
    let decoded = measure(settings, || decode(black_box(frame.clone())));
    let mut buf = BytesMut::with_capacity(frame.len());
    let encoded = measure(settings, || {
        buf.clear();
        black_box(message).encode(&mut buf);
        black_box(buf.len())
    });
    Ok((decoded, encoded))
}

/// Checks that our own frame of `case` decoded (`how`: `""`, or `" as a view"`) to `expected`.
fn check_decoded<T: PartialEq + fmt::Debug>(
    case: CaseId,
    how: &str,
    decoded: Result<T, DecodeError>,
    expected: &T,
) -> Result<(), BenchError> {
    match decoded {
        Ok(value) if &value == expected => Ok(()),
        Ok(value) => Err(BenchError::SelfCheck(format!(
            "{}: decoded{how} {value:?}, expected {expected:?}",
            case.id()
        ))),
        Err(e) => Err(BenchError::SelfCheck(format!(
            "{}: our own frame does not decode{how}: {e}",
            case.id()
        ))),
    }
}

/// Our figures for one message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ours {
    /// The decode on the message's real path (the borrowed view for the create request and the
    /// watch notification).
    pub decode: Measurement,
    /// The owned decode, for the messages whose real path is the borrowed view.
    pub owned_decode: Option<Measurement>,
    /// The encode.
    pub encode: Measurement,
}

/// Checks that the view decode of `frame` gives `expected` once made owned, then times it.
fn bench_view<'f, T, V, D>(
    case: CaseId,
    frame: &'f [u8],
    expected: &T,
    decode: D,
    into_owned: impl Fn(V) -> T,
    settings: &Settings,
) -> Result<Measurement, BenchError>
where
    T: PartialEq + fmt::Debug,
    D: Fn(&'f [u8]) -> Result<V, DecodeError>,
{
    check_decoded(case, " as a view", decode(frame).map(into_owned), expected)?;
    Ok(measure(settings, || decode(black_box(frame))))
}

/// Times our decode and encode of `case`; `frame` is [`CaseId::frame`].
///
/// # Errors
///
/// [`BenchError::SelfCheck`] if the frame does not decode back to the message.
pub fn measure_ours(case: CaseId, frame: &Bytes, settings: &Settings) -> Result<Ours, BenchError> {
    let owned_only = |(decode, encode)| Ours {
        decode,
        owned_decode: None,
        encode,
    };
    let view_first = |(owned, encode), decode| Ours {
        decode,
        owned_decode: Some(owned),
        encode,
    };
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
                &message,
                settings,
            )
            .map(owned_only)
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
                &message,
                settings,
            )
            .map(owned_only)
        }
        CaseId::CreateRequest => {
            let message = build_create_request();
            let owned = bench_ours(
                case,
                frame,
                &message,
                decode_create_request,
                &message,
                settings,
            )?;
            let view = bench_view(
                case,
                frame,
                &message,
                decode_create_request_view,
                |(header, body)| (header, body.into_owned()),
                settings,
            )?;
            Ok(view_first(owned, view))
        }
        CaseId::WatcherEvent => {
            let message = build_watcher_event();
            let expected = ServerMessage::Notification(message.0.clone(), message.1.clone());
            let owned = bench_ours(
                case,
                frame,
                &expected,
                decode_watcher_event,
                &message,
                settings,
            )?;
            let view = bench_view(
                case,
                frame,
                &expected,
                decode_watcher_event_view,
                |(header, event)| ServerMessage::Notification(header, event.into_owned()),
                settings,
            )?;
            Ok(view_first(owned, view))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

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
        }
    }

    #[test]
    fn a_frame_that_is_not_the_message_fails_the_self_check() {
        let settings = Settings::QUICK;
        let other = CaseId::WatcherEvent.frame();
        let err = measure_ours(CaseId::GetDataReply, &other, &settings).expect_err("mismatch");
        assert!(matches!(err, BenchError::SelfCheck(_)), "{err}");
    }
}
