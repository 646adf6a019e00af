//! Windows only: what a release build (the `windows` subsystem: no console of its own) needs to
//! behave like the Linux app.
//!
//! - [`attach_parent_console`]: `--help`, `--version` and usage errors print in the terminal
//!   the app was started from.
//! - [`webview2_version`] and [`say`]: without the WebView2 runtime the window cannot be made;
//!   `main` says so in a message box and exits instead of letting the window fail.
//! - [`watch_session_end`]: logging off or shutting Windows down sends `WM_QUERYENDSESSION` /
//!   `WM_ENDSESSION` to every top-level window, then ends the process; a hidden window of our
//!   own runs the app's one shutdown before answering, so it is not skipped.

use std::sync::OnceLock;

use windows_sys::Win32::Foundation::{ERROR_SUCCESS, HWND, LPARAM, LRESULT, WPARAM};
use windows_sys::Win32::System::Console::{AttachConsole, ATTACH_PARENT_PROCESS};
use windows_sys::Win32::System::LibraryLoader::GetModuleHandleW;
use windows_sys::Win32::System::Registry::{
    RegGetValueW, HKEY, HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ,
};
use windows_sys::Win32::UI::WindowsAndMessaging::{
    CreateWindowExW, DefWindowProcW, DispatchMessageW, GetMessageW, MessageBoxW, RegisterClassW,
    TranslateMessage, MB_ICONERROR, MB_OK, MSG, WM_ENDSESSION, WM_QUERYENDSESSION, WNDCLASSW,
};

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// Attaches this process to the console of the process that started it (a terminal), when
/// there is one, so what the command line prints reaches it. Nothing happens when started from
/// Explorer or the Start menu (no parent console) or when a console is already attached.
pub fn attach_parent_console() {
    // SAFETY: a plain Win32 call; failure (no parent console) is the expected, harmless case.
    unsafe {
        AttachConsole(ATTACH_PARENT_PROCESS);
    }
}

/// The WebView2 runtime's client key (Microsoft's "Detect if a WebView2 Runtime is already
/// installed": the Evergreen runtime's `pv` value under these keys).
const WEBVIEW2_CLIENT: &str =
    r"Microsoft\EdgeUpdate\Clients\{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}";

fn reg_string(root: HKEY, key: &str, value: &str) -> Option<String> {
    let (k, v) = (wide(key), wide(value));
    let mut buf = vec![0u16; 256];
    let mut len = (buf.len() * 2) as u32;
    // SAFETY: NUL-terminated names; `buf` holds `len` bytes.
    let e = unsafe {
        RegGetValueW(
            root,
            k.as_ptr(),
            v.as_ptr(),
            RRF_RT_REG_SZ,
            std::ptr::null_mut(),
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if e != ERROR_SUCCESS {
        return None;
    }
    let text: Vec<u16> = buf
        .into_iter()
        .take(len as usize / 2)
        .take_while(|c| *c != 0)
        .collect();
    Some(String::from_utf16_lossy(&text))
}

/// The installed WebView2 runtime's version, or `None` when there is none: the `pv` value of
/// the runtime's client key, per machine (64-bit and 32-bit views) or per user, that is set and
/// not `0.0.0.0`. A fixed-version runtime named by `WEBVIEW2_BROWSER_EXECUTABLE_FOLDER` counts
/// as installed.
pub fn webview2_version() -> Option<String> {
    if let Some(dir) = std::env::var_os("WEBVIEW2_BROWSER_EXECUTABLE_FOLDER") {
        return Some(format!("fixed version in {}", dir.to_string_lossy()));
    }
    [
        (
            HKEY_LOCAL_MACHINE,
            format!(r"SOFTWARE\WOW6432Node\{WEBVIEW2_CLIENT}"),
        ),
        (HKEY_LOCAL_MACHINE, format!(r"SOFTWARE\{WEBVIEW2_CLIENT}")),
        (HKEY_CURRENT_USER, format!(r"Software\{WEBVIEW2_CLIENT}")),
    ]
    .into_iter()
    .filter_map(|(root, key)| reg_string(root, &key, "pv"))
    .find(|v| !v.is_empty() && v != "0.0.0.0")
}

/// What `main` says when WebView2 is missing.
pub const NO_WEBVIEW2: &str = "Switchboard needs the Microsoft Edge WebView2 Runtime to show \
its window, and it is not installed. Install it from \
https://developer.microsoft.com/microsoft-edge/webview2/ (the \"Evergreen Bootstrapper\"), or \
reinstall Switchboard with its installer, which installs it; then start Switchboard again.";

/// Says `message` where a person sees it: on the terminal when one is attached, and in a
/// message box (a release build started from the Start menu has no terminal).
pub fn say(message: &str) {
    eprintln!("switchboard-desktop: {message}");
    let (text, title) = (wide(message), wide("Switchboard"));
    // SAFETY: NUL-terminated strings; no owner window.
    unsafe {
        MessageBoxW(
            std::ptr::null_mut(),
            text.as_ptr(),
            title.as_ptr(),
            MB_OK | MB_ICONERROR,
        );
    }
}

/// What the session-end window runs (set once by [`watch_session_end`]).
static ON_SESSION_END: OnceLock<Box<dyn Fn() + Send + Sync>> = OnceLock::new();

unsafe extern "system" fn session_window(
    hwnd: HWND,
    msg: u32,
    wparam: WPARAM,
    lparam: LPARAM,
) -> LRESULT {
    match msg {
        // Ending the session is fine by Switchboard.
        WM_QUERYENDSESSION => 1,
        // The session ends (`wparam` true): the process is ended once this returns, so the
        // shutdown runs now, within its own budget.
        WM_ENDSESSION => {
            if wparam != 0 {
                tracing::info!("the Windows session ends: quitting");
                if let Some(f) = ON_SESSION_END.get() {
                    f();
                }
            }
            0
        }
        _ => DefWindowProcW(hwnd, msg, wparam, lparam),
    }
}

/// Runs `on_end` (the app's shutdown, which waits for itself) when Windows ends the session:
/// a hidden top-level window on its own thread answers `WM_QUERYENDSESSION` and, on
/// `WM_ENDSESSION`, calls `on_end` before returning. Logs and gives up when the window cannot
/// be made; a second call does nothing.
pub fn watch_session_end(on_end: impl Fn() + Send + Sync + 'static) {
    if ON_SESSION_END.set(Box::new(on_end)).is_err() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("session-end".into())
        .spawn(|| {
            let class = wide("SwitchboardSessionEnd");
            // SAFETY: a window class and a hidden top-level window of this thread, whose
            // message loop runs until the process ends; every pointer outlives its call.
            unsafe {
                let instance = GetModuleHandleW(std::ptr::null());
                let wc = WNDCLASSW {
                    lpfnWndProc: Some(session_window),
                    hInstance: instance,
                    lpszClassName: class.as_ptr(),
                    ..std::mem::zeroed()
                };
                if RegisterClassW(&wc) == 0 {
                    tracing::warn!(
                        "session end not watched: {}",
                        std::io::Error::last_os_error()
                    );
                    return;
                }
                let hwnd = CreateWindowExW(
                    0,
                    class.as_ptr(),
                    class.as_ptr(),
                    0,
                    0,
                    0,
                    0,
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    instance,
                    std::ptr::null(),
                );
                if hwnd.is_null() {
                    tracing::warn!(
                        "session end not watched: {}",
                        std::io::Error::last_os_error()
                    );
                    return;
                }
                let mut msg: MSG = std::mem::zeroed();
                while GetMessageW(&mut msg, std::ptr::null_mut(), 0, 0) > 0 {
                    TranslateMessage(&msg);
                    DispatchMessageW(&msg);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("session end not watched: {e}");
    }
}
