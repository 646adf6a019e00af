//! What a connection does with each read from its socket: dials go to the app in batches through
//! the shortcut (holding the budget of unapplied messages), every other frame is validated
//! (ifp/1) and routed by the connection's stage (pairing, hello, live), and what is refused is
//! answered and, once live, reported so it is acknowledged in order.
//!
//! Apart from the read/write loop ([`super`]) because this is where peer input is judged; the
//! loop only waits, writes and keeps the link alive.

use std::sync::Arc;

use serde_json::Map;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Conn, Flow, Stage, DRAIN_MAX};
use crate::diagnostics::FailureKind;
use crate::event::{unapplied_cost, unapplied_dial_cost, LinkEvent, MessageCredit};
use crate::shared::Command;
use crate::wire::{self, ifp};
use switchboard_domain::phone_events::DialFrame;

impl Conn {
    /// [`Conn::on_message`], then closes when one of its writes failed or timed out (an
    /// answer the peer does not read must not hold the connection, nor one write per frame).
    pub(super) async fn on_read(
        &mut self,
        msg: Option<Result<Message, tungstenite::Error>>,
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
        reason: &mut String,
    ) -> Flow {
        let flow = self.on_message(msg, tx, reason).await;
        if self.write_failed {
            *reason = format!(
                "a write failed or took over {} s (the peer does not read)",
                self.shared.config.write_timeout.as_secs_f32()
            );
            return Flow::Close;
        }
        flow
    }

    /// Handles one read from the socket (a frame, a close, an error); `reason` is set when the
    /// connection ends.
    pub(super) async fn on_message(
        &mut self,
        msg: Option<Result<Message, tungstenite::Error>>,
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
        reason: &mut String,
    ) -> Flow {
        // Dials, the bulk of what a phone sends, are read in one pass and go to the app together
        // (`emit_dials`); anything else, including a dial the shortcut does not vouch for, is
        // handled after the dials before it.
        if let (Some(Ok(Message::Text(t))), Stage::Live { phone, .. }) = (&msg, &self.stage) {
            if let Some(frame) =
                DialFrame::parse_shared(t.as_str(), phone, &mut self.shared_strings)
            {
                let cost = unapplied_dial_cost(t.len());
                let permit = match Arc::clone(&self.unapplied).try_acquire_many_owned(cost) {
                    Ok(p) => p,
                    Err(_) => {
                        // The app holds the budget: hand it what is read, then wait.
                        self.emit_dials();
                        let Ok(p) = Arc::clone(&self.unapplied).acquire_many_owned(cost).await
                        else {
                            return Flow::Close;
                        };
                        p
                    }
                };
                match &mut self.dials_permit {
                    Some(p) => p.merge(permit),
                    None => self.dials_permit = Some(permit),
                }
                self.dials.push(frame);
                if self.dials.len() >= DRAIN_MAX {
                    self.emit_dials();
                }
                return Flow::Continue;
            }
        }
        self.emit_dials();
        match msg {
            None => {
                *reason = "the phone closed the connection".into();
                Flow::Close
            }
            Some(Ok(Message::Text(t))) => self.on_frame(t.as_bytes(), tx).await,
            Some(Ok(Message::Binary(_))) => {
                self.refuse_frame(
                    "binary WebSocket frames are not used by ifp/1; send JSON text".into(),
                )
                .await
            }
            Some(Ok(Message::Close(_))) => {
                *reason = "the phone closed the connection".into();
                Flow::Close
            }
            Some(Ok(_)) => Flow::Continue,
            Some(Err(tungstenite::Error::Capacity(e))) => {
                let words = format!("frame over the 1 MiB limit ({e}); connection closed");
                self.fail(
                    FailureKind::OversizeFrame,
                    format!("{} sent a {words}", self.peer),
                );
                self.refuse(ifp::ErrorClass::InvalidEnvelope, words, None)
                    .await;
                self.close(CloseCode::Size, "frame over 1 MiB").await;
                *reason = "oversize frame".into();
                Flow::Close
            }
            Some(Err(tungstenite::Error::Utf8)) => {
                // RFC 6455 fails the connection (1007); the phone is told why first.
                let words =
                    "text frame: not valid UTF-8 (WebSocket text is UTF-8); connection closed";
                self.fail(
                    FailureKind::InvalidFrame,
                    format!("{} sent an invalid frame: {words}", self.peer),
                );
                self.refuse(ifp::ErrorClass::InvalidEnvelope, words.into(), None)
                    .await;
                self.close(CloseCode::Invalid, "text frame not UTF-8").await;
                *reason = "a text frame that is not UTF-8".into();
                Flow::Close
            }
            Some(Err(e)) => {
                *reason = format!("connection error: {e}");
                Flow::Close
            }
        }
    }

    /// Hands the dials read so far to the app as one [`LinkEvent::Dials`].
    pub(super) fn emit_dials(&mut self) {
        if self.dials.is_empty() {
            return;
        }
        let frames = std::mem::take(&mut self.dials);
        let Some(permit) = self.dials_permit.take() else {
            return;
        };
        if let Stage::Live { device_id, .. } = &self.stage {
            self.shared.emit(LinkEvent::Dials {
                device_id: device_id.clone(),
                frames,
                credit: MessageCredit(Arc::new(permit)),
            });
        }
    }

    pub(super) async fn refuse_frame(&mut self, detail: String) -> Flow {
        self.fail(
            FailureKind::InvalidFrame,
            format!("{} sent an invalid frame: {detail}", self.peer),
        );
        self.refuse(ifp::ErrorClass::InvalidEnvelope, detail, None)
            .await;
        Flow::Continue
    }

    pub(super) async fn on_frame(
        &mut self,
        bytes: &[u8],
        tx: &mut Option<mpsc::UnboundedSender<Command>>,
    ) -> Flow {
        let env = match ifp::validate_frame(bytes) {
            Ok(env) => env,
            Err(rej) => {
                self.fail(
                    FailureKind::InvalidFrame,
                    format!("{} sent an invalid frame: {}", self.peer, rej.reason),
                );
                // A readable id: the refusal names it and, once live, is acknowledged in order.
                let id = ifp::readable_id(bytes);
                self.refuse(rej.class, rej.reason.clone(), id.clone()).await;
                if let Some(id) = id {
                    return self.refused_live(id, rej.class, rej.reason).await;
                }
                return Flow::Continue;
            }
        };
        let kind = env.r#type.clone();
        if kind == "control.ping" {
            let _ = self
                .send(ifp::OutgoingMessage::Pong, Some(env.id.clone()), Map::new())
                .await;
            return Flow::Continue;
        }
        if kind == "control.pong" {
            return Flow::Continue;
        }
        match &self.stage {
            Stage::Live { device_id, .. } => {
                let device_id = device_id.clone();
                if let Some((class, detail)) = wire::refusal_after_hello(&env, &device_id) {
                    self.refuse(class, detail.clone(), Some(env.id.clone()))
                        .await;
                    return self.refused_live(env.id, class, detail).await;
                }
                let cost = unapplied_cost(bytes.len());
                let Ok(permit) = Arc::clone(&self.unapplied).acquire_many_owned(cost).await else {
                    return Flow::Close;
                };
                self.shared.emit(LinkEvent::Message {
                    device_id,
                    envelope: Box::new(env),
                    credit: MessageCredit(Arc::new(permit)),
                });
                Flow::Continue
            }
            Stage::Granted(_) | Stage::Pending(_) if kind == "control.hello" => {
                self.refuse(
                    ifp::ErrorClass::PairingFailed,
                    "control.hello before the pairing on this connection ended (pair.done): the pairing is abandoned".into(),
                    Some(env.id),
                )
                .await;
                Flow::Close
            }
            _ => match kind.as_str() {
                "pair.request" => self.on_pair_request(env).await,
                "pair.complete" => self.on_pair_complete(env, tx).await,
                "pair.confirm" => self.on_pair_confirm(env).await,
                "control.hello" => self.on_hello(env, tx).await,
                other => {
                    self.refuse(
                        ifp::ErrorClass::UnauthorizedDevice,
                        format!("`{other}` before control.hello: say hello (or pair) first"),
                        Some(env.id),
                    )
                    .await;
                    Flow::Continue
                }
            },
        }
    }

    /// After the link refused a message with a readable `id` (answered already): on a live
    /// connection the app hears of it ([`LinkEvent::Refused`]) so it is acknowledged in order;
    /// before hello there is no phone to acknowledge to.
    pub(super) async fn refused_live(
        &mut self,
        id: String,
        class: ifp::ErrorClass,
        detail: String,
    ) -> Flow {
        let Stage::Live { device_id, .. } = &self.stage else {
            return Flow::Continue;
        };
        let device_id = device_id.clone();
        let Ok(permit) = Arc::clone(&self.unapplied).acquire_owned().await else {
            return Flow::Close;
        };
        self.shared.emit(LinkEvent::Refused {
            device_id,
            id,
            class,
            detail,
            credit: MessageCredit(Arc::new(permit)),
        });
        Flow::Continue
    }
}
