//! Putting a bundle together: from the running [`App`]'s state ([`from_app`]) or, when the app
//! is not running, from its files ([`from_files`]). Both make the same files (see the
//! [module docs](super)), so the same views open either.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::redact::{redact_values, scrub_text};
use super::{BundleError, BundleFile, BundleOptions, BundleSource, SupportBundle};
use super::{LOG_DAYS, LOG_FILE_PREFIX, MAX_DIALS};
use crate::phone_lines::{registry_from_settings, snapshot_of, LineSource};
use crate::phones::{key_fp, PhoneStatus, PhonesSnapshot};
use crate::{App, AppPaths};
use switchboard_dials::{Dial, DialFilter, JsonText};
use switchboard_domain::bridge::store::{BridgeSnapshot, BridgeStatusStore};
use switchboard_domain::confirmations::{ConfirmationMirror, ConfirmationsSnapshot};
use switchboard_domain::settings::Settings;

const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// JSON keys whose string values are public identifiers or hashes the support side needs
/// (fingerprints, public keys, hashes): left as they are when free text is scrubbed.
const KEEP_KEYS: &[&str] = &[
    "public_key",
    "cert_fingerprint",
    "key_fingerprint",
    "sha256",
    "manifestHash",
    "manifest_hash",
    "current_manifest_hash",
    "given",
    "computed",
];

fn build(e: serde_json::Error) -> BundleError {
    BundleError::Build(e.to_string())
}

/// `value` with every string [`scrub_text`]ed, except under [`KEEP_KEYS`].
pub fn scrub_strings(value: &mut Value) {
    match value {
        Value::String(s) => {
            let clean = scrub_text(s);
            if clean != *s {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_strings),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if !KEEP_KEYS.contains(&k.as_str()) {
                    scrub_strings(v);
                }
            }
        }
        _ => {}
    }
}

fn json_file<T: serde::Serialize>(
    name: &str,
    purpose: &str,
    value: &T,
) -> Result<BundleFile, BundleError> {
    let mut v = serde_json::to_value(value).map_err(build)?;
    scrub_strings(&mut v);
    BundleFile::json(name, purpose, &v).map_err(build)
}

/// `app.json`: versions, the settings, where the files are.
fn app_file(
    settings: &Settings,
    source: BundleSource,
    data_dir: &Path,
) -> Result<BundleFile, BundleError> {
    json_file(
        "app.json",
        "The sender's app (name, version, protocol ranges) and OS, the settings in effect, \
         where the app keeps its files, and each time a damaged dial history was moved aside \
         (what was wrong, where it went, how many dials were recovered; newest first).",
        &json!({
            "app": switchboard_wire::app_info::app_info(),
            "os": super::OsInfo::current(),
            "source": source,
            "settings": settings,
            "data_dir": data_dir.display().to_string(),
            "dial_history_recoveries": match switchboard_dials::repair::recoveries(data_dir) {
                Ok(r) => json!(r),
                Err(e) => json!({ "unreadable": e.to_string() }),
            },
        }),
    )
}

/// `phones.json`: the Phones view without the pairing window and the pending pairing.
fn phones_file(snapshot: &PhonesSnapshot) -> Result<BundleFile, BundleError> {
    let mut s = snapshot.clone();
    // The pairing code, its link and QR code, and a pending pairing's verification code never
    // leave.
    s.pairing = None;
    s.pending = None;
    json_file(
        "phones.json",
        "The Phones view: each paired phone's label, device id, pinned key and its fingerprint, \
         paired and last seen times, last address, whether it was connected and with which \
         protocol version, how the last pairing ended, and the link diagnostics. The pairing \
         window and any pending pairing are left out (their codes are secrets).",
        &s,
    )
}

/// `link.json`: the link diagnostics.
fn link_file(snapshot: &PhonesSnapshot) -> Result<BundleFile, BundleError> {
    json_file(
        "link.json",
        "The link diagnostics: the port and the addresses per interface, mDNS state, the \
         desktop's certificate fingerprint and device id, connections without hello, and the \
         recent failures with their causes and what to do; or why the link was not running.",
        &json!({
            "link_error": snapshot.link_error,
            "diagnostics": snapshot.diagnostics,
        }),
    )
}

fn banners_file(snapshot: &BridgeSnapshot) -> Result<BundleFile, BundleError> {
    json_file(
        "banners.json",
        "The Bridge view: the banners raised now (which permission is missing for which call, \
         the fix, the error text), the retired ones, and failures that raised no banner.",
        snapshot,
    )
}

fn phone_lines_file(shown: &Value, phones: Vec<Value>) -> Result<BundleFile, BundleError> {
    json_file(
        "phone-lines.json",
        "The Phone lines view as shown (`shown`), and each phone's phone-line settings \
         (`phones`): its registry of known lines, its pairing records as LumiAgent reads them, \
         and each line's declared permissions and last describe (its manifest).",
        &json!({ "shown": shown, "phones": phones }),
    )
}

/// `confirmations.json`, parameter values (and phone-action card values) redacted unless
/// `include_params`.
fn confirmations_file(
    snapshot: &ConfirmationsSnapshot,
    autonomy: &[Value],
    include_params: bool,
) -> Result<BundleFile, BundleError> {
    let mut v = serde_json::to_value(snapshot).map_err(build)?;
    if !include_params {
        for list in ["waiting", "ended"] {
            if let Some(items) = v.get_mut(list).and_then(Value::as_array_mut) {
                items.iter_mut().for_each(redact_confirmation);
            }
        }
    }
    let purpose = if include_params {
        "The Confirmations view: every proposal's state, timeline, tool and risk, with its \
         parameter values (the sender ticked them in), stray messages, and each phone's \
         autonomy table."
    } else {
        "The Confirmations view: every proposal's state, timeline, tool and risk, stray \
         messages, and each phone's autonomy table. Parameter values are redacted (keys kept, \
         each value replaced by its type)."
    };
    json_file(
        "confirmations.json",
        purpose,
        &json!({ "snapshot": v, "autonomy": autonomy }),
    )
}

fn redact_confirmation(c: &mut Value) {
    if let Some(p) = c.get_mut("params") {
        *p = redact_values(p);
    }
    let fields = c
        .get_mut("phone_action")
        .and_then(|a| a.get_mut("card"))
        .and_then(|card| card.get_mut("fields"))
        .and_then(Value::as_array_mut);
    for f in fields.into_iter().flatten() {
        if let Some(v) = f.get_mut("value") {
            *v = redact_values(v);
        }
        if let Some(d) = f.get_mut("display") {
            *d = Value::String(super::redact::STRING_MARKER.into());
        }
    }
}

/// One dial as a bundle holds it: request and response redacted ([`redact_values`]), error
/// text scrubbed ([`scrub_text`]); everything else (ids, phone, caller, endpoint, op, times,
/// outcome) as it was.
pub fn redact_dial(d: &Dial) -> Dial {
    let redact = |t: &JsonText| match t.to_value() {
        Ok(v) => JsonText::from_value(&redact_values(&v)),
        Err(_) => JsonText::from_value(&Value::String(super::redact::STRING_MARKER.into())),
    };
    Dial {
        request: redact(&d.request),
        response: d.response.as_ref().map(redact),
        error: d.error.as_deref().map(|e| scrub_text(e).into()),
        ..d.clone()
    }
}

/// `dial-conformance.json`: each dial's spec conformance, checked on the values the phone sent
/// (the redacted `dials.jsonl` could not be checked again), by dial id.
fn conformance_file(dials: &[Arc<Dial>]) -> Result<BundleFile, BundleError> {
    let book = switchboard_domain::dial::conformance::ScopeBook::builtin();
    let map: serde_json::Map<String, Value> = dials
        .iter()
        .map(|d| {
            let c = switchboard_domain::dial::conformance::check_dial(d, book);
            Ok((d.id.to_string(), serde_json::to_value(c).map_err(build)?))
        })
        .collect::<Result<_, BundleError>>()?;
    json_file(
        "dial-conformance.json",
        "Each dial's spec conformance (phone-line.md), checked on the values the phone sent \
         before they were redacted: the op's class and each finding with its JSON path and the \
         spec's line, by dial id.",
        &map,
    )
}

fn dials_file(dials: &[Arc<Dial>]) -> Result<BundleFile, BundleError> {
    let redacted: Vec<Arc<Dial>> = dials.iter().map(|d| Arc::new(redact_dial(d))).collect();
    let mut bytes = Vec::new();
    switchboard_dials::jsonl::write_jsonl(&redacted, &mut bytes)
        .map_err(|e| BundleError::Build(e.to_string()))?;
    Ok(BundleFile {
        name: "dials.jsonl".into(),
        purpose: format!(
            "The last {MAX_DIALS} dials at most (JSON Lines, newest first, as a dial export): \
             phone, caller, endpoint, op, times, outcome and error text as they were; request \
             and response values redacted (keys and shapes kept, each value replaced by its \
             type)."
        ),
        bytes,
    })
}

/// The log files of the last [`LOG_DAYS`] days (UTC dates in the name) in `dir`, oldest first,
/// each line scrubbed.
fn log_files(dir: Option<&Path>, now_ms: u64, left_out: &mut Vec<String>) -> Vec<BundleFile> {
    let Some(dir) = dir else {
        left_out.push("log files: this app was not writing log files".into());
        return Vec::new();
    };
    let wanted: Vec<String> = (0..LOG_DAYS)
        .rev()
        .map(|d| {
            let day = switchboard_wire::timefmt::rfc3339_ms(now_ms.saturating_sub(d * DAY_MS));
            format!("{LOG_FILE_PREFIX}{}", &day[..10.min(day.len())])
        })
        .collect();
    let mut out = Vec::new();
    for name in wanted {
        let path = dir.join(&name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let scrubbed: String = text.split_inclusive('\n').map(scrub_text).collect();
                out.push(BundleFile {
                    name: format!("logs/{name}"),
                    purpose: "One day's log file (UTC date in the name), every line scrubbed of \
                              anything that looks like a key, proof, pairing code or link."
                        .into(),
                    bytes: scrubbed.into_bytes(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => left_out.push(format!("log file {}: not read: {e}", path.display())),
        }
    }
    if out.is_empty() {
        left_out.push(format!(
            "log files: none of the last {LOG_DAYS} days in {}",
            dir.display()
        ));
    }
    out
}

/// The autonomy table of each phone named in `phones`, as the Confirmations view asks for it.
fn autonomy_rows(app: &App, phones: impl IntoIterator<Item = String>) -> Vec<Value> {
    let mut seen = std::collections::BTreeSet::new();
    phones
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .filter_map(|p| app.autonomy_table(&p).ok())
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect()
}

/// One phone's phone-line settings as the hub holds them (registry, pairing records, lines with
/// their permissions and last describe).
fn phone_settings_value(
    device_id: &str,
    settings: &switchboard_domain::phone_events::PhoneSettings,
) -> Value {
    let registry: Vec<Value> = settings
        .registry
        .lines()
        .iter()
        .map(|l| json!({ "identifier": l.identifier, "name": l.name }))
        .collect();
    let lines: Vec<Value> = settings
        .lines
        .iter()
        .map(|l| {
            let describe = l.last_describe.as_ref().map(|d| {
                let outcome = match &d.outcome {
                    switchboard_domain::phone_line::pairing::DescribeOutcome::Answered(m) => {
                        json!({ "manifest": m })
                    }
                    switchboard_domain::phone_line::pairing::DescribeOutcome::Failed(e) => {
                        json!({ "error": e })
                    }
                };
                json!({ "at": d.at.as_str(), "outcome": outcome })
            });
            json!({
                "identifier": l.identifier,
                "name": l.name,
                "permissions": l.permissions,
                "last_describe": describe,
            })
        })
        .collect();
    json!({
        "device_id": device_id,
        "registry": registry,
        "pairings": settings.pairings.as_ref().map(|p| p.to_value()),
        "pairings_treated_as_empty": settings.pairings_treated_as_empty,
        "lines": lines,
    })
}

/// A bundle of the running app's state: what its views show now, the last [`MAX_DIALS`] dials of
/// the live log, and the log files of the last [`LOG_DAYS`] days.
///
/// # Errors
/// [`BundleError::Build`] when the dial log cannot be read (it shut down).
pub async fn from_app(app: &App, options: BundleOptions) -> Result<SupportBundle, BundleError> {
    let now_ms = app.config.clock.now_ms();
    let mut left_out = vec![
        "the desktop's private keys and every key-store entry: they never leave the OS key store"
            .to_string(),
        "the pairing window's code, link and QR code, and a pending pairing's verification code"
            .to_string(),
    ];
    let settings = app.get_settings();
    let phones = app.phones.snapshot();
    let bridge = app.bridge_snapshot();
    let confirmations = app.confirmations_snapshot();
    let shown = serde_json::to_value(app.phone_lines_snapshot()).map_err(build)?;
    let (registry, problems) = registry_from_settings(&settings);
    let mut per_phone = Vec::new();
    if let Some(hub) = app.hub() {
        for p in &phones.phones {
            let id = &p.record.device_id;
            let lines = hub.phone(id).map(|v| v.lines).unwrap_or_default();
            let view = snapshot_of(
                &LineSource::Phone {
                    phone: id.clone(),
                    lines,
                },
                &registry,
                problems.clone(),
            );
            per_phone.push(json!({
                "device_id": id,
                "label": p.record.label,
                "view": view,
                "settings": hub.settings(id).map(|s| phone_settings_value(id, &s)),
            }));
        }
    }
    let names = phones
        .phones
        .iter()
        .map(|p| p.record.device_id.clone())
        .chain(
            confirmations
                .waiting
                .iter()
                .chain(&confirmations.ended)
                .map(|c| c.phone.clone()),
        );
    let autonomy = autonomy_rows(app, names);
    let dials = match app.dials() {
        Ok(d) => {
            let filter = DialFilter {
                limit: Some(MAX_DIALS as u64),
                ..DialFilter::default()
            };
            d.log
                .query(filter)
                .await
                .map_err(|e| BundleError::Build(format!("reading the dial log: {e}")))?
                .dials
        }
        Err(e) => {
            left_out.push(format!("dials: {}", e.message));
            Vec::new()
        }
    };
    let mut files = vec![
        app_file(
            &settings,
            BundleSource::RunningApp,
            &app.config.paths.link_dir(app.config.demo),
        )?,
        phones_file(&phones)?,
        link_file(&phones)?,
        banners_file(&bridge)?,
        phone_lines_file(&shown, per_phone)?,
        confirmations_file(&confirmations, &autonomy, options.include_params)?,
        dials_file(&dials)?,
        conformance_file(&dials)?,
    ];
    files.extend(log_files(
        app.config.log_dir.as_deref(),
        now_ms,
        &mut left_out,
    ));
    // Belt and braces: the open pairing window's code and link, should any text hold them.
    if let Some(invite) = app.phones.link().and_then(|l| l.pairing_invite()) {
        forbid(&mut files, &[invite.code.as_str(), invite.link.as_str()]);
    }
    Ok(SupportBundle::assemble(
        files,
        BundleSource::RunningApp,
        app.config.demo,
        options,
        now_ms,
        left_out,
    ))
}

/// Replaces every occurrence of each of `secrets` (at least 4 bytes) in every file.
fn forbid(files: &mut [BundleFile], secrets: &[&str]) {
    for f in files.iter_mut() {
        let Ok(text) = std::str::from_utf8(&f.bytes) else {
            continue;
        };
        let mut t = text.to_string();
        for s in secrets.iter().filter(|s| s.len() >= 4) {
            if t.contains(*s) {
                t = t.replace(*s, "[redacted: secret]");
            }
        }
        if t.as_bytes() != f.bytes.as_slice() {
            f.bytes = t.into_bytes();
        }
    }
}

/// A bundle from the app's files in `paths` (the demo's data folder with `demo`), for when the
/// app is not running: the settings, the paired phones of the trust file (none connected), the
/// newest [`MAX_DIALS`] dials of the dial history, the waiting and ended confirmations kept for
/// the next start ([`switchboard_domain::confirmations::history`]), and the log files of the last
/// [`LOG_DAYS`] days. Banners and the link's diagnostics live in the running app's memory:
/// their files are there, empty, and the manifest says why.
///
/// Only reads: nothing is created or written in `paths` (the dial history is opened read only).
///
/// # Errors
/// [`BundleError::Io`] when the trust file or the dial history exists but cannot be read.
pub fn from_files(
    paths: &AppPaths,
    demo: bool,
    options: BundleOptions,
    now_ms: u64,
) -> Result<SupportBundle, BundleError> {
    let mut left_out = vec![
        "the desktop's private keys and every key-store entry: they never leave the OS key store"
            .to_string(),
        "banners, the link diagnostics and connections: the running app keeps them in memory \
         only, and this bundle was read from the app's files"
            .to_string(),
    ];
    let link_dir = paths.link_dir(demo);
    let settings = match Settings::load(&paths.settings_file()) {
        Ok(s) => s,
        Err(e) => {
            left_out.push(format!("settings: {e} (the defaults are shown)"));
            Settings::default()
        }
    };
    let trust = switchboard_link::trust::TrustFile::in_dir(&link_dir);
    let records = trust.load().map_err(|e| BundleError::Io {
        path: trust.path().display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let phones = PhonesSnapshot {
        demo,
        link_error: Some(
            "This bundle was read from the app's files, not asked of a running app: its \
             connections are not known."
                .into(),
        ),
        phones: records
            .into_iter()
            .map(|record| PhoneStatus {
                clock_skew_ms: None,
                clock_skew: None,
                connected: false,
                address: None,
                protocol_version: None,
                key_fingerprint: key_fp(&record.public_key),
                record,
            })
            .collect(),
        pairing: None,
        pending: None,
        last_pairing: None,
        diagnostics: None,
        key_store_problem: None,
        storage_problem: None,
        offerable: Vec::new(),
        troubleshoot: None,
    };
    let (registry, problems) = registry_from_settings(&settings);
    let shown =
        serde_json::to_value(snapshot_of(&LineSource::None, &registry, problems)).map_err(build)?;
    let mut mirror = ConfirmationMirror::with_bundled_catalogue();
    match switchboard_domain::confirmations::history::load(
        &link_dir.join(switchboard_domain::confirmations::history::HISTORY_FILE),
    ) {
        Ok(Some(kept)) => {
            mirror.restore_ended(kept.ended, kept.ended_dropped);
            mirror.restore_waiting(kept.waiting);
        }
        Ok(None) => {}
        Err(e) => left_out.push(format!("the confirmations kept for the next start: {e}")),
    }
    let confirmations = mirror.snapshot();
    let dials = read_dial_history(&link_dir)?;
    let mut files = vec![
        app_file(&settings, BundleSource::AppFiles, &link_dir)?,
        phones_file(&phones)?,
        link_file(&phones)?,
        banners_file(&BridgeStatusStore::new().snapshot())?,
        phone_lines_file(&shown, Vec::new())?,
        confirmations_file(&confirmations, &[], options.include_params)?,
        dials_file(&dials)?,
        conformance_file(&dials)?,
    ];
    files.extend(log_files(Some(&paths.log_dir), now_ms, &mut left_out));
    Ok(SupportBundle::assemble(
        files,
        BundleSource::AppFiles,
        demo,
        options,
        now_ms,
        left_out,
    ))
}

/// The newest [`MAX_DIALS`] dials of the history in `dir`, newest first; none when there is no
/// history file. The file and its write-ahead log are copied to a private temporary folder
/// and read there: even a read-only SQLite open of a WAL database creates files beside it, and
/// nothing is written in the app's folders.
fn read_dial_history(dir: &Path) -> Result<Vec<Arc<Dial>>, BundleError> {
    let name = switchboard_dials::store::DB_FILE;
    let path = dir.join(name);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let io = |e: String| BundleError::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    };
    let tmp = tempfile::tempdir().map_err(|e| io(format!("a temporary folder: {e}")))?;
    let copy = tmp.path().join(name);
    std::fs::copy(&path, &copy).map_err(|e| io(format!("copying: {e}")))?;
    let wal = dir.join(format!("{name}-wal"));
    if wal.exists() {
        std::fs::copy(&wal, tmp.path().join(format!("{name}-wal")))
            .map_err(|e| io(format!("copying its -wal: {e}")))?;
    }
    // Opened as the log opens it, so a file of an older schema is migrated (in the copy).
    let (conn, _) = switchboard_dials::store::open(tmp.path()).map_err(|e| io(e.to_string()))?;
    let mut dials = switchboard_dials::store::load_newest(&conn, &path, MAX_DIALS, usize::MAX)
        .map_err(|e| io(e.to_string()))?;
    drop(conn);
    dials.reverse();
    Ok(dials.into_iter().map(Arc::new).collect())
}
