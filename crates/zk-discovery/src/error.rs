//! The crate's error type.

/// Why a discovery call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A ZooKeeper call failed (for example [`zk_proto::Error::SessionExpired`], or
    /// [`zk_proto::Error::Closed`] once a registration or cache was closed).
    #[error(transparent)]
    Zk(#[from] zk_proto::Error),
    /// The call's `timeout` passed before what it waited for happened.
    #[error("the call's timeout passed first")]
    Timeout,
    /// A recipe this crate builds on failed otherwise.
    #[error(transparent)]
    Recipe(zk_recipes::Error),
    /// An instance node does not hold a Curator `ServiceInstance` in JSON.
    #[error("{path}: not a service instance: {reason}")]
    BadInstance {
        /// The instance node.
        path: String,
        /// What is wrong with its data.
        reason: String,
    },
    /// A service name or instance id that cannot be one node's name (empty, `.`, `..`, or
    /// holding a `/` or a NUL).
    #[error("{what} {name:?} cannot be a node name")]
    InvalidName {
        /// What the name is for (`"service name"`, `"instance id"`).
        what: &'static str,
        /// The name.
        name: String,
    },
    /// An instance this call cannot write: a service type this crate does not know, or an
    /// update that changes the registered instance's name or id.
    #[error("cannot write this instance: {reason}")]
    Unwritable {
        /// Why.
        reason: String,
    },
    /// The payload is not of the type asked for ([`ServiceInstance::payload_as`]), or a
    /// value could not be written as a payload.
    ///
    /// [`ServiceInstance::payload_as`]: crate::ServiceInstance::payload_as
    #[error("payload: {reason}")]
    Payload {
        /// The JSON error.
        reason: String,
    },
}

impl From<zk_recipes::Error> for Error {
    fn from(error: zk_recipes::Error) -> Error {
        match error {
            zk_recipes::Error::Zk(e) => Error::Zk(e),
            zk_recipes::Error::Timeout => Error::Timeout,
            other => Error::Recipe(other),
        }
    }
}

/// The result of the crate's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;
