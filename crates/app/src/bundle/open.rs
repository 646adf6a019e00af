//! Reading a support bundle, every size bounded, refusing (with what is wrong) anything that is
//! not one this app wrote: see the [module docs](super).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Component, Path};

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use super::{BundleError, BundleManifest, BundleSource, ManifestFile, OsInfo, FORMAT};
use super::{FORMAT_VERSION, MANIFEST};
use switchboard_dials::jsonl::ImportedLog;

/// The bounds [`open_bundle`] reads within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The archive file's size on disk.
    pub max_archive_bytes: u64,
    /// All entries together, decompressed (a zip bomb stops here).
    pub max_total_bytes: u64,
    /// One entry, decompressed.
    pub max_entry_bytes: u64,
    /// How many entries.
    pub max_entries: usize,
}

impl Default for Limits {
    /// 128 MiB on disk, 256 MiB decompressed in all, 64 MiB per file, 64 files: three days of
    /// full logs (16 MiB a day) and the rest fit with room.
    fn default() -> Self {
        Self {
            max_archive_bytes: 128 << 20,
            max_total_bytes: 256 << 20,
            max_entry_bytes: 64 << 20,
            max_entries: 64,
        }
    }
}

/// What the window shows about an opened bundle (its banner: the sender's app version and the
/// time it was saved).
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct BundleInfo {
    /// The archive opened.
    pub path: String,
    /// The sender's app version.
    pub app_version: String,
    /// The sender's OS.
    pub os: OsInfo,
    /// When it was saved, ms since the Unix epoch.
    #[ts(type = "number")]
    pub saved_at_ms: u64,
    /// The same, RFC 3339 UTC.
    pub saved_at: String,
    /// Where its contents came from.
    pub source: BundleSource,
    /// Saved from the demo.
    pub demo: bool,
    /// Whether confirmation parameter values are in it.
    pub parameters_included: bool,
    /// Its files as the manifest lists them.
    pub files: Vec<ManifestFile>,
    /// What it leaves out, and why.
    pub left_out: Vec<String>,
    /// How many dials it holds.
    pub dials: u32,
}

/// A bundle read and checked, for the read-only views.
#[derive(Debug)]
pub struct OpenedBundle {
    /// Its manifest.
    pub manifest: BundleManifest,
    /// The archive's path.
    pub path: String,
    /// `phones.json`: a Phones view snapshot.
    pub phones: Value,
    /// `banners.json`: a Bridge view snapshot.
    pub banners: Value,
    /// `phone-lines.json`'s `shown`: the Phone lines view snapshot.
    pub phone_lines: Value,
    /// `confirmations.json`'s `snapshot`.
    pub confirmations: Value,
    /// `confirmations.json`'s `autonomy`: each phone's autonomy table, by phone.
    pub autonomy: BTreeMap<String, Value>,
    /// `dials.jsonl`, queried like an imported capture (each dial's spec count preset from
    /// `dial-conformance.json`).
    pub dials: ImportedLog,
    /// `dial-conformance.json`: each dial's conformance as checked before redaction, by id.
    pub conformance: BTreeMap<String, Value>,
    /// `app.json`, when the bundle has it: the sender's app, OS, settings and data folder.
    pub app: Option<Value>,
    /// `phone-lines.json`'s `phones`: each paired phone's Phone lines view, in the bundle's order.
    pub phone_line_views: Vec<BundlePhoneLines>,
    /// Every file's bytes by name (the manifest included).
    pub files: BTreeMap<String, Vec<u8>>,
}

/// One paired phone's Phone lines view as a support bundle holds it (`phone-lines.json`'s
/// `phones[]`), for the view's per-phone picker.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct BundlePhoneLines {
    /// The phone's device id.
    pub device_id: String,
    /// Its pairing label (may be empty).
    pub label: String,
    /// Its Phone lines view (a `PhoneLinesSnapshot`) as the sender's app built it from the
    /// phone's phone-line settings.
    #[ts(type = "import(\"./PhoneLinesSnapshot\").PhoneLinesSnapshot")]
    pub view: Value,
}

/// What an opened bundle says about the sender's app, for the Settings view in bundle mode:
/// never the viewer's own settings.
#[derive(Debug, Clone, Serialize, TS)]
#[ts(export)]
pub struct BundleDetails {
    /// The sender's app (name, version, protocol ranges), from `app.json`; `null` when the
    /// bundle does not carry it readably (`problems` says why).
    pub app: Option<switchboard_wire::app_info::AppInfo>,
    /// The sender's settings in effect when the bundle was saved, from `app.json`; `null` when
    /// the bundle does not carry them readably (`problems` says why).
    pub settings: Option<switchboard_domain::settings::Settings>,
    /// The sender's data folder (on the sender's machine).
    pub data_dir: Option<String>,
    /// Why something above is missing, in words (`app.json` absent, a field of another shape).
    pub problems: Vec<String>,
    /// Each paired phone's Phone lines view (empty for a bundle of the app's files).
    pub phone_lines: Vec<BundlePhoneLines>,
}

impl OpenedBundle {
    /// Dial `id` of the bundle (that started at `start_ms`, when given).
    pub fn dial(
        &self,
        id: &str,
        start_ms: Option<i64>,
    ) -> Option<std::sync::Arc<switchboard_dials::Dial>> {
        self.dials
            .dials()
            .iter()
            .find(|d| &*d.id == id && start_ms.map_or(true, |s| d.start_ms == s))
            .cloned()
    }

    /// Dial `id`'s banner as the inspector shows it for a bundle: derived from its error text
    /// with the built-in manifests (the sender's store is not in the bundle), marked derived.
    pub fn dial_banner(&self, id: &str, start_ms: Option<i64>) -> Option<crate::dials::DialBanner> {
        let d = self.dial(id, start_ms)?;
        let dir = switchboard_domain::bridge::explain::builtin_directory();
        switchboard_domain::bridge::explain::banner_for_dial(&d, dir).map(|banner| {
            crate::dials::DialBanner {
                banner,
                origin: crate::dials::BannerOrigin::Derived,
                standing: None,
            }
        })
    }

    /// What the sender's tray showed when the bundle was saved (the window's "at a glance"
    /// line in bundle mode): the counts of its `phones.json`, `banners.json` and
    /// `confirmations.json`.
    pub fn summary(&self) -> crate::tray::TraySummary {
        crate::tray::summarize_bundle(&self.phones, &self.banners, &self.confirmations)
    }

    /// The sender's app, settings and phone-line views as the bundle carries them.
    pub fn details(&self) -> BundleDetails {
        let mut problems = Vec::new();
        let (mut app, mut settings, mut data_dir) = (None, None, None);
        match &self.app {
            None => problems.push(
                "this bundle has no app.json: it does not carry the sender's settings".to_string(),
            ),
            Some(v) => {
                match v.get("app").cloned().map(serde_json::from_value) {
                    Some(Ok(a)) => app = Some(a),
                    Some(Err(e)) => problems.push(format!("app.json's \"app\" does not fit: {e}")),
                    None => problems.push("app.json has no \"app\"".to_string()),
                }
                match v.get("settings").cloned().map(serde_json::from_value) {
                    Some(Ok(s)) => settings = Some(s),
                    Some(Err(e)) => problems.push(format!(
                        "app.json's \"settings\" do not fit this Switchboard's settings: {e}"
                    )),
                    None => problems.push(
                        "app.json has no \"settings\": the bundle does not carry the sender's \
                         settings"
                            .to_string(),
                    ),
                }
                data_dir = v
                    .get("data_dir")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
        }
        BundleDetails {
            app,
            settings,
            data_dir,
            problems,
            phone_lines: self.phone_line_views.clone(),
        }
    }

    /// The window's summary of it.
    pub fn info(&self) -> BundleInfo {
        let m = &self.manifest;
        BundleInfo {
            path: self.path.clone(),
            app_version: m.app_version.clone(),
            os: m.os.clone(),
            saved_at_ms: m.saved_at_ms,
            saved_at: m.saved_at.clone(),
            source: m.source,
            demo: m.demo,
            parameters_included: m.parameters_included,
            files: m.files.clone(),
            left_out: m.left_out.clone(),
            dials: u32::try_from(self.dials.len()).unwrap_or(u32::MAX),
        }
    }
}

/// The first two bytes of every gzip stream (RFC 1952), so of every bundle.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether the file at `path` starts as gzip does (`1f 8b`), as a support bundle (a `.tar.gz`)
/// does and a dial export (JSON Lines text) never can: lets a reader of exports tell a person
/// who gave it a bundle where bundles are opened. `false` when it cannot be read.
pub fn is_gzip_file(path: &Path) -> bool {
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == GZIP_MAGIC
}

/// Reads the bundle at `path` with the default [`Limits`].
///
/// # Errors
/// As [`open_bundle_with`].
pub fn open_bundle(path: &Path) -> Result<OpenedBundle, BundleError> {
    open_bundle_with(path, Limits::default())
}

/// Reads and checks the bundle at `path` within `limits`.
///
/// # Errors
/// [`BundleError::Io`] when the file cannot be read; [`BundleError::Refused`] naming what is
/// wrong: too big, not gzip, not a tar, an entry that is not a plain file, a path that is
/// absolute or leaves the bundle, too many entries, an entry or the whole past its bound, no
/// `manifest.json`, a foreign `format`, a newer `version`, a listed file missing or differing
/// from its size or SHA-256, a file not listed, a JSON file that does not parse.
pub fn open_bundle_with(path: &Path, limits: Limits) -> Result<OpenedBundle, BundleError> {
    let shown = path.display().to_string();
    let refuse = |reason: String| BundleError::Refused {
        path: shown.clone(),
        reason,
    };
    let io = |source| BundleError::Io {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(refuse("it is not a file".into()));
    }
    if meta.len() > limits.max_archive_bytes {
        return Err(refuse(format!(
            "it is {} bytes, more than the {} a bundle may be",
            meta.len(),
            limits.max_archive_bytes
        )));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut magic = [0u8; 2];
    {
        let mut f = &file;
        let n = f.read(&mut magic).map_err(io)?;
        if n < 2 || magic != GZIP_MAGIC {
            return Err(refuse(
                "it is not gzip-compressed (a bundle is a .tar.gz file that Switchboard saved)"
                    .into(),
            ));
        }
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let gz = flate2::read::GzDecoder::new(file);
    // The whole decompressed stream is bounded, headers and padding included.
    let bounded = gz.take(limits.max_total_bytes.saturating_add(1));
    let mut archive = tar::Archive::new(bounded);
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut total: u64 = 0;
    let entries = archive
        .entries()
        .map_err(|e| refuse(format!("it is not a readable tar archive: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| refuse(damaged_words(&e, limits)))?;
        if files.len() >= limits.max_entries {
            return Err(refuse(format!(
                "it holds more than {} files",
                limits.max_entries
            )));
        }
        let name = entry_name(&entry).map_err(|e| refuse(e.to_string()))?;
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            return Err(refuse(format!(
                "{name} is not a plain file ({kind:?}); a bundle holds only files"
            )));
        }
        let declared = entry.header().size().unwrap_or(u64::MAX);
        if declared > limits.max_entry_bytes {
            return Err(refuse(format!(
                "{name} is {declared} bytes, more than the {} one file may be",
                limits.max_entry_bytes
            )));
        }
        total = total.saturating_add(declared);
        if total > limits.max_total_bytes {
            return Err(refuse(format!(
                "its files come to more than {} bytes decompressed",
                limits.max_total_bytes
            )));
        }
        if files.contains_key(&name) {
            return Err(refuse(format!("{name} is in it twice")));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(declared.min(1 << 20)).unwrap_or(0));
        entry
            .take(limits.max_entry_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| refuse(format!("{name} is damaged: {}", damaged_words(&e, limits))))?;
        if bytes.len() as u64 != declared {
            return Err(refuse(format!(
                "{name} is cut short ({} of {declared} bytes)",
                bytes.len()
            )));
        }
        files.insert(name, bytes);
    }
    let manifest_bytes = files
        .get(MANIFEST)
        .ok_or_else(|| refuse(format!("it has no {MANIFEST}")))?;
    let manifest_value: Value = serde_json::from_slice(manifest_bytes)
        .map_err(|e| refuse(format!("{MANIFEST} is not JSON: {e}")))?;
    match manifest_value.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(refuse(format!(
                "{MANIFEST} says format \"{other}\", not \"{FORMAT}\""
            )))
        }
        None => {
            return Err(refuse(format!(
                "{MANIFEST} has no \"format\": \"{FORMAT}\""
            )))
        }
    }
    match manifest_value.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        Some(v) if v > u64::from(FORMAT_VERSION) => {
            return Err(refuse(format!(
                "it is bundle version {v}, made by a newer Switchboard; this one reads version \
                 {FORMAT_VERSION}"
            )))
        }
        Some(v) => {
            return Err(refuse(format!(
                "it is bundle version {v}; this Switchboard reads version {FORMAT_VERSION}"
            )))
        }
        None => return Err(refuse(format!("{MANIFEST} has no numeric \"version\""))),
    }
    let manifest: BundleManifest = serde_json::from_value(manifest_value)
        .map_err(|e| refuse(format!("{MANIFEST} does not fit: {e}")))?;
    for f in &manifest.files {
        let bytes = files
            .get(&f.name)
            .ok_or_else(|| refuse(format!("{} is listed in {MANIFEST} but missing", f.name)))?;
        if bytes.len() as u64 != f.bytes || super::sha256_hex(bytes) != f.sha256 {
            return Err(refuse(format!(
                "{} is damaged: its size or SHA-256 differs from {MANIFEST}'s",
                f.name
            )));
        }
    }
    if let Some(extra) = files
        .keys()
        .find(|n| n.as_str() != MANIFEST && !manifest.files.iter().any(|f| &f.name == *n))
    {
        return Err(refuse(format!(
            "{extra} is in it but not listed in {MANIFEST}"
        )));
    }
    let json = |name: &str| -> Result<Value, BundleError> {
        match files.get(name) {
            Some(b) => {
                serde_json::from_slice(b).map_err(|e| refuse(format!("{name} is not JSON: {e}")))
            }
            None => Err(refuse(format!("it has no {name}"))),
        }
    };
    let phones = json("phones.json")?;
    let app = match files.get("app.json") {
        Some(_) => Some(json("app.json")?),
        None => None,
    };
    let banners = json("banners.json")?;
    let lines = json("phone-lines.json")?;
    let conf = json("confirmations.json")?;
    let object = |v: &Value, what: &str| -> Result<(), BundleError> {
        if v.is_object() {
            Ok(())
        } else {
            Err(refuse(format!("{what} is not a JSON object")))
        }
    };
    object(&phones, "phones.json")?;
    object(&banners, "banners.json")?;
    object(&conf, "confirmations.json")?;
    let phone_lines = lines
        .get("shown")
        .filter(|v| v.is_object())
        .cloned()
        .ok_or_else(|| refuse("phone-lines.json has no \"shown\" object".into()))?;
    let phone_line_views = lines
        .get("phones")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| {
                    let view = r.get("view").filter(|v| v.is_object())?.clone();
                    Some(BundlePhoneLines {
                        device_id: r.get("device_id")?.as_str()?.to_string(),
                        label: r
                            .get("label")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        view,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let confirmations = conf
        .get("snapshot")
        .filter(|v| v.is_object())
        .cloned()
        .ok_or_else(|| refuse("confirmations.json has no \"snapshot\" object".into()))?;
    let autonomy = conf
        .get("autonomy")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| Some((r.get("phone")?.as_str()?.to_string(), r.clone())))
                .collect()
        })
        .unwrap_or_default();
    let dials = match files.get("dials.jsonl") {
        Some(b) => ImportedLog::from_reader(b.as_slice(), Path::new("dials.jsonl"))
            .map_err(|e| refuse(format!("dials.jsonl: {e}")))?,
        None => return Err(refuse("it has no dials.jsonl".into())),
    };
    let conformance: BTreeMap<String, Value> = match files.get("dial-conformance.json") {
        Some(b) => serde_json::from_slice(b)
            .map_err(|e| refuse(format!("dial-conformance.json is not a JSON object: {e}")))?,
        None => BTreeMap::new(),
    };
    for d in dials.dials() {
        if let Some(n) = conformance
            .get(&*d.id)
            .and_then(|c| c.get("findings"))
            .and_then(Value::as_array)
        {
            d.spec.preset(u32::try_from(n.len()).unwrap_or(u32::MAX));
        }
    }
    Ok(OpenedBundle {
        conformance,
        manifest,
        path: shown.clone(),
        phones,
        banners,
        phone_lines,
        confirmations,
        autonomy,
        dials,
        app,
        phone_line_views,
        files,
    })
}

/// Words for a read error inside the archive (a bound hit reads as truncation).
fn damaged_words(e: &std::io::Error, limits: Limits) -> String {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        format!(
            "it is cut short or decompresses to more than {} bytes",
            limits.max_total_bytes
        )
    } else {
        format!("it is damaged: {e}")
    }
}

/// A bundle entry's path that is not a plain relative UTF-8 path, in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadEntryName(String);

/// The entry's path as a bundle name (`a/b.json`), refusing absolute paths, `..`, `.` and
/// anything but plain UTF-8 components.
fn entry_name<R: Read>(entry: &tar::Entry<'_, R>) -> Result<String, BadEntryName> {
    let raw = entry.path_bytes();
    let text = std::str::from_utf8(&raw)
        .map_err(|_| BadEntryName("an entry's path is not UTF-8".to_string()))?
        .to_string();
    let p = Path::new(&text);
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                return Err(BadEntryName(format!(
                    "the path {text} leaves the bundle (..)"
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(BadEntryName(format!("the path {text} is absolute")));
            }
            Component::CurDir => {
                return Err(BadEntryName(format!(
                    "the path {text} is not a plain relative path"
                )));
            }
        }
    }
    if parts.is_empty() || text.contains('\\') {
        return Err(BadEntryName(format!(
            "the path {text:?} is not a plain relative path"
        )));
    }
    Ok(parts.join("/"))
}
