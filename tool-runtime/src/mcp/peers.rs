//! How many connections each peer holds, for the per-peer cap of
//! [`McpServer::serve_http`](super::McpServer::serve_http): without it,
//! one client could hold every connection slot and lock everyone else out.
//!
//! A peer is an IPv4 address, or an IPv6 `/64` (one host is given a whole
//! `/64`, so counting single IPv6 addresses would cap nothing); an
//! IPv4-mapped IPv6 address counts as its IPv4 address.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};

/// By default, how many connections one peer holds at once.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

/// The connections each peer holds, capped.
pub(crate) struct Peers {
    max: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its peer, until dropped.
pub(crate) struct Held {
    peers: Arc<Peers>,
    peer: IpAddr,
}

impl Peers {
    /// Peers of at most `max` connections each (at least 1).
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Peers { max: max.max(1), held: Mutex::default() })
    }

    /// How many connections one peer may hold.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// One more connection from `address`, or `None` when its peer holds
    /// the cap already.
    pub(crate) fn admit(self: &Arc<Self>, address: IpAddr) -> Option<Held> {
        let peer = peer_of(address);
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(peer).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Held { peers: self.clone(), peer })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.peers.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.peer);
            }
        }
    }
}

/// The peer an address counts for: an IPv4 address, or an IPv6 `/64`.
fn peer_of(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_holds_at_most_its_cap_and_a_closed_connection_frees_its_place() {
        let peers = Peers::new(2);
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        let (a, b) = (peers.admit(one).unwrap(), peers.admit(one).unwrap());
        assert!(peers.admit(one).is_none(), "a third connection of the same peer");
        assert!(peers.admit("192.0.2.2".parse().unwrap()).is_some(), "another peer");
        drop(a);
        assert!(peers.admit(one).is_some(), "a closed connection frees its place");
        drop(b);
    }

    #[test]
    fn an_ipv6_peer_is_its_64_and_a_mapped_ipv4_address_its_ipv4_address() {
        let peers = Peers::new(1);
        let _held = peers.admit("2001:db8::1".parse().unwrap()).unwrap();
        assert!(peers.admit("2001:db8::ffff:2".parse().unwrap()).is_none(), "the same /64");
        assert!(peers.admit("2001:db8:0:1::1".parse().unwrap()).is_some(), "another /64");
        let _v4 = peers.admit("192.0.2.1".parse().unwrap()).unwrap();
        assert!(peers.admit("::ffff:192.0.2.1".parse().unwrap()).is_none(), "mapped: the same IPv4 peer");
    }
}
