//! Authentication and ACLs, by hand: digest auth packets and the ACL checks they unlock.

use jute::{
    Acl, AuthPacket, CreateMode, CreateRequest, ErrorCode, GetDataRequest, Id, OpCode, Perms,
    Response, SetAclRequest, SetDataRequest,
};
use zk_testkit::raw::{RawSession, XID_AUTH, b, closed_by_server, s};
use zk_testkit::{ZkServer, started};

#[test]
fn digest_auth_and_acls() {
    let server = started(ZkServer::start());
    let mut alice = RawSession::connect(server.addr());
    let auth = AuthPacket {
        auth_type: 0,
        scheme: s("digest"),
        auth: b(b"alice:secret"),
    };
    let (header, body, _) = alice.request_xid(XID_AUTH, OpCode::AUTH, auth);
    assert_eq!(header.err, ErrorCode::OK);
    assert_eq!(body, Some(Response::Empty));

    let (_, who) = alice.ok(OpCode::WHO_AM_I, ());
    let Response::WhoAmI(who) = who else {
        panic!("whoAmI: {who:?}");
    };
    let ids: Vec<(String, String)> = who
        .client_info
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.auth_scheme.unwrap_or_default(),
                c.user.unwrap_or_default(),
            )
        })
        .collect();
    assert!(ids.contains(&("digest".into(), "alice".into())), "{ids:?}");
    assert!(ids.contains(&("ip".into(), "127.0.0.1".into())), "{ids:?}");

    // The `auth` scheme stands for the session's authenticated identities.
    let only_alice = Some(vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: s("auth"),
            id: s(""),
        },
    }]);
    alice.ok(
        OpCode::CREATE,
        CreateRequest {
            path: s("/secret"),
            data: b(b"s"),
            acl: only_alice,
            flags: CreateMode::PERSISTENT,
        },
    );
    let (_, acl) = alice.ok(OpCode::GET_ACL, jute::GetAclRequest { path: s("/secret") });
    let Response::GetAcl(acl) = acl else {
        panic!("getACL: {acl:?}");
    };
    let acl = acl.acl.expect("an ACL");
    assert_eq!(acl.len(), 1);
    assert_eq!(acl[0].perms, Perms::ALL);
    assert_eq!(acl[0].id.scheme, s("digest"));
    assert!(
        acl[0].id.id.as_deref().unwrap_or("").starts_with("alice:"),
        "{acl:?}"
    );

    let mut bob = RawSession::connect(server.addr());
    let get = GetDataRequest {
        path: s("/secret"),
        watch: false,
    };
    assert_eq!(bob.fails(OpCode::GET_DATA, get.clone()), ErrorCode::NO_AUTH);

    // Alice opens it for reading to everyone.
    let read_only = SetAclRequest {
        path: s("/secret"),
        acl: Some(vec![Acl {
            perms: Perms::READ,
            id: Id {
                scheme: s("world"),
                id: s("anyone"),
            },
        }]),
        version: 0,
    };
    let (_, set) = alice.ok(OpCode::SET_ACL, read_only);
    assert!(matches!(set, Response::SetAcl(r) if r.stat.aversion == 1));
    assert_eq!(bob.get_data("/secret", false).0, b(b"s"));
    let write = SetDataRequest {
        path: s("/secret"),
        data: b(b"bob"),
        version: -1,
    };
    assert_eq!(bob.fails(OpCode::SET_DATA, write), ErrorCode::NO_AUTH);

    // An unknown auth scheme fails the auth and ends the connection.
    let bad = AuthPacket {
        auth_type: 0,
        scheme: s("no-such-scheme"),
        auth: b(b"x"),
    };
    bob.send_xid(XID_AUTH, OpCode::AUTH, bad);
    let (header, body, _) = bob.read_reply();
    assert_eq!(header.xid, XID_AUTH);
    assert_eq!(header.err, ErrorCode::AUTH_FAILED);
    assert_eq!(body, None);
    assert!(closed_by_server(&mut bob.stream));
}
