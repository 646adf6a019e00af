//! # Switchboard core
//!
//! The protocol logic behind the Switchboard desktop companion, with no Tauri dependency: the
//! desktop shell (`src-tauri/`) and the `switchboard` CLI are thin layers over this crate.
//!
//! ## Layout
//! - [`error`]: the one error shape that crosses the IPC boundary (`{ kind, message }`).
//! - [`app_info`]: the app's name, version and the protocol ranges it speaks.
//! - [`js_json`]: JSON text exactly as JavaScript writes it (manifest hashes, params_hash).
//! - [`settings`]: the person's settings, kept across restarts.
//! - [`fsutil`]: atomic file writes.
//! - [`fuzz`]: the fuzz targets (`scripts/fuzz.sh`; their seeds are replayed by `cargo test`).
//! - [`ifp`]: the ifp/1 wire protocol: validator, typed messages, receiver, params_hash.
//! - [`host_error`]: classifies host and phone-line error texts (permission forms and others).
//! - [`bridge`]: bridge-status banners derived from failed calls, and the store keeping them current.
//! - [`phone_line`]: phone lines: protocol, manifests, registry, pairing records.
//! - [`runtime`]: OpenPhone runtime-protocol manifests, the ifp/1 tool catalogue and autonomy.
//! - [`phone_action`]: the `phone_action` tool's card, call checks and answer texts.
//! - [`dials`]: the live dial log (phone-line calls): ring, SQLite, queries, subscriptions.
//! - [`confirmations`]: the mirror of every action a phone is asked to confirm, and its notifications.
//! - [`link`]: the ifp/1 LAN link: identity in the key store, TLS listener, pairing, sessions.
//! - [`phone_events`]: the phone-line event types a phone mirrors (settings, dials, bridge, autonomy).
//! - [`hub`]: the desktop applies what phones mirror (settings, dials, banners, proposals).
//! - [`phone`]: the reference phone (`switchboard-phone`): scenarios, player, embedded demo.
//! - [`app`]: the application layer the desktop shell is a thin layer over: the views' state,
//!   the loops between link and hub, and the one shutdown, behind a small host trait.
//! - [`control`]: the local control socket the `switchboard` CLI asks the running app over
//!   (`pair`, `phones`, `unpair`), the same user only.
//! - [`sync`]: locks whose poisoning is recovered.
//!
//! Each module opens with a doc comment naming the spec section it implements (specs live in
//! `../shared/specs`).

pub mod app;
pub mod app_info;
pub mod bridge;
pub mod clock;
pub mod confirmations;
pub mod control;
pub mod dials;
pub mod error;
pub mod fsutil;
pub mod fuzz;
pub mod host_error;
pub mod hub;
pub mod ifp;
pub mod js_json;
pub mod link;
pub mod phone;
pub mod phone_action;
pub mod phone_events;
pub mod phone_line;
pub mod runtime;
pub mod settings;
pub mod support;
pub mod sync;
pub mod timefmt;
