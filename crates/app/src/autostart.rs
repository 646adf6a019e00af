//! Start on login: the system's own per-user way to start the desktop app at login, in the tray
//! with its window hidden (`switchboard-desktop --hidden`):
//! - Linux and the BSDs: an XDG autostart entry (the freedesktop "Desktop Application Autostart
//!   Specification"), below;
//! - macOS: a LaunchAgent, `~/Library/LaunchAgents/dev.switchboard.desktop.plist`
//!   ([`Kind::LaunchAgent`], `RunAtLoad`), which launchd reads at login;
//! - Windows: the per-user Run key, value `Switchboard` of
//!   `HKEY_CURRENT_USER\Software\Microsoft\Windows\CurrentVersion\Run` ([`Kind::RunKey`]).
//!   Task Manager's Startup tab turns an entry off without removing it (a value in
//!   `…\Explorer\StartupApproved\Run` whose first byte is odd): [`Autostart::is_enabled`] reads
//!   that too, and turning the setting on clears it.
//!
//! In each case what the system has *is* the setting; nothing else is kept.
//!
//! The entry is `$XDG_CONFIG_HOME/autostart/switchboard.desktop` (`~/.config/autostart` when
//! `XDG_CONFIG_HOME` is unset, empty or relative, as the XDG base-directory specification
//! says). Its presence *is* the setting: [`Autostart::is_enabled`] reads it, so removing it with
//! the desktop's own "Startup Applications" tool turns the setting off too. It is written
//! atomically ([`switchboard_wire::fsutil::write_atomic`]), so a crash leaves either no entry or a whole one.
//!
//! Elsewhere (no system above) [`Autostart::for_platform`] gives `None` and the Settings view
//! says the setting is not available there. With the demo phone (`--demo`) the app never touches the entry: the demo's
//! settings are separate from the real ones and must not turn the real app's start off.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// The entry's file name in the autostart folder.
pub const ENTRY_FILE_NAME: &str = "switchboard.desktop";

/// The flag the entry starts the app with: window hidden, the app in the tray.
pub const HIDDEN_FLAG: &str = "--hidden";

/// The LaunchAgent's label and file stem on macOS (the bundle identifier).
pub const LAUNCH_AGENT_LABEL: &str = super::paths::APP_IDENTIFIER;

/// The Run key Windows starts each value of at the user's login (under `HKEY_CURRENT_USER`).
pub const RUN_KEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";

/// Where Task Manager's Startup tab keeps an entry turned off (under `HKEY_CURRENT_USER`).
pub const STARTUP_APPROVED_KEY: &str =
    r"Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run";

/// The Run key value's name.
pub const RUN_VALUE: &str = "Switchboard";

/// Which system mechanism the entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// An XDG autostart desktop entry ([`Autostart::entry`] is the file).
    Xdg,
    /// A launchd LaunchAgent property list ([`Autostart::entry`] is the file).
    LaunchAgent,
    /// A value of a Run key under `HKEY_CURRENT_USER` ([`Autostart::entry`] names it, for
    /// people). Tests give their own keys.
    RunKey {
        /// The Run key (normally [`RUN_KEY`]).
        key: String,
        /// Task Manager's approval key for it (normally [`STARTUP_APPROVED_KEY`]).
        approved_key: String,
        /// The value's name (normally [`RUN_VALUE`]).
        value: String,
    },
}

/// Where the autostart entry goes and what it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autostart {
    /// The entry: the file (`<autostart folder>/switchboard.desktop`, the LaunchAgent's plist),
    /// or for the Run key its full name (`HKEY_CURRENT_USER\…\Run\Switchboard`).
    pub entry: PathBuf,
    /// The program the entry starts (the running desktop app's executable, an absolute path).
    pub exec: PathBuf,
    /// Which mechanism.
    pub kind: Kind,
}

/// Why the autostart entry could not be written or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AutostartError {
    /// Writing or removing the entry failed.
    #[error("start on login: could not {action} {path}: {source}")]
    Io {
        /// `write` or `remove`.
        action: &'static str,
        /// The entry file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The program's path cannot go in an entry's `Exec` line (not UTF-8, or a control
    /// character such as a newline in it).
    #[error(
        "start on login: the program path {path} cannot be written in a desktop entry ({why})"
    )]
    UnusablePath {
        /// The program's path.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The autostart folder the XDG base-directory specification gives for `xdg_config_home` and
/// `home` (the values of `XDG_CONFIG_HOME` and `HOME`): `$XDG_CONFIG_HOME/autostart` when that
/// is an absolute path, else `$HOME/.config/autostart`; `None` with neither.
pub fn autostart_dir(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    if let Some(dir) = xdg_config_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Some(dir.join("autostart"));
    }
    home.map(Path::new)
        .filter(|p| p.is_absolute())
        .map(|h| h.join(".config").join("autostart"))
}

impl Autostart {
    /// The entry for this platform, starting `exec`: on Linux and the BSDs, in the autostart
    /// folder of this process's `XDG_CONFIG_HOME`/`HOME` ([`autostart_dir`]); on macOS the
    /// LaunchAgent in `~/Library/LaunchAgents`; on Windows the Run key's value; `None`
    /// elsewhere or when no home folder is known.
    pub fn for_platform(exec: PathBuf) -> Option<Self> {
        if cfg!(target_os = "macos") {
            let dir = dirs::home_dir()?.join("Library").join("LaunchAgents");
            return Some(Self::launch_agent_in(&dir, exec));
        }
        if cfg!(windows) {
            return Some(Self::run_key(
                RUN_KEY,
                STARTUP_APPROVED_KEY,
                RUN_VALUE,
                exec,
            ));
        }
        if !cfg!(any(
            target_os = "linux",
            target_os = "dragonfly",
            target_os = "freebsd",
            target_os = "netbsd",
            target_os = "openbsd"
        )) {
            return None;
        }
        let dir = autostart_dir(
            std::env::var_os("XDG_CONFIG_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        )?;
        Some(Self::in_dir(&dir, exec))
    }

    /// The entry in the autostart folder `dir`, starting `exec`.
    pub fn in_dir(dir: &Path, exec: PathBuf) -> Self {
        Self {
            entry: dir.join(ENTRY_FILE_NAME),
            exec,
            kind: Kind::Xdg,
        }
    }

    /// The LaunchAgent `<dir>/dev.switchboard.desktop.plist` starting `exec` (macOS).
    pub fn launch_agent_in(dir: &Path, exec: PathBuf) -> Self {
        Self {
            entry: dir.join(format!("{LAUNCH_AGENT_LABEL}.plist")),
            exec,
            kind: Kind::LaunchAgent,
        }
    }

    /// The value `value` of the Run key `key` (under `HKEY_CURRENT_USER`, Task Manager's
    /// approvals in `approved_key`) starting `exec` (Windows).
    pub fn run_key(key: &str, approved_key: &str, value: &str, exec: PathBuf) -> Self {
        Self {
            entry: PathBuf::from(format!(r"HKEY_CURRENT_USER\{key}\{value}")),
            exec,
            kind: Kind::RunKey {
                key: key.to_string(),
                approved_key: approved_key.to_string(),
                value: value.to_string(),
            },
        }
    }

    /// Whether start on login is on, as the system has it: the entry file exists; for the Run
    /// key, the value exists and Task Manager has not turned it off.
    pub fn is_enabled(&self) -> bool {
        match &self.kind {
            Kind::Xdg | Kind::LaunchAgent => self.entry.is_file(),
            Kind::RunKey {
                key,
                approved_key,
                value,
            } => run_key::is_enabled(key, approved_key, value),
        }
    }

    /// The LaunchAgent's property list: label [`LAUNCH_AGENT_LABEL`], [`Self::exec`] with
    /// [`HIDDEN_FLAG`], run at load (login), in the GUI session only.
    ///
    /// # Errors
    /// [`AutostartError::UnusablePath`] when the path is not UTF-8 or holds a control character.
    pub fn launch_agent_text(&self) -> Result<String, AutostartError> {
        let exec = self
            .exec
            .to_str()
            .filter(|t| !t.chars().any(char::is_control))
            .ok_or_else(|| AutostartError::UnusablePath {
                path: self.exec.clone(),
                why: "not UTF-8, or a control character",
            })?;
        let xml = |t: &str| {
            t.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        Ok(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
             <plist version=\"1.0\">\n\
             <dict>\n\
             \t<key>Label</key>\n\
             \t<string>{LAUNCH_AGENT_LABEL}</string>\n\
             \t<key>ProgramArguments</key>\n\
             \t<array>\n\
             \t\t<string>{}</string>\n\
             \t\t<string>{HIDDEN_FLAG}</string>\n\
             \t</array>\n\
             \t<key>RunAtLoad</key>\n\
             \t<true/>\n\
             \t<key>LimitLoadToSessionType</key>\n\
             \t<string>Aqua</string>\n\
             \t<key>ProcessType</key>\n\
             \t<string>Interactive</string>\n\
             </dict>\n\
             </plist>\n",
            xml(exec)
        ))
    }

    /// The Run key value's text: [`Self::exec`] in double quotes, then [`HIDDEN_FLAG`].
    ///
    /// # Errors
    /// [`AutostartError::UnusablePath`] when the path is not UTF-8 or holds a `"` or a control
    /// character (it could not be quoted).
    pub fn run_value_text(&self) -> Result<String, AutostartError> {
        let exec = self
            .exec
            .to_str()
            .filter(|t| !t.chars().any(|c| c.is_control() || c == '"'))
            .ok_or_else(|| AutostartError::UnusablePath {
                path: self.exec.clone(),
                why: "not UTF-8, or a quote or control character",
            })?;
        Ok(format!("\"{exec}\" {HIDDEN_FLAG}"))
    }

    /// The entry's text: a desktop entry of type `Application` whose `Exec` starts
    /// [`Self::exec`] with [`HIDDEN_FLAG`], the path quoted as the Desktop Entry Specification
    /// ("The Exec key") asks.
    ///
    /// # Errors
    /// [`AutostartError::UnusablePath`] when the path is not UTF-8 or holds a control character.
    pub fn entry_text(&self) -> Result<String, AutostartError> {
        let exec = exec_quote(&self.exec)?;
        Ok(format!(
            "[Desktop Entry]\n\
             Type=Application\n\
             Name=Switchboard\n\
             Comment=Desktop companion for a phone's phone lines and confirmations (started in the tray)\n\
             Exec={exec} {HIDDEN_FLAG}\n\
             Icon=switchboard-desktop\n\
             Terminal=false\n\
             Categories=Development;\n\
             X-GNOME-Autostart-enabled=true\n"
        ))
    }

    /// Turns start on login on (writes the entry atomically, creating the folder) or off
    /// (removes the entry; nothing to do when it is absent).
    ///
    /// # Errors
    /// [`AutostartError`] naming the entry file.
    pub fn set(&self, on: bool) -> Result<(), AutostartError> {
        if let Kind::RunKey {
            key,
            approved_key,
            value,
        } = &self.kind
        {
            let text = if on {
                Some(self.run_value_text()?)
            } else {
                None
            };
            return run_key::set(key, approved_key, value, text.as_deref()).map_err(|source| {
                AutostartError::Io {
                    action: if on { "write" } else { "remove" },
                    path: self.entry.clone(),
                    source,
                }
            });
        }
        if on {
            let text = match self.kind {
                Kind::LaunchAgent => self.launch_agent_text()?,
                _ => self.entry_text()?,
            };
            switchboard_wire::fsutil::write_atomic(&self.entry, text.as_bytes()).map_err(|source| {
                AutostartError::Io {
                    action: "write",
                    path: self.entry.clone(),
                    source,
                }
            })
        } else {
            match std::fs::remove_file(&self.entry) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(AutostartError::Io {
                    action: "remove",
                    path: self.entry.clone(),
                    source,
                }),
            }
        }
    }
}

/// `path` as one argument of an `Exec` line: in double quotes when it holds a space or a
/// reserved character, with `"`, `` ` ``, `$` and `\` backslash-escaped inside them; `%` doubled
/// (a literal percent sign); then every `\` doubled again, because the value of a desktop-entry
/// string key unescapes `\\` first (Desktop Entry Specification, "The Exec key").
fn exec_quote(path: &Path) -> Result<String, AutostartError> {
    let unusable = |why| AutostartError::UnusablePath {
        path: path.to_path_buf(),
        why,
    };
    let text = path.to_str().ok_or_else(|| unusable("not UTF-8"))?;
    if text.chars().any(char::is_control) {
        return Err(unusable("a control character"));
    }
    const RESERVED: &[char] = &[
        ' ', '\t', '"', '\'', '\\', '>', '<', '~', '|', '&', ';', '$', '*', '?', '#', '(', ')', '`',
    ];
    let text = text.replace('%', "%%");
    let arg = if text.contains(RESERVED) {
        let mut quoted = String::from("\"");
        for c in text.chars() {
            if matches!(c, '"' | '`' | '$' | '\\') {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        quoted
    } else {
        text
    };
    Ok(arg.replace('\\', "\\\\"))
}

/// The Run key through the registry (Windows); elsewhere every call fails in words (the kind
/// is only made for tests there).
mod run_key {
    use std::io;

    /// Whether `value` exists in `key` and Task Manager has not turned it off (`approved_key`'s
    /// value of that name: absent, or a first byte that is even).
    #[cfg(windows)]
    pub(super) fn is_enabled(key: &str, approved_key: &str, value: &str) -> bool {
        if !matches!(reg::get(key, value), Ok(Some(_))) {
            return false;
        }
        match reg::get(approved_key, value) {
            Ok(Some(bytes)) => !matches!(bytes.first(), Some(b) if b % 2 == 1),
            _ => true,
        }
    }

    /// Writes (`Some(text)`, a `REG_SZ`, and clears a Task Manager "disabled") or removes
    /// (`None`) the value.
    #[cfg(windows)]
    pub(super) fn set(
        key: &str,
        approved_key: &str,
        value: &str,
        text: Option<&str>,
    ) -> io::Result<()> {
        match text {
            Some(t) => {
                reg::set_string(key, value, t)?;
                reg::delete(approved_key, value)
            }
            None => reg::delete(key, value),
        }
    }

    #[cfg(not(windows))]
    pub(super) fn is_enabled(_key: &str, _approved_key: &str, _value: &str) -> bool {
        false
    }

    #[cfg(not(windows))]
    pub(super) fn set(
        _key: &str,
        _approved_key: &str,
        _value: &str,
        _text: Option<&str>,
    ) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the Run key is Windows'",
        ))
    }

    #[cfg(windows)]
    mod reg {
        use std::io;

        use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_SUCCESS};
        use windows_sys::Win32::System::Registry::{
            RegDeleteKeyValueW, RegGetValueW, RegSetKeyValueW, HKEY_CURRENT_USER, REG_SZ,
            RRF_RT_REG_BINARY, RRF_RT_REG_SZ,
        };

        fn wide(s: &str) -> Vec<u16> {
            s.encode_utf16().chain(std::iter::once(0)).collect()
        }

        /// The bytes of `value` in `key` (a string or binary value); `None` when absent.
        pub(crate) fn get(key: &str, value: &str) -> io::Result<Option<Vec<u8>>> {
            let (k, v) = (wide(key), wide(value));
            let flags = RRF_RT_REG_SZ | RRF_RT_REG_BINARY;
            let mut len = 0u32;
            // SAFETY: NUL-terminated names; a null buffer asks for the size.
            let e = unsafe {
                RegGetValueW(
                    HKEY_CURRENT_USER,
                    k.as_ptr(),
                    v.as_ptr(),
                    flags,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut len,
                )
            };
            if e == ERROR_FILE_NOT_FOUND {
                return Ok(None);
            }
            if e != ERROR_SUCCESS {
                return Err(io::Error::from_raw_os_error(e as i32));
            }
            let mut buf = vec![0u8; len as usize];
            // SAFETY: `buf` holds `len` bytes.
            let e = unsafe {
                RegGetValueW(
                    HKEY_CURRENT_USER,
                    k.as_ptr(),
                    v.as_ptr(),
                    flags,
                    std::ptr::null_mut(),
                    buf.as_mut_ptr().cast(),
                    &mut len,
                )
            };
            match e {
                ERROR_SUCCESS => {
                    buf.truncate(len as usize);
                    Ok(Some(buf))
                }
                ERROR_FILE_NOT_FOUND => Ok(None),
                e => Err(io::Error::from_raw_os_error(e as i32)),
            }
        }

        /// Writes `text` as the `REG_SZ` `value` of `key` (created when missing).
        pub(super) fn set_string(key: &str, value: &str, text: &str) -> io::Result<()> {
            let (k, v, t) = (wide(key), wide(value), wide(text));
            // SAFETY: NUL-terminated names; `t` is the data, its byte length with the NUL.
            let e = unsafe {
                RegSetKeyValueW(
                    HKEY_CURRENT_USER,
                    k.as_ptr(),
                    v.as_ptr(),
                    REG_SZ,
                    t.as_ptr().cast(),
                    (t.len() * 2) as u32,
                )
            };
            if e == ERROR_SUCCESS {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(e as i32))
            }
        }

        /// Removes `value` of `key`; absent is fine.
        pub(super) fn delete(key: &str, value: &str) -> io::Result<()> {
            let (k, v) = (wide(key), wide(value));
            // SAFETY: NUL-terminated names.
            let e = unsafe { RegDeleteKeyValueW(HKEY_CURRENT_USER, k.as_ptr(), v.as_ptr()) };
            if e == ERROR_SUCCESS || e == ERROR_FILE_NOT_FOUND {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(e as i32))
            }
        }

        /// Writes raw `bytes` as the `REG_BINARY` `value` of `key` (tests: Task Manager's
        /// "disabled").
        pub(crate) fn set_binary(key: &str, value: &str, bytes: &[u8]) -> io::Result<()> {
            let (k, v) = (wide(key), wide(value));
            // SAFETY: NUL-terminated names; `bytes` is the data.
            let e = unsafe {
                RegSetKeyValueW(
                    HKEY_CURRENT_USER,
                    k.as_ptr(),
                    v.as_ptr(),
                    windows_sys::Win32::System::Registry::REG_BINARY,
                    bytes.as_ptr().cast(),
                    bytes.len() as u32,
                )
            };
            if e == ERROR_SUCCESS {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(e as i32))
            }
        }
    }

    #[cfg(windows)]
    pub(super) use reg::{get, set_binary};
}

/// Windows: reads the bytes of a value under `HKEY_CURRENT_USER` and writes a binary one, for
/// tests that play Task Manager's Startup tab.
#[cfg(windows)]
pub mod registry {
    /// Writes `bytes` as the binary `value` under `HKEY_CURRENT_USER\\key` (created when
    /// missing).
    ///
    /// # Errors
    /// The registry's error.
    pub fn set_binary(key: &str, value: &str, bytes: &[u8]) -> std::io::Result<()> {
        super::run_key::set_binary(key, value, bytes)
    }

    /// The bytes of `value` under `HKEY_CURRENT_USER\key`; `None` when absent.
    ///
    /// # Errors
    /// The registry's error.
    pub fn get(key: &str, value: &str) -> std::io::Result<Option<Vec<u8>>> {
        super::run_key::get(key, value)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `rel` made absolute the way this system writes it (`/x/cfg`, `C:\x\cfg`).
    fn abs(rel: &str) -> PathBuf {
        let root = if cfg!(windows) { r"C:\" } else { "/" };
        rel.split('/').fold(PathBuf::from(root), |p, c| p.join(c))
    }

    #[test]
    fn folder_follows_the_base_directory_rules() {
        let d = |x: Option<&Path>, h: Option<&Path>| {
            autostart_dir(x.map(Path::as_os_str), h.map(Path::as_os_str))
        };
        let (cfg, home) = (abs("x/cfg"), abs("home/a"));
        assert_eq!(d(Some(&cfg), Some(&home)), Some(cfg.join("autostart")));
        let config = home.join(".config").join("autostart");
        // Relative or empty XDG_CONFIG_HOME is ignored, as the specification says.
        assert_eq!(d(Some(Path::new("cfg")), Some(&home)), Some(config.clone()));
        assert_eq!(d(Some(Path::new("")), Some(&home)), Some(config));
        let d =
            |x: Option<&str>, h: Option<&str>| autostart_dir(x.map(OsStr::new), h.map(OsStr::new));
        assert_eq!(d(None, None), None);
        assert_eq!(d(None, Some("rel")), None);
    }

    #[test]
    fn the_launch_agent_runs_the_app_hidden_at_login() {
        let a = Autostart::launch_agent_in(
            Path::new("/Users/ann/Library/LaunchAgents"),
            PathBuf::from("/Applications/Switch & Board.app/Contents/MacOS/switchboard-desktop"),
        );
        assert_eq!(
            a.entry,
            Path::new("/Users/ann/Library/LaunchAgents/dev.switchboard.desktop.plist")
        );
        let text = a.launch_agent_text().unwrap();
        assert!(text.contains("<key>Label</key>\n\t<string>dev.switchboard.desktop</string>"));
        assert!(text.contains(
            "<array>\n\t\t<string>/Applications/Switch &amp; Board.app/Contents/MacOS/switchboard-desktop</string>\n\t\t<string>--hidden</string>\n\t</array>"
        ), "{text}");
        assert!(text.contains("<key>RunAtLoad</key>\n\t<true/>"), "{text}");
        let bad = Autostart::launch_agent_in(Path::new("/x"), PathBuf::from("/a\nb"));
        assert!(matches!(
            bad.launch_agent_text(),
            Err(AutostartError::UnusablePath { .. })
        ));
    }

    #[test]
    fn the_run_value_quotes_the_program_and_starts_it_hidden() {
        let a = Autostart::run_key(
            RUN_KEY,
            STARTUP_APPROVED_KEY,
            RUN_VALUE,
            PathBuf::from(r"C:\Program Files\Switchboard\switchboard-desktop.exe"),
        );
        assert_eq!(
            a.entry,
            PathBuf::from(
                r"HKEY_CURRENT_USER\Software\Microsoft\Windows\CurrentVersion\Run\Switchboard"
            )
        );
        assert_eq!(
            a.run_value_text().unwrap(),
            r#""C:\Program Files\Switchboard\switchboard-desktop.exe" --hidden"#
        );
        let bad = Autostart::run_key(RUN_KEY, STARTUP_APPROVED_KEY, RUN_VALUE, "C:\\a\"b".into());
        assert!(bad.run_value_text().is_err());
    }

    #[test]
    fn exec_line_quotes_what_the_specification_reserves() {
        let q = |p: &str| exec_quote(Path::new(p)).unwrap();
        assert_eq!(
            q("/usr/bin/switchboard-desktop"),
            "/usr/bin/switchboard-desktop"
        );
        assert_eq!(q("/opt/My Apps/sb"), "\"/opt/My Apps/sb\"");
        // `$` escaped inside quotes, then the backslash doubled for the string key.
        assert_eq!(q("/opt/a$b/sb"), "\"/opt/a\\\\$b/sb\"");
        assert_eq!(q("/opt/100%/sb"), "/opt/100%%/sb");
        assert!(matches!(
            exec_quote(Path::new("/opt/a\nExec=evil")),
            Err(AutostartError::UnusablePath { .. })
        ));
    }
}
