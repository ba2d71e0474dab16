//! Where webhooks may be sent. A merchant chooses the URL, so by default coupond refuses to
//! post to anything internal (its own loopback, the private network it runs in, the cloud's
//! metadata service): server-side request forgery.
//!
//! A URL is checked twice: when it is registered ([`TargetPolicy::check_url`], which reads the
//! host the way browsers do, so `127.1`, `2130706433` and `0x7f000001` are all `127.0.0.1`),
//! and on every delivery on the addresses its name resolves to then ([`GuardedResolver`]), since
//! a DNS name can be pointed somewhere else after registration. Deployments whose receivers
//! are internal list them in `webhook_allow_hosts` (names, addresses or CIDR ranges).

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::dns::Name;
use ipnet::IpNet;

/// How long registration waits for a host name to resolve; a name that does not resolve then
/// is accepted and checked again at delivery.
const RESOLVE_AT_REGISTRATION: Duration = Duration::from_secs(2);

/// Registration lookups in flight at once, process-wide.
static LOOKUPS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// The internal ranges refused unless allowed.
const FORBIDDEN_V4: [&str; 13] = [
    "0.0.0.0/8",       // "this network", unspecified
    "10.0.0.0/8",      // private
    "100.64.0.0/10",   // shared (CGNAT); Alibaba Cloud's metadata is 100.100.100.200
    "127.0.0.0/8",     // loopback
    "169.254.0.0/16",  // link-local; AWS, GCP and Azure metadata are 169.254.169.254
    "172.16.0.0/12",   // private
    "192.0.0.0/24",    // IETF protocol assignments (Oracle Cloud metadata: 192.0.0.192)
    "192.0.2.0/24",    // documentation
    "192.168.0.0/16",  // private
    "198.18.0.0/15",   // benchmarking
    "198.51.100.0/24", // documentation
    "224.0.0.0/4",     // multicast
    "240.0.0.0/4",     // reserved, and the broadcast address
];
const FORBIDDEN_V6: [&str; 6] = [
    "::/128",        // unspecified
    "::1/128",       // loopback
    "fc00::/7",      // unique-local (AWS metadata over IPv6: fd00:ec2::254)
    "fe80::/10",     // link-local
    "ff00::/8",      // multicast
    "2001:db8::/32", // documentation
];

/// Why a URL cannot be a webhook target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetError {
    /// Not an `http://` URL with a host (the reason in words).
    Invalid(&'static str),
    /// Its host is, or resolves to, an internal address that is not allowed.
    Internal,
}

/// The destinations webhooks may reach: every public address, plus what the operator allows.
#[derive(Clone, Debug, Default)]
pub struct TargetPolicy {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
}

impl TargetPolicy {
    /// A policy allowing, besides public addresses, `allow`: host names, IP addresses and CIDR
    /// ranges. An entry that is none of these is an error naming it.
    pub fn new(allow: &[String]) -> Result<Self, String> {
        let mut policy = TargetPolicy::default();
        for entry in allow.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if let Ok(net) = entry.parse::<IpNet>() {
                policy.nets.push(net.trunc());
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                policy.nets.push(IpNet::from(ip));
            } else if url::Host::parse(entry).is_ok_and(|h| matches!(h, url::Host::Domain(_))) {
                policy.hosts.push(normal_name(entry));
            } else {
                return Err(format!(
                    "{entry:?} is not a host name, IP address or CIDR range"
                ));
            }
        }
        Ok(policy)
    }

    /// Whether a delivery may connect to `ip`.
    pub fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(&ip)) || !is_internal(ip)
    }

    /// Whether `host` (a name, as written in a URL) is allowed whatever it resolves to.
    pub fn allows_name(&self, host: &str) -> bool {
        let host = normal_name(host);
        self.hosts.contains(&host)
    }

    /// Checks a URL someone wants deliveries posted to, and returns it normalized (the form
    /// to store). Host names are resolved: one that resolves to an internal address is
    /// refused; one that does not resolve now is accepted (and checked at each delivery).
    pub async fn check_url(&self, raw: &str) -> Result<url::Url, TargetError> {
        let url = parse(raw)?;
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip))?,
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip))?,
            Some(url::Host::Domain(name)) if self.allows_name(name) => {}
            Some(url::Host::Domain(name)) => {
                let name = normal_name(name);
                // Loopback by definition (RFC 6761), whether or not this machine resolves it.
                if name == "localhost" || name.ends_with(".localhost") {
                    self.check_ip(IpAddr::V4(Ipv4Addr::LOCALHOST))?;
                    self.check_ip(IpAddr::V6(Ipv6Addr::LOCALHOST))?;
                }
                // Lookups run on blocking threads that a timeout does not stop; at most a few
                // at once, so registrations cannot pile them up (a name not looked up is
                // checked at delivery all the same).
                if let Ok(_permit) = LOOKUPS.try_acquire() {
                    let port = url.port_or_known_default().unwrap_or(80);
                    let lookup = tokio::net::lookup_host(format!("{name}:{port}"));
                    let resolved = tokio::time::timeout(RESOLVE_AT_REGISTRATION, lookup).await;
                    if let Ok(Ok(addrs)) = resolved {
                        for a in addrs {
                            self.check_ip(a.ip())?;
                        }
                    }
                }
            }
            None => return Err(TargetError::Invalid("the URL has no host")),
        }
        Ok(url)
    }

    fn check_ip(&self, ip: IpAddr) -> Result<(), TargetError> {
        if self.allows_ip(ip) {
            Ok(())
        } else {
            Err(TargetError::Internal)
        }
    }

    /// Why a stored URL may not be posted to now, if it may not: it does not pass today's
    /// registration rules (rows written by an older version, or under another allow list),
    /// or it names an internal address literally, as this crate's URL parser or as hyper's
    /// reads it (the resolver never sees IP literals, so they are checked here).
    pub fn refuses(&self, raw: &str) -> Option<String> {
        let url = match parse(raw) {
            Ok(url) => url,
            Err(TargetError::Invalid(why)) => return Some(why.to_owned()),
            Err(TargetError::Internal) => return Some("internal".to_owned()),
        };
        let ours = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        let hypers = raw
            .trim()
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| u.host().map(|h| h.trim_matches(['[', ']']).to_owned()))
            .and_then(|h| h.parse::<IpAddr>().ok());
        [ours, hypers]
            .into_iter()
            .flatten()
            .find(|ip| !self.allows_ip(*ip))
            .map(|ip| format!("{ip} is internal"))
    }
}

/// An `http://` URL with a host, no credentials, at most 2048 characters.
fn parse(raw: &str) -> Result<url::Url, TargetError> {
    let raw = raw.trim();
    if raw.len() > 2048 {
        return Err(TargetError::Invalid("at most 2048 characters"));
    }
    let url = url::Url::parse(raw).map_err(|_| TargetError::Invalid("not a URL"))?;
    if url.scheme() != "http" {
        return Err(TargetError::Invalid("only http:// URLs are supported"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetError::Invalid("credentials do not belong in the URL"));
    }
    if url.host().is_none() {
        return Err(TargetError::Invalid("the URL has no host"));
    }
    Ok(url)
}

fn normal_name(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Loopback, private, link-local, unique-local, unspecified, multicast, shared, reserved or
/// documentation: anything that is not a public unicast address. IPv6 forms that embed an
/// IPv4 address (mapped, compatible, NAT64, 6to4) are judged by that address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => in_ranges(IpAddr::V4(v4), &FORBIDDEN_V4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_internal(IpAddr::V4(v4)),
            None => in_ranges(IpAddr::V6(v6), &FORBIDDEN_V6),
        },
    }
}

fn in_ranges(ip: IpAddr, ranges: &[&str]) -> bool {
    ranges
        .iter()
        .filter_map(|r| r.parse::<IpNet>().ok())
        .any(|n| n.contains(&ip))
}

fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; not :: or ::1 themselves)
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(tail),
        // 64:ff9b::a.b.c.d (NAT64)
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        // 2002:AABB:CCDD::/48 (6to4)
        [0x2002, a, b, ..] => Some(Ipv4Addr::new(
            (a >> 8) as u8,
            a as u8,
            (b >> 8) as u8,
            b as u8,
        )),
        _ => None,
    }
}

/// The resolver deliveries connect through: it resolves a host name and keeps only the
/// addresses the policy allows, so a name re-pointed at an internal address after
/// registration reaches nothing.
#[derive(Clone, Debug)]
pub struct GuardedResolver {
    policy: Arc<TargetPolicy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<TargetPolicy>) -> Self {
        GuardedResolver { policy }
    }
}

type Resolving = Pin<Box<dyn Future<Output = io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.allows_name(&host) {
                return Ok(addrs.into_iter());
            }
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| policy.allows_ip(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{host} resolves to internal addresses only"),
                ));
            }
            Ok(allowed.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_recognised_in_every_form() {
        for internal in [
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
        ] {
            assert!(is_internal(ip(internal)), "{internal}");
        }
        for public in [
            "8.8.8.8",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(!is_internal(ip(public)), "{public}");
        }
    }

    #[tokio::test]
    async fn urls_are_read_as_a_browser_reads_them() {
        let p = TargetPolicy::default();
        for refused in [
            "http://127.0.0.1/x",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://a.localhost/",
            "http://[::1]/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0/",
            "http://0177.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1:6379/",
            "http://[fd00::1]/",
            "http://[::ffff:7f00:1]/",
        ] {
            assert_eq!(
                p.check_url(refused).await,
                Err(TargetError::Internal),
                "{refused}"
            );
        }
        for invalid in [
            "ftp://x/",
            "https://93.184.216.34/",
            "http://user:pw@93.184.216.34/",
            "not a url",
        ] {
            assert!(
                matches!(p.check_url(invalid).await, Err(TargetError::Invalid(_))),
                "{invalid}"
            );
        }
        let ok = p.check_url("http://93.184.216.34:8080/hook").await.unwrap();
        assert_eq!(ok.as_str(), "http://93.184.216.34:8080/hook");
    }

    #[tokio::test]
    async fn the_allow_list_admits_named_hosts_and_ranges() {
        let p = TargetPolicy::new(&[
            "127.0.0.0/8".into(),
            "hooks.internal.example".into(),
            "::1".into(),
        ])
        .unwrap();
        assert!(p.check_url("http://localhost:9000/x").await.is_ok());
        assert!(p.check_url("http://127.0.0.1:9000/x").await.is_ok());
        assert!(p.check_url("http://[::1]/").await.is_ok());
        assert!(p.check_url("http://HOOKS.internal.example/").await.is_ok());
        assert_eq!(
            p.check_url("http://10.0.0.1/").await,
            Err(TargetError::Internal)
        );
        assert!(p.refuses("http://10.0.0.1/").is_some());
        assert_eq!(p.refuses("http://127.0.0.2/"), None);
        // Rows an older version stored: credentials, bad ports, other schemes are refused
        // rather than handed to hyper, which would read them differently.
        for stored in [
            "http://x@10.0.0.1:6379/",
            "http://127.0.0.1:99999/",
            "http://hooks.internal.example:99999/",
            "ftp://93.184.216.34/",
        ] {
            assert!(p.refuses(stored).is_some(), "{stored}");
        }
        assert!(TargetPolicy::new(&["not a host!".into()]).is_err());
    }

    #[tokio::test]
    async fn the_resolver_drops_internal_addresses() {
        use tower::Service;
        let mut strict = GuardedResolver::new(Arc::new(TargetPolicy::default()));
        let err = strict
            .call("localhost".parse::<Name>().unwrap())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        let mut open =
            GuardedResolver::new(Arc::new(TargetPolicy::new(&["localhost".into()]).unwrap()));
        assert!(open
            .call("localhost".parse::<Name>().unwrap())
            .await
            .unwrap()
            .next()
            .is_some());
    }
}
