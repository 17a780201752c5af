//! The public, cheaply cloneable client handle ([`Client`]): every ZooKeeper call, queued when
//! it is made. Its builder, the call options and the watch handles have modules of their own.

mod admin;
mod builder;
mod ensemble;
mod follow;
mod options;
mod quorum;
mod reply;
#[cfg(feature = "request-timing")]
mod timing;
mod watcher;

pub use builder::ClientBuilder;
pub use options::{CreateOptions, MultiItem, MultiReadItem};
pub use quorum::QuorumCheck;
pub use watcher::{OneshotWatcher, PersistentWatcher};

use reply::{PendingReply, ReplyBody, typed};

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use jute::{
    AddWatchMode, Create2Response, ErrorResponse, ExistsResponse, GetAclResponse,
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse, GetDataResponse,
    GetEphemeralsResponse, MultiResponse, MultiResult, SetAclResponse, SetDataResponse, Stat,
    StringList, SyncResponse, WatcherType, WhoAmIResponse,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::acl::{Acl, ClientInfo};
use crate::driver::{Command, Delivery, Published, WatchSink};
use crate::session::{MultiOperation, Op, SessionState};
use crate::{Error, ProtocolError, Result};

#[derive(Debug)]
struct Shared {
    tx: mpsc::UnboundedSender<Command>,
    published: watch::Receiver<Published>,
    states: watch::Receiver<SessionState>,
    watch_capacity: usize,
    /// [`ClientBuilder::renew_expired_sessions`].
    renews_expired: bool,
    /// [`ClientBuilder::max_frame_len`].
    max_frame_len: usize,
    /// Request timing (feature `request-timing`; zero-sized and idle without it).
    timing: crate::request_timing::Recorder,
}

/// A ZooKeeper client: a cheap, cloneable handle on one session.
///
/// # Ordering
///
/// Every call is queued when it is made, not when its future is first polled: calls made
/// one after the other reach the server in that order, and their replies come back in that
/// order, whether or not their futures are awaited concurrently. A watch event is delivered
/// to its watcher before the reply of any later call that saw the change.
///
/// # Cancellation safety
///
/// Every returned future is cancel-safe in the sense that dropping it never desynchronizes
/// the connection: the request may still be sent and executed, and its reply is read and
/// discarded.
///
/// # Connection loss
///
/// A call in flight when the connection drops fails with [`Error::ConnectionLoss`]: it may
/// or may not have been applied. Calls made while disconnected wait for the next
/// connection (bounded by the request timeout and by the session's end).
///
/// # Futures borrow nothing
///
/// A call copies what it needs before returning, so its future is `Send + 'static` and keeps
/// no borrow of the client, the path or the options: it can be stored, spawned, or returned
/// from a wrapper of your own after its arguments are gone. (A generic `data` argument stays
/// in the future's type, so data borrowed for less than `'static` must be owned, e.g. a
/// `Vec<u8>`, for the future to be `'static`.)
///
/// ```rust,no_run
/// use std::future::Future;
/// use zk_proto::{Client, CreateOptions, Result, Stat};
///
/// struct Jobs {
///     client: Client,
/// }
///
/// impl Jobs {
///     fn add(&self, id: u32, payload: Vec<u8>) -> impl Future<Output = Result<(String, Stat)>> + 'static {
///         self.client.create(&format!("/jobs/{id}"), payload, &CreateOptions::persistent())
///     }
///
///     fn read(&self, id: u32) -> impl Future<Output = Result<(bytes::Bytes, Stat)>> + 'static {
///         self.client.get_data(&format!("/jobs/{id}"))
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    shared: Arc<Shared>,
    request_timeout: Option<Duration>,
}

/// A result the server put in a multi reply that its request could not have produced: the
/// reply decoded (a multi's results are tagged), so only that item fails.
fn misreported(what: &'static str) -> Error {
    Error::Protocol(ProtocolError::UnexpectedResponse(what))
}

impl Client {
    /// Connects with the default settings (see [`ClientBuilder`]).
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::connect`].
    pub async fn connect(connect_string: &str) -> Result<Client> {
        ClientBuilder::new().connect(connect_string).await
    }

    /// A builder for other settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// A handle on the same session whose calls time out after `timeout`
    /// ([`Error::RequestTimeout`]).
    #[must_use]
    pub fn with_request_timeout(&self, timeout: Duration) -> Client {
        Client {
            shared: self.shared.clone(),
            request_timeout: Some(timeout),
        }
    }

    /// The current session state.
    pub fn state(&self) -> SessionState {
        self.shared.published.borrow().state
    }

    /// A receiver of the session state: `changed().await` wakes on every change (a receiver
    /// that falls behind sees the latest state), and `borrow()` is always the state now, as
    /// [`state`](Self::state) is. The current state counts as seen. Once the client's task
    /// has ended, `changed()` fails and `borrow()` keeps the last state.
    pub fn state_watcher(&self) -> watch::Receiver<SessionState> {
        let mut states = self.shared.states.clone();
        states.borrow_and_update();
        states
    }

    /// The session id (0 before the first connection, and while a renewed session is being
    /// established).
    pub fn session_id(&self) -> i64 {
        self.shared.published.borrow().session_id
    }

    /// Whether the client starts a new session when its session expires
    /// ([`ClientBuilder::renew_expired_sessions`]): if so, [`SessionState::Expired`] is
    /// followed by `Connecting` and a new [`session_id`](Self::session_id).
    pub fn renews_expired_sessions(&self) -> bool {
        self.shared.renews_expired
    }

    /// The largest frame this client accepts from the server
    /// ([`ClientBuilder::max_frame_len`]): a reply over it fails with
    /// [`Error::ReplyTooLarge`]. Recipes that batch reads size their batches by it.
    pub fn max_frame_len(&self) -> usize {
        self.shared.max_frame_len
    }

    /// The error every call gets now that the session is over: [`Error::SessionExpired`],
    /// [`Error::AuthFailed`] with its cause, [`Error::NoServerReachable`] with the last
    /// failure when every server refused the session's reconnection for good (a TLS
    /// failure), or [`Error::Closed`]; `None` while the session runs.
    pub fn ended_with(&self) -> Option<Error> {
        let published = self.shared.published.borrow();
        match published.state {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed(
                published
                    .auth_failure
                    .clone()
                    .unwrap_or_else(crate::AuthFailure::refused_by_server),
            )),
            SessionState::Closed => Some(published.gave_up_with.clone().unwrap_or(Error::Closed)),
            _ => None,
        }
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        self.shared.published.borrow().negotiated_timeout
    }

    fn send(&self, op: Op, watch: Option<WatchSink>) -> PendingReply {
        let (reply, rx) = oneshot::channel::<Delivery>();
        let command = Command::Submit {
            op,
            timeout: self.request_timeout,
            reply,
            watch,
            issued: self.shared.timing.issued(),
        };
        if let Err(mpsc::error::SendError(Command::Submit { reply, .. })) =
            self.shared.tx.send(command)
        {
            let _ = reply.send(Err(Error::Closed).into());
        }
        PendingReply {
            rx,
            receiving: Some(self.shared.timing.receiving()),
        }
    }

    /// Sends `op` and reads its reply as `R`: the body its op code replies with (jute's
    /// `Response` table pairs them; `()` for ops without a body).
    fn call<R: ReplyBody>(
        &self,
        op: Op,
    ) -> impl Future<Output = Result<R>> + Send + 'static + use<R> {
        self.send(op, None).map(typed::<R>)
    }

    /// As [`call`](Self::call), with the one-shot watcher the op leaves.
    fn call_watched<R: ReplyBody>(
        &self,
        op: Op,
    ) -> impl Future<Output = (Result<R>, OneshotWatcher)> + Send + 'static + use<R> {
        let (tx, rx) = oneshot::channel();
        self.send(op, Some(WatchSink::Once(tx)))
            .map(move |reply| (typed(reply), OneshotWatcher { rx }))
    }

    /// Creates a node; returns its path (with the sequence suffix for sequential modes) and
    /// its Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NodeExists`], [`Error::NoNode`] (no parent), [`Error::NoChildrenForEphemerals`],
    /// [`Error::InvalidAcl`], [`Error::InvalidPath`], [`Error::Unimplemented`] (TTL disabled on
    /// the server), and the connection errors.
    pub fn create<D: Into<Bytes>>(
        &self,
        path: &str,
        data: D,
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static + use<D> {
        let op = Op::Create {
            path: path.to_owned(),
            data: data.into(),
            acl: options.acl.clone(),
            mode: options.mode,
            ttl: options.ttl_ms(),
        };
        let reply = self.call::<Create2Response>(op);
        async move { reply.await.map(|r| (r.path.unwrap_or_default(), r.stat)) }
    }

    /// Deletes a node at `version` (`None`: any version).
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::NotEmpty`], and the connection errors.
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call::<()>(Op::Delete {
            path: path.to_owned(),
            version,
        });
        async move { reply.await.map(drop) }
    }

    /// The node's Stat, `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'static + use<> {
        let reply = self.call::<ExistsResponse>(Op::Exists {
            path: path.to_owned(),
            watch: false,
        });
        async move {
            match reply.await {
                Ok(r) => Ok(Some(r.stat)),
                Err(Error::NoNode) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    /// Like [`exists`](Self::exists), leaving a watch that fires on creation, data change or
    /// deletion (also when the node does not exist yet).
    ///
    /// # Errors
    ///
    /// The connection errors (then no watch is left).
    pub fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched::<ExistsResponse>(Op::Exists {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            match result {
                Ok(r) => Ok((Some(r.stat), watcher)),
                Err(Error::NoNode) => Ok((None, watcher)),
                Err(e) => Err(e),
            }
        }
    }

    /// The node's data and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::NoAuth`], and the connection errors.
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = self.call::<GetDataResponse>(Op::GetData {
            path: path.to_owned(),
            watch: false,
        });
        async move { reply.await.map(|r| (r.data.unwrap_or_default(), r.stat)) }
    }

    /// Like [`get_data`](Self::get_data), leaving a watch that fires on data change or
    /// deletion.
    ///
    /// # Errors
    ///
    /// As [`get_data`](Self::get_data) (then no watch is left).
    pub fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched::<GetDataResponse>(Op::GetData {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            result.map(|r| (r.data.unwrap_or_default(), r.stat, watcher))
        }
    }

    /// Sets the node's data at `version` (`None`: any); returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::PacketTooLarge`], and the connection
    /// errors.
    pub fn set_data<D: Into<Bytes>>(
        &self,
        path: &str,
        data: D,
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<D> {
        let reply = self.call::<SetDataResponse>(Op::SetData {
            path: path.to_owned(),
            data: data.into(),
            version,
        });
        async move { reply.await.map(|r| r.stat) }
    }

    /// The node's ACL and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'static + use<> {
        let reply = self.call::<GetAclResponse>(Op::GetAcl {
            path: path.to_owned(),
        });
        async move { reply.await.map(|r| (crate::acl::from_wire(r.acl), r.stat)) }
    }

    /// Sets the node's ACL at ACL `version` (`None`: any); returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::InvalidAcl`], [`Error::NoAuth`], and
    /// the connection errors.
    pub fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<> {
        let reply = self.call::<SetAclResponse>(Op::SetAcl {
            path: path.to_owned(),
            acl,
            version,
        });
        async move { reply.await.map(|r| r.stat) }
    }

    /// The names of the node's children (not sorted), as a [`StringList`]: all the names in one
    /// buffer, read as `&str` (`iter`, `get`, `contains`); `.to_vec()` gives a `Vec<String>`.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<StringList>> + Send + 'static + use<> {
        let reply = self.call::<GetChildrenResponse>(Op::GetChildren {
            path: path.to_owned(),
            watch: false,
        });
        async move { reply.await.map(|r| names(r.children)) }
    }

    /// Like [`get_children`](Self::get_children), leaving a watch that fires when the child
    /// list changes or the node is deleted.
    ///
    /// # Errors
    ///
    /// As [`get_children`](Self::get_children) (then no watch is left).
    pub fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(StringList, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched::<GetChildrenResponse>(Op::GetChildren {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            result.map(|r| (names(r.children), watcher))
        }
    }

    /// The children's names and the node's Stat (getChildren2).
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_children2(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(StringList, Stat)>> + Send + 'static + use<> {
        let reply = self.call::<GetChildren2Response>(Op::GetChildren2 {
            path: path.to_owned(),
            watch: false,
        });
        async move { reply.await.map(|r| (names(r.children), r.stat)) }
    }

    /// The number of all descendants of the node.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_all_children_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<i32>> + Send + 'static + use<> {
        let reply = self.call::<GetAllChildrenNumberResponse>(Op::GetAllChildrenNumber {
            path: path.to_owned(),
        });
        async move { reply.await.map(|r| r.total_number) }
    }

    /// The session's ephemeral nodes whose path starts with `prefix` (a raw string prefix;
    /// `"/"` for all), chroot applied and stripped, as a [`StringList`] (`.to_vec()` gives a
    /// `Vec<String>`).
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn get_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<StringList>> + Send + 'static + use<> {
        let reply = self.call::<GetEphemeralsResponse>(Op::GetEphemerals {
            prefix: prefix.to_owned(),
        });
        async move { reply.await.map(|r| names(r.ephemerals)) }
    }

    /// Waits until the server this session is connected to has caught up with the leader.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call::<SyncResponse>(Op::Sync {
            path: path.to_owned(),
        });
        async move { reply.await.map(drop) }
    }

    /// Checks that the node exists, at `version` if given (`None`: any version), as every
    /// versioned call takes it. Sent as a one-operation multi, because a 3.8.0 server never
    /// answers a standalone check that succeeds.
    ///
    /// # Errors
    ///
    /// [`Error::BadVersion`], [`Error::NoNode`], and the connection errors.
    pub fn check(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.multi(vec![MultiOperation::check(path, version)]);
        async move {
            let items = reply.await?;
            match items.first().and_then(MultiItem::error) {
                Some(error) => Err(error.clone()),
                None => Ok(()),
            }
        }
    }

    /// Runs `ops` as one atomic transaction. When it fails nothing is applied, and every item
    /// is [`MultiItem::Failed`]: the failing operation carries its error.
    ///
    /// # Errors
    ///
    /// An invalid operation (nothing sent), and the connection errors.
    pub fn multi(
        &self,
        ops: Vec<MultiOperation>,
    ) -> impl Future<Output = Result<Vec<MultiItem>>> + Send + 'static + use<> {
        let reply = self.call::<MultiResponse>(Op::Multi(ops));
        async move {
            Ok(reply
                .await?
                .results
                .into_iter()
                .map(|result| match result {
                    MultiResult::Create(r) => MultiItem::Created {
                        path: r.path.unwrap_or_default(),
                        stat: None,
                    },
                    MultiResult::Create2(r) => MultiItem::Created {
                        path: r.path.unwrap_or_default(),
                        stat: Some(r.stat),
                    },
                    MultiResult::Delete => MultiItem::Deleted,
                    MultiResult::SetData(r) => MultiItem::DataSet { stat: r.stat },
                    MultiResult::Check => MultiItem::Checked,
                    MultiResult::Error(code) => MultiItem::Failed(Error::from_code(code)),
                    MultiResult::GetChildren(_) | MultiResult::GetData(_) => {
                        MultiItem::Failed(Some(misreported("a read result in a multi")))
                    }
                })
                .collect())
        }
    }

    /// Runs independent reads (getChildren, getData) in one round trip; each has its own
    /// result.
    ///
    /// # Errors
    ///
    /// An invalid operation (nothing sent), and the connection errors.
    pub fn multi_read(
        &self,
        ops: Vec<MultiOperation>,
    ) -> impl Future<Output = Result<Vec<Result<MultiReadItem>>>> + Send + 'static + use<> {
        let reply = self.call::<MultiResponse>(Op::MultiRead(ops));
        async move {
            Ok(reply
                .await?
                .results
                .into_iter()
                .map(|result| match result {
                    MultiResult::GetChildren(r) => Ok(MultiReadItem::Children(names(r.children))),
                    MultiResult::GetData(r) => {
                        Ok(MultiReadItem::Data(r.data.unwrap_or_default(), r.stat))
                    }
                    MultiResult::Error(code) => Err(Error::from_code(code)
                        .unwrap_or(misreported("an error result with code OK"))),
                    _ => Err(misreported("a write result in a multiRead")),
                })
                .collect())
        }
    }

    /// Adds a persistent watch on `path` (with `AddWatchMode::PERSISTENT_RECURSIVE`, on its
    /// whole subtree; child-list changes are not reported by a recursive watch). It stays
    /// until removed with [`remove_watches`](Self::remove_watches) or the session ends, and is
    /// re-registered after every reconnect; changes made while disconnected are not replayed
    /// for persistent watches (a server limitation).
    ///
    /// # Errors
    ///
    /// The connection errors.
    ///
    /// # Cancellation safety
    ///
    /// The request is sent when this is called. Dropped before it completes, the returned
    /// future leaves no watch behind: the server still arms it, and the client removes it as
    /// soon as the reply comes (as when a [`PersistentWatcher`] is dropped), without waiting
    /// for an event on the path.
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 'static + use<> {
        let capacity = self.shared.watch_capacity;
        let commands = self.shared.tx.downgrade();
        let (tx, rx) = mpsc::channel(capacity);
        let overflowed = Arc::new(AtomicBool::new(false));
        let sink = WatchSink::Stream {
            tx,
            overflowed: overflowed.clone(),
        };
        let reply = self.send(
            Op::AddWatch {
                path: path.to_owned(),
                mode,
            },
            Some(sink),
        );
        // Made before the reply, so that a future dropped at any point drops a watcher, whose
        // drop has the connection task remove the watch (at once, or when its reply comes).
        let watcher = PersistentWatcher {
            rx,
            overflowed,
            capacity,
            commands,
            ended: false,
        };
        async move {
            typed::<ErrorResponse>(reply.await)?;
            Ok(watcher)
        }
    }

    /// Removes this session's watches of `watcher_type` on `path`; each removed watcher gets
    /// a `*WatchRemoved` event. On 3.8 servers only `CHILDREN`, `DATA` and `ANY` exist
    /// (`PERSISTENT*` types come with 3.9 and get [`Error::MarshallingError`]); use `ANY` to
    /// remove a persistent watch there.
    ///
    /// # Errors
    ///
    /// [`Error::NoWatcher`], and the connection errors.
    pub fn remove_watches(
        &self,
        path: &str,
        watcher_type: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call::<()>(Op::RemoveWatches {
            path: path.to_owned(),
            watcher_type,
        });
        async move { reply.await.map(drop) }
    }

    /// Checks that this session has watches of `watcher_type` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::NoWatcher`], and the connection errors.
    pub fn check_watches(
        &self,
        path: &str,
        watcher_type: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call::<()>(Op::CheckWatches {
            path: path.to_owned(),
            watcher_type,
        });
        async move { reply.await.map(drop) }
    }

    /// Adds credentials to the session (sent again after every reconnect).
    ///
    /// # Errors
    ///
    /// [`Error::AuthFailed`] (terminal) for a scheme the server rejects, and the connection
    /// errors.
    pub fn add_auth<D: Into<Bytes>>(
        &self,
        scheme: &str,
        auth: D,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<D> {
        let rx = self.send_auth(scheme.to_owned(), auth.into());
        async move { rx.await.map_or(Err(Error::Closed), |d| d.result).map(drop) }
    }

    /// Adds `digest` credentials `user:password` (see
    /// [`acl::digest_acl`](crate::acl::digest_acl) for the matching ACL).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a user name with `:`; as [`add_auth`](Self::add_auth).
    pub fn add_digest_auth(
        &self,
        user: &str,
        password: &str,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = match crate::acl::digest_auth(user, password) {
            Ok((scheme, auth)) => Ok(self.send_auth(scheme, auth)),
            Err(e) => Err(Error::InvalidArgument(e.to_string())),
        };
        async move {
            reply?
                .await
                .map_or(Err(Error::Closed), |d| d.result)
                .map(drop)
        }
    }

    fn send_auth(&self, scheme: String, auth: Bytes) -> oneshot::Receiver<Delivery> {
        let (reply, rx) = oneshot::channel();
        let command = Command::AddAuth {
            scheme,
            auth,
            reply,
        };
        if let Err(mpsc::error::SendError(Command::AddAuth { reply, .. })) =
            self.shared.tx.send(command)
        {
            let _ = reply.send(Err(Error::Closed).into());
        }
        rx
    }

    /// The identities this session is authenticated as.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn who_am_i(
        &self,
    ) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send + 'static + use<> {
        let reply = self.call::<WhoAmIResponse>(Op::WhoAmI);
        async move {
            reply.await.map(|r| {
                let infos = r.client_info.unwrap_or_default();
                infos.into_iter().map(ClientInfo::from).collect()
            })
        }
    }

    /// Closes the session: queued calls go first, then closeSession; waits (at most the close
    /// timeout) for the reply. The session's ephemeral nodes are deleted by the server at
    /// once; every watch is reported lost with [`Error::Closed`]. Idempotent.
    ///
    /// Returns `Ok` once the session is closed or known to be gone: also when the connection
    /// drops while closeSession is in flight (the server closes the session, or expires it),
    /// when no reply comes within the close timeout, and when the session had already ended.
    /// When it returns, [`state`](Self::state) reads [`SessionState::Closed`] (or the terminal
    /// state the session had reached before).
    ///
    /// # Errors
    ///
    /// None in practice; the signature leaves room for it.
    pub async fn close(&self) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        if self.shared.tx.send(Command::Close { reply }).is_err() {
            return Ok(());
        }
        match rx.await.map(|d| d.result) {
            Ok(Ok(_)) | Err(_) => Ok(()),
            Ok(Err(e)) => Err(e),
        }
    }
}

/// A reply's name list: a null list is empty, and null entries (which servers never send) are
/// dropped. No copy when there are none.
fn names(list: Option<StringList>) -> StringList {
    list.map(StringList::without_nulls).unwrap_or_default()
}
