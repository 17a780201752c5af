//! Node paths: client-side validation and the chroot.
//!
//! [`validate_path`] implements exactly the rules of Java's `PathUtils.validatePath` (3.8 and
//! 3.9), so a path this client rejects is one the Java client rejects too, and the reported
//! problem is the first one Java would find scanning left to right:
//!
//! 1. the empty string;
//! 2. not starting with `/`;
//! 3. ending with `/` (except the root `/` itself);
//! 4. an empty segment (`//`);
//! 5. a segment that is exactly `.` or `..` (`.b`, `..b`, `a.` and `...` are fine);
//! 6. U+0000, U+0001–U+001F and U+007F–U+009F;
//! 7. what Java sees as UTF-16 code units U+D800–U+F8FF: the private-use block U+E000–U+F8FF
//!    and every character outside the Basic Multilingual Plane (which Java stores as surrogate
//!    pairs; a Rust `str` cannot hold lone surrogates);
//! 8. U+FFF0–U+FFFF.
//!
//! Other printable non-ASCII characters (U+00A0, `é`, `中`, ...) are accepted. `/zookeeper` is
//! a valid path: that subtree is reserved by the server, not by the validator.
//!
//! [`Chroot`] maps client paths to server paths and back (see its documentation for the exact
//! rules and where they differ from the Java client).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// A path rejected by [`validate_path`] or [`validate_sequential_prefix`].
///
/// Displays like `invalid path "/a//b": empty segment at byte 2`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid path {path:?}: {reason}")]
pub struct InvalidPath {
    /// The path as given (for a sequential prefix: without the `1` appended for validation).
    pub path: String,
    /// What is wrong with it.
    pub reason: PathProblem,
}

/// Why a path is invalid; the first problem found scanning the path left to right.
///
/// Byte offsets index into the path as given (a `&str`, so UTF-8 bytes, not Java's UTF-16
/// code units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathProblem {
    /// The path is the empty string.
    Empty,
    /// The path does not start with `/`.
    NoLeadingSlash,
    /// The path ends with `/` and is not the root `/`.
    TrailingSlash,
    /// Two consecutive `/`.
    EmptySegment {
        /// Byte offset of the `/` that opens the empty segment (the first of the two).
        at: usize,
    },
    /// A segment that is exactly `.` or `..`.
    RelativeSegment {
        /// Byte offset of the `/` that opens the segment.
        at: usize,
        /// `true` for `..`, `false` for `.`.
        parent: bool,
    },
    /// A character ZooKeeper does not allow in paths.
    ForbiddenChar {
        /// Byte offset of the character.
        at: usize,
        /// The character.
        ch: char,
    },
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PathProblem::Empty => f.write_str("empty path"),
            PathProblem::NoLeadingSlash => f.write_str("must start with '/'"),
            PathProblem::TrailingSlash => f.write_str("must not end with '/'"),
            PathProblem::EmptySegment { at } => write!(f, "empty segment at byte {at}"),
            PathProblem::RelativeSegment { at, parent } => {
                let seg = if parent { ".." } else { "." };
                write!(f, "relative segment \"{seg}\" at byte {at}")
            }
            PathProblem::ForbiddenChar { at, ch } => {
                write!(
                    f,
                    "forbidden character U+{:04X} at byte {at}",
                    u32::from(ch)
                )
            }
        }
    }
}

/// Whether ZooKeeper rejects `ch` anywhere in a path (rules 6 to 8 of the module docs).
///
/// Java compares UTF-16 code units: `c > 0 && c <= 0x1f`, `0x7f..=0x9f`, `0xd800..=0xf8ff`,
/// `0xfff0..=0xffff`, plus NUL. Characters outside the BMP are encoded as surrogates, which
/// fall in `0xd800..=0xdfff`, so all of them are rejected.
pub fn is_forbidden_char(ch: char) -> bool {
    matches!(
        u32::from(ch),
        0x0000..=0x001F | 0x007F..=0x009F | 0xE000..=0xF8FF | 0xFFF0..=0xFFFF | 0x1_0000..
    )
}

/// Validates a node path with the rules of Java's `PathUtils.validatePath` (see the module
/// documentation). The root `/` is valid.
///
/// # Errors
///
/// [`InvalidPath`] naming the first problem found.
pub fn validate_path(path: &str) -> Result<(), InvalidPath> {
    check(path).map_err(|reason| InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

/// Validates the path given to a sequential create, which the server completes by appending a
/// 10-digit counter.
///
/// As the Java client does, this validates `path + "1"`: so a prefix may end with `/` (`/p/` is
/// accepted and the server creates `/p/0000000000`), the root `/` is accepted, and a last
/// segment `.` or `..` is accepted (it becomes `.0000000000`). Everything else follows
/// [`validate_path`]. The empty string is reported as [`PathProblem::Empty`].
///
/// # Errors
///
/// [`InvalidPath`] with `path` as given (without the `1`); offsets index into it.
pub fn validate_sequential_prefix(path: &str) -> Result<(), InvalidPath> {
    let result = if path.is_empty() {
        Err(PathProblem::Empty)
    } else {
        let mut completed = String::with_capacity(path.len() + 1);
        completed.push_str(path);
        completed.push('1');
        check(&completed)
    };
    result.map_err(|reason| InvalidPath {
        path: path.to_owned(),
        reason,
    })
}

/// The validation proper. Reports the first problem in the same order as Java: the whole-path
/// checks first (empty, leading `/`, trailing `/`), then a left-to-right scan.
fn check(path: &str) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathProblem::NoLeadingSlash);
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(PathProblem::TrailingSlash);
    }
    // Offset of the '/' that opens the current segment.
    let mut segment_start = 0;
    if path.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        // Printable ASCII, the usual path, checked a byte at a time above: no character is
        // forbidden, so only a segment can be wrong, and the first one wrong comes first.
        for segment in path[1..].split('/') {
            check_segment(segment, segment_start)?;
            segment_start += segment.len() + 1;
        }
        return Ok(());
    }
    for (at, ch) in path.char_indices().skip(1) {
        if ch == '/' {
            check_segment(&path[segment_start + 1..at], segment_start)?;
            segment_start = at;
        } else if is_forbidden_char(ch) {
            return Err(PathProblem::ForbiddenChar { at, ch });
        }
    }
    // The last segment is not empty: the path does not end with '/'.
    check_segment(&path[segment_start + 1..], segment_start)
}

fn check_segment(segment: &str, at: usize) -> Result<(), PathProblem> {
    match segment {
        "" => Err(PathProblem::EmptySegment { at }),
        "." => Err(PathProblem::RelativeSegment { at, parent: false }),
        ".." => Err(PathProblem::RelativeSegment { at, parent: true }),
        _ => Ok(()),
    }
}

/// The chroot of a session: a path prefix applied to every path the client sends and removed
/// from paths the server returns.
///
/// Cheap to clone (an `Arc<str>` inside). [`Chroot::none`] (also the `Default`) means no
/// chroot. A chroot is always a valid path other than `/`, so it starts with `/` and does not end
/// with one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Chroot(Option<Arc<str>>);

impl Chroot {
    /// A chroot of `path`. `""` and `"/"` mean no chroot; anything else must be a valid path
    /// ([`validate_path`]).
    ///
    /// # Errors
    ///
    /// [`InvalidPath`] if `path` is not a valid path.
    pub fn new(path: &str) -> Result<Chroot, InvalidPath> {
        if path.is_empty() || path == "/" {
            return Ok(Chroot::none());
        }
        validate_path(path)?;
        Ok(Chroot(Some(Arc::from(path))))
    }

    /// No chroot: paths go to the server unchanged.
    pub const fn none() -> Chroot {
        Chroot(None)
    }

    /// Whether this is no chroot.
    pub fn is_none(&self) -> bool {
        self.0.is_none()
    }

    /// The chroot path (`/app`), or `None` for no chroot.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The server path for `client_path`: the chroot followed by `client_path`, except that `/`
    /// maps to the chroot itself. With no chroot, `client_path` unchanged.
    ///
    /// `client_path` is expected to be valid already (validation is the caller's job); an
    /// invalid one is simply concatenated, as Java does.
    pub fn apply(&self, client_path: &str) -> String {
        match self.as_str() {
            None => client_path.to_owned(),
            Some(chroot) if client_path == "/" => chroot.to_owned(),
            Some(chroot) => {
                let mut server_path = String::with_capacity(chroot.len() + client_path.len());
                server_path.push_str(chroot);
                server_path.push_str(client_path);
                server_path
            }
        }
    }

    /// [`apply`](Self::apply) to an owned path: without a chroot, the path itself, with no copy.
    pub fn apply_owned(&self, client_path: String) -> String {
        match self.as_str() {
            None => client_path,
            Some(_) => self.apply(&client_path),
        }
    }

    /// The client path for `server_path` (a created node's path, a watch event's path):
    /// the chroot itself gives `/`, a path under the chroot (`chroot + "/..."`) loses the
    /// chroot, and any other path is returned unchanged (with no chroot, always unchanged).
    ///
    /// This is the behaviour of the 3.9 Java client for watch events, with a strict prefix
    /// check: `/app2/x` is not under the chroot `/app`. The 3.8 Java client strips
    /// `chroot.len()` characters from any longer path **without checking the prefix** (for
    /// create replies in both 3.8 and 3.9 as well), which mangles paths outside the chroot such
    /// as `/zookeeper/config`; this client deliberately does not. Use [`Chroot::try_strip`] to
    /// find out whether the path was under the chroot.
    pub fn strip<'a>(&self, server_path: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(self.try_strip(server_path).unwrap_or(server_path))
    }

    /// Like [`Chroot::strip`], but `None` if there is a chroot and `server_path` is neither the
    /// chroot nor under it (the 3.9 Java client logs a warning for such event paths, except
    /// under `/zookeeper/`). With no chroot, always `Some(server_path)`.
    pub fn try_strip<'a>(&self, server_path: &'a str) -> Option<&'a str> {
        let Some(chroot) = self.as_str() else {
            return Some(server_path);
        };
        let rest = server_path.strip_prefix(chroot)?;
        if rest.is_empty() {
            Some("/")
        } else if rest.starts_with('/') {
            Some(rest)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn problem(path: &str) -> PathProblem {
        match validate_path(path) {
            Ok(()) => panic!("{path:?} should be invalid"),
            Err(e) => {
                assert_eq!(e.path, path);
                e.reason
            }
        }
    }

    #[test]
    fn valid_paths() {
        for path in [
            "/",
            "/a",
            "/a/b/c",
            "/zookeeper",
            "/zookeeper/config",
            "/.b",
            "/..b",
            "/a.",
            "/...",
            "/a/.b/c..",
            "/a b",
            "/\u{A0}",
            "/é/中/ü",
            "/\u{FFEF}",
            "/\u{D7FF}",
            "/\u{F900}",
            "/\u{7E}",
            "/\u{20}",
            "/-_:@!$%&()=",
            "/q/item-",
        ] {
            assert_eq!(validate_path(path), Ok(()), "{path:?}");
        }
    }

    #[test]
    fn whole_path_problems() {
        assert_eq!(problem(""), PathProblem::Empty);
        assert_eq!(problem("a"), PathProblem::NoLeadingSlash);
        assert_eq!(problem("a/b"), PathProblem::NoLeadingSlash);
        assert_eq!(problem(" /a"), PathProblem::NoLeadingSlash);
        assert_eq!(problem("/a/"), PathProblem::TrailingSlash);
        assert_eq!(problem("//"), PathProblem::TrailingSlash);
        // Trailing slash is a whole-path check: reported before anything in the middle.
        assert_eq!(problem("/a//b/"), PathProblem::TrailingSlash);
        assert_eq!(problem("/\0/"), PathProblem::TrailingSlash);
    }

    #[test]
    fn empty_segments() {
        assert_eq!(problem("//a"), PathProblem::EmptySegment { at: 0 });
        assert_eq!(problem("/a//b"), PathProblem::EmptySegment { at: 2 });
        assert_eq!(problem("/a/b///c"), PathProblem::EmptySegment { at: 4 });
    }

    #[test]
    fn relative_segments() {
        let dot = |at| PathProblem::RelativeSegment { at, parent: false };
        let dotdot = |at| PathProblem::RelativeSegment { at, parent: true };
        assert_eq!(problem("/."), dot(0));
        assert_eq!(problem("/.."), dotdot(0));
        assert_eq!(problem("/a/./b"), dot(2));
        assert_eq!(problem("/a/../b"), dotdot(2));
        assert_eq!(problem("/a/."), dot(2));
        assert_eq!(problem("/a/.."), dotdot(2));
        assert_eq!(problem("/./a"), dot(0));
    }

    #[test]
    fn forbidden_characters() {
        let bad = |at, ch| PathProblem::ForbiddenChar { at, ch };
        assert_eq!(problem("/\0"), bad(1, '\0'));
        assert_eq!(problem("/a\u{1}"), bad(2, '\u{1}'));
        assert_eq!(problem("/a\u{1F}"), bad(2, '\u{1F}'));
        assert_eq!(problem("/a\tb"), bad(2, '\t'));
        assert_eq!(problem("/a\nb"), bad(2, '\n'));
        assert_eq!(problem("/\u{7F}"), bad(1, '\u{7F}'));
        assert_eq!(problem("/\u{80}"), bad(1, '\u{80}'));
        assert_eq!(problem("/\u{9F}"), bad(1, '\u{9F}'));
        assert_eq!(problem("/\u{E000}"), bad(1, '\u{E000}'));
        assert_eq!(problem("/\u{F8FF}"), bad(1, '\u{F8FF}'));
        assert_eq!(problem("/\u{FFF0}"), bad(1, '\u{FFF0}'));
        assert_eq!(problem("/\u{FFFD}"), bad(1, '\u{FFFD}'));
        assert_eq!(problem("/\u{FFFF}"), bad(1, '\u{FFFF}'));
        assert_eq!(problem("/\u{10000}"), bad(1, '\u{10000}'));
        assert_eq!(problem("/a😀"), bad(2, '😀'));
        assert_eq!(problem("/\u{10FFFF}"), bad(1, '\u{10FFFF}'));
        // Offsets are UTF-8 byte offsets.
        assert_eq!(problem("/é\0"), bad(3, '\0'));
    }

    #[test]
    fn first_problem_left_to_right() {
        assert_eq!(
            problem("/a\0//b"),
            PathProblem::ForbiddenChar { at: 2, ch: '\0' }
        );
        assert_eq!(problem("/a//\0b"), PathProblem::EmptySegment { at: 2 });
        assert_eq!(
            problem("/./\0"),
            PathProblem::RelativeSegment {
                at: 0,
                parent: false
            }
        );
        assert_eq!(
            problem("/a/\0/."),
            PathProblem::ForbiddenChar { at: 3, ch: '\0' }
        );
    }

    #[test]
    fn display() {
        let err = |p| validate_path(p).err().map(|e| e.to_string());
        assert_eq!(
            err("/a//b").as_deref(),
            Some(r#"invalid path "/a//b": empty segment at byte 2"#)
        );
        assert_eq!(err("").as_deref(), Some(r#"invalid path "": empty path"#));
        assert_eq!(
            err("a").as_deref(),
            Some(r#"invalid path "a": must start with '/'"#)
        );
        assert_eq!(
            err("/a/").as_deref(),
            Some(r#"invalid path "/a/": must not end with '/'"#)
        );
        assert_eq!(
            err("/a/..").as_deref(),
            Some(r#"invalid path "/a/..": relative segment ".." at byte 2"#)
        );
        assert_eq!(
            err("/a\u{1}").as_deref(),
            Some(r#"invalid path "/a\u{1}": forbidden character U+0001 at byte 2"#)
        );
        assert_eq!(
            err("/\u{10000}").as_deref(),
            Some("invalid path \"/\u{10000}\": forbidden character U+10000 at byte 1")
        );
    }

    #[test]
    fn sequential_prefixes() {
        for path in ["/", "/p/", "/q/item-", "/a/.", "/a/..", "/a"] {
            assert_eq!(validate_sequential_prefix(path), Ok(()), "{path:?}");
        }
        let seq_problem = |p: &str| {
            validate_sequential_prefix(p)
                .err()
                .map(|e| (e.path, e.reason))
        };
        assert_eq!(seq_problem(""), Some((String::new(), PathProblem::Empty)));
        assert_eq!(
            seq_problem("p"),
            Some(("p".to_owned(), PathProblem::NoLeadingSlash))
        );
        assert_eq!(
            seq_problem("/a//"),
            Some(("/a//".to_owned(), PathProblem::EmptySegment { at: 2 }))
        );
        assert_eq!(
            seq_problem("/./x-"),
            Some((
                "/./x-".to_owned(),
                PathProblem::RelativeSegment {
                    at: 0,
                    parent: false
                }
            ))
        );
        assert_eq!(
            seq_problem("/a\u{7F}"),
            Some((
                "/a\u{7F}".to_owned(),
                PathProblem::ForbiddenChar {
                    at: 2,
                    ch: '\u{7F}'
                }
            ))
        );
    }

    #[test]
    fn chroot_none() {
        for s in ["", "/"] {
            let c = Chroot::new(s).expect("no chroot");
            assert!(c.is_none());
            assert_eq!(c, Chroot::none());
            assert_eq!(c, Chroot::default());
            assert_eq!(c.as_str(), None);
            assert_eq!(c.apply("/a"), "/a");
            assert_eq!(c.apply("/"), "/");
            assert_eq!(c.strip("/a/b"), "/a/b");
            assert_eq!(c.try_strip("/a/b"), Some("/a/b"));
        }
    }

    #[test]
    fn chroot_invalid() {
        for s in ["app", "/app/", "/a//b", "/a/..", "/\0"] {
            let err = Chroot::new(s).expect_err(s);
            assert_eq!(err.path, s);
        }
    }

    #[test]
    fn chroot_apply() {
        let c = Chroot::new("/app/x").expect("valid");
        assert!(!c.is_none());
        assert_eq!(c.as_str(), Some("/app/x"));
        assert_eq!(c.apply("/"), "/app/x");
        assert_eq!(c.apply("/a"), "/app/x/a");
        assert_eq!(c.apply("/a/b"), "/app/x/a/b");
    }

    #[test]
    fn chroot_strip() {
        let c = Chroot::new("/app").expect("valid");
        assert_eq!(c.strip("/app"), "/");
        assert_eq!(c.strip("/app/a"), "/a");
        assert_eq!(c.strip("/app/a/b"), "/a/b");
        // Not under the chroot: unchanged (3.8 Java would give "2/x" and "per/config").
        assert_eq!(c.strip("/app2/x"), "/app2/x");
        assert_eq!(c.strip("/zookeeper/config"), "/zookeeper/config");
        assert_eq!(c.strip("/ap"), "/ap");
        assert_eq!(c.strip("/"), "/");
        assert_eq!(c.try_strip("/app2/x"), None);
        assert_eq!(c.try_strip("/zookeeper/config"), None);
        assert_eq!(c.try_strip("/app"), Some("/"));
        assert_eq!(c.try_strip("/app/a"), Some("/a"));
        assert!(matches!(c.strip("/app/a"), Cow::Borrowed(_)));
    }

    #[test]
    fn chroot_clone_shares() {
        let c = Chroot::new("/app").expect("valid");
        let d = c.clone();
        assert_eq!(c, d);
        assert!(std::ptr::eq(
            c.as_str().map_or(std::ptr::null(), str::as_ptr),
            d.as_str().map_or(std::ptr::null(), str::as_ptr)
        ));
    }

    /// A strategy for segments: mostly ordinary characters, sometimes dots.
    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9_.-]{1,8}",
            "[a-z\u{A0}-\u{D7FF}\u{F900}-\u{FFEF}]{1,4}",
        ]
        .prop_filter("no relative segments", |s| s != "." && s != "..")
    }

    fn valid_path() -> impl Strategy<Value = String> {
        proptest::collection::vec(segment(), 0..5).prop_map(|segs| {
            if segs.is_empty() {
                "/".to_owned()
            } else {
                segs.iter().map(|s| format!("/{s}")).collect()
            }
        })
    }

    /// A straightforward restatement of the rules, segment by segment.
    fn reference_valid(path: &str) -> bool {
        if path == "/" {
            return true;
        }
        let Some(rest) = path.strip_prefix('/') else {
            return false;
        };
        rest.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg.encode_utf16().all(|u| {
                    !(u <= 0x1F
                        || (0x7F..=0x9F).contains(&u)
                        || (0xD800..=0xF8FF).contains(&u)
                        || u >= 0xFFF0)
                })
        })
    }

    proptest! {
        #[test]
        fn generated_valid_paths_pass(path in valid_path()) {
            prop_assert_eq!(validate_path(&path), Ok(()));
            prop_assert_eq!(validate_sequential_prefix(&path), Ok(()));
            let with_slash = if path == "/" { path.clone() } else { format!("{path}/") };
            prop_assert_eq!(validate_sequential_prefix(&with_slash), Ok(()));
        }

        #[test]
        fn agrees_with_reference(path in "[/a.\u{0}\u{1F}\u{7F}\u{A0}\u{E000}\u{FFF0}\u{10000}]{0,8}") {
            prop_assert_eq!(validate_path(&path).is_ok(), reference_valid(&path));
            let seq_ok = !path.is_empty() && reference_valid(&format!("{path}1"));
            prop_assert_eq!(validate_sequential_prefix(&path).is_ok(), seq_ok);
        }

        #[test]
        fn errors_point_inside_the_path(path in "[/a.\u{0}\u{9F}\u{FFFF}\u{1F600}]{0,8}") {
            for result in [validate_path(&path), validate_sequential_prefix(&path)] {
                if let Err(e) = result {
                    prop_assert_eq!(&e.path, &path);
                    match e.reason {
                        PathProblem::EmptySegment { at }
                        | PathProblem::RelativeSegment { at, .. } => {
                            prop_assert_eq!(path.as_bytes().get(at), Some(&b'/'));
                        }
                        PathProblem::ForbiddenChar { at, ch } => {
                            prop_assert_eq!(path[at..].chars().next(), Some(ch));
                        }
                        _ => {}
                    }
                }
            }
        }

        #[test]
        fn chroot_round_trip(root in valid_path(), client in valid_path()) {
            let chroot = Chroot::new(&root).expect("valid chroot");
            let server = chroot.apply(&client);
            prop_assert_eq!(validate_path(&server), Ok(()));
            prop_assert_eq!(chroot.strip(&server), client.as_str());
            prop_assert_eq!(chroot.try_strip(&server), Some(client.as_str()));
        }
    }
}
