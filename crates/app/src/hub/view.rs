//! What the hub shows the shell: its notices and the per-phone view (`docs/protocol.md`,
//! "Phone-line events" and "Action messages"). All of these cross to the UI (ts-rs). Proposals
//! are shown from the Confirmations mirror ([`switchboard_domain::confirmations`]), not from here.

use serde::Serialize;
use ts_rs::TS;

use switchboard_domain::phone_line::summary::PhoneLineSummary;
use switchboard_domain::runtime::autonomy::Autonomy;
use switchboard_wire::ifp::payload::Risk;
use switchboard_wire::ifp::ActionState;

/// A change the shell may forward to the windows (a tokio broadcast from [`super::Hub::subscribe`]).
///
/// JSON: `{"kind": "phone_connected", "device_id": ..., ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HubNotice {
    /// The Confirmations mirror changed: a proposal started waiting, moved, ended, or an anomaly
    /// was seen (drives desktop notifications and the view's refresh).
    ConfirmationChanged {
        /// The phone.
        device_id: String,
        /// What changed, with the proposal as it is now (boxed: it is large next to the other
        /// notices).
        change: Box<switchboard_domain::confirmations::MirrorChange>,
    },
    /// A paired phone said hello.
    PhoneConnected {
        /// Its device id.
        device_id: String,
        /// Its label from pairing.
        label: String,
    },
    /// A phone went away.
    PhoneDisconnected {
        /// Its device id.
        device_id: String,
        /// Why, in words.
        reason: String,
    },
    /// A new phone-line settings snapshot was applied.
    SettingsUpdated {
        /// The phone.
        device_id: String,
        /// How many phone lines its summary lists.
        #[ts(type = "number")]
        lines: u64,
    },
    /// A bridge banner was raised (or replaced by a different failure on the same path).
    BannerRaised {
        /// The banner's id (its call path key, `caller>endpoint`).
        banner_id: String,
        /// The banner text.
        message: String,
    },
    /// A bridge banner was cleared (a later ok result on its path, or no longer actionable).
    BannerCleared {
        /// The banner's id.
        banner_id: String,
    },
    /// A proposal arrived and waits for the person's decision on the phone.
    ProposalWaiting {
        /// The phone.
        device_id: String,
        /// The action id.
        action_id: String,
        /// The tool proposed (`messages.send`, `phone_action`).
        tool: String,
        /// Its risk.
        risk: Risk,
    },
    /// A proposal reached a final state (executed, failed, rejected, cancelled, expired).
    ProposalEnded {
        /// The phone.
        device_id: String,
        /// The action id.
        action_id: String,
        /// Its final state.
        state: ActionState,
    },
    /// Proposals of one phone ended without an answer from it (past their `expires_at`, or the
    /// phone was unpaired): one notice per sweep, whatever the count (`expiry.rs`); the
    /// Confirmations mirror holds each as a [`switchboard_domain::confirmations::ChangeKind::Lapsed`] end.
    ProposalsLapsed {
        /// The phone.
        device_id: String,
        /// The proposals that ended.
        action_ids: Vec<String>,
        /// Why, in words ("expired: no answer from the phone", "the phone was unpaired").
        why: String,
    },
    /// A new dial was held in the dial log.
    DialCount {
        /// The phone.
        device_id: String,
        /// Dials held from this phone since the hub started.
        #[ts(type = "number")]
        total: u64,
    },
    /// The phone's autonomy for a runtime session changed.
    AutonomyChanged {
        /// The phone.
        device_id: String,
        /// The runtime session.
        session: String,
        /// The new level.
        autonomy: Autonomy,
    },
    /// A phone event was accepted by ifp/1 but its payload did not fit its type.
    EventRefused {
        /// The phone.
        device_id: String,
        /// The message id.
        message_id: String,
        /// What was wrong, naming the field.
        detail: String,
    },
}

/// The autonomy of one runtime session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SessionAutonomy {
    /// The runtime session (`ses_...`).
    pub session: String,
    /// Its level.
    pub autonomy: Autonomy,
}

/// One phone as the hub knows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct PhoneView {
    /// The device id.
    pub device_id: String,
    /// Its label.
    pub label: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// Its last `ip:port`.
    pub address: Option<String>,
    /// Messages applied from it since the hub started (replays included).
    #[ts(type = "number")]
    pub applied: u64,
    /// Id of the last message applied (the acknowledgement point).
    pub last_applied_id: Option<String>,
    /// Dials held in the dial log from it since the hub started.
    #[ts(type = "number")]
    pub dials: u64,
    /// `ts` of the settings snapshot applied last.
    pub settings_at: Option<String>,
    /// Its phone lines, summarised from the latest settings.
    pub lines: Vec<PhoneLineSummary>,
    /// Its autonomy per runtime session.
    pub autonomy: Vec<SessionAutonomy>,
    /// Recent problems in words (refused or unreadable messages).
    pub problems: Vec<String>,
}
