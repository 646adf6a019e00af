//! Acknowledged means durable (`docs/protocol.md`, "Acknowledgement and replay"): a desktop
//! killed with SIGKILL at 5 random moments while a phone streams dials, restarted each time on
//! the same data folder, has stored exactly once every dial the phone saw acknowledged.
//!
//! The desktop is a separate process: this test binary run again with `--ignored --exact
//! desk_process` and `DURABLE_ACKS_DIR` set ([`desk_process`], ignored in normal runs). It runs
//! a link, a hub and a dial log with SQLite in that folder on 127.0.0.1:0, with a fresh
//! identity each start, and prints its address, certificate fingerprint and a pairing code;
//! the phone (this process, [`PhoneClient`]) pairs anew after each restart. The phone keeps an
//! outbox as a real phone does (`control.ack {last_id}` drops everything up to `last_id`),
//! resends it after each restart, and at the end the test reads `dials.sqlite3` itself.
//!
//! Every loop is bounded in count and time; the random moments come from a seed printed at
//! the start (`DURABLE_ACKS_SEED=...` repeats a run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::BufRead as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{FutureExt as _, SinkExt as _, StreamExt as _};
use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use switchboard::bridge::store::BridgeStatusStore;
use switchboard::clock::{Clock as _, SystemClock};
use switchboard::dials::{DialLog, DialLogConfig};
use switchboard::hub::{Hub, HubParts};
use switchboard::link::phone_client::{envelope, PhoneClient, PhoneIdentity};
use switchboard::link::{bind, rfc3339_ms, DesktopIdentity, Link, LinkConfig, MemoryStore};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const KILLS: usize = 5;
const SESSION: &str = "ses_durable0000001";
/// Frames sent before the phone reads what came back.
const BURST: usize = 32;
/// Most dials the phone sends in one run of the desktop (the kill comes long before).
const MAX_NEW_PER_RUN: u64 = 200_000;
const DESK_DIR: &str = "DURABLE_ACKS_DIR";

/// The desktop process: link + hub + dial log (SQLite in `$DURABLE_ACKS_DIR/dials`) on
/// 127.0.0.1:0, until killed (or 120 s, so a lost child cannot linger).
#[test]
#[ignore = "the desktop process of the SIGKILL test, which runs it"]
fn desk_process() {
    let Some(dir) = std::env::var_os(DESK_DIR) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
        // A fresh trust file each start (the phone pairs again); the dials stay.
        let mut cfg = LinkConfig::new(dir.join(format!("link-{}", std::process::id())));
        cfg.mdns = false;
        // One clock for the desktop: the hub judges time by the link's.
        let clock = Arc::clone(&cfg.clock);
        let (link, events) = Link::new(identity, cfg).unwrap();
        let listener = bind(LOOPBACK, 0).await.unwrap();
        tokio::spawn(link.run(listener, std::future::pending::<()>()));
        let dials = DialLog::spawn(DialLogConfig {
            data_dir: Some(dir.join("dials")),
            ..DialLogConfig::default()
        })
        .unwrap();
        let bridge = Arc::new(Mutex::new(BridgeStatusStore::new()));
        let hub = Hub::new(HubParts::new(dials, bridge, Some(link.clone()), clock));
        tokio::spawn(hub.run(events));
        let invite = link.open_pairing(LOOPBACK);
        // The test's desktop stands in for its person: it confirms the phone's pending pairing
        // (the phone says the codes match on its side).
        let person = link.clone();
        tokio::spawn(async move {
            for _ in 0..12_000 {
                if let Some(p) = person.pending_pairing() {
                    let _ = person.confirm_pairing(&p.id, true);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        println!(
            "DESK {} {} {}",
            link.local_addr().unwrap(),
            link.identity().cert_fingerprint(),
            invite.code
        );
        tokio::time::sleep(Duration::from_secs(120)).await;
    });
}

/// A desktop process, killed when dropped (a failing test leaves none behind).
struct Desk {
    child: Child,
    addr: SocketAddr,
    fp: String,
    code: String,
}

impl Desk {
    fn start(dir: &Path) -> Desk {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "desk_process",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DESK_DIR, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().take(1000) {
                let Ok(line) = line else { return };
                // libtest may print "test desk_process ... " on the same line first.
                if let Some(at) = line.find("DESK ") {
                    let _ = tx.send(line[at + 5..].to_string());
                }
            }
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(l) => l,
            Err(e) => {
                let _ = child.kill();
                panic!("the desktop process did not say where it listens: {e}");
            }
        };
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 3, "desktop said {line:?}");
        Desk {
            addr: parts[0].parse().unwrap(),
            fp: parts[1].to_string(),
            code: parts[2].to_string(),
            child,
        }
    }

    /// SIGKILL, and wait until the process is gone.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the phone sent and not yet saw acknowledged, in send order: (message id, dial id, text).
#[derive(Default)]
struct Phone {
    outbox: VecDeque<(String, String, String)>,
    acked: HashSet<String>,
    sent: u64,
    acks: u64,
}

impl Phone {
    /// A `control.ack` drops every message up to and including `last_id` (an unknown id is
    /// ignored, as the protocol says).
    fn on_frame(&mut self, text: &str) {
        let v: Value = serde_json::from_str(text).unwrap();
        if v["type"] != "control.ack" {
            return;
        }
        let Some(last) = v["payload"]["last_id"].as_str() else {
            return;
        };
        if let Some(pos) = self.outbox.iter().position(|(id, _, _)| id == last) {
            self.acks += 1;
            for (_, dial_id, _) in self.outbox.drain(..=pos) {
                assert!(self.acked.insert(dial_id), "a dial acknowledged twice");
            }
        }
    }

    fn new_dial(&mut self, me: &PhoneIdentity) -> String {
        self.sent += 1;
        let n = self.sent;
        let dial_id = format!("dial-{n}");
        // Now: a dial past its retention would be pruned when the desktop starts again.
        let start = SystemClock.now_ms();
        let payload = json!({
            "seq": n, "dedup": &dial_id,
            "call_id": format!("c{n}"), "caller": "lumiagent", "callee": "lumirealm",
            "endpoint": "lumirealm.phoneline", "op": "describe",
            "request": {"op": "describe", "callId": format!("c{n}")},
            "started_at": rfc3339_ms(start), "duration_ms": 3, "outcome": "ok",
            "response": {"name": "LumiRealm"}
        });
        let mut v = envelope("event.phoneline.dial", Some(&me.entity_id()), payload);
        v["session"] = json!(SESSION);
        v["device"] = json!(me.device_id());
        v["generation"] = json!(1);
        v["provenance"] =
            json!({"sensor": format!("{}:phoneline", me.device_id()), "captured_at": v["ts"]});
        v["labels"] = json!({"consent": "product_operation", "retention": "standard"});
        let text = v.to_string();
        self.outbox
            .push_back((v["id"].as_str().unwrap().to_string(), dial_id, text.clone()));
        text
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

async fn connect(desk: &Desk, me: &PhoneIdentity) -> Ws {
    let mut c = PhoneClient::connect(desk.addr, &desk.fp).await.unwrap();
    c.pair(me, &desk.code, vec![], switchboard::app_info::IFP_RANGE)
        .await
        .expect("pairing succeeds");
    // Frames read while pairing (an ack right after hello) count too.
    c.into_ws()
}

/// Reads what is already there (acks), without waiting. False once the connection is gone.
fn read_ready(ws: &mut Ws, phone: &mut Phone) -> bool {
    for _ in 0..10_000 {
        match ws.next().now_or_never() {
            None => return true,
            Some(Some(Ok(Message::Text(t)))) => phone.on_frame(&t),
            Some(Some(Ok(Message::Close(_)) | Err(_)) | None) => return false,
            Some(Some(Ok(_))) => {}
        }
    }
    true
}

/// Resends the outbox, then streams new dials until `kill_after` has passed (then SIGKILLs the
/// desktop and reads whatever was still on its way).
async fn stream_until_killed(
    desk: &mut Desk,
    me: &PhoneIdentity,
    phone: &mut Phone,
    kill_after: Duration,
) {
    let mut ws = connect(desk, me).await;
    let replay: Vec<String> = phone.outbox.iter().map(|(_, _, t)| t.clone()).collect();
    let kill_at = Instant::now() + kill_after;
    let mut alive = true;
    for chunk in replay.chunks(BURST) {
        for t in chunk {
            alive &= ws.feed(Message::text(t.clone())).await.is_ok();
        }
        alive &= ws.flush().await.is_ok();
        alive &= read_ready(&mut ws, phone);
        assert!(alive, "the desktop went away before the kill");
    }
    let first = phone.sent;
    while Instant::now() < kill_at && phone.sent - first < MAX_NEW_PER_RUN {
        for _ in 0..BURST {
            let t = phone.new_dial(me);
            alive &= ws.feed(Message::text(t)).await.is_ok();
        }
        alive &= ws.flush().await.is_ok();
        alive &= read_ready(&mut ws, phone);
        assert!(alive, "the desktop went away before the kill");
    }
    let unacked = phone.outbox.len();
    desk.kill();
    // What the desktop wrote before it died may still be readable.
    let drain_end = Instant::now() + Duration::from_secs(5);
    for _ in 0..100_000 {
        match tokio::time::timeout_at(drain_end, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => phone.on_frame(&t),
            Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) | Err(_) => break,
            Ok(Some(Ok(_))) => {}
        }
    }
    eprintln!(
        "killed after {kill_after:?}: {} dials sent, {} unacknowledged at the kill, {} after",
        phone.sent,
        unacked,
        phone.outbox.len()
    );
}

/// Stored dial ids with how often each is in the file, read as the next start reads it: the
/// file opened by the dial store, which first moves the batches a flood committed to the
/// journal into rows (a kill can leave them there).
fn stored(dir: &Path) -> HashMap<String, u64> {
    let (conn, _) = switchboard::dials::store::open(&dir.join("dials")).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, count(*) FROM dials GROUP BY id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?)))
        .unwrap();
    rows.map(|r| r.unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dial_acknowledged_before_a_sigkill_is_stored_once() {
    let seed: u64 = std::env::var("DURABLE_ACKS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("DURABLE_ACKS_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let me = PhoneIdentity::generate("kill test phone");
    let mut phone = Phone::default();
    for _ in 0..KILLS {
        let mut desk = Desk::start(dir.path());
        let kill_after = Duration::from_millis(rng.gen_range(150..700));
        stream_until_killed(&mut desk, &me, &mut phone, kill_after).await;
        // Everything acknowledged so far is in the file, once (read with the desktop dead).
        let rows = stored(dir.path());
        for id in &phone.acked {
            assert_eq!(
                rows.get(id),
                Some(&1),
                "dial {id} was acknowledged before the kill but is stored {:?} times",
                rows.get(id)
            );
        }
    }
    // A last start: the outbox is resent and acknowledged in full; nothing new is sent.
    let mut desk = Desk::start(dir.path());
    let mut ws = connect(&desk, &me).await;
    let replay: Vec<String> = phone.outbox.iter().map(|(_, _, t)| t.clone()).collect();
    for t in replay {
        ws.feed(Message::text(t)).await.unwrap();
    }
    ws.flush().await.unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !phone.outbox.is_empty() {
        match tokio::time::timeout_at(end, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => phone.on_frame(&t),
            Ok(Some(Ok(_))) => {}
            other => panic!(
                "{} dials still unacknowledged after the last start: {other:?}",
                phone.outbox.len()
            ),
        }
    }
    desk.kill();
    let rows = stored(dir.path());
    assert_eq!(
        phone.acked.len() as u64,
        phone.sent,
        "every dial sent was acknowledged"
    );
    for id in &phone.acked {
        assert_eq!(
            rows.get(id),
            Some(&1),
            "dial {id} stored {:?} times",
            rows.get(id)
        );
    }
    assert_eq!(
        rows.len() as u64,
        phone.sent,
        "no dial stored that the phone did not send"
    );
    eprintln!(
        "{} dials, {} acknowledgements, {KILLS} kills: every acknowledged dial stored once",
        phone.sent, phone.acks
    );
}
