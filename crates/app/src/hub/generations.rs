//! Generations: the ifp/1 generation fence per phone, and the file that keeps it.
//!
//! Why its own file: a fence that a desktop restart forgets lets the stale writer back in, so
//! the highest generation accepted from each phone is kept on disk. ifp/1 fences a writer from
//! an older home generation (`ifp1-notes.md`, "Events: dedup, generation fence, ordering": a
//! `generation` below the receiver's current one is `stale_generation`, with
//! `current_generation`). On this desktop a phone's current generation is the highest
//! `generation` it has accepted from that phone (its device id, and so its entity), starting
//! at the hub's home generation (1): a message with a higher one is accepted and raises it, one
//! with a lower one afterwards is refused `stale_generation`. The phone raises its generation
//! when its home moves (its outbox and sessions restored onto another install, or started
//! afresh); the old install then writes from a lower generation and is fenced. Unpairing
//! forgets the phone's generation. Spec: `docs/protocol.md`, "Generations".
//!
//! File: `phone-generations.json` in the link's data folder, beside the trust file, written
//! atomically ([`switchboard_wire::fsutil::write_atomic`]) whenever a generation rises or a phone is
//! unpaired: `{"version": 1, "phones": {"<device id>": <generation>}}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the link's data folder.
pub const GENERATIONS_FILE: &str = "phone-generations.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    phones: BTreeMap<String, u64>,
}

/// The highest generation accepted per phone, and where it is kept (`None`: memory only).
#[derive(Debug, Default)]
pub(super) struct Generations {
    path: Option<PathBuf>,
    phones: BTreeMap<String, u64>,
}

impl Generations {
    /// Reads `path` (absent: nothing known yet). A file that cannot be read or parsed is
    /// reported in the log, named, and treated as empty (the fence then starts again at the
    /// home generation); it is rewritten with the next change.
    pub(super) fn load(path: Option<PathBuf>) -> Self {
        let phones = path.as_deref().map(read).unwrap_or_default();
        Generations { path, phones }
    }

    /// The highest generation accepted from `device_id`, if one above the home was.
    pub(super) fn get(&self, device_id: &str) -> Option<u64> {
        self.phones.get(device_id).copied()
    }

    /// Records `generation` for `device_id` when it is higher than the one kept; writes the
    /// file then. Returns whether it rose.
    pub(super) fn raise(&mut self, device_id: &str, generation: u64) -> bool {
        if self.get(device_id).is_some_and(|g| g >= generation) {
            return false;
        }
        self.phones.insert(device_id.to_string(), generation);
        self.save();
        true
    }

    /// Forgets `device_id` (it was unpaired).
    pub(super) fn forget(&mut self, device_id: &str) {
        if self.phones.remove(device_id).is_some() {
            self.save();
        }
    }

    fn save(&self) {
        let Some(path) = &self.path else {
            return;
        };
        let body = FileBody {
            version: 1,
            phones: self.phones.clone(),
        };
        let written = serde_json::to_vec(&body)
            .map_err(std::io::Error::other)
            .and_then(|bytes| switchboard_wire::fsutil::write_atomic(path, &bytes));
        if let Err(e) = written {
            tracing::error!(
                "could not write {}: {e}; the generation fence holds until the desktop restarts",
                path.display()
            );
        }
    }
}

fn read(path: &Path) -> BTreeMap<String, u64> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(e) => {
            tracing::error!(
                "could not read {}: {e}; phone generations start again at 1",
                path.display()
            );
            return BTreeMap::new();
        }
    };
    match serde_json::from_slice::<FileBody>(&bytes) {
        Ok(body) if body.version == 1 => body.phones,
        Ok(body) => {
            tracing::error!(
                "{}: version {} is not 1; phone generations start again at 1",
                path.display(),
                body.version
            );
            BTreeMap::new()
        }
        Err(e) => {
            tracing::error!(
                "{}: {e}; phone generations start again at 1",
                path.display()
            );
            BTreeMap::new()
        }
    }
}
