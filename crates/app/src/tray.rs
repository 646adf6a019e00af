//! The tray at a glance: how many phones are connected, how many banners are raised and how
//! many confirmations wait on a phone ([`TraySummary`]), computed from what the views show; the
//! shell puts the counts in the tooltip and icon and lists the entries in the menu.
//!
//! The tooltip carries counts only (no phone-supplied text). Menu entries carry labels, banner
//! texts and summaries from phones, cut to [`MAX_MENU_LABEL`] characters with control
//! characters replaced ([`menu_label`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use switchboard_domain::bridge::store::BridgeSnapshot;
use switchboard_domain::bridge::Banner;
use switchboard_domain::confirmations::{ConfirmationView, ConfirmationsSnapshot};

/// The longest menu entry, in characters (a cut one ends with `…`).
pub const MAX_MENU_LABEL: usize = 60;

/// How many entries of each kind the menu lists (the rest are counted in one more entry).
pub const MAX_MENU_ENTRIES: usize = 5;

/// The view a menu entry opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum TrayView {
    /// Phones.
    Phones,
    /// Bridge (banners).
    Bridge,
    /// Confirmations.
    Confirmations,
}

impl TrayView {
    /// The view's id in the window (`phones`, `bridge`, `confirmations`).
    pub fn id(self) -> &'static str {
        match self {
            TrayView::Phones => "phones",
            TrayView::Bridge => "bridge",
            TrayView::Confirmations => "confirmations",
        }
    }

    /// The view for an id; `None` for anything else.
    pub fn from_id(id: &str) -> Option<Self> {
        [Self::Phones, Self::Bridge, Self::Confirmations]
            .into_iter()
            .find(|v| v.id() == id)
    }
}

/// One menu entry: its text and the view it opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct TrayEntry {
    /// The entry's text ([`menu_label`] applied).
    pub label: String,
    /// The view a click opens.
    pub view: TrayView,
}

/// What the tray shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct TraySummary {
    /// Phones connected now.
    pub connected: u32,
    /// Banners raised now.
    pub banners: u32,
    /// Confirmations waiting on a phone (requested or approved, not ended).
    pub waiting: u32,
    /// The menu's entries: phones (connected first), banners, waiting confirmations, each
    /// kind at most [`MAX_MENU_ENTRIES`] and then one "and N more".
    pub entries: Vec<TrayEntry>,
    /// Why dials are not being stored now (the disk holding the history is full, with the
    /// folder), if so; the tooltip and the window's glance line say it.
    pub storage_problem: Option<String>,
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl TraySummary {
    /// The tooltip: `Switchboard: 1 phone connected, 2 banners raised, 1 confirmation waiting
    /// on a phone` (counts only; nothing a phone wrote). With nothing connected it starts
    /// `Switchboard: no phone connected`.
    pub fn tooltip(&self) -> String {
        let phones = match self.connected {
            0 => "no phone connected".to_string(),
            n => format!("{} connected", plural(n, "phone", "phones")),
        };
        let mut parts = vec![phones];
        if self.banners > 0 {
            parts.push(format!(
                "{} raised",
                plural(self.banners, "banner", "banners")
            ));
        }
        if self.waiting > 0 {
            parts.push(format!(
                "{} waiting on a phone",
                plural(self.waiting, "confirmation", "confirmations")
            ));
        }
        if self.storage_problem.is_some() {
            parts.push("disk full: dials not being saved".to_string());
        }
        format!("Switchboard: {}", parts.join(", "))
    }

    /// Whether the icon shows attention (a banner raised, a confirmation waiting, or dials
    /// not being stored).
    pub fn needs_attention(&self) -> bool {
        self.banners > 0 || self.waiting > 0 || self.storage_problem.is_some()
    }
}

/// `text` as one menu line: control characters (newlines included) become spaces, runs of
/// spaces one, cut to [`MAX_MENU_LABEL`] characters ending in `…`.
pub fn menu_label(text: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' {
            if space || out.is_empty() {
                continue;
            }
            space = true;
        } else {
            space = false;
        }
        out.push(c);
    }
    let out = out.trim_end().to_string();
    if out.chars().count() > MAX_MENU_LABEL {
        let cut: String = out.chars().take(MAX_MENU_LABEL - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        out
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The tray's summary of the paired phones (the Phones view's, as
/// [`crate::phones::PhonesSnapshot::tray_phones`] gives them) and the Bridge status and
/// Confirmations views' snapshots. Phones are named by their pairing label (the device id when
/// it is empty); confirmations by their summary and phone label.
pub fn summarize(
    phones: &[TrayPhone],
    bridge: &BridgeSnapshot,
    confirmations: &ConfirmationsSnapshot,
) -> TraySummary {
    summarize_parts(
        phones,
        &banner_lines(&bridge.banners),
        &waiting_lines(&confirmations.waiting),
    )
}

/// The messages of `banners`, in their order: what the tray lists of the Bridge status view.
pub fn banner_lines(banners: &[Banner]) -> Vec<String> {
    banners.iter().map(|b| b.message.clone()).collect()
}

/// The waiting confirmations as the tray lists them, soonest expiry first (as the
/// Confirmations view orders them): `(summary, or the tool's name when the summary is blank;
/// the phone's device id)`. `waiting` may be in any order.
pub fn waiting_lines(waiting: &[ConfirmationView]) -> Vec<(String, String)> {
    let mut sorted: Vec<&ConfirmationView> = waiting.iter().collect();
    sorted.sort_by_key(|c| (c.expires_at_ms, c.proposed_at_ms));
    sorted
        .into_iter()
        .map(|c| {
            let what = if c.summary.trim().is_empty() {
                c.tool.name.clone()
            } else {
                c.summary.clone()
            };
            (what, c.phone.clone())
        })
        .collect()
}

/// The same summary for the three views as a support bundle holds them (`phones.json`,
/// `banners.json`, `confirmations.json`'s `snapshot`): what the sender's tray showed when the
/// bundle was saved. A field missing or of another type counts as empty (a bundle opened has
/// been checked to hold those three objects, [`crate::bundle::open`]).
pub fn summarize_bundle(phones: &Value, banners: &Value, confirmations: &Value) -> TraySummary {
    let list = |v: &Value, key: &str| v.get(key).and_then(Value::as_array).cloned();
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let phones: Vec<TrayPhone> = list(phones, "phones")
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let record = p.get("record").cloned().unwrap_or(Value::Null);
            TrayPhone {
                device_id: text(&record, "device_id"),
                label: text(&record, "label"),
                connected: p.get("connected").and_then(Value::as_bool) == Some(true),
            }
        })
        .collect();
    let banners: Vec<String> = list(banners, "banners")
        .unwrap_or_default()
        .iter()
        .map(|b| text(b, "message"))
        .collect();
    let waiting: Vec<(String, String)> = list(confirmations, "waiting")
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let summary = text(c, "summary");
            let what = if summary.trim().is_empty() {
                c.get("tool").map(|t| text(t, "name")).unwrap_or_default()
            } else {
                summary
            };
            (what, text(c, "phone"))
        })
        .collect();
    summarize_parts(&phones, &banners, &waiting)
}

/// A paired phone as the tray lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayPhone {
    /// Its device id (`dev_...`).
    pub device_id: String,
    /// The name it was paired under (the device id is shown when it is blank).
    pub label: String,
    /// Whether it is connected now.
    pub connected: bool,
}

/// The summary of `phones`, banner messages ([`banner_lines`]) and waiting confirmations
/// ([`waiting_lines`]): the same as [`summarize`] gives for the views holding them. The live
/// app calls it with the parts alone, not the views' whole snapshots, on every notice that may
/// move a count (a flapping banner raises and clears one many times a second).
pub fn summarize_parts(
    phones: &[TrayPhone],
    banners: &[String],
    waiting: &[(String, String)],
) -> TraySummary {
    let label_of = |device: &str| {
        phones
            .iter()
            .find(|p| p.device_id == device)
            .map(|p| p.label.clone())
            .filter(|l| !l.trim().is_empty())
            .unwrap_or_else(|| device.to_string())
    };
    let mut entries = Vec::new();
    let mut listed = phones.iter().collect::<Vec<_>>();
    listed.sort_by_key(|p| !p.connected);
    let more = |entries: &mut Vec<TrayEntry>, total: usize, view: TrayView| {
        if total > MAX_MENU_ENTRIES {
            entries.push(TrayEntry {
                label: format!("and {} more", total - MAX_MENU_ENTRIES),
                view,
            });
        }
    };
    for p in listed.iter().take(MAX_MENU_ENTRIES) {
        let state = if p.connected {
            "connected"
        } else {
            "not connected"
        };
        entries.push(TrayEntry {
            label: menu_label(&format!(
                "{} ({state})",
                menu_label(&label_of(&p.device_id))
            )),
            view: TrayView::Phones,
        });
    }
    more(&mut entries, listed.len(), TrayView::Phones);
    for message in banners.iter().take(MAX_MENU_ENTRIES) {
        entries.push(TrayEntry {
            label: menu_label(&format!("Banner: {message}")),
            view: TrayView::Bridge,
        });
    }
    more(&mut entries, banners.len(), TrayView::Bridge);
    for (what, phone) in waiting.iter().take(MAX_MENU_ENTRIES) {
        entries.push(TrayEntry {
            label: menu_label(&format!("Waiting: {what} ({})", label_of(phone))),
            view: TrayView::Confirmations,
        });
    }
    more(&mut entries, waiting.len(), TrayView::Confirmations);
    TraySummary {
        connected: count(phones.iter().filter(|p| p.connected).count()),
        banners: count(banners.len()),
        waiting: count(waiting.len()),
        entries,
        storage_problem: None,
    }
}
