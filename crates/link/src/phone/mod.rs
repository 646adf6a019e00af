//! The reference phone: what the `switchboard-phone` simulator and the desktop's `--demo` run.
//!
//! Why: a desktop companion needs a phone to talk to in tests, demos and load runs, and phone
//! developers need a working counterpart to read. This one speaks exactly what
//! `docs/protocol.md` describes: it pairs (`link::phone_client`), says hello, mirrors phone-line
//! events ([`switchboard_domain::phone_events`]) and forwards `action.*` messages from a scenario, keeps what
//! the desktop has not acknowledged and replays it after a reconnect.
//!
//! - [`scenario`]: the JSON Lines scenario format and its placeholders.
//! - [`player`]: [`player::Player`] — connect, pair/hello, play at a rate, acks, reconnects.
//! - [`identity`]: the simulator's identity file (`--identity`).
//! - [`discover`]: finding the desktop (mDNS, an address, a `switchboard://pair` link).
//! - [`demo`]: the embedded demo scenario and [`demo::spawn_demo_phone`] for `--demo`.

pub mod demo;
pub mod discover;
pub mod identity;
pub mod player;
pub mod scenario;
