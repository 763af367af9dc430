//! How many connections each peer holds, for the per-peer cap of
//! [`McpServer::serve_http`](crate::mcp::McpServer::serve_http): without it,
//! one client could hold every connection slot and lock everyone else out.
//!
//! A peer is an IPv4 address, or an IPv6 `/64` (one host is given a whole
//! `/64`, so counting single IPv6 addresses would cap nothing); an
//! IPv4-mapped IPv6 address counts as its IPv4 address.

use std::net::{IpAddr, Ipv6Addr};

use crate::caps::Capped;

/// By default, how many connections one peer holds at once.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 64;

/// The connections of each peer, capped.
pub(crate) type Peers = Capped<IpAddr>;

/// The peer an address counts for: an IPv4 address, or an IPv6 `/64`.
pub(crate) fn peer_of(address: IpAddr) -> IpAddr {
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
    fn an_ipv6_peer_is_its_64_and_a_mapped_ipv4_address_its_ipv4_address() {
        let peer = |text: &str| peer_of(text.parse().unwrap());
        assert_eq!(peer("192.0.2.1"), peer("::ffff:192.0.2.1"), "mapped: the same IPv4 peer");
        assert_eq!(peer("2001:db8::1"), peer("2001:db8::ffff:2"), "the same /64");
        assert_ne!(peer("2001:db8::1"), peer("2001:db8:0:1::1"), "another /64");
        assert_eq!(peer("2001:db8::1"), "2001:db8::".parse::<IpAddr>().unwrap());
    }
}
