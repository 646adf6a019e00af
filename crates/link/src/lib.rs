//! # switchboard-link: pairing with a phone over the local network and talking ifp/1 with it
//!
//! It may use `switchboard-wire` and `switchboard-domain`. It must not know how dials are
//! stored, the app's state or any user interface: what a phone sends leaves as [`LinkEvent`]s
//! for the app to apply. [`phone`] is the reference phone (`switchboard-phone`, the demo).
//!
//!
//! Why: the phone is where actions happen and are confirmed; the desktop mirrors them. The link
//! is the one channel between the two: WebSocket over TLS 1.3, every frame checked by the ifp/1
//! validator. Spec: `ifp1-notes.md` ("Pairing and identity", "Envelope", "Error classes") and
//! this project's choices in `docs/protocol.md`, "Link: pairing and sessions".
//!
//! ## Parts
//! - [`secret_store`]: the OS key store behind [`SecretStore`] (keyring; in-memory for tests).
//! - [`identity`]: the desktop's Ed25519 key and self-signed TLS certificate, made once.
//! - [`trust`]: the trust file of paired phones (pairing records), written atomically.
//! - [`pairing`]: pairing windows and codes, the invitation link and QR, the signed bytes.
//! - [`binding`]: what a hello proof is bound to (the TLS exporter, or the pinned certificate
//!   for phones without an exporter) and the bytes each side signs in the pinned binding.
//! - [`server`]: the listener and [`Link`] — [`bind`], [`Link::run`], [`Link::open_pairing`],
//!   [`Link::send`], [`Link::unpair`], [`Link::diagnostics`].
//! - `config`: [`LinkConfig`], [`DEFAULT_PORT`], [`FrameLog`].
//! - `event`: the [`LinkEvent`]s the app receives, and the [`MessageCredit`] they carry.
//! - `shared`: the state the [`Link`] handle and every connection share.
//! - `connection`: one phone's socket: handshakes, the read/write loop, credits, drains; its
//!   children `connection::pair` (`pair.request` / `pair.complete`) and `connection::hello`
//!   (the phone's `control.hello`).
//! - [`addresses`]: the addresses a pairing offers (every interface that is up, the default
//!   route's first, containers and VPNs last), named by kind.
//! - [`diagnostics`]: addresses, port, mDNS state, recent failures in plain words.
//! - [`troubleshoot`]: from the diagnostics, each failure class's likely cause and fix.
//! - `budget`: the connections without a valid hello, per source and in total (eviction,
//!   never refusal, so a paired phone always gets in).
//! - `flood`: coalescing of failures before hello (per source, a few reports a minute).
//! - [`tls`]: TLS 1.3 server config and the phone's certificate-pinning verifier.
//! - [`phone_client`]: a phone end in Rust, for tests and the `switchboard-phone` tool.
//!
//! ## Starting the link (what the desktop shell does)
//! ```text
//! let identity = DesktopIdentity::load_or_create(&KeyringStore::new())?; // clear error if no key store
//! let (link, mut events) = Link::new(identity, LinkConfig::new(data_dir))?;
//! let listener = bind(IpAddr::V4(Ipv4Addr::UNSPECIFIED), DEFAULT_PORT).await?; // 47470..=47479
//! tokio::spawn(link.run(listener, shutdown_future));
//! let invite = link.open_pairing(diagnostics::lan_address().unwrap_or(loopback)); // code, link, QR
//! while let Some(event) = events.recv().await { /* PhoneConnected, Message, Failure, ... */ }
//! ```
//!
//! ## The central promise
//! Nothing here can approve, reject or cancel an action: the desktop's `control.hello` and
//! `pair.grant` declare no capabilities, [`Link::send`] takes only the ifp outgoing type, and
//! the one writer refuses `action.approve`, `action.reject` and `action.cancel` as a last guard.

pub mod addresses;
pub mod binding;
mod budget;
mod config;
mod connection;
pub mod diagnostics;
mod event;
mod flood;
pub mod identity;
mod mdns;
pub mod pairing;
pub mod phone;
pub mod phone_client;
pub mod secret_store;
pub mod server;
mod shared;
pub mod tls;
pub mod troubleshoot;
pub mod trust;
mod wire;

pub use binding::HelloBinding;
pub use diagnostics::{FailureKind, LinkDiagnostics, LinkFailure, MdnsStatus};
pub use identity::{DesktopIdentity, IdentityError};
pub use mdns::{host_name, SERVICE_TYPE};
pub use pairing::PairingInvite;
pub use secret_store::{KeyringStore, MemoryStore, SecretStore, SecretStoreError};
pub use server::{
    bind, bind_dual_stack, bind_port, Bound, FrameLog, Link, LinkConfig, LinkError, LinkEvent,
    MessageCredit, PairingEnd, PendingPairing, PortChoice, DEFAULT_PORT, MAX_UNAPPLIED,
    MAX_UNAPPLIED_BYTES, MAX_UNAPPLIED_DIALS,
};
pub use switchboard_wire::clock::{Clock, ManualClock, SystemClock};
pub use trust::{PairedPhone, TrustFile};
pub use wire::refusal_after_hello;
pub use wire::{rfc3339_ms, FORBIDDEN_OUTGOING};

impl From<LinkError> for switchboard_wire::error::IpcError {
    fn from(e: LinkError) -> Self {
        switchboard_wire::error::IpcError::new(
            switchboard_wire::error::IpcErrorKind::Link,
            e.to_string(),
        )
    }
}

impl From<IdentityError> for switchboard_wire::error::IpcError {
    fn from(e: IdentityError) -> Self {
        switchboard_wire::error::IpcError::new(
            switchboard_wire::error::IpcErrorKind::KeyStore,
            e.to_string(),
        )
    }
}
