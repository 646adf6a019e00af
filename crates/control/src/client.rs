//! The CLI's end of the control channel: a blocking connection sending [`Request`]s and reading
//! their answers, each within [`ANSWER_TIMEOUT`]; a Unix socket, or on Windows the named pipe
//! (whose server must run as this user, [`super::pipe`]). See [`crate`].

#[cfg(unix)]
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::path::Path;
#[cfg(unix)]
use std::path::PathBuf;

use serde::de::DeserializeOwned;

#[cfg(unix)]
use super::ANSWER_TIMEOUT;
use super::{socket_path, Answer, ControlError, Request, MAX_ANSWER_LINE};
#[cfg(unix)]
use switchboard_app::AppPaths;

/// The answer line `buf` to `request` (what was read: `Ok(n)` bytes, or the read's error;
/// `written`: the write's result), read as JSON.
fn read_answer(
    request: &Request,
    path: &Path,
    written: std::io::Result<()>,
    read: std::io::Result<usize>,
    buf: &[u8],
) -> Result<serde_json::Value, ControlError> {
    let io = |what, source| ControlError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    // A refused peer is answered at once and closed: its error line may be waiting even when
    // the write fails.
    let n = match (written, read) {
        (_, Ok(n)) if n > 0 => n,
        (Err(e), _) => return Err(io("write to", e)),
        (Ok(()), Err(e)) => return Err(io("read from", e)),
        (Ok(()), Ok(n)) => n,
    };
    if n == 0 {
        return Err(ControlError::Protocol(format!(
            "the app closed the connection without answering {:?}",
            request.name()
        )));
    }
    if buf.len() > MAX_ANSWER_LINE {
        return Err(ControlError::Protocol(format!(
            "answer longer than {MAX_ANSWER_LINE} bytes"
        )));
    }
    let answer: Answer = serde_json::from_slice(buf)
        .map_err(|e| ControlError::Protocol(format!("not an answer: {e}")))?;
    match (answer.ok, answer.answer, answer.error) {
        (true, v, _) => Ok(v.unwrap_or(serde_json::Value::Null)),
        (false, _, Some(e)) => Err(ControlError::App(e)),
        (false, _, None) => Err(ControlError::Protocol(
            "the app refused without saying why".to_string(),
        )),
    }
}

fn request_line(request: &Request) -> Result<Vec<u8>, ControlError> {
    let mut line = serde_json::to_vec(request)
        .map_err(|e| ControlError::Protocol(format!("request not written: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// A connection to the running app.
#[cfg(unix)]
#[derive(Debug)]
pub struct ControlClient {
    path: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

#[cfg(unix)]
impl ControlClient {
    /// Connects to the socket of the app with `paths` ([`socket_path`]).
    ///
    /// # Errors
    /// [`ControlError::NotRunning`] when nothing answers there (no file, or a stale one);
    /// [`ControlError::PathTooLong`]; [`ControlError::Io`] otherwise (e.g. permission denied).
    pub fn connect(paths: &AppPaths) -> Result<Self, ControlError> {
        Self::connect_to(&socket_path(paths)?)
    }

    /// Connects to the socket at `path`.
    ///
    /// # Errors
    /// As [`ControlClient::connect`].
    pub fn connect_to(path: &Path) -> Result<Self, ControlError> {
        let io = |what, source| ControlError::Io {
            what,
            path: path.to_path_buf(),
            source,
        };
        let stream = match UnixStream::connect(path) {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Err(ControlError::NotRunning {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(io("connect to", e)),
        };
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(|e| io("connect to", e))?;
        stream
            .set_write_timeout(Some(ANSWER_TIMEOUT))
            .map_err(|e| io("connect to", e))?;
        let writer = stream.try_clone().map_err(|e| io("connect to", e))?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Sends `request` and returns its answer as JSON.
    ///
    /// # Errors
    /// [`ControlError::App`] when the app answered with an error; [`ControlError::Io`] or
    /// [`ControlError::Protocol`] when the exchange itself failed (timeout, a line too long or
    /// not an answer, the app went away).
    pub fn request(&mut self, request: &Request) -> Result<serde_json::Value, ControlError> {
        let line = request_line(request)?;
        let written = self.writer.write_all(&line);
        let mut buf = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_ANSWER_LINE as u64 + 1)
            .read_until(b'\n', &mut buf);
        read_answer(request, &self.path, written, read, &buf)
    }
}

#[cfg(windows)]
pub use self::windows::ControlClient;

#[cfg(windows)]
mod windows {
    use std::os::windows::io::AsRawHandle as _;
    use std::path::{Path, PathBuf};

    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
    use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient};

    use super::{read_answer, request_line, socket_path};
    use crate::pipe::{peer_sid_allowed, process_user_sid, server_pid};
    use crate::{ControlError, Request, ANSWER_TIMEOUT, MAX_ANSWER_LINE};
    use switchboard_app::AppPaths;

    /// `ERROR_FILE_NOT_FOUND`: no pipe of that name (the app is not running).
    const ERROR_FILE_NOT_FOUND: i32 = 2;
    /// `ERROR_PIPE_BUSY`: every instance is serving someone; wait and try again.
    const ERROR_PIPE_BUSY: i32 = 231;

    /// A connection to the running app over its named pipe.
    #[derive(Debug)]
    pub struct ControlClient {
        path: PathBuf,
        rt: tokio::runtime::Runtime,
        pipe: BufReader<NamedPipeClient>,
    }

    impl ControlClient {
        /// Connects to the pipe of the app with `paths` ([`socket_path`]).
        ///
        /// # Errors
        /// [`ControlError::NotRunning`] when no such pipe exists; [`ControlError::Io`] when it
        /// cannot be opened (or stays busy past [`ANSWER_TIMEOUT`]); [`ControlError::Protocol`]
        /// when its server runs as another user.
        pub fn connect(paths: &AppPaths) -> Result<Self, ControlError> {
            Self::connect_to(&socket_path(paths)?)
        }

        /// Connects to the pipe at `path` (`\\.\pipe\…`).
        ///
        /// # Errors
        /// As [`ControlClient::connect`].
        pub fn connect_to(path: &Path) -> Result<Self, ControlError> {
            let io = |what, source| ControlError::Io {
                what,
                path: path.to_path_buf(),
                source,
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| io("connect to", e))?;
            let pipe = rt.block_on(async {
                let deadline = tokio::time::Instant::now() + ANSWER_TIMEOUT;
                loop {
                    match ClientOptions::new().open(path.as_os_str()) {
                        Ok(p) => return Ok(p),
                        Err(e) if e.raw_os_error() == Some(ERROR_FILE_NOT_FOUND) => {
                            return Err(ControlError::NotRunning {
                                path: path.to_path_buf(),
                            })
                        }
                        Err(e)
                            if e.raw_os_error() == Some(ERROR_PIPE_BUSY)
                                && tokio::time::Instant::now() < deadline =>
                        {
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                        Err(e) => return Err(io("connect to", e)),
                    }
                }
            })?;
            // The server must be this user's: a pipe another user created first under this
            // name is never sent a request.
            let own = process_user_sid(None).map_err(|e| io("connect to", e))?;
            let theirs = server_pid(pipe.as_raw_handle())
                .and_then(|pid| process_user_sid(Some(pid)))
                .map_err(|e| io("check the server of", e))?;
            peer_sid_allowed(&theirs, &own).map_err(|e| ControlError::Protocol(e.to_string()))?;
            Ok(Self {
                path: path.to_path_buf(),
                rt,
                pipe: BufReader::new(pipe),
            })
        }

        /// Sends `request` and returns its answer as JSON.
        ///
        /// # Errors
        /// As the Unix client's: [`ControlError::App`] when the app answered with an error;
        /// [`ControlError::Io`] or [`ControlError::Protocol`] when the exchange failed.
        pub fn request(&mut self, request: &Request) -> Result<serde_json::Value, ControlError> {
            let line = request_line(request)?;
            let pipe = &mut self.pipe;
            let (written, read, buf) = self.rt.block_on(async {
                let timed_out = || std::io::Error::from(std::io::ErrorKind::TimedOut);
                let written = tokio::time::timeout(ANSWER_TIMEOUT, pipe.get_mut().write_all(&line))
                    .await
                    .unwrap_or_else(|_| Err(timed_out()));
                let mut buf = Vec::new();
                let read = tokio::time::timeout(
                    ANSWER_TIMEOUT,
                    (&mut *pipe)
                        .take(MAX_ANSWER_LINE as u64 + 1)
                        .read_until(b'\n', &mut buf),
                )
                .await
                .unwrap_or_else(|_| Err(timed_out()));
                (written, read, buf)
            });
            read_answer(request, &self.path, written, read, &buf)
        }
    }
}

#[cfg(any(unix, windows))]
impl ControlClient {
    /// [`ControlClient::request`], its answer read as `T`.
    ///
    /// # Errors
    /// As [`ControlClient::request`]; [`ControlError::Protocol`] when the answer is not a `T`.
    pub fn call<T: DeserializeOwned>(&mut self, request: &Request) -> Result<T, ControlError> {
        let v = self.request(request)?;
        serde_json::from_value(v).map_err(|e| {
            ControlError::Protocol(format!(
                "answer to {:?} not understood: {e}",
                request.name()
            ))
        })
    }
}
