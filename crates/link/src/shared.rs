//! The state the [`Link`](super::Link) handle and every connection share: identity, TLS
//! acceptor, settings, pinned phones, the open pairing window, live sessions, diagnostics.
//!
//! Why a file of its own: the listener ([`super::server`]) owns it and the connections
//! ([`super::connection`]) read and update it; both sit above this file, so neither has to
//! reach into the other for it. Every lock here is a std [`Mutex`], not an async one: each is
//! held for a few field reads or a trust-file write and never across an `.await`.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use super::addresses::OfferedAddress;
use super::budget::Budget;
use super::config::{LinkConfig, DEFAULT_PORT};
use super::diagnostics::PhoneAttempts;
use super::diagnostics::{
    FailureKind, LinkFailure, MdnsStatus, MAX_FAILURES_KEPT, MAX_PRE_HELLO_KEPT,
};
use super::event::LinkEvent;
use super::event::PendingPairing;
use super::flood::{grouped, FloodGate, FLOOD_WINDOW_MS};
use super::identity::DesktopIdentity;
use super::pairing::{invite_offering, PairingBackoff, PairingInvite, PairingWindow};
use super::trust::{PairedPhone, TrustError, TrustFile};
use super::wire::{ifp, Sender};

/// What the [`Link`](super::Link) handle asks of one live connection.
pub(super) enum Command {
    /// Write this frame (from [`Link::send`](super::Link::send)).
    Send(ifp::OutgoingFrame),
    /// Tell the phone it was unpaired (`pair.revoke`), then close; the words are the reason.
    Revoke(String),
    /// Close with these words (e.g. a newer connection of the same phone replaced this one).
    Close(String),
    /// The person's answer to the pending pairing on this connection: `true` when the codes
    /// match ([`Link::confirm_pairing`](super::Link::confirm_pairing)).
    PairDecision(bool),
}

/// The pending pairing (signature verified, waiting for both confirmations) and how to reach
/// the connection that holds it.
pub(super) struct PendingSlot {
    /// The connection's number.
    pub(super) conn: u64,
    /// What the Phones view shows.
    pub(super) info: PendingPairing,
    /// The connection's command channel (for [`Command::PairDecision`]).
    pub(super) tx: mpsc::UnboundedSender<Command>,
}

/// A phone's live session: which connection holds it and how to reach that connection.
pub(super) struct Session {
    /// The connection's number (from [`Shared::next_conn`]), so an old connection ending does
    /// not remove the session of the newer one that replaced it.
    pub(super) conn: u64,
    /// The connection's command channel.
    pub(super) tx: mpsc::UnboundedSender<Command>,
}

/// The open pairing window and the address its invite names.
pub(super) struct OpenPairing {
    /// Code, expiry and tries left.
    pub(super) window: PairingWindow,
    /// The addresses the phone may dial, most likely first.
    pub(super) addrs: Vec<OfferedAddress>,
    /// The connection whose pairing holds the window (its right code came), if any.
    pub(super) held_by: Option<u64>,
    /// Whether `addrs` follows the machine's addresses while the window is open (and which
    /// interfaces): `None` for addresses given by hand ([`Link::open_pairing_offering`]).
    ///
    /// [`Link::open_pairing_offering`]: super::Link::open_pairing_offering
    pub(super) follow: Option<Networks>,
}

/// Which of the machine's networks a pairing window offers while it stays open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Networks {
    /// Every network (the default "Pair a phone").
    All,
    /// Only the interfaces with these names (the person's choice in the pairing card).
    Only(Vec<String>),
}

impl Networks {
    /// The addresses of `offered` this choice keeps, in `offered`'s order.
    pub(super) fn pick(&self, offered: &[OfferedAddress]) -> Vec<OfferedAddress> {
        match self {
            Networks::All => offered.to_vec(),
            Networks::Only(names) => offered
                .iter()
                .filter(|a| names.contains(&a.interface))
                .cloned()
                .collect(),
        }
    }
}

/// What [`Link::diagnostics`](super::Link::diagnostics) reports beyond the trust file and
/// sessions.
pub(super) struct Diag {
    /// The listener's address, once [`Link::run`](super::Link::run) was called.
    pub(super) bound: Option<SocketAddr>,
    /// The mDNS advertisement's state.
    pub(super) mdns: MdnsStatus,
    /// The most recent real failures (after hello, key store, mDNS, trust file, pairing
    /// verdicts), at most [`MAX_FAILURES_KEPT`], oldest first.
    pub(super) failures: VecDeque<LinkFailure>,
    /// Failures before hello, coalesced: one entry per source address (its latest failure and
    /// the count of its current minute), at most [`MAX_PRE_HELLO_KEPT`], oldest first. Kept
    /// apart so a flood never pushes a real failure out of `failures`.
    pub(super) pre_hello: VecDeque<(Option<IpAddr>, LinkFailure)>,
    /// Counts the failures before hello and decides which are logged and sent as events.
    pub(super) flood: FloodGate,
    /// What phones reported about the addresses they could not reach, latest per phone, at
    /// most [`MAX_ATTEMPT_REPORTS`](super::diagnostics::MAX_ATTEMPT_REPORTS), newest first.
    pub(super) attempts: VecDeque<PhoneAttempts>,
    /// Ports of the range another program held when the listener was bound.
    pub(super) ports_taken: Vec<u16>,
    /// Each phone's clock against this computer's at its last verified hello, by device id
    /// (only paired phones get there, so it holds at most one entry per pairing record).
    pub(super) clock_skews: std::collections::BTreeMap<String, super::diagnostics::PhoneClockSkew>,
}

/// The state behind every clone of a [`Link`](super::Link) and every connection task.
pub(super) struct Shared {
    /// The connections without a valid hello (per source and in total), shared with their
    /// tickets. Never held with another lock of this struct.
    pub(super) budget: Arc<Mutex<Budget>>,
    /// The desktop's key and certificate.
    pub(super) identity: DesktopIdentity,
    /// TLS 1.3 acceptor built from `identity`.
    pub(super) acceptor: TlsAcceptor,
    /// The link's settings.
    pub(super) config: LinkConfig,
    /// Where the pinned phones are kept.
    pub(super) trust_file: TrustFile,
    /// The pinned phones, as last saved to `trust_file` (sync lock: held while saving, which
    /// is a small atomic file write, never across an `.await`).
    pub(super) trust: Mutex<Vec<PairedPhone>>,
    /// The open pairing window, if any.
    pub(super) pairing: Mutex<Option<OpenPairing>>,
    /// The backoff on failed `pair.request`s (per source and global). Lock order: this one
    /// before `pairing` when both are held.
    pub(super) pair_backoff: Mutex<PairingBackoff>,
    /// The pairing waiting for the person's and the phone's confirmation, if any (at most one:
    /// it holds the window its code came from).
    pub(super) pending: Mutex<Option<PendingSlot>>,
    /// Live sessions by device id.
    pub(super) sessions: Mutex<HashMap<String, Session>>,
    /// Where [`LinkEvent`]s go (unbounded: nothing is dropped; the app drains it).
    pub(super) events: mpsc::UnboundedSender<LinkEvent>,
    /// Listener address, mDNS state, recent failures.
    pub(super) diag: Mutex<Diag>,
    /// The next connection's number.
    pub(super) next_conn: AtomicU64,
}

/// Locks a std mutex, recovering the data if a holder panicked (state stays usable).
pub(super) use switchboard_wire::sync::lock;

impl Shared {
    /// This desktop as the sender of a frame.
    pub(super) fn sender(&self) -> Sender {
        Sender {
            entity: self.identity.entity_id(),
            device: self.identity.device_id(),
        }
    }

    /// The invite for `window` at `addr` and the bound port ([`DEFAULT_PORT`] before
    /// [`Link::run`](super::Link::run)).
    pub(super) fn invite_for(
        &self,
        window: &PairingWindow,
        addrs: &[OfferedAddress],
    ) -> PairingInvite {
        let port = lock(&self.diag)
            .bound
            .map(|b| b.port())
            .unwrap_or(DEFAULT_PORT);
        invite_offering(addrs, port, window, self.identity.cert_fingerprint())
    }

    /// Keeps a paired phone's clock skew measured at its hello (replacing its earlier one).
    pub(super) fn record_clock_skew(&self, skew: super::diagnostics::PhoneClockSkew) {
        lock(&self.diag)
            .clock_skews
            .insert(skew.device_id.clone(), skew);
    }

    /// Keeps a phone's report of the addresses it could not reach (replacing its earlier one).
    pub(super) fn record_attempts(&self, report: PhoneAttempts) {
        let mut d = lock(&self.diag);
        d.attempts.retain(|r| r.device_id != report.device_id);
        d.attempts.push_front(report);
        d.attempts.truncate(super::diagnostics::MAX_ATTEMPT_REPORTS);
    }

    /// Records a real failure in diagnostics (the last [`MAX_FAILURES_KEPT`]), logs it and
    /// tells the app.
    ///
    /// Real failures are the ones a stranger cannot repeat at will: after hello, the key store,
    /// mDNS, the trust file, and the pairing verdicts (at most [`MAX_WRONG_TRIES`] wrong codes and
    /// one expiry per window the person opened). An `identity_changed` (only recorded when the
    /// proof verifies under the presented key) replaces the earlier one of the same device id,
    /// and is logged and sent at most once a minute per device id.
    ///
    /// [`MAX_WRONG_TRIES`]: super::pairing::MAX_WRONG_TRIES
    pub(super) fn fail(
        &self,
        kind: FailureKind,
        words: impl Into<String>,
        device_id: Option<&str>,
        address: Option<SocketAddr>,
    ) {
        let f = self.failure(kind, words.into(), device_id, address);
        let mut quiet = false;
        {
            let mut d = lock(&self.diag);
            if kind == FailureKind::IdentityChanged {
                let same = |e: &LinkFailure| e.kind == kind && e.device_id == f.device_id;
                quiet = d
                    .failures
                    .iter()
                    .any(|e| same(e) && f.at_ms < e.at_ms.saturating_add(FLOOD_WINDOW_MS));
                let earlier = d.failures.iter().rev().find(|e| same(e)).map(|e| e.at_ms);
                d.failures.retain(|e| !same(e));
                if let (true, Some(at)) = (quiet, earlier) {
                    // Keep the first time of the minute so the once-a-minute report stays due.
                    let mut kept = f.clone();
                    kept.at_ms = at;
                    d.failures.push_back(kept);
                } else {
                    d.failures.push_back(f.clone());
                }
            } else {
                d.failures.push_back(f.clone());
            }
            while d.failures.len() > MAX_FAILURES_KEPT {
                d.failures.pop_front();
            }
        }
        if !quiet {
            tracing::info!(kind = ?f.kind, "link failure: {}", f.words);
            let _ = self.events.send(LinkEvent::Failure(f));
        }
    }

    /// Records a failure before hello (TLS or WebSocket handshake, a frame before hello, a
    /// refused `pair.request` that got no verdict, a refused hello): coalesced per source in
    /// diagnostics' separate pre-hello slot, logged and sent to the app only as often as the
    /// [`FloodGate`] allows (about once a minute per source, at most
    /// [`MAX_REPORTS_PER_MINUTE`](super::flood::MAX_REPORTS_PER_MINUTE) a minute in total).
    pub(super) fn fail_before_hello(
        &self,
        kind: FailureKind,
        words: impl Into<String>,
        device_id: Option<&str>,
        address: Option<SocketAddr>,
    ) {
        let words = words.into();
        let source = address.map(|a| a.ip());
        let from = source
            .map(|ip| ip.to_string())
            .unwrap_or_else(|| "an unknown address".into());
        let now = self.config.clock.now_ms();
        let (admission, kept) = {
            let mut d = lock(&self.diag);
            let admission = d.flood.admit(source, now);
            let slot_words = if admission.this_minute > 1 {
                format!(
                    "{} failed attempts before hello from {from} in the last minute; the latest: {words}",
                    grouped(admission.this_minute)
                )
            } else {
                words.clone()
            };
            let kept = self.failure(kind, slot_words, device_id, address);
            d.pre_hello.retain(|(ip, _)| *ip != source);
            d.pre_hello.push_back((source, kept.clone()));
            while d.pre_hello.len() > MAX_PRE_HELLO_KEPT {
                d.pre_hello.pop_front();
            }
            (admission, kept)
        };
        if !admission.report {
            return;
        }
        let mut f = kept;
        f.words = match admission.previous_minute {
            Some(n) => format!(
                "{} failed attempts before hello from {from} in the last minute; the latest: {words}",
                grouped(n)
            ),
            None => words,
        };
        if let Some(n) = admission.unreported_before {
            f.words.push_str(&format!(
                " ({} more failed attempts before hello, from other sources, were only counted)",
                grouped(n)
            ));
        }
        tracing::info!(kind = ?f.kind, "link failure before hello: {}", f.words);
        let _ = self.events.send(LinkEvent::Failure(f));
    }

    fn failure(
        &self,
        kind: FailureKind,
        words: String,
        device_id: Option<&str>,
        address: Option<SocketAddr>,
    ) -> LinkFailure {
        LinkFailure {
            kind,
            words: peer_text(&words, MAX_FAILURE_WORDS),
            what_to_do: kind.what_to_do().to_string(),
            device_id: device_id.map(|d| peer_text(d, MAX_FAILURE_DEVICE_ID)),
            address: address.map(|a| a.to_string()),
            at_ms: self.config.clock.now_ms(),
        }
    }

    /// Whether `ip` is the address a paired phone last connected from (its pairing record's
    /// `last_address`): the connection budget evicts such connections last.
    pub(super) fn is_known_source(&self, ip: IpAddr) -> bool {
        lock(&self.trust).iter().any(|p| {
            p.last_address
                .as_deref()
                .and_then(|a| a.parse::<SocketAddr>().ok())
                .is_some_and(|a| a.ip() == ip)
        })
    }

    /// Tells the app (a closed receiver is ignored).
    pub(super) fn emit(&self, e: LinkEvent) {
        let _ = self.events.send(e);
    }

    /// Applies `f` to a copy of the pinned phones, saves it, and only then keeps it.
    pub(super) fn update_trust(
        &self,
        f: impl FnOnce(&mut Vec<PairedPhone>),
    ) -> Result<(), TrustError> {
        let mut trust = lock(&self.trust);
        let mut next = trust.clone();
        f(&mut next);
        self.trust_file.save(&next)?;
        *trust = next;
        Ok(())
    }
}

/// Longest failure text kept, in characters (the rest is cut with `…`).
const MAX_FAILURE_WORDS: usize = 400;

/// Longest device id kept in a failure, in characters (a real one is `dev_` + 16 hex).
const MAX_FAILURE_DEVICE_ID: usize = 64;

/// `text` as it may be logged and shown: control characters (a newline that would forge a log
/// line, an escape sequence for a terminal) written as `\u{..}`, cut to `max` characters. A
/// failure's words and device id may carry what an unauthenticated peer sent.
pub(super) fn peer_text(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod peer_text_tests {
    use super::peer_text;

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        assert_eq!(
            peer_text("dev_1\nINFO forged", 64),
            "dev_1\\u{a}INFO forged"
        );
        assert_eq!(peer_text("\u{1b}[31mred", 64), "\\u{1b}[31mred");
        assert_eq!(
            peer_text(&"x".repeat(70), 64),
            format!("{}…", "x".repeat(64))
        );
        assert_eq!(
            peer_text("dev_0123456789abcdef", 64),
            "dev_0123456789abcdef"
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Networks;
    use crate::addresses::{InterfaceKind, OfferedAddress};

    #[test]
    fn a_window_follows_only_the_networks_chosen() {
        let a = |i: &str, ip: &str| OfferedAddress {
            interface: i.into(),
            kind: InterfaceKind::Local,
            address: ip.into(),
        };
        // The addresses after a change: eth0 gained one, a new eth1 appeared.
        let now = vec![
            a("eth0", "192.0.2.1"),
            a("eth0", "198.51.100.5"),
            a("docker0", "203.0.113.1"),
            a("eth1", "203.0.113.5"),
        ];
        assert_eq!(Networks::All.pick(&now), now);
        let only = Networks::Only(vec!["eth0".into()]).pick(&now);
        assert_eq!(
            only.iter().map(|x| x.address.as_str()).collect::<Vec<_>>(),
            ["192.0.2.1", "198.51.100.5"],
            "the new address of a chosen network, not the new network"
        );
        assert!(Networks::Only(vec!["wlan0".into()]).pick(&now).is_empty());
    }
}
