//! A paired phone's reconnect time while an unpaired peer keeps opening connections, against the
//! same phone's reconnect time with no flood, in one run, on loopback (127.0.0.0/8, port 0).
//!
//! The phone connects from 127.0.0.1 with the real [`PhoneClient`]: TCP, TLS 1.3 (pinned), the
//! WebSocket upgrade, the desktop's first hello, its own `control.hello` and the desktop's answer.
//! One reconnect = from the TCP connect to the desktop's answering hello, retrying at once when
//! an attempt fails (as a phone does), at most [`ATTEMPT_CAP`] in all.
//!
//! The flood: [`FLOOD_TASKS`] tasks, each holding one connection without ever saying hello and
//! opening the next one the moment the desktop drops it. A third of them stop after TCP (half
//! open: no TLS ClientHello), a third after the TLS handshake (no WebSocket upgrade), a third
//! after the upgrade (they read the desktop's hello and never answer). They come either from one
//! address (127.0.0.2) or from [`MANY_SOURCES`] addresses (127.0.1.x): the second is the worst
//! case for a per-address budget.
//!
//! A last case has the phone come from an address the desktop has never seen (the budget
//! protects a paired phone's last address; a new one is the worst case).
//!
//! Run: `cargo bench -p switchboard --bench reconnect_flood` (release profile).
//! `RECONNECT_ROUNDS=N` changes the reconnects per case (default 40).

#![allow(missing_docs)]

#[path = "../tests/support/confirm.rs"]
mod confirm;

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use switchboard::link::identity::CERT_NAME;
use switchboard::link::phone_client::{PhoneClient, PhoneIdentity};
use switchboard::link::tls::{pinned_client_config, PinnedCertVerifier};
use switchboard::link::{bind, DesktopIdentity, Link, LinkConfig, MemoryStore};
use tokio::io::AsyncReadExt as _;
use tokio::net::{TcpSocket, TcpStream};

type R<T> = Result<T, Box<dyn Error + Send + Sync>>;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Connections the flood keeps trying to hold at once.
const FLOOD_TASKS: usize = 96;
/// Source addresses of the many-address flood.
const MANY_SOURCES: u8 = 64;
/// Longest one reconnect may take, retries included.
const ATTEMPT_CAP: Duration = Duration::from_secs(30);
/// How long the flood runs before the first reconnect is timed (it fills whatever it can).
const WARM_UP: Duration = Duration::from_millis(1500);
/// The target the issue sets for a reconnect under the flood.
const TARGET: Duration = Duration::from_secs(1);

#[derive(Clone, Copy)]
enum Hold {
    /// TCP only: no ClientHello.
    HalfOpen,
    /// TLS done, no WebSocket upgrade.
    Tls,
    /// WebSocket upgraded, the desktop's hello read, nothing sent.
    Upgraded,
}

struct Flood {
    stop: Arc<AtomicBool>,
    opened: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    started: Instant,
}

impl Flood {
    fn start(addr: SocketAddr, fp: &str, sources: &[Ipv4Addr]) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let opened = Arc::new(AtomicU64::new(0));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for i in 0..FLOOD_TASKS {
            let hold = match i % 3 {
                0 => Hold::HalfOpen,
                1 => Hold::Tls,
                _ => Hold::Upgraded,
            };
            let src = sources[i % sources.len()];
            let (stop, opened, dropped, fp) = (
                stop.clone(),
                opened.clone(),
                dropped.clone(),
                fp.to_string(),
            );
            tasks.push(tokio::spawn(async move {
                // Bounded: until told to stop, and never past 10 minutes.
                let end = Instant::now() + Duration::from_secs(600);
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    opened.fetch_add(1, Ordering::Relaxed);
                    match hold_one(addr, src, &fp, hold, &stop).await {
                        Ok(true) => {
                            dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(false) => {}
                        Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    }
                }
            }));
        }
        Self {
            stop,
            opened,
            dropped,
            tasks,
            started: Instant::now(),
        }
    }

    async fn stop(self) -> (u64, u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let took = self.started.elapsed();
        for t in self.tasks {
            t.abort();
            let _ = t.await;
        }
        (
            self.opened.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
            took,
        )
    }
}

/// Opens one connection from `src` and holds it; `Ok(true)` when the desktop dropped it,
/// `Ok(false)` when told to stop.
async fn hold_one(
    addr: SocketAddr,
    src: Ipv4Addr,
    fp: &str,
    hold: Hold,
    stop: &AtomicBool,
) -> R<bool> {
    let sock = TcpSocket::new_v4()?;
    sock.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
    let mut tcp: TcpStream =
        tokio::time::timeout(Duration::from_secs(5), sock.connect(addr)).await??;
    let poll = Duration::from_millis(200);
    match hold {
        Hold::HalfOpen => {
            let mut buf = [0u8; 256];
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                match tokio::time::timeout(poll, tcp.read(&mut buf)).await {
                    Err(_) => continue,
                    Ok(Ok(0)) | Ok(Err(_)) => return Ok(true),
                    Ok(Ok(_)) => continue,
                }
            }
        }
        Hold::Tls | Hold::Upgraded => {
            let cfg = pinned_client_config(Arc::new(PinnedCertVerifier::new(fp)))?;
            let name = rustls::pki_types::ServerName::try_from(CERT_NAME)?;
            let mut tls = tokio::time::timeout(
                Duration::from_secs(5),
                tokio_rustls::TlsConnector::from(cfg).connect(name, tcp),
            )
            .await??;
            if let Hold::Tls = hold {
                let mut buf = [0u8; 256];
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(false);
                    }
                    match tokio::time::timeout(poll, tls.read(&mut buf)).await {
                        Err(_) => continue,
                        Ok(Ok(0)) | Ok(Err(_)) => return Ok(true),
                        Ok(Ok(_)) => continue,
                    }
                }
            }
            let url = format!("wss://{addr}/ifp");
            let (mut ws, _) = tokio::time::timeout(
                Duration::from_secs(5),
                tokio_tungstenite::client_async(url, tls),
            )
            .await??;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                match tokio::time::timeout(poll, ws.next()).await {
                    Err(_) => continue,
                    Ok(None) | Ok(Some(Err(_))) => return Ok(true),
                    Ok(Some(Ok(m))) if m.is_close() => return Ok(true),
                    Ok(Some(Ok(_))) => continue,
                }
            }
        }
    }
}

struct Phone {
    addr: SocketAddr,
    fp: String,
    me: PhoneIdentity,
    desktop_key: String,
}

impl Phone {
    /// One reconnect from the local address `from` (`None`: 127.0.0.1, the address the phone
    /// last used, which the desktop's budget knows): retries at once on a failed attempt;
    /// `None` past [`ATTEMPT_CAP`].
    async fn reconnect_from(&self, from: Option<IpAddr>) -> (Option<Duration>, u32) {
        let t0 = Instant::now();
        let mut attempts = 0;
        while t0.elapsed() < ATTEMPT_CAP {
            attempts += 1;
            let left = ATTEMPT_CAP.saturating_sub(t0.elapsed());
            let got = tokio::time::timeout(left, async {
                let mut c = PhoneClient::connect_from(self.addr, &self.fp, from).await?;
                c.set_desktop_public_key(&self.desktop_key)?;
                c.hello(&self.me, (1, 1)).await?;
                Ok::<_, switchboard::link::phone_client::PhoneError>(c)
            })
            .await;
            if let Ok(Ok(c)) = got {
                let took = t0.elapsed();
                c.close().await;
                return (Some(took), attempts);
            }
        }
        (None, attempts)
    }
}

struct Figures {
    times: Vec<Duration>,
    failed: usize,
    retries: u32,
}

impl Figures {
    fn pct(&self, p: f64) -> Duration {
        if self.times.is_empty() {
            return Duration::ZERO;
        }
        let mut v = self.times.clone();
        v.sort();
        let i = ((v.len() as f64 - 1.0) * p).round() as usize;
        v[i.min(v.len() - 1)]
    }
}

async fn rounds(phone: &Phone, n: usize) -> Figures {
    rounds_from(phone, n, |_| None).await
}

async fn rounds_from(phone: &Phone, n: usize, from: impl Fn(usize) -> Option<IpAddr>) -> Figures {
    let mut f = Figures {
        times: Vec::new(),
        failed: 0,
        retries: 0,
    };
    for i in 0..n {
        let (t, attempts) = phone.reconnect_from(from(i)).await;
        f.retries += attempts.saturating_sub(1);
        match t {
            Some(t) => f.times.push(t),
            None => f.failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn print(case: &str, f: &Figures, flood: Option<(u64, u64, Duration)>) {
    println!(
        "{case:<44} n={:<3} median {:>10}  p95 {:>10}  max {:>10}  failed {}  retries {}",
        f.times.len() + f.failed,
        ms(f.pct(0.5)),
        ms(f.pct(0.95)),
        ms(f.pct(1.0)),
        f.failed,
        f.retries,
    );
    if let Some((opened, dropped, took)) = flood {
        let s = took.as_secs_f64().max(1e-9);
        println!(
            "{:<44} flood opened {opened} connections ({:.0}/s), the desktop dropped {dropped} ({:.0}/s)",
            "",
            opened as f64 / s,
            dropped as f64 / s
        );
    }
}

async fn main_async() -> R<()> {
    let n: usize = std::env::var("RECONNECT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir()?;
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new())?;
    let mut cfg = LinkConfig::new(dir.path());
    cfg.mdns = false;
    let (link, mut events) = Link::new(identity, cfg)?;
    // The app drains the link's events; so does the bench (nothing is measured on them).
    tokio::spawn(async move { while events.recv().await.is_some() {} });
    let listener = bind(LOOPBACK, 0).await?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = link.run(listener, async {
        let _ = stop_rx.await;
    });
    let server = tokio::spawn(serving);
    let fp = link.identity().cert_fingerprint().to_string();

    let invite = link.open_pairing(LOOPBACK);
    let _confirmer =
        confirm::confirm_when_pending(link.clone(), std::time::Duration::from_secs(30));
    let me = PhoneIdentity::generate("bench phone");
    let mut c = PhoneClient::connect(addr, &fp).await?;
    let paired = c.pair(&me, &invite.code, vec![], (1, 1)).await?;
    c.close().await;
    let phone = Phone {
        addr,
        fp: fp.clone(),
        me,
        desktop_key: paired.desktop_public_key,
    };

    println!(
        "reconnect of a paired phone (TCP + TLS + upgrade + hello), {n} rounds a case, flood of {FLOOD_TASKS} connections without hello"
    );
    let bare = rounds(&phone, n).await;
    print("no flood", &bare, None);

    let one = [Ipv4Addr::new(127, 0, 0, 2)];
    let flood = Flood::start(addr, &fp, &one);
    tokio::time::sleep(WARM_UP).await;
    let f1 = rounds(&phone, n).await;
    let s1 = flood.stop().await;
    print("flood from one address (127.0.0.2)", &f1, Some(s1));

    let many: Vec<Ipv4Addr> = (1..=MANY_SOURCES)
        .map(|i| Ipv4Addr::new(127, 0, 1, i))
        .collect();
    let flood = Flood::start(addr, &fp, &many);
    tokio::time::sleep(WARM_UP).await;
    let f2 = rounds(&phone, n).await;
    let s2 = flood.stop().await;
    print(
        &format!("flood from {MANY_SOURCES} addresses (127.0.1.x)"),
        &f2,
        Some(s2),
    );

    // The worst case: the phone comes from an address the desktop has never seen (a new
    // address each round), while 64 other addresses flood.
    let flood = Flood::start(addr, &fp, &many);
    tokio::time::sleep(WARM_UP).await;
    let fresh = n.min(15);
    let f3 = rounds_from(&phone, fresh, |i| {
        Some(IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            2,
            u8::try_from(i + 1).unwrap_or(250),
        )))
    })
    .await;
    let s3 = flood.stop().await;
    print("same, phone from a new address each time", &f3, Some(s3));

    let bare2 = rounds(&phone, n).await;
    print("no flood (again, after the floods)", &bare2, None);
    for (case, f) in [
        ("one address", &f1),
        ("many addresses", &f2),
        ("many addresses, phone from a new address", &f3),
    ] {
        let p95 = f.pct(0.95);
        println!(
            "target: p95 under the flood ({case}) < {} ms: {} ({} ms, {:.1}x the bare median)",
            TARGET.as_millis(),
            if f.failed == 0 && p95 < TARGET {
                "met"
            } else {
                "NOT met"
            },
            p95.as_millis(),
            p95.as_secs_f64() / bare.pct(0.5).as_secs_f64().max(1e-9),
        );
    }
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
    Ok(())
}

fn main() -> R<()> {
    // `cargo bench` passes `--bench`; nothing else is read from the arguments.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(main_async())
}
