//! # switchboard-wire: the bottom layer
//!
//! What every other Switchboard crate stands on: the ifp/1 wire protocol (`ifp1-notes.md`) and
//! the small, general pieces around it.
//!
//! - [`ifp`]: ifp/1 messages: validator, typed envelopes and payloads, receiver, outgoing
//!   frames, `params_hash`, error classes.
//! - [`js_json`]: JSON text exactly as JavaScript's `JSON.stringify` writes it (manifest hashes,
//!   `params_hash`).
//! - [`timefmt`]: RFC 3339 timestamps as the protocol writes them.
//! - [`clock`]: the one clock ([`clock::Clock`]): the system's, or a manual one in tests.
//! - [`fsutil`]: crash-safe file writes (whole old or whole new, never torn).
//! - [`error`]: the one error shape that crosses the IPC boundary (`{ kind, message }`).
//! - [`app_info`]: the app's name, version and the protocol ranges it speaks.
//! - [`sync`]: locks whose poisoning is recovered.
//! - [`background`]: threads doing background work, kept from preempting the link's threads.
//!
//! It must not know phone lines, dials, phones, the link, the app or any user interface: it
//! depends on no other Switchboard crate, and everything above may use it.

pub mod app_info;
pub mod background;
pub mod clock;
pub mod error;
pub mod fsutil;
pub mod ifp;
pub mod js_json;
pub mod sync;
pub mod timefmt;
