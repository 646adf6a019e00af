//! The person's settings as the running app holds them: loaded once at start (defaults, and
//! the reason, when the file does not read), saved atomically on change.

use std::sync::Mutex;

use switchboard_domain::settings::{Settings, SettingsError};
use switchboard_wire::error::IpcError;
use switchboard_wire::sync::lock;

use super::paths::AppPaths;

/// The settings in memory and where they are saved.
#[derive(Debug)]
pub struct SettingsState {
    file: std::path::PathBuf,
    settings: Mutex<Settings>,
    /// Set when `settings.json` could not be read at start (the app then runs on defaults and
    /// does not overwrite the file until the person saves).
    pub load_error: Option<String>,
}

impl SettingsState {
    /// Loads the settings file of `paths` (defaults when missing or unreadable, remembering why).
    pub fn load(paths: &AppPaths) -> Self {
        let file = paths.settings_file();
        let (settings, load_error) = match Settings::load(&file) {
            Ok(s) => (s, None),
            Err(e) => {
                tracing::warn!("settings not loaded, using defaults: {e}");
                (Settings::default(), Some(e.to_string()))
            }
        };
        Self {
            file,
            settings: Mutex::new(settings),
            load_error,
        }
    }

    /// A copy of the current settings.
    pub fn get(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Validates, saves (atomically) and applies `settings`; returns what was saved.
    ///
    /// # Errors
    /// `invalid_input` for an out-of-range value, `io` when the file cannot be written (the
    /// settings in memory then stay as they were).
    pub fn save(&self, settings: Settings) -> Result<Settings, IpcError> {
        settings.save(&self.file).map_err(|e| match e {
            SettingsError::Invalid { .. } => IpcError::invalid_input(e.to_string()),
            other => IpcError::io(other.to_string()),
        })?;
        *lock(&self.settings) = settings.clone();
        Ok(settings)
    }
}

/// The environment variable with which WebKitGTK draws without accelerated compositing.
pub const WEBKIT_NO_COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// The environment variable that turns off WebKitGTK's DMA-BUF renderer (the GPU buffers its
/// web process hands the window when compositing). Set, WebKitGTK does not open an EGL display
/// in the app's own process to learn which buffers the GPU can share.
pub const WEBKIT_NO_DMABUF: &str = "WEBKIT_DISABLE_DMABUF_RENDERER";

/// The environment variable that names the DRM render node WebKitGTK hands its web process.
/// Set, WebKitGTK does not open an EGL display in the app's own process to ask for one.
pub const WEBKIT_RENDER_NODE: &str = "WEBKIT_WEB_RENDER_DEVICE_FILE";

/// The environment variable with which WebKitGTK starts no memory-pressure monitor: a thread
/// of the app's own process that, from the first web view on and for the rest of the app's
/// life (in the tray too, with no web view left), reads the system's memory every 1-5 s to
/// ask web processes to shed caches or to end them when memory runs out. Switchboard's one web
/// process is ended whenever the window closes to the tray, so the monitor mostly woke the app
/// for nothing: 14-18 wake-ups and 80-120 ms of CPU a minute on this project's test machine,
/// about half of what the app in the tray used. Set to `1` before the window is made unless
/// whoever started the app set it ([`WindowScripts::variables`]); the kernel's own reclaim
/// and out-of-memory handling still apply.
pub const WEBKIT_NO_MEMORY_MONITOR: &str = "WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR";

/// Where Linux lists the GPUs' device nodes (`renderD128`, `renderD129`, ...).
pub const DRM_DEVICE_DIR: &str = "/dev/dri";

/// How the window is to draw (Linux, WebKitGTK), decided once before the window exists from
/// [`Settings::window_gpu`] and the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowGraphics {
    /// `WEBKIT_DISABLE_COMPOSITING_MODE` was set by whoever started the app: left as it is.
    AsTheEnvironmentSays,
    /// The setting asks for the GPU: WebKitGTK's default (accelerated compositing).
    Gpu,
    /// The default: set `WEBKIT_DISABLE_COMPOSITING_MODE=1` before the window is made, and
    /// keep the GPU's libraries out of the app's process ([`WindowGraphics::variables`]).
    NoCompositing,
}

impl WindowGraphics {
    /// Decides from the setting and whether the variable is already in the environment.
    pub fn decide(window_gpu: bool, variable_set: bool) -> Self {
        match (variable_set, window_gpu) {
            (true, _) => Self::AsTheEnvironmentSays,
            (false, true) => Self::Gpu,
            (false, false) => Self::NoCompositing,
        }
    }

    /// Decides for the app whose folders are `paths` (its `settings.json`; an unreadable or
    /// missing file counts as the default, off) in this process's environment.
    pub fn for_app(paths: Option<&AppPaths>) -> Self {
        Self::decide(
            window_gpu_setting(paths),
            std::env::var_os(WEBKIT_NO_COMPOSITING).is_some(),
        )
    }

    /// The variables (name, value) to set in this process's environment before the window is
    /// made. `env` reads a variable as whoever started the app set it (theirs is left as it
    /// is); `render_nodes` are the file names in [`DRM_DEVICE_DIR`].
    ///
    /// Without compositing the window is drawn by the CPU, yet when WebKitGTK starts the first
    /// web process it opens an EGL display in the app's own process twice over: to find the
    /// render node to hand the web process, and to learn which GPU buffers it could share
    /// with the window. That loads the GPU's user-space driver (Mesa's, with LLVM) into the
    /// app for the rest of its life: without a GPU (virtual machines, Xvfb) about 50 MB
    /// resident while a window shows, and LLVM's relocated data (8.3 MB on Debian 12) stays
    /// after it, in the tray, since nothing can unload it. [`WEBKIT_NO_DMABUF`] answers the
    /// second question (no GPU buffers: nothing composites), [`WEBKIT_RENDER_NODE`] the first:
    /// the lowest-numbered `renderD*` node, the one Mesa and WebKitGTK take when nothing
    /// says otherwise; with none, the name the first would have (the web process matches it
    /// against the GPUs it finds, and with none finds nothing, as WebKitGTK's own probe
    /// would have). Both are also set when the environment turned compositing off itself
    /// (WebKitGTK reads any value but `0` as off); with the GPU setting on, or compositing on
    /// by the environment, nothing is set.
    pub fn variables(
        self,
        env: impl Fn(&str) -> Option<String>,
        render_nodes: impl IntoIterator<Item = String>,
    ) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        match self {
            Self::Gpu => return out,
            Self::AsTheEnvironmentSays => {
                if env(WEBKIT_NO_COMPOSITING).is_some_and(|v| v == "0") {
                    return out;
                }
            }
            Self::NoCompositing => out.push((WEBKIT_NO_COMPOSITING, "1".to_string())),
        }
        if env(WEBKIT_NO_DMABUF).is_none() {
            out.push((WEBKIT_NO_DMABUF, "1".to_string()));
        }
        if env(WEBKIT_RENDER_NODE).is_none() {
            out.push((WEBKIT_RENDER_NODE, first_render_node(render_nodes)));
        }
        out
    }

    /// In words, for the log at start.
    pub fn words(self) -> &'static str {
        match self {
            Self::AsTheEnvironmentSays => {
                "window graphics: WEBKIT_DISABLE_COMPOSITING_MODE comes from the environment"
            }
            Self::Gpu => "window graphics: the GPU (accelerated compositing, Settings)",
            Self::NoCompositing => {
                "window graphics: without accelerated compositing, the GPU's libraries kept out of the app (the default; Settings can turn the GPU on)"
            }
        }
    }
}

/// The path of the lowest-numbered render node among `names` (file names in
/// [`DRM_DEVICE_DIR`]: `renderD128`, `card0`, ...), `/dev/dri/renderD128` when there is none.
pub fn first_render_node(names: impl IntoIterator<Item = String>) -> String {
    let lowest = names
        .into_iter()
        .filter_map(|n| n.strip_prefix("renderD")?.parse::<u32>().ok())
        .min()
        .unwrap_or(128);
    format!("{DRM_DEVICE_DIR}/renderD{lowest}")
}

/// The JavaScriptCore option that turns its JIT compilers on or off. JavaScriptCore reads its
/// options from `JSC_<name>` environment variables, and WebKitGTK's web process inherits the
/// app's environment, so setting it before the window exists applies to the window's scripts.
pub const JSC_USE_JIT: &str = "JSC_useJIT";

/// The JavaScriptCore option that sets how many bytes a web page's script heap may allocate
/// between two collections at least (its default is 32 MiB; read like [`JSC_USE_JIT`]).
pub const JSC_LARGE_HEAP_SIZE: &str = "JSC_largeHeapSize";

/// The window's collection step: [`JSC_LARGE_HEAP_SIZE`] as the app sets it, 8 MiB.
pub const WINDOW_HEAP_STEP: &str = "8388608";

/// How the window's scripts run (Linux, WebKitGTK), decided once before the window exists:
/// two JavaScriptCore options and WebKit's memory-pressure monitor
/// ([`WEBKIT_NO_MEMORY_MONITOR`]), each set by the app unless whoever started it already set it.
///
/// - **No JIT** ([`JSC_USE_JIT`] `false`): the scripts run in JavaScriptCore's interpreter. The
///   window's own code is small and runs a few percent of the time, but the JIT's compiled code
///   and the memory its compilers use grew the web process by about 55 MB while Live dials
///   streamed 100 000 dials (e2e journey 8, release: 276-280 MB RSS with the JIT, 218-227 MB
///   without, against 145 MB for an empty WebKitGTK page; at rest 191 and 180 MB;
///   `docs/desktop-dials.md`). Without a JIT the web process also has no writable and
///   executable memory, which leaves less to an attacker who gets a script into the page.
/// - **A small collection step** ([`JSC_LARGE_HEAP_SIZE`] [`WINDOW_HEAP_STEP`], 8 MiB instead of
///   32): while a phone streams, the page's live objects stay at about 8-10 MB, but with the
///   default step its heap grew to about 34 MB between two collections (one every ~15 s, each
///   sweeping for 7-16 ms), and the process kept those pages. With the step at 8 MiB it peaks
///   near 10 MB and a collection sweeps for under 2 ms (journey 8 with `JSC_logGC=1`: the
///   web process at 100 000 dials 215 -> 189 MB RSS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowScripts {
    /// `JSC_useJIT` was set by whoever started the app: left as it is (else set to `false`).
    pub jit_from_environment: bool,
    /// `JSC_largeHeapSize` was set by whoever started the app: left as it is (else set to
    /// [`WINDOW_HEAP_STEP`]).
    pub heap_from_environment: bool,
    /// `WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR` was set by whoever started the app: left as it
    /// is (else set to `1`).
    pub monitor_from_environment: bool,
}

impl WindowScripts {
    /// Decides from whether each variable is already in the environment.
    pub fn decide(jit_set: bool, heap_set: bool, monitor_set: bool) -> Self {
        Self {
            jit_from_environment: jit_set,
            heap_from_environment: heap_set,
            monitor_from_environment: monitor_set,
        }
    }

    /// Decides for this process's environment.
    pub fn for_app() -> Self {
        Self::decide(
            std::env::var_os(JSC_USE_JIT).is_some(),
            std::env::var_os(JSC_LARGE_HEAP_SIZE).is_some(),
            std::env::var_os(WEBKIT_NO_MEMORY_MONITOR).is_some(),
        )
    }

    /// The variables to set in this process's environment before the window is made (name,
    /// value), none when the environment already decided both.
    pub fn variables(self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        if !self.jit_from_environment {
            out.push((JSC_USE_JIT, "false"));
        }
        if !self.heap_from_environment {
            out.push((JSC_LARGE_HEAP_SIZE, WINDOW_HEAP_STEP));
        }
        if !self.monitor_from_environment {
            out.push((WEBKIT_NO_MEMORY_MONITOR, "1"));
        }
        out
    }

    /// In words, for the log at start.
    pub fn words(self) -> String {
        let jit = if self.jit_from_environment {
            "JSC_useJIT comes from the environment"
        } else {
            "JavaScriptCore's interpreter, no JIT (the default; JSC_useJIT=true in the environment turns the JIT on)"
        };
        let heap = if self.heap_from_environment {
            "JSC_largeHeapSize comes from the environment".to_string()
        } else {
            format!("a collection every {WINDOW_HEAP_STEP} bytes allocated at least (JSC_largeHeapSize; the default; the environment's value wins)")
        };
        let monitor = if self.monitor_from_environment {
            "WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR comes from the environment"
        } else {
            "no WebKit memory-pressure monitor thread (the default; the environment's value wins)"
        };
        format!("window scripts: {jit}; {heap}; {monitor}")
    }
}

/// [`Settings::window_gpu`] as saved in the `settings.json` of `paths` (false when there is
/// no file, it does not read, or there are no folders).
fn window_gpu_setting(paths: Option<&AppPaths>) -> bool {
    paths
        .and_then(|p| Settings::load(&p.settings_file()).ok())
        .is_some_and(|s| s.window_gpu)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_window_draws_without_compositing_unless_the_setting_or_the_environment_says_otherwise() {
        let unset = |_: &str| None;
        let nodes = || ["card0", "renderD129", "renderD128"].map(String::from);
        let probes = vec![
            (WEBKIT_NO_DMABUF, "1".to_string()),
            (WEBKIT_RENDER_NODE, "/dev/dri/renderD128".to_string()),
        ];
        let mut all = vec![(WEBKIT_NO_COMPOSITING, "1".to_string())];
        all.extend(probes.clone());
        assert_eq!(
            WindowGraphics::decide(false, false).variables(unset, nodes()),
            all
        );
        assert_eq!(WindowGraphics::decide(true, false), WindowGraphics::Gpu);
        assert!(WindowGraphics::decide(true, false)
            .variables(unset, nodes())
            .is_empty());
        // Whoever started the app with the variable (either value) decides compositing; with
        // it off there, the GPU probes are still answered.
        assert_eq!(
            WindowGraphics::decide(false, true),
            WindowGraphics::AsTheEnvironmentSays
        );
        let off = |n: &str| (n == WEBKIT_NO_COMPOSITING).then(|| "1".to_string());
        assert_eq!(
            WindowGraphics::decide(true, true).variables(off, nodes()),
            probes
        );
        let on = |n: &str| (n == WEBKIT_NO_COMPOSITING).then(|| "0".to_string());
        assert!(WindowGraphics::decide(false, true)
            .variables(on, nodes())
            .is_empty());
    }

    #[test]
    fn without_compositing_the_gpu_probes_are_answered_unless_the_environment_already_did() {
        let g = WindowGraphics::NoCompositing;
        // A render node named by whoever started the app stays theirs; so does the DMA-BUF
        // switch.
        let set = |n: &str| (n == WEBKIT_RENDER_NODE).then(|| "/dev/dri/renderD129".to_string());
        assert_eq!(
            g.variables(set, ["renderD128".to_string()]),
            vec![
                (WEBKIT_NO_COMPOSITING, "1".to_string()),
                (WEBKIT_NO_DMABUF, "1".to_string()),
            ]
        );
        let set = |n: &str| (n == WEBKIT_NO_DMABUF).then(|| "0".to_string());
        assert_eq!(
            g.variables(set, Vec::new()),
            vec![
                (WEBKIT_NO_COMPOSITING, "1".to_string()),
                (WEBKIT_RENDER_NODE, "/dev/dri/renderD128".to_string()),
            ]
        );
    }

    #[test]
    fn the_render_node_is_the_lowest_numbered_one_of_the_folder() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            first_render_node(names(&["card1", "renderD130", "renderD129", "by-path"])),
            "/dev/dri/renderD129"
        );
        // Numbers, not text: renderD1000 comes after renderD999.
        assert_eq!(
            first_render_node(names(&["renderD1000", "renderD999"])),
            "/dev/dri/renderD999"
        );
        // Names that only look like one are not render nodes.
        assert_eq!(
            first_render_node(names(&["renderDx", "renderD", "card0"])),
            "/dev/dri/renderD128"
        );
        assert_eq!(first_render_node(Vec::new()), "/dev/dri/renderD128");
    }

    #[test]
    fn the_window_runs_its_scripts_without_a_jit_and_a_small_heap_step_unless_the_environment_says_otherwise(
    ) {
        assert_eq!(
            WindowScripts::decide(false, false, false).variables(),
            vec![
                (JSC_USE_JIT, "false"),
                (JSC_LARGE_HEAP_SIZE, WINDOW_HEAP_STEP),
                (WEBKIT_NO_MEMORY_MONITOR, "1"),
            ]
        );
        assert_eq!(WINDOW_HEAP_STEP.parse::<u64>().unwrap(), 8 << 20);
        // Whoever started the app with a variable (any value) decides that one.
        assert_eq!(
            WindowScripts::decide(true, false, true).variables(),
            vec![(JSC_LARGE_HEAP_SIZE, WINDOW_HEAP_STEP)]
        );
        assert_eq!(
            WindowScripts::decide(false, true, false).variables(),
            vec![(JSC_USE_JIT, "false"), (WEBKIT_NO_MEMORY_MONITOR, "1")]
        );
        assert_eq!(
            WindowScripts::decide(true, true, false).variables(),
            vec![(WEBKIT_NO_MEMORY_MONITOR, "1")]
        );
        assert!(WindowScripts::decide(true, true, true)
            .variables()
            .is_empty());
        assert!(WindowScripts::decide(true, true, true)
            .words()
            .contains("JSC_largeHeapSize comes from the environment"));
    }

    #[test]
    fn the_setting_is_read_from_the_apps_settings_file() {
        let dir = tempfile::tempdir().unwrap();
        let paths = AppPaths::under(dir.path());
        std::fs::create_dir_all(&paths.config_dir).unwrap();
        // No folders, no file: the default, off.
        assert!(!window_gpu_setting(None));
        let gpu = |p: &AppPaths| window_gpu_setting(Some(p));
        assert!(!gpu(&paths));
        let s = Settings {
            window_gpu: true,
            ..Settings::default()
        };
        s.save(&paths.settings_file()).unwrap();
        assert!(gpu(&paths));
        // A file that does not read counts as the default.
        std::fs::write(paths.settings_file(), b"{ not json").unwrap();
        assert!(!gpu(&paths));
    }
}
