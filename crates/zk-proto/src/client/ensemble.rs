//! The session across servers and processes: the servers it may use and the one it is on,
//! the ensemble's configuration and membership changes, and handing the session to another
//! process (`docs/client.md`, "Changing ensembles").

use std::future::Future;

use bytes::Bytes;
use jute::{GetDataResponse, ReconfigRequest, Stat};
use tokio::sync::{mpsc, oneshot};

use super::{Client, OneshotWatcher};
use crate::driver::Command;
use crate::session::Op;
use crate::{Error, Result};

impl Client {
    /// The session's password, opaque: with [`session_id`](Self::session_id), what another
    /// process needs to take the session over ([`ClientBuilder::resume`](crate::ClientBuilder::resume)). Keep it secret:
    /// whoever has both owns the session and its ephemeral nodes. A [`Secret`](crate::Secret):
    /// never in `Debug` output, wiped when dropped.
    pub fn session_password(&self) -> crate::Secret {
        self.shared.published.borrow().password.clone()
    }

    /// The servers the session may use now, in the order it tries them: the connect string's,
    /// or the last list given to [`update_hosts`](Self::update_hosts) (also by following the
    /// ensemble's configuration).
    pub fn hosts(&self) -> Vec<crate::connect_string::HostAddr> {
        self.shared.published.borrow().hosts.to_vec()
    }

    /// The server this session is connected to now (`None` while it is not connected, also
    /// during a move to another server, while the state stays `Connected`).
    pub fn server(&self) -> Option<crate::connect_string::HostAddr> {
        self.shared.published.borrow().server.clone()
    }

    /// Leaves the session to another process without closing it: the connection is dropped
    /// with nothing sent, later calls fail with [`Error::Closed`] and the state reads
    /// [`SessionState::Closed`](crate::SessionState::Closed), but the server keeps the session and its ephemeral nodes
    /// until a client resumes it ([`ClientBuilder::resume`](crate::ClientBuilder::resume) with [`session_id`](Self::session_id)
    /// and [`session_password`](Self::session_password)) or it expires. (Dropping the last
    /// handle, or [`close`](Self::close), ends the session on the server.) Two live clients
    /// on one session take it from each other on every reconnect: detach the old one first.
    pub async fn detach(&self) {
        let (reply, rx) = oneshot::channel();
        if self.shared.tx.send(Command::Detach { reply }).is_ok() {
            let _ = rx.await;
        }
    }

    /// Changes the ensemble's membership; returns the new configuration and the Stat of
    /// `/zookeeper/config`.
    ///
    /// # Errors
    ///
    /// [`Error::ReconfigDisabled`], [`Error::NewConfigNoQuorum`],
    /// [`Error::ReconfigInProgress`], [`Error::BadVersion`], and the connection errors.
    pub fn reconfig(
        &self,
        request: ReconfigRequest,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = self.call::<GetDataResponse>(Op::Reconfig(request));
        async move { reply.await.map(|r| (r.data.unwrap_or_default(), r.stat)) }
    }

    /// The ensemble's configuration (`/zookeeper/config`, outside any chroot) and its Stat;
    /// [`ensemble_config::client_hosts`](crate::ensemble_config::client_hosts) reads the
    /// servers from it.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`] on servers before 3.5, [`Error::NoAuth`], and the connection errors.
    pub fn get_config(
        &self,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = self.call::<GetDataResponse>(Op::GetConfig { watch: false });
        async move { reply.await.map(|r| (r.data.unwrap_or_default(), r.stat)) }
    }

    /// Like [`get_config`](Self::get_config), leaving a watch that fires when the
    /// configuration changes.
    ///
    /// # Errors
    ///
    /// As [`get_config`](Self::get_config) (then no watch is left).
    pub fn get_config_watch(
        &self,
    ) -> impl Future<Output = Result<(Bytes, Stat, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched::<GetDataResponse>(Op::GetConfig { watch: true });
        async move {
            let (result, watcher) = reply.await;
            result.map(|r| (r.data.unwrap_or_default(), r.stat, watcher))
        }
    }

    /// Replaces the servers this session may use, at run time (the Java client's
    /// `updateServerList`), from a connect string whose chroot is none or the session's own.
    /// The session is kept: when its server is no longer listed it moves to another one at
    /// once; when servers were added it moves to one of them with the probability that
    /// evens the load across the new list (see `docs/client.md`, "Changing ensembles"), and
    /// stays otherwise. A move fails the calls in flight with [`Error::ConnectionLoss`], as
    /// any change of server does. Returns whether the session moves.
    ///
    /// # Errors
    ///
    /// A malformed connect string, [`Error::InvalidArgument`] for another chroot, and
    /// [`Error::Closed`] once the client is closed.
    pub fn update_hosts(
        &self,
        connect_string: &str,
    ) -> impl Future<Output = Result<bool>> + Send + 'static + use<> {
        self.send_hosts(connect_string, true)
    }

    /// Sends a new host list; `rebalance: false` moves the session only if its server is no
    /// longer listed (for a list learned rather than changed).
    pub(crate) fn send_hosts(
        &self,
        connect_string: &str,
        rebalance: bool,
    ) -> impl Future<Output = Result<bool>> + Send + 'static + use<> {
        let parsed = connect_string
            .parse::<crate::connect_string::ConnectString>()
            .map_err(Error::from);
        let reply = parsed.map(|parsed| {
            let (hosts, chroot) = parsed.into_parts();
            let (reply, rx) = oneshot::channel();
            let command = Command::UpdateHosts {
                hosts,
                chroot,
                rebalance,
                reply,
            };
            if let Err(mpsc::error::SendError(Command::UpdateHosts { reply, .. })) =
                self.shared.tx.send(command)
            {
                let _ = reply.send(Err(Error::Closed));
            }
            rx
        });
        async move { reply?.await.unwrap_or(Err(Error::Closed)) }
    }
}
