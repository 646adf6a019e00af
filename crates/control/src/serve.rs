//! Requests answered: one connection's JSON Lines read, each [`Request`] answered from the app
//! ([`answer`]) and written back within [`WRITE_TIMEOUT`]. The same for the Unix socket
//! ([`crate::server`]) and the Windows pipe (`crate::pipe`), which only accept connections and
//! check their peers before handing them here.

use std::sync::Weak;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::time::timeout;

use super::{
    Answer, PairAnswer, PairingStateAnswer, PhoneLine, PhonesAnswer, Request, StatusAnswer,
    UnpairAnswer, IDLE_TIMEOUT, MAX_LINE, WRITE_TIMEOUT,
};
use switchboard_app::App;
use switchboard_wire::error::{IpcError, IpcErrorKind};

/// Writes `answer` as one line within [`WRITE_TIMEOUT`]; whether it was written.
pub(crate) async fn write_answer(
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

/// A failed answer of `kind` with `message`.
pub(crate) fn failed(kind: IpcErrorKind, message: impl Into<String>) -> Answer {
    Answer {
        ok: false,
        answer: None,
        error: Some(IpcError::new(kind, message)),
    }
}

/// Answers `why` (a link error) and leaves the connection to be closed.
pub(crate) async fn refuse(mut stream: impl tokio::io::AsyncWrite + Unpin, why: &'static str) {
    let _ = write_answer(&mut stream, &failed(IpcErrorKind::Link, why)).await;
}

/// Request after request on one connection whose peer was checked, until it ends, idles past
/// [`IDLE_TIMEOUT`], sends too long a line or something that is not a request.
pub(crate) async fn serve_requests(
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
