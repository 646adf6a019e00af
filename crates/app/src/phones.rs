//! The Phones view's state: the running link, each paired phone's live connection, the pairing
//! waiting for the person's confirmation, how the last pairing ended and why the link is not
//! running; the pairing window, the confirmation of the verification code, and unpair.
//!
//! The link's events reach it synchronously, in order, from the hub's task
//! ([`PhonesState::on_link_event`]), before the hub applies them.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use ts_rs::TS;

use switchboard_link::{
    Link, LinkDiagnostics, LinkEvent, PairedPhone, PairingEnd, PairingInvite, PendingPairing,
};
use switchboard_wire::clock::Clock;
use switchboard_wire::error::{IpcError, IpcErrorKind};
use switchboard_wire::sync::lock;

/// One paired phone as the Phones view shows it.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhoneStatus {
    /// The pairing record (device id, key, label, capabilities, paired at, last seen).
    pub record: PairedPhone,
    /// Connected now.
    pub connected: bool,
    /// The `ip:port` of the live connection, when connected.
    pub address: Option<String>,
    /// The ifp version chosen for the live connection, when connected.
    pub protocol_version: Option<u32>,
    /// Short fingerprint of the pinned key, for comparing with the phone's screen.
    pub key_fingerprint: String,
    /// Its clock minus this computer's at its last hello since the link started, in
    /// milliseconds (negative: behind; [`switchboard_link::diagnostics::PhoneClockSkew`]); `None`
    /// before it said hello. The view shows it when at least
    /// [`switchboard_link::diagnostics::CLOCK_SKEW_SHOWN_MS`] off.
    #[ts(type = "number | null")]
    pub clock_skew_ms: Option<i64>,
    /// The skew in words when it is shown (`1 h 0 min behind`, `1 d 0 h ahead`), else `None`.
    pub clock_skew: Option<String>,
}

/// How the last pairing ended: paired (both sides confirmed the code) or discarded.
#[derive(Debug, Clone, Serialize, serde::Deserialize, TS)]
#[ts(export)]
pub struct PairingResult {
    /// The phone's device id.
    pub device_id: String,
    /// The phone's label.
    pub label: String,
    /// `None` when paired; else why the pending pairing was discarded (nothing was saved).
    pub ended: Option<PairingEnd>,
    /// When it ended, ms since the Unix epoch.
    #[ts(type = "number")]
    pub at_ms: u64,
}

/// Everything the Phones view shows.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct PhonesSnapshot {
    /// Running with the built-in demo phone.
    pub demo: bool,
    /// Why the link is not running (no key store, no free port), in words with what to do.
    pub link_error: Option<String>,
    /// The OS key store stopped answering while the link runs (locked or stopped), in words:
    /// what still works and what to do. `None` while it answers (checked every 30 s and when
    /// the pairing window opens); it goes away by itself once the store answers again.
    pub key_store_problem: Option<String>,
    /// Why dials are not being stored now (the disk holding the history is full, and where;
    /// the same words as the tray and `switchboard status`), if so. Filled by
    /// [`crate::App::phones_snapshot`]; `None` from [`PhonesState::snapshot`] alone.
    pub storage_problem: Option<String>,
    /// The paired phones.
    pub phones: Vec<PhoneStatus>,
    /// The open pairing window, if any (`None` while a pairing made with its code is pending).
    pub pairing: Option<PairingInvite>,
    /// The pairing waiting for the person to compare verification codes, if any.
    pub pending: Option<PendingPairing>,
    /// How the last pairing ended.
    pub last_pairing: Option<PairingResult>,
    /// Addresses, port, mDNS, recent failures; `None` while the link is not running.
    pub diagnostics: Option<LinkDiagnostics>,
    /// Every address this desktop can offer now (each interface that is up, most likely
    /// first), for choosing which networks a pairing offers; empty while the link is not
    /// running (and for the demo, which offers loopback only).
    pub offerable: Vec<switchboard_link::addresses::OfferedAddress>,
    /// What most likely keeps a phone from connecting, from the diagnostics, and the fixes;
    /// `None` while the link is not running.
    pub troubleshoot: Option<switchboard_link::troubleshoot::Troubleshoot>,
}

impl PhonesSnapshot {
    /// The paired phones as the tray lists them (label, connected or not), for
    /// [`crate::tray::summarize`].
    pub fn tray_phones(&self) -> Vec<crate::tray::TrayPhone> {
        self.phones
            .iter()
            .map(|p| crate::tray::TrayPhone {
                device_id: p.record.device_id.clone(),
                label: p.record.label.clone(),
                connected: p.connected,
            })
            .collect()
    }
}

#[derive(Debug, Default)]
struct Live {
    /// device id -> (address, version)
    connections: HashMap<String, (String, u32)>,
    last_pairing: Option<PairingResult>,
    /// The device id whose next pairing is not announced ([`PhonesState::expect_repairing`]).
    quiet_pairing: Option<String>,
    error: Option<String>,
    key_store_problem: Option<String>,
}

/// The link as the app holds it.
#[derive(Debug)]
pub struct PhonesState {
    link: Mutex<Option<Link>>,
    live: Mutex<Live>,
    demo: bool,
    /// The app's one clock: when a pairing ended.
    clock: Arc<dyn Clock>,
    /// Asks the key-store check ([`super::App::start_link`]) to look now (the pairing window
    /// opened).
    pub(super) check_key_store: tokio::sync::Notify,
}

/// What a link event changed for the Phones view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhonesChange {
    /// Nothing the view shows.
    None,
    /// The view should reload; the tray shows `connected` phones.
    Changed {
        /// Phones connected now.
        connected: usize,
    },
}

impl PhonesState {
    /// No link yet; `demo` when running with the built-in demo phone; `clock`: the app's.
    pub fn new(demo: bool, clock: Arc<dyn Clock>) -> Self {
        Self {
            link: Mutex::new(None),
            live: Mutex::new(Live::default()),
            demo,
            clock,
            check_key_store: tokio::sync::Notify::new(),
        }
    }

    /// The running link, if any.
    pub fn link(&self) -> Option<Link> {
        lock(&self.link).clone()
    }

    /// The next pairing of `device_id` is the built-in demo phone pairing again with this
    /// start's fresh demo identity, after it had paired before ([`switchboard_link::phone::demo::paired_before`]):
    /// it is not shown as "Paired …: the verification codes matched" (only the first pairing
    /// is), and the last pairing result stays as it was.
    pub fn expect_repairing(&self, device_id: String) {
        lock(&self.live).quiet_pairing = Some(device_id);
    }

    /// Records the running link.
    pub fn set_link(&self, link: Link) {
        *lock(&self.link) = Some(link);
    }

    /// Records why the link is not running (shown in the Phones view).
    pub fn set_error(&self, words: String) {
        lock(&self.live).error = Some(words);
    }

    /// Forgets the link error (the link started after all).
    pub fn clear_error(&self) {
        lock(&self.live).error = None;
    }

    /// Records what the last key-store check found (`None`: it answered). Returns whether
    /// that changed what the view shows.
    pub fn set_key_store_problem(&self, words: Option<String>) -> bool {
        let mut live = lock(&self.live);
        let changed = live.key_store_problem != words;
        live.key_store_problem = words;
        changed
    }

    /// What the Phones view shows now.
    pub fn snapshot(&self) -> PhonesSnapshot {
        let link = self.link();
        let diagnostics = link.as_ref().map(|l| l.diagnostics());
        let live = lock(&self.live);
        let phones = link
            .as_ref()
            .map(|l| {
                l.paired_phones()
                    .into_iter()
                    .map(|record| {
                        let conn = live.connections.get(&record.device_id).cloned();
                        let skew = diagnostics.as_ref().and_then(|d| {
                            d.clock_skews
                                .iter()
                                .find(|s| s.device_id == record.device_id)
                                .cloned()
                        });
                        PhoneStatus {
                            clock_skew_ms: skew.as_ref().map(|s| s.skew_ms),
                            clock_skew: skew.filter(|s| s.is_shown()).map(|s| s.words()),
                            connected: conn.is_some(),
                            address: conn.as_ref().map(|c| c.0.clone()),
                            protocol_version: conn.map(|c| c.1),
                            key_fingerprint: key_fp(&record.public_key),
                            record,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        PhonesSnapshot {
            demo: self.demo,
            link_error: live.error.clone(),
            key_store_problem: live.key_store_problem.clone(),
            storage_problem: None,
            phones,
            pairing: link.as_ref().and_then(|l| l.pairing_invite()),
            pending: link.as_ref().and_then(|l| l.pending_pairing()),
            last_pairing: live.last_pairing.clone(),
            offerable: match (&link, self.demo) {
                (Some(l), false) => l.offered_addresses(),
                _ => Vec::new(),
            },
            troubleshoot: diagnostics.as_ref().zip(link.as_ref()).map(|(d, l)| {
                switchboard_link::troubleshoot::troubleshoot(
                    d,
                    &l.offered_addresses(),
                    &switchboard_link::addresses::default_route_interfaces(),
                )
            }),
            diagnostics,
        }
    }

    /// The paired phones as the tray lists them (label, connected or not): the paired records
    /// and the live connections only, none of the snapshot's diagnostics or network addresses
    /// (reading those enumerates the interfaces and reads the routing table). Empty when the
    /// link is not running.
    pub fn tray_phones(&self) -> Vec<crate::tray::TrayPhone> {
        let Some(link) = self.link() else {
            return Vec::new();
        };
        let live = lock(&self.live);
        link.paired_phones()
            .into_iter()
            .map(|r| crate::tray::TrayPhone {
                connected: live.connections.contains_key(&r.device_id),
                device_id: r.device_id,
                label: r.label,
            })
            .collect()
    }

    /// The name `device_id` was paired under (its pairing label), or `None` when the link is
    /// not running or the phone is not paired (callers then show the device id). Notifications
    /// name phones by it, as the views do.
    pub fn label_of(&self, device_id: &str) -> Option<String> {
        let link = self.link()?;
        link.paired_phones()
            .into_iter()
            .find(|p| p.device_id == device_id)
            .map(|p| p.label)
            .filter(|l| !l.trim().is_empty())
    }

    /// The device ids of the paired phones whose label is `name` (ignoring case and surrounding
    /// spaces): what a filter line's `phone:"Demo phone"` means. Empty when none is.
    pub fn ids_named(&self, name: &str) -> Vec<String> {
        let Some(link) = self.link() else {
            return Vec::new();
        };
        let name = name.trim().to_lowercase();
        link.paired_phones()
            .into_iter()
            .filter(|p| p.label.trim().to_lowercase() == name)
            .map(|p| p.device_id)
            .collect()
    }

    /// How many phones are connected now.
    pub fn connected_count(&self) -> usize {
        lock(&self.live).connections.len()
    }

    /// Applies a link event to the view's state; says whether the view should reload.
    pub fn on_link_event(&self, event: &LinkEvent) -> PhonesChange {
        let mut live = lock(&self.live);
        match event {
            LinkEvent::PhoneConnected {
                device_id,
                address,
                version,
                ..
            } => {
                live.connections
                    .insert(device_id.clone(), (address.clone(), *version));
            }
            LinkEvent::PhoneDisconnected { device_id, .. } | LinkEvent::Unpaired { device_id } => {
                live.connections.remove(device_id);
            }
            LinkEvent::Paired {
                device_id, label, ..
            } => {
                if live.quiet_pairing.as_ref() == Some(device_id) {
                    live.quiet_pairing = None;
                    return PhonesChange::Changed {
                        connected: live.connections.len(),
                    };
                }
                live.last_pairing = Some(PairingResult {
                    device_id: device_id.clone(),
                    label: label.clone(),
                    ended: None,
                    at_ms: self.clock.now_ms(),
                });
            }
            LinkEvent::PairingEnded {
                device_id,
                label,
                end,
                ..
            } => {
                live.last_pairing = Some(PairingResult {
                    device_id: device_id.clone(),
                    label: label.clone(),
                    ended: Some(*end),
                    at_ms: self.clock.now_ms(),
                });
            }
            LinkEvent::PairingClosed { .. }
            | LinkEvent::AddressesChanged { .. }
            | LinkEvent::PairingPending(_)
            | LinkEvent::Failure(_) => {}
            _ => return PhonesChange::None,
        }
        PhonesChange::Changed {
            connected: live.connections.len(),
        }
    }

    /// The running link, or a `link` error saying why there is none.
    ///
    /// # Errors
    /// `link` when the link is not running (no key store, no free port, still starting).
    pub fn running(&self) -> Result<Link, IpcError> {
        self.link().ok_or_else(|| {
            let why = lock(&self.live)
                .error
                .clone()
                .unwrap_or_else(|| "the link is still starting; try again in a moment".to_string());
            IpcError::new(
                IpcErrorKind::Link,
                format!("The phone link is not running: {why}"),
            )
        })
    }

    /// Opens (or renews) the pairing window: a 6-digit code that lives 2 minutes, the
    /// `switchboard://pair` link and its QR code, naming every address phones may reach, most
    /// likely first (loopback for the demo).
    ///
    /// # Errors
    /// `link` when the link is not running.
    pub(crate) fn open_pairing(&self) -> Result<PairingInvite, IpcError> {
        self.open_pairing_on(None)
    }

    /// [`PhonesState::open_pairing`] offering only the addresses of the interfaces named in
    /// `networks` (the person's choice in the pairing card; `None`: every network). The link,
    /// its QR code and the typed line then carry only those.
    ///
    /// # Errors
    /// `link` when the link is not running; `invalid_input` when none of `networks` has an
    /// address to offer now (naming the ones that do).
    pub(crate) fn open_pairing_on(
        &self,
        networks: Option<Vec<String>>,
    ) -> Result<PairingInvite, IpcError> {
        let link = self.running()?;
        // A pairing is when the person most needs to know the key store went away.
        self.check_key_store.notify_one();
        if self.demo {
            return Ok(link.open_pairing(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        }
        // Every address of every interface that is up, the default route's first, bridges,
        // containers and VPNs last (docs/protocol.md, "Pairing link").
        // The choice is checked against the addresses of now; the window then follows the
        // machine's addresses while it stays open (an address added or gone is offered).
        choose_networks(link.offered_addresses(), networks.clone())?;
        Ok(link.open_pairing_on(networks))
    }

    /// Closes the pairing window; the code stops working at once.
    pub(crate) fn close_pairing(&self) {
        if let Some(link) = self.link() {
            link.close_pairing();
        }
    }

    /// The person's answer to the pending pairing `id` after comparing the verification codes:
    /// `codes_match` pins the phone once the phone confirmed too; otherwise the pairing is
    /// discarded (nothing saved) and the pairing window closes.
    ///
    /// # Errors
    /// `link` when the link is not running; `not_found` when that pairing ended meanwhile
    /// (confirmed, refused, expired, or the phone went away).
    pub(crate) fn confirm_pairing(&self, id: &str, codes_match: bool) -> Result<(), IpcError> {
        let link = self.running()?;
        link.confirm_pairing(id, codes_match)
            .map_err(|e| IpcError::new(IpcErrorKind::NotFound, e.to_string()))
    }

    /// Forgets a phone's pinned key and, when it is connected, tells it. Returns whether it was
    /// paired.
    ///
    /// # Errors
    /// `link` when the link is not running or the trust file cannot be written.
    pub(crate) fn unpair(&self, device_id: &str) -> Result<bool, IpcError> {
        let link = self.running()?;
        link.unpair(device_id)
            .map_err(|e| IpcError::new(IpcErrorKind::Link, e.to_string()))
    }
}

/// The addresses of `all` on the interfaces named in `networks` (`None`: all of them), in
/// `all`'s order.
///
/// # Errors
/// `invalid_input` when none of `networks` has an address in `all`, naming the interfaces that
/// do.
pub fn choose_networks(
    all: Vec<switchboard_link::addresses::OfferedAddress>,
    networks: Option<Vec<String>>,
) -> Result<Vec<switchboard_link::addresses::OfferedAddress>, IpcError> {
    let Some(names) = networks else {
        return Ok(all);
    };
    let picked: Vec<_> = all
        .iter()
        .filter(|a| names.contains(&a.interface))
        .cloned()
        .collect();
    if picked.is_empty() {
        let mut have: Vec<&str> = all.iter().map(|a| a.interface.as_str()).collect();
        have.dedup();
        return Err(IpcError::new(
            IpcErrorKind::InvalidInput,
            format!(
                "none of the networks chosen ({}) has an address now; this computer has: {}",
                names.join(", "),
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ),
        ));
    }
    Ok(picked)
}

/// The short fingerprint of a pinned key given as URL-safe base64 (`unreadable key` when it
/// does not decode).
pub fn key_fp(public_key_b64: &str) -> String {
    use base64::Engine;
    match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(public_key_b64) {
        Ok(bytes) => switchboard_link::identity::key_fingerprint(&bytes),
        Err(_) => "unreadable key".to_string(),
    }
}

/// The tooltip for `connected` phones ("Switchboard: no phone connected", "... 2 phones
/// connected").
pub fn tray_tooltip(connected: usize) -> String {
    match connected {
        0 => "Switchboard: no phone connected".to_string(),
        1 => "Switchboard: 1 phone connected".to_string(),
        n => format!("Switchboard: {n} phones connected"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{choose_networks, tray_tooltip};
    use switchboard_link::addresses::{InterfaceKind, OfferedAddress};

    #[test]
    fn a_pairing_offers_only_the_networks_chosen() {
        let a = |i: &str, k, ip: &str| OfferedAddress {
            interface: i.into(),
            kind: k,
            address: ip.into(),
        };
        let all = vec![
            a("eth0", InterfaceKind::DefaultRoute, "192.0.2.10"),
            a("eth0", InterfaceKind::DefaultRoute, "2001:db8::10"),
            a("wlan0", InterfaceKind::Local, "198.51.100.20"),
            a("docker0", InterfaceKind::Container, "203.0.113.1"),
        ];
        assert_eq!(choose_networks(all.clone(), None).unwrap(), all);
        let got = choose_networks(all.clone(), Some(vec!["wlan0".into(), "eth0".into()])).unwrap();
        assert_eq!(
            got.iter().map(|x| x.address.as_str()).collect::<Vec<_>>(),
            ["192.0.2.10", "2001:db8::10", "198.51.100.20"],
            "in the offered order, without the bridge"
        );
        let e = choose_networks(all, Some(vec!["wlan9".into()])).unwrap_err();
        assert!(
            e.message.contains("wlan9") && e.message.contains("eth0, wlan0, docker0"),
            "{e:?}"
        );
    }

    #[test]
    fn tooltip_counts_connected_phones() {
        assert_eq!(tray_tooltip(0), "Switchboard: no phone connected");
        assert_eq!(tray_tooltip(1), "Switchboard: 1 phone connected");
        assert_eq!(tray_tooltip(3), "Switchboard: 3 phones connected");
    }
}
