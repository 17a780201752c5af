//! The bed's network: the hub namespace with its bridge, one namespace per node on the bridge,
//! and the cuts between nodes as nftables rules.

use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard};

use super::netns::{self, Namespaces, Tools};
use super::nft::{self, Cuts};

/// The network all beds use (each on a bridge of its own): `198.18.0.0/24`, from the
/// benchmarking range of RFC 2544.
pub(crate) const PREFIX_LEN: u8 = 24;
/// The bridge's name in the hub namespace.
const BRIDGE: &str = "br0";
/// The node's interface name in its own namespace.
const NODE_IF: &str = "eth0";

/// `198.18.0.<last>`.
pub(crate) const fn bed_ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, last)
}

/// The hub's address on the bridge: where the bed's own four-letter words come from.
pub(crate) const HUB_IP: Ipv4Addr = bed_ip(1);

/// The namespaces and the cuts of one bed. Deleting it deletes every namespace.
#[derive(Debug)]
pub(crate) struct Net {
    prefix: String,
    tools: Tools,
    hub: String,
    namespaces: Namespaces,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    cuts: Cuts,
    /// The namespace of every node address.
    nodes: BTreeMap<Ipv4Addr, String>,
    /// The next client index.
    next_client: usize,
}

impl Net {
    /// Creates the hub namespace `<prefix>-hub` with the bridge (address [`HUB_IP`]) and checks
    /// that nftables works in it. Failing, it returns why: the bed is unavailable here.
    pub(crate) fn create(tools: Tools, prefix: String) -> Result<Net, String> {
        let hub = format!("{prefix}-hub");
        let net = Net {
            namespaces: Namespaces::new(tools.clone()),
            tools,
            hub,
            prefix,
            state: Mutex::new(State::default()),
        };
        net.namespaces
            .add(&net.hub)
            .map_err(|e| format!("cannot create a network namespace: {e}"))?;
        let hub_ip = format!("{HUB_IP}/{PREFIX_LEN}");
        let steps: [&[&str]; 3] = [
            &["link", "add", BRIDGE, "type", "bridge"],
            &["addr", "add", &hub_ip, "dev", BRIDGE],
            &["link", "set", BRIDGE, "up"],
        ];
        for step in steps {
            net.ip_in(&net.hub, step)
                .map_err(|e| format!("cannot set up a bridge in a namespace: {e}"))?;
        }
        // A table with a rule, then none: what a cut and a heal do.
        let probe = std::collections::BTreeSet::from([bed_ip(254)]);
        nft::apply(&net.tools, &net.hub, &nft::table_script(&probe))
            .and_then(|()| {
                nft::apply(
                    &net.tools,
                    &net.hub,
                    &nft::table_script(&Default::default()),
                )
            })
            .map_err(|e| format!("nftables does not work in a namespace: {e}"))?;
        Ok(net)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ip_in(&self, ns: &str, args: &[&str]) -> io::Result<String> {
        let mut all = vec!["-n", ns];
        all.extend_from_slice(args);
        netns::ip(&self.tools, &all)
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn tools(&self) -> &Tools {
        &self.tools
    }

    pub(crate) fn hub(&self) -> &str {
        &self.hub
    }

    /// Creates the namespace `<prefix>-<node>` on the bridge: a veth pair, `eth0` in the
    /// namespace with `ip`/24, `<node>` in the hub as a bridge port. Returns the namespace's name.
    pub(crate) fn add_node(&self, node: &str, ip: Ipv4Addr) -> io::Result<String> {
        let ns = format!("{}-{node}", self.prefix);
        self.namespaces.add(&ns)?;
        self.ip_in(
            &self.hub,
            &[
                "link", "add", node, "type", "veth", "peer", "name", NODE_IF, "netns", &ns,
            ],
        )?;
        self.ip_in(&self.hub, &["link", "set", node, "master", BRIDGE, "up"])?;
        let cidr = format!("{ip}/{PREFIX_LEN}");
        self.ip_in(&ns, &["addr", "add", &cidr, "dev", NODE_IF])?;
        self.ip_in(&ns, &["link", "set", NODE_IF, "up"])?;
        self.state().nodes.insert(ip, ns.clone());
        Ok(ns)
    }

    /// Takes the next client index.
    pub(crate) fn next_client(&self) -> usize {
        let mut state = self.state();
        let k = state.next_client;
        state.next_client += 1;
        k
    }

    /// Drops the packets from `from` at `to`, for every pair; one table update per receiver.
    pub(crate) fn cut(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) -> io::Result<()> {
        let mut state = self.state();
        let mut receivers = Vec::new();
        for &(from, to) in pairs {
            if state.cuts.add(from, to) && !receivers.contains(&to) {
                receivers.push(to);
            }
        }
        for to in receivers {
            let ns = state
                .nodes
                .get(&to)
                .ok_or_else(|| io::Error::other(format!("{to} is no node of this bed")))?;
            nft::apply(
                &self.tools,
                ns,
                &nft::table_script(&state.cuts.dropped_at(to)),
            )?;
        }
        Ok(())
    }

    /// True when packets from `from` are dropped at `to`.
    pub(crate) fn is_cut(&self, from: Ipv4Addr, to: Ipv4Addr) -> bool {
        self.state().cuts.contains(from, to)
    }

    /// The cuts in force, `(from, to)`.
    pub(crate) fn cuts(&self) -> Vec<(Ipv4Addr, Ipv4Addr)> {
        self.state()
            .cuts
            .by_receiver()
            .into_iter()
            .flat_map(|(to, froms)| froms.into_iter().map(move |from| (from, to)))
            .collect()
    }

    /// Removes every cut: the bed's table goes from every namespace that had one.
    pub(crate) fn heal(&self) -> io::Result<()> {
        let mut state = self.state();
        let receivers = state.cuts.clear();
        let empty = Default::default();
        let mut first_error = None;
        for to in receivers {
            if let Some(ns) = state.nodes.get(&to)
                && let Err(e) = nft::apply(&self.tools, ns, &nft::table_script(&empty))
            {
                first_error.get_or_insert(e);
            }
        }
        drop(state);
        first_error.map_or(Ok(()), Err)
    }

    /// Deletes every namespace of the bed now.
    pub(crate) fn delete_all(&self) {
        self.namespaces.delete_all();
    }
}
