//! `zk-discovery`: service discovery on ZooKeeper in Apache Curator's layout
//! (`curator-x-discovery` 5.4), built on [`zk_proto`] and [`zk_recipes`].
//!
//! ```text
//! /services                     the base path
//! /services/api                 a service (a container node)
//! /services/api/0c6e...-41d2    an instance: Curator's ServiceInstance as JSON;
//!                               ephemeral for ServiceType::Dynamic (the default)
//! ```
//!
//! - [`ServiceDiscovery`]: register instances ([`Registration`]: kept in place, created
//!   again after a session expiry on a client that renews sessions), query the service names
//!   and instances, update an instance.
//! - [`ServiceCache`]: a live view of one service's instances, with a stream of changes
//!   ([`ServiceEvent`]).
//! - [`ServiceProvider`]: picks an instance ([`Strategy`]: round robin, random, sticky),
//!   leaving out disabled instances and those set aside after errors
//!   ([`ServiceProvider::note_error`], [`DownInstancePolicy`]).
//!
//! Curator processes and this crate register, discover and watch each other's instances
//! (`docs/recipes-discovery.md` lists the promises and their tests). The JSON fields this
//! crate does not know are kept ([`ServiceInstance::extra`]) and written back; a node whose
//! data is not an instance is skipped with its reason, never a panic.
//!
//! ```no_run
//! # async fn example() -> zk_discovery::Result<()> {
//! use std::time::Duration;
//! use zk_discovery::{ServiceDiscovery, ServiceInstance, Strategy};
//! use zk_proto::Client;
//!
//! let client = Client::builder()
//!     .renew_expired_sessions(true)
//!     .connect("127.0.0.1:2181")
//!     .await?;
//! let discovery = ServiceDiscovery::new(&client, "/services");
//! let me = ServiceInstance::builder("api").address("10.0.0.7").port(8080).build();
//! let registration = discovery.register(&me, Some(Duration::from_secs(10))).await?;
//!
//! let provider = discovery.provider("api").strategy(Strategy::RoundRobin).start();
//! provider.wait_initialized(Some(Duration::from_secs(10))).await?;
//! if let Some(instance) = provider.get_instance() {
//!     println!("call {:?}:{:?}", instance.address, instance.port);
//! }
//! registration.unregister().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The conventions are the recipes' (`docs/recipes.md`): `new(&client, path)` for what sends
//! nothing until called, `builder(..).start()` for what runs a task, `ended()` and
//! `wait_ended()`, waits that take `&self` and a timeout.

mod cache;
mod discovery;
mod error;
mod instance;
mod layout;
mod provider;

pub use cache::{ServiceCache, ServiceCacheBuilder, ServiceEvent, ServiceEvents};
pub use discovery::{Instances, Registration, ServiceDiscovery};
pub use error::{Error, Result};
pub use instance::{ServiceInstance, ServiceInstanceBuilder, ServiceType};
pub use layout::Skipped;
pub use provider::{
    DownInstancePolicy, InstanceFilter, ServiceProvider, ServiceProviderBuilder, Strategy,
};
pub use serde_json;
pub use zk_proto;

/// The example of `docs/recipes-discovery.md`, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/recipes-discovery.md")]
pub struct DiscoveryGuideDoctests;
