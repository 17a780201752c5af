//! Strings the reference writes as CESU-8: every `-cesu8` vector decodes to the value of its
//! `-utf8` twin and re-encodes as its bytes, and each string decodes to its character or to
//! U+FFFD.

use super::*;

/// [`jute::reencode_named`], and for the multi bodies.
fn reencode(name: &str, bytes: Bytes) -> Option<Result<Bytes, DecodeError>> {
    fn typed<T: Decode + Encode>(bytes: Bytes) -> Result<Bytes, DecodeError> {
        decode_exact::<T>(bytes).map(|value| value.to_bytes())
    }
    match name {
        "MultiRequest" => Some(typed::<MultiRequest>(bytes)),
        "MultiResponse" => Some(typed::<MultiResponse>(bytes)),
        _ => jute::reencode_named(name, bytes),
    }
}

/// [`jute::same_value_named`], and for the multi bodies.
fn same_value(name: &str, a: Bytes, b: Bytes) -> Option<Result<bool, DecodeError>> {
    fn typed<T: Decode + PartialEq>(a: Bytes, b: Bytes) -> Result<bool, DecodeError> {
        Ok(decode_exact::<T>(a)? == decode_exact::<T>(b)?)
    }
    match name {
        "MultiRequest" => Some(typed::<MultiRequest>(a, b)),
        "MultiResponse" => Some(typed::<MultiResponse>(a, b)),
        _ => jute::same_value_named(name, a, b),
    }
}

/// The reference writes each UTF-16 code unit on its own, so a character outside the BMP (a
/// surrogate pair) becomes two 3-byte sequences `ed a0..af ..` `ed b0..bf ..`, and a lone
/// surrogate one. Each such vector decodes to the value Java serialized (a pair as its
/// character, an unpaired surrogate as U+FFFD): the value of its `-utf8` twin, which is also
/// exactly what it re-encodes as (not its own bytes: we write standard UTF-8).
#[test]
fn cesu8_vectors_decode_to_the_value_java_serialized() {
    let cesu8: Vec<&Vector> = vectors().iter().filter(|v| v.is_cesu8()).collect();
    assert!(cesu8.len() >= 10, "vectors.txt has too few -cesu8 vectors");
    let mut problems = Vec::new();
    for v in cesu8 {
        let has_surrogate = v
            .bytes
            .windows(2)
            .any(|w| w[0] == 0xed && (0xa0..=0xbf).contains(&w[1]));
        if !has_surrogate {
            problems.push(format!("{}: no surrogate sequence in the bytes", v.id()));
        }
        let stem = &v.label[..v.label.len() - CESU8_SUFFIX.len()];
        let twin = vector(v.name, &format!("{stem}{UTF8_SUFFIX}"));
        match same_value(v.name, v.bytes.clone(), twin.bytes.clone()) {
            Some(Ok(true)) => {}
            Some(Ok(false)) => problems.push(format!("{}: decodes to another value", v.id())),
            Some(Err(e)) => problems.push(format!("{}: decode failed: {e}", v.id())),
            None => problems.push(format!("{}: unknown record name", v.id())),
        }
        match reencode(v.name, v.bytes.clone()) {
            Some(Ok(again)) if again == twin.bytes => {}
            Some(Ok(again)) => problems.push(format!(
                "{}: does not re-encode as its twin: {}",
                v.id(),
                first_difference(&twin.bytes, &again)
            )),
            Some(Err(e)) => problems.push(format!("{}: decode failed: {e}", v.id())),
            None => problems.push(format!("{}: unknown record name", v.id())),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn cesu8_strings_decode_to_the_character_or_replacement() {
    let user = "us😀er:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=";
    let digest = |id: &str| Id {
        scheme: s("digest"),
        id: s(id),
    };
    check(
        "data.Id",
        "digest-supplementary-cesu8",
        |v: Id| v,
        digest(user),
    );
    check(
        "proto.GetACLResponse",
        "digest-supplementary-cesu8",
        |v: GetAclResponse| v.acl,
        Some(vec![
            Acl {
                perms: Perms::ALL,
                id: digest(user),
            },
            Acl {
                perms: Perms::READ,
                id: world_anyone(),
            },
        ]),
    );
    check(
        "proto.WhoAmIResponse",
        "supplementary-cesu8",
        |v: WhoAmIResponse| v.client_info,
        Some(vec![ClientInfo {
            auth_scheme: s("sasl"),
            user: s("😀@EXAMPLE.COM"),
        }]),
    );
    check(
        "proto.WatcherEvent",
        "supplementary-cesu8",
        |v: WatcherEvent| v.path,
        s("/ключ/節點/😀"),
    );
    let id = |v: Id| v.id;
    check("data.Id", "lone-high-cesu8", id, s("high\u{fffd}alone"));
    check("data.Id", "lone-low-cesu8", id, s("low\u{fffd}alone"));
    check("data.Id", "reversed-pair-cesu8", id, s("\u{fffd}\u{fffd}"));
    check("data.Id", "high-then-pair-cesu8", id, s("\u{fffd}😀"));
    check("data.Id", "high-at-end-cesu8", id, s("end\u{fffd}"));
    check(
        "proto.CreateRequest",
        "lone-surrogate-cesu8",
        |v: CreateRequest| v.path,
        s("/lone\u{fffd}"),
    );
}
