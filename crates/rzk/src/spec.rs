//! What users type besides paths, parsed into values: durations (`10s`), permissions
//! (`cdrwa`), ACL lists (`world:anyone:r,digest:bob:HASH:cdrwa`), credentials
//! (`digest:user:password`) and data arguments (`-` for standard input). Pure functions; a
//! bad value is a message naming it, which the command line reports as a usage error.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use zk_proto::{Acl, Id, Perms};

/// Parses a duration: a number with a unit `ms`, `s`, `m` or `h` (`250ms`, `1.5s`, `2m`), or a
/// plain number of seconds (`10`).
///
/// # Errors
///
/// A message naming the value when it is empty, negative, not a number, has an unknown unit,
/// or is too large.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?} (examples: 500ms, 10s, 1.5m, 2h)");
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds_per_unit = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let seconds = value * seconds_per_unit;
    if !seconds.is_finite() || seconds > 1.0e9 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The letters of the permissions, in the order ZooKeeper's shell prints them.
const PERM_LETTERS: [(char, Perms); 5] = [
    ('c', Perms::CREATE),
    ('d', Perms::DELETE),
    ('r', Perms::READ),
    ('w', Perms::WRITE),
    ('a', Perms::ADMIN),
];

/// Parses permissions written as letters, as ZooKeeper's shell does: `c` create, `d` delete,
/// `r` read, `w` write, `a` admin (`cdrwa` is all of them).
///
/// # Errors
///
/// A message naming the first letter that is none of these, or an empty string.
pub(crate) fn parse_perms(text: &str) -> Result<Perms, String> {
    if text.is_empty() {
        return Err("empty permissions (use letters of cdrwa)".into());
    }
    let mut perms = Perms(0);
    for ch in text.chars() {
        let Some((_, bit)) = PERM_LETTERS.iter().find(|(letter, _)| *letter == ch) else {
            return Err(format!(
                "invalid permission {ch:?} in {text:?} (use letters of cdrwa)"
            ));
        };
        perms = perms | *bit;
    }
    Ok(perms)
}

/// Permissions as letters (`cdrwa`, `r`, ...); bits without a letter are shown in hex after
/// them (`r+0x40`).
pub(crate) fn perms_letters(perms: Perms) -> String {
    let mut out: String = PERM_LETTERS
        .iter()
        .filter(|(_, bit)| perms.contains(*bit))
        .map(|(letter, _)| *letter)
        .collect();
    let rest = perms.0 & !Perms::ALL.0;
    if rest != 0 {
        out.push_str(&format!("+{rest:#x}"));
    }
    out
}

/// Parses an ACL list: entries `scheme:id:perms` separated by commas, as ZooKeeper's shell
/// takes them (`world:anyone:r`, `digest:bob:HASH:cdrwa`, `ip:10.0.0.0/8:r`, `auth::cdrwa`).
/// The id is everything between the first and the last `:` (digest ids hold one).
///
/// # Errors
///
/// A message naming the entry: missing parts, an empty scheme, bad permissions; an empty list.
pub(crate) fn parse_acl(text: &str) -> Result<Vec<Acl>, String> {
    let mut acl = Vec::new();
    for entry in text.split(',') {
        let (Some(first), Some(last)) = (entry.find(':'), entry.rfind(':')) else {
            return Err(format!(
                "invalid ACL entry {entry:?}: expected scheme:id:perms (e.g. world:anyone:cdrwa)"
            ));
        };
        if first == last {
            return Err(format!(
                "invalid ACL entry {entry:?}: expected scheme:id:perms (e.g. world:anyone:cdrwa)"
            ));
        }
        let scheme = &entry[..first];
        if scheme.is_empty() {
            return Err(format!("invalid ACL entry {entry:?}: empty scheme"));
        }
        let perms = parse_perms(&entry[last + 1..])
            .map_err(|e| format!("invalid ACL entry {entry:?}: {e}"))?;
        acl.push(Acl {
            perms,
            id: Id {
                scheme: scheme.to_owned(),
                id: entry[first + 1..last].to_owned(),
            },
        });
    }
    Ok(acl)
}

/// Credentials to add to the session: a scheme and its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Auth {
    /// The scheme (`digest`).
    pub(crate) scheme: String,
    /// The credential (`user:password` for digest).
    pub(crate) credential: String,
}

/// Parses `scheme:credential` (`digest:user:password`).
///
/// # Errors
///
/// A message when there is no `:`, the scheme is empty, or a digest credential is not
/// `user:password`. The message never repeats the credential.
pub(crate) fn parse_auth(text: &str) -> Result<Auth, String> {
    let Some((scheme, credential)) = text.split_once(':') else {
        return Err(
            "invalid --auth: expected scheme:credential (e.g. digest:user:password)".into(),
        );
    };
    if scheme.is_empty() {
        return Err("invalid --auth: empty scheme".into());
    }
    if scheme == zk_proto::acl::DIGEST_SCHEME && !credential.contains(':') {
        return Err("invalid --auth: a digest credential is user:password".into());
    }
    Ok(Auth {
        scheme: scheme.to_owned(),
        credential: credential.to_owned(),
    })
}

/// Where a command's data comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Data {
    /// The argument's bytes.
    Inline(Vec<u8>),
    /// Standard input (the argument `-`), read to its end.
    Stdin,
}

/// The data an argument stands for: `-` is standard input, anything else its own bytes
/// (not necessarily UTF-8); no argument is empty data.
pub(crate) fn data_arg(arg: Option<&OsStr>) -> Data {
    match arg {
        Some(a) if a == "-" => Data::Stdin,
        Some(a) => Data::Inline(a.as_bytes().to_vec()),
        None => Data::Inline(Vec::new()),
    }
}

/// The command line of a supervised command, for messages (`sh -c 'exit 3'`).
pub(crate) fn command_line(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| {
            let a = a.to_string_lossy();
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in [
            "",
            "s",
            "-1s",
            "10x",
            "1e400",
            "ten",
            "1.2.3s",
            "99999999999h",
        ] {
            let error = parse_duration(bad).expect_err(bad);
            assert!(error.contains(&format!("{bad:?}")), "{error}");
        }
    }

    #[test]
    fn permissions_round_trip_as_letters() {
        assert_eq!(parse_perms("cdrwa"), Ok(Perms::ALL));
        assert_eq!(parse_perms("r"), Ok(Perms::READ));
        assert_eq!(parse_perms("rw"), Ok(Perms::READ | Perms::WRITE));
        assert_eq!(perms_letters(Perms::ALL), "cdrwa");
        assert_eq!(perms_letters(Perms::READ | Perms::ADMIN), "ra");
        assert_eq!(perms_letters(Perms(0x41)), "r+0x40");
        assert!(parse_perms("").is_err());
        assert!(parse_perms("rx").unwrap_err().contains("'x'"));
    }

    #[test]
    fn acl_lists_parse_like_the_shell() {
        let acl = parse_acl("world:anyone:r,digest:bob:c2VjcmV0:cdrwa,auth::a").expect("acl");
        assert_eq!(acl.len(), 3);
        assert_eq!(acl[0].id.scheme, "world");
        assert_eq!(acl[0].id.id, "anyone");
        assert_eq!(acl[0].perms, Perms::READ);
        assert_eq!(acl[1].id.id, "bob:c2VjcmV0");
        assert_eq!(acl[1].perms, Perms::ALL);
        assert_eq!(acl[2].id.scheme, "auth");
        assert_eq!(acl[2].id.id, "");
        for bad in [
            "",
            "world",
            "world:anyone",
            ":x:r",
            "world:anyone:z",
            "world:anyone:r,",
        ] {
            assert!(parse_acl(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn credentials_need_a_scheme_and_never_echo_the_secret() {
        assert_eq!(
            parse_auth("digest:alice:s3cret"),
            Ok(Auth {
                scheme: "digest".into(),
                credential: "alice:s3cret".into()
            })
        );
        for bad in ["digest", ":x", "digest:alice-no-password"] {
            let error = parse_auth(bad).expect_err(bad);
            assert!(!error.contains("alice-no-password"), "{error}");
        }
    }

    #[test]
    fn data_arguments() {
        assert_eq!(data_arg(Some(OsStr::new("-"))), Data::Stdin);
        assert_eq!(data_arg(Some(OsStr::new("x"))), Data::Inline(b"x".to_vec()));
        assert_eq!(data_arg(None), Data::Inline(Vec::new()));
        let raw = OsStr::from_bytes(b"\xff\x00");
        assert_eq!(data_arg(Some(raw)), Data::Inline(vec![0xff, 0]));
    }

    #[test]
    fn command_lines_are_quoted_for_messages() {
        let command: Vec<OsString> = ["sh", "-c", "exit 3", "it's"].map(OsString::from).to_vec();
        assert_eq!(command_line(&command), r"sh -c 'exit 3' 'it'\''s'");
    }
}
