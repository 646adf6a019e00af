//! The desktop end the pairing tests drive: a real [`Link`] on 127.0.0.1:0 with a ManualClock,
//! and the few moves an attacker or a phone makes against it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard::link::phone_client::{PhoneClient, PhoneError, PhoneIdentity};
use switchboard::link::{
    bind, DesktopIdentity, Link, LinkConfig, LinkEvent, LinkFailure, ManualClock, MemoryStore,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

pub(crate) const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
pub(crate) const WAIT: Duration = Duration::from_secs(10);

pub(crate) struct Desk {
    pub(crate) link: Link,
    pub(crate) events: mpsc::UnboundedReceiver<LinkEvent>,
    pub(crate) addr: SocketAddr,
    pub(crate) fp: String,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) clock: Arc<ManualClock>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

pub(crate) async fn start() -> Desk {
    start_with(|_| {}).await
}

/// [`start`] with `tune` applied to the link's settings (after mDNS off and the ManualClock).
pub(crate) async fn start_with(tune: impl FnOnce(&mut LinkConfig)) -> Desk {
    let dir = tempfile::tempdir().unwrap();
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let clock = Arc::new(ManualClock::new(1_780_000_000_000));
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    cfg.clock = clock.clone();
    tune(&mut cfg);
    let (link, events) = Link::new(identity, cfg).unwrap();
    let listener = bind(LOOPBACK, 0).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let serving = link.run(listener, async {
        let _ = stop_rx.await;
    });
    let task = tokio::spawn(async move { serving.await.unwrap() });
    let fp = link.identity().cert_fingerprint().to_string();
    Desk {
        link,
        events,
        addr,
        fp,
        dir,
        clock,
        stop: Some(stop_tx),
        task: Some(task),
    }
}

impl Desk {
    pub(crate) fn trust_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.dir.path().join("paired-phones.json")).ok()
    }

    pub(crate) async fn phone(&self) -> PhoneClient {
        tokio::time::timeout(WAIT, PhoneClient::connect(self.addr, &self.fp))
            .await
            .unwrap()
            .unwrap()
    }

    /// Every event already queued (the link queues a refusal's events before it answers, so
    /// after the answer they are all here).
    pub(crate) fn drain(&mut self) -> Vec<LinkEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }

    pub(crate) fn failures(&mut self) -> Vec<LinkFailure> {
        self.drain()
            .into_iter()
            .filter_map(|e| match e {
                LinkEvent::Failure(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// One `pair.request` on a fresh connection; the answer as (class, detail), or "granted".
    pub(crate) async fn try_code(&self, me: &PhoneIdentity, code: &str) -> (String, String) {
        let mut phone = self.phone().await;
        // "granted": the code passed and the pairing is pending (closing the connection then
        // discards it).
        let got = phone.pair_start(me, code, vec![]).await;
        phone.close().await;
        match got {
            Ok(_) => ("granted".into(), String::new()),
            Err(PhoneError::Refused { class, detail }) => (class, detail),
            Err(e) => panic!("pair.request: {e}"),
        }
    }

    pub(crate) async fn pair_phone(&mut self, label: &str) -> PhoneIdentity {
        let invite = self.link.open_pairing(LOOPBACK);
        let me = PhoneIdentity::generate(label);
        let mut phone = self.phone().await;
        crate::confirm::pair_confirmed(&self.link, &mut phone, &me, &invite.code, vec![], (1, 1))
            .await
            .unwrap();
        phone.close().await;
        me
    }

    pub(crate) async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            tokio::time::timeout(WAIT, t).await.unwrap().unwrap();
        }
    }
}

/// Six-digit codes other than `right` (written `123-456`), `n` of them.
pub(crate) fn wrong_codes(right: &str, n: usize) -> Vec<String> {
    let right: String = right.chars().filter(char::is_ascii_digit).collect();
    (0u32..)
        .map(|i| format!("{:06}", (i * 7919) % 1_000_000))
        .filter(|c| *c != right)
        .take(n)
        .map(|c| format!("{}-{}", &c[..3], &c[3..]))
        .collect()
}

pub(crate) fn refusal(r: Result<Value, PhoneError>) -> (String, String) {
    match r {
        Err(PhoneError::Refused { class, detail }) => (class, detail),
        other => panic!("expected an ifp error, got {other:?}"),
    }
}

impl Desk {
    pub(crate) fn clock_ms(&self) -> u64 {
        use switchboard::link::Clock as _;
        self.clock.now_ms()
    }
}
