//! switchboard-tap (the npm package in `tap/`) under Bun, the Lumiverse host's runtime, against the
//! real link on loopback: the package is built with its own `tsc`, then `tap/test/drive-link.ts`
//! (a fake host whose extension storage is a temp folder) pairs from the pairing link in the
//! pinned hello binding, fetching the desktop's certificate first (this test is the person on the
//! desktop: it confirms the pending pairing and checks both screens show the same verification
//! code), streams 1 000 wrapped LumiRealm
//! calls through a fake host (some failing with the host's permission errors, some refused
//! `not authorised`, some `{ok: false}` tool errors), and is cut halfway: a TCP relay between
//! the tap and the link drops every connection and refuses new ones for a while, during which
//! the tap keeps queueing, then lets it back. At the end the desktop's dial log holds each of
//! the 1 000 dials exactly once, each as the plan says (`tap/test/plan.ts`), and the bridge
//! shows the right banner for the tap's phone.
//!
//! Needs Node 20+ (for `tsc`) and `tap/node_modules` with its `bun` (`bash scripts/install-deps.sh`
//! runs `npm ci` in `tap/`); without them the test fails saying so. Every loop is bounded in count and time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::confirm;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use std::io::{BufRead as _, Write as _};
use std::process::{Child, Command};
use switchboard::bridge::store::BridgeStatusStore;
use switchboard::dials::{DialFilter, DialLog, DialLogConfig, DialOutcome};
use switchboard::hub::{Hub, HubParts};
use switchboard::link::{bind, DesktopIdentity, Link, LinkConfig, MemoryStore};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedReceiver;

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const CALLS: usize = 1000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the package with its own TypeScript (offline), failing loudly when it cannot.
/// Builds the package once per test process (the Node and Bun tests share the build; two
/// `tsc` runs at once would write `dist/` under each other).
fn build_tap() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_tap_now).clone()
}

fn build_tap_now() -> PathBuf {
    let tap = repo().join("tap");
    let tsc = tap.join("node_modules/typescript/bin/tsc");
    assert!(
        tsc.exists(),
        "{} is missing: run `bash scripts/install-deps.sh` (npm ci in tap/) first",
        tsc.display()
    );
    let out = std::process::Command::new("node")
        .arg(&tsc)
        .args(["-p", "tsconfig.json"])
        .current_dir(&tap)
        .output()
        .expect("node is not installed: switchboard-tap needs Node 20+");
    assert!(
        out.status.success(),
        "tsc in tap/ failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    tap
}

/// A TCP relay on loopback in front of the link: `cut()` drops every relayed connection and
/// makes new ones fail at once until `restore()` (the desktop "away").
#[derive(Clone)]
struct Relay {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    gen: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind((LOOPBACK, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let (gen, _) = tokio::sync::watch::channel(0u64);
        let relay = Relay {
            addr,
            up,
            gen: Arc::new(gen),
        };
        let r = relay.clone();
        tokio::spawn(async move {
            for _ in 0..10_000 {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if !r.up.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let mut cut = r.gen.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        relay
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.gen.send_modify(|g| *g += 1);
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

/// What the plan (`tap/test/plan.ts`) says call `i` of `n` ends as: (caller, op, outcome,
/// error text).
fn planned(i: usize, n: usize) -> (&'static str, &'static str, DialOutcome, Option<String>) {
    let caller = if i % 10 == 3 {
        "lumiweather"
    } else {
        "lumiagent"
    };
    let revoked = (400..450).contains(&i) || i >= n - 10;
    let op = if i == 0 {
        "describe"
    } else {
        match i % 4 {
            0 => "list_items",
            1 => "read_item",
            2 => "write_field",
            _ => "grep_items",
        }
    };
    if caller == "lumiweather" && !revoked {
        // Refused before the handler read its request: the tap read the published request
        // itself, so the dial still has its op and call id.
        return (
            caller,
            op,
            DialOutcome::Error,
            Some("not authorised".into()),
        );
    }
    if caller == "lumiweather" {
        // ... unless the host refuses that read too (LumiRealm lacks `characters`).
        return (
            caller,
            "unknown",
            DialOutcome::Error,
            Some("not authorised".into()),
        );
    }
    if revoked {
        return (
            caller,
            "unknown",
            DialOutcome::Error,
            Some(
                "could not read pending request from lumiagent: Shared RPC endpoint \
                 \"lumiagent.phoneline_request\" requires requester \"lumirealm\" permissions: characters"
                    .into(),
            ),
        );
    }
    if op == "write_field" && i % 8 == 2 {
        return (caller, op, DialOutcome::ToolError, None);
    }
    (caller, op, DialOutcome::Ok, None)
}

/// The node process, killed when dropped (a failing test leaves none behind).
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn read_line(
    lines: &mut UnboundedReceiver<String>,
    want: &str,
    seen: &mut Vec<String>,
) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for _ in 0..100_000 {
        let next = tokio::time::timeout_at(deadline, lines.recv())
            .await
            .unwrap_or_else(|_| {
                panic!("no {want} line from the tap within 60 s; it said: {seen:#?}")
            });
        let Some(line) = next else {
            panic!("the tap ended before {want}; it said: {seen:#?}");
        };
        seen.push(line.clone());
        if let Some(rest) = line.strip_prefix(want) {
            return rest.trim().to_string();
        }
    }
    panic!("no {want} line in 100 000 lines");
}

/// The journey under Bun, the runtime of Lumiverse's extensions (`bun` is a dev dependency of
/// `tap/`, installed by `npm ci` there from the npm registry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tap_under_bun_pairs_streams_is_cut_and_replays_each_dial_once() {
    let bun = repo().join("tap/node_modules/.bin/bun");
    assert!(
        bun.exists(),
        "{} is missing: run bash scripts/install-deps.sh (npm ci in tap/)",
        bun.display()
    );
    drive(&bun, "tap/node_modules/.bin/bun did not start").await;
}

/// Pairs, streams, cuts and checks as the module doc says, with the tap run by `runtime`.
async fn drive(runtime: &Path, missing: &str) {
    let tap_dir = build_tap();
    let dir = tempfile::tempdir().unwrap();
    let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
    let mut cfg = LinkConfig::new(dir.path().join("link"));
    cfg.mdns = false;
    // One clock for the desktop: the hub judges time by the link's.
    let clock = Arc::clone(&cfg.clock);
    let (link, events) = Link::new(identity, cfg).unwrap();
    let listener = bind(LOOPBACK, 0).await.unwrap();
    let link_addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(link.clone().run(listener, async {
        let _ = stop_rx.await;
    }));
    let dials = DialLog::spawn(DialLogConfig {
        data_dir: Some(dir.path().join("dials")),
        ..DialLogConfig::default()
    })
    .unwrap();
    let bridge = Arc::new(Mutex::new(BridgeStatusStore::new()));
    let hub = Hub::new(HubParts::new(
        dials.clone(),
        bridge.clone(),
        Some(link.clone()),
        clock,
    ));
    tokio::spawn(hub.clone().run(events));
    let relay = Relay::start(link_addr).await;

    // The pairing link as the desktop shows it, pointing at the relay.
    let invite = link.open_pairing(LOOPBACK);
    let fp = link.identity().cert_fingerprint().to_string();
    let pairing_link = format!(
        "switchboard://pair?addr=127.0.0.1&port={}&code={}&fp={fp}",
        relay.addr.port(),
        invite.code.replace('-', "")
    );
    let person = confirm::confirm_when_pending(link.clone(), Duration::from_secs(60));

    let storage = dir.path().join("tap-storage");
    let mut child = Node(
        Command::new(runtime)
            .arg(tap_dir.join("dist/test/drive-link.js"))
            .arg(&pairing_link)
            .arg(&storage)
            .arg(CALLS.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect(missing),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let out = child.0.stdout.take().unwrap();
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().take(100_000) {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();

    // Pairing: the tap's code is the one the desktop shows; nothing trusted before both confirm.
    let code = read_line(&mut lines, "CODE", &mut seen).await;
    let pending = person
        .await
        .unwrap()
        .expect("the desktop had a pending pairing to confirm");
    assert_eq!(
        pending.verification_code, code,
        "both screens show one code"
    );
    let device = read_line(&mut lines, "PAIRED", &mut seen).await;
    assert_eq!(pending.device_id, device);
    let phone = link
        .paired_phones()
        .into_iter()
        .find(|p| p.device_id == device)
        .expect("the tap is paired");
    assert_eq!(
        phone.binding,
        switchboard::link::HelloBinding::Pinned,
        "recorded with the binding the tap asked for"
    );
    // The tap's own record: the pinned binding, and its key in the enclave, not in storage.
    let stored: Value =
        serde_json::from_str(&read_line(&mut lines, "STORED", &mut seen).await).unwrap();
    assert_eq!(stored["binding"], "pinned", "{stored}");
    assert_eq!(stored["seedInStorage"], false, "{stored}");
    let on_disk =
        std::fs::read_to_string(storage.join("lumirealm/storage/switchboard-tap/state.json"))
            .expect("the tap's state is in its extension storage folder");
    assert!(on_disk.contains(&fp), "the pinned fingerprint is stored");

    // Halfway: cut the link, keep it away while the tap queues the second half, then let it back.
    let half = read_line(&mut lines, "HALF", &mut seen).await;
    assert_eq!(half, (CALLS / 2 + 1).to_string());
    relay.cut();
    stdin.write_all(b"go\n").unwrap();
    stdin.flush().unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    relay.restore();

    let done: Value =
        serde_json::from_str(&read_line(&mut lines, "DONE", &mut seen).await).unwrap();
    let mut status = None;
    for _ in 0..300 {
        status = child.0.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = status.expect("the tap did not exit within 30 s");
    assert!(status.success(), "the tap failed: {done} {seen:#?}");
    assert_eq!(done["drained"], true, "{done}");
    assert_eq!(done["queued"], 0, "{done}");
    // The handler's results reached the fake LumiAgent unchanged: thrown errors stayed thrown.
    let thrown = (0..CALLS)
        .filter(|&i| planned(i, CALLS).2 == DialOutcome::Error)
        .count();
    assert_eq!(done["thrown"], thrown as u64, "{done}");
    assert_eq!(done["ok"], (CALLS - thrown) as u64, "{done}");
    let connects: Vec<&String> = seen
        .iter()
        .filter(|l| l.contains("\"kind\":\"connected\""))
        .collect();
    assert!(
        connects.len() >= 2,
        "the tap reconnected after the cut: {seen:#?}"
    );
    assert!(
        done["replayed"].as_u64().unwrap() > 0,
        "the tap replayed its outbox after the cut: {done}"
    );

    // Each dial held once, as planned.
    dials.flush().await.unwrap();
    let page = dials.query(DialFilter::default()).await.unwrap();
    assert_eq!(page.dials.len(), CALLS, "one dial per call, none twice");
    // A call whose handler failed before reading its request has no call id (the tap never
    // saw the request): those are checked by their count per error text.
    let mut by_call: HashMap<usize, usize> = HashMap::new();
    let mut unread: HashMap<(String, Option<String>), usize> = HashMap::new();
    for d in &page.dials {
        assert_eq!(&*d.phone, device.as_str());
        assert_eq!(&*d.callee, "lumirealm");
        assert_eq!(&*d.endpoint, "lumirealm.phoneline");
        if d.call_id.is_empty() {
            assert_eq!(&*d.op, "unknown", "{d:?}");
            assert_eq!(d.outcome, DialOutcome::Error, "{d:?}");
            assert_eq!(d.request.as_str(), "null", "{d:?}");
            *unread
                .entry((d.caller.to_string(), d.error.as_deref().map(str::to_string)))
                .or_default() += 1;
            continue;
        }
        let i: usize = d
            .call_id
            .strip_prefix("pl_tap_")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a dial with call id {:?}", d.call_id));
        *by_call.entry(i).or_default() += 1;
        let (caller, op, outcome, error) = planned(i, CALLS);
        assert_eq!(&*d.caller, caller, "call {i}");
        assert_eq!(&*d.op, op, "call {i}");
        assert_eq!(d.outcome, outcome, "call {i}: {d:?}");
        assert_eq!(d.error.as_deref(), error.as_deref(), "call {i}");
        let req = d.request.to_value().unwrap();
        assert_eq!(req["op"], op, "call {i}: the request the handler read");
        assert_eq!(req["callId"], d.call_id.as_ref(), "call {i}");
        if outcome == DialOutcome::ToolError {
            let r = d.response.as_ref().unwrap().to_value().unwrap();
            assert_eq!(
                r["error"],
                "[REFUSED_BY_EXTENSION] source is a frozen snapshot; edit lore instead"
            );
        }
        if i == 0 {
            let r = d.response.as_ref().unwrap().to_value().unwrap();
            assert_eq!(r["extension"]["name"], "LumiRealm");
        }
    }
    let mut want_unread: HashMap<(String, Option<String>), usize> = HashMap::new();
    let mut read = 0;
    for i in 0..CALLS {
        let (caller, op, _, error) = planned(i, CALLS);
        if op == "unknown" {
            *want_unread.entry((caller.to_string(), error)).or_default() += 1;
        } else {
            read += 1;
        }
    }
    assert_eq!(
        unread, want_unread,
        "the calls refused before reading their request"
    );
    assert_eq!(
        by_call.len(),
        read,
        "every call that read its request, once"
    );
    assert!(by_call.values().all(|&n| n == 1));

    // The banner: the last calls failed with LumiRealm missing `characters`, which its settings
    // declare, on the path lumiagent → lumirealm.phoneline of this tap's phone.
    let snap = bridge.lock().unwrap().snapshot();
    let mine: Vec<_> = snap.banners.iter().filter(|b| b.phone == device).collect();
    assert_eq!(mine.len(), 1, "{:#?}", snap.banners);
    let b = mine[0];
    assert_eq!(b.id, format!("{device}|lumiagent>lumirealm.phoneline"));
    assert_eq!(b.missing_extension, "lumirealm");
    assert_eq!(b.grantable, vec!["characters".to_string()]);
    assert!(
        b.manifest_checked,
        "checked against the permissions the tap's settings declare"
    );
    assert_eq!(
        b.message,
        "LumiRealm is missing characters, required for LumiAgent communication."
    );
    // The revoked window in the middle raised the same banner and a later ok call cleared it.
    assert!(
        snap.history
            .iter()
            .any(|r| r.banner.id == b.id && r.banner.serial < b.serial),
        "{:#?}",
        snap.history
    );
    // The describe answer arrived as the line's settings.
    let phone = hub
        .phones()
        .into_iter()
        .find(|p| p.device_id == device)
        .expect("the hub knows the tap's phone");
    assert!(
        phone.settings_at.is_some(),
        "a settings snapshot was applied"
    );
    assert_eq!(phone.dials, CALLS as u64, "the hub counted each dial once");
    assert!(
        phone.problems.is_empty(),
        "nothing of the tap was refused: {:?}",
        phone.problems
    );
    let _ = stop_tx.send(());
}
