//! The Phone lines view (phone-line.md, "Discovery and pairing" and "Manifest"):
//! each phone line with its state, pairing decision and manifest, a test of a path against a
//! line's `excludeFromSearch`, the registry of known lines, and the desktop's revoke.
//!
//! Where the lines come from is [`LineSource`]: for now a `phoneline-pairings.json` the person
//! opened (support staff working from a user's file, or the person's own), with any describe
//! responses pasted for its lines; later the per-phone settings a paired phone sends.
//!
//! Rules kept here:
//! - Opening a file only reads it, as LumiAgent reads it (upstream-behaviour.md): a file that
//!   cannot be read, is not JSON, has a `version` other than 1 or a `pairings` that is not an
//!   object is what LumiAgent treats as empty. It is opened and shown as such, in words naming
//!   what was wrong, with nothing paired; it is never written (revoke refuses) and describe
//!   responses cannot be pasted for it. A record of the wrong shape is refused with the field,
//!   line and column, and the previously opened source stays; so is a path with no file.
//! - Taking a permission away (revoke) is allowed from the desktop; granting is only ever done
//!   on the phone, so there is no command to allow or re-pair a line. Until the phone link
//!   exists, revoke edits the opened file, and only when the call carries `confirm: true` (the
//!   view's "Revoke <Name>? … This writes the file" dialog): atomically, keeping the previous
//!   file as `<file>.bak`, and refusing when the file changed on disk since it was opened.
//! - The registry is LumiRealm (built in) plus `extra_phone_lines` from the settings.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use ts_rs::TS;

use super::App;
use switchboard_domain::phone_line::exclusions::{matching_prefix, relative_to_extensions};
use switchboard_domain::phone_line::pairing::DescribeOutcome;
use switchboard_domain::phone_line::pairings::{
    backup_path, load_as_lumiagent, PairingsFile, PAIRINGS_FILE_NAME,
};
use switchboard_domain::phone_line::registry::{
    KnownPhoneLine, PhoneLineRegistry, BUILTIN_PHONE_LINES,
};
use switchboard_domain::phone_line::summary::{summarize, DialResult, PhoneLineSummary};
use switchboard_domain::settings::{KnownLineSetting, Settings};
use switchboard_wire::error::{IpcError, IpcErrorKind};

/// Largest describe response [`attach_describe`] accepts, in bytes (1 MiB).
pub const MAX_DESCRIBE_BYTES: usize = 1024 * 1024;

/// Where the phone lines shown come from.
#[derive(Debug, Clone, Default)]
pub enum LineSource {
    /// Nothing opened, no phone reporting.
    #[default]
    None,
    /// A `phoneline-pairings.json` opened from disk.
    OpenedFile {
        /// The file.
        path: PathBuf,
        /// Its records as read (and as last written by a revoke); empty when LumiAgent treats
        /// the file as empty.
        file: PairingsFile,
        /// Why LumiAgent treats the file as empty (`its version is 2, not 1`); `None` when it
        /// reads its records. Such a file is never written.
        treated_as_empty: Option<String>,
        /// The registry the lines are judged against (LumiRealm + the settings' extra lines).
        registry: PhoneLineRegistry,
        /// Describe responses pasted for lines of this file, latest per line.
        describes: Vec<DialResult>,
    },
    /// A paired phone's own phone-line settings (filled by the hub once the phone link
    /// reports them).
    Phone {
        /// The phone's id.
        phone: String,
        /// The lines as the phone reports them.
        lines: Vec<PhoneLineSummary>,
    },
}

/// The Phone lines view's state: where its lines come from.
#[derive(Debug, Default)]
pub struct PhoneLinesState {
    source: Mutex<LineSource>,
}

impl PhoneLinesState {
    /// Nothing opened.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks the source (a poisoned lock is recovered: it is plain data).
    pub fn lock(&self) -> MutexGuard<'_, LineSource> {
        switchboard_wire::sync::lock(&self.source)
    }

    /// A phone's new phone-line settings (the hub applied a snapshot from `phone`); returns
    /// whether they are shown now. They replace what is shown when they are the shown phone's,
    /// or when nothing is shown, or when the shown phone is no longer among `phones` (unpaired
    /// meanwhile). Another phone's settings never take the view from a phone that is still
    /// there: with two phones paired, the one the person is looking at (or chose) stays. An
    /// opened pairings file stays shown: the person opened it on purpose.
    pub fn on_phone_settings(
        &self,
        phone: &str,
        lines: Vec<PhoneLineSummary>,
        phones: &[PhoneLinesPhone],
    ) -> bool {
        let mut source = self.lock();
        match &*source {
            LineSource::OpenedFile { .. } => return false,
            LineSource::Phone { phone: shown, .. }
                if shown != phone && phones.iter().any(|p| p.device_id == *shown) =>
            {
                return false
            }
            _ => {}
        }
        *source = LineSource::Phone {
            phone: phone.to_string(),
            lines,
        };
        true
    }

    /// Keeps the shown phone one that still exists: when the shown phone is no longer among
    /// `phones` (it was unpaired), or nothing is shown while a phone has settings, the view
    /// moves to [`choose_phone`]'s pick (its lines from `lines_of`), or to nothing when no
    /// phone is left. An opened file stays. Returns whether the source changed.
    pub fn follow_phones(
        &self,
        phones: &[PhoneLinesPhone],
        lines_of: impl Fn(&str) -> Vec<PhoneLineSummary>,
    ) -> bool {
        let mut source = self.lock();
        let shown = match &*source {
            LineSource::OpenedFile { .. } => return false,
            LineSource::Phone { phone, .. } => Some(phone.as_str()),
            LineSource::None => None,
        };
        if shown.is_some_and(|s| phones.iter().any(|p| p.device_id == s)) {
            return false;
        }
        let next = choose_phone(phones).map(|p| LineSource::Phone {
            phone: p.device_id.clone(),
            lines: lines_of(&p.device_id),
        });
        match next {
            Some(next) => *source = next,
            None if shown.is_some() => *source = LineSource::None,
            None => return false,
        }
        true
    }

    /// Shows `phone`'s settings because the person chose it; an opened file gives way.
    pub fn show_phone(&self, phone: &str, lines: Vec<PhoneLineSummary>) {
        *self.lock() = LineSource::Phone {
            phone: phone.to_string(),
            lines,
        };
    }
}

/// The phone shown when the view has to pick one itself: the first connected phone, else the
/// first one (pairing order, as the Phones view lists them).
pub fn choose_phone(phones: &[PhoneLinesPhone]) -> Option<&PhoneLinesPhone> {
    phones
        .iter()
        .find(|p| p.connected)
        .or_else(|| phones.first())
}

/// A paired phone whose phone-line settings arrived: one the view can show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneLinesPhone {
    /// Its device id.
    pub device_id: String,
    /// The name it was paired under (may be blank: the view shows the device id then).
    pub label: String,
    /// Whether it is connected now (its settings shown are the last it sent otherwise).
    pub connected: bool,
}

/// The registry built from settings: LumiRealm, then each extra line in order. Entries that
/// are not valid (bad identifier, empty name, a duplicate) are left out and described in the
/// returned problems.
pub fn registry_from_settings(settings: &Settings) -> (PhoneLineRegistry, Vec<String>) {
    let mut registry = PhoneLineRegistry::builtin();
    let mut problems = Vec::new();
    for (i, l) in settings.extra_phone_lines.iter().enumerate() {
        let added = KnownPhoneLine::new(l.identifier.trim(), l.name.trim())
            .and_then(|line| registry.add(line));
        if let Err(e) = added {
            problems.push(format!("extra phone line {} not used: {e}", i + 1));
        }
    }
    (registry, problems)
}

/// Where the lines come from, for the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum SourceInfo {
    /// Nothing opened, no phone reporting.
    None,
    /// An opened `phoneline-pairings.json`.
    OpenedFile {
        /// The file's path.
        path: String,
        /// Where a revoke keeps the previous file.
        backup_path: String,
        /// How many pairing records it holds.
        records: u32,
        /// Top-level members the format does not define (kept when writing).
        unknown_fields: Vec<String>,
        /// Lines a describe response was pasted for.
        described: Vec<String>,
        /// When LumiAgent treats the file as empty: a sentence saying so and naming what was
        /// wrong. Nothing is then shown as paired and the file is never written.
        treated_as_empty: Option<String>,
    },
    /// A paired phone's settings.
    Phone {
        /// The phone's id.
        phone: String,
    },
}

/// One entry of the registry of known phone lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct RegistryEntry {
    /// The extension id.
    pub identifier: String,
    /// The name its describe must declare.
    pub name: String,
    /// Built in (LumiRealm, cannot be removed) or added in settings.
    pub builtin: bool,
}

/// Everything the Phone lines view shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PhoneLinesSnapshot {
    /// Where the lines come from.
    pub source: SourceInfo,
    /// The lines: registry order first, then other recorded lines.
    pub lines: Vec<PhoneLineSummary>,
    /// The registry of known lines.
    pub registry: Vec<RegistryEntry>,
    /// Extra lines in the settings that could not be used, in words.
    pub registry_problems: Vec<String>,
    /// Whether a revoke can be made from here now: an opened file (written after the
    /// confirmation) or a paired phone's settings (the phone is asked through the link).
    pub can_revoke: bool,
    /// The paired phones whose settings can be shown, for the view's phone picker (empty in
    /// a support bundle's per-phone views, which have a picker of their own).
    pub phones: Vec<PhoneLinesPhone>,
}

/// Which `excludeFromSearch` prefix, if any, covers a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct ExclusionTest {
    /// The line whose exclusions were used.
    pub identifier: String,
    /// The path as given.
    pub path: String,
    /// The path under `character.extensions` that was matched.
    pub relative_path: String,
    /// The longest prefix covering it; `null` when none does (the find tools search it).
    pub matched: Option<String>,
    /// How many exclusions the line's manifest has.
    pub exclusion_count: u32,
}

fn settings_registry(app: &App) -> (PhoneLineRegistry, Vec<String>) {
    registry_from_settings(&app.settings.get())
}

fn registry_entries(registry: &PhoneLineRegistry) -> Vec<RegistryEntry> {
    registry
        .lines()
        .iter()
        .map(|l| RegistryEntry {
            identifier: l.identifier.clone(),
            name: l.name.clone(),
            builtin: BUILTIN_PHONE_LINES
                .iter()
                .any(|(id, _)| *id == l.identifier),
        })
        .collect()
}

/// The view's data for `source`, judging lines with `registry`.
pub fn snapshot_of(
    source: &LineSource,
    registry: &PhoneLineRegistry,
    registry_problems: Vec<String>,
) -> PhoneLinesSnapshot {
    let (info, lines, can_revoke) = match source {
        LineSource::None => (SourceInfo::None, Vec::new(), false),
        LineSource::OpenedFile {
            path,
            file,
            treated_as_empty,
            registry,
            describes,
        } => (
            SourceInfo::OpenedFile {
                path: path.display().to_string(),
                backup_path: backup_path(path).display().to_string(),
                records: u32::try_from(file.records().count()).unwrap_or(u32::MAX),
                unknown_fields: file.unknown_fields().map(|(k, _)| k.clone()).collect(),
                described: describes.iter().map(|d| d.namespace.clone()).collect(),
                treated_as_empty: treated_as_empty.as_deref().map(empty_words),
            },
            summarize(registry, Some(file), describes),
            treated_as_empty.is_none(),
        ),
        LineSource::Phone { phone, lines } => (
            SourceInfo::Phone {
                phone: phone.clone(),
            },
            lines.clone(),
            true,
        ),
    };
    PhoneLinesSnapshot {
        source: info,
        lines,
        registry: registry_entries(registry),
        registry_problems,
        can_revoke,
        phones: Vec::new(),
    }
}

/// The snapshot now, with the registry as the settings have it (an opened file's registry is
/// brought up to date first, so lines are judged by the registry shown).
fn current(app: &App) -> PhoneLinesSnapshot {
    let state = &app.phone_lines;
    let (registry, problems) = settings_registry(app);
    let phones = app.phone_lines_phones();
    let mut source = state.lock();
    if let LineSource::OpenedFile { registry: r, .. } = &mut *source {
        r.clone_from(&registry);
    }
    PhoneLinesSnapshot {
        phones,
        ..snapshot_of(&source, &registry, problems)
    }
}

/// The file a given path means: the path itself, or `phoneline-pairings.json` inside it when
/// it is a folder.
fn pairings_path(given: &str) -> Result<PathBuf, IpcError> {
    let given = given.trim();
    if given.is_empty() {
        return Err(IpcError::invalid_input(format!(
            "give the path of a {PAIRINGS_FILE_NAME} file (the box is empty)"
        )));
    }
    let path = PathBuf::from(given);
    Ok(if path.is_dir() {
        path.join(PAIRINGS_FILE_NAME)
    } else {
        path
    })
}

/// The sentence shown for a file LumiAgent treats as empty, `reason` naming what was wrong.
fn empty_words(reason: &str) -> String {
    format!("LumiAgent treats this file as empty because {reason}: no line is paired by it, and Switchboard does not write it")
}

/// The file as LumiAgent reads it: its records and, when LumiAgent treats it as empty, why.
fn load(path: &Path) -> Result<(PairingsFile, Option<String>), IpcError> {
    let read = load_as_lumiagent(path).map_err(|e| {
        let mut err = IpcError::from(e);
        err.message = format!("{}: {}", path.display(), err.message);
        err
    })?;
    let reason = read.empty_reason().map(str::to_string);
    Ok((read.records_or_empty(), reason))
}

impl App {
    /// The phone lines from the current source, with the registry.
    pub fn phone_lines_snapshot(&self) -> PhoneLinesSnapshot {
        current(self)
    }

    /// The paired phones whose phone-line settings the hub holds, in pairing order: the
    /// phones the view can show. Empty when the link or the hub is not running.
    pub fn phone_lines_phones(&self) -> Vec<PhoneLinesPhone> {
        let Some(hub) = self.hub() else {
            return Vec::new();
        };
        self.phones
            .tray_phones()
            .into_iter()
            .filter(|p| {
                hub.phone(&p.device_id)
                    .is_some_and(|v| v.settings_at.is_some())
            })
            .map(|p| PhoneLinesPhone {
                device_id: p.device_id,
                label: p.label,
                connected: p.connected,
            })
            .collect()
    }

    /// A phone's new settings arrived (`phone`, its lines): shown when
    /// [`PhoneLinesState::on_phone_settings`] says so. The view reads again either way: the
    /// phones it can choose from may have changed.
    pub(crate) fn phone_lines_on_settings(&self, phone: &str, lines: Vec<PhoneLineSummary>) {
        let phones = self.phone_lines_phones();
        self.phone_lines.on_phone_settings(phone, lines, &phones);
    }

    /// Moves the view off a phone that went away (unpaired) to one still there, or to nothing;
    /// returns whether what is shown changed.
    pub(crate) fn phone_lines_follow_phones(&self) -> bool {
        let phones = self.phone_lines_phones();
        let hub = self.hub();
        self.phone_lines.follow_phones(&phones, |id| {
            hub.as_ref()
                .and_then(|h| h.phone(id))
                .map(|v| v.lines)
                .unwrap_or_default()
        })
    }

    /// Shows the phone-line settings of the paired phone `phone` (the view's phone picker).
    ///
    /// # Errors
    /// `not_found` when `phone` is not a paired phone whose settings arrived.
    pub(crate) fn show_phone_lines_of(&self, phone: &str) -> Result<PhoneLinesSnapshot, IpcError> {
        let known = self
            .phone_lines_phones()
            .iter()
            .any(|p| p.device_id == phone);
        let lines = self.hub().and_then(|h| h.phone(phone)).map(|v| v.lines);
        match lines {
            Some(lines) if known => self.phone_lines.show_phone(phone, lines),
            _ => {
                return Err(IpcError::not_found(format!(
                    "no paired phone {phone} has sent its phone-line settings"
                )))
            }
        }
        Ok(current(self))
    }

    /// Opens a `phoneline-pairings.json` (or a folder holding one) and shows its records as
    /// LumiAgent reads them. Only reads: nothing is written. A file LumiAgent treats as empty
    /// (unreadable, not JSON, `version` not 1, `pairings` not an object) is opened with
    /// nothing paired and the reason in `source.treated_as_empty`.
    ///
    /// A record of the wrong shape is read as LumiAgent reads it: shown with a warning naming the
    /// field, line and column (not refused).
    ///
    /// # Errors
    /// `io` when there is no file at the path. The source shown before stays.
    pub(crate) fn open_pairings_file(&self, path: &str) -> Result<PhoneLinesSnapshot, IpcError> {
        let (app, state) = (self, &self.phone_lines);
        let path = pairings_path(path)?;
        let (file, treated_as_empty) = load(&path)?;
        let (registry, _) = settings_registry(app);
        *state.lock() = LineSource::OpenedFile {
            path,
            file,
            treated_as_empty,
            registry,
            describes: Vec::new(),
        };
        Ok(current(app))
    }

    /// Stops showing the opened file (nothing is written).
    pub(crate) fn close_pairings_file(&self) -> PhoneLinesSnapshot {
        let (app, state) = (self, &self.phone_lines);
        {
            let mut source = state.lock();
            if matches!(*source, LineSource::OpenedFile { .. }) {
                *source = LineSource::None;
            }
        }
        // Back to a phone's settings when one has sent them, not to an empty view.
        app.phone_lines_follow_phones();
        current(app)
    }

    /// Uses a pasted `describe` response as the latest describe of line `identifier` in the opened
    /// file: its surfaces, exclusions, name check and manifest hash then show.
    ///
    /// # Errors
    /// `invalid_input` when no file is open, LumiAgent treats the opened file as empty (there is
    /// no record to compare with), the text is too long, or it is not JSON (with line and
    /// column). A JSON answer that is not a manifest is accepted and shown as "describe
    /// failed" with the reason.
    pub(crate) fn attach_describe(
        &self,
        identifier: &str,
        text: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        let (app, state) = (self, &self.phone_lines);
        if text.len() > MAX_DESCRIBE_BYTES {
            return Err(IpcError::invalid_input(format!(
                "the describe response is {} bytes; at most {MAX_DESCRIBE_BYTES} are read",
                text.len()
            )));
        }
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            IpcError::invalid_input(format!(
                "the describe response is not JSON: {e} (paste the whole response object)"
            ))
        })?;
        {
            let mut source = state.lock();
            let LineSource::OpenedFile {
                describes,
                treated_as_empty,
                ..
            } = &mut *source
            else {
                return Err(IpcError::invalid_input(
                    "open a phoneline-pairings.json first; describe responses are shown with its records",
                ));
            };
            if let Some(reason) = treated_as_empty {
                return Err(IpcError::invalid_input(format!(
                    "{}; there is no record to compare a describe response with",
                    empty_words(reason)
                )));
            }
            let id = identifier.trim().to_string();
            describes.retain(|d| d.namespace != id);
            describes.push(DialResult {
                namespace: id,
                outcome: DescribeOutcome::Answered(value),
            });
        }
        Ok(current(app))
    }

    /// Revokes line `identifier`: its pairing record gets `allowed: false` and `decidedAt` now.
    /// Only with `confirm: true` (the view's confirmation dialog). With an opened file, the file
    /// is re-read first and written atomically, the previous file kept as `<file>.bak`.
    ///
    /// # Errors
    /// `invalid_input` without `confirm`, with nothing opened, with a file LumiAgent treats as
    /// empty (never written), a record already revoked, or a record that is not a decision
    /// LumiAgent keeps (not an object, no boolean `allowed`: it rewrites it on its next
    /// discovery, so there is nothing to revoke; never written); `link`
    /// when a phone's settings are shown but the link cannot ask the phone; `not_found` without a record for
    /// `identifier`; `conflict` when the file changed on disk since it was opened (the view then
    /// shows the file as it is now; nothing is written); `io` when reading or writing fails.
    pub(crate) fn revoke_phone_line(
        &self,
        identifier: &str,
        confirm: bool,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        let (app, state) = (self, &self.phone_lines);
        if !confirm {
            return Err(IpcError::invalid_input(
                "revoking writes the pairings file: confirm it first",
            ));
        }
        {
            let mut source = state.lock();
            match &mut *source {
                LineSource::None => {
                    return Err(IpcError::invalid_input(
                        "nothing to revoke in: open a phoneline-pairings.json first",
                    ))
                }
                LineSource::Phone { phone, .. } => {
                    let Some(hub) = app.hub() else {
                        return Err(IpcError::link(
                            "the phone link is not running, so the phone cannot be asked to revoke",
                        ));
                    };
                    hub.revoke_phone_line(phone, identifier.trim())
                        .map_err(|e| IpcError::link(e.to_string()))?;
                    // The phone answers with fresh settings; the view follows the notice.
                    let (registry, problems) = settings_registry(app);
                    return Ok(snapshot_of(&source, &registry, problems));
                }
                LineSource::OpenedFile {
                    path,
                    file,
                    treated_as_empty,
                    ..
                } => {
                    if let Some(reason) = treated_as_empty {
                        return Err(IpcError::invalid_input(format!(
                            "nothing to revoke in {}: {}",
                            path.display(),
                            empty_words(reason)
                        )));
                    }
                    let on_disk = load(path)?;
                    if on_disk.0 != *file || on_disk.1.is_some() {
                        (*file, *treated_as_empty) = on_disk;
                        return Err(IpcError::new(
                            IpcErrorKind::Conflict,
                            format!(
                                "{} changed on disk since it was opened; it is now shown as it is. Check the line and revoke again if you still want to",
                                path.display()
                            ),
                        ));
                    }
                    let mut changed = file.clone();
                    let record = changed.get(identifier).ok_or_else(|| {
                        IpcError::new(
                            IpcErrorKind::NotFound,
                            format!(
                                "{} has no pairing record for {identifier:?}",
                                path.display()
                            ),
                        )
                    })?;
                    // A record LumiAgent does not read as a decision: revoke refuses it.
                    if record.is_decision() && !record.allowed() {
                        return Err(IpcError::invalid_input(format!(
                            "{identifier:?} is already revoked"
                        )));
                    }
                    changed.revoke(identifier, app.config.clock.now_ms())?;
                    changed.save(path)?;
                    tracing::info!(line = %identifier, file = %path.display(), "phone line revoked");
                    *file = changed;
                }
            }
        }
        Ok(current(app))
    }

    /// Tests `path` (under `character.extensions`, with or without that prefix) against line
    /// `identifier`'s `excludeFromSearch`: which prefix, if any, covers it.
    ///
    /// # Errors
    /// `not_found` when no line has that identifier or its describe manifest is not known.
    pub(crate) fn test_exclusion(
        &self,
        identifier: &str,
        path: &str,
    ) -> Result<ExclusionTest, IpcError> {
        let snap = current(self);
        let line = snap
            .lines
            .iter()
            .find(|l| l.identifier == identifier)
            .ok_or_else(|| IpcError::not_found(format!("no phone line {identifier:?}")))?;
        if line.current_manifest_hash.is_none() {
            return Err(IpcError::new(
                IpcErrorKind::NotFound,
                format!(
                    "no describe manifest known for {}: its exclusions come from its describe response",
                    line.display_name
                ),
            ));
        }
        let given = path.trim();
        let relative = relative_to_extensions(given);
        Ok(ExclusionTest {
            identifier: line.identifier.clone(),
            path: given.to_string(),
            relative_path: relative.to_string(),
            matched: matching_prefix(&line.exclusions, relative).map(str::to_string),
            exclusion_count: u32::try_from(line.exclusions.len()).unwrap_or(u32::MAX),
        })
    }

    fn save_registry(app: &App, settings: Settings) -> Result<(), IpcError> {
        app.settings
            .save(settings)
            .map_err(|e| IpcError::io(e.message))?;
        Ok(())
    }

    /// Adds a known phone line to the registry (saved in the settings' `extra_phone_lines`).
    ///
    /// # Errors
    /// `invalid_input` for a bad identifier (letters, digits, `_`, `-`), an empty name or an
    /// identifier already known; `io` when the settings cannot be saved.
    pub(crate) fn add_known_phone_line(
        &self,
        identifier: &str,
        name: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        let app = self;
        let line = KnownPhoneLine::new(identifier.trim(), name.trim())?;
        let mut settings = app.settings.get();
        let (mut registry, _) = registry_from_settings(&settings);
        registry.add(line.clone())?;
        settings.extra_phone_lines.push(KnownLineSetting {
            identifier: line.identifier,
            name: line.name,
        });
        Self::save_registry(app, settings)?;
        Ok(current(app))
    }

    /// Removes a phone line added in settings from the registry. LumiRealm is built in and stays.
    ///
    /// # Errors
    /// `invalid_input` for a built-in line; `not_found` when no added line has that identifier;
    /// `io` when the settings cannot be saved.
    pub(crate) fn remove_known_phone_line(
        &self,
        identifier: &str,
    ) -> Result<PhoneLinesSnapshot, IpcError> {
        let app = self;
        if BUILTIN_PHONE_LINES.iter().any(|(id, _)| *id == identifier) {
            return Err(IpcError::invalid_input(format!(
                "{identifier:?} is built in and cannot be removed"
            )));
        }
        let mut settings = app.settings.get();
        let before = settings.extra_phone_lines.len();
        settings
            .extra_phone_lines
            .retain(|l| l.identifier.trim() != identifier);
        if settings.extra_phone_lines.len() == before {
            return Err(IpcError::not_found(format!(
                "no added phone line {identifier:?}"
            )));
        }
        Self::save_registry(app, settings)?;
        Ok(current(app))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phone(id: &str, connected: bool) -> PhoneLinesPhone {
        PhoneLinesPhone {
            device_id: id.to_string(),
            label: format!("{id} label"),
            connected,
        }
    }

    fn shown(state: &PhoneLinesState) -> Option<String> {
        match &*state.lock() {
            LineSource::Phone { phone, .. } => Some(phone.clone()),
            _ => None,
        }
    }

    #[test]
    fn a_second_phone_does_not_take_the_view_from_the_first() {
        let state = PhoneLinesState::new();
        let one = [phone("dev_a", true)];
        assert!(state.on_phone_settings("dev_a", Vec::new(), &one));
        let both = [phone("dev_a", true), phone("dev_b", true)];
        assert!(!state.on_phone_settings("dev_b", Vec::new(), &both));
        assert_eq!(shown(&state).as_deref(), Some("dev_a"));
        // The shown phone's own new settings still replace what is shown.
        assert!(state.on_phone_settings("dev_a", Vec::new(), &both));
        // Chosen by the person, the second phone stays shown in turn.
        state.show_phone("dev_b", Vec::new());
        assert!(!state.on_phone_settings("dev_a", Vec::new(), &both));
        assert_eq!(shown(&state).as_deref(), Some("dev_b"));
    }

    #[test]
    fn an_unpaired_phone_gives_the_view_to_one_still_paired() {
        let state = PhoneLinesState::new();
        let both = [phone("dev_a", false), phone("dev_b", true)];
        state.on_phone_settings("dev_b", Vec::new(), &both);
        // dev_b unpaired: dev_a is left (not connected, its last settings are shown).
        let left = [phone("dev_a", false)];
        assert!(state.follow_phones(&left, |_| Vec::new()));
        assert_eq!(shown(&state).as_deref(), Some("dev_a"));
        assert!(!state.follow_phones(&left, |_| Vec::new()));
        // With no phone left, nothing is shown.
        assert!(state.follow_phones(&[], |_| Vec::new()));
        assert_eq!(shown(&state), None);
        assert!(matches!(&*state.lock(), LineSource::None));
    }

    #[test]
    fn the_view_picks_a_connected_phone_first() {
        let phones = [phone("dev_a", false), phone("dev_b", true)];
        assert_eq!(
            choose_phone(&phones).map(|p| p.device_id.as_str()),
            Some("dev_b")
        );
        let none_connected = [phone("dev_a", false), phone("dev_b", false)];
        assert_eq!(
            choose_phone(&none_connected).map(|p| p.device_id.as_str()),
            Some("dev_a")
        );
        assert_eq!(choose_phone(&[]), None);
        let state = PhoneLinesState::new();
        assert!(state.follow_phones(&phones, |_| Vec::new()));
        assert_eq!(shown(&state).as_deref(), Some("dev_b"));
    }

    #[test]
    fn an_opened_file_stays_shown() {
        let state = PhoneLinesState::new();
        *state.lock() = LineSource::OpenedFile {
            path: PathBuf::from("/tmp/phoneline-pairings.json"),
            file: PairingsFile::default(),
            treated_as_empty: None,
            registry: PhoneLineRegistry::builtin(),
            describes: Vec::new(),
        };
        let phones = [phone("dev_a", true)];
        assert!(!state.on_phone_settings("dev_a", Vec::new(), &phones));
        assert!(!state.follow_phones(&phones, |_| Vec::new()));
        assert!(matches!(&*state.lock(), LineSource::OpenedFile { .. }));
    }
}
