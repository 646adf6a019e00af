//! The built-in demo: the scenario embedded in the binary, and a demo phone the desktop can run
//! in-process on loopback (`--demo`).
//!
//! The scenario (`scenarios/demo.jsonl`, made from `../shared/corpus` by
//! `scripts/gen-demo-scenario.py`; embedded so nothing outside the binary is read at run time):
//! LumiAgent dials LumiRealm (describe with LumiRealm's real describe manifest, list, read, grep),
//! a dial fails with the host's real permission error and later recovers, LumiRealm's probe read
//! fails and a permission change fixes it, a second extension's describe name does not match the
//! registry, OpenPhone proposals (`messages.send`, `calendar.add`) end executed, rejected,
//! expired and cancelled after a binding mismatch, and `phone_action` proposals (alarm, navigate,
//! add_stop, sms_draft) end done, declined, failed with the phone's message and with no answer in
//! time.
//!
//! [`spawn_demo_phone`] is the one call the desktop shell makes: it pairs a "Demo phone" with the
//! running [`Link`] by itself (opening a pairing window and reading the code in-process) unless it
//! is already paired, then plays the demo.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use tokio::task::JoinHandle;

use super::identity::{IdentityFile, IdentityFileError, KnownDesktop};
use super::player::{Join, PlayError, PlayOptions, PlayReport, Player, Rate};
use super::scenario::{Scenario, ScenarioError};
use crate::Link;

/// The demo scenario, JSON Lines (see [`super::scenario`]).
pub const DEMO_SCENARIO: &str = include_str!("../../../../scenarios/demo.jsonl");

/// The demo phone's label.
pub const DEMO_LABEL: &str = "Demo phone";

/// The file (in the desktop's data folder) keeping the demo phone's identity.
pub const DEMO_IDENTITY_FILE: &str = "demo-phone.json";

/// The demo scenario, parsed.
///
/// Errors: never for the embedded file (a test parses it); kept as a `Result` so a broken build
/// says what is wrong instead of panicking.
pub fn demo_scenario() -> Result<Scenario, ScenarioError> {
    Scenario::parse(DEMO_SCENARIO)
}

/// Errors of the demo phone.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The link is not listening yet (call after [`Link::run`]).
    #[error("the link is not listening yet: start it before the demo phone")]
    NotListening,
    /// The demo identity file could not be read or written.
    #[error(transparent)]
    Identity(#[from] IdentityFileError),
    /// The embedded scenario is broken.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// Playing failed.
    #[error(transparent)]
    Play(#[from] PlayError),
    /// The link could not forget a stale demo pairing.
    #[error("link: {0}")]
    Link(String),
}

/// Options of the demo phone.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Folder of the demo identity file ([`DEMO_IDENTITY_FILE`]); usually the desktop's data dir.
    pub data_dir: PathBuf,
    /// How fast to play (default [`Rate::Recorded`]: about two and a half minutes).
    pub rate: Rate,
    /// Repetitions (default 1).
    pub count: u64,
    /// The id seed (default random; fix it to reproduce a run).
    pub run: Option<String>,
    /// Epoch ms of the scenario's time 0 (default now).
    pub base_ms: Option<u64>,
    /// For tests: cut the connection after these frames (see [`PlayOptions::cut_after`]).
    pub cut_after: Vec<u64>,
    /// After the script, stay connected as an idle phone ([`PlayOptions::stay_connected`]):
    /// the Phones view keeps showing the demo phone connected, as a real idle phone is.
    /// Default true; false makes [`run_demo_phone`] return once the script is acknowledged.
    pub stay_connected: bool,
}

impl DemoOptions {
    /// Defaults, keeping the identity in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        DemoOptions {
            data_dir: data_dir.into(),
            rate: Rate::Recorded,
            count: 1,
            run: None,
            base_ms: None,
            cut_after: Vec::new(),
            stay_connected: true,
        }
    }
}

/// Starts the demo phone on the current tokio runtime: it connects to `link` over loopback,
/// pairs by itself if needed, and plays the demo scenario. The task ends with the play's report
/// (with [`DemoOptions::stay_connected`], only once the desktop unpairs the demo phone).
///
/// Call after [`Link::run`] (the link must know its port). Pairing opens the link's pairing
/// window for the demo phone (replacing a window the person may have open).
pub fn spawn_demo_phone(
    link: Link,
    options: DemoOptions,
) -> JoinHandle<Result<PlayReport, DemoError>> {
    tokio::spawn(async move { run_demo_phone(&link, options).await })
}

/// [`spawn_demo_phone`]'s body, for callers that want to await it directly.
///
/// Errors: [`DemoError`] naming the step that failed.
pub async fn run_demo_phone(link: &Link, options: DemoOptions) -> Result<PlayReport, DemoError> {
    let scenario = demo_scenario()?;
    let bound = link.local_addr().ok_or(DemoError::NotListening)?;
    let ip = if bound.ip().is_unspecified() {
        match bound.ip() {
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    } else {
        bound.ip()
    };
    let addr = SocketAddr::new(ip, bound.port());
    let fp = link.identity().cert_fingerprint().to_string();
    let path = options.data_dir.join(DEMO_IDENTITY_FILE);
    let mut file = IdentityFile::load_or_create(&path, DEMO_LABEL)?;
    let me = file.identity();
    let paired_here = link
        .paired_phones()
        .iter()
        .any(|p| p.device_id == me.device_id() && p.public_key == me.public_key_b64());
    let join = match file
        .desktop
        .as_ref()
        .filter(|d| d.cert_fp == fp && paired_here)
    {
        Some(d) => Join::Paired {
            desktop_public_key: d.public_key.clone(),
        },
        None => {
            if link
                .paired_phones()
                .iter()
                .any(|p| p.device_id == me.device_id())
            {
                link.unpair(me.device_id())
                    .map_err(|e| DemoError::Link(e.to_string()))?;
            }
            let invite = link.open_pairing(ip);
            Join::Pair { code: invite.code }
        }
    };
    let mut opts = PlayOptions::new();
    opts.rate = options.rate;
    opts.count = options.count.max(1);
    if let Some(run) = options.run {
        opts.run = run;
    }
    if let Some(b) = options.base_ms {
        opts.base_ms = b;
    }
    opts.cut_after = options.cut_after;
    opts.stay_connected = options.stay_connected;
    // The pairing is kept as soon as it is made: a demo stopped before its script ends (or one
    // that stays connected) still knows next time that it paired before.
    {
        let (file, path, addr, fp) = (file.clone(), path.clone(), addr, fp.clone());
        opts.on_paired = crate::phone::player::OnPaired::new(move |p| {
            let mut file = file.clone();
            file.desktop = Some(KnownDesktop {
                other_addresses: Vec::new(),
                address: addr.to_string(),
                cert_fp: fp.clone(),
                public_key: p.desktop_public_key.clone(),
            });
            if let Err(e) = file.save(&path) {
                tracing::error!("the demo phone's pairing was not kept: {e}");
            }
        });
    }
    // The built-in demo phone is ours, in this process, on loopback: it is trusted without the
    // person comparing codes. It confirms its own pending pairing on the desktop's side (by its
    // device id) and says the codes match on its side. A real phone never can: the desktop's
    // confirmation comes only from the person, through the Phones view.
    let desk = link.clone();
    opts.confirm =
        crate::phone::player::Confirmer::new(move |pending| match desk.pending_pairing() {
            Some(p)
                if p.device_id == pending.device_id
                    && p.verification_code == pending.verification_code =>
            {
                desk.confirm_pairing(&p.id, true).is_ok()
            }
            _ => false,
        });
    let player = Player::new(addr, &fp, me, join, &scenario, opts);
    let report = player.play().await?;
    if let Some(p) = &report.paired {
        file.desktop = Some(KnownDesktop {
            other_addresses: Vec::new(),
            address: addr.to_string(),
            cert_fp: fp,
            public_key: p.desktop_public_key.clone(),
        });
        file.save(&path)?;
    }
    Ok(report)
}

/// The demo phone's device id when its identity file in `data_dir` says it paired with a
/// desktop before (`None`: never paired, no file, or a file that cannot be read). The demo
/// desktop's identity is made afresh at every start (in memory, `ifp1-notes.md`: "Private keys
/// belong in the OS key store. No default or development credential may exist."), so the demo
/// phone pairs again at every start; the app uses this to tell that re-pairing from the first
/// pairing, which is the only one it announces.
pub fn paired_before(data_dir: &Path) -> Option<String> {
    let file = IdentityFile::load(&demo_identity_path(data_dir)).ok()?;
    file.desktop.is_some().then_some(file.device_id)
}

/// The demo identity file's path in `data_dir`.
pub fn demo_identity_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DEMO_IDENTITY_FILE)
}
