//! Who the client is behind a reverse proxy. The per-IP limits and the logs use the peer's
//! address, unless the peer is one of `trusted_proxies`: then the address the proxies
//! recorded in `Forwarded` (RFC 7239) or `X-Forwarded-For`, read from the right and skipping
//! the trusted proxies themselves, so a client cannot choose its address by sending the header
//! (it only adds entries to the left, which are never reached while a proxy appended its own).

use std::net::IpAddr;
use std::str::FromStr;

use http::HeaderMap;
use ipnet::IpNet;

/// Networks whose connections may speak for a client.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// From CIDRs (`10.0.0.0/8`, `::1/128`) or single addresses; the first that is neither is
    /// named in the error.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, String> {
        items
            .iter()
            .map(|s| {
                let s = s.as_ref().trim();
                IpNet::from_str(s)
                    .or_else(|_| IpAddr::from_str(s).map(IpNet::from))
                    .map_err(|_| format!("{s:?} is not a CIDR (10.0.0.0/8) or an IP address"))
            })
            .collect::<Result<_, _>>()
            .map(TrustedProxies)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|n| n.contains(&ip))
    }

    /// The client's address: `peer` itself unless it is trusted; then the right-most address
    /// in `Forwarded` (or, without it, `X-Forwarded-For`) that is not a trusted proxy. A header
    /// that cannot be read leaves the last trusted hop as the client.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops = forwarded_for(headers);
        let mut client = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(ip) => {
                    client = *ip;
                    if !self.trusts(*ip) {
                        return client;
                    }
                }
                // An obfuscated or unknown hop: nothing to its left can be trusted.
                None => return client,
            }
        }
        client
    }
}

/// IPv4-mapped IPv6 addresses as IPv4, so `10.0.0.0/8` matches `::ffff:10.1.2.3`.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The `for=` addresses of every `Forwarded` header, left to right, or else those of
/// `X-Forwarded-For`; `None` for an entry that is not an address.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_owned())
            .collect()
    };
    let forwarded = values("forwarded");
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, v)| address(v.trim().trim_matches('"')))
            })
            .collect();
    }
    values("x-forwarded-for")
        .iter()
        .map(|s| address(s))
        .collect()
}

/// `192.0.2.1`, `192.0.2.1:4711`, `2001:db8::1`, `[2001:db8::1]:4711`.
fn address(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = IpAddr::from_str(s) {
        return Some(canonical(ip));
    }
    if let Some(rest) = s.strip_prefix('[') {
        return rest
            .split_once(']')
            .and_then(|(ip, _)| IpAddr::from_str(ip).ok())
            .map(canonical);
    }
    s.rsplit_once(':')
        .and_then(|(ip, _)| IpAddr::from_str(ip).ok())
        .map(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_str(k).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_sends() {
        let trusted = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
        let spoofed = headers(&[("x-forwarded-for", "1.2.3.4"), ("forwarded", "for=5.6.7.8")]);
        assert_eq!(
            trusted.client(ip("203.0.113.9"), &spoofed),
            ip("203.0.113.9")
        );
        let none = TrustedProxies::default();
        assert_eq!(none.client(ip("10.0.0.1"), &spoofed), ip("10.0.0.1"));
    }

    #[test]
    fn behind_trusted_proxies_the_right_most_untrusted_hop_is_the_client() {
        let trusted = TrustedProxies::parse(&["10.0.0.0/8", "192.168.1.1"]).unwrap();
        // The client forged the left-most entry; the proxy appended the real address.
        let h = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(trusted.client(ip("192.168.1.1"), &h), ip("198.51.100.7"));
        let h = headers(&[(
            "forwarded",
            "for=6.6.6.6, for=\"[2001:db8::7]:4711\";proto=https, for=10.2.2.2",
        )]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &h), ip("2001:db8::7"));
        // Forwarded wins over X-Forwarded-For; ports and mapped addresses are read.
        let h = headers(&[
            ("forwarded", "for=198.51.100.8:80"),
            ("x-forwarded-for", "1.1.1.1"),
        ]);
        assert_eq!(
            trusted.client(ip("::ffff:10.0.0.1"), &h),
            ip("198.51.100.8")
        );
    }

    #[test]
    fn unreadable_hops_stop_the_walk_at_the_last_trusted_one() {
        let trusted = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
        let h = headers(&[("forwarded", "for=_hidden, for=10.0.0.9")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &h), ip("10.0.0.9"));
        assert_eq!(
            trusted.client(ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
        let h = headers(&[("x-forwarded-for", "not an address")]);
        assert_eq!(trusted.client(ip("10.0.0.1"), &h), ip("10.0.0.1"));
    }

    #[test]
    fn bad_networks_are_named() {
        let e = TrustedProxies::parse(&["10.0.0.0/8", "10.0.0.0/33"]).unwrap_err();
        assert!(e.contains("10.0.0.0/33"), "{e}");
        assert!(TrustedProxies::parse(&["::1", "fd00::/8"]).is_ok());
    }
}
