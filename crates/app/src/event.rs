//! The events the window listens to: one enum, [`AppEvent`], names every one of them.
//!
//! Each event has a stable name (`switchboard://...`, [`AppEvent::name`]) and a payload
//! ([`AppEvent::payload`]); the TypeScript map of names to payloads (`ui/src/bindings/ipc.ts`)
//! is generated from [`AppEvent::ALL`], so a view cannot listen to an event that does not exist.

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::hub::HubNotice;
use crate::tray::TrayView;

/// An event for the window.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AppEvent {
    /// `switchboard://phones` (no payload): the Phones view reloads (a phone connected, went
    /// away, paired, a pairing window closed, the link failed or started).
    Phones,
    /// `switchboard://phone-lines` (no payload): the Phone lines view reloads (a paired phone's
    /// phone-line settings arrived).
    PhoneLines,
    /// `switchboard://confirmations` (no payload): the Confirmations view reloads.
    Confirmations,
    /// `switchboard://notice` (payload: a [`HubNotice`]): what the hub applied.
    Notice(HubNotice),
    /// `switchboard://bundle` (no payload): a support bundle was opened or closed; every view
    /// reloads (what they show comes from the bundle while one is open).
    Bundle,
    /// `switchboard://open-view` (payload: a [`TrayView`]): the person chose an entry of the
    /// tray menu; the window shows that view.
    OpenView(TrayView),
    /// `switchboard://menu` (payload: a [`MenuAction`]): the person chose an entry of the
    /// window's File menu that the window carries out (the shell closes a bundle and quits
    /// itself).
    Menu(MenuAction),
    /// `switchboard://bridge`, no payload: what the Bridge status view shows changed (a banner
    /// raised, seen again or cleared, a diagnostic added); the view reads it again.
    Bridge,
}

/// A File menu entry the window carries out. None of them acts on a phone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum MenuAction {
    /// "Open support bundle…": the window asks for the bundle's path.
    OpenBundle,
    /// "Save support bundle…": the window shows Settings and the bundle's preview.
    SaveBundle,
}

/// The name and payload type of one event, for the generated TypeScript map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppEventSpec {
    /// The event's name.
    pub name: &'static str,
    /// The TypeScript type of its payload (`null` for none).
    pub payload: &'static str,
}

impl AppEvent {
    /// Every event name with its payload type, in a fixed order.
    pub const ALL: [AppEventSpec; 8] = [
        AppEventSpec {
            name: "switchboard://phones",
            payload: "null",
        },
        AppEventSpec {
            name: "switchboard://phone-lines",
            payload: "null",
        },
        AppEventSpec {
            name: "switchboard://confirmations",
            payload: "null",
        },
        AppEventSpec {
            name: "switchboard://notice",
            payload: "HubNotice",
        },
        AppEventSpec {
            name: "switchboard://bundle",
            payload: "null",
        },
        AppEventSpec {
            name: "switchboard://open-view",
            payload: "TrayView",
        },
        AppEventSpec {
            name: "switchboard://menu",
            payload: "MenuAction",
        },
        AppEventSpec {
            name: "switchboard://bridge",
            payload: "null",
        },
    ];

    /// The event's name (one of [`AppEvent::ALL`]).
    pub fn name(&self) -> &'static str {
        let i = match self {
            AppEvent::Phones => 0,
            AppEvent::PhoneLines => 1,
            AppEvent::Confirmations => 2,
            AppEvent::Notice(_) => 3,
            AppEvent::Bundle => 4,
            AppEvent::OpenView(_) => 5,
            AppEvent::Menu(_) => 6,
            AppEvent::Bridge => 7,
        };
        Self::ALL[i].name
    }

    /// The event's payload as JSON (`null` for the reload events).
    pub fn payload(&self) -> Value {
        match self {
            AppEvent::Notice(n) => serde_json::to_value(n).unwrap_or(Value::Null),
            AppEvent::OpenView(v) => serde_json::to_value(v).unwrap_or(Value::Null),
            AppEvent::Menu(a) => serde_json::to_value(a).unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_their_variants() {
        let names: std::collections::BTreeSet<_> = AppEvent::ALL.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), AppEvent::ALL.len());
        assert_eq!(AppEvent::Phones.name(), "switchboard://phones");
        assert_eq!(AppEvent::PhoneLines.name(), "switchboard://phone-lines");
        assert_eq!(
            AppEvent::Confirmations.name(),
            "switchboard://confirmations"
        );
        let n = AppEvent::Notice(HubNotice::BannerCleared {
            banner_id: "a>b".into(),
        });
        assert_eq!(n.name(), "switchboard://notice");
        assert_eq!(n.payload()["banner_id"], "a>b");
        assert_eq!(AppEvent::Phones.payload(), Value::Null);
        let m = AppEvent::Menu(MenuAction::OpenBundle);
        assert_eq!(m.name(), "switchboard://menu");
        assert_eq!(m.payload(), "open_bundle");
    }
}
