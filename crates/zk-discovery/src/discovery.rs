//! Registering and querying instances: [`ServiceDiscovery`] and [`Registration`].

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use zk_proto::Client;
use zk_recipes::persistent::PersistentNode;

use crate::cache::ServiceCacheBuilder;
use crate::layout::{Skipped, check_name, join};
use crate::provider::ServiceProviderBuilder;
use crate::{Error, Result, ServiceInstance, ServiceType};

/// Service discovery under a base path, in Curator's layout: `<base>/<service name>/<instance
/// id>`, each instance node holding its [`ServiceInstance`] as JSON.
///
/// Passive: it sends nothing until called. Registering starts a background task per
/// instance ([`Registration`]); caches and providers are built from it
/// ([`cache`](Self::cache), [`provider`](Self::provider)).
#[derive(Debug, Clone)]
pub struct ServiceDiscovery {
    client: Client,
    base: String,
}

/// What a query found: the instances, and the nodes skipped because their data is not an
/// instance.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Instances {
    /// The instances, ordered by node name.
    pub instances: Vec<ServiceInstance>,
    /// The nodes whose data is not a service instance, with why.
    pub skipped: Vec<Skipped>,
}

impl ServiceDiscovery {
    /// Discovery under `base_path` (`/services`, say; created when the first instance
    /// registers).
    pub fn new(client: &Client, base_path: &str) -> ServiceDiscovery {
        let base = base_path.trim_end_matches('/');
        ServiceDiscovery {
            client: client.clone(),
            base: if base.is_empty() {
                "/".into()
            } else {
                base.into()
            },
        }
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.base
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The node of the service `name`: `<base>/<name>`.
    pub fn service_path(&self, name: &str) -> String {
        join(&self.base, name)
    }

    /// The node of an instance: `<base>/<name>/<id>`.
    pub fn instance_path(&self, name: &str, id: &str) -> String {
        join(&self.service_path(name), id)
    }

    /// Registers `instance`: creates its node (with missing parents, as containers) and
    /// waits until it exists, at most `timeout`. A background task keeps it: created again
    /// when deleted by someone else, and in the next session after an expiry when the client
    /// renews expired sessions (`ClientBuilder::renew_expired_sessions`). A
    /// [`ServiceType::Dynamic`] instance is an ephemeral node, a
    /// [`DynamicSequential`](ServiceType::DynamicSequential) one an ephemeral sequential node
    /// `<id><sequence>`, [`Static`](ServiceType::Static) and
    /// [`Permanent`](ServiceType::Permanent) ones persistent nodes.
    ///
    /// An ephemeral node of the same path held by another session is waited out (Curator
    /// deletes it instead); a persistent one is taken over, its data replaced.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for a name or id that cannot be a node name;
    /// [`Error::Unwritable`] for a [`ServiceType::Other`]; [`Error::Timeout`] (the node is
    /// then not kept: it is deleted if it was made); why the keeper stopped (a session
    /// expiry on a client that does not renew sessions, [`zk_proto::Error::NoAuth`], ...).
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the registration, which deletes the node in the
    /// background if it was made.
    pub async fn register(
        &self,
        instance: &ServiceInstance,
        timeout: Option<Duration>,
    ) -> Result<Registration> {
        check_name("service name", &instance.name)?;
        check_name("instance id", &instance.id)?;
        let path = self.instance_path(&instance.name, &instance.id);
        let builder = PersistentNode::builder(&self.client, &path, instance.to_json());
        let builder = match &instance.service_type {
            ServiceType::Dynamic => builder.ephemeral(),
            ServiceType::DynamicSequential => builder.ephemeral().sequential(),
            ServiceType::Static | ServiceType::Permanent => builder,
            ServiceType::Other(name) => {
                return Err(Error::Unwritable {
                    reason: format!("unknown service type {name:?}"),
                });
            }
        };
        let registration = Registration {
            node: builder.start(),
            instance: Mutex::new(instance.clone()),
        };
        registration.wait_registered(timeout).await?;
        Ok(registration)
    }

    /// The names of the services: the children of the base path (none when it does not
    /// exist; Curator's `queryForNames` throws `NoNode` then).
    ///
    /// # Errors
    ///
    /// The ZooKeeper errors of the read.
    pub async fn query_for_names(&self) -> Result<Vec<String>> {
        match self.client.get_children(&self.base).await {
            Ok(mut names) => {
                names.sort();
                Ok(names.to_vec())
            }
            Err(zk_proto::Error::NoNode) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The instances of the service `name` (none when the service does not exist): one
    /// child listing, then every instance's data read in one pipelined burst. A node deleted
    /// between the two is left out; a node whose data is not an instance is in
    /// [`Instances::skipped`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`]; the ZooKeeper errors of the reads.
    pub async fn query_for_instances(&self, name: &str) -> Result<Instances> {
        check_name("service name", name)?;
        let service = self.service_path(name);
        let mut ids = match self.client.get_children(&service).await {
            Ok(ids) => ids,
            Err(zk_proto::Error::NoNode) => return Ok(Instances::default()),
            Err(e) => return Err(e.into()),
        };
        ids.sort();
        // The client sends each request when it is called: the reads go out together.
        let reads: Vec<_> = ids
            .iter()
            .map(|id| {
                let path = join(&service, id);
                let read = self.client.get_data(&path);
                (path, read)
            })
            .collect();
        let mut found = Instances::default();
        for (path, read) in reads {
            match read.await {
                Ok((data, _)) => match ServiceInstance::from_json(&data) {
                    Ok(instance) => found.instances.push(instance),
                    Err(reason) => found.skipped.push(Skipped { path, reason }),
                },
                Err(zk_proto::Error::NoNode) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(found)
    }

    /// The instance `id` of the service `name`, `None` when there is no such node.
    ///
    /// # Errors
    ///
    /// [`Error::BadInstance`] when the node's data is not an instance;
    /// [`Error::InvalidName`]; the ZooKeeper errors of the read.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance>> {
        check_name("service name", name)?;
        check_name("instance id", id)?;
        let path = self.instance_path(name, id);
        match self.client.get_data(&path).await {
            Ok((data, _)) => ServiceInstance::from_json(&data)
                .map(Some)
                .map_err(|reason| Error::BadInstance { path, reason }),
            Err(zk_proto::Error::NoNode) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `instance` over the node `<base>/<name>/<id>`, which must exist (registered by
    /// anyone, in any process), with its unknown fields ([`ServiceInstance::extra`]). To
    /// change an instance this process keeps registered, use [`Registration::update`], which
    /// also keeps the new data for when the node is created again.
    ///
    /// # Errors
    ///
    /// [`zk_proto::Error::NoNode`] when it does not exist; [`Error::InvalidName`]; the
    /// ZooKeeper errors of the write.
    pub async fn update_instance(&self, instance: &ServiceInstance) -> Result<()> {
        check_name("service name", &instance.name)?;
        check_name("instance id", &instance.id)?;
        let path = self.instance_path(&instance.name, &instance.id);
        self.client
            .set_data(&path, instance.to_json(), None)
            .await?;
        Ok(())
    }

    /// A service cache of the service `name` (see [`ServiceCacheBuilder`]).
    pub fn cache(&self, name: &str) -> ServiceCacheBuilder {
        ServiceCacheBuilder::new(&self.client, &self.service_path(name))
    }

    /// A provider of instances of the service `name` (see [`ServiceProviderBuilder`]).
    pub fn provider(&self, name: &str) -> ServiceProviderBuilder {
        ServiceProviderBuilder::new(self.cache(name))
    }
}

/// An instance this process keeps registered (see [`ServiceDiscovery::register`]).
/// Dropping it unregisters the instance (the delete is sent in the background).
///
/// # Session loss
///
/// While the client is disconnected the node may or may not exist (an ephemeral one lives
/// until the ensemble expires the session); it is checked again, and created if missing, on
/// the next connection. After an expiry the node is created again in the client's next
/// session if it renews expired sessions; otherwise the registration ends with
/// [`zk_proto::Error::SessionExpired`] ([`ended`](Self::ended)).
#[derive(Debug)]
pub struct Registration {
    node: PersistentNode,
    instance: Mutex<ServiceInstance>,
}

impl Registration {
    /// The instance as last registered or updated.
    pub fn instance(&self) -> ServiceInstance {
        self.instance
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The instance's node while it exists, as far as the registration knows (for a
    /// [`ServiceType::DynamicSequential`] instance, the name with its sequence number).
    pub fn path(&self) -> Option<String> {
        self.node.path()
    }

    /// Replaces the registered instance (Curator's `updateService`): written now if the node
    /// exists, and kept for when it is created again.
    ///
    /// # Errors
    ///
    /// [`Error::Unwritable`] when `instance` has another name, id or service type than the
    /// registered one; the ZooKeeper errors of the write (the new instance is still the one
    /// kept).
    pub async fn update(&self, instance: &ServiceInstance) -> Result<()> {
        {
            let mut current = self.instance.lock().unwrap_or_else(PoisonError::into_inner);
            if current.name != instance.name
                || current.id != instance.id
                || current.service_type != instance.service_type
            {
                return Err(Error::Unwritable {
                    reason: format!(
                        "an update keeps the name, id and type ({}/{} {}), got {}/{} {}",
                        current.name,
                        current.id,
                        current.service_type.as_str(),
                        instance.name,
                        instance.id,
                        instance.service_type.as_str()
                    ),
                });
            }
            *current = instance.clone();
        }
        self.node.set_data(instance.to_json()).await?;
        Ok(())
    }

    /// Waits until the instance's node exists; at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; why the registration ended, when it did.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_registered(&self, timeout: Option<Duration>) -> Result<()> {
        self.node.wait_created(timeout).await?;
        Ok(())
    }

    /// Why the registration ended by itself, `None` while it is kept: the session's end on
    /// a client that does not renew sessions, or an error retrying cannot cure.
    pub fn ended(&self) -> Option<Error> {
        self.node.ended().map(Error::from)
    }

    /// Waits until the registration ends by itself, and returns why (as
    /// [`ended`](Self::ended)).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        self.node.wait_ended().await.into()
    }

    /// Unregisters: stops keeping the node and deletes it (gone already is fine).
    ///
    /// # Errors
    ///
    /// Why the registration had ended by itself, if it had (the node is then not deleted).
    pub async fn unregister(self) -> Result<()> {
        self.node.close().await?;
        Ok(())
    }
}
