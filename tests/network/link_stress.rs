//! Thousands of connections on loopback with the reference phone client, as phone apps make
//! them (paired phones connecting again and again: TLS, the WebSocket upgrade, the desktop's
//! `control.hello`, the phone's): every one gets through (about 1 in 50
//! upgrades failed after TLS with "did not receive a valid HTTP response"). Not reproduced here:
//! 2000 connections, as many at a time as one address may hold before its hello
//! (`LinkConfig::max_unauthenticated_per_source`, 4), all upgrade (a raw Python `ssl` client
//! doing the same 1000 times got `HTTP/1.1 101` every time too); the test stays as the guard.
//! Connections from one address that close before their hello count against that address's
//! share until the desktop notices, so a client opening and dropping them faster than that
//! evicts its own (by design, `docs/protocol.md`, "Connection budget"): without the phone's
//! hello, 4 at a time, about 1 in 36 failed at TLS or the upgrade, the very symptom of the
//! issue, and with 8 at a time about 80 %.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use switchboard::link::phone_client::{PhoneClient, PhoneIdentity};
use switchboard::link::{bind, DesktopIdentity, Link, LinkConfig, ManualClock, MemoryStore};

const CONNECTIONS: usize = 2000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_connections_all_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    cfg.clock = Arc::new(ManualClock::new(1_780_000_000_000));
    let share = cfg.max_unauthenticated_per_source;
    let (link, mut events) = Link::new(identity, cfg).unwrap();
    // Drain the link's events (failures before hello are reported there).
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let listener = bind(IpAddr::V4(Ipv4Addr::LOCALHOST), 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = link.run(listener, async {
        let _ = stop_rx.await;
    });
    let task = tokio::spawn(serving);
    let fp = link.identity().cert_fingerprint().to_string();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    let par: usize = std::env::var("PAR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(share);
    // One paired phone per lane, each connecting again and again as a phone app does: TLS,
    // upgrade, the desktop's hello, the phone's hello, close.
    let mut phones = Vec::new();
    for lane in 0..par {
        let me = PhoneIdentity::generate(&format!("stress phone {lane}"));
        let invite = link.open_pairing(IpAddr::V4(Ipv4Addr::LOCALHOST));
        let mut c = PhoneClient::connect(addr, &fp).await.unwrap();
        confirm::pair_confirmed(&link, &mut c, &me, &invite.code, vec![], (1, 1))
            .await
            .unwrap();
        c.close().await;
        phones.push(me);
    }
    let mut set = tokio::task::JoinSet::new();
    for (lane, me) in phones.into_iter().enumerate() {
        let fp = fp.clone();
        set.spawn(async move {
            let mut failures = Vec::new();
            for i in (lane..CONNECTIONS).step_by(par) {
                if tokio::time::Instant::now() > deadline {
                    failures.push(format!("over 600 s at connection {i}"));
                    break;
                }
                let attempt = async {
                    let mut c = PhoneClient::connect(addr, &fp).await?;
                    c.hello(&me, (1, 1)).await?;
                    c.close().await;
                    Ok::<_, switchboard::link::phone_client::PhoneError>(())
                };
                if let Err(e) = attempt.await {
                    failures.push(format!("connection {i}: {e}"));
                }
            }
            failures
        });
    }
    let mut failures = Vec::new();
    while let Some(r) = set.join_next().await {
        failures.extend(r.unwrap());
    }
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    assert!(
        failures.is_empty(),
        "{} of {CONNECTIONS} connections failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
}
