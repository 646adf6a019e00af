//! Switchboard's desktop shell: a thin Tauri 2 layer over the `switchboard` core crate.
//!
//! - [`setup`] wires commands, state, tray and window behaviour into any [`tauri::Builder`], so
//!   the whole app boots under tauri's mock runtime in tests as well as on Wry.
//! - [`run`] adds the plugins that need a real desktop (single instance, window state) and runs.
//!
//! Rules: commands live in `commands/` grouped by view, each a few lines that call the core and
//! map errors to [`switchboard::error::IpcError`]; state is `manage()`d, never global; no command
//! can approve, reject or cancel anything on a phone.

use std::process::ExitCode;

use tauri::{Builder, Manager, Runtime, WindowEvent};

pub mod cli;
pub mod commands;
pub mod dials;
pub mod hub;
pub mod link;
pub mod logging;
pub mod notify;
#[cfg(debug_assertions)]
pub mod sample;
pub mod state;
pub mod tray;

use state::AppState;

/// Wires Switchboard's commands, managed state, tray and window behaviour into `builder`.
///
/// Generic over the runtime so tests can boot the whole app with `tauri::test::mock_builder()`.
pub fn setup<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder
        .invoke_handler(commands::handler())
        .setup(|app| {
            init(app.handle(), true)?;
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { api, .. } = event {
                let keep = window
                    .try_state::<AppState>()
                    .map(|s| s.settings().close_to_tray)
                    .unwrap_or(false);
                if keep && window.app_handle().tray_by_id(tray::TRAY_ID).is_some() {
                    api.prevent_close();
                    if let Err(e) = window.hide() {
                        tracing::warn!("could not hide the window: {e}");
                    }
                }
            }
        })
}

/// Loads settings, starts logging, manages the [`AppState`] and, with `with_tray` (the real
/// desktop), creates the tray icon and starts the phone link. GTK's tray needs a real display
/// and the link a key store, so mock-runtime tests pass `false`.
///
/// The setup hook calls it when the app starts; tests under the mock runtime (where the hook
/// does not run until the event loop does) call it right after `build()`. Calling it twice is
/// harmless: the second call finds the state managed and does nothing.
///
/// # Errors
/// When the OS gives no folders for the app's files.
pub fn init<R: Runtime>(app: &tauri::AppHandle<R>, with_tray: bool) -> tauri::Result<()> {
    if app.try_state::<AppState>().is_some() {
        return Ok(());
    }
    let paths = state::AppPaths::resolve(app)?;
    let log_guard = logging::init(&paths.log_dir);
    let app_state = AppState::load(paths, log_guard);
    tracing::info!(
        config = %app_state.paths.config_dir.display(),
        data = %app_state.paths.data_dir.display(),
        "Switchboard starting"
    );
    let options = app
        .try_state::<link::LaunchOptions>()
        .map(|o| o.inner().clone())
        .unwrap_or_default();
    // The demo phone's dials stay with the demo's other data, out of the real dial history.
    let dials_dir = if options.demo {
        app_state.paths.data_dir.join("demo")
    } else {
        app_state.paths.data_dir.clone()
    };
    dials::manage(app, &app_state, &dials_dir);
    app.manage(app_state);
    app.manage(link::LinkState::new(options));
    app.manage(commands::bridge::BridgeState::from_env());
    app.manage(commands::phone_lines::PhoneLinesState::new());
    app.manage(commands::confirmations::ConfirmationsState::new());
    if with_tray {
        if let Err(e) = tray::create(app) {
            tracing::warn!("no tray icon: {e}");
        }
        link::start(app, app.state::<AppState>().paths.data_dir.clone());
    }
    Ok(())
}

/// Shows, unminimises and focuses the main window (tray "Show", a second instance's start).
pub fn show_main_window<R: Runtime>(app: &tauri::AppHandle<R>) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

/// Runs the desktop app on Wry with single-instance and remembered window size and position.
///
/// `main` parses the command line and checks the display first ([`cli`]); `options` come from
/// [`cli::Cli::launch_options`].
pub fn run(options: link::LaunchOptions) -> ExitCode {
    let builder = tauri::Builder::default()
        .manage(options)
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            show_main_window(app);
        }))
        .plugin(tauri_plugin_window_state::Builder::default().build());
    match setup(builder).run(tauri::generate_context!("../tauri.conf.json")) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard-desktop: {e}");
            ExitCode::FAILURE
        }
    }
}
