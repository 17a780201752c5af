//! The bed's nftables rules: in each namespace a table of its own (`inet rzk_partition`) whose
//! `input` chain drops the packets of the peers cut from it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use super::netns::Tools;

/// The name of the bed's nftables table (family `inet`) in every namespace it filters in.
pub const TABLE: &str = "rzk_partition";

/// The cuts in force: `(from, to)` means packets from `from` do not reach `to`.
#[derive(Debug, Default)]
pub(crate) struct Cuts {
    pairs: BTreeSet<(Ipv4Addr, Ipv4Addr)>,
}

impl Cuts {
    /// Adds the cut `from -> to`; true when it is new.
    pub(crate) fn add(&mut self, from: Ipv4Addr, to: Ipv4Addr) -> bool {
        self.pairs.insert((from, to))
    }

    /// Removes every cut; returns the addresses that had rules (their tables go).
    pub(crate) fn clear(&mut self) -> BTreeSet<Ipv4Addr> {
        let pairs = std::mem::take(&mut self.pairs);
        pairs.into_iter().map(|(_, to)| to).collect()
    }

    /// The sources whose packets `to` drops.
    pub(crate) fn dropped_at(&self, to: Ipv4Addr) -> BTreeSet<Ipv4Addr> {
        self.pairs
            .iter()
            .filter(|(_, t)| *t == to)
            .map(|(from, _)| *from)
            .collect()
    }

    /// Every cut, grouped by the receiving address.
    pub(crate) fn by_receiver(&self) -> BTreeMap<Ipv4Addr, BTreeSet<Ipv4Addr>> {
        let mut map: BTreeMap<Ipv4Addr, BTreeSet<Ipv4Addr>> = BTreeMap::new();
        for (from, to) in &self.pairs {
            map.entry(*to).or_default().insert(*from);
        }
        map
    }

    /// True when `from -> to` is cut.
    pub(crate) fn contains(&self, from: Ipv4Addr, to: Ipv4Addr) -> bool {
        self.pairs.contains(&(from, to))
    }
}

/// The nft script that replaces the bed's table in one namespace, atomically: the table with
/// one rule dropping `sources`, or no table when `sources` is empty. (`table` before `delete`
/// makes the deletion succeed when there is no table yet.)
pub(crate) fn table_script(sources: &BTreeSet<Ipv4Addr>) -> String {
    let mut script = String::new();
    let _ = writeln!(script, "table inet {TABLE}");
    let _ = writeln!(script, "delete table inet {TABLE}");
    if !sources.is_empty() {
        let list = sources
            .iter()
            .map(Ipv4Addr::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(script, "table inet {TABLE} {{");
        let _ = writeln!(script, "  chain input {{");
        let _ = writeln!(
            script,
            "    type filter hook input priority filter - 10; policy accept;"
        );
        let _ = writeln!(script, "    ip saddr {{ {list} }} drop");
        let _ = writeln!(script, "  }}");
        let _ = writeln!(script, "}}");
    }
    script
}

/// Runs `nft -f -` with `script` inside the namespace `ns` (`ip netns exec`).
pub(crate) fn apply(tools: &Tools, ns: &str, script: &str) -> io::Result<()> {
    let mut child = Command::new(&tools.ip)
        .args(["netns", "exec", ns])
        .arg(&tools.nft)
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "nft -f - in namespace {ns} failed ({}): {}\nscript:\n{script}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, 0, last)
    }

    #[test]
    fn cuts_are_grouped_by_receiver() {
        let mut cuts = Cuts::default();
        assert!(cuts.add(addr(10), addr(11)));
        assert!(!cuts.add(addr(10), addr(11)));
        assert!(cuts.add(addr(12), addr(11)));
        assert!(cuts.add(addr(11), addr(10)));
        assert!(cuts.contains(addr(10), addr(11)));
        assert!(!cuts.contains(addr(11), addr(12)));
        assert_eq!(
            cuts.dropped_at(addr(11)),
            BTreeSet::from([addr(10), addr(12)])
        );
        assert_eq!(cuts.by_receiver().len(), 2);
        assert_eq!(cuts.clear(), BTreeSet::from([addr(10), addr(11)]));
        assert!(cuts.by_receiver().is_empty());
    }

    #[test]
    fn a_table_drops_its_sources_and_an_empty_one_is_removed() {
        let script = table_script(&BTreeSet::from([addr(11), addr(10)]));
        assert!(script.starts_with(&format!("table inet {TABLE}\ndelete table inet {TABLE}\n")));
        assert!(
            script.contains("ip saddr { 198.18.0.10, 198.18.0.11 } drop"),
            "{script}"
        );
        assert_eq!(
            table_script(&BTreeSet::new()),
            format!("table inet {TABLE}\ndelete table inet {TABLE}\n")
        );
    }
}
