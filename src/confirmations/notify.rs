//! Which desktop notification a mirror change deserves, if any.
//!
//! Why: the person should learn that their phone is waiting for them, and how a confirmation
//! ended, without the desktop ever offering to answer for them: every text sends them to the
//! phone. The person mutes each kind in Settings ([`NotificationSettings`]); approvals the phone
//! made by its own policy (`policy_auto`, `ifp1-notes.md` "Action lifecycle") stay quiet unless
//! `policy_auto` is on.
//!
//! Texts:
//! - waiting: title `Confirm on your phone`, body `<Phone> asks you to confirm: <summary>.
//!   Confirm on the phone.`;
//! - ended: title `Confirmation ended`, body `<summary>: <how it ended>`;
//! - approved by `policy_auto`: title `Approved by the phone's policy`, body `<summary>:
//!   approved by <Phone>'s own policy, without asking you.`
//!
//! Rules: a waiting proposal notifies when `confirmation_waiting` is on; an end notifies when
//! `confirmation_ended` is on and, for an action approved by `policy_auto`, also `policy_auto`
//! is on; a `policy_auto` approval notifies only when `policy_auto` is on; an approval the person
//! gave themselves, anomalies and repeats never notify.

use serde::Serialize;
use ts_rs::TS;

use super::{ChangeKind, ConfirmedBy, MirrorChange};
use crate::settings::NotificationSettings;

/// Which kind of notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum NotificationKind {
    /// Something waits for the person on the phone.
    ConfirmationWaiting,
    /// A confirmation ended.
    ConfirmationEnded,
    /// The phone approved something by its own policy.
    PolicyAuto,
    /// A bridge-status banner appeared.
    Banner,
}

/// A desktop notification to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct Notification {
    /// Which kind (the setting that allows it).
    pub kind: NotificationKind,
    /// The title line.
    pub title: String,
    /// The body text.
    pub body: String,
}

/// Title of a waiting notification.
pub const WAITING_TITLE: &str = "Confirm on your phone";
/// Title of an ended notification.
pub const ENDED_TITLE: &str = "Confirmation ended";
/// Title of a `policy_auto` approval notification.
pub const POLICY_AUTO_TITLE: &str = "Approved by the phone's policy";
/// Title of a bridge banner notification.
pub const BANNER_TITLE: &str = "Bridge status";

fn no_final_stop(s: &str) -> &str {
    s.trim().trim_end_matches('.')
}

/// The notification for `change` under `settings`, or `None` (module doc, "Rules").
pub fn notification_for(
    change: &MirrorChange,
    settings: &NotificationSettings,
) -> Option<Notification> {
    let c = change.confirmation.as_ref()?;
    let summary = no_final_stop(&c.summary);
    let policy_auto = c.confirmed_by == Some(ConfirmedBy::PolicyAuto);
    match change.kind {
        ChangeKind::Waiting if settings.confirmation_waiting => Some(Notification {
            kind: NotificationKind::ConfirmationWaiting,
            title: WAITING_TITLE.to_string(),
            body: format!(
                "{} asks you to confirm: {summary}. Confirm on the phone.",
                c.phone
            ),
        }),
        ChangeKind::Ended
            if settings.confirmation_ended && (!policy_auto || settings.policy_auto) =>
        {
            let how = c.ended_text.as_deref().unwrap_or("ended");
            Some(Notification {
                kind: NotificationKind::ConfirmationEnded,
                title: ENDED_TITLE.to_string(),
                body: format!("{summary}: {how}"),
            })
        }
        ChangeKind::Approved if policy_auto && settings.policy_auto => Some(Notification {
            kind: NotificationKind::PolicyAuto,
            title: POLICY_AUTO_TITLE.to_string(),
            body: format!(
                "{summary}: approved by {}'s own policy, without asking you.",
                c.phone
            ),
        }),
        _ => None,
    }
}

/// The notification for a new bridge-status banner: title [`BANNER_TITLE`], body the banner's
/// text; `None` when `banners` is muted.
pub fn banner_notification(text: &str, settings: &NotificationSettings) -> Option<Notification> {
    settings.banners.then(|| Notification {
        kind: NotificationKind::Banner,
        title: BANNER_TITLE.to_string(),
        body: text.to_string(),
    })
}
