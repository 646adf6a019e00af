//! `switchboard-desktop`: the Switchboard window. All logic lives in the library crate.
//!
//! The command line is parsed before Tauri starts, so `--help` and `--version` work without a
//! display, and a start without a usable display ends with one sentence instead of a panic.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use clap::Parser;
use switchboard_desktop::cli::{check_display, Cli};

fn main() -> std::process::ExitCode {
    // Before any thread exists: arenas made earlier would stay.
    let allocator = switchboard::app::allocator::limit_malloc_arenas();
    // A release build has no console of its own on Windows: what the command line prints goes
    // to the terminal it was started from.
    #[cfg(windows)]
    switchboard_desktop::windows::attach_parent_console();
    // Prints and exits for --help and --version (0) and for usage errors (2).
    let cli = Cli::parse();
    // A bundle that cannot be opened is said before any window appears.
    if let Some(file) = &cli.open {
        if let Err(e) = switchboard::support::open::open_bundle(file) {
            eprintln!("switchboard-desktop: {e}");
            return std::process::ExitCode::from(2);
        }
    }
    if let Err(problem) = check_display() {
        eprintln!("{problem}");
        return std::process::ExitCode::FAILURE;
    }
    // Without WebView2 no window can be made: said, and a clean exit.
    #[cfg(windows)]
    if switchboard_desktop::windows::webview2_version().is_none() {
        switchboard_desktop::windows::say(switchboard_desktop::windows::NO_WEBVIEW2);
        return std::process::ExitCode::FAILURE;
    }
    let mut options = cli.launch_options();
    // The one place the environment names the app's folders; the app is handed them.
    options.paths = switchboard::app::AppPaths::from_env();
    options.graphics = window_graphics();
    options.scripts = window_scripts();
    options.allocator = Some(allocator);
    switchboard_desktop::run(options)
}

/// Linux: decides how the window draws (`Settings::window_gpu`, off by default: no accelerated
/// compositing) and sets `WEBKIT_DISABLE_COMPOSITING_MODE` and the variables that keep the
/// GPU's libraries out of the app accordingly (`WindowGraphics::variables`), here, before any
/// thread or window exists (WebKitGTK reads them when the web view is made).
#[cfg(target_os = "linux")]
fn window_graphics() -> Option<switchboard::app::settings::WindowGraphics> {
    use switchboard::app::{
        settings::{WindowGraphics, DRM_DEVICE_DIR},
        AppPaths,
    };
    let g = WindowGraphics::for_app(AppPaths::from_env_or_os().as_ref());
    // No folder (no GPU driver loaded) lists no render node.
    let nodes: Vec<String> = std::fs::read_dir(DRM_DEVICE_DIR)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let env = |n: &str| std::env::var_os(n).map(|v| v.to_string_lossy().into_owned());
    for (name, value) in g.variables(env, nodes) {
        std::env::set_var(name, value);
    }
    Some(g)
}

/// Linux: decides how the window's scripts run (`WindowScripts`: JavaScriptCore's interpreter,
/// an 8 MiB collection step and no WebKit memory-pressure monitor, each unless its variable is
/// already set) and sets `JSC_useJIT`, `JSC_largeHeapSize` and
/// `WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR` accordingly, here, before any thread or window
/// exists (the web process inherits the environment).
#[cfg(target_os = "linux")]
fn window_scripts() -> Option<switchboard::app::settings::WindowScripts> {
    let s = switchboard::app::settings::WindowScripts::for_app();
    for (name, value) in s.variables() {
        std::env::set_var(name, value);
    }
    Some(s)
}

/// Other systems: the web view's own choice (nothing decided).
#[cfg(not(target_os = "linux"))]
fn window_scripts() -> Option<switchboard::app::settings::WindowScripts> {
    None
}

/// Other systems: the web view's own choice (nothing decided).
#[cfg(not(target_os = "linux"))]
fn window_graphics() -> Option<switchboard::app::settings::WindowGraphics> {
    None
}
