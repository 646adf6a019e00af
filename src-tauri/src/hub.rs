//! The hub in the app: applies what paired phones mirror (through [`switchboard::hub::Hub`])
//! into the same stores the views read (dial log, bridge status, Confirmations mirror), and
//! turns its notices into app events (`switchboard://notice`) and desktop notifications.

use std::sync::Arc;

use switchboard::hub::{Hub, HubNotice, HubParts};
use switchboard::link::Link;
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::commands::bridge::BridgeState;
use crate::commands::confirmations::ConfirmationsState;
use crate::dials::DialsState;
use crate::state::AppState;

/// The app event every hub notice is emitted as; its payload is a [`HubNotice`].
pub const NOTICE_EVENT: &str = "switchboard://notice";

/// The app event the Confirmations view reloads on.
pub const CONFIRMATIONS_EVENT: &str = "switchboard://confirmations";

/// The running hub (managed once the link is up).
pub struct HubState(pub Hub);

/// Builds the hub over the app's shared stores, manages it, and forwards its notices.
pub fn start<R: Runtime>(app: &AppHandle<R>, link: Link) -> Hub {
    let dials = app.state::<DialsState>().log.clone();
    let bridge = app.state::<BridgeState>().store.clone();
    let confirmations = app.state::<ConfirmationsState>();
    let mut parts = HubParts::new(dials, bridge, Some(link));
    parts.confirmations = Some(confirmations.mirror.clone());
    let hub = Hub::new(parts);
    app.manage(HubState(hub.clone()));
    let mut notices = hub.subscribe();
    let app = app.clone();
    let notifier = Arc::clone(&confirmations.notifier);
    let mirror = Arc::clone(&confirmations.mirror);
    tauri::async_runtime::spawn(async move {
        loop {
            match notices.recv().await {
                Ok(notice) => {
                    if let HubNotice::BannerRaised { message, .. } = &notice {
                        let settings = app.state::<AppState>().settings().notifications;
                        notifier.on_banner(message, &settings);
                    }
                    if let HubNotice::ConfirmationChanged { change, .. } = &notice {
                        let settings = app.state::<AppState>().settings().notifications;
                        notifier.on_change(change, &settings);
                        let _ = app.emit(CONFIRMATIONS_EVENT, ());
                    }
                    if let HubNotice::AutonomyChanged {
                        device_id,
                        autonomy,
                        ..
                    } = &notice
                    {
                        // The table shows the phone's latest session level.
                        mirror
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .set_autonomy(device_id, *autonomy);
                        let _ = app.emit(CONFIRMATIONS_EVENT, ());
                    }
                    if let HubNotice::SettingsUpdated { device_id, .. } = &notice {
                        crate::commands::phone_lines::on_phone_settings(&app, device_id);
                    }
                    let _ = app.emit(NOTICE_EVENT, &notice);
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("the window missed {n} hub notices; views re-read their state");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    hub
}
