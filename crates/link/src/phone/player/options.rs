//! How a play runs: its pace ([`Rate`]), how the phone joins ([`Join`]), who confirms the
//! verification code ([`Confirmer`]), who is told once paired ([`OnPaired`]), and the rest of
//! [`PlayOptions`] (repetitions, run seed, time 0, reconnects, the clock the phone reads).
//!
//! Apart from the player so a caller can read every knob in one place without the play loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::PairedInfo;
use crate::phone_client::PendingPair;
use switchboard_wire::clock::{Clock, SystemClock};

/// How fast to play.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// At the scenario's recorded times.
    Recorded,
    /// At most this many messages per second (> 0).
    PerSecond(f64),
    /// As fast as the connection takes them, in batches.
    Max,
}

impl std::str::FromStr for Rate {
    type Err = String;

    /// `recorded`, `max`, `N` or `N/s` (N > 0, e.g. `200/s`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "recorded" => Ok(Rate::Recorded),
            "max" => Ok(Rate::Max),
            other => {
                let n = other.strip_suffix("/s").unwrap_or(other);
                match n.parse::<f64>() {
                    Ok(r) if r > 0.0 && r.is_finite() => Ok(Rate::PerSecond(r)),
                    _ => Err(format!(
                        "rate {other:?}: expected `recorded`, `max` or a number of messages per second like `200/s`"
                    )),
                }
            }
        }
    }
}

/// How the phone proves itself on connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Join {
    /// Already paired: the desktop's Ed25519 public key from pairing (checked on every hello).
    Paired {
        /// The desktop's public key, base64url.
        desktop_public_key: String,
    },
    /// Pair first with this code (`123-456` or `123456`).
    Pair {
        /// The pairing code the desktop shows.
        code: String,
    },
}

/// How the phone's person answers "does the desktop show this verification code?" while
/// pairing: `true` when it does. Called once per pairing, after the code is known.
#[derive(Clone)]
pub struct Confirmer(Arc<dyn Fn(&PendingPair) -> bool + Send + Sync>);

impl Confirmer {
    /// Answers with `f` (which may ask a person; it may block).
    pub fn new(f: impl Fn(&PendingPair) -> bool + Send + Sync + 'static) -> Self {
        Confirmer(Arc::new(f))
    }

    /// Always "the codes match", without asking (scripts and tests: the person on the desktop
    /// still has to confirm there).
    pub fn auto() -> Self {
        Confirmer::new(|_| true)
    }

    /// The answer for `pending`.
    pub fn confirm(&self, pending: &PendingPair) -> bool {
        (self.0)(pending)
    }
}

impl std::fmt::Debug for Confirmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Confirmer(..)")
    }
}

/// Told once the phone has paired, with what pairing gave, before anything is played: a caller
/// that keeps the pairing (the demo phone's identity file) saves it at once, so it is kept
/// even when the play is stopped before it ends (or never ends: [`PlayOptions::stay_connected`]).
#[derive(Clone, Default)]
pub struct OnPaired(Option<Arc<PairedFn>>);

/// What [`OnPaired`] calls.
type PairedFn = dyn Fn(&PairedInfo) + Send + Sync;

impl OnPaired {
    /// Calls `f` once the phone has paired.
    pub fn new(f: impl Fn(&PairedInfo) + Send + Sync + 'static) -> Self {
        OnPaired(Some(Arc::new(f)))
    }

    pub(super) fn paired(&self, info: &PairedInfo) {
        if let Some(f) = &self.0 {
            f(info);
        }
    }
}

impl std::fmt::Debug for OnPaired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OnPaired(..)"
        } else {
            "OnPaired(none)"
        })
    }
}

/// What to play and how.
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// How fast.
    pub rate: Rate,
    /// Repetitions of the scenario (>= 1).
    pub count: u64,
    /// Seed of the ids (a fresh random one per run unless reproducing a run).
    pub run: String,
    /// Epoch ms of the scenario's time 0.
    pub base_ms: u64,
    /// Reconnect attempts in a row before giving up.
    pub max_reconnects: u32,
    /// Longest wait for the final acknowledgement once everything is sent.
    pub ack_wait: Duration,
    /// For tests: cut the connection (no close frame) right after the frame with this 1-based
    /// number is handed over, dropping the [`CUT_LOSES`] next frames as if lost in flight.
    pub cut_after: Vec<u64>,
    /// How the phone confirms the verification code when pairing (default
    /// [`Confirmer::auto`]).
    pub confirm: Confirmer,
    /// Silence from the desktop after which the phone counts the link as dead, drops it without
    /// a close and reconnects (default [`DEAD_AFTER`], 45 s: the desktop pings every 15 s, so
    /// three pings missed). A link cut without a close (Wi-Fi lost) is noticed this way.
    pub dead_after: Duration,
    /// Other addresses of the same desktop (a pairing link's `alt`, mDNS), tried concurrently
    /// with the first ([`PhoneClient::connect_any`]); the one that worked is tried first on
    /// every reconnect.
    pub also_try: Vec<SocketAddr>,
    /// Once everything is sent and acknowledged, stay connected as an idle phone does
    /// (answering pings and the desktop's requests, reconnecting when cut off) until the desktop
    /// unpairs it or the task is stopped, instead of closing the connection and returning.
    /// Default false.
    pub stay_connected: bool,
    /// Told once the phone has paired (default: nobody).
    pub on_paired: OnPaired,
    /// The clock the phone reads: the `ts` of the messages it builds itself (pairing, hello,
    /// pong) and the times of its link attempts (default the system clock; tests hand in a
    /// `ManualClock`, [`PlayOptions::with_clock`]). [`PlayOptions::base_ms`] is read from it
    /// once, when the options are made.
    pub clock: Arc<dyn Clock>,
}

/// The default [`PlayOptions::dead_after`]: 45 s without a frame from the desktop.
pub const DEAD_AFTER: Duration = Duration::from_secs(45);

/// Frames "lost in flight" at a test cut: counted as sent, never written.
pub const CUT_LOSES: usize = 3;

impl PlayOptions {
    /// Defaults: recorded pace, one repetition, a random run seed, time 0 = now, 20 reconnects,
    /// 30 s for the final acknowledgement, no cuts, the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// The defaults of [`PlayOptions::new`] with the phone reading `clock`: time 0
    /// ([`PlayOptions::base_ms`]) is `clock`'s now.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        PlayOptions {
            rate: Rate::Recorded,
            count: 1,
            run: random_run(),
            base_ms: clock.now_ms(),
            max_reconnects: 20,
            ack_wait: Duration::from_secs(30),
            cut_after: Vec::new(),
            confirm: Confirmer::auto(),
            dead_after: DEAD_AFTER,
            also_try: Vec::new(),
            stay_connected: false,
            on_paired: OnPaired::default(),
            clock,
        }
    }
}

impl Default for PlayOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// A random run seed (16 hex characters).
pub fn random_run() -> String {
    use rand::Rng as _;
    let b: [u8; 8] = rand::rngs::OsRng.gen();
    hex::encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_wire::clock::ManualClock;

    #[test]
    fn time_zero_is_the_handed_clocks_now() {
        let clock = Arc::new(ManualClock::new(1_784_595_600_000));
        let opts = PlayOptions::with_clock(clock.clone());
        assert_eq!(opts.base_ms, 1_784_595_600_000);
        clock.advance(5_000);
        assert_eq!(
            opts.clock.now_ms(),
            1_784_595_605_000,
            "the phone reads that clock"
        );
        assert_eq!(opts.base_ms, 1_784_595_600_000, "time 0 stays where it was");
    }
}
