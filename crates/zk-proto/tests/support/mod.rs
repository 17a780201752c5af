//! What the client's integration tests share on top of the test kit (`zk_testkit::client`,
//! which has the connects and the bounded waits): their server, and the TLS settings of the
//! TLS tests.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

#[cfg(feature = "tls")]
pub(crate) mod tls;

use zk_testkit::ZkServer;
use zk_testkit::client::{server_builder, start_server_with};

/// Starts the kit's standalone server with TTL nodes enabled (`extendedTypesEnabled`), off the
/// runtime's threads.
pub(crate) async fn server() -> ZkServer {
    start_server_with(server_builder().extended_types(true)).await
}
