//! Desktop requests: what the desktop asks of a phone (revoke a phone line, a fresh settings
//! snapshot, unpair), and their errors.
//!
//! Why its own file: these are the only messages the desktop starts itself, and the list is
//! closed on purpose ([`DesktopRequestKind`]): nothing here can approve, reject or cancel an
//! action. Spec: `docs/protocol.md` ("Desktop requests"), `phone-line.md` ("Discovery and
//! pairing").

use super::Hub;
use switchboard_link::LinkError;
use switchboard_wire::ifp::outgoing::{DesktopRequest, DesktopRequestKind};
use switchboard_wire::ifp::OutgoingMessage;

/// Errors of the hub's desktop-to-phone requests.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The hub was built without a link, so it cannot send anything.
    #[error("the hub has no link to send through")]
    NoLink,
    /// The link refused or could not deliver (e.g. the phone is not connected).
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl From<HubError> for switchboard_wire::error::IpcError {
    fn from(e: HubError) -> Self {
        switchboard_wire::error::IpcError::new(
            switchboard_wire::error::IpcErrorKind::Link,
            e.to_string(),
        )
    }
}

impl Hub {
    fn request(
        &self,
        device_id: &str,
        kind: DesktopRequestKind,
        target: Option<String>,
    ) -> Result<(), HubError> {
        let link = self.inner.link.as_ref().ok_or(HubError::NoLink)?;
        link.send(
            device_id,
            OutgoingMessage::DesktopRequest(DesktopRequest { kind, target }),
        )?;
        Ok(())
    }

    /// Asks the phone to revoke the phone line `identifier` (`desktop.request
    /// revoke_phone_line`). The phone decides; its next settings snapshot shows the result.
    ///
    /// Errors: [`HubError::NoLink`], or the link's (phone not connected).
    pub fn revoke_phone_line(&self, device_id: &str, identifier: &str) -> Result<(), HubError> {
        self.request(
            device_id,
            DesktopRequestKind::RevokePhoneLine,
            Some(identifier.to_string()),
        )
    }

    /// Asks the phone for a fresh settings snapshot (`desktop.request
    /// request_settings_snapshot`).
    ///
    /// Errors: [`HubError::NoLink`], or the link's (phone not connected).
    pub fn request_settings_snapshot(&self, device_id: &str) -> Result<(), HubError> {
        self.request(device_id, DesktopRequestKind::RequestSettingsSnapshot, None)
    }

    /// Unpairs the phone: the link forgets its key and, if it is connected, sends `desktop.request
    /// unpair` and closes. Returns whether it was paired.
    ///
    /// Errors: [`HubError::NoLink`], or the link's (trust file not writable).
    pub fn unpair(&self, device_id: &str) -> Result<bool, HubError> {
        let link = self.inner.link.as_ref().ok_or(HubError::NoLink)?;
        Ok(link.unpair(device_id)?)
    }
}
