//! Finding the desktop: a `switchboard://pair` link, an address, or mDNS.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" ("Discovery"): the desktop advertises
//! `_switchboard._tcp.local.` with TXT `id`, `proto` and `fp`; its pairing link is
//! `switchboard://pair?addr=<ip>&port=<port>&code=<6 digits>&fp=<cert_fp>&alt=<ip>,<ip>`
//! (`docs/protocol.md`, "Pairing link": `alt` lists the other addresses, most likely first, and
//! is absent from links of the first format; IPv6 colons raw or as `%3A`).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::SERVICE_TYPE;

/// Errors finding the desktop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoverError {
    /// The pairing link is not a `switchboard://pair?...` link with the four fields.
    #[error("pairing link: {0}")]
    BadLink(String),
    /// mDNS could not start or found no desktop in time.
    #[error("mDNS: {0}")]
    Mdns(String),
}

/// What a pairing link (or mDNS) says about the desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopAddress {
    /// Where to connect first (the link's `addr`).
    pub addr: SocketAddr,
    /// The other addresses to try, most likely first (the link's `alt`, mDNS's other
    /// addresses, or an earlier pairing's), same port.
    pub alternatives: Vec<SocketAddr>,
    /// The certificate fingerprint to pin (64 lowercase hex).
    pub cert_fp: String,
    /// The pairing code, from a pairing link.
    pub code: Option<String>,
    /// The desktop's device id, from mDNS.
    pub device_id: Option<String>,
}

fn decode(v: &str) -> String {
    v.replace("%3A", ":").replace("%3a", ":")
}

impl DesktopAddress {
    /// Every address to try, in order: [`DesktopAddress::addr`] then the alternatives (no
    /// duplicates).
    pub fn candidates(&self) -> Vec<SocketAddr> {
        let mut out = vec![self.addr];
        for a in &self.alternatives {
            if !out.contains(a) {
                out.push(*a);
            }
        }
        out
    }
}

/// Most alternatives read from one link (more are refused: a link is short).
pub const MAX_ALTERNATIVES: usize = 16;

fn check_fp(fp: &str) -> Result<String, DiscoverError> {
    let fp = fp.to_ascii_lowercase();
    if fp.len() == 64 && fp.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(fp)
    } else {
        Err(DiscoverError::BadLink(format!(
            "fp: expected the certificate fingerprint as 64 hex characters, got {fp:?}"
        )))
    }
}

/// Reads `switchboard://pair?addr=..&port=..&code=..&fp=..[&alt=..,..]`.
///
/// Errors: [`DiscoverError::BadLink`] naming the missing or bad field (an `alt` entry that is
/// not an IP address is named by its position).
pub fn parse_pair_link(link: &str) -> Result<DesktopAddress, DiscoverError> {
    let query = link.strip_prefix("switchboard://pair?").ok_or_else(|| {
        DiscoverError::BadLink(format!("expected switchboard://pair?..., got {link:?}"))
    })?;
    let mut addr = None;
    let mut port = None;
    let mut code = None;
    let mut fp = None;
    let mut alt = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "addr" => addr = Some(decode(v)),
            "port" => port = Some(v.to_string()),
            "code" => code = Some(v.to_string()),
            "fp" => fp = Some(v.to_string()),
            "alt" => alt = Some(decode(v)),
            _ => {}
        }
    }
    let miss = |f: &str| DiscoverError::BadLink(format!("{f}: missing"));
    let ip: IpAddr = addr
        .ok_or_else(|| miss("addr"))?
        .parse()
        .map_err(|e| DiscoverError::BadLink(format!("addr: {e}")))?;
    let port: u16 = port
        .ok_or_else(|| miss("port"))?
        .parse()
        .map_err(|e| DiscoverError::BadLink(format!("port: {e}")))?;
    let code = code.filter(|c| !c.is_empty()).ok_or_else(|| miss("code"))?;
    let cert_fp = check_fp(&fp.ok_or_else(|| miss("fp"))?)?;
    let mut alternatives = Vec::new();
    for (i, a) in alt
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
        .enumerate()
    {
        if i >= MAX_ALTERNATIVES {
            return Err(DiscoverError::BadLink(format!(
                "alt: more than {MAX_ALTERNATIVES} addresses"
            )));
        }
        let ip: IpAddr = a
            .parse()
            .map_err(|e| DiscoverError::BadLink(format!("alt: address {} ({a:?}): {e}", i + 1)))?;
        alternatives.push(SocketAddr::new(ip, port));
    }
    Ok(DesktopAddress {
        addr: SocketAddr::new(ip, port),
        alternatives,
        cert_fp,
        code: Some(code),
        device_id: None,
    })
}

/// Browses mDNS for a Switchboard desktop for at most `wait`; the first one resolved with an
/// `fp` TXT record wins (every address it advertises becomes a candidate, IPv4 first).
///
/// Errors: [`DiscoverError::Mdns`] when mDNS cannot start or nothing answers in time (say so and
/// suggest `--addr` or a pairing link).
pub fn browse(wait: Duration) -> Result<DesktopAddress, DiscoverError> {
    let daemon = mdns_sd::ServiceDaemon::new().map_err(|e| DiscoverError::Mdns(e.to_string()))?;
    let rx = daemon
        .browse(SERVICE_TYPE)
        .map_err(|e| DiscoverError::Mdns(e.to_string()))?;
    let end = Instant::now() + wait;
    let found = loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break None;
        }
        match rx.recv_timeout(left) {
            Ok(mdns_sd::ServiceEvent::ServiceResolved(info)) => {
                let Some(fp) = info.get_property_val_str("fp") else {
                    continue;
                };
                let mut addrs: Vec<IpAddr> = info.get_addresses().iter().copied().collect();
                addrs.sort_by_key(|a| (!a.is_ipv4(), *a));
                let Some(ip) = addrs.first().copied() else {
                    continue;
                };
                let Ok(cert_fp) = check_fp(fp) else { continue };
                let port = info.get_port();
                break Some(DesktopAddress {
                    addr: SocketAddr::new(ip, port),
                    alternatives: addrs[1..]
                        .iter()
                        .map(|a| SocketAddr::new(*a, port))
                        .collect(),
                    cert_fp,
                    code: None,
                    device_id: info.get_property_val_str("id").map(str::to_string),
                });
            }
            Ok(_) => {}
            Err(_) => break None,
        }
    };
    let _ = daemon.shutdown();
    found.ok_or_else(|| {
        DiscoverError::Mdns(format!(
            "no Switchboard desktop answered within {} s; give --addr and --fp, or --link",
            wait.as_secs()
        ))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reads_pair_links() {
        let fp = "a".repeat(64);
        let d = parse_pair_link(&format!(
            "switchboard://pair?addr=192.168.1.20&port=47470&code=123456&fp={fp}"
        ))
        .unwrap();
        assert_eq!(d.addr.to_string(), "192.168.1.20:47470");
        assert_eq!(d.code.as_deref(), Some("123456"));
        let d = parse_pair_link(&format!(
            "switchboard://pair?addr=fe80%3A%3A1&port=47471&code=1&fp={fp}"
        ))
        .unwrap();
        assert_eq!(d.addr.port(), 47471);
        assert!(d.addr.is_ipv6());
        let e = parse_pair_link("switchboard://pair?addr=1.2.3.4&code=1&fp=ab")
            .unwrap_err()
            .to_string();
        assert!(e.contains("port: missing"), "{e}");
        assert!(d.alternatives.is_empty());
        // The second format: every address, most likely first; IPv6 colons raw.
        let d = parse_pair_link(&format!(
            "switchboard://pair?addr=192.0.2.10&port=47470&code=123456&fp={fp}&alt=2001:db8::10,203.0.113.1"
        ))
        .unwrap();
        let c: Vec<String> = d.candidates().iter().map(ToString::to_string).collect();
        assert_eq!(
            c,
            [
                "192.0.2.10:47470",
                "[2001:db8::10]:47470",
                "203.0.113.1:47470"
            ]
        );
        let e = parse_pair_link(&format!(
            "switchboard://pair?addr=192.0.2.10&port=1&code=1&fp={fp}&alt=192.0.2.11,nope"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("alt: address 2"), "{e}");
        assert!(parse_pair_link("https://x").is_err());
    }
}
