//! Building ACLs and credentials: the standard ACL lists of `ZooDefs.Ids` and the `digest`
//! scheme.
//!
//! Schemes in brief: `world` has the single id `anyone`; `auth` stands for every id the session
//! has authenticated (the server substitutes them at create/setACL time and answers InvalidACL
//! if there is none); `digest` ids are `user:BASE64(SHA1("user:password"))` and are earned by
//! sending the clear `user:password` with addAuth; `ip` ids are addresses or CIDR blocks granted
//! from the peer address.
//!
//! An empty ACL list is rejected by the server (InvalidACL).

use base64::Engine as _;
use bytes::Bytes;
use jute::Perms;
use sha1::{Digest as _, Sha1};

/// An identity: an auth scheme and an id within it, e.g. `world:anyone` or
/// `digest:user:BASE64(SHA1(user:password))`.
///
/// The wire format allows either string to be null; the client reads a null as `""` (the
/// server never sends one: it rejects such ids at create and setACL time).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Id {
    /// The scheme: `world`, `auth`, `digest`, `ip`, `x509`, `sasl`, ...
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}

/// One access control entry: `perms` granted to `id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Acl {
    /// The permissions granted.
    pub perms: Perms,
    /// To whom.
    pub id: Id,
}

/// An identity the session is authenticated as, as [`Client::who_am_i`] reports it.
///
/// [`Client::who_am_i`]: https://docs.rs/zk-proto/latest/zk_proto/struct.Client.html#method.who_am_i
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClientInfo {
    /// The auth scheme, e.g. `ip` or `digest`.
    pub auth_scheme: String,
    /// The user within it: an address for `ip`, the user name for `digest`.
    pub user: String,
}

impl From<jute::Id> for Id {
    fn from(id: jute::Id) -> Self {
        Id {
            scheme: id.scheme.unwrap_or_default(),
            id: id.id.unwrap_or_default(),
        }
    }
}

impl From<&Id> for jute::Id {
    fn from(id: &Id) -> Self {
        jute::Id {
            scheme: Some(id.scheme.clone()),
            id: Some(id.id.clone()),
        }
    }
}

impl From<jute::Acl> for Acl {
    fn from(acl: jute::Acl) -> Self {
        Acl {
            perms: acl.perms,
            id: acl.id.into(),
        }
    }
}

impl From<&Acl> for jute::Acl {
    fn from(acl: &Acl) -> Self {
        jute::Acl {
            perms: acl.perms,
            id: (&acl.id).into(),
        }
    }
}

impl From<jute::ClientInfo> for ClientInfo {
    fn from(info: jute::ClientInfo) -> Self {
        ClientInfo {
            auth_scheme: info.auth_scheme.unwrap_or_default(),
            user: info.user.unwrap_or_default(),
        }
    }
}

/// The wire form of an ACL list.
pub(crate) fn to_wire(acl: &[Acl]) -> Vec<jute::Acl> {
    acl.iter().map(jute::Acl::from).collect()
}

/// An ACL list as a reply carries it (getACL's): a null list reads as empty.
pub fn from_wire(acl: Option<Vec<jute::Acl>>) -> Vec<Acl> {
    acl.unwrap_or_default().into_iter().map(Acl::from).collect()
}

/// The `world` scheme: everyone.
pub const WORLD_SCHEME: &str = "world";
/// The only id of the `world` scheme.
pub const ANYONE_ID: &str = "anyone";
/// The `auth` scheme: the ids the session has authenticated.
pub const AUTH_SCHEME: &str = "auth";
/// The `digest` scheme: user name and password.
pub const DIGEST_SCHEME: &str = "digest";

/// A digest credential the server would not interpret as meant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidCredential {
    /// The user name contains `:`. The server splits `user:password` on the **first** `:`, so
    /// such a user could never match its digest id (and the server's `DigestAuthenticationProvider`
    /// rejects such an ACL id as invalid).
    #[error("digest user name {user:?} contains ':'")]
    ColonInUser {
        /// The user name.
        user: String,
    },
}

fn check_user(user: &str) -> Result<(), InvalidCredential> {
    if user.contains(':') {
        return Err(InvalidCredential::ColonInUser {
            user: user.to_owned(),
        });
    }
    Ok(())
}

/// An id from a scheme and an id within it.
pub fn id(scheme: &str, id: &str) -> Id {
    Id {
        scheme: scheme.to_owned(),
        id: id.to_owned(),
    }
}

/// An ACL entry granting `perms` to `scheme:id`; unchecked (the server validates ids).
pub fn acl(scheme: &str, id: &str, perms: Perms) -> Acl {
    Acl {
        perms,
        id: self::id(scheme, id),
    }
}

/// The id `world:anyone`.
pub fn anyone_id() -> Id {
    id(WORLD_SCHEME, ANYONE_ID)
}

/// The id `auth:""`: the server replaces it with every id the session has authenticated.
pub fn auth_ids() -> Id {
    id(AUTH_SCHEME, "")
}

/// The digest id of a user: scheme `digest`, id `user:BASE64(SHA1("user:password"))`, as
/// `DigestAuthenticationProvider.generateDigest` computes it. `("user", "password")` gives
/// `user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=`.
///
/// The password may contain `:`; the user name may not.
///
/// # Errors
///
/// [`InvalidCredential::ColonInUser`] if `user` contains `:`.
pub fn digest_id(user: &str, password: &str) -> Result<Id, InvalidCredential> {
    check_user(user)?;
    let mut sha = Sha1::new();
    sha.update(user.as_bytes());
    sha.update(b":");
    sha.update(password.as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
    Ok(id(DIGEST_SCHEME, &format!("{user}:{hash}")))
}

/// An ACL entry granting `perms` to the digest id of `user`/`password` ([`digest_id`]).
///
/// # Errors
///
/// [`InvalidCredential::ColonInUser`] if `user` contains `:`.
pub fn digest_acl(user: &str, password: &str, perms: Perms) -> Result<Acl, InvalidCredential> {
    Ok(Acl {
        perms,
        id: digest_id(user, password)?,
    })
}

/// The addAuth arguments for a digest credential: the scheme `digest` and the clear
/// `user:password` bytes (the server derives the id with [`digest_id`]'s formula).
///
/// Digest authentication never fails on the server: a wrong password only shows up later as
/// NoAuth on protected nodes.
///
/// # Errors
///
/// [`InvalidCredential::ColonInUser`] if `user` contains `:`.
pub fn digest_auth(user: &str, password: &str) -> Result<(String, Bytes), InvalidCredential> {
    check_user(user)?;
    let auth = format!("{user}:{password}");
    Ok((DIGEST_SCHEME.to_owned(), Bytes::from(auth.into_bytes())))
}

/// An ACL entry granting `perms` to everyone (`world:anyone`).
pub fn world_acl(perms: Perms) -> Acl {
    Acl {
        perms,
        id: anyone_id(),
    }
}

/// An ACL entry granting `perms` to the ids the session has authenticated (`auth:""`).
pub fn auth_acl(perms: Perms) -> Acl {
    Acl {
        perms,
        id: auth_ids(),
    }
}

/// `ZooDefs.Ids.OPEN_ACL_UNSAFE`: every permission to everyone, `[ACL(ALL, world:anyone)]`.
pub fn open_acl_unsafe() -> Vec<Acl> {
    vec![world_acl(Perms::ALL)]
}

/// `ZooDefs.Ids.CREATOR_ALL_ACL`: every permission to the creator's authenticated ids,
/// `[ACL(ALL, auth:"")]`. The server answers InvalidACL if the session has no authenticated
/// id.
pub fn creator_all_acl() -> Vec<Acl> {
    vec![auth_acl(Perms::ALL)]
}

/// `ZooDefs.Ids.READ_ACL_UNSAFE`: read access for everyone, `[ACL(READ, world:anyone)]`.
pub fn read_acl_unsafe() -> Vec<Acl> {
    vec![world_acl(Perms::READ)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id_of(scheme: &str, id: &str) -> Id {
        Id {
            scheme: scheme.to_owned(),
            id: id.to_owned(),
        }
    }

    #[test]
    fn wire_form_round_trips_and_null_reads_as_empty() {
        let list = vec![acl("ip", "10.0.0.0/8", Perms::READ), world_acl(Perms::ALL)];
        assert_eq!(from_wire(Some(to_wire(&list))), list);
        assert_eq!(from_wire(None), Vec::<Acl>::new());
        let null = jute::Acl {
            perms: Perms::READ,
            id: jute::Id {
                scheme: None,
                id: None,
            },
        };
        assert_eq!(
            Acl::from(null),
            Acl {
                perms: Perms::READ,
                id: Id::default()
            }
        );
        let info = jute::ClientInfo {
            auth_scheme: Some("ip".to_owned()),
            user: None,
        };
        assert_eq!(
            ClientInfo::from(info),
            ClientInfo {
                auth_scheme: "ip".to_owned(),
                user: String::new()
            }
        );
    }

    #[test]
    fn digest_test_vector() {
        assert_eq!(
            digest_id("user", "password"),
            Ok(id_of("digest", "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="))
        );
    }

    #[test]
    fn digest_other_vectors() {
        // A colon in the password is part of the hashed string.
        let expected =
            base64::engine::general_purpose::STANDARD.encode(Sha1::digest(b"super:pass:word"));
        assert_eq!(
            digest_id("super", "pass:word"),
            Ok(id_of("digest", &format!("super:{expected}")))
        );
        // Empty password and empty user are consistent with the server's derivation.
        let empty = base64::engine::general_purpose::STANDARD.encode(Sha1::digest(b"u:"));
        assert_eq!(
            digest_id("u", ""),
            Ok(id_of("digest", &format!("u:{empty}")))
        );
        assert!(digest_id("", "p").is_ok());
    }

    #[test]
    fn colon_in_user_is_rejected() {
        let e = InvalidCredential::ColonInUser {
            user: "a:b".to_owned(),
        };
        assert_eq!(digest_id("a:b", "p"), Err(e.clone()));
        assert_eq!(digest_acl("a:b", "p", Perms::ALL), Err(e.clone()));
        assert_eq!(digest_auth("a:b", "p"), Err(e.clone()));
        assert_eq!(e.to_string(), r#"digest user name "a:b" contains ':'"#);
    }

    #[test]
    fn digest_acl_and_auth() {
        assert_eq!(
            digest_acl("user", "password", Perms::READ | Perms::WRITE),
            Ok(Acl {
                perms: Perms(3),
                id: id_of("digest", "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY=")
            })
        );
        assert_eq!(
            digest_auth("user", "password"),
            Ok(("digest".to_owned(), Bytes::from_static(b"user:password")))
        );
        assert_eq!(
            digest_auth("u", "p:q"),
            Ok(("digest".to_owned(), Bytes::from_static(b"u:p:q")))
        );
    }

    #[test]
    fn standard_lists() {
        assert_eq!(
            open_acl_unsafe(),
            [Acl {
                perms: Perms(31),
                id: id_of("world", "anyone")
            }]
        );
        assert_eq!(
            creator_all_acl(),
            [Acl {
                perms: Perms(31),
                id: id_of("auth", "")
            }]
        );
        assert_eq!(
            read_acl_unsafe(),
            [Acl {
                perms: Perms(1),
                id: id_of("world", "anyone")
            }]
        );
        assert_eq!(
            world_acl(Perms::CREATE),
            Acl {
                perms: Perms(4),
                id: id_of("world", "anyone")
            }
        );
        assert_eq!(
            auth_acl(Perms::ADMIN),
            Acl {
                perms: Perms(16),
                id: id_of("auth", "")
            }
        );
        assert_eq!(
            acl("ip", "10.0.0.0/8", Perms::ALL),
            Acl {
                perms: Perms::ALL,
                id: id_of("ip", "10.0.0.0/8")
            }
        );
    }

    proptest! {
        /// What the server does with the auth bytes (`generateDigest`: split on the first ':',
        /// keep the user, hash the whole string) gives the id we compute.
        #[test]
        fn auth_bytes_derive_the_same_id(user in "[^:]{0,8}", password in ".{0,8}") {
            let (scheme, auth) = digest_auth(&user, &password).expect("no colon");
            prop_assert_eq!(scheme.as_str(), DIGEST_SCHEME);
            let auth = std::str::from_utf8(&auth).expect("utf-8");
            let (server_user, _) = auth.split_once(':').expect("has a colon");
            let hash = base64::engine::general_purpose::STANDARD.encode(Sha1::digest(auth));
            let expected = id_of(DIGEST_SCHEME, &format!("{server_user}:{hash}"));
            prop_assert_eq!(digest_id(&user, &password), Ok(expected));
        }
    }
}
