//! A dial's banner as the dial inspector shows it (`dial_banner`): the one the hub raised for it,
//! with where it stands now, or one derived from its error text.
//!
//! Why apart: it joins the dial view with the bridge-status store and the phone's extension
//! directory, which nothing else in the view needs.

use serde::Serialize;
use ts_rs::TS;

use switchboard_domain::bridge::explain::banner_for_dial;
use switchboard_domain::bridge::store::{BannerStanding, DialJudgement};
use switchboard_domain::bridge::Banner;
use switchboard_wire::error::IpcError;

use super::DialSource;
use crate::App;

/// Where the banner the dial inspector shows comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum BannerOrigin {
    /// The hub raised (or repeated) it for this dial: it is the banner of the Bridge view.
    RaisedByHub,
    /// Derived from the dial's error text here; the phone's bridge did not raise it (an
    /// imported capture, a dial from before the app started, or one the store no longer
    /// remembers).
    Derived,
}

/// A dial's banner for the dial inspector ([`App::dial_banner`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialBanner {
    /// The banner: for [`BannerOrigin::RaisedByHub`] as it stands now (current or in history),
    /// or as it stood after the dial when the history no longer holds it.
    pub banner: Banner,
    /// Where it comes from.
    pub origin: BannerOrigin,
    /// For a raised banner: current, retired (why, when) or forgotten; `null` when derived.
    pub standing: Option<BannerStanding>,
}

impl App {
    /// The banner of dial `dial_id`, as the dial inspector shows it: the banner the hub raised
    /// (or repeated) for this dial, when the bridge-status store still knows what the dial did,
    /// with where that banner stands now; else (an imported capture, a dial from before the app
    /// started, or one the store no longer remembers) the banner derived from its error text
    /// with the extension directory the hub judges that phone's results with (the built-in
    /// manifests for an imported capture or a phone that sent none), marked as derived. `null`
    /// when the hub judged the dial and raised none, when a derivation gives none, or when the
    /// dial is no longer held.
    ///
    /// # Errors
    /// As [`DialsState::dials_query`](super::DialsState::dials_query).
    pub async fn dial_banner(
        &self,
        dial_id: &str,
        start_ms: Option<i64>,
        seq: Option<u64>,
        source: Option<DialSource>,
    ) -> Result<Option<DialBanner>, IpcError> {
        let source = source.unwrap_or_default();
        let Some(d) = self.dials()?.find(dial_id, start_ms, seq, source).await? else {
            return Ok(None);
        };
        if source == DialSource::Live {
            let judged = self.bridge.lock_store().dial_judgement(&d.phone, &d.id);
            match judged {
                Some((DialJudgement::Banner(banner), standing)) => {
                    return Ok(Some(DialBanner {
                        banner: *banner,
                        origin: BannerOrigin::RaisedByHub,
                        standing,
                    }))
                }
                Some((DialJudgement::NoBanner(_), _)) => return Ok(None),
                None => {}
            }
        }
        let dir = match source {
            DialSource::Live => self.extensions_of(&d.phone),
            DialSource::Imported => None,
        };
        let dir =
            dir.unwrap_or_else(|| switchboard_domain::bridge::explain::builtin_directory().clone());
        Ok(banner_for_dial(&d, &dir).map(|banner| DialBanner {
            banner,
            origin: BannerOrigin::Derived,
            standing: None,
        }))
    }
}
