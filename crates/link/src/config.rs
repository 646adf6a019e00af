//! The link's settings: the default port, where the trust file lives, timers, limits, the clock.
//!
//! Why a file of its own: the listener ([`super::server`]), the state every connection shares
//! ([`super::shared`]) and the connections ([`super::connection`]) all read these settings,
//! so they sit below all three. `docs/protocol.md`, "Link: pairing and sessions".

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::pairing::{Clock, SystemClock, PAIRING_TTL_MS};

/// The link's default TCP port.
pub const DEFAULT_PORT: u16 = 47470;

/// A shared log of every frame the desktop writes (text as sent), for tests and support.
pub type FrameLog = Arc<Mutex<Vec<String>>>;

/// Settings of a [`Link`].
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Folder holding the trust file.
    pub data_dir: PathBuf,
    /// ifp versions this desktop speaks, inclusive (default [`switchboard_wire::app_info::IFP_RANGE`]).
    pub protocol: (u32, u32),
    /// How often the desktop sends `control.ping` to a connected phone (default 15 s).
    pub ping_interval: Duration,
    /// Silence after which a phone counts as gone (default 45 s).
    pub dead_after: Duration,
    /// How long a connection may stay without a valid hello, from its TCP accept, pairing
    /// included (default 20 s). Past it the connection is closed wherever it is stuck.
    pub hello_timeout: Duration,
    /// How long the TLS handshake may take, from the TCP accept (default 5 s).
    pub tls_timeout: Duration,
    /// How long the WebSocket upgrade may take, from the end of the TLS handshake (default 5 s).
    pub upgrade_timeout: Duration,
    /// How long a connection may wait after the upgrade before its first `pair.request` or
    /// `control.hello` (default 10 s; pings do not count).
    pub first_message_timeout: Duration,
    /// How long one frame may take to write before the peer counts as not reading and the
    /// connection is closed (default 10 s).
    pub write_timeout: Duration,
    /// Most connections without a valid hello at once, from every source together (default
    /// 32). A newcomer past it evicts the oldest connection of the source holding the most
    /// (among sources holding equally many, of the one opening clearly the most lately); it is
    /// never refused ([`super::budget`]).
    pub max_unauthenticated: usize,
    /// Most connections without a valid hello at once from one source address (default 4).
    /// A newcomer past it evicts that source's oldest connection.
    pub max_unauthenticated_per_source: usize,
    /// How long a pairing code lives, ms (default [`PAIRING_TTL_MS`]).
    pub pairing_ttl_ms: u64,
    /// How long a pending pairing waits for both confirmations (default
    /// [`PENDING_TTL_MS`](super::pairing::PENDING_TTL_MS), 2 minutes).
    pub pending_ttl: Duration,
    /// Advertise over mDNS (default true; tests turn it off).
    pub mdns: bool,
    /// How often the running link looks at the machine's addresses where the system does not
    /// say when they change (default 3 s): on Linux the kernel's route socket tells the link of
    /// every change and no timer runs ([`AddressWatch`](crate::addresses::AddressWatch)); this
    /// is used only where that socket cannot be opened, and on other systems. When they changed
    /// (an address added or gone, an interface up or down), mDNS advertises the new ones, an
    /// open pairing window offers them, and [`LinkEvent::AddressesChanged`] says so.
    ///
    /// [`LinkEvent::AddressesChanged`]: super::LinkEvent::AddressesChanged
    pub address_check: Duration,
    /// Wall clock (default [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
    /// If set, every frame the desktop writes is appended here.
    pub frame_log: Option<FrameLog>,
}

impl LinkConfig {
    /// Defaults, with the trust file in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            protocol: switchboard_wire::app_info::IFP_RANGE,
            ping_interval: Duration::from_secs(15),
            dead_after: Duration::from_secs(45),
            hello_timeout: Duration::from_secs(20),
            tls_timeout: Duration::from_secs(5),
            upgrade_timeout: Duration::from_secs(5),
            first_message_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_unauthenticated: 32,
            max_unauthenticated_per_source: 4,
            pairing_ttl_ms: PAIRING_TTL_MS,
            pending_ttl: Duration::from_millis(super::pairing::PENDING_TTL_MS),
            mdns: true,
            address_check: Duration::from_secs(3),
            clock: Arc::new(SystemClock),
            frame_log: None,
        }
    }
}
