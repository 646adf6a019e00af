//! The addresses a pairing offers: every address a phone may reach, most likely first.
//!
//! `docs/protocol.md`, "Pairing link". A desktop often has several networks: the home LAN,
//! container bridges (`docker0`, `br-*`, `veth*`, `virbr*`, `lxc*`, `podman*`), VPN tunnels
//! (`tun*`, `wg*`, `tailscale*`, `ppp*`). The link carries the non-loopback IPv4 and IPv6
//! addresses of every interface that is up, ordered: the interface of the default route first,
//! then other networks, then bridges and containers, then VPNs. IPv6 link-local addresses
//! (`fe80::/10`) are left out: a phone cannot dial them without naming its own interface.
//! When the link would be too long for a QR code ([`MAX_LINK_ADDRESSES`], [`MAX_QR_VERSION`]),
//! the least likely addresses are left out and the pairing card says which.

mod watch;
pub use watch::{AddressWatch, SETTLE as ADDRESS_SETTLE};

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What kind of network an interface is, as the pairing card names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum InterfaceKind {
    /// The interface of the default route: the network most phones share.
    DefaultRoute,
    /// Another local network (Wi-Fi, Ethernet) without the default route.
    Local,
    /// A virtual bridge or container network (`docker0`, `br-*`, `veth*`, `virbr*`, `lxc*`,
    /// `podman*`, `cni*`, `flannel*`): phones are rarely on it.
    Container,
    /// A VPN tunnel (`tun*`, `tap*`, `wg*`, `tailscale*`, `ppp*`, `zt*`, `utun*`): reachable only
    /// by phones on the same VPN.
    Vpn,
}

impl InterfaceKind {
    /// The kind in words, for the pairing card and the CLI.
    pub fn words(self) -> &'static str {
        match self {
            InterfaceKind::DefaultRoute => "the network of the default route",
            InterfaceKind::Local => "another local network",
            InterfaceKind::Container => "a virtual bridge or container network",
            InterfaceKind::Vpn => "a VPN",
        }
    }
}

/// One address the pairing offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct OfferedAddress {
    /// The network interface's name (`eth0`, `wlan0`, `docker0`).
    pub interface: String,
    /// What kind of network it is.
    pub kind: InterfaceKind,
    /// The IP address (no port, no brackets).
    pub address: String,
}

impl OfferedAddress {
    /// The address parsed (`None` only for a hand-made value that is not an IP address).
    pub fn ip(&self) -> Option<IpAddr> {
        self.address.parse().ok()
    }
}

/// Most addresses a pairing link carries.
pub const MAX_LINK_ADDRESSES: usize = 8;

/// Largest QR code version a pairing link may need (version 14: 73 modules a side at error
/// correction M, 362 bytes; on a 200 px code that is under 3 px a module, still read at arm's
/// length by a phone camera). Addresses are left out, least likely first, until the link fits
/// (`link::pairing::tests::link_qr_sizes` measures 1, 4 and 8 addresses).
pub const MAX_QR_VERSION: i16 = 14;

/// Classifies an interface by its name (`docker0` → [`InterfaceKind::Container`], `wg0` →
/// [`InterfaceKind::Vpn`]); `default_route` says whether it carries the default route. An
/// interface is named a container or VPN interface by its name even when it holds the default
/// route (a VPN that takes the default route is still a VPN: phones outside it cannot reach it).
pub fn classify(name: &str, default_route: bool) -> InterfaceKind {
    const CONTAINER: &[&str] = &[
        "docker", "br-", "veth", "virbr", "lxc", "lxd", "podman", "cni", "flannel", "vmnet",
        "vboxnet",
    ];
    const VPN: &[&str] = &[
        "tun",
        "tap",
        "wg",
        "tailscale",
        "ppp",
        "zt",
        "utun",
        "ipsec",
    ];
    let n = name.to_ascii_lowercase();
    if CONTAINER.iter().any(|p| n.starts_with(p)) {
        InterfaceKind::Container
    } else if VPN.iter().any(|p| n.starts_with(p)) {
        InterfaceKind::Vpn
    } else if default_route {
        InterfaceKind::DefaultRoute
    } else {
        InterfaceKind::Local
    }
}

/// The interfaces that hold a default route, from `/proc/net/route` (IPv4, destination
/// `00000000`) and `/proc/net/ipv6_route` (destination `::/0`). Empty where those files do not
/// exist (not Linux) or no default route is set.
pub fn default_route_interfaces() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string("/proc/net/route") {
        out.extend(parse_proc_route(&text));
    }
    if let Ok(text) = std::fs::read_to_string("/proc/net/ipv6_route") {
        for name in parse_proc_ipv6_route(&text) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Interfaces with a default route in the text of `/proc/net/route` (header line, then
/// `Iface Destination Gateway Flags ...`, hex, flag `0x1` = up).
pub fn parse_proc_route(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(name), Some(dest), Some(flags)) = (f.first(), f.get(1), f.get(3)) else {
            continue;
        };
        let up = u32::from_str_radix(flags, 16).is_ok_and(|v| v & 1 == 1);
        if *dest == "00000000" && up && !out.iter().any(|o| o == name) {
            out.push((*name).to_string());
        }
    }
    out
}

/// Interfaces with a default route in the text of `/proc/net/ipv6_route` (destination, prefix
/// length, ..., interface name last; the loopback's unreachable entries are skipped).
pub fn parse_proc_ipv6_route(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 {
            continue;
        }
        let (dest, plen, name) = (f[0], f[1], f[9]);
        if dest.chars().all(|c| c == '0')
            && plen == "00"
            && name != "lo"
            && !out.iter().any(|o| o == name)
        {
            out.push(name.to_string());
        }
    }
    out
}

/// Whether interface `name` is up (`IFF_UP` in `/sys/class/net/<name>/flags`); true where that
/// file cannot be read (not Linux), since the OS listed the address.
fn interface_up(name: &str) -> bool {
    match std::fs::read_to_string(format!("/sys/class/net/{name}/flags")) {
        Ok(s) => {
            u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).map_or(true, |v| v & 1 == 1)
        }
        Err(_) => true,
    }
}

/// The [`OfferedAddress`] for one chosen address: the interface holding it and its kind (an
/// empty interface name and [`InterfaceKind::Local`] when no interface holds it, e.g. loopback).
pub fn describe(ip: IpAddr) -> OfferedAddress {
    let name = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .find(|i| i.ip() == ip)
        .map(|i| i.name)
        .unwrap_or_default();
    let default_route = !name.is_empty() && default_route_interfaces().contains(&name);
    OfferedAddress {
        kind: if name.is_empty() {
            InterfaceKind::Local
        } else {
            classify(&name, default_route)
        },
        interface: name,
        address: ip.to_string(),
    }
}

/// Whether an address belongs in a pairing link: not loopback, not unspecified, not IPv6
/// link-local (`fe80::/10`, needs a scope a phone cannot name), not multicast.
pub fn offerable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !v4.is_loopback() && !v4.is_unspecified() && !v4.is_multicast(),
        IpAddr::V6(v6) => {
            !v6.is_loopback()
                && !v6.is_unspecified()
                && !v6.is_multicast()
                && (v6.segments()[0] & 0xffc0) != 0xfe80
        }
    }
}

/// Orders `(interface, address)` pairs as the link offers them: default-route interface(s)
/// first, then other local networks, then containers and bridges, then VPNs; within a kind,
/// the order given (the OS's interface order), IPv4 before IPv6 of the same interface.
/// Addresses that are not [`offerable`] are left out, and so is a duplicate.
pub fn order_addresses(
    found: &[(String, IpAddr)],
    default_route: &[String],
) -> Vec<OfferedAddress> {
    let mut items: Vec<(InterfaceKind, usize, bool, usize, OfferedAddress)> = Vec::new();
    // The position of each interface's first appearance, so one interface's addresses stay
    // together.
    let mut iface_pos: Vec<&str> = Vec::new();
    for (i, (name, ip)) in found.iter().enumerate() {
        if !offerable(*ip) || items.iter().any(|it| it.4.address == ip.to_string()) {
            continue;
        }
        let pos = match iface_pos.iter().position(|n| *n == name.as_str()) {
            Some(p) => p,
            None => {
                iface_pos.push(name);
                iface_pos.len() - 1
            }
        };
        let kind = classify(name, default_route.iter().any(|d| d == name));
        items.push((
            kind,
            pos,
            ip.is_ipv6(),
            i,
            OfferedAddress {
                interface: name.clone(),
                kind,
                address: ip.to_string(),
            },
        ));
    }
    items.sort_by_key(|it| (it.0, it.1, it.2, it.3));
    items.into_iter().map(|it| it.4).collect()
}

/// The addresses this machine offers for a listener bound to `bound`: for `::` (dual stack)
/// every IPv4 and IPv6 address, for `0.0.0.0` every IPv4 address, else the one bound address;
/// only interfaces that are up; ordered by [`order_addresses`].
pub fn offered_addresses(bound: IpAddr) -> Vec<OfferedAddress> {
    let ifaces = if_addrs::get_if_addrs().unwrap_or_default();
    let found: Vec<(String, IpAddr)> = ifaces
        .iter()
        .filter(|i| interface_up(&i.name))
        .map(|i| (i.name.clone(), i.ip()))
        .filter(|(_, ip)| match bound {
            IpAddr::V6(v6) if v6.is_unspecified() => true,
            IpAddr::V4(v4) if v4.is_unspecified() => ip.is_ipv4(),
            b => *ip == b,
        })
        .collect();
    order_addresses(&found, &default_route_interfaces())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classifies_interface_names() {
        assert_eq!(classify("docker0", true), InterfaceKind::Container);
        assert_eq!(classify("br-3f2a9c", false), InterfaceKind::Container);
        assert_eq!(classify("veth12ab", false), InterfaceKind::Container);
        assert_eq!(classify("virbr0", false), InterfaceKind::Container);
        assert_eq!(classify("wg0", true), InterfaceKind::Vpn);
        assert_eq!(classify("tailscale0", false), InterfaceKind::Vpn);
        assert_eq!(classify("tun0", false), InterfaceKind::Vpn);
        assert_eq!(classify("ppp0", false), InterfaceKind::Vpn);
        assert_eq!(classify("wlan0", true), InterfaceKind::DefaultRoute);
        assert_eq!(classify("enp3s0", false), InterfaceKind::Local);
    }

    #[test]
    fn bridge_listed_first_is_offered_after_the_lan() {
        // As a desktop with Docker lists them: the bridge first, the LAN second. A phone cannot
        // reach a container bridge, so it must not become the link's first address.
        let found = vec![
            ("lo".to_string(), ip("127.0.0.1")),
            ("docker0".to_string(), ip("203.0.113.1")),
            ("wg0".to_string(), ip("198.51.100.9")),
            ("eth0".to_string(), ip("192.0.2.10")),
            ("eth0".to_string(), ip("fe80::1")),
            ("eth0".to_string(), ip("2001:db8::10")),
            ("wlan0".to_string(), ip("192.0.2.77")),
            ("lo".to_string(), ip("::1")),
        ];
        let got = order_addresses(&found, &["eth0".to_string()]);
        let addrs: Vec<&str> = got.iter().map(|a| a.address.as_str()).collect();
        assert_eq!(
            addrs,
            [
                "192.0.2.10",
                "2001:db8::10",
                "192.0.2.77",
                "203.0.113.1",
                "198.51.100.9"
            ]
        );
        assert_eq!(got[0].kind, InterfaceKind::DefaultRoute);
        assert_eq!(got[3].kind, InterfaceKind::Container);
        assert_eq!(got[4].kind, InterfaceKind::Vpn);
    }

    #[test]
    fn reads_default_routes_from_proc() {
        let v4 =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                  docker0\t0071CB00\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                  eth0\t00000000\tFE0200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
        assert_eq!(parse_proc_route(v4), ["eth0"]);
        let v6 = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 20010db8000000000000000000000001 00000400 00000000 00000000 00000003 eth1\n\
                  00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n\
                  20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000000 00000000 00000001 eth1\n";
        assert_eq!(parse_proc_ipv6_route(v6), ["eth1"]);
    }
}
