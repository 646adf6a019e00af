//! The CLI's end of the control socket (Unix): a blocking connection sending [`Request`]s and
//! reading their answers, each within [`ANSWER_TIMEOUT`]. See [`crate::control`].

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::{socket_path, Answer, ControlError, Request, ANSWER_TIMEOUT, MAX_ANSWER_LINE};
use crate::app::AppPaths;

/// A connection to the running app.
#[derive(Debug)]
pub struct ControlClient {
    path: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

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
        let mut line = serde_json::to_vec(request)
            .map_err(|e| ControlError::Protocol(format!("request not written: {e}")))?;
        line.push(b'\n');
        let path = self.path.clone();
        let io = |what, source| ControlError::Io {
            what,
            path: path.clone(),
            source,
        };
        // A refused peer is answered at once and closed: its error line may be waiting even when
        // the write fails.
        let written = self.writer.write_all(&line);
        let mut buf = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_ANSWER_LINE as u64 + 1)
            .read_until(b'\n', &mut buf);
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
        let answer: Answer = serde_json::from_slice(&buf)
            .map_err(|e| ControlError::Protocol(format!("not an answer: {e}")))?;
        match (answer.ok, answer.answer, answer.error) {
            (true, v, _) => Ok(v.unwrap_or(serde_json::Value::Null)),
            (false, _, Some(e)) => Err(ControlError::App(e)),
            (false, _, None) => Err(ControlError::Protocol(
                "the app refused without saying why".to_string(),
            )),
        }
    }

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
