//! The pairing window: one 6-digit code, its fixed expiry and the wrong codes it still takes.
//!
//! Kept apart from the backoff and the invitation because the window is the only thing that
//! decides whether a code is right; everything else only slows guessers down or shows the code.

use rand::Rng as _;

use super::MAX_WRONG_TRIES;

/// An open pairing window: one code, its fixed expiry and the wrong codes so far.
#[derive(Debug, Clone)]
pub struct PairingWindow {
    pub(super) digits: String,
    expires_at_ms: u64,
    wrong_tries: u32,
    /// The right code came and its pairing waits for the two confirmations: no other code is
    /// checked until it ends ([`PairingWindow::release_failed`], or the caller closes it).
    held: bool,
}

/// What checking a code against the window gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code is right; the window is used up (the caller closes it).
    Accepted,
    /// Wrong code; `tries_left` more wrong codes before the window closes.
    Wrong {
        /// Wrong codes left in this window.
        tries_left: u32,
    },
    /// The window expired (whatever the code); the caller closes it.
    Expired,
    /// A pairing made with the right code is waiting for its confirmations: nothing is checked
    /// until it ends (answered like "no window", so a peer learns nothing).
    Held,
    /// That was the window's last allowed wrong code: the caller closes the window, and the
    /// person has to open a new one.
    Closed,
}

impl PairingWindow {
    /// Opens a window with a fresh random code, valid for `ttl_ms` from `now_ms`.
    pub fn open(now_ms: u64, ttl_ms: u64) -> Self {
        let n: u32 = rand::rngs::OsRng.gen_range(0..1_000_000);
        Self {
            digits: format!("{n:06}"),
            expires_at_ms: now_ms.saturating_add(ttl_ms),
            wrong_tries: 0,
            held: false,
        }
    }

    /// The code as shown to people: `123-456`.
    pub fn code(&self) -> String {
        let (a, b) = self.digits.split_at(3);
        format!("{a}-{b}")
    }

    /// When the code stops working, milliseconds since the Unix epoch (fixed at opening).
    pub fn expires_at_ms(&self) -> u64 {
        self.expires_at_ms
    }

    /// Whether the window has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_at_ms
    }

    /// Wrong codes this window has taken so far.
    pub fn wrong_tries(&self) -> u32 {
        self.wrong_tries
    }

    /// Whether a pairing made with this window's code is waiting for its confirmations.
    pub fn held(&self) -> bool {
        self.held
    }

    /// Checks `given` (digits, with or without `-` or spaces) at time `now_ms`.
    ///
    /// An expired window answers [`CodeCheck::Expired`] whatever the code; a held one
    /// [`CodeCheck::Held`]. A wrong code counts against the window's budget; the
    /// [`MAX_WRONG_TRIES`]th answers [`CodeCheck::Closed`]. The right code answers
    /// [`CodeCheck::Accepted`] and holds the window for that pairing: the caller closes it when
    /// the pairing is confirmed, or calls [`PairingWindow::release_failed`] when it is not.
    /// Nothing here changes the code or the expiry. The caller closes the window on `Expired`
    /// and `Closed`.
    pub fn check(&mut self, given: &str, now_ms: u64) -> CodeCheck {
        if self.expired(now_ms) {
            return CodeCheck::Expired;
        }
        if self.held {
            return CodeCheck::Held;
        }
        if self.wrong_tries >= MAX_WRONG_TRIES {
            return CodeCheck::Closed;
        }
        let cleaned: String = given.chars().filter(|c| *c != '-' && *c != ' ').collect();
        let same = cleaned.len() == self.digits.len()
            && cleaned
                .bytes()
                .zip(self.digits.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if same {
            self.held = true;
            return CodeCheck::Accepted;
        }
        self.wrong_tries += 1;
        if self.wrong_tries >= MAX_WRONG_TRIES {
            return CodeCheck::Closed;
        }
        CodeCheck::Wrong {
            tries_left: MAX_WRONG_TRIES - self.wrong_tries,
        }
    }

    /// The pairing that held the window ended without being confirmed (bad signature, the
    /// phone left, the phone said the codes differ, nobody confirmed in time): it counts as one
    /// wrong try. Returns whether the window is still usable at `now_ms` (time and budget left);
    /// when not, the caller closes it.
    pub fn release_failed(&mut self, now_ms: u64) -> bool {
        self.held = false;
        self.wrong_tries = self.wrong_tries.saturating_add(1);
        self.wrong_tries < MAX_WRONG_TRIES && !self.expired(now_ms)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::pairing::PAIRING_TTL_MS;

    #[test]
    fn code_shape_and_acceptance() {
        let mut w = PairingWindow::open(1000, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(code.len(), 7);
        assert_eq!(code.as_bytes()[3], b'-');
        assert!(code
            .chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit()));
        assert_eq!(w.check(&code.replace('-', ""), 2000), CodeCheck::Accepted);
        let mut w = PairingWindow::open(1000, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 2000), CodeCheck::Accepted);
    }

    #[test]
    fn expiry_is_at_two_minutes() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, PAIRING_TTL_MS), CodeCheck::Expired);
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, PAIRING_TTL_MS - 1), CodeCheck::Accepted);
    }

    #[test]
    fn fifth_wrong_code_closes_the_window_and_nothing_extends_it() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let right = w.digits.clone();
        let wrong = if right == "000000" {
            "111111"
        } else {
            "000000"
        };
        for left in (1..MAX_WRONG_TRIES).rev() {
            assert_eq!(w.check(wrong, 10), CodeCheck::Wrong { tries_left: left });
        }
        assert_eq!(w.check(wrong, 10), CodeCheck::Closed);
        // Same code, same expiry: the budget is spent, and even the right code is refused now.
        assert_eq!(w.digits, right);
        assert_eq!(w.expires_at_ms(), PAIRING_TTL_MS);
        assert_eq!(w.check(&right, 20), CodeCheck::Closed);
        assert_eq!(w.wrong_tries(), MAX_WRONG_TRIES);
    }

    #[test]
    fn a_held_window_checks_nothing_and_a_failed_pairing_costs_one_try() {
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 10), CodeCheck::Accepted);
        assert!(w.held());
        // While held, even the right code is not checked (and costs nothing).
        assert_eq!(w.check(&code, 20), CodeCheck::Held);
        assert_eq!(w.wrong_tries(), 0);
        assert!(w.release_failed(30));
        assert_eq!(w.wrong_tries(), 1);
        assert_eq!(w.check(&code, 40), CodeCheck::Accepted);
        // Failed pairings spend the budget like wrong codes.
        let mut left = true;
        for _ in 1..MAX_WRONG_TRIES {
            left = w.release_failed(50);
            if left {
                assert_eq!(w.check(&code, 60), CodeCheck::Accepted);
            }
        }
        assert!(!left);
        assert_eq!(w.check(&code, 70), CodeCheck::Closed);
        // Released after the window's time: not usable either.
        let mut w = PairingWindow::open(0, PAIRING_TTL_MS);
        let code = w.code();
        assert_eq!(w.check(&code, 10), CodeCheck::Accepted);
        assert!(!w.release_failed(PAIRING_TTL_MS));
    }
}
