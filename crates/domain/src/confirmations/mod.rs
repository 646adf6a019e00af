//! # Confirmations: the desktop's mirror of every action a phone is asked to confirm
//!
//! Why this exists: the person confirms an action on the phone, never on the desktop
//! (`ifp1-notes.md`, "Action lifecycle (confirmation is local to the surface)"). Switchboard shows
//! what is waiting there, how each proposal ended and anything odd about it, so the person can
//! see at a glance what their phone is being asked to do. **Nothing here approves, rejects or
//! cancels anything**: the mirror only reads messages the phone sent and the receiver's verdict
//! on them ([`switchboard_wire::ifp::Receiver`]), and the snapshot it produces has no control in it.
//!
//! Spec: `ifp1-notes.md` "Action lifecycle" (states, `binding_mismatch`, `action_expired`,
//! messages after the end), "params_hash" (the binding the view checks); `phone-actions.md` §2
//! (the card the phone shows, the server's refusals) and §3 (done, declined, failed, no answer);
//! `openphone-runtime-protocol.md` "Autonomy" (the table of what the phone will ask; the
//! autonomy beside a proposal is its session's, inherited as a tool call without its own
//! autonomy inherits it, else `ask_before_action`: [`ProposalAutonomy`]).
//!
//! ## How it is fed
//! The link's hub validates a frame, gives it to its [`switchboard_wire::ifp::Receiver`], then calls
//! [`ConfirmationMirror::apply`] with the phone's name, the envelope, the receiver's
//! [`Outcome`](switchboard_wire::ifp::Outcome) and the receive time. Only `action.*` messages change
//! anything; other messages give no change. Each call returns the [`MirrorChange`]s it caused (a proposal now waiting,
//! an approval, an end, an anomaly): the shell turns them into desktop notifications through
//! [`notify::notification_for`] and into UI refreshes; the view reads a [`ConfirmationsSnapshot`].
//!
//! ## Anomalies (shown, never acted on)
//! - `params_hash` that is not the hash of `params`: shown; the verdict is unchanged
//!   (`ifp1-notes.md`, "params_hash": the binding that matters is approve-vs-propose).
//! - an approval whose `params_hash` differs from the proposal's (`binding_mismatch`);
//! - an approval after `expires_at` (`action_expired`, the action ends `expired`);
//! - any message after the action ended (refused by the receiver, state unchanged);
//! - a proposal whose `risk` differs from the risk the phone's tool list gives the tool;
//! - any other message the receiver refused about a mirrored action (its reason is shown);
//! - a message about an action the mirror never saw proposed ("stray", kept in its own list).
//!
//! ## Our readings where the specs are silent
//! - A `phone_action` proposal's `params` is the call's arguments (`phone-actions.md` §2); its
//!   end reads as §3 ([`crate::phone_action::outcome`]): `executed` is done, `failed` is failed,
//!   `rejected` with `user_denied` is declined, `rejected` with `expired` and the states
//!   `expired` and `cancelled` are "no answer in time" (the card went away), other reject reasons
//!   are failed. The phone's message is the string `message` of the `action.result` or
//!   `action.reject` payload when there is one, cut at
//!   [`crate::phone_action::MESSAGE_MAX_CHARS`].
//! - The summary of a proposal is the card's summary for `phone_action`, else the proposal's
//!   `reason`, else the tool's description, else the tool's name.
//!
//! ## Bounds
//! At most [`MAX_WAITING`] proposals waiting (the oldest is dropped from view beyond that and
//! counted), [`MAX_ENDED`] ended ones (oldest dropped first, counted), [`MAX_TIMELINE`] messages
//! per proposal (the first is always kept; later overflow is counted), [`MAX_ANOMALIES`]
//! anomalies per proposal and [`MAX_STRAY`] stray messages. Whatever a phone sends, memory stays
//! bounded.

//!
//! ## Layout
//! - `view`: the serialisable types the view shows ([`ConfirmationsSnapshot`] and its parts);
//! - `mirror`: [`ConfirmationMirror`], the state machine, and its bounds;
//! - `catalogue`: the bundled tool list ([`bundled_catalogue`]) and tool lookups;
//! - [`history`]: the ended proposals kept across restarts (a file in the link's data folder);
//! - `texts`: the wording (states, ends, summaries, timeline and anomaly texts);
//! - [`notify`]: which desktop notification a change deserves.

mod catalogue;
pub mod history;
mod mirror;
pub mod notify;
mod texts;
mod view;

pub use catalogue::{bundled_catalogue, BUNDLED_TOOLS_JSON, PHONE_ACTION_TOOL};
pub use mirror::{
    ConfirmationMirror, EXPIRED_WORDS, MAX_ANOMALIES, MAX_ENDED, MAX_SESSIONS, MAX_STRAY,
    MAX_TIMELINE, MAX_WAITING, UNPAIRED_WORDS,
};
pub use view::{
    Anomaly, AnomalyKind, AutonomySource, ChangeKind, ConfirmationView, ConfirmationsSnapshot,
    ConfirmedBy, HashCheck, MirrorChange, PhoneActionView, ProposalAutonomy, RejectReason,
    TimelineItem, ToolInfo,
};
