//! ifp/1 (Interfaces Protocol v1): the wire protocol between Switchboard and a paired phone.
//!
//! Why: every message the phone sends is checked here before anything else looks at it, and
//! every message Switchboard sends is built here. Spec: `../shared/specs/ifp1-notes.md`; the
//! conformance corpus `../shared/corpus/ifp1/fixtures/` (26 message cases, 10 sequences, 5
//! params_hash vectors) is the test oracle.
//!
//! ## Parts
//! - [`envelope`]: the typed [`Envelope`] of a validated message, [`Timestamp`], labels.
//! - [`error_class`]: the 14 [`ErrorClass`]es.
//! - [`validate`](mod@validate): [`validate()`] / [`validate_frame()`] -> `Result<Envelope,
//!   Rejection>`.
//! - [`payload`]: typed payloads and [`payload::IncomingMessage`] (receive-only).
//! - [`params_hash`](mod@params_hash): canonical JSON and `params_hash` of action params.
//! - [`receiver`]: the [`Receiver`] state machine (dedup, generation fence, ordering, action
//!   lifecycle) giving an [`receiver::Outcome`] per message.
//! - [`conformance`]: runs corpus-format sequence files against a fresh [`Receiver`].
//! - [`outgoing`]: [`outgoing::OutgoingMessage`] -> [`outgoing::OutgoingFrame`], the only way to
//!   build bytes to send.
//!
//! ## The central promise: the desktop never approves, rejects or cancels an action
//! Confirmation is local to the surface (the phone): the person confirms there. Switchboard only
//! mirrors. This is enforced by types, not by checks:
//! - incoming messages are parsed into receive-only types ([`Envelope`], and the typed action
//!   payloads) that do not implement `Serialize`;
//! - the only way to produce a frame to send is the outgoing message type, whose variants cannot
//!   express `action.approve`, `action.reject` or `action.cancel` (or any `action.*`).

pub mod conformance;
pub mod envelope;
pub mod error_class;
pub mod outgoing;
pub mod params_hash;
pub mod payload;
pub mod receiver;
pub mod validate;

pub use envelope::{Envelope, Timestamp, MAX_FRAME_BYTES};
pub use error_class::ErrorClass;
pub use outgoing::{OutgoingFrame, OutgoingHeader, OutgoingMessage};
pub use params_hash::{canonical_params, params_hash, params_hash_matches};
pub use payload::IncomingMessage;
pub use receiver::{ActionState, Outcome, Receiver, Verdict};
pub use validate::{readable_id, validate, validate_frame, Rejection};
