//! The application layer the desktop shell drives: its state and views' data, the dial log and
//! history (a damaged history repaired at start), support bundles, the demo phone end to end,
//! the bundle CLI against a running app, the macOS bundle's files, one version everywhere, the
//! crates' layers.
//!
//! One test program for the whole area, each file a module of it: linking one program instead
//! of one per file is most of what building the tests costs on a 2-core machine.

mod app_layer;
mod cli_bundle;
mod demo_e2e;
mod dial_history;
mod dial_log;
mod history_repair;
mod layers;
mod macos_bundle;
mod support_bundle;
mod version;
