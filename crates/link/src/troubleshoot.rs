//! Troubleshoot: from the link's diagnostics, what most likely keeps a phone from pairing or
//! connecting, and the fix in words (the Phones view's Troubleshoot section).
//!
//! The classes are the ones the trackers of KDE Connect, GSConnect and LocalSend show most, so
//! the person gets a named cause instead of "it does not connect": the offered interface is not the phone's network; the phone found the desktop but
//! could not connect; inbound connections blocked by a firewall; a VPN holding the default
//! route; a port conflict; a phone on another subnet; the desktop's certificate changed.
//!
//! [`troubleshoot`] is a pure function of [`LinkDiagnostics`] (the phones' attempt reports, the
//! recent failures, the ports found taken), the addresses offered and the interfaces holding the
//! default route, so every rule is unit-tested. Each class is either *seen* (with what was seen,
//! naming the addresses and errors) or listed in the guide, with its likely cause and fix.

use serde::Serialize;
use ts_rs::TS;

use super::addresses::{classify, InterfaceKind, OfferedAddress};
use super::diagnostics::{AttemptOutcome, FailureKind, LinkDiagnostics};

/// A class of failure Troubleshoot knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum TroubleClass {
    /// The address offered first is not on the phone's network.
    WrongInterface,
    /// The phone reached the desktop's address but the connection failed (refused, TLS).
    FoundButCouldNotConnect,
    /// Connections to the desktop time out: a firewall drops them.
    FirewallBlocked,
    /// A VPN holds the default route.
    VpnDefaultRoute,
    /// The usual port was taken by another program.
    PortConflict,
    /// The phone has no route to the desktop's address: another network or subnet.
    OtherSubnet,
    /// The phone pinned another certificate than this desktop's.
    CertificateChanged,
    /// A paired phone's clock is at least a minute off this computer's (nothing is refused for
    /// it; its dials show its own times).
    ClockSkew,
}

/// Every class, in the order Troubleshoot lists them.
pub const ALL_CLASSES: [TroubleClass; 8] = [
    TroubleClass::PortConflict,
    TroubleClass::WrongInterface,
    TroubleClass::OtherSubnet,
    TroubleClass::FirewallBlocked,
    TroubleClass::FoundButCouldNotConnect,
    TroubleClass::VpnDefaultRoute,
    TroubleClass::CertificateChanged,
    TroubleClass::ClockSkew,
];

/// One class: what was seen (if it was), the likely cause and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Trouble {
    /// The class.
    pub class: TroubleClass,
    /// A short title.
    pub title: String,
    /// What the link saw, naming addresses, ports and errors; `None` in the guide.
    pub seen: Option<String>,
    /// The likely cause.
    pub cause: String,
    /// What to do, one step a line.
    pub fix: Vec<String>,
}

/// Troubleshoot's answer: what was seen (most telling first), then the guide for the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Troubleshoot {
    /// Classes with evidence in the diagnostics.
    pub seen: Vec<Trouble>,
    /// The other classes, as a guide.
    pub guide: Vec<Trouble>,
}

/// What an attempt's error says (the phone's words, as `PhoneClient::connect_any` and phone
/// apps report them: the OS error text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorSays {
    Refused,
    Unreachable,
    TimedOut,
    Certificate,
    Tls,
    Other,
}

fn says(error: &str, outcome: AttemptOutcome) -> ErrorSays {
    let e = error.to_ascii_lowercase();
    if outcome == AttemptOutcome::Abandoned {
        return ErrorSays::TimedOut;
    }
    if e.contains("certificate") || e.contains("fingerprint") || e.contains("pinned") {
        ErrorSays::Certificate
    } else if e.contains("refused") {
        ErrorSays::Refused
    } else if e.contains("unreachable") || e.contains("no route") {
        ErrorSays::Unreachable
    } else if e.contains("timed out") || e.contains("timeout") || e.contains("deadline") {
        ErrorSays::TimedOut
    } else if e.contains("tls") || e.contains("handshake") || e.contains("websocket") {
        ErrorSays::Tls
    } else {
        ErrorSays::Other
    }
}

/// The steps that allow inbound TCP `port` on each system's firewall (and mDNS).
pub fn firewall_steps(port: u16) -> Vec<String> {
    vec![
        format!("Linux with ufw: sudo ufw allow {port}/tcp (and sudo ufw allow 5353/udp for mDNS)"),
        format!("Linux with firewalld: sudo firewall-cmd --permanent --add-port={port}/tcp --add-service=mdns && sudo firewall-cmd --reload"),
        "Windows: a network marked Public blocks phones. When Switchboard first listened, Windows asked and allowed it on Private networks only (the default choice), so on a Public network no phone connection arrives. Mark the network Private: Settings → Network & internet → Wi-Fi (or Ethernet) → the network → Network profile type → Private, or in PowerShell as administrator: Set-NetConnectionProfile -InterfaceAlias \"Wi-Fi\" -NetworkCategory Private".to_string(),
        format!("Windows, to allow Switchboard on every network profile instead, in PowerShell as administrator: New-NetFirewallRule -DisplayName \"Switchboard\" -Direction Inbound -Protocol TCP -LocalPort {port} -Action Allow -Profile Any (or in a Command Prompt as administrator: netsh advfirewall firewall add rule name=\"Switchboard\" dir=in action=allow protocol=TCP localport={port} profile=any)"),
        "macOS: System Settings → Network → Firewall → Options…, add Switchboard and choose \"Allow incoming connections\"".to_string(),
        "Make the Wi-Fi a private (home) network, not public: public profiles block inbound connections.".to_string(),
        "Fixing the port in Settings keeps these rules valid across restarts.".to_string(),
    ]
}

/// What Troubleshoot shows for `diag`, with `offered` the addresses a pairing offers now (most
/// likely first) and `default_route` the interfaces holding the default route.
pub fn troubleshoot(
    diag: &LinkDiagnostics,
    offered: &[OfferedAddress],
    default_route: &[String],
) -> Troubleshoot {
    let port = diag.port.unwrap_or(super::DEFAULT_PORT);
    let mut seen: Vec<Trouble> = Vec::new();

    // Port conflict.
    if !diag.ports_taken.is_empty() {
        let taken = join_ports(&diag.ports_taken);
        seen.push(Trouble {
            seen: Some(format!(
                "Port {taken} was taken by another program when Switchboard started, so it listens on {port} instead."
            )),
            ..guide(TroubleClass::PortConflict, port)
        });
    }

    // VPN holding the default route.
    let vpn_default: Vec<&String> = default_route
        .iter()
        .filter(|i| classify(i, true) == InterfaceKind::Vpn)
        .collect();
    if !vpn_default.is_empty() {
        seen.push(Trouble {
            seen: Some(format!(
                "The default route goes through {}, a VPN: phones on your Wi-Fi are not on it.",
                vpn_default
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            ..guide(TroubleClass::VpnDefaultRoute, port)
        });
    }

    // What phones reported about the addresses they could not reach.
    let mut by_class: std::collections::BTreeMap<TroubleClass, Vec<String>> = Default::default();
    for report in &diag.phone_attempts {
        for a in &report.attempts {
            let class = match says(&a.error, a.outcome) {
                ErrorSays::Unreachable => TroubleClass::OtherSubnet,
                ErrorSays::TimedOut => TroubleClass::FirewallBlocked,
                ErrorSays::Refused | ErrorSays::Tls | ErrorSays::Other => {
                    TroubleClass::FoundButCouldNotConnect
                }
                ErrorSays::Certificate => TroubleClass::CertificateChanged,
            };
            let what = match a.outcome {
                AttemptOutcome::Abandoned => {
                    format!("{} did not answer within {} ms", a.addr, a.after_ms)
                }
                AttemptOutcome::Failed => format!("{}: {}", a.addr, a.error),
            };
            by_class.entry(class).or_default().push(what);
        }
        // The address offered first was not the one that worked: the wrong interface first.
        let first_failed = report.attempts.first().filter(|a| {
            a.outcome == AttemptOutcome::Failed || a.outcome == AttemptOutcome::Abandoned
        });
        if let Some(a) = first_failed {
            let iface = |addr: &str| {
                let ip = addr
                    .parse::<std::net::SocketAddr>()
                    .map(|s| s.ip().to_string())
                    .unwrap_or_default();
                offered
                    .iter()
                    .find(|o| o.address == ip)
                    .map(|o| format!(" ({}, {})", o.interface, o.kind.words()))
                    .unwrap_or_default()
            };
            by_class
                .entry(TroubleClass::WrongInterface)
                .or_default()
                .push(format!(
                    "phone {} tried {}{} first and could not reach it; it connected to {}{}",
                    short(&report.device_id),
                    a.addr,
                    iface(&a.addr),
                    report.connected_to,
                    iface(&report.connected_to)
                ));
        }
    }
    // What the desktop saw itself.
    for f in &diag.recent_failures {
        match f.kind {
            FailureKind::CertificateMismatch => by_class
                .entry(TroubleClass::CertificateChanged)
                .or_default()
                .push(f.words.clone()),
            FailureKind::Handshake => by_class
                .entry(TroubleClass::FoundButCouldNotConnect)
                .or_default()
                .push(f.words.clone()),
            _ => {}
        }
    }
    // Only container or VPN addresses offered: no phone is likely on them.
    if !offered.is_empty()
        && offered
            .iter()
            .all(|o| matches!(o.kind, InterfaceKind::Container | InterfaceKind::Vpn))
    {
        by_class
            .entry(TroubleClass::WrongInterface)
            .or_default()
            .push(format!(
                "every address offered is a container or VPN network ({}): connect this computer to the phone's Wi-Fi",
                offered
                    .iter()
                    .map(|o| format!("{} on {}", o.address, o.interface))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
    }
    // Phones whose clock is off: each phone once, as measured at its last hello.
    for s in diag.clock_skews.iter().filter(|s| s.is_shown()) {
        let name = if s.label.is_empty() {
            short(&s.device_id).to_string()
        } else {
            format!("{} ({})", s.label, short(&s.device_id))
        };
        by_class
            .entry(TroubleClass::ClockSkew)
            .or_default()
            .push(format!(
                "the clock of {name} is {} this computer's",
                s.words()
            ));
    }
    for (class, items) in by_class {
        let mut items = items;
        items.dedup();
        let shown: Vec<String> = items.iter().take(4).cloned().collect();
        let more = items.len().saturating_sub(shown.len());
        let mut words = shown.join("; ");
        if more > 0 {
            words.push_str(&format!("; and {more} more"));
        }
        seen.push(Trouble {
            seen: Some(format!("{}.", capitalise(&words))),
            ..guide(class, port)
        });
    }
    let guide_list = ALL_CLASSES
        .iter()
        .filter(|c| !seen.iter().any(|s| s.class == **c))
        .map(|c| guide(*c, port))
        .collect();
    seen.sort_by_key(|t| ALL_CLASSES.iter().position(|c| *c == t.class));
    Troubleshoot {
        seen,
        guide: guide_list,
    }
}

fn short(device_id: &str) -> &str {
    device_id.get(..12).unwrap_or(device_id)
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn join_ports(ports: &[u16]) -> String {
    let v: Vec<String> = ports.iter().map(ToString::to_string).collect();
    match v.as_slice() {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    }
}

/// The class's cause and fix, without evidence (the guide's entry).
pub fn guide(class: TroubleClass, port: u16) -> Trouble {
    let (title, cause, fix): (&str, String, Vec<String>) = match class {
        TroubleClass::WrongInterface => (
            "The address offered is not on the phone's network",
            "This computer has several networks (Wi-Fi, Ethernet, container bridges, VPNs) and the phone is on only one of them; an address of another network cannot be reached from the phone.".into(),
            vec![
                "In the pairing card, offer only the network the phone is on (Choose the networks).".into(),
                "Or connect the phone to the same Wi-Fi as this computer.".into(),
            ],
        ),
        TroubleClass::FoundButCouldNotConnect => (
            "The phone found the desktop but could not connect",
            format!("The phone reached this computer's address, but the connection was refused or its TLS handshake failed: nothing listens on port {port} at that address (an old link or QR code with another port), another program answers there, or a firewall rejects it."),
            vec![
                format!("Open a new pairing window and scan the new code: it carries the port in use ({port})."),
                "Update the phone app if the handshake keeps failing (Switchboard speaks TLS 1.3 only).".into(),
                format!("If a firewall rejects the port, allow TCP {port} (see \"Inbound connections blocked\")."),
            ],
        ),
        TroubleClass::FirewallBlocked => (
            "Inbound connections blocked by a firewall",
            format!("Connections to port {port} time out: a firewall on this computer (or the router's client isolation) drops them without an answer."),
            firewall_steps(port),
        ),
        TroubleClass::VpnDefaultRoute => (
            "A VPN holds the default route",
            "With a VPN connected, the default route (and often the first address offered) goes through the tunnel; phones on the local Wi-Fi are not on it, and some VPNs block the local network too.".into(),
            vec![
                "Offer the Wi-Fi or Ethernet address in the pairing card, not the VPN's.".into(),
                "Allow local network access in the VPN's settings (often called \"LAN access\" or \"split tunnelling\"), or pause the VPN while pairing.".into(),
            ],
        ),
        TroubleClass::PortConflict => (
            "The usual port is taken by another program",
            // A cause to check, not a finding (the finding is `seen`): said as what happens when.
            format!("When another program listens on Switchboard's usual port ({usual}), Switchboard takes the next free one (now {port}); firewall rules written for the usual port do not cover it, and links or QR codes made before name the old port.", usual = super::DEFAULT_PORT),
            vec![
                format!("Find the other program: ss -ltnp 'sport = :{p}' (Linux), lsof -nP -iTCP:{p} -sTCP:LISTEN (macOS), netstat -ano | findstr :{p} (Windows, the last column is the process id).", p = super::DEFAULT_PORT),
                "Close it, or fix a port in Settings and allow that port in the firewall.".into(),
                "Pair again so the phone has the link with the port in use.".into(),
            ],
        ),
        TroubleClass::OtherSubnet => (
            "The phone is on another network or subnet",
            "The phone has no route to this computer's address: it is on guest Wi-Fi, another VLAN or subnet, mobile data, or the router isolates its clients.".into(),
            vec![
                "Connect the phone to the same Wi-Fi as this computer (not the guest network), with mobile data off while pairing.".into(),
                "Turn off client (AP) isolation on the router, or put both on one subnet.".into(),
                "A phone on a routed subnet can still pair by typing this computer's address and port (the line under the QR code).".into(),
            ],
        ),
        TroubleClass::ClockSkew => (
            "A phone's clock is wrong",
            "The phone's clock is set wrong (automatic date and time is off, or set by hand). Nothing is refused for it: pairing and hello do not depend on the time. Switchboard keeps the phone's times as sent, so its dials show the phone's times: Live dials lists them in the order they arrived, durations stay right, but the times shown and the after:/before: filter terms follow the phone's clock.".into(),
            vec![
                "On the phone, turn on automatic date and time (and time zone).".into(),
                "The skew shown in the phone's details updates at its next connection.".into(),
            ],
        ),
        TroubleClass::CertificateChanged => (
            "The desktop's certificate changed",
            "The phone pinned another certificate for this desktop: Switchboard's identity was made anew (the key store was reset, or this is another computer), or something on the network is answering in its place.".into(),
            vec![
                "If you reset the key store or moved to a new computer: unpair on the phone and pair again from a new pairing window.".into(),
                "Otherwise do not pair: compare the fingerprint on the phone with the one in Diagnostics.".into(),
            ],
        ),
    };
    Trouble {
        class,
        title: title.to_string(),
        seen: None,
        cause,
        fix,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::diagnostics::{LinkAttempt, LinkFailure, MdnsStatus, PhoneAttempts};

    fn diag() -> LinkDiagnostics {
        LinkDiagnostics {
            port: Some(47471),
            addresses: vec![],
            mdns: MdnsStatus::Disabled,
            cert_fingerprint: "ab".repeat(32),
            desktop_device_id: "dev_desk".into(),
            paired: 1,
            connected: vec![],
            without_hello: 0,
            evicted: 0,
            phone_attempts: vec![],
            recent_failures: vec![],
            ports_taken: vec![],
            clock_skews: vec![],
        }
    }

    #[test]
    fn a_phone_clock_a_minute_or_more_off_is_seen_once_per_phone() {
        use crate::diagnostics::PhoneClockSkew;
        let skew = |id: &str, label: &str, ms: i64| PhoneClockSkew {
            device_id: id.into(),
            label: label.into(),
            skew_ms: ms,
            measured_at_ms: 1_790_000_000_000,
        };
        let mut d = diag();
        d.clock_skews = vec![
            skew("dev_behind00000001", "Ada's Pixel", -3_600_000),
            skew("dev_ahead000000001", "", 86_400_000 + 5_000),
            skew("dev_fine0000000001", "Fine", 59_999),
        ];
        let t = troubleshoot(&d, &[], &[]);
        let seen: Vec<&Trouble> = t
            .seen
            .iter()
            .filter(|s| s.class == TroubleClass::ClockSkew)
            .collect();
        assert_eq!(seen.len(), 1, "{t:?}");
        let words = seen[0].seen.as_deref().unwrap();
        assert_eq!(
            words,
            "The clock of Ada's Pixel (dev_behind00) is 1 h 0 min behind this computer's; the clock of dev_ahead000 is 1 d 0 h ahead this computer's."
        );
        assert!(!words.contains("Fine"), "under a minute is not shown");
        assert!(!t.guide.iter().any(|g| g.class == TroubleClass::ClockSkew));
        // Within a minute: only in the guide.
        d.clock_skews = vec![skew("dev_fine0000000001", "Fine", -59_999)];
        let t = troubleshoot(&d, &[], &[]);
        assert!(t.seen.is_empty(), "{t:?}");
    }

    fn offered(iface: &str, kind: InterfaceKind, addr: &str) -> OfferedAddress {
        OfferedAddress {
            interface: iface.into(),
            kind,
            address: addr.into(),
        }
    }

    fn attempt(addr: &str, outcome: AttemptOutcome, error: &str) -> LinkAttempt {
        LinkAttempt {
            addr: addr.into(),
            outcome,
            error: error.into(),
            at_ms: 1_790_000_000_000,
            after_ms: 250,
        }
    }

    fn report(attempts: Vec<LinkAttempt>) -> PhoneAttempts {
        PhoneAttempts {
            device_id: "dev_phone0123456789".into(),
            connected_from: "192.0.2.2:50000".into(),
            connected_to: "192.0.2.1:47471".into(),
            attempts,
            received_at_ms: 1_790_000_000_500,
        }
    }

    fn classes(t: &Troubleshoot) -> Vec<TroubleClass> {
        t.seen.iter().map(|s| s.class).collect()
    }

    #[test]
    fn nothing_seen_lists_every_class_in_the_guide() {
        let t = troubleshoot(
            &diag(),
            &[offered("eth0", InterfaceKind::DefaultRoute, "192.0.2.1")],
            &["eth0".into()],
        );
        assert!(t.seen.is_empty(), "{t:?}");
        assert_eq!(t.guide.len(), ALL_CLASSES.len());
        let fw = t
            .guide
            .iter()
            .find(|g| g.class == TroubleClass::FirewallBlocked)
            .unwrap();
        let steps = fw.fix.join("\n");
        for sys in [
            "ufw allow 47471/tcp",
            "firewall-cmd",
            "New-NetFirewallRule -DisplayName \"Switchboard\" -Direction Inbound -Protocol TCP -LocalPort 47471 -Action Allow -Profile Any",
            "netsh advfirewall firewall add rule name=\"Switchboard\" dir=in action=allow protocol=TCP localport=47471 profile=any",
            "a network marked Public blocks phones",
            "-NetworkCategory Private",
            "macOS",
        ] {
            assert!(steps.contains(sys), "{sys} in {steps}");
        }
    }

    #[test]
    fn a_taken_port_names_the_conflict_and_the_port_in_use() {
        let mut d = diag();
        d.ports_taken = vec![47470];
        let t = troubleshoot(&d, &[], &[]);
        assert_eq!(classes(&t), [TroubleClass::PortConflict]);
        let seen = t.seen[0].seen.as_deref().unwrap();
        assert!(
            seen.contains("Port 47470 was taken") && seen.contains("listens on 47471"),
            "{seen}"
        );
        assert!(!t
            .guide
            .iter()
            .any(|g| g.class == TroubleClass::PortConflict));
    }

    #[test]
    fn a_vpn_default_route_is_named() {
        let t = troubleshoot(&diag(), &[], &["wg0".into()]);
        assert_eq!(classes(&t), [TroubleClass::VpnDefaultRoute]);
        assert!(t.seen[0].seen.as_deref().unwrap().contains("wg0"));
        let t = troubleshoot(&diag(), &[], &["eth0".into()]);
        assert!(t.seen.is_empty());
    }

    #[test]
    fn phone_attempts_become_their_classes() {
        let mut d = diag();
        d.phone_attempts = vec![report(vec![
            attempt(
                "198.51.100.1:47471",
                AttemptOutcome::Failed,
                "connect: Network is unreachable (os error 101)",
            ),
            attempt(
                "203.0.113.1:47471",
                AttemptOutcome::Abandoned,
                "still connecting when another address answered",
            ),
            attempt(
                "192.0.2.9:47471",
                AttemptOutcome::Failed,
                "connect: Connection refused (os error 111)",
            ),
        ])];
        let offers = [
            offered("uplink0", InterfaceKind::DefaultRoute, "198.51.100.1"),
            offered("eth0", InterfaceKind::Local, "192.0.2.1"),
        ];
        let t = troubleshoot(&d, &offers, &["uplink0".into()]);
        assert_eq!(
            classes(&t),
            [
                TroubleClass::WrongInterface,
                TroubleClass::OtherSubnet,
                TroubleClass::FirewallBlocked,
                TroubleClass::FoundButCouldNotConnect
            ]
        );
        let wrong = t.seen[0].seen.as_deref().unwrap();
        assert!(
            wrong.contains("198.51.100.1:47471 (uplink0")
                && wrong.contains("connected to 192.0.2.1:47471 (eth0"),
            "{wrong}"
        );
        assert!(t.seen[1].seen.as_deref().unwrap().contains("unreachable"));
        assert!(t.seen[2]
            .seen
            .as_deref()
            .unwrap()
            .contains("did not answer within 250 ms"));
        assert!(t.seen[3].seen.as_deref().unwrap().contains("refused"));
        assert_eq!(
            t.seen.len() + t.guide.len(),
            ALL_CLASSES.len(),
            "each class once"
        );
    }

    #[test]
    fn a_certificate_mismatch_is_a_changed_certificate() {
        let mut d = diag();
        d.recent_failures = vec![LinkFailure {
            kind: FailureKind::CertificateMismatch,
            words: "phone at 192.0.2.2:5000 refused the desktop's certificate".into(),
            what_to_do: String::new(),
            device_id: None,
            address: Some("192.0.2.2:5000".into()),
            at_ms: 1,
        }];
        let t = troubleshoot(&d, &[], &[]);
        assert_eq!(classes(&t), [TroubleClass::CertificateChanged]);
        let mut d = diag();
        d.phone_attempts = vec![report(vec![attempt(
            "192.0.2.1:47470",
            AttemptOutcome::Failed,
            "TLS: the certificate does not match the pinned fingerprint",
        )])];
        let t = troubleshoot(&d, &[], &[]);
        assert!(
            classes(&t).contains(&TroubleClass::CertificateChanged),
            "{t:?}"
        );
    }

    #[test]
    fn only_container_addresses_offered_is_the_wrong_interface() {
        let t = troubleshoot(
            &diag(),
            &[offered("docker0", InterfaceKind::Container, "203.0.113.1")],
            &[],
        );
        assert_eq!(classes(&t), [TroubleClass::WrongInterface]);
        assert!(t.seen[0].seen.as_deref().unwrap().contains("docker0"));
    }
}
