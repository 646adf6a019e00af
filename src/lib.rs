//! # Switchboard core
//!
//! The protocol logic behind the Switchboard desktop companion, with no Tauri dependency: the
//! desktop shell (`src-tauri/`) and the `switchboard` CLI are thin layers over this crate.
//!
//! ## Layout
//! - [`error`]: the one error shape that crosses the IPC boundary (`{ kind, message }`).
//! - [`app_info`]: the app's name, version and the protocol ranges it speaks.
//! - [`ifp`]: the ifp/1 wire protocol: validator, typed messages, receiver, params_hash.
//!
//! Each module opens with a doc comment naming the spec section it implements (specs live in
//! `../shared/specs`).

pub mod app_info;
pub mod error;
pub mod ifp;
pub mod js_json;
pub mod link;
