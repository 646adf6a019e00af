//! The app's end of the control channel: on Unix a socket (bind, replacing a stale socket and
//! refusing to take a running app's; accept with the peer's uid checked), on Windows a named
//! pipe ([`super::pipe`]: only the current user's SID may open it, and each client's user is
//! checked again); on both, JSON Lines requests answered the same way ([`crate::serve`]), and a stop.
//! See [`crate`] for the rules.

#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::Arc;
use std::sync::{Mutex, Weak};
use std::time::Duration;

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
use super::serve::{failed, refuse, serve_requests, write_answer};
use super::ControlError;
#[cfg(unix)]
use super::{peer_allowed, MAX_CONNECTIONS};
use switchboard_app::App;
#[cfg(unix)]
use switchboard_wire::error::IpcErrorKind;
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
