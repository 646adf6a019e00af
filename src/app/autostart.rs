//! Start on login: an XDG autostart entry (the freedesktop "Desktop Application Autostart
//! Specification") that starts the desktop app in the tray, with its window hidden
//! (`switchboard-desktop --hidden`).
//!
//! The entry is `$XDG_CONFIG_HOME/autostart/switchboard.desktop` (`~/.config/autostart` when
//! `XDG_CONFIG_HOME` is unset, empty or relative, as the XDG base-directory specification
//! says). Its presence *is* the setting: [`Autostart::is_enabled`] reads it, so removing it with
//! the desktop's own "Startup Applications" tool turns the setting off too. It is written
//! atomically ([`crate::fsutil::write_atomic`]), so a crash leaves either no entry or a whole one.
//!
//! Only on Linux and the BSDs (where desktops read XDG autostart entries); elsewhere
//! [`Autostart::for_platform`] gives `None` and the Settings view says the setting is not
//! available there. With the demo phone (`--demo`) the app never touches the entry: the demo's
//! settings are separate from the real ones and must not turn the real app's start off.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// The entry's file name in the autostart folder.
pub const ENTRY_FILE_NAME: &str = "switchboard.desktop";

/// The flag the entry starts the app with: window hidden, the app in the tray.
pub const HIDDEN_FLAG: &str = "--hidden";

/// Where the autostart entry goes and what it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autostart {
    /// The entry file (`<autostart folder>/switchboard.desktop`).
    pub entry: PathBuf,
    /// The program the entry starts (the running desktop app's executable, an absolute path).
    pub exec: PathBuf,
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
    /// folder of this process's `XDG_CONFIG_HOME`/`HOME` ([`autostart_dir`]); `None` elsewhere
    /// or when neither variable gives an absolute folder.
    pub fn for_platform(exec: PathBuf) -> Option<Self> {
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
        }
    }

    /// Whether the entry exists (start on login is on).
    pub fn is_enabled(&self) -> bool {
        self.entry.is_file()
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
        if on {
            let text = self.entry_text()?;
            crate::fsutil::write_atomic(&self.entry, text.as_bytes()).map_err(|source| {
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn folder_follows_the_base_directory_rules() {
        let d =
            |x: Option<&str>, h: Option<&str>| autostart_dir(x.map(OsStr::new), h.map(OsStr::new));
        assert_eq!(
            d(Some("/x/cfg"), Some("/home/a")),
            Some(PathBuf::from("/x/cfg/autostart"))
        );
        // Relative or empty XDG_CONFIG_HOME is ignored, as the specification says.
        assert_eq!(
            d(Some("cfg"), Some("/home/a")),
            Some(PathBuf::from("/home/a/.config/autostart"))
        );
        assert_eq!(
            d(Some(""), Some("/home/a")),
            Some(PathBuf::from("/home/a/.config/autostart"))
        );
        assert_eq!(d(None, None), None);
        assert_eq!(d(None, Some("rel")), None);
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
