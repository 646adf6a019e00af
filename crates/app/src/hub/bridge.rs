//! Bridge status: dial results, `event.bridge.status` events and the `describe` results a
//! phone's settings carry, into the bridge-status store, and the banner notices that follow.
//!
//! Why its own file: a failure is judged against the phone's extension directory (its declared
//! permissions over the built-in manifests, [`switchboard_domain::bridge::explain::with_builtin`]) and may
//! raise a banner; a success retires its path's banner. Everything is per phone: the store is
//! keyed by the phone's device id and the call path, so one phone's results never touch another
//! phone's banners. The notices say which changed. Spec: `phone-line.md` ("Failure modes and the
//! bridge banner": LumiAgent dials every line's `describe` on each discovery and its banner is
//! driven by that dial's outcome).

use std::sync::Arc;

use super::{lock, Hub, HubNotice};
use switchboard_domain::bridge::store::{DiagnosticReason, DialMark, FailureRecorded};
use switchboard_domain::bridge::Banner;
use switchboard_domain::bridge::{CallPath, ExtensionDirectory};
use switchboard_domain::phone_events::{timestamp_ms, BridgeEvent, BridgeOutcome, LineSettings};
use switchboard_domain::phone_line::pairing::DescribeOutcome;

/// The extension that dials every line's `describe`: LumiAgent, the phone-line host
/// (`phone-line.md`, "Discovery and pairing").
pub const DESCRIBE_CALLER: &str = "lumiagent";

/// The call path of line `identifier`'s `describe`: LumiAgent → `<identifier>.phoneline`
/// (`phone-line.md`: "Register one rpcPool handler at `<yourExtId>.phoneline`"), the path a
/// dial of that line's handler has.
pub fn describe_path(identifier: &str) -> CallPath {
    CallPath::new(DESCRIBE_CALLER, format!("{identifier}.phoneline"))
}

/// How a result reaches the store.
#[derive(Clone, Copy)]
pub(super) enum Via<'a> {
    /// A dial (its phone's device id and its id, remembered for the dial inspector) or a
    /// bridge event: applied as it comes.
    Call(Option<(&'a Arc<str>, &'a Arc<str>)>),
    /// A `describe` repeated in a settings snapshot: applied only when newer than every
    /// result on the path.
    Snapshot,
}

impl Hub {
    pub(super) fn apply_bridge(&self, device_id: &str, b: &BridgeEvent, at_ms: u64) {
        let path = CallPath::new(b.caller.clone(), b.endpoint.clone());
        match b.outcome {
            BridgeOutcome::Ok => self.bridge_result(device_id, &path, None, at_ms, Via::Call(None)),
            BridgeOutcome::Error => {
                let text = b.error.clone().unwrap_or_default();
                self.bridge_result(device_id, &path, Some(&text), at_ms, Via::Call(None));
            }
        }
    }

    /// The `describe` results of a settings snapshot: each line's last describe raises (a
    /// failure) or clears (an answer) the phone's banner on the describe path, as a dial of
    /// that path does, with the same store, directory and texts. A describe already applied
    /// (the next snapshot repeats it) or older than the path's latest result changes nothing.
    pub(super) fn apply_describes(&self, device_id: &str, lines: &[LineSettings]) {
        for line in lines {
            let Some(d) = &line.last_describe else {
                continue;
            };
            let at_ms = u64::try_from(timestamp_ms(&d.at)).unwrap_or(0);
            let path = describe_path(&line.identifier);
            let error = match &d.outcome {
                DescribeOutcome::Failed(text) => Some(text.as_str()),
                DescribeOutcome::Answered(_) => None,
            };
            self.bridge_result(device_id, &path, error, at_ms, Via::Snapshot);
        }
    }

    /// Records a bridge result of phone `device_id` for `path` and tells about banners raised
    /// or cleared.
    pub(super) fn bridge_result(
        &self,
        device_id: &str,
        path: &CallPath,
        error: Option<&str>,
        at_ms: u64,
        via: Via<'_>,
    ) {
        // The phone's extension directory (declared permissions) only matters to a failure.
        let dir = match error {
            Some(_) => {
                let st = lock(&self.inner.state);
                st.phones.get(device_id).map(|p| Arc::clone(&p.directory))
            }
            None => None,
        };
        // Only a failure reads it: a success is judged with no directory at all.
        let dir: &ExtensionDirectory = match &dir {
            Some(d) => d,
            None => switchboard_domain::bridge::explain::builtin_directory(),
        };
        // What changed, told once the store is unlocked. Banners are compared by serial (a
        // repeat keeps it, anything else raises a new one) and copied only for a notice: a
        // flood of failing dials repeats one banner thousands of times a second.
        let notice = {
            let mut store = lock(&self.inner.bridge);
            let before = store.banner(device_id, path).map(|b| b.serial);
            let recorded = match via {
                Via::Snapshot => match store.record_if_newer(device_id, path, error, at_ms, dir) {
                    Some(r) => r,
                    None => return,
                },
                Via::Call(_) => match error {
                    Some(text) => Some(store.record_failure(device_id, path, text, at_ms, dir)),
                    None => {
                        store.record_success(device_id, path, at_ms);
                        None
                    }
                },
            };
            let after = store.banner(device_id, path).map(|b| b.serial);
            if let (Via::Call(Some((phone, dial_id))), Some(recorded)) = (via, recorded) {
                let mark = match (after, recorded) {
                    (
                        Some(serial),
                        FailureRecorded::BannerRaised | FailureRecorded::BannerRepeated,
                    ) => DialMark::Banner(serial),
                    (_, FailureRecorded::Diagnostic(reason)) => DialMark::NoBanner(reason),
                    // A raised or repeated failure always leaves the banner current.
                    (None, _) => DialMark::NoBanner(DiagnosticReason::NotPermission),
                };
                store.remember_dial(Arc::clone(phone), Arc::clone(dial_id), mark);
            }
            match (before, after) {
                (before, Some(serial)) if before != Some(serial) => store
                    .banner(device_id, path)
                    .map(|b| HubNotice::BannerRaised {
                        banner_id: b.id.clone(),
                        message: b.message.clone(),
                    }),
                (Some(_), None) => Some(HubNotice::BannerCleared {
                    banner_id: Banner::key_of(device_id, path),
                }),
                _ => None,
            }
        };
        if let Some(n) = notice {
            self.notify(n);
        }
    }
}
