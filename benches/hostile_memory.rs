//! Memory while a paired phone sends far faster than the desktop applies (issue 17, hostile
//! input): the real app (link, hub, dial log with SQLite) in this process, a phone on loopback
//! writing dials as fast as its socket takes them, reading acknowledgements on the side. VmRSS
//! (`/proc/self/status`) is sampled every 10 ms; the figures are its growth over the idle app.
//!
//! Cases, one after the other in one run:
//! 1. 100 000 small dials (about 400 bytes each);
//! 2. 600, then 1 800 more dials of about 1 MiB each (the frame limit), the worst a phone can
//!    send per frame: memory must not grow with the count.
//!
//! What bounds memory: the link reads no further while a connection has 1 024 messages the app
//! has not applied (`MAX_UNAPPLIED`; 4 096 dials, `MAX_UNAPPLIED_DIALS`) or 16 MiB of their
//! text (`MAX_UNAPPLIED_BYTES`); the dial log holds at most its ring's capacity in dials,
//! and (since issue 17) at most its byte budget of request and response text; ingest waits
//! while more than `DialLogConfig::max_unwritten_bytes` (64 MiB) of stored dials wait for the
//! SQLite writer (back-pressure, nothing dropped).
//!
//! Run: `cargo bench -p switchboard --bench hostile_memory` (Linux; release profile).

#![allow(missing_docs)]

#[path = "../tests/support/confirm.rs"]
mod confirm;
#[path = "../tests/support/small_dial.rs"]
mod small_dial;

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use small_dial::small_dial;
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
use switchboard::link::phone_client::{PhoneClient, PhoneIdentity};
use tokio_tungstenite::tungstenite::Message;

type R<T> = Result<T, Box<dyn Error + Send + Sync>>;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// Samples VmRSS every 10 ms; `peak` is the highest since the last reset.
struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Self {
        let peak = Arc::new(AtomicU64::new(rss_kib()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }
    fn reset(&self) {
        self.peak.store(rss_kib(), Ordering::Relaxed);
    }
    fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn dial(me: &PhoneIdentity, seq: u64, pad: &str) -> String {
    small_dial(me, seq, "ses_memory0000000001")
        .to_string()
        .replacen("\"pad\":\"\"", &format!("\"pad\":\"{pad}\""), 1)
}

struct Case {
    sent: u64,
    bytes: u64,
    took: Duration,
    peak_growth_kib: u64,
    after_kib: u64,
}

/// Sends `n` dials with `pad` from `first_seq` as fast as the socket takes them, reading acks on
/// the side; returns when the last one is acknowledged.
/// The paired phone: where the desktop listens, its certificate, the phone's key, the
/// desktop's key.
struct Phone {
    addr: std::net::SocketAddr,
    fp: String,
    me: PhoneIdentity,
    key: String,
}

async fn stream(
    phone: &Phone,
    first_seq: u64,
    n: u64,
    pad: &str,
    sampler: &Sampler,
    idle_kib: u64,
) -> R<Case> {
    let Phone { addr, fp, me, key } = phone;
    let mut c = PhoneClient::connect(*addr, fp).await?;
    c.set_desktop_public_key(key)?;
    c.hello(me, (1, 1)).await?;
    let (mut tx, mut rx) = c.into_ws().split();
    let last = first_seq + n - 1;
    let acked = tokio::spawn(async move {
        // Bounded: until the last dial's ack, or 10 minutes.
        let end = Instant::now() + Duration::from_secs(600);
        while Instant::now() < end {
            let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::from_secs(60), rx.next()).await
            else {
                return false;
            };
            if let Message::Text(t) = m {
                let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                if v["type"] == "control.ack"
                    && v["payload"]["last_id"] == format!("msg_last{last:012}")
                {
                    return true;
                }
            }
        }
        false
    });
    sampler.reset();
    let t0 = Instant::now();
    let mut bytes = 0u64;
    for seq in first_seq..=last {
        let mut text = dial(me, seq, pad);
        if seq == last {
            // Name the last frame so the ack that covers it is easy to spot.
            let v: Value = serde_json::from_str(&text)?;
            let id = v["id"].as_str().unwrap_or("").to_string();
            text = text.replacen(
                &format!("\"id\":\"{id}\""),
                &format!("\"id\":\"msg_last{seq:012}\""),
                1,
            );
        }
        bytes += text.len() as u64;
        tx.feed(Message::text(text)).await?;
        if seq % 64 == 0 {
            tx.flush().await?;
        }
    }
    tx.flush().await?;
    let ok = acked.await?;
    let took = t0.elapsed();
    let peak = sampler.peak();
    let _ = tx.close().await;
    if !ok {
        return Err("the last dial was never acknowledged".into());
    }
    Ok(Case {
        sent: n,
        bytes,
        took,
        peak_growth_kib: peak.saturating_sub(idle_kib),
        after_kib: rss_kib().saturating_sub(idle_kib),
    })
}

fn print(what: &str, c: &Case) {
    println!(
        "{what:<34} {:>7} dials {:>9.1} MiB sent in {:>6.2} s ({:>7.0} dials/s, {:>6.1} MiB/s): RSS growth peak {:>7.1} MiB, after {:>7.1} MiB",
        c.sent,
        c.bytes as f64 / 1048576.0,
        c.took.as_secs_f64(),
        c.sent as f64 / c.took.as_secs_f64(),
        c.bytes as f64 / 1048576.0 / c.took.as_secs_f64(),
        c.peak_growth_kib as f64 / 1024.0,
        c.after_kib as f64 / 1024.0,
    );
}

async fn main_async() -> R<()> {
    let home = tempfile::tempdir()?;
    let mut config = AppConfig::new(AppPaths::under(home.path()), false);
    config.identity = IdentityStore::Memory;
    config.listen = (LOOPBACK, 0);
    config.mdns = false;
    let app = App::new(
        config,
        Arc::new(RecordingHost::new()),
        tokio::runtime::Handle::current(),
        ConfirmationMirror::with_bundled_catalogue(),
    );
    app.start_link();
    let end = Instant::now() + Duration::from_secs(30);
    while app.phones.link().is_none() || app.hub().is_none() {
        if Instant::now() > end {
            return Err("the link never started".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let link = app.phones.link().ok_or("no link")?;
    let addr = link.local_addr().ok_or("no address")?;
    let fp = link.identity().cert_fingerprint().to_string();
    let invite = link.open_pairing(LOOPBACK);
    let _confirmer =
        confirm::confirm_when_pending(link.clone(), std::time::Duration::from_secs(30));
    let me = PhoneIdentity::generate("fast phone");
    let mut c = PhoneClient::connect(addr, &fp).await?;
    let key = c
        .pair(&me, &invite.code, vec![], (1, 1))
        .await?
        .desktop_public_key;
    c.close().await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let sampler = Sampler::start();
    let idle = rss_kib();
    println!("idle app: VmRSS {:.1} MiB", idle as f64 / 1024.0);
    let phone = Phone { addr, fp, me, key };
    let small = stream(&phone, 1, 100_000, "", &sampler, idle).await?;
    print("small dials (~400 B)", &small);
    let pad = "x".repeat(1_048_576 - 900);
    let mut seq = 100_001;
    for n in [600, 1_800] {
        let big = stream(&phone, seq, n, &pad, &sampler, idle).await?;
        print(&format!("1 MiB dials, {n} more"), &big);
        seq += n;
    }
    let held = app.dials().map_err(|e| e.to_string())?.log.status().await?;
    println!(
        "dial log after both: {} dials held (capacity {}), {} evicted from the ring",
        held.held, held.capacity, held.evicted
    );
    let _ = app.shutdown().await;
    Ok(())
}

fn main() -> R<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(main_async())
}
