//! What this build of Switchboard is and which protocol versions it speaks.
//!
//! Spec: `openphone-runtime-protocol.md` ("Handshake advertisement": `runtime_protocol: {name,
//! min_version, max_version}`) and `ifp1-notes.md` (`protocol {min,max}` in `control.hello`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The application's display name.
pub const APP_NAME: &str = "Switchboard";

/// The application's version, from `Cargo.toml`.
pub const APP_VERSION: &str = env!("CARGO_PKG_VERSION");

/// An inclusive range of supported protocol versions, as the runtime protocol's handshake
/// advertisement gives it: `{ name, min_version, max_version }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ProtocolRange {
    /// The protocol's name (`openphone-runtime`, `ifp`).
    pub name: String,
    /// Lowest supported version, inclusive (>= 1).
    pub min_version: u32,
    /// Highest supported version, inclusive (>= `min_version`).
    pub max_version: u32,
}

/// The build's identity and protocol ranges, as `switchboard info --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct AppInfo {
    /// Display name (`Switchboard`).
    pub name: String,
    /// Semantic version of this build.
    pub version: String,
    /// OpenPhone runtime protocol manifests this build loads (spec: "Versioning").
    pub runtime_protocol: ProtocolRange,
    /// ifp/1 wire versions this build accepts in `control.hello`.
    pub ifp: ProtocolRange,
}

/// The OpenPhone runtime-protocol manifest versions supported: inclusive `1..=1`.
pub const RUNTIME_PROTOCOL_RANGE: (u32, u32) = (1, 1);

/// The ifp wire versions supported: inclusive `1..=1`.
pub const IFP_RANGE: (u32, u32) = (1, 1);

/// Returns this build's [`AppInfo`].
pub fn app_info() -> AppInfo {
    AppInfo {
        name: APP_NAME.to_string(),
        version: APP_VERSION.to_string(),
        runtime_protocol: ProtocolRange {
            name: "openphone-runtime".to_string(),
            min_version: RUNTIME_PROTOCOL_RANGE.0,
            max_version: RUNTIME_PROTOCOL_RANGE.1,
        },
        ifp: ProtocolRange {
            name: "ifp".to_string(),
            min_version: IFP_RANGE.0,
            max_version: IFP_RANGE.1,
        },
    }
}
