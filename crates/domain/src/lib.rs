//! # switchboard-domain: what the specs name
//!
//! The types and rules of the source documents, with no storage of dials, no network and no
//! app state: what a phone line, a dial, a host error, a banner, a runtime manifest, a phone
//! action and a confirmation are, and how each is checked or explained.
//!
//! - [`phone_line`]: phone lines (`phone-line.md`): protocol, describe manifests and their hash,
//!   registry, pairing rule, `phoneline-pairings.json` records, exclusions, summaries.
//! - [`dial`]: the [`dial::Dial`] record (one phone-line call) and its conformance check
//!   against the op's shapes ([`dial::conformance`]).
//! - [`host_error`]: classifies host and phone-line error texts (permission forms and others).
//! - [`bridge`]: bridge-status banners derived from failed calls, and the store keeping them.
//! - [`runtime`]: OpenPhone runtime-protocol manifests, the ifp/1 tool catalogue and autonomy.
//! - [`phone_action`]: the `phone_action` tool's card, call checks and answer texts.
//! - [`confirmations`]: the mirror of every action a phone asks its person to confirm. Mirrored,
//!   never answered: nothing here can approve, reject or cancel.
//! - [`phone_events`]: the phone-line event types a phone mirrors (settings, dials, bridge,
//!   autonomy).
//! - [`settings`]: the person's settings, kept across restarts.
//!
//! It may use [`switchboard_wire`] only. It must not know how dials are stored or queried
//! (`switchboard-dials`), the LAN link (`switchboard-link`), the app or any user interface.
//!
//! Each module opens with a doc comment naming the spec section it implements (specs live in
//! `../shared/specs`).

pub mod bridge;
pub mod confirmations;
pub mod dial;
pub mod host_error;
pub mod phone_action;
pub mod phone_events;
pub mod phone_line;
pub mod runtime;
pub mod settings;
