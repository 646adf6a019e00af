//! `switchboard-desktop`: the Switchboard window. All logic lives in the library crate.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    switchboard_desktop::run()
}
