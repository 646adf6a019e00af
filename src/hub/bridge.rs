//! Bridge status: dial results and `event.bridge.status` events into the bridge-status store,
//! and the banner notices that follow.
//!
//! Why its own file: a failure is judged against the phone's declared extension permissions and
//! may raise a banner; a success retires its path's banner. The notices say which changed. Spec:
//! `phone-line.md` ("Failure modes and the bridge banner").

use super::{lock, Hub, HubNotice};
use crate::bridge::CallPath;
use crate::phone_events::{BridgeEvent, BridgeOutcome};

impl Hub {
    pub(super) fn apply_bridge(&self, device_id: &str, b: &BridgeEvent, at_ms: u64) {
        let path = CallPath::new(b.caller.clone(), b.endpoint.clone());
        match b.outcome {
            BridgeOutcome::Ok => self.bridge_result(device_id, &path, None, at_ms),
            BridgeOutcome::Error => {
                let text = b.error.clone().unwrap_or_default();
                self.bridge_result(device_id, &path, Some(&text), at_ms);
            }
        }
    }

    /// Records a bridge result for `path` and tells about banners raised or cleared.
    pub(super) fn bridge_result(
        &self,
        device_id: &str,
        path: &CallPath,
        error: Option<&str>,
        at_ms: u64,
    ) {
        // The phone's extension directory (declared permissions) only matters to a failure.
        let dir = match error {
            Some(_) => {
                let st = lock(&self.inner.state);
                st.phones
                    .get(device_id)
                    .map(|p| p.directory.clone())
                    .unwrap_or_else(|| crate::bridge::explain::builtin_directory().clone())
            }
            None => Default::default(),
        };
        let (before, after) = {
            let mut store = lock(&self.inner.bridge);
            let before = store.banners().iter().find(|b| b.path == *path).cloned();
            match error {
                Some(text) => {
                    store.record_failure(path, text, at_ms, &dir);
                }
                None => {
                    store.record_success(path, at_ms);
                }
            }
            let after = store.banners().iter().find(|b| b.path == *path).cloned();
            (before, after)
        };
        match (before, after) {
            (None, Some(b)) => self.notify(HubNotice::BannerRaised {
                banner_id: b.id,
                message: b.message,
            }),
            (Some(old), None) => self.notify(HubNotice::BannerCleared { banner_id: old.id }),
            (Some(old), Some(new)) if !old.same_failure(&new) => {
                self.notify(HubNotice::BannerRaised {
                    banner_id: new.id,
                    message: new.message,
                })
            }
            _ => {}
        }
    }
}
