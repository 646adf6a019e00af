//! Fuzz targets: one function per input reader, each taking the raw bytes a phone, a file or a
//! person could hand it.
//!
//! Why here and not in the fuzz crate: the coverage-guided fuzzer (`fuzz/`, AFL++ through the
//! `afl` crate, run by `scripts/fuzz.sh TARGET EXECS`) and the plain test that replays the seed
//! corpus and every crasher found (`tests/protocol/fuzz_seeds.rs`, part of `cargo test`, so CI replays
//! them without AFL) must call the very same functions, and some targets need crate-private
//! seams (a hub fed without a socket). Nothing else in the app calls them.
//!
//! Contract of every target: it never panics on any input. A panic is a finding: either the
//! reader panicked on bad input (a bug: bad input gets a clear error, never a panic) or one of
//! the invariants the target checks with `assert!` failed (a differential or round-trip
//! disagreement, also a bug). Inputs are bounded by the fuzzer (AFL's default 1 MiB at most);
//! the targets add no bound of their own except where the app has one (a frame's 1 MiB cap is
//! the validator's).
//!
//! [`TARGETS`] lists them by the name `scripts/fuzz.sh` and the seed folders
//! (`fuzz/seeds/<name>/`) use.

use std::io::Cursor;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use switchboard_app::hub::{Hub, HubParts};
use switchboard_dials::log::{DialLog, DialLogConfig};
use switchboard_dials::DialFilter;
use switchboard_domain::bridge::store::BridgeStatusStore;
use switchboard_domain::confirmations::ConfirmationMirror;
use switchboard_domain::phone_events::{DialFrame, PhoneEvent};
use switchboard_link::phone::scenario::{Resolver, Scenario, Sender};
use switchboard_link::{LinkEvent, MessageCredit};
use switchboard_wire::ifp::{validate_frame, Receiver, Timestamp};

/// A fuzz target: takes any bytes, panics only on a finding (module doc).
pub type Target = fn(&[u8]);

/// Every target, by name: the name is the seed folder `fuzz/seeds/<name>/`, the AFL binary
/// `fuzz_<name>` and the argument of `scripts/fuzz.sh`.
pub const TARGETS: &[(&str, Target)] = &[
    ("ifp_frame", ifp_frame),
    ("dial_shortcut", dial_shortcut),
    ("host_error", host_error),
    ("surface_manifest", surface_manifest),
    ("runtime_manifest", runtime_manifest),
    ("pairings", pairings),
    ("scenario", scenario),
    ("jsonl_import", jsonl_import),
    ("link_after_hello", link_after_hello),
];

/// The target named `name` ([`TARGETS`]).
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The device id the fuzzed phone is connected as (links and dial shortcut).
const PHONE: &str = "dev_phone_a1b2";

/// The frame validator and envelope (`crates/wire/src/ifp/validate.rs`, `envelope.rs`): `validate_frame` on
/// the bytes; for an accepted frame, the event rules on it, and its timestamps read back to
/// themselves. Any text is also tried as a timestamp.
pub fn ifp_frame(data: &[u8]) {
    if let Ok(env) = validate_frame(data) {
        for ts in std::iter::once(&env.ts).chain(env.provenance.as_ref().map(|p| &p.captured_at)) {
            let again = Timestamp::parse(ts.as_str());
            assert_eq!(again.as_ref(), Ok(ts), "timestamp does not read back");
        }
        // Events typed: never a panic, whatever the payload.
        let _ = PhoneEvent::from_envelope(&env);
        // The same value validated twice gives the same envelope (no hidden state).
        assert_eq!(validate_frame(data).as_ref(), Ok(&env));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(ts) = Timestamp::parse(text) {
            assert_eq!(Timestamp::parse(ts.as_str()), Ok(ts.clone()));
            assert_eq!(
                Timestamp::from_unix(ts.unix_seconds(), ts.nanos()).map(|t| t.unix_seconds()),
                Some(ts.unix_seconds())
            );
        }
    }
}

/// The dial shortcut against the general path (differential; `tests/protocol/dial_frame.rs` holds the
/// same rule on chosen frames): `DialFrame::parse` gives `Some` only when the general path
/// (`validate_frame`, the device check, `PhoneEvent::from_envelope`, `DialEvent::to_dial`)
/// accepts the frame as a dial from that phone, with the identical record and envelope fields,
/// and the receiver rules on the shortcut's fields give what the receiver gives the envelope.
pub fn dial_shortcut(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let phone: Arc<str> = Arc::from(PHONE);
    let Some(fast) = DialFrame::parse(text, &phone) else {
        return;
    };
    let env = match validate_frame(data) {
        Ok(env) => env,
        Err(r) => panic!("the shortcut took a frame the validator refuses: {r}"),
    };
    assert!(
        env.device.as_deref().map_or(true, |d| d == PHONE),
        "the shortcut took a frame from another device {:?}",
        env.device
    );
    let dial = match PhoneEvent::from_envelope(&env) {
        Ok(PhoneEvent::Dial(d)) => d,
        Ok(_) => panic!(
            "the shortcut took a frame that is not a dial ({})",
            env.r#type
        ),
        Err(e) => panic!("the shortcut took a frame the event rules refuse: {e}"),
    };
    let Some(labels) = env.labels else {
        panic!("the shortcut took an event without labels")
    };
    assert_eq!(
        fast.dial,
        dial.to_dial(
            PHONE,
            env.session.as_deref().unwrap_or(""),
            labels.retention
        ),
        "dial record differs"
    );
    assert_eq!(fast.id, env.id, "id differs");
    assert_eq!(
        Some(&*fast.session),
        env.session.as_deref(),
        "session differs"
    );
    assert_eq!(Some(fast.generation), env.generation, "generation differs");
    assert_eq!(fast.seq, dial.seq, "seq differs");
    for home in [1, fast.generation, fast.generation.saturating_add(1)] {
        let mut whole = Receiver::new(home);
        let mut fields = Receiver::new(home);
        for _ in 0..2 {
            let a = whole.receive(&env, &env.ts);
            let b = fields.receive_event_fields(
                switchboard_domain::phone_events::DIAL_EVENT,
                Some(&*fast.session),
                Some(fast.generation),
                fast.seq,
                &fast.dial.id,
                &env.id,
            );
            assert_eq!(a, b, "receiver outcomes differ (home generation {home})");
        }
    }
}

/// The host-error parser (`crates/domain/src/host_error.rs`) on the bytes as text (lossy UTF-8, as a pasted
/// text would be), and the banner the bridge derives from it.
pub fn host_error(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let e = switchboard_domain::host_error::parse(&text);
    let _ = e.kind_name();
    let _ = e.permission();
    // Parsing is a function of the text.
    assert_eq!(switchboard_domain::host_error::parse(&text), e);
}

/// The manifest and describe loaders of phone lines (`crates/domain/src/phone_line/manifest.rs`): a describe
/// answer read as LumiAgent reads it; for a manifest, its hash equals `manifest_hash` of the
/// raw answer, and its trusted value read again gives the same hash (a stored manifest
/// re-hashes to what was stored).
pub fn surface_manifest(data: &[u8]) {
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = switchboard_domain::phone_line::manifest::normalise(&raw);
    let Ok(m) = switchboard_domain::phone_line::manifest::SurfaceManifest::from_value(raw.clone())
    else {
        return;
    };
    let hash = m.hash();
    assert_eq!(
        switchboard_domain::phone_line::manifest::manifest_hash(&raw)
            .ok()
            .as_ref(),
        Some(&hash)
    );
    let _ = m.excluded_by("a.b");
    let trusted = m.trusted_value();
    match switchboard_domain::phone_line::manifest::SurfaceManifest::from_value(trusted) {
        Ok(again) => assert_eq!(
            again.hash(),
            hash,
            "the trusted value re-hashes differently"
        ),
        Err(e) => panic!("the trusted value of a manifest is not a manifest: {e}"),
    }
}

/// The OpenPhone runtime-protocol manifest loader (`crates/domain/src/runtime/manifest/load.rs`), and the
/// check `switchboard manifest check` prints, which must agree with it.
pub fn runtime_manifest(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = switchboard_domain::runtime::manifest::is_runtime_manifest(&value);
    let loaded = switchboard_domain::runtime::manifest::parse_manifest(&value, "fuzz.json");
    let problems = switchboard_domain::runtime::manifest::check_manifest(&value, "fuzz.json");
    assert_eq!(
        loaded.is_ok(),
        problems.is_empty(),
        "check disagrees with load"
    );
    if let Err(e) = loaded {
        assert!(
            !e.problems().is_empty(),
            "a refused manifest names no problem"
        );
    }
}

/// The pairings reader (`crates/domain/src/phone_line/pairings.rs`), strict and as LumiAgent reads it: the
/// two agree whenever LumiAgent reads records all of the right shape, the strict reader refuses
/// a file with a record LumiAgent keeps with problems, and a file read and written reads back to the
/// same text (writing is a fixed point).
pub fn pairings(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use switchboard_domain::phone_line::pairings::{
        read_as_lumiagent, LumiAgentRead, PairingsFile,
    };
    let strict = PairingsFile::parse(text);
    match read_as_lumiagent(text) {
        // LumiAgent keeps a record of the wrong shape (with its problems in words) where the
        // strict reader refuses the file: the two agree on files without such records.
        Ok(LumiAgentRead::Records(f)) if f.records().all(|(_, r)| r.problems().is_empty()) => {
            assert_eq!(strict.as_ref().ok(), Some(&f), "LumiAgent's read differs")
        }
        Ok(LumiAgentRead::Records(f)) => {
            assert!(
                f.records()
                    .flat_map(|(_, r)| r.problems())
                    .all(|p| !p.is_empty()),
                "a problem without words"
            );
            assert!(
                strict.is_err(),
                "strict reads a record LumiAgent finds of the wrong shape"
            );
        }
        Ok(LumiAgentRead::TreatedAsEmpty { reason }) => {
            assert!(!reason.is_empty());
            assert!(
                strict.is_err(),
                "strict reads a file LumiAgent treats as empty"
            );
        }
        Err(_) => assert!(
            strict.is_err(),
            "LumiAgent's read refuses what strict reads"
        ),
    }
    if let Ok(file) = strict {
        let written = file.to_text();
        match PairingsFile::parse(&written) {
            Ok(again) => assert_eq!(again.to_text(), written, "not a fixed point"),
            Err(e) => panic!("a written pairings file does not read back: {e}"),
        }
    }
}

/// The scenario reader (`crates/link/src/phone/scenario.rs`): parse, then resolve every line once as the
/// reference phone does (placeholders, filled fields, params_hash); a resolved frame is JSON.
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(s) = Scenario::parse(text) else {
        return;
    };
    let sender = Sender {
        device: PHONE.into(),
        entity: "ent_phone0a1b2c3d".into(),
    };
    let mut r = Resolver::new(&s, sender, "fuzz", 1_784_595_600_000, 1);
    let total = r.total();
    let mut n = 0u64;
    while let Some(frame) = r.next_frame() {
        n += 1;
        assert!(n <= total, "the resolver gave more frames than it said");
        if let Ok(f) = frame {
            assert!(
                serde_json::from_str::<Value>(&f.text).is_ok(),
                "a resolved frame is not JSON"
            );
        }
    }
    assert_eq!(n, total, "the resolver gave fewer frames than it said");
}

/// JSON Lines import (`crates/dials/src/jsonl.rs`): parse; imported dials exported and imported again
/// are the same dials.
pub fn jsonl_import(data: &[u8]) {
    let path = Path::new("fuzz.jsonl");
    let Ok(dials) = switchboard_dials::jsonl::parse_jsonl(Cursor::new(data), path) else {
        return;
    };
    let dials: Vec<Arc<switchboard_dials::Dial>> = dials.into_iter().map(Arc::new).collect();
    let mut out = Vec::new();
    if let Err(e) = switchboard_dials::jsonl::write_jsonl(&dials, &mut out) {
        panic!("export into memory failed: {e}");
    }
    match switchboard_dials::jsonl::parse_jsonl(Cursor::new(&out), path) {
        Ok(again) => {
            assert_eq!(again.len(), dials.len());
            for (a, b) in again.iter().zip(&dials) {
                assert_eq!(a, &**b, "a dial changed through export and import");
            }
        }
        Err(e) => panic!("an export does not import: {e}"),
    }
}

/// A tokio runtime for the hub target, made once per process (`None`: it could not be made,
/// and the target does nothing).
fn runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .ok()
    })
    .as_ref()
}

/// The link after hello fed a peer's message sequence, no socket in between: the input split at
/// `\n` is what one paired phone (`dev_phone_a1b2`) sends after a valid hello, each line one text
/// frame. Every frame goes the way the connection sends it (`crates/link/src/connection.rs`): the dial
/// shortcut first, consecutive dials together as one `LinkEvent::Dials`; else the validator,
/// ping and pong answered, the after-hello refusals (`wire::refusal_after_hello`), then one
/// `LinkEvent::Message`. A hub over an in-memory dial log, a bridge-status store and a
/// Confirmations mirror applies them (the receiver state machine, phone events, banners,
/// proposals). Checked: the log holds no more dials than were sent, and the phone's problems
/// stay within their bound.
pub fn link_after_hello(data: &[u8]) {
    let _ = feed_link_after_hello(data);
}

/// What [`link_after_hello`] saw: dial frames the phone sent that reached the hub, and dials
/// the log then held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFeed {
    /// Dial frames delivered to the hub (by the shortcut or as a message).
    pub dials_sent: u64,
    /// Dials held by the dial log at the end (duplicates are held once).
    pub dials_held: u64,
}

/// [`link_after_hello`], telling what it fed (`None` when no runtime or dial log could be
/// made, which does not happen).
pub fn feed_link_after_hello(data: &[u8]) -> Option<LinkFeed> {
    runtime()?.block_on(feed_hub(data))
}

async fn feed_hub(data: &[u8]) -> Option<LinkFeed> {
    // One clock for the log and the hub, fixed so a fuzz case replays the same way.
    let clock: Arc<dyn switchboard_wire::clock::Clock> =
        Arc::new(switchboard_wire::clock::ManualClock::new(1_784_595_600_000));
    let config = DialLogConfig {
        capacity: 4096,
        prune_interval: None,
        clock: Arc::clone(&clock),
        ..DialLogConfig::default()
    };
    let log = DialLog::spawn(config).ok()?;
    let mut parts = HubParts::new(
        log.clone(),
        Arc::new(Mutex::new(BridgeStatusStore::new())),
        None,
        clock,
    );
    parts.confirmations = Some(Arc::new(Mutex::new(mirror())));
    let hub = Hub::new(parts);
    hub.apply(LinkEvent::PhoneConnected {
        device_id: PHONE.into(),
        label: "fuzz".into(),
        address: "127.0.0.1:1".into(),
        version: 1,
    })
    .await;
    let phone: Arc<str> = Arc::from(PHONE);
    let mut dials = Vec::new();
    let mut sent_dials = 0u64;
    for line in data.split(|b| *b == b'\n') {
        // A WebSocket text frame is UTF-8; anything else is a binary frame, refused.
        let Ok(text) = std::str::from_utf8(line) else {
            continue;
        };
        if let Some(frame) = DialFrame::parse(text, &phone) {
            dials.push(frame);
            sent_dials += 1;
            continue;
        }
        flush_dials(&hub, &mut dials).await;
        let Ok(env) = validate_frame(line) else {
            continue;
        };
        if matches!(env.r#type.as_str(), "control.ping" | "control.pong") {
            continue;
        }
        if switchboard_link::refusal_after_hello(&env, PHONE).is_some() {
            continue;
        }
        if env.r#type == switchboard_domain::phone_events::DIAL_EVENT {
            sent_dials += 1;
        }
        let credit = MessageCredit::detached()?;
        hub.apply(LinkEvent::Message {
            device_id: PHONE.into(),
            envelope: Box::new(env),
            credit,
        })
        .await;
    }
    flush_dials(&hub, &mut dials).await;
    let held = log
        .query(DialFilter::default())
        .await
        .map(|p| p.total)
        .unwrap_or(0);
    assert!(held <= sent_dials, "{held} dials held, {sent_dials} sent");
    if let Some(view) = hub.phone(PHONE) {
        assert!(view.problems.len() <= switchboard_app::hub::MAX_PROBLEMS);
    }
    let _ = log.shutdown().await;
    Some(LinkFeed {
        dials_sent: sent_dials,
        dials_held: held,
    })
}

async fn flush_dials(hub: &Hub, dials: &mut Vec<DialFrame>) {
    if dials.is_empty() {
        return;
    }
    let Some(credit) = MessageCredit::detached() else {
        dials.clear();
        return;
    };
    hub.apply(LinkEvent::Dials {
        device_id: PHONE.into(),
        frames: std::mem::take(dials),
        credit,
    })
    .await;
}

/// A Confirmations mirror with the bundled tool list (read once per process).
fn mirror() -> ConfirmationMirror {
    static CATALOGUE: OnceLock<Option<switchboard_domain::runtime::ToolCatalogue>> =
        OnceLock::new();
    let catalogue = CATALOGUE
        .get_or_init(|| switchboard_domain::confirmations::bundled_catalogue().ok())
        .clone();
    ConfirmationMirror::new(catalogue)
}
