//! Free loopback ports.
//!
//! A port is picked by binding `127.0.0.1:0` and releasing it, which races with every other
//! process on the machine; the servers therefore retry with fresh ports when they fail to bind.
//! Within this process, ports already handed out are never handed out again (tests run in
//! parallel threads and would otherwise occasionally be given the same just-released port).

use std::collections::BTreeSet;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// One free TCP port on 127.0.0.1 (free at the time of the call).
pub fn free_port() -> io::Result<u16> {
    Ok(free_ports(1)?[0])
}

/// `n` distinct TCP ports on 127.0.0.1 that were free at the time of the call and that this
/// process has not handed out before.
pub fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    // Keep every listener (also the rejected ones) open until the end, so the kernel does not
    // give us the same port twice.
    let mut held = Vec::new();
    let mut ports = Vec::with_capacity(n);
    let mut tries = 0usize;
    while ports.len() < n {
        tries += 1;
        if tries > n + 1000 {
            return Err(io::Error::new(
                io::ErrorKind::AddrNotAvailable,
                "could not find enough free loopback ports",
            ));
        }
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        held.push(listener);
        if handed_out.insert(port) {
            ports.push(port);
        }
    }
    drop(held);
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_and_never_repeat() {
        let a = free_ports(20).unwrap();
        let b = free_ports(20).unwrap();
        let all: BTreeSet<u16> = a.iter().chain(&b).copied().collect();
        assert_eq!(all.len(), 40);
        assert!(all.iter().all(|&p| p != 0));
    }
}
