//! The real app in a real window under Xvfb (Linux: an X server, xdotool, xprop, ImageMagick,
//! WebKitGTK): the smoke test and its screenshot, a hidden start, the window closed to the tray
//! and made again, no real-time threads, the saved theme before the window shows (with its
//! stand-in window tests, which run everywhere). One real app at a time
//! (`real_window::one_at_a_time`). Every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(target_os = "linux")]
#[path = "../real_window/mod.rs"]
mod real_window;
#[cfg(target_os = "linux")]
#[path = "../tray_stand_in/mod.rs"]
mod tray_stand_in;

mod hidden_start;
mod realtime_threads;
mod smoke;
mod tray_window;
mod window_theme;
