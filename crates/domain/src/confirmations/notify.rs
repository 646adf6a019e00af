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
//! gave themselves, anomalies and repeats never notify. Nor does a proposal that lapsed
//! ([`ChangeKind::Lapsed`]: it expired with no answer from the phone, or its phone was
//! unpaired): many can lapse in the same second, the person can do nothing about it, and the
//! view shows it.
//!
//! Escaping: the texts carry what a phone sent (its label, a proposal's
//! reason or summary, a tool name, a banner's message), and freedesktop notification servers may
//! render the body as markup (`<b>`, `<a href>`, `&amp;`). So every phone-supplied part is first
//! made one plain line ([`plain_line`]: control characters, newlines included, become one space;
//! at most [`MAX_PART_CHARS`] characters, cut with `…`) and then the whole title and body are
//! escaped for markup ([`escape_markup`]: `&`, `<`, `>`). [`Notification`] holds the escaped
//! text, ready for the notification server; a server that shows plain text shows an escaped
//! `&amp;` as such, which the freedesktop specification leaves to servers without `body-markup`
//! to avoid by stripping markup.

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
    /// The title line, escaped for notification markup (module doc, "Escaping").
    pub title: String,
    /// The body text, escaped for notification markup, phone-supplied parts one plain line each
    /// (module doc, "Escaping").
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

/// The most characters of one phone-supplied part (label, summary, ...) a notification shows.
pub const MAX_PART_CHARS: usize = 120;

fn no_final_stop(s: &str) -> &str {
    s.trim().trim_end_matches('.')
}

/// `s` as one plain line: every control character (newlines, tabs, escapes, and the Unicode
/// line and paragraph separators) becomes a space, each run of spaces one space, the ends are
/// trimmed, and a text longer than
/// [`MAX_PART_CHARS`] characters is cut there with `…`.
pub fn plain_line(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let joined = one_line.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = joined.as_str();
    if t.chars().count() <= MAX_PART_CHARS {
        return t.to_string();
    }
    let mut cut: String = t.chars().take(MAX_PART_CHARS - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// `s` escaped for freedesktop notification markup: `&` as `&amp;`, `<` as `&lt;`, `>` as
/// `&gt;` (quotes need nothing outside attributes).
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// A notification of `kind` with `title` and `body` escaped ([`escape_markup`]).
fn escaped(kind: NotificationKind, title: &str, body: &str) -> Notification {
    Notification {
        kind,
        title: escape_markup(title),
        body: escape_markup(body),
    }
}

/// The notification for `change` under `settings`, or `None` (module doc, "Rules").
pub fn notification_for(
    change: &MirrorChange,
    settings: &NotificationSettings,
) -> Option<Notification> {
    let c = change.confirmation.as_ref()?;
    let summary = plain_line(no_final_stop(&c.summary));
    let phone = plain_line(&c.phone);
    let policy_auto = c.confirmed_by == Some(ConfirmedBy::PolicyAuto);
    match change.kind {
        ChangeKind::Waiting if settings.confirmation_waiting => Some(escaped(
            NotificationKind::ConfirmationWaiting,
            WAITING_TITLE,
            &format!("{phone} asks you to confirm: {summary}. Confirm on the phone."),
        )),
        ChangeKind::Ended
            if settings.confirmation_ended && (!policy_auto || settings.policy_auto) =>
        {
            let how = plain_line(c.ended_text.as_deref().unwrap_or("ended"));
            Some(escaped(
                NotificationKind::ConfirmationEnded,
                ENDED_TITLE,
                &format!("{summary}: {how}"),
            ))
        }
        ChangeKind::Approved if policy_auto && settings.policy_auto => Some(escaped(
            NotificationKind::PolicyAuto,
            POLICY_AUTO_TITLE,
            &format!("{summary}: approved by {phone}'s own policy, without asking you."),
        )),
        _ => None,
    }
}

/// How long a banner stays quiet after its desktop notification: raised again with the same
/// text within this time (10 minutes), it does not notify again. A phone line whose calls fail
/// and succeed in turn raises and clears its banner many times a second (77 a second in e2e
/// journey 8's stream); each raise used to notify.
pub const BANNER_RENOTIFY_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Most banners [`BannerNotices`] remembers (the oldest are forgotten first).
pub const BANNER_NOTICES_REMEMBERED: usize = 256;

/// Which raised banners get a desktop notification: the first raise of a banner, a raise with
/// a different text, or the same text again more than [`BANNER_RENOTIFY_AFTER`] after its last
/// notification. Remembers at most [`BANNER_NOTICES_REMEMBERED`] banners.
#[derive(Debug, Default)]
pub struct BannerNotices {
    /// Banner id -> (text notified, when).
    last: std::collections::HashMap<String, (String, std::time::Instant)>,
}

impl BannerNotices {
    /// Whether banner `id` raised with `text` at `now` deserves a desktop notification; when it
    /// does, it is remembered as notified at `now`.
    pub fn due(&mut self, id: &str, text: &str, now: std::time::Instant) -> bool {
        if let Some((t, at)) = self.last.get(id) {
            if t == text && now.saturating_duration_since(*at) < BANNER_RENOTIFY_AFTER {
                return false;
            }
        }
        if self.last.len() >= BANNER_NOTICES_REMEMBERED && !self.last.contains_key(id) {
            self.last
                .retain(|_, (_, at)| now.saturating_duration_since(*at) < BANNER_RENOTIFY_AFTER);
            while self.last.len() >= BANNER_NOTICES_REMEMBERED {
                let oldest = self
                    .last
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => self.last.remove(&k),
                    None => break,
                };
            }
        }
        self.last.insert(id.to_string(), (text.to_string(), now));
        true
    }
}

/// The notification for a new bridge-status banner: title [`BANNER_TITLE`], body the banner's
/// text as one plain line, escaped (module doc, "Escaping"); `None` when `banners` is muted.
pub fn banner_notification(text: &str, settings: &NotificationSettings) -> Option<Notification> {
    settings
        .banners
        .then(|| escaped(NotificationKind::Banner, BANNER_TITLE, &plain_line(text)))
}
