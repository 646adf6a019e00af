//! The dedup keys of stored dials that left the ring: for each phone, the newest
//! [`DialLogConfig::dedup_keys_per_phone`](crate::DialLogConfig::dedup_keys_per_phone) of its
//! stored dials' keys ([`store::id_key`]), in memory of a bounded size however long the app
//! runs and however large the history grows.
//!
//! Why a window per phone is enough: a stored dial comes back only when its phone resends its
//! outbox (`docs/protocol.md`, "Acknowledgement and replay"), and the outbox holds only what
//! the phone has not seen acknowledged. The desktop acknowledges a dial as soon as its group
//! has committed, so what a phone can resend of its stored dials is what it sent in the last
//! moments before a cut (a few groups of at most 1 000). A window per phone, not one for all,
//! so a phone that was away while the others streamed millions of dials still has its own last
//! dials recognised when it comes back.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt as _};

#[cfg(doc)]
use crate::store;

/// Keys of one phone's newest stored dials, oldest first.
#[derive(Default)]
struct PhoneWindow {
    order: VecDeque<i64>,
}

/// Every phone's window, and one count per key across them (so a lookup is one hash probe,
/// whichever phone sent the dial: a phone that moved to a new home keeps its device id, but a
/// dial that reached the desktop from two phones is still one dial).
pub(super) struct RecentKeys {
    per_phone: usize,
    phones: HashMap<i64, PhoneWindow>,
    keys: HashMap<i64, u32>,
}

impl RecentKeys {
    /// An empty set keeping at most `per_phone` keys (at least 1) for each phone.
    pub(super) fn new(per_phone: usize) -> Self {
        Self {
            per_phone: per_phone.max(1),
            phones: HashMap::new(),
            keys: HashMap::new(),
        }
    }

    /// Remembers `key` (a stored dial's [`store::id_key`]) as the newest of `phone`'s (the
    /// phone's [`store::id_key`]), forgetting that phone's oldest past the window.
    pub(super) fn insert(&mut self, phone: i64, key: i64) {
        let window = self.phones.entry(phone).or_default();
        window.order.push_back(key);
        *self.keys.entry(key).or_insert(0) += 1;
        if window.order.len() > self.per_phone {
            if let Some(old) = window.order.pop_front() {
                if let Some(n) = self.keys.get_mut(&old) {
                    *n -= 1;
                    if *n == 0 {
                        self.keys.remove(&old);
                    }
                }
            }
        }
    }

    /// Whether `key` is among the remembered keys of any phone.
    pub(super) fn contains(&self, key: i64) -> bool {
        self.keys.contains_key(&key)
    }

    /// Forgets everything (the history was cleared).
    pub(super) fn clear(&mut self) {
        self.phones.clear();
        self.keys.clear();
    }

    /// Puts keys read newest first (`(phone, key)`, as the loader reads the file backwards) in
    /// front of what is there, each phone's window kept to its bound: what was inserted since
    /// (newer) stays.
    pub(super) fn prepend_newest_first(&mut self, newest_first: Vec<(i64, i64)>) {
        for (phone, key) in newest_first {
            let window = self.phones.entry(phone).or_default();
            if window.order.len() >= self.per_phone {
                continue;
            }
            window.order.push_front(key);
            *self.keys.entry(key).or_insert(0) += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RecentKeys;

    #[test]
    fn each_phone_keeps_its_own_newest_keys() {
        let mut r = RecentKeys::new(3);
        for k in 1..=5 {
            r.insert(100, k);
        }
        // A busy phone does not push a quiet phone's keys out.
        r.insert(200, 50);
        for k in 6..=1000 {
            r.insert(100, k);
        }
        assert!(r.contains(50), "the quiet phone's key was forgotten");
        assert!(!r.contains(5) && !r.contains(997));
        assert!(r.contains(998) && r.contains(999) && r.contains(1000));
        assert_eq!(
            r.keys.len(),
            4,
            "three of the busy phone's, one of the quiet one's"
        );
        assert_eq!(r.phones[&100].order.len(), 3);
    }

    #[test]
    fn a_key_sent_by_two_phones_stays_while_either_remembers_it() {
        let mut r = RecentKeys::new(1);
        r.insert(1, 7);
        r.insert(2, 7);
        r.insert(1, 8);
        assert!(r.contains(7), "phone 2 still has it");
        r.insert(2, 9);
        assert!(!r.contains(7));
    }

    #[test]
    fn keys_loaded_newest_first_go_behind_newer_ones_and_keep_the_bound() {
        let mut r = RecentKeys::new(2);
        r.insert(1, 30);
        r.prepend_newest_first(vec![(1, 20), (1, 10), (2, 5)]);
        assert!(r.contains(30) && r.contains(20) && r.contains(5));
        assert!(!r.contains(10), "past the bound of phone 1");
        assert_eq!((r.phones[&1].order.len(), r.phones[&2].order.len()), (2, 1));
        r.insert(1, 40);
        assert!(!r.contains(20), "the oldest of phone 1 goes first");
        assert!(r.contains(30) && r.contains(40));
    }
}
