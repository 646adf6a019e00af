//! The [`Link`]'s pairing side: opening a pairing window on the addresses a phone may reach,
//! the invitation it shows, the pending pairing the person confirms or rejects, and closing the
//! window.
//!
//! `docs/protocol.md`, "Link: pairing and sessions". Only the person opens a window; nothing a
//! phone sends extends it.

use std::net::IpAddr;

use super::{Link, LinkError};
use crate::addresses::OfferedAddress;
use crate::event::PendingPairing;
use crate::pairing::{PairingInvite, PairingWindow};
use crate::shared::{lock, Command, Networks, OpenPairing};

impl Link {
    /// Opens (or reopens) the pairing window; the link advertises `addr` (the address the
    /// phone should dial, e.g. [`crate::diagnostics::lan_address`]) and the bound port.
    ///
    /// Only the person does this: the window's lifetime (`pairing_ttl_ms`) and its budget of
    /// [`MAX_WRONG_TRIES`](crate::pairing::MAX_WRONG_TRIES) wrong codes are fixed here and
    /// nothing a phone sends extends them. Reopening replaces the code and starts a new budget;
    /// the backoff on wrong codes stays.
    pub fn open_pairing(&self, addr: IpAddr) -> PairingInvite {
        self.open_pairing_offering(vec![crate::addresses::describe(addr)])
    }

    /// Opens (or reopens) the pairing window offering every address in `addrs` (most likely
    /// first, e.g. [`crate::addresses::offered_addresses`] of the bound address): the link
    /// carries as many as fit ([`crate::pairing::fit_addresses`]) and the invite names the ones
    /// left out. With `addrs` empty the link names loopback. Otherwise as
    /// [`Link::open_pairing`].
    pub fn open_pairing_offering(&self, addrs: Vec<OfferedAddress>) -> PairingInvite {
        self.open_window(addrs, None)
    }

    /// Opens (or reopens) the pairing window offering this machine's addresses
    /// ([`Link::offered_addresses`]) on the interfaces named in `networks` (`None`: every
    /// network), and keeps offering them as they change while the window is open (told by the
    /// kernel on Linux, else checked every [`LinkConfig::address_check`]): the code stays, the link, its QR code and the typed
    /// lines name the addresses of now. Otherwise as [`Link::open_pairing_offering`] (with no
    /// address on those networks, the link names loopback; callers check first, as
    /// `PhonesState::open_pairing_on` does).
    pub fn open_pairing_on(&self, networks: Option<Vec<String>>) -> PairingInvite {
        let follow = match networks {
            None => Networks::All,
            Some(names) => Networks::Only(names),
        };
        let addrs = follow.pick(&self.offered_addresses());
        self.open_window(addrs, Some(follow))
    }

    fn open_window(&self, addrs: Vec<OfferedAddress>, follow: Option<Networks>) -> PairingInvite {
        let now = self.shared.config.clock.now_ms();
        let window = PairingWindow::open(now, self.shared.config.pairing_ttl_ms);
        let addrs = if addrs.is_empty() {
            vec![crate::addresses::describe(IpAddr::V4(
                std::net::Ipv4Addr::LOCALHOST,
            ))]
        } else {
            addrs
        };
        let inv = self.shared.invite_for(&window, &addrs);
        *lock(&self.shared.pairing) = Some(OpenPairing {
            window,
            addrs,
            held_by: None,
            follow,
        });
        inv
    }

    /// The addresses this desktop offers phones for the listener it runs: every address of
    /// every interface that is up, of the families the listener serves, most likely first
    /// ([`crate::addresses::offered_addresses`]); empty before [`Link::run`].
    pub fn offered_addresses(&self) -> Vec<OfferedAddress> {
        self.local_addr()
            .map(|b| crate::addresses::offered_addresses(b.ip()))
            .unwrap_or_default()
    }

    /// The pairing that waits for confirmation, if any: its signature verified, the person on
    /// the desktop is to compare its verification code with the phone's screen. Nothing is in
    /// the trust file until [`Link::confirm_pairing`] said the codes match and the phone sent its
    /// own `pair.confirm`.
    pub fn pending_pairing(&self) -> Option<PendingPairing> {
        lock(&self.shared.pending).as_ref().map(|p| p.info.clone())
    }

    /// The person's answer to the pending pairing `id`: `codes_match` when the phone shows the
    /// same verification code. With `true`, the phone's key is pinned once the phone confirmed
    /// too (maybe already); with `false` the pending pairing is discarded, nothing is written,
    /// and the pairing window closes (the person opens a new one, with the phone in view).
    ///
    /// Errors: [`LinkError::NoPendingPairing`] when no pending pairing has that id (it ended).
    pub fn confirm_pairing(&self, id: &str, codes_match: bool) -> Result<(), LinkError> {
        let pending = lock(&self.shared.pending);
        let slot = pending
            .as_ref()
            .filter(|p| p.info.id == id)
            .ok_or_else(|| LinkError::NoPendingPairing(id.to_string()))?;
        slot.tx
            .send(Command::PairDecision(codes_match))
            .map_err(|_| LinkError::NoPendingPairing(id.to_string()))
    }

    /// Closes the pairing window, if open.
    pub fn close_pairing(&self) {
        *lock(&self.shared.pairing) = None;
    }

    /// The open pairing window's invite, if any: `None` once the window was used, expired, or
    /// closed after its last allowed wrong code, and while a pairing made with its code waits
    /// for confirmation ([`Link::pending_pairing`]).
    pub fn pairing_invite(&self) -> Option<PairingInvite> {
        let now = self.shared.config.clock.now_ms();
        let mut p = lock(&self.shared.pairing);
        if p.as_ref().is_some_and(|o| o.window.expired(now)) {
            *p = None;
        }
        p.as_ref()
            .filter(|o| !o.window.held())
            .map(|o| self.shared.invite_for(&o.window, &o.addrs))
    }
}
