//! Strings as ZooKeeper's Java side writes them, against a real ZooKeeper 3.8 server and the
//! real Java client.
//!
//! The 3.8 serializer (`BinaryOutputArchive.writeString`) writes a character outside the Basic
//! Multilingual Plane as two 3-byte surrogate sequences (CESU-8: `😀` is `ed a0 bd ed b8 80`,
//! not UTF-8's `f0 9f 98 80`). A digest user name may hold such a character, so the server
//! sends one in GetACL replies (the digest id `user:hash`) and in WhoAmI replies (the user).
//! The codec decodes them ("Strings from Java" in `jute::primitive`). The decoder before it
//! rejected those bytes (`InvalidUtf8` on `ed a0 ..`), so every test here that reads such a
//! reply fails with it: that call fails (`Error::Protocol`, or ConnectionLoss with the session
//! code that dropped the connection on an undecodable reply), and with a dropped connection the
//! pipelined calls and the state check fail too. Only the path test does not depend on it.
//!
//! The server's part, established by these tests:
//!
//! - It stores an id exactly as it decoded it from the request. Our client writes standard
//!   UTF-8, which the server decodes to the character. The Java client writes CESU-8, which
//!   the server's reader (`new String(bytes, UTF_8)`) turns into one U+FFFD per surrogate
//!   sequence: a digest id with `😀` sent by the 3.8 Java client is stored mangled. The Java
//!   client gets the character to the server only through credentials (`addAuthInfo` sends
//!   bytes, not a jute string) and an `auth` ACL, for which the server derives the id itself.
//! - It decodes digest credentials with the JVM's default charset
//!   (`DigestAuthenticationProvider.handleAuthentication` is `new String(authData)`), which on
//!   Java 17 follows the locale: under `LANG=C` the user `us😀er` would become `us` + four
//!   U+FFFD + `er`. The servers here run with `-Dfile.encoding=UTF-8` so the tests do not depend
//!   on the locale they run under.
//! - GetACL hides the hash of digest ids (`user:x`, ZOOKEEPER-1392) from a session without
//!   ADMIN permission on the node: the tests read an ACL before and after authenticating.
//! - It rejects every path with a character outside the BMP (BadArguments), in either encoding,
//!   so no child name or watch event path can carry one: there is nothing to read back there.

use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;
use zk_proto::acl::{digest_acl, digest_id, world_acl};
use zk_proto::jute::ErrorCode;
use zk_proto::{Acl, Client, ClientInfo, CreateOptions, Error, Perms, SessionState};
use zk_testkit::ZkServer;
use zk_testkit::client::{blocking, connect, server_builder, start_server_with};
use zk_testkit::raw::RawSession;

/// A digest user name with a character outside the BMP.
const USER: &str = "us😀er";
/// Its password.
const PASSWORD: &str = "secret";
/// How long the Java program may take, its JVM start and compilation included.
const JAVA_TIMEOUT: Duration = Duration::from_secs(60);

/// A standalone server whose JVM decodes digest credentials as UTF-8 whatever the locale (see
/// the module comment).
async fn server() -> ZkServer {
    start_server_with(server_builder().jvm_arg("-Dfile.encoding=UTF-8")).await
}

/// The ACL the tests put on their nodes: everything for the digest id of [`USER`], read for
/// everyone (so that any session may read the ACL back).
fn emoji_acl() -> Vec<Acl> {
    vec![
        digest_acl(USER, PASSWORD, Perms::ALL).expect("no ':' in the user"),
        world_acl(Perms::READ),
    ]
}

/// The digest id of [`USER`], `us😀er:<base64 sha1>`.
fn emoji_digest() -> String {
    digest_id(USER, PASSWORD).expect("no ':' in the user").id
}

/// `acl` as a session without ADMIN permission on the node gets it: since ZOOKEEPER-1392 the
/// server hides the hash of digest ids (`user:x`).
fn redacted(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(
            |entry| match (entry.id.scheme.as_str(), entry.id.id.as_str()) {
                ("digest", id) => {
                    let user = id.split_once(':').map_or(id, |(user, _)| user);
                    zk_proto::acl::acl("digest", &format!("{user}:x"), entry.perms)
                }
                _ => entry.clone(),
            },
        )
        .collect()
}

fn client_info(scheme: &str, user: &str) -> ClientInfo {
    ClientInfo {
        auth_scheme: scheme.to_owned(),
        user: user.to_owned(),
    }
}

/// A whoAmI reply in a fixed order (by scheme, then user).
fn sorted(mut infos: Vec<ClientInfo>) -> Vec<ClientInfo> {
    infos.sort_by(|a, b| (&a.auth_scheme, &a.user).cmp(&(&b.auth_scheme, &b.user)));
    infos
}

/// The session as it was before the calls under test: its id, and a state receiver that has
/// seen the state then.
struct Session {
    id: i64,
    states: watch::Receiver<SessionState>,
}

impl Session {
    fn of(client: &Client) -> Session {
        assert_eq!(client.state(), SessionState::Connected);
        Session {
            id: client.session_id(),
            states: client.state_watcher(),
        }
    }

    /// The client is on the same session and its state never changed: no connection was
    /// dropped, not even one re-established at once.
    fn assert_untouched(&self, client: &Client) {
        assert_eq!(client.session_id(), self.id, "session id changed");
        assert_eq!(client.state(), SessionState::Connected);
        assert!(
            !self
                .states
                .has_changed()
                .expect("the client's task is running"),
            "the session state changed (a connection was dropped); now {:?}",
            client.state()
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Runs `tests/java/WriteDigestAcls.java` (the ZooKeeper Java client) against `server`; returns
/// the digest id it computed with `DigestAuthenticationProvider.generateDigest`.
async fn java_write_digest_acls(server: &ZkServer, explicit_path: &str, auth_path: &str) -> String {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/WriteDigestAcls.java");
    let command = zk_testkit::java::zookeeper_client_program(&source).expect("java");
    let mut command = tokio::process::Command::from(command);
    command
        .arg(server.connect_string())
        .arg(explicit_path)
        .arg(auth_path)
        .arg(hex(USER.as_bytes()))
        .arg(hex(PASSWORD.as_bytes()))
        .kill_on_drop(true);
    let output = tokio::time::timeout(JAVA_TIMEOUT, command.output())
        .await
        .expect("WriteDigestAcls did not finish in time")
        .expect("run java WriteDigestAcls");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "java WriteDigestAcls failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let digest = stdout
        .lines()
        .find_map(|line| line.strip_prefix("digest="))
        .unwrap_or_else(|| panic!("no digest= line in {stdout:?}"));
    String::from_utf8(unhex(digest)).expect("UTF-8 from getBytes(UTF_8)")
}

/// 1. A digest id with `😀` on a node written by the Java client reads back exactly.
#[tokio::test]
async fn acl_written_by_the_java_client_reads_back_exactly() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let session = Session::of(&client);

    let java_digest = java_write_digest_acls(&server, "/java-explicit", "/java-auth").await;
    // The server's formula (SHA-1 over the UTF-8 bytes of "user:password") is ours.
    assert_eq!(java_digest, emoji_digest());

    // The id the server derived from the Java client's credentials, sent back in CESU-8:
    // first with the hash hidden (no ADMIN permission yet), then whole.
    let (acl, _) = client.get_acl("/java-auth").await.expect("getACL");
    assert_eq!(acl, redacted(&emoji_acl()));
    assert_eq!(acl[0].id.id, "us\u{1f600}er:x");
    client
        .add_digest_auth(USER, PASSWORD)
        .await
        .expect("addAuth");
    let (acl, _) = client.get_acl("/java-auth").await.expect("getACL");
    assert_eq!(acl, emoji_acl());
    assert_eq!(acl[0].id.id, java_digest);
    client
        .set_data("/java-auth", "ours", None)
        .await
        .expect("setData with the emoji digest");

    // The id the Java client serialized itself, in CESU-8: the server decoded each surrogate
    // sequence to U+FFFD and stored that, so the id is not the user's (no ADMIN: the hash is
    // hidden; no WRITE: NoAuth). The replacement characters are plain UTF-8 on the wire.
    let (acl, _) = client.get_acl("/java-explicit").await.expect("getACL");
    assert_eq!(
        acl,
        [
            zk_proto::acl::acl("digest", "us\u{fffd}\u{fffd}er:x", Perms::ALL),
            world_acl(Perms::READ)
        ]
    );
    assert_eq!(
        client.set_data("/java-explicit", "ours", None).await,
        Err(Error::NoAuth)
    );
    session.assert_untouched(&client);
}

/// 1. A digest id with `😀` on a node our client wrote reads back exactly (hidden hash before
///    authenticating, whole id after), and the server matches it against the credentials.
#[tokio::test]
async fn acl_written_by_our_client_reads_back_exactly() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let session = Session::of(&client);

    let (path, _) = client
        .create(
            "/emoji",
            "data",
            &CreateOptions::persistent().with_acl(emoji_acl()),
        )
        .await
        .expect("create with the emoji digest ACL");
    assert_eq!(path, "/emoji");
    let (acl, _) = client.get_acl("/emoji").await.expect("getACL");
    assert_eq!(acl, redacted(&emoji_acl()));

    client
        .add_digest_auth(USER, PASSWORD)
        .await
        .expect("addAuth");
    for _ in 0..3 {
        let (acl, stat) = client.get_acl("/emoji").await.expect("getACL");
        assert_eq!(acl, emoji_acl());
        assert_eq!(acl[0].id.id, emoji_digest());
        assert_eq!(stat.aversion, 0);
    }
    // setACL with the same id alone (ADMIN comes from it), then read again.
    let only_digest = emoji_acl()[..1].to_vec();
    client
        .set_acl("/emoji", only_digest.clone(), Some(0))
        .await
        .expect("setACL");
    let (acl, stat) = client.get_acl("/emoji").await.expect("getACL");
    assert_eq!((acl, stat.aversion), (only_digest, 1));
    // The server matched the credentials against the stored id: the id is the user's.
    assert_eq!(
        &client.get_data("/emoji").await.expect("getData").0[..],
        b"data"
    );
    session.assert_untouched(&client);
}

/// 2. whoAmI reports the user with `😀`, every time, on the same connection.
#[tokio::test]
async fn who_am_i_reports_the_emoji_user_without_dropping_the_connection() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let session = Session::of(&client);

    client
        .add_digest_auth(USER, PASSWORD)
        .await
        .expect("addAuth");
    // The server keeps a session's ids in a set: the order of the list is not part of it.
    let expected = vec![client_info("digest", USER), client_info("ip", "127.0.0.1")];
    for _ in 0..5 {
        assert_eq!(sorted(client.who_am_i().await.expect("whoAmI")), expected);
        session.assert_untouched(&client);
    }
    // Several at once.
    let replies = futures_util::future::join_all((0..5).map(|_| client.who_am_i())).await;
    for reply in replies {
        assert_eq!(sorted(reply.expect("whoAmI")), expected);
    }
    // The session goes on as before.
    client
        .create("/after", "", &CreateOptions::persistent())
        .await
        .expect("create after whoAmI");
    session.assert_untouched(&client);
}

/// 3. Requests pipelined around getACL and whoAmI replies in Java's form all succeed, in order.
#[tokio::test]
async fn requests_pipelined_around_java_strings_all_succeed() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create(
            "/emoji",
            "",
            &CreateOptions::persistent().with_acl(emoji_acl()),
        )
        .await
        .expect("create /emoji");
    client
        .create("/pipe", "v0", &CreateOptions::persistent())
        .await
        .expect("create /pipe");
    client
        .add_digest_auth(USER, PASSWORD)
        .await
        .expect("addAuth");
    let session = Session::of(&client);

    // Every call is queued when it is made: all of them are in flight before any reply.
    let create = client.create("/pipe/new", "n", &CreateOptions::persistent());
    let acl = client.get_acl("/emoji");
    let data = client.get_data("/pipe");
    let who = client.who_am_i();
    let exists = client.exists("/pipe/new");
    let children = client.get_children("/pipe");
    let set = client.set_data("/pipe", "v1", Some(0));
    let acl_again = client.get_acl("/emoji");
    let who_again = client.who_am_i();
    let data_after = client.get_data("/pipe");
    let (create, acl, data, who, exists, children, set, acl_again, who_again, data_after) = tokio::join!(
        create, acl, data, who, exists, children, set, acl_again, who_again, data_after
    );

    assert_eq!(create.expect("create").0, "/pipe/new");
    assert_eq!(acl.expect("getACL").0, emoji_acl());
    assert_eq!(&data.expect("getData").0[..], b"v0");
    let who = sorted(who.expect("whoAmI"));
    assert_eq!(
        who,
        [client_info("digest", USER), client_info("ip", "127.0.0.1")]
    );
    assert!(exists.expect("exists").is_some());
    assert_eq!(children.expect("getChildren"), ["new"]);
    assert_eq!(set.expect("setData").version, 1);
    assert_eq!(acl_again.expect("getACL").0, emoji_acl());
    assert_eq!(sorted(who_again.expect("whoAmI")), who);
    assert_eq!(&data_after.expect("getData").0[..], b"v1");
    session.assert_untouched(&client);
}

/// 4. No path can hold a character outside the BMP: our client refuses to send one, and the
///    server (sent one by hand, in UTF-8 or in Java's CESU-8) answers BadArguments. So no
///    child name or watch event path carries such a character, and there is no such reply to
///    read back. (This one checks the server, not our decoder; it passes on the old code too.)
#[tokio::test]
async fn the_server_rejects_paths_outside_the_bmp() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    assert!(matches!(
        client
            .create("/x😀", "", &CreateOptions::persistent())
            .await,
        Err(Error::InvalidPath(_))
    ));

    // The kit's raw session is blocking: it runs on a blocking thread, not the runtime's.
    let addr = server.addr();
    blocking(move || {
        let mut raw = RawSession::connect(addr);
        let utf8 = "/x😀".as_bytes();
        let cesu8 = b"/x\xed\xa0\xbd\xed\xb8\x80";
        for (xid, path) in [(1, utf8), (2, &cesu8[..])] {
            let header = raw.create_with_path_bytes(xid, path);
            assert_eq!((header.xid, header.err), (xid, ErrorCode::BAD_ARGUMENTS));
        }
        // A valid path on the same raw session is created: the requests were well formed.
        let header = raw.create_with_path_bytes(3, b"/x");
        assert_eq!((header.xid, header.err), (3, ErrorCode::OK));
    })
    .await;
    let mut children = client.get_children("/").await.expect("ls /");
    children.sort();
    assert_eq!(children, ["x", "zookeeper"]);
}
