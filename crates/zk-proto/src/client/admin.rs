//! Reconfiguration in the list forms of the Java client's `ZooKeeperAdmin.reconfigure`:
//! servers joining and leaving (incremental), or the whole new membership (non-incremental),
//! beside the raw request [`Client::reconfig`] sends.

use std::future::Future;

use bytes::Bytes;
use jute::{ReconfigRequest, Stat};

use super::Client;
use crate::{Error, Result};

impl Client {
    /// Changes the ensemble's membership incrementally: adds the `joining` servers and
    /// removes the `leaving` server ids, in one reconfiguration (the Java client's
    /// `ZooKeeperAdmin.reconfigure(joiningServers, leavingServers, null, fromConfig)`). Each
    /// joining server is a line of the dynamic configuration,
    /// `server.<id>=<host>:<quorum port>:<election port>[:<role>];[<client host>:]<client port>`
    /// (the `server.` prefix may be left out). With `from_config`, the change is made only if
    /// the current configuration has that version (the hex `version=` of
    /// `/zookeeper/config`, as a number), else [`Error::BadVersion`]. Returns the new
    /// configuration and the Stat of `/zookeeper/config`.
    ///
    /// Adding a server that is already a member, or removing one that is not, commits an
    /// unchanged configuration with a new version (as the server does).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] (nothing sent) when both lists are empty, or an entry is
    /// empty or holds a comma; [`Error::ReconfigDisabled`], [`Error::NewConfigNoQuorum`]
    /// (retry once the new members have synced), [`Error::ReconfigInProgress`] (retry),
    /// [`Error::BadVersion`], [`Error::BadArguments`] (a server line the server cannot
    /// parse), [`Error::NoAuth`] (reconfig needs the super user unless the servers skip
    /// ACLs), and the connection errors. When the leader itself leaves, its connections drop
    /// and the reply may be lost ([`Error::ConnectionLoss`]) although the change was
    /// committed: read the configuration ([`get_config`](Self::get_config)) to learn it.
    pub fn reconfig_incremental<J, L>(
        &self,
        joining: J,
        leaving: L,
        from_config: Option<i64>,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<J, L>
    where
        J: IntoIterator,
        J::Item: AsRef<str>,
        L: IntoIterator<Item = u64>,
    {
        let request = incremental_request(joining, leaving, from_config);
        self.reconfig_checked(request)
    }

    /// Replaces the ensemble's whole membership by `members` (non-incremental: the Java
    /// client's `ZooKeeperAdmin.reconfigure(null, null, newMembers, fromConfig)`), each a
    /// server line as for [`reconfig_incremental`](Self::reconfig_incremental); other lines
    /// of a configuration file (`version=...`, blank ones) must be left out. `from_config`
    /// and the result as there.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] (nothing sent) when `members` is empty or an entry is empty
    /// or holds a comma; otherwise as [`reconfig_incremental`](Self::reconfig_incremental).
    pub fn reconfig_members<M>(
        &self,
        members: M,
        from_config: Option<i64>,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<M>
    where
        M: IntoIterator,
        M::Item: AsRef<str>,
    {
        let request = members_request(members, from_config);
        self.reconfig_checked(request)
    }

    /// Sends a request built (and checked) by one of the list forms.
    fn reconfig_checked(
        &self,
        request: Result<ReconfigRequest>,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = request.map(|request| self.reconfig(request));
        async move { reply?.await }
    }
}

/// The entries of a list joined by commas, as the wire carries them; `None` for none.
fn joined<I>(what: &str, entries: I) -> Result<Option<String>>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut list = Vec::new();
    for entry in entries {
        let entry = entry.as_ref().trim();
        if entry.is_empty() {
            return Err(Error::InvalidArgument(format!("an empty {what} entry")));
        }
        if entry.contains(',') {
            return Err(Error::InvalidArgument(format!(
                "{what} entry {entry:?} holds a comma: give one server per entry"
            )));
        }
        list.push(entry.to_owned());
    }
    Ok((!list.is_empty()).then(|| list.join(",")))
}

/// The request of an incremental reconfiguration.
fn incremental_request<J, L>(
    joining: J,
    leaving: L,
    from_config: Option<i64>,
) -> Result<ReconfigRequest>
where
    J: IntoIterator,
    J::Item: AsRef<str>,
    L: IntoIterator<Item = u64>,
{
    let joining_servers = joined("joining server", joining)?;
    let leaving_servers = joined(
        "leaving server",
        leaving.into_iter().map(|id| id.to_string()),
    )?;
    if joining_servers.is_none() && leaving_servers.is_none() {
        return Err(Error::InvalidArgument(
            "an incremental reconfig needs a joining or a leaving server".into(),
        ));
    }
    Ok(ReconfigRequest {
        joining_servers,
        leaving_servers,
        new_members: None,
        cur_config_id: from_config.unwrap_or(-1),
    })
}

/// The request of a non-incremental reconfiguration.
fn members_request<M>(members: M, from_config: Option<i64>) -> Result<ReconfigRequest>
where
    M: IntoIterator,
    M::Item: AsRef<str>,
{
    let Some(new_members) = joined("member", members)? else {
        return Err(Error::InvalidArgument(
            "a non-incremental reconfig needs at least one member".into(),
        ));
    };
    Ok(ReconfigRequest {
        joining_servers: None,
        leaving_servers: None,
        new_members: Some(new_members),
        cur_config_id: from_config.unwrap_or(-1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_joined_as_zookeeper_admin_joins_them() {
        let request = incremental_request(
            ["server.4=127.0.0.1:1:2;3", "server.5=127.0.0.1:4:5;6"],
            [1, 2],
            Some(0x1_0000_0003),
        )
        .expect("incremental");
        assert_eq!(
            request.joining_servers.as_deref(),
            Some("server.4=127.0.0.1:1:2;3,server.5=127.0.0.1:4:5;6")
        );
        assert_eq!(request.leaving_servers.as_deref(), Some("1,2"));
        assert_eq!(request.new_members, None);
        assert_eq!(request.cur_config_id, 0x1_0000_0003);

        let leave_only = incremental_request(Vec::<String>::new(), [3], None).expect("leave");
        assert_eq!(leave_only.joining_servers, None);
        assert_eq!(leave_only.leaving_servers.as_deref(), Some("3"));
        assert_eq!(leave_only.cur_config_id, -1);

        let members =
            members_request(["server.1=h:1:2;3", " server.2=h:4:5;6 "], None).expect("members");
        assert_eq!(
            members.new_members.as_deref(),
            Some("server.1=h:1:2;3,server.2=h:4:5;6")
        );
        assert_eq!(members.joining_servers, None);
    }

    #[test]
    fn empty_lists_and_commas_are_refused_before_sending() {
        for refused in [
            incremental_request(Vec::<String>::new(), Vec::new(), None),
            incremental_request(["a,b"], Vec::new(), None),
            incremental_request([""], Vec::new(), None),
            members_request(Vec::<String>::new(), None),
            members_request(["server.1=h:1:2;3,server.2=h:4:5;6"], None),
        ] {
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{refused:?}"
            );
        }
    }
}
