//! The shell under tauri's mock runtime: every view's commands through IPC (Bridge status,
//! Confirmations, Live dials, Phone lines, the app's own), the events it sends the window, a
//! demo launch's separate dial history, and the built program without a display. Each app is
//! handed its own temporary home, so the tests run side by side in this one program.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod bridge;
mod confirmations;
mod demo_data;
mod dials;
mod headless;
mod ipc;
mod phone_lines;
mod window_events;
