//! Thousands of connections on loopback with the reference phone client: every one gets through
//! TLS, the WebSocket upgrade and the desktop's first `control.hello` (issue 21: about 1 in 50
//! upgrades failed after TLS with "did not receive a valid HTTP response"). Not reproduced here:
//! 2000 connections, 8 at a time, all upgrade (a raw Python `ssl` client doing the same 1000
//! times got `HTTP/1.1 101` every time too); the test stays as the guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use switchboard::link::phone_client::PhoneClient;
use switchboard::link::{bind, DesktopIdentity, Link, LinkConfig, ManualClock, MemoryStore};

const CONNECTIONS: usize = 2000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_connections_all_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    cfg.clock = Arc::new(ManualClock::new(1_780_000_000_000));
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
    let mut failures = Vec::new();
    let par: usize = std::env::var("PAR")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..CONNECTIONS {
        assert!(
            tokio::time::Instant::now() < deadline,
            "over 600 s after {i} connections"
        );
        if set.len() >= par {
            if let Some(Ok(Err(e))) = set.join_next().await {
                failures.push(e);
            }
        }
        let fp = fp.clone();
        set.spawn(async move {
            match PhoneClient::connect(addr, &fp).await {
                Ok(c) => {
                    c.close().await;
                    Ok(())
                }
                Err(e) => Err(format!("connection {i}: {e}")),
            }
        });
    }
    while let Some(r) = set.join_next().await {
        if let Ok(Err(e)) = r {
            failures.push(e);
        }
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
