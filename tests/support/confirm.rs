//! Pairing in tests as a person would: the phone starts pairing, the person on the desktop sees
//! the same verification code and clicks "Codes match" ([`Link::confirm_pairing`]), the phone
//! confirms on its side, then says hello.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use switchboard::link::phone_client::{Paired, PhoneClient, PhoneError, PhoneIdentity};
use switchboard::link::Link;

/// Pairs `me` over `phone` with `code`, confirming the verification code on both sides; checks
/// that both screens show the same code and that nothing is trusted before the confirmations.
pub(crate) async fn pair_confirmed(
    link: &Link,
    phone: &mut PhoneClient,
    me: &PhoneIdentity,
    code: &str,
    capabilities: Vec<Value>,
    range: (u32, u32),
) -> Result<Paired, PhoneError> {
    let pending = phone.pair_start(me, code, capabilities).await?;
    let on_desktop = link
        .pending_pairing()
        .expect("a pending pairing on the desktop once the phone has the code");
    assert_eq!(on_desktop.device_id, me.device_id());
    assert_eq!(
        on_desktop.verification_code, pending.verification_code,
        "both screens show the same verification code"
    );
    assert!(
        !link
            .paired_phones()
            .iter()
            .any(|p| p.public_key == me.public_key_b64()),
        "trusted before anyone confirmed"
    );
    link.confirm_pairing(&on_desktop.id, true).unwrap();
    phone.pair_confirm(me, &pending, true, range).await
}

/// Stands in for the person on the desktop of a test whose phone runs elsewhere (another task
/// or process): waits (polling every 10 ms, at most `limit`) for a pending pairing, clicks
/// "Codes match" for it and returns it (with its verification code, to compare with what the
/// phone showed). `None` when none came in time.
pub(crate) fn confirm_when_pending(
    link: Link,
    limit: std::time::Duration,
) -> tokio::task::JoinHandle<Option<switchboard::link::PendingPairing>> {
    tokio::spawn(async move {
        let end = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < end {
            if let Some(p) = link.pending_pairing() {
                link.confirm_pairing(&p.id, true).ok()?;
                return Some(p);
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        None
    })
}
