//! Switchboard's desktop shell: a thin Tauri 2 layer over the core's application layer
//! ([`switchboard::app`]).
//!
//! - [`setup`] wires commands, state, tray and window behaviour into any [`tauri::Builder`], so
//!   the whole app boots under tauri's mock runtime in tests as well as on Wry.
//! - [`run`] adds the plugins that need a real desktop (single instance, window state), runs,
//!   and calls the app's one shutdown on every way out (tray Quit, window close, SIGTERM,
//!   SIGINT, SIGHUP at session end).
//!
//! Rules: commands live in `commands/` grouped by view, each one call into the core; state is
//! `manage()`d, never global; no command can approve, reject or cancel anything on a phone.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser as _;
use switchboard::app::{App, AppConfig, AppPaths};
use switchboard::confirmations::ConfirmationMirror;
use tauri::{Builder, Manager, Runtime, WindowEvent};

pub mod cli;
pub mod commands;
pub mod host;
pub mod logging;
pub mod menu;
pub mod notify;
#[cfg(target_os = "linux")]
pub mod realtime;
pub mod tray;
pub mod window;
#[cfg(windows)]
pub mod windows;

/// How the app was launched.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// `--demo`: an embedded demo phone on loopback pairs by itself and plays the demo scenario.
    pub demo: bool,
    /// `--open FILE`: a support bundle to open read only at start.
    pub open: Option<std::path::PathBuf>,
    /// `--hidden` (or `--minimized`): start in the tray with the main window hidden (start on
    /// login uses it). Shown anyway when there is no tray.
    pub hidden: bool,
    /// How the window draws, as decided before it was made (Linux; logged at start). `None`
    /// when nothing was decided (tests, other systems).
    pub graphics: Option<switchboard::app::settings::WindowGraphics>,
    /// How the window's scripts run, as decided before it was made (Linux; logged at start).
    /// `None` when nothing was decided (tests, other systems).
    pub scripts: Option<switchboard::app::settings::WindowScripts>,
    /// What `main` set up of the C allocator before any thread started (logged at start).
    /// `None` when nothing was decided (tests).
    pub allocator: Option<switchboard::app::allocator::ArenaLimit>,
    /// The app's folders when they are given (`main` reads `SWITCHBOARD_HOME`; a test names
    /// its own temporary home); `None`: the OS's per-user folders for the app.
    pub paths: Option<AppPaths>,
}

/// Gives the windows' own frame (the GTK menu bar and its theme on Linux, the title bar on
/// macOS and Windows) the theme of Settings: `System` follows the desktop.
pub fn apply_theme<R: Runtime>(app: &tauri::AppHandle<R>, theme: switchboard::settings::Theme) {
    app.set_theme(native_theme(theme));
}

/// The native frame's theme for a saved theme: `None` for `System` (the desktop's own).
pub fn native_theme(theme: switchboard::settings::Theme) -> Option<tauri::Theme> {
    use switchboard::settings::Theme;
    match theme {
        Theme::System => None,
        Theme::Light => Some(tauri::Theme::Light),
        Theme::Dark => Some(tauri::Theme::Dark),
    }
}

/// The main window as the start handles it: given a theme, then shown (implemented for
/// Tauri's window; a seam so the order can be checked without a display).
pub trait StartingWindow {
    /// Gives the window's own frame `theme` (on Linux GTK's prefer-dark setting, which the
    /// menu bar follows).
    fn set_theme(&self, theme: tauri::Theme);
    /// Shows, unminimises and focuses it.
    fn show(&self);
}

impl<R: Runtime> StartingWindow for tauri::WebviewWindow<R> {
    fn set_theme(&self, theme: tauri::Theme) {
        if let Err(e) = tauri::WebviewWindow::set_theme(self, Some(theme)) {
            tracing::warn!("the window's frame keeps the desktop's theme: {e}");
        }
    }

    fn show(&self) {
        let _ = tauri::WebviewWindow::show(self);
        let _ = self.unminimize();
        let _ = self.set_focus();
    }
}

/// Opens the main window at start: the saved theme first, so its frame and GTK menu bar never
/// show in the other theme (the theme and the show reach the window in this order), then
/// shown when `show` (not with `--hidden` and a tray). With `System` the theme is left to the
/// desktop (forcing "not dark" would override a dark desktop).
pub fn open_main_window(
    window: &dyn StartingWindow,
    saved: switchboard::settings::Theme,
    show: bool,
) {
    if let Some(theme) = native_theme(saved) {
        window.set_theme(theme);
    }
    if show {
        window.show();
    }
}

/// Applies a theme chosen in Settings to the windows' frame ([`apply_theme`]); managed by
/// [`run`] only (the mock runtime of the tests has no app-wide themes). The saved theme at
/// start is given to the main window before it shows ([`open_main_window`]).
pub struct ThemeApplier(pub Box<dyn Fn(switchboard::settings::Theme) + Send + Sync>);

/// Keeps the log file writer alive for the app's lifetime (managed).
pub struct LogGuard(pub Option<logging::LogHandle>);

/// Wires Switchboard's commands, managed state, tray and window behaviour into `builder`.
///
/// Generic over the runtime so tests can boot the whole app with `tauri::test::mock_builder()`.
pub fn setup<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder
        .invoke_handler(commands::handler())
        .setup(|app| {
            init(app.handle(), true)?;
            show_unless_hidden(app.handle());
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::Destroyed = event {
                let in_tray = window
                    .try_state::<Arc<window::PlaceState>>()
                    .is_some_and(|p| p.in_tray());
                if in_tray && window.label() == window::MAIN {
                    #[cfg(target_os = "linux")]
                    realtime::set_window_open(false);
                    window::end_network_process_later(window.app_handle());
                }
            }
            if let WindowEvent::CloseRequested { api, .. } = event {
                let setting = window
                    .try_state::<Arc<App>>()
                    .is_some_and(|core| core.get_settings().close_to_tray);
                let icon = window.app_handle().tray_by_id(tray::TRAY_ID).is_some();
                let keep = tray::close_keeps_running(setting, icon, tray::tray_is_shown);
                if setting && !keep {
                    tracing::info!(
                        "closing the window quits: no tray shows Switchboard's icon on this desktop"
                    );
                }
                // Closed to the tray, the window goes whole, web view and web process with
                // it (the app runs on with no window: `run` keeps it from exiting); opening it
                // again makes a new one on the place the person left (`window::open`).
                if keep && window.label() == window::MAIN {
                    if let Some(places) = window.try_state::<Arc<window::PlaceState>>() {
                        places.set_in_tray(true);
                        // Tauri keeps every menu set on a window in a stash of its own until
                        // it is removed: a File menu left on each window that went would stay
                        // for the app's life (the next window gets a new one).
                        #[cfg(not(target_os = "macos"))]
                        if let Err(e) = window.remove_menu() {
                            tracing::debug!("the File menu was not taken off the window: {e}");
                        }
                        let place = places.place();
                        tracing::info!(
                            view = place.view.as_deref().unwrap_or(""),
                            scroll = ?place.scroll,
                            "window closed to the tray: its web view is destroyed"
                        );
                    } else {
                        api.prevent_close();
                        if let Err(e) = window.hide() {
                            tracing::warn!("could not hide the window: {e}");
                        }
                    }
                }
            }
        })
}

/// The main window is not made at start (`"create": false` in `tauri.conf.json`): it is made
/// hidden, given the saved theme, then shown ([`window::open`], [`open_main_window`]), unless
/// the app was started with `--hidden` and has a tray to be reached from; then no window (and
/// no web process) exists until the person opens it.
fn show_unless_hidden<R: Runtime>(app: &tauri::AppHandle<R>) {
    let hidden = app.try_state::<LaunchOptions>().is_some_and(|o| o.hidden);
    let tray = app.tray_by_id(tray::TRAY_ID).is_some() && (!hidden || tray::tray_is_shown());
    let show = match (hidden, tray) {
        (true, true) => {
            tracing::info!("started hidden (--hidden): the window stays in the tray until shown");
            false
        }
        (true, false) => {
            tracing::warn!("--hidden asked for, but there is no tray: showing the window");
            true
        }
        (false, _) => true,
    };
    if show {
        window::open(app, None, true);
    } else if let Some(places) = app.try_state::<Arc<window::PlaceState>>() {
        // No window at all until the person opens one from the tray.
        places.set_in_tray(true);
        #[cfg(target_os = "linux")]
        realtime::set_window_open(false);
    }
}

/// The folders the launch was given ([`LaunchOptions::paths`]), else the OS's app folders.
fn resolve_paths<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<AppPaths> {
    if let Some(paths) = app
        .try_state::<LaunchOptions>()
        .and_then(|o| o.paths.clone())
    {
        return Ok(paths);
    }
    let p = app.path();
    Ok(AppPaths {
        config_dir: p.app_config_dir()?,
        data_dir: p.app_data_dir()?,
        log_dir: p.app_log_dir()?,
    })
}

/// The mirror the app starts with: the bundled tool catalogue's; in debug builds,
/// `SWITCHBOARD_SAMPLE_CONFIRMATIONS=1` fills it with corpus-like sample proposals.
fn start_mirror() -> ConfirmationMirror {
    #[allow(unused_mut)]
    let mut mirror = ConfirmationMirror::with_bundled_catalogue();
    #[cfg(debug_assertions)]
    if std::env::var("SWITCHBOARD_SAMPLE_CONFIRMATIONS").as_deref() == Ok("1") {
        switchboard::app::sample::fill_confirmations(
            &mut mirror,
            switchboard::clock::Clock::now_ms_i64(&switchboard::clock::SystemClock),
        );
    }
    mirror
}

/// Debug builds only: sample data from the environment (`SWITCHBOARD_SAMPLE_DIALS=N`,
/// `SWITCHBOARD_SAMPLE_DIALS_RATE=R`, `SWITCHBOARD_DEMO_BRIDGE=FILE`).
#[cfg(debug_assertions)]
fn start_samples(core: &App) {
    let env_u64 = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (n, rate) = (
        env_u64("SWITCHBOARD_SAMPLE_DIALS"),
        env_u64("SWITCHBOARD_SAMPLE_DIALS_RATE"),
    );
    if let (Ok(d), true) = (core.dials(), n > 0 || rate > 0) {
        let log = d.log.clone();
        let clock = Arc::clone(&core.config.clock);
        tauri::async_runtime::spawn(switchboard::app::sample::ingest_samples(
            log, clock, n, rate,
        ));
    }
    if let Some(file) = std::env::var_os("SWITCHBOARD_DEMO_BRIDGE") {
        if let Err(e) = core.bridge.record_demo(std::path::Path::new(&file)) {
            tracing::warn!("SWITCHBOARD_DEMO_BRIDGE not used: {e}");
        }
    }
}

/// Loads settings, starts logging, builds and manages the core [`App`] and, with `with_tray`
/// (the real desktop), creates the tray icon and the window's File menu and starts the phone
/// link. GTK's tray needs a real
/// display and the link a key store, so mock-runtime tests pass `false`.
///
/// The setup hook calls it when the app starts; tests under the mock runtime call it right
/// after `build()`. Calling it twice is harmless: the second call finds the app managed.
///
/// # Errors
/// When the OS gives no folders for the app's files.
pub fn init<R: Runtime>(app: &tauri::AppHandle<R>, with_tray: bool) -> tauri::Result<()> {
    if app.try_state::<Arc<App>>().is_some() {
        return Ok(());
    }
    let paths = resolve_paths(app)?;
    let log = logging::init(&paths.log_dir);
    // A start on the same session bus never gets here (the single-instance plugin hands it to
    // the running app and ends it); one from another session would open the same dial history,
    // trust file and settings as the running app and write them behind its back.
    if with_tray {
        if let Some(words) = running_elsewhere(&paths) {
            tracing::error!("{words}");
            return Err(std::io::Error::other(words).into());
        }
    }
    let options = app
        .try_state::<LaunchOptions>()
        .map(|o| o.inner().clone())
        .unwrap_or_default();
    let mut config = AppConfig::new(paths, options.demo);
    config.log_dir = log.as_ref().map(|l| l.dir.clone());
    // Start on login starts this very program (the demo never touches the real app's entry).
    if !options.demo && with_tray {
        match std::env::current_exe() {
            Ok(exe) => config.autostart = switchboard::app::autostart::Autostart::for_platform(exe),
            Err(e) => tracing::warn!("start on login unavailable (no program path): {e}"),
        }
    }
    tracing::info!(
        config = %config.paths.config_dir.display(),
        data = %config.paths.data_dir.display(),
        "Switchboard starting"
    );
    if let Some(g) = app.try_state::<LaunchOptions>().and_then(|o| o.graphics) {
        tracing::info!("{}", g.words());
    }
    if let Some(s) = app.try_state::<LaunchOptions>().and_then(|o| o.scripts) {
        tracing::info!("{}", s.words());
    }
    if let Some(a) = app
        .try_state::<LaunchOptions>()
        .and_then(|o| o.allocator.clone())
    {
        tracing::info!("{}", a.words());
    }
    let notifier = Arc::new(notify::Notifier::new());
    let host = Arc::new(host::TauriHost::new(app.clone(), Arc::clone(&notifier)));
    let rt = tauri::async_runtime::handle().inner().clone();
    let core = App::new(config, host, rt, start_mirror());
    #[cfg(debug_assertions)]
    start_samples(&core);
    app.manage(LogGuard(log));
    app.manage(Arc::new(window::PlaceState::default()));
    app.manage(notifier);
    app.manage(Arc::clone(&core));
    if let Some(file) = &options.open {
        open_file(&core, file);
    }
    if with_tray {
        if let Err(e) = tray::create(app) {
            tracing::warn!("no tray icon: {e}");
        }
        // Elsewhere the File menu is the window's, set each time one is made (`window::ensure`).
        if cfg!(target_os = "macos") {
            if let Err(e) = menu::create(app) {
                tracing::warn!("no File menu: {e}");
            }
        }
        core.refresh_tray();
        core.start_link();
        // `switchboard pair`, `phones`, `unpair` ask this app over it; a second app, or a
        // system without it, goes on without (the CLI then says the app is not running).
        match switchboard::control::start_control(&core) {
            Ok(path) => tracing::info!(path = %path.display(), "control socket ready"),
            Err(e) => tracing::warn!("no control socket: {e}"),
        }
        watch_signals(app.clone());
    }
    Ok(())
}

/// Why this start must not go on, when a Switchboard for the same home already answers at
/// its control channel (a Unix socket or Windows named pipe; `switchboard::control`): in
/// words naming its process and the folder they would share. `None` when nothing answers
/// (not running, or a system without a control channel), so a stale socket never blocks a
/// start: the running app is asked over it, not merely looked for.
fn running_elsewhere(paths: &switchboard::app::AppPaths) -> Option<String> {
    let mut client = switchboard::control::client::ControlClient::connect(paths).ok()?;
    let who = match client
        .call::<switchboard::control::StatusAnswer>(&switchboard::control::Request::Status)
    {
        Ok(s) => format!(
            "Switchboard {} is already running for this home (process {}{})",
            s.version,
            s.pid,
            if s.demo { ", demo phone" } else { "" }
        ),
        // It answered the connection but not the question (busy, or another version): it is
        // running all the same.
        Err(e) => {
            format!("Switchboard is already running for this home (it did not say which: {e})")
        }
    };
    Some(format!(
        "{who}, started from another desktop session, so this start cannot hand over to it; \
         a second app would write the same files in {}. Use the running one (its window or \
         tray icon, or `switchboard status`), or quit it first.",
        paths.data_dir.display()
    ))
}

/// Opens the support bundle `file` read only in `core` (`--open`, also from a second start);
/// a bundle that cannot be opened is logged (`main` has said why before the first start).
fn open_file(core: &App, file: &std::path::Path) {
    match switchboard::support::open::open_bundle(file) {
        Ok(b) => {
            core.show_bundle(b);
        }
        Err(e) => tracing::warn!("{e}"),
    }
}

/// SIGTERM, SIGINT and SIGHUP (the session ending) ask the app to exit, which runs the
/// shutdown ([`run`]). On Windows: the session ending (`WM_ENDSESSION`, [`windows`]) and the
/// console's Ctrl-C, Ctrl-Break, close, logoff and shutdown events do.
fn watch_signals<R: Runtime>(app: tauri::AppHandle<R>) {
    tauri::async_runtime::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
                signal(SignalKind::hangup()),
            ) else {
                tracing::warn!("could not watch for SIGTERM/SIGINT/SIGHUP");
                return;
            };
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM: quitting"),
                _ = int.recv() => tracing::info!("SIGINT: quitting"),
                _ = hup.recv() => tracing::info!("SIGHUP: quitting"),
            }
        }
        #[cfg(windows)]
        {
            // Logging off or shutting down: the hidden window's WM_ENDSESSION runs the
            // shutdown before Windows ends the process (a GUI app gets no console events).
            let handle = app.clone();
            windows::watch_session_end(move || shutdown(&handle));
            // Started from a console (a debug build, `--hidden` from a terminal): its events.
            use tokio::signal::windows::{
                ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown,
            };
            let (Ok(mut c), Ok(mut brk), Ok(mut close), Ok(mut logoff), Ok(mut down)) = (
                ctrl_c(),
                ctrl_break(),
                ctrl_close(),
                ctrl_logoff(),
                ctrl_shutdown(),
            ) else {
                tracing::warn!("could not watch for the console's Ctrl-C, close, logoff, shutdown");
                return;
            };
            tokio::select! {
                _ = c.recv() => tracing::info!("Ctrl-C: quitting"),
                _ = brk.recv() => tracing::info!("Ctrl-Break: quitting"),
                _ = close.recv() => tracing::info!("the console closes: quitting"),
                _ = logoff.recv() => tracing::info!("the session ends (logoff): quitting"),
                _ = down.recv() => tracing::info!("Windows shuts down: quitting"),
            }
            // The process may be ended as soon as the handler returns: shut down now.
            shutdown(&app);
        }
        #[cfg(not(any(unix, windows)))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            tracing::info!("Ctrl-C: quitting");
        }
        app.exit(0);
    });
}

/// Runs the app's one shutdown ([`App::shutdown`]) and waits for it (at most about 2 s).
/// Every way out calls it; the second call does nothing.
pub fn shutdown<R: Runtime>(app: &tauri::AppHandle<R>) {
    if let Some(core) = app.try_state::<Arc<App>>() {
        match core.shutdown_blocking() {
            Some(report) if !report.already => {
                tracing::info!(
                    took_ms = report.took_ms,
                    in_time = report.in_time,
                    "shutdown finished"
                );
            }
            Some(_) => {}
            None => tracing::warn!("shutdown did not finish in time"),
        }
    }
}

/// Shows, unminimises and focuses the main window, made again where the person left it when
/// it was closed to the tray (tray "Show", a second instance's start): [`window::open`].
pub fn show_main_window<R: Runtime>(app: &tauri::AppHandle<R>) {
    window::open(app, None, true);
}

/// Runs the desktop app on Wry with single-instance and remembered window size and position.
///
/// `main` parses the command line and checks the display first ([`cli`]); `options` come from
/// [`cli::Cli::launch_options`].
pub fn run(options: LaunchOptions) -> ExitCode {
    let builder = tauri::Builder::default()
        .manage(options)
        .plugin(tauri_plugin_single_instance::init(|app, args, cwd| {
            // `switchboard-desktop --open FILE` while running: this window opens it.
            if let Ok(cli) = cli::Cli::try_parse_from(&args) {
                if let (Some(file), Some(core)) = (cli.open, app.try_state::<Arc<App>>()) {
                    open_file(&core, &std::path::Path::new(&cwd).join(file));
                }
            }
            // Starting Switchboard again shows the window, unless that start asked for hidden.
            if !args.iter().any(|a| a == "--hidden" || a == "--minimized") {
                show_main_window(app);
            }
        }))
        // Size, position, maximised... but never visibility: whether the window shows at start
        // is `--hidden`'s choice (`show_unless_hidden`).
        .plugin(
            tauri_plugin_window_state::Builder::default()
                .with_state_flags(
                    tauri_plugin_window_state::StateFlags::all()
                        - tauri_plugin_window_state::StateFlags::VISIBLE,
                )
                .build(),
        );
    match setup(builder).build(tauri::generate_context!("../tauri.conf.json")) {
        Ok(app) => {
            // WebKitGTK's real-time IPC threads stall the window (realtime.rs).
            #[cfg(target_os = "linux")]
            if std::env::var_os("SWITCHBOARD_KEEP_REALTIME_THREADS").is_none() {
                realtime::start();
            }
            // The saved theme reaches the main window in the setup hook, before it shows
            // (`show_unless_hidden`); here only later changes from Settings.
            let handle = app.handle().clone();
            app.manage(ThemeApplier(Box::new(move |theme| {
                apply_theme(&handle, theme)
            })));
            app.run(|handle, event| match event {
                // The last window closed to the tray: the app runs on in the tray. An exit
                // asked for (Quit, a signal) carries a code and goes through.
                tauri::RunEvent::ExitRequested {
                    code: None, api, ..
                } if handle
                    .try_state::<Arc<window::PlaceState>>()
                    .is_some_and(|p| p.in_tray()) =>
                {
                    api.prevent_exit();
                }
                tauri::RunEvent::Exit => shutdown(handle),
                _ => {}
            });
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("switchboard-desktop: {e}");
            ExitCode::FAILURE
        }
    }
}
