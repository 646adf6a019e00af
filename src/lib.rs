//! # Switchboard
//!
//! The desktop companion's core as one name for its command-line tools, tests and fuzzers. The
//! code lives in layered crates under `crates/`, each using only those below it (Cargo refuses
//! circles between crates, so the layering holds by construction; `docs/ARCHITECTURE.md` draws
//! it):
//!
//! 1. `switchboard-wire` ([`ifp`], [`js_json`], [`timefmt`], [`clock`], [`fsutil`], [`error`],
//!    [`app_info`], [`sync`]): the ifp/1 wire and the small general pieces.
//! 2. `switchboard-domain` ([`phone_line`], [`dial`], [`host_error`], [`bridge`], [`runtime`],
//!    [`phone_action`], [`confirmations`], [`phone_events`], [`settings`]): what the specs name.
//! 3. `switchboard-dials` ([`dials`]): the live dial log, its SQLite history, filters, queries.
//! 4. `switchboard-link` ([`link`], [`phone`]): the LAN link and the reference phone.
//! 5. `switchboard-app` ([`app`], [`hub`], [`support`]): the application layer, no Tauri.
//! 6. Adapters: `switchboard-control` ([`control`]), this crate's CLIs (`switchboard`,
//!    `switchboard-phone`), and the desktop shell (`src-tauri/`).
//!
//! This crate re-exports each layer's modules under the names they have always had
//! (`switchboard::ifp`, `switchboard::dials`, ...) and adds [`fuzz`], the fuzz targets, which
//! reach into every layer.

pub use switchboard_wire::{app_info, clock, error, fsutil, ifp, js_json, sync, timefmt};

pub use switchboard_domain::{
    bridge, confirmations, dial, host_error, phone_action, phone_events, phone_line, runtime,
    settings,
};

pub use switchboard_dials as dials;

pub use switchboard_link as link;
pub use switchboard_link::phone;

pub use switchboard_app as app;
pub use switchboard_app::bundle as support;
pub use switchboard_app::hub;

pub use switchboard_control as control;

pub mod fuzz;
