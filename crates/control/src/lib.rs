//! # switchboard-control: the channel the CLI asks the running app over
//!
//! An adapter on top of `switchboard-app`: it serves the app ([`start_control`] attaches
//! itself, so the app never knows it) and holds the client the `switchboard` CLI uses. It must
//! not know Tauri or any window.
//!
//! The local control socket: how the `switchboard` CLI asks the running app (`switchboard pair`,
//! `switchboard phones`, `switchboard unpair DEVICE`), like `kdeconnect-cli` does for KDE
//! Connect; for scripts, support and desktops reached over SSH.
//!
//! ## Who can open it
//! A Unix domain socket that only the user running the app can open: its folder is `0700`, the
//! socket `0600`, and every connection's peer is checked with `SO_PEERCRED` (Linux) /
//! `getpeereid` (macOS, BSD) — a peer of another uid is answered with one error line and closed
//! ([`peer_allowed`]). The folder's mode already keeps other users out before the socket's own
//! mode is set, so there is no window in between.
//!
//! ## Where it is ([`socket_path`])
//! `$XDG_RUNTIME_DIR/switchboard-<16 hex>/control.sock` when `XDG_RUNTIME_DIR` is set (the hex
//! is a SHA-256 of the app's data folder, so apps with different `SWITCHBOARD_HOME`s do not
//! meet), else `<data folder>/control/control.sock`. A socket path may be at most
//! [`MAX_SOCKET_PATH`] bytes (the kernel's `sun_path`); a longer one is refused in words.
//!
//! ## Start and stale sockets
//! At start ([`server::ControlServer::start`]) a socket file left by an app that was killed is
//! replaced (connecting to it is refused); when another running app answers on it, this app
//! does not take it ([`ControlError::AlreadyRunning`]) and keeps running without the socket.
//! [`switchboard_app::App::shutdown`] stops serving and removes the file.
//!
//! ## Wire: JSON Lines
//! One request a line, one answer a line, UTF-8; a request at most [`MAX_LINE`] bytes, an
//! answer at most [`MAX_ANSWER_LINE`]. A request is
//! a [`Request`] (`{"request":"pair"}`, `{"request":"unpair","device":"dev_…"}`); the answer is
//! `{"ok":true,"answer":…}` or `{"ok":false,"error":{"kind":…,"message":…}}` (the
//! [`IpcError`] shape). A connection may send several requests; it is closed after
//! [`IDLE_TIMEOUT`] without one, or when a line is too long or not a request. Answers are
//! written within [`WRITE_TIMEOUT`].
//!
//! ## The central promise
//! No request can approve, reject or cancel an action on a phone: [`Request`] has no such
//! variant and the answers only read the views' state, open or answer a *pairing* (the person's
//! own "Codes match"), or unpair ([`REQUEST_NAMES`] is swept by `tests/network/control.rs`).
//!
//! ## Windows
//! A named pipe, `\\.\pipe\switchboard-<16 hex>` (the same hex as the socket's folder), with
//! the same requests and answers; only the current user's SID may open it, and both ends check
//! the other's user (the `pipe` module).
//!
//! ## Other systems
//! Elsewhere every call returns [`ControlError::Unsupported`] ("not supported on this system
//! yet").

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use switchboard_app::phones::PairingResult;
use switchboard_app::{App, AppPaths};
use switchboard_link::addresses::OfferedAddress;
use switchboard_link::PendingPairing;
use switchboard_wire::error::IpcError;

#[cfg(any(unix, windows))]
pub mod client;
#[cfg(windows)]
pub mod pipe;
#[cfg(any(unix, windows))]
pub mod serve;
#[cfg(any(unix, windows))]
pub mod server;

/// Serves the control channel the `switchboard` CLI asks `app` over, at [`socket_path`] of the
/// app's folders (a named pipe on Windows), until [`App::shutdown`]: the server is attached to
/// the app ([`App::attach`]), which stops it first when it shuts down. Returns where it
/// listens. Called by whoever runs the app (the desktop shell, tests).
///
/// # Errors
/// [`ControlError::AlreadyRunning`] when another running app serves it (this one goes on
/// without it), a path too long, a folder that cannot be made private;
/// [`ControlError::Protocol`] when the app is already stopping; [`ControlError::Unsupported`]
/// off Unix and Windows. The app runs on either way: the shell logs the reason.
pub fn start_control(app: &Arc<App>) -> Result<PathBuf, ControlError> {
    #[cfg(any(unix, windows))]
    {
        if app.is_stopping() {
            return Err(ControlError::Protocol("the app is stopping".into()));
        }
        let path = socket_path(&app.config.paths)?;
        let server = Arc::new(server::ControlServer::start(
            Arc::downgrade(app),
            path.clone(),
            app.runtime(),
        )?);
        if app.attach("control", server.clone()).is_err() {
            app.runtime()
                .spawn(async move { server.stop(Duration::from_millis(300)).await });
            return Err(ControlError::Protocol("the app is stopping".into()));
        }
        Ok(path)
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = app;
        Err(ControlError::Unsupported)
    }
}

/// The socket file's name inside its folder.
pub const SOCKET_NAME: &str = "control.sock";

/// The longest socket path the kernel takes, in bytes (`sun_path` is 108 bytes on Linux, 104 on
/// macOS and the BSDs, one of them the terminating NUL).
pub const MAX_SOCKET_PATH: usize = if cfg!(target_os = "linux") { 107 } else { 103 };

/// The longest request line, in bytes (64 KiB).
pub const MAX_LINE: usize = 64 * 1024;

/// The longest answer line the CLI reads, in bytes (16 MiB: room for a support bundle).
pub const MAX_ANSWER_LINE: usize = 16 * 1024 * 1024;

/// How long a connection may stay without sending its next request (30 s).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long writing one answer may take (5 s).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the CLI waits for one answer (10 s).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections served at once; past it a newcomer gets one error line.
pub const MAX_CONNECTIONS: usize = 8;

/// What went wrong talking over the control socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// No app answers at the socket: it is not running (for this user and home).
    #[error("Switchboard is not running for this user (nothing answers at {}); start the app, then try again.", path.display())]
    NotRunning {
        /// Where the socket would be.
        path: PathBuf,
    },
    /// Another running app already serves this socket (this one runs without it).
    #[error("another Switchboard is already running for this user and home (it answers at {}); this one does not serve the control socket", path.display())]
    AlreadyRunning {
        /// The socket it serves.
        path: PathBuf,
    },
    /// The socket path is longer than the kernel allows.
    #[error("the control socket's path {} is {len} bytes long, past the {max} this system allows; set XDG_RUNTIME_DIR or use a shorter SWITCHBOARD_HOME", path.display())]
    PathTooLong {
        /// The path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// [`MAX_SOCKET_PATH`].
        max: usize,
    },
    /// Something at the socket's path is not a socket (it is left alone).
    #[error("{} is not a socket; Switchboard leaves it alone: remove it by hand if it is not needed", path.display())]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// A file or socket operation failed.
    #[error("control socket {what} {}: {source}", path.display())]
    Io {
        /// What was being done (`bind`, `connect`, `read from`...).
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The other end sent something that is not an answer (or too long a line).
    #[error("control socket: {0}")]
    Protocol(String),
    /// The app answered with an error.
    #[error("{}", .0.message)]
    App(IpcError),
    /// This system has no control channel yet.
    #[error("the control channel (switchboard pair, phones, unpair) is not supported on this system yet: only Unix sockets and Windows named pipes are")]
    Unsupported,
}

/// A request to the running app, one JSON object a line, tagged by `request`.
///
/// To add one (e.g. the support bundle): a variant here, its name in [`REQUEST_NAMES`], its
/// answer type below, and its arm in `serve::answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Request {
    /// Who answers: [`StatusAnswer`].
    Status,
    /// Opens (or renews) the pairing window: [`PairAnswer`].
    Pair,
    /// The pairing window, the pending pairing and how the last pairing ended:
    /// [`PairingStateAnswer`].
    PairingState,
    /// The person's answer after comparing the verification codes of pending pairing `id`
    /// (the same "Codes match" / "They differ" as the Phones view): `null`.
    ConfirmPairing {
        /// The pending pairing's id ([`PendingPairing::id`]).
        id: String,
        /// The phone shows the same code.
        codes_match: bool,
    },
    /// The paired phones: [`PhonesAnswer`].
    Phones,
    /// Unpairs a phone named by its device id or its (unique) label: [`UnpairAnswer`].
    Unpair {
        /// Device id (`dev_…`) or label.
        device: String,
    },
    /// Saves a support bundle of the running app's state to `path` (absolute; the app writes
    /// it, atomically): [`switchboard_app::bundle::SavedBundle`].
    Bundle {
        /// Where to save it (an absolute path: the app's working folder is not the CLI's).
        path: String,
        /// Put confirmation parameter values in (default: redacted).
        #[serde(default)]
        include_params: bool,
    },
}

/// Every request's wire name (swept for words that answer for the person).
pub const REQUEST_NAMES: &[&str] = &[
    "status",
    "pair",
    "pairing_state",
    "confirm_pairing",
    "phones",
    "unpair",
    "bundle",
];

impl Request {
    /// The wire name (`pair`, `unpair`...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Pair => "pair",
            Self::PairingState => "pairing_state",
            Self::ConfirmPairing { .. } => "confirm_pairing",
            Self::Phones => "phones",
            Self::Unpair { .. } => "unpair",
            Self::Bundle { .. } => "bundle",
        }
    }
}

/// The answer line: `{"ok":true,"answer":…}` or `{"ok":false,"error":{kind,message}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// Whether the request was done.
    pub ok: bool,
    /// The answer, when `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<serde_json::Value>,
    /// Why not, when not `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<IpcError>,
}

/// Answer to [`Request::Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusAnswer {
    /// The app's version.
    pub version: String,
    /// Its process id.
    pub pid: u32,
    /// Running with the built-in demo phone.
    pub demo: bool,
    /// The link runs (it may still be starting, or have failed: `link_error`).
    pub link_running: bool,
    /// Why the link is not running, in words.
    pub link_error: Option<String>,
    /// Why pairing keys cannot be kept (the OS key store is missing, locked or gone), in words
    /// with what to do; the same words as the banner in Phones. `None` when the store answers.
    #[serde(default)]
    pub key_store_problem: Option<String>,
    /// Why dials are not being stored now (the disk holding the history is full, and where),
    /// if so: the same words as the tray's tooltip and the window's glance line.
    #[serde(default)]
    pub storage_problem: Option<String>,
    /// Why the dial history is kept in memory only since the start (its SQLite file could not
    /// be opened, with the file and the reason), if so.
    #[serde(default)]
    pub storage_error: Option<String>,
    /// The dial history was found damaged at this start and replaced: one line saying what
    /// was wrong, how many dials were recovered and where the damaged file is
    /// ([`switchboard_dials::repair::HistoryRecovery::summary`]), if so.
    #[serde(default)]
    pub history_recovery: Option<String>,
}

/// Answer to [`Request::Pair`]: the pairing window just opened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairAnswer {
    /// The code, `123-456`.
    pub code: String,
    /// The `switchboard://pair?…` link (what the QR code carries).
    pub link: String,
    /// The one line to type on a phone that cannot scan (`address:port code`).
    #[serde(default)]
    pub typed_line: String,
    /// One typed line per offered address (the first is `typed_line`), the left-out ones too.
    #[serde(default)]
    pub typed_lines: Vec<String>,
    /// When the code stops working, ms since the Unix epoch.
    pub expires_at_ms: u64,
    /// When the window opened, ms since the Unix epoch (a pairing that ended before is not
    /// this one's).
    pub opened_at_ms: u64,
    /// The port the link listens on.
    pub port: u16,
    /// The certificate fingerprint the phone pins (64 hex).
    pub cert_fingerprint: String,
    /// The addresses the link carries, in the order a phone tries them.
    pub addresses: Vec<OfferedAddress>,
    /// Addresses left out to keep the QR code small.
    pub left_out: Vec<OfferedAddress>,
}

/// Answer to [`Request::PairingState`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairingStateAnswer {
    /// The open window's code, if a window is open and not held by a pending pairing.
    pub window_code: Option<String>,
    /// The pairing waiting for both confirmations.
    pub pending: Option<PendingPairing>,
    /// How the last pairing ended.
    pub last_pairing: Option<PairingResult>,
}

/// One paired phone in [`PhonesAnswer`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhoneLine {
    /// The device id.
    pub device_id: String,
    /// The label it paired under.
    pub label: String,
    /// Connected now.
    pub connected: bool,
    /// `ip:port` of the live connection, or the one it last connected from.
    pub address: Option<String>,
    /// When it last said a valid hello, ms since the Unix epoch.
    pub last_seen_ms: Option<u64>,
    /// When it was paired, ms since the Unix epoch.
    pub paired_at_ms: u64,
    /// Short fingerprint of its pinned key.
    pub key_fingerprint: String,
}

/// Answer to [`Request::Phones`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhonesAnswer {
    /// The paired phones, in the trust file's order.
    pub phones: Vec<PhoneLine>,
}

/// Answer to [`Request::Unpair`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnpairAnswer {
    /// The unpaired phone's device id.
    pub device_id: String,
    /// Its label.
    pub label: String,
}

/// Whether a peer of `peer_uid` may use the socket of an app running as `own_uid`: only the
/// same user.
///
/// # Errors
/// [`PeerRefused`] naming both uids, sent to the peer before the connection is closed.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> Result<(), PeerRefused> {
    if peer_uid == own_uid {
        Ok(())
    } else {
        Err(PeerRefused {
            own: format!("uid {own_uid}"),
            peer: format!("uid {peer_uid}"),
        })
    }
}

/// A peer of another user than the app's, refused ([`peer_allowed`]; on Windows the users'
/// SIDs, `pipe::peer_sid_allowed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: this control channel serves {own} only, not {peer}")]
pub struct PeerRefused {
    /// The app's user: `uid N`, or `user SID` on Windows.
    pub own: String,
    /// The peer's user, as `own`.
    pub peer: String,
}

/// The data folder as both ends name it: canonical when it exists (so `SWITCHBOARD_HOME=./h`
/// and an absolute path meet), as given otherwise.
fn home_key(paths: &AppPaths) -> PathBuf {
    std::fs::canonicalize(&paths.data_dir).unwrap_or_else(|_| paths.data_dir.clone())
}

/// 16 hex of the SHA-256 of the data folder ([`home_key`]): apps with different homes do not
/// meet.
fn home_tag(paths: &AppPaths) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(home_key(paths).as_os_str().as_encoded_bytes());
    hex::encode(&digest[..8])
}

/// Where the control socket of the app with `paths` is (module docs): under `runtime_dir`
/// (`$XDG_RUNTIME_DIR`) when given, else under the data folder. On Windows the pipe's name,
/// `\\.\pipe\switchboard-<16 hex>`, whatever `runtime_dir`.
///
/// # Errors
/// [`ControlError::PathTooLong`] past [`MAX_SOCKET_PATH`] bytes.
pub fn socket_path_in(
    paths: &AppPaths,
    runtime_dir: Option<&Path>,
) -> Result<PathBuf, ControlError> {
    if cfg!(windows) {
        // A pipe name, not a file: no folder, no length limit that a home could reach.
        return Ok(PathBuf::from(format!(
            r"\\.\pipe\switchboard-{}",
            home_tag(paths)
        )));
    }
    let path = match runtime_dir {
        Some(run) => run
            .join(format!("switchboard-{}", home_tag(paths)))
            .join(SOCKET_NAME),
        None => paths.data_dir.join("control").join(SOCKET_NAME),
    };
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(ControlError::PathTooLong {
            path,
            len,
            max: MAX_SOCKET_PATH,
        });
    }
    Ok(path)
}

/// [`socket_path_in`] with `$XDG_RUNTIME_DIR` when it is set to an absolute path.
///
/// # Errors
/// As [`socket_path_in`].
pub fn socket_path(paths: &AppPaths) -> Result<PathBuf, ControlError> {
    let run = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    socket_path_in(paths, run.as_deref())
}

#[cfg(not(any(unix, windows)))]
pub mod client {
    //! Not supported on this system yet (module docs of [`crate`]).
    use super::{ControlError, Request};
    use switchboard_app::AppPaths;

    /// A connection to the running app (never made here).
    #[derive(Debug)]
    pub struct ControlClient(());

    impl ControlClient {
        /// # Errors
        /// Always [`ControlError::Unsupported`].
        pub fn connect(_paths: &AppPaths) -> Result<Self, ControlError> {
            Err(ControlError::Unsupported)
        }

        /// # Errors
        /// Always [`ControlError::Unsupported`].
        pub fn request(&mut self, _request: &Request) -> Result<serde_json::Value, ControlError> {
            Err(ControlError::Unsupported)
        }

        /// # Errors
        /// Always [`ControlError::Unsupported`].
        pub fn call<T: serde::de::DeserializeOwned>(
            &mut self,
            _request: &Request,
        ) -> Result<T, ControlError> {
            Err(ControlError::Unsupported)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_the_same_uid_gets_in() {
        assert!(peer_allowed(1000, 1000).is_ok());
        let e = peer_allowed(1001, 1000).unwrap_err();
        assert_eq!((e.own.as_str(), e.peer.as_str()), ("uid 1000", "uid 1001"));
        let words = e.to_string();
        assert!(words.contains("not uid 1001"), "{words}");
        assert!(peer_allowed(0, 1000).is_err(), "not even root's CLI");
    }

    // Socket files in folders (Windows: a pipe name, tested below).
    #[cfg(unix)]
    #[test]
    fn the_socket_lives_in_the_runtime_folder_named_after_the_home() {
        let a = AppPaths::under(Path::new("/home/ann/.sb-a"));
        let b = AppPaths::under(Path::new("/home/ann/.sb-b"));
        let run = Path::new("/run/user/1000");
        let pa = socket_path_in(&a, Some(run)).unwrap();
        let pb = socket_path_in(&b, Some(run)).unwrap();
        assert!(
            pa.starts_with(run) && pa.ends_with(SOCKET_NAME),
            "{}",
            pa.display()
        );
        assert_ne!(pa, pb, "two homes, two sockets");
        assert_eq!(pa, socket_path_in(&a, Some(run)).unwrap(), "stable");
        let here = socket_path_in(&a, None).unwrap();
        assert_eq!(here, Path::new("/home/ann/.sb-a/data/control/control.sock"));
    }

    #[cfg(windows)]
    #[test]
    fn the_pipe_is_named_after_the_home() {
        let a = AppPaths::under(Path::new(r"C:\Users\ann\sb-a"));
        let b = AppPaths::under(Path::new(r"C:\Users\ann\sb-b"));
        let pa = socket_path_in(&a, None).unwrap();
        let name = pa.to_str().unwrap();
        assert!(name.starts_with(r"\\.\pipe\switchboard-"), "{name}");
        assert_eq!(name.len(), r"\\.\pipe\switchboard-".len() + 16, "{name}");
        assert_ne!(
            pa,
            socket_path_in(&b, None).unwrap(),
            "two homes, two pipes"
        );
        assert_eq!(pa, socket_path_in(&a, Some(Path::new(r"C:\run"))).unwrap());
    }

    // sun_path's limit (Windows: pipe names have none a home could reach).
    #[cfg(unix)]
    #[test]
    fn a_path_past_the_kernel_limit_is_refused_in_words() {
        let long = format!("/tmp/{}", "x".repeat(120));
        let e = socket_path_in(&AppPaths::under(Path::new(&long)), None).unwrap_err();
        assert!(matches!(e, ControlError::PathTooLong { .. }));
        assert!(e.to_string().contains("XDG_RUNTIME_DIR"), "{e}");
        // The runtime folder keeps it short whatever the home.
        assert!(socket_path_in(
            &AppPaths::under(Path::new(&long)),
            Some(Path::new("/run/user/1"))
        )
        .is_ok());
    }

    #[test]
    fn requests_read_as_tagged_json_and_unknown_ones_are_named() {
        let r: Request = serde_json::from_str(r#"{"request":"unpair","device":"dev_x"}"#).unwrap();
        assert_eq!(
            r,
            Request::Unpair {
                device: "dev_x".into()
            }
        );
        assert_eq!(r.name(), "unpair");
        let e = serde_json::from_str::<Request>(r#"{"request":"approve_action"}"#).unwrap_err();
        assert!(e.to_string().contains("approve_action"), "{e}");
        for name in REQUEST_NAMES {
            let v = serde_json::json!({"request": name});
            // Every listed name is a request (some need fields).
            let e = serde_json::from_value::<Request>(v)
                .err()
                .map(|e| e.to_string());
            assert!(
                e.is_none() || e.as_deref().is_some_and(|e| e.contains("missing field")),
                "{name}: {e:?}"
            );
        }
    }
}
