//! Kerberos initiator credentials from an explicit credential store: a credential cache
//! and/or a client keytab named by the caller, instead of the process-wide defaults
//! (`KRB5CCNAME`, `KRB5_CLIENT_KTNAME`) that `libgssapi`'s `Cred::acquire` reads.
//!
//! It wraps the one call `libgssapi` does not offer, MIT krb5's credential store extension
//! `gss_acquire_cred_from` (krb5 1.11 and later; Heimdal does not have it), and hands the
//! result back as a `libgssapi::credential::Cred`, so that each ZooKeeper client of a
//! process can authenticate as its own principal. This crate is the workspace's only
//! `unsafe` code; everything it does is in `acquire_initiator`.
//!
//! Everything is behind the `gssapi` feature (zk-proto's `kerberos` feature turns it on):
//! without it the crate is empty, so building the workspace needs no GSSAPI headers.

#[cfg(feature = "gssapi")]
mod store;

#[cfg(feature = "gssapi")]
pub use store::{AcquireError, CredStore, acquire_initiator};
