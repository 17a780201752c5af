//! Checks of the checks: known inputs, seeds, and the oracles catching what they must.

use super::seeds::*;
use super::*;

/// Whether `run` knows `target` in this build.
fn known(target: &str) -> bool {
    cfg!(feature = "frame") || target != "frame_decoder"
}

#[test]
fn handmade_seeds_pass_every_check() {
    for (target, input) in handmade_seeds() {
        assert_eq!(run(target, &input), known(target), "{target}");
    }
}

#[test]
fn every_handmade_reply_decodes() {
    for (target, input) in handmade_seeds() {
        if target == "server_message" {
            let frame = Bytes::copy_from_slice(&input[4..]);
            let op = OpCode(i32::from_be_bytes([input[0], input[1], input[2], input[3]]));
            assert!(ServerMessage::decode(frame, |_| op).is_ok(), "{input:?}");
        }
    }
}

#[test]
fn seeds_vectors_by_name() {
    let vectors = format!(
        "# name label hex\ndata.Stat zero {}\nproto.SyncResponse root 000000012f\n\n\
         MultiResponse empty ffffffff01ffffffff\n",
        "00".repeat(68)
    );
    let seeds = seed_corpus(&vectors).unwrap();
    let count = |target| seeds.iter().filter(|(t, _)| *t == target).count();
    let handmade = handmade_seeds();
    let handmade_count = |target| handmade.iter().filter(|(t, _)| *t == target).count();
    assert_eq!(
        count("record_by_name"),
        handmade_count("record_by_name") + 2
    );
    assert_eq!(count("frame_decoder"), handmade_count("frame_decoder") + 3);
    assert_eq!(
        count("multi_response"),
        handmade_count("multi_response") + 1
    );
    assert_eq!(
        count("server_message"),
        handmade_count("server_message") + 2
    );
    for (target, input) in &seeds {
        assert_eq!(run(target, input), known(target), "{target}");
    }
    let sync = concat(&[
        &op(OpCode::SYNC),
        &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0],
        &[0, 0, 0, 1, b'/'],
    ]);
    assert!(seeds.contains(&("server_message", sync)));
}

/// The vectors Java writes with strings in surrogate form (and their twins) pass every
/// check they seed, and a ConnectRequest without its readOnly byte passes record_by_name.
#[test]
fn java_surrogate_strings_and_old_connect_requests_pass_the_checks() {
    let vectors = include_str!("../../tests/conformance/vectors.txt");
    let java: String = vectors
        .lines()
        .filter(|line| line.contains("-cesu8 ") || line.contains("-utf8 "))
        .map(|line| format!("{line}\n"))
        .collect();
    let seeds = seed_corpus(&java).unwrap();
    let handmade = handmade_seeds().len();
    assert!(seeds.len() > handmade + 40, "{} seeds", seeds.len());
    for (target, input) in &seeds {
        assert_eq!(run(target, input), known(target), "{target}");
    }
    // Each kind of input really decodes (so the checks above compared something).
    let decodes = |target: &str, input: &[u8]| match target {
        "record_by_name" => {
            let name = RECORD_NAMES[usize::from(input[0]) % RECORD_NAMES.len()];
            matches!(
                reencode_named(name, Bytes::copy_from_slice(&input[1..])),
                Some(Ok(_))
            )
        }
        "watcher_event" => decode_exact::<WatcherEvent>(Bytes::copy_from_slice(input)).is_ok(),
        "multi_response" => decode_exact::<MultiResponse>(Bytes::copy_from_slice(input)).is_ok(),
        "server_message" => {
            let op = OpCode(i32::from_be_bytes([input[0], input[1], input[2], input[3]]));
            ServerMessage::decode(Bytes::copy_from_slice(&input[4..]), |_| op).is_ok()
        }
        _ => true,
    };
    for (target, input) in seeds.iter().skip(handmade) {
        assert!(decodes(target, input), "{target} {}", hex(input));
    }
}

#[test]
#[should_panic(expected = "re-encodes as")]
fn other_bytes_without_a_surrogate_sequence_are_a_bug() {
    // A decoder that read "a" as "b" (any value whose encoding differs from the input).
    assert_reencodes_to_same(b"\x00\x00\x00\x01a", &Some("b".to_owned()), |bytes| {
        decode_exact::<Option<String>>(bytes)
    });
}

#[test]
#[should_panic(expected = "which decodes as")]
fn other_bytes_with_a_surrogate_sequence_must_be_the_same_value() {
    // "\u{fffd}" re-encodes as 3 bytes, as a lone surrogate's would, but "x\u{fffd}" is
    // not what the input decodes to.
    let input = b"\x00\x00\x00\x03\xed\xa0\x80";
    assert_reencodes_to_same(input, &Some("\u{fffd}".to_owned()), |_| {
        Ok(Some("x\u{fffd}".to_owned()))
    });
}

#[test]
fn rejects_malformed_vector_lines() {
    assert!(seed_corpus("data.Stat\n").is_err());
    assert!(seed_corpus("data.Stat x 0\n").is_err());
    assert!(seed_corpus("data.Stat x zz\n").is_err());
}

#[cfg(feature = "frame")]
#[test]
fn frame_decoder_reports_leftovers_and_errors_like_the_reference() {
    // Two frames and a partial one, fed a byte at a time; then a negative length.
    frame_decoder(&[0x80, 1, 0, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0]);
    frame_decoder(&[5, 2, 0, 0, 0, 1, 9, 0, 0, 0, 6, 1]);
    frame_decoder(&[0x80, 0, 0xff, 0xff, 0xff, 0xfe, 1]);
}
