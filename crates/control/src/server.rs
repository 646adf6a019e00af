//! The app's end of the control channel: on Unix a socket (bind, replacing a stale socket and
//! refusing to take a running app's; accept with the peer's uid checked), on Windows a named
//! pipe ([`super::pipe`]: only the current user's SID may open it, and each client's user is
//! checked again); on both, JSON Lines requests answered the same way ([`answer`]), and a stop.
//! See [`crate`] for the rules.

#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::Arc;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
#[cfg(unix)]
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
#[cfg(unix)]
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
#[cfg(unix)]
use tokio::task::JoinSet;
use tokio::time::timeout;

#[cfg(unix)]
use super::{peer_allowed, MAX_CONNECTIONS};
use super::{
    Answer, ControlError, PairAnswer, PairingStateAnswer, PhoneLine, PhonesAnswer, Request,
    StatusAnswer, UnpairAnswer, IDLE_TIMEOUT, MAX_LINE, WRITE_TIMEOUT,
};
use switchboard_app::App;
use switchboard_wire::error::{IpcError, IpcErrorKind};
use switchboard_wire::sync::lock;

/// The socket file's mode (`rw` for the owner only).
#[cfg(unix)]
pub const SOCKET_MODE: u32 = 0o600;

/// The serving control socket (Windows: pipe); [`ControlServer::stop`] ends it and removes the
/// socket file.
#[derive(Debug)]
pub struct ControlServer {
    path: PathBuf,
    /// (device, inode) of the socket file this server bound: only that file is removed.
    #[cfg(unix)]
    file_id: (u64, u64),
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

#[cfg(unix)]
fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> ControlError + 'a {
    move |source| ControlError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// The effective uid of this process.
#[cfg(unix)]
pub fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Binds `path`: its folder made `0700`, a stale socket (nobody answers) replaced, the socket
/// set to [`SOCKET_MODE`].
///
/// # Errors
/// [`ControlError::AlreadyRunning`] when another app answers there; [`ControlError::NotASocket`]
/// when something else is in the way; [`ControlError::Io`] otherwise.
#[cfg(unix)]
pub fn bind(path: &Path) -> Result<std::os::unix::net::UnixListener, ControlError> {
    use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
    let dir = path
        .parent()
        .ok_or_else(|| ControlError::Protocol(format!("{} has no folder", path.display())))?;
    switchboard_wire::fsutil::make_private_dir(dir).map_err(io("folder", dir))?;
    let meta = std::fs::metadata(dir).map_err(io("folder", dir))?;
    if meta.uid() != own_uid() || meta.mode() & 0o077 != 0 {
        return Err(ControlError::Io {
            what: "folder",
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "it is not this user's alone (owner or mode), so the socket would not be private",
            ),
        });
    }
    // Two tries: the second after removing a stale socket.
    for _ in 0..2 {
        match StdListener::bind(path) {
            Ok(l) => {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
                    .map_err(io("chmod", path))?;
                return Ok(l);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let meta = std::fs::symlink_metadata(path).map_err(io("stat", path))?;
                if !meta.file_type().is_socket() {
                    return Err(ControlError::NotASocket {
                        path: path.to_path_buf(),
                    });
                }
                match StdStream::connect(path) {
                    Ok(_) => {
                        return Err(ControlError::AlreadyRunning {
                            path: path.to_path_buf(),
                        })
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        tracing::info!(
                            "replacing {}, a control socket left by an app that stopped without removing it",
                            path.display()
                        );
                        match std::fs::remove_file(path) {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => return Err(io("remove stale", path)(e)),
                        }
                    }
                    Err(e) => return Err(io("connect to", path)(e)),
                }
            }
            Err(e) => return Err(io("bind", path)(e)),
        }
    }
    Err(ControlError::AlreadyRunning {
        path: path.to_path_buf(),
    })
}

impl switchboard_app::Attached for ControlServer {
    fn stop(
        &self,
        within: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(ControlServer::stop(self, within))
    }
}

impl ControlServer {
    /// Binds `path` ([`bind`]) and serves `app` on `rt` until [`ControlServer::stop`].
    ///
    /// # Errors
    /// As [`bind`].
    #[cfg(unix)]
    pub fn start(
        app: Weak<App>,
        path: PathBuf,
        rt: &tokio::runtime::Handle,
    ) -> Result<Self, ControlError> {
        Self::start_for_uid(app, path, rt, own_uid())
    }

    /// [`ControlServer::start`] serving peers of `uid` only instead of this process's own uid:
    /// for tests of the peer check (`tests/network/control.rs` serves another uid and connects as
    /// itself).
    ///
    /// # Errors
    /// As [`bind`].
    #[cfg(unix)]
    pub fn start_for_uid(
        app: Weak<App>,
        path: PathBuf,
        rt: &tokio::runtime::Handle,
        uid: u32,
    ) -> Result<Self, ControlError> {
        let std_listener = bind(&path)?;
        let meta = std::fs::symlink_metadata(&path).map_err(io("stat", &path))?;
        std_listener
            .set_nonblocking(true)
            .map_err(io("bind", &path))?;
        let listener = {
            let _enter = rt.enter();
            UnixListener::from_std(std_listener).map_err(io("bind", &path))?
        };
        let (stop, stop_rx) = watch::channel(false);
        let task = rt.spawn(accept_loop(app, listener, stop_rx, uid));
        tracing::info!(path = %path.display(), "control socket listening");
        Ok(Self {
            path,
            file_id: (meta.dev(), meta.ino()),
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// Creates the named pipe `path` (`\\.\pipe\…`, [`super::socket_path`]) as its first
    /// instance, reachable by the current user only ([`super::pipe`]), and serves `app` on `rt`
    /// until [`ControlServer::stop`].
    ///
    /// # Errors
    /// [`ControlError::AlreadyRunning`] when the name is already held (another app of this
    /// user and home, or anything else); [`ControlError::Io`] otherwise.
    #[cfg(windows)]
    pub fn start(
        app: Weak<App>,
        path: PathBuf,
        rt: &tokio::runtime::Handle,
    ) -> Result<Self, ControlError> {
        let security =
            super::pipe::PipeSecurity::current_user().map_err(|source| ControlError::Io {
                what: "make the security descriptor of",
                path: path.clone(),
                source,
            })?;
        // Someone answering at the name already serves it (the first-instance flag below says
        // so too, but not every implementation enforces it: wine does not).
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            Ok(_) => return Err(ControlError::AlreadyRunning { path }),
            Err(e) if e.raw_os_error() == Some(super::pipe::ERROR_PIPE_BUSY) => {
                return Err(ControlError::AlreadyRunning { path })
            }
            Err(_) => {}
        }
        let first = {
            let _enter = rt.enter();
            super::pipe::create_instance(&path, true, &security)?
        };
        let (stop, stop_rx) = watch::channel(false);
        let task = rt.spawn(super::pipe::accept_loop(
            app,
            path.clone(),
            security,
            first,
            stop_rx,
        ));
        tracing::info!(path = %path.display(), "control pipe listening");
        Ok(Self {
            path,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// Where it listens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, ends every connection and removes the socket file (when it is still the
    /// one this server bound). Waits at most `budget`. A second call does nothing.
    pub async fn stop(&self, budget: Duration) {
        let _ = self.stop.send(true);
        let task = lock(&self.task).take();
        if let Some(t) = task {
            if timeout(budget, t).await.is_err() {
                tracing::warn!("the control socket did not stop in time");
            }
        }
        #[cfg(unix)]
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.file_id {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!("control socket {} not removed: {e}", self.path.display());
                }
            }
        }
    }
}

#[cfg(unix)]
async fn accept_loop(
    app: Weak<App>,
    listener: UnixListener,
    mut stop: watch::Receiver<bool>,
    own: u32,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    conns.spawn(refuse(stream, "busy: too many control connections at once; try again"));
                    continue;
                };
                let app = app.clone();
                conns.spawn(async move {
                    serve(app, stream, own).await;
                    drop(slot);
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

pub(super) async fn write_answer(
    stream: &mut (impl tokio::io::AsyncWrite + Unpin),
    answer: &Answer,
) -> bool {
    let Ok(mut line) = serde_json::to_vec(answer) else {
        return false;
    };
    line.push(b'\n');
    matches!(
        timeout(WRITE_TIMEOUT, stream.write_all(&line)).await,
        Ok(Ok(()))
    )
}

pub(super) fn failed(kind: IpcErrorKind, message: impl Into<String>) -> Answer {
    Answer {
        ok: false,
        answer: None,
        error: Some(IpcError::new(kind, message)),
    }
}

pub(super) async fn refuse(mut stream: impl tokio::io::AsyncWrite + Unpin, why: &'static str) {
    let _ = write_answer(&mut stream, &failed(IpcErrorKind::Link, why)).await;
}

/// One connection: the peer's uid checked, then request after request ([`serve_requests`]).
#[cfg(unix)]
async fn serve(app: Weak<App>, mut stream: UnixStream, own: u32) {
    let peer = match stream.peer_cred() {
        Ok(c) => c.uid(),
        Err(e) => {
            tracing::warn!("control socket: the peer's credentials are unreadable: {e}");
            return;
        }
    };
    if let Err(why) = peer_allowed(peer, own) {
        tracing::warn!("control socket: {why}");
        let _ = write_answer(
            &mut stream,
            &failed(IpcErrorKind::InvalidInput, why.to_string()),
        )
        .await;
        return;
    }
    serve_requests(app, stream).await;
}

/// Request after request on one connection whose peer was checked, until it ends, idles past
/// [`IDLE_TIMEOUT`], sends too long a line or something that is not a request.
pub(super) async fn serve_requests(
    app: Weak<App>,
    stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
) {
    let (rd, mut wr) = tokio::io::split(stream);
    let mut rd = BufReader::new(rd);
    loop {
        let mut buf = Vec::new();
        let read = timeout(
            IDLE_TIMEOUT,
            (&mut rd)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf),
        )
        .await;
        match read {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return,
            Ok(Ok(_)) => {}
        }
        if buf.len() > MAX_LINE {
            let _ = write_answer(
                &mut wr,
                &failed(
                    IpcErrorKind::InvalidInput,
                    format!("request line longer than {MAX_LINE} bytes; connection closed"),
                ),
            )
            .await;
            return;
        }
        let request = match serde_json::from_slice::<Request>(&buf) {
            Ok(r) => r,
            Err(e) => {
                let _ = write_answer(
                    &mut wr,
                    &failed(
                        IpcErrorKind::InvalidInput,
                        format!("not a control request: {e}; connection closed"),
                    ),
                )
                .await;
                return;
            }
        };
        let Some(app) = app.upgrade() else {
            let _ = write_answer(
                &mut wr,
                &failed(IpcErrorKind::Link, "Switchboard is stopping"),
            )
            .await;
            return;
        };
        let answer = match answer(&app, request).await {
            Ok(v) => Answer {
                ok: true,
                answer: Some(v),
                error: None,
            },
            Err(e) => Answer {
                ok: false,
                answer: None,
                error: Some(e),
            },
        };
        drop(app);
        if !write_answer(&mut wr, &answer).await {
            return;
        }
    }
}

fn json(v: impl serde::Serialize) -> Result<serde_json::Value, IpcError> {
    serde_json::to_value(v).map_err(|e| IpcError::new(IpcErrorKind::Internal, e.to_string()))
}

/// Answers one request from the app's state (the same calls the window's commands make).
///
/// # Errors
/// The app's [`IpcError`] (`link` when the link is not running, `not_found` for an unknown
/// phone or a pairing that ended).
pub async fn answer(app: &App, request: Request) -> Result<serde_json::Value, IpcError> {
    match request {
        Request::Status => {
            let snap = app.phones.snapshot();
            json(StatusAnswer {
                version: switchboard_wire::app_info::APP_VERSION.to_string(),
                pid: std::process::id(),
                demo: app.config.demo,
                link_running: app.phones.link().is_some(),
                link_error: snap.link_error,
                key_store_problem: snap.key_store_problem,
                storage_problem: app.dials().ok().and_then(|d| d.log.disk_full()),
                storage_error: app.dials().ok().and_then(|d| d.storage_error.clone()),
                history_recovery: app
                    .dials()
                    .ok()
                    .and_then(|d| d.recovery.as_ref().map(|r| r.summary())),
            })
        }
        Request::Pair => {
            let opened_at_ms = app.config.clock.now_ms();
            let inv = app.change()?.open_pairing()?;
            app.host().emit(&switchboard_app::AppEvent::Phones);
            json(PairAnswer {
                code: inv.code,
                link: inv.link,
                typed_line: inv.typed_line,
                typed_lines: inv.typed_lines,
                expires_at_ms: inv.expires_at_ms,
                opened_at_ms,
                port: inv.port,
                cert_fingerprint: inv.cert_fingerprint,
                addresses: inv.addresses,
                left_out: inv.left_out,
            })
        }
        Request::PairingState => {
            let snap = app.phones.snapshot();
            json(PairingStateAnswer {
                window_code: snap.pairing.map(|p| p.code),
                pending: snap.pending,
                last_pairing: snap.last_pairing,
            })
        }
        Request::ConfirmPairing { id, codes_match } => {
            app.change()?.confirm_pairing(&id, codes_match)?;
            app.host().emit(&switchboard_app::AppEvent::Phones);
            Ok(serde_json::Value::Null)
        }
        Request::Phones => {
            let snap = app.phones.snapshot();
            if let Some(why) = snap.link_error.filter(|_| snap.diagnostics.is_none()) {
                return Err(IpcError::new(
                    IpcErrorKind::Link,
                    format!("The phone link is not running: {why}"),
                ));
            }
            json(PhonesAnswer {
                phones: snap
                    .phones
                    .into_iter()
                    .map(|p| PhoneLine {
                        device_id: p.record.device_id,
                        label: p.record.label,
                        connected: p.connected,
                        address: p.address.or(p.record.last_address),
                        last_seen_ms: p.record.last_seen_ms,
                        paired_at_ms: p.record.paired_at_ms,
                        key_fingerprint: p.key_fingerprint,
                    })
                    .collect(),
            })
        }
        Request::Bundle {
            path,
            include_params,
        } => {
            if !std::path::Path::new(&path).is_absolute() {
                return Err(IpcError::new(
                    IpcErrorKind::InvalidInput,
                    format!("bundle path {path}: give an absolute path"),
                ));
            }
            json(
                app.change()?
                    .save_support_bundle(
                        &path,
                        switchboard_app::bundle::BundleOptions { include_params },
                    )
                    .await?,
            )
        }
        Request::Unpair { device } => {
            let change = app.change()?;
            let link = app.phones.running()?;
            let phones = link.paired_phones();
            let by_id = phones.iter().find(|p| p.device_id == device);
            let by_label: Vec<_> = phones.iter().filter(|p| p.label == device).collect();
            let phone = match (by_id, by_label.as_slice()) {
                (Some(p), _) => p,
                (None, [p]) => p,
                (None, []) => {
                    let known: Vec<String> = phones
                        .iter()
                        .map(|p| format!("{} ({})", p.label, p.device_id))
                        .collect();
                    return Err(IpcError::new(
                        IpcErrorKind::NotFound,
                        if known.is_empty() {
                            format!("no paired phone is named {device:?}: no phone is paired")
                        } else {
                            format!(
                                "no paired phone is named {device:?}; paired: {}",
                                known.join(", ")
                            )
                        },
                    ));
                }
                (None, _) => {
                    return Err(IpcError::new(
                        IpcErrorKind::InvalidInput,
                        format!(
                            "{} phones are labelled {device:?}; name one by its device id: {}",
                            by_label.len(),
                            by_label
                                .iter()
                                .map(|p| p.device_id.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            };
            let out = UnpairAnswer {
                device_id: phone.device_id.clone(),
                label: phone.label.clone(),
            };
            change.unpair(&out.device_id)?;
            app.host().emit(&switchboard_app::AppEvent::Phones);
            json(out)
        }
    }
}

// Unix sockets, file modes and stale socket files (Windows: the pipe's own tests in
// tests/network/control_pipe.rs).
#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_socket_is_the_owners_alone_and_a_stale_one_is_replaced() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("c").join("control.sock");
        let first = bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SOCKET_MODE, "socket mode {mode:o}");
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700, "folder mode {dir_mode:o}");
        // A second app while the first listens: detected, the file left alone.
        assert!(matches!(
            bind(&path),
            Err(ControlError::AlreadyRunning { .. })
        ));
        // The first is killed (its listener closed without removing the file): replaced.
        drop(first);
        assert!(path.exists(), "the stale file is still there");
        let second = bind(&path).unwrap();
        drop(second);
        // Something that is not a socket is never removed.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"notes").unwrap();
        assert!(matches!(bind(&path), Err(ControlError::NotASocket { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), b"notes");
    }
}
