//! Interning of the strings dials repeat (phone, caller, callee, endpoint, op), so a ring of
//! 100 000 dials holds each distinct string once.

use std::sync::Arc;

use foldhash::HashSet;

/// Slots of [`Interner`]'s pointer cache (a power of two).
const RECENT_SLOTS: usize = 16;

/// Shares repeated strings (phone, caller, callee, endpoint, op) between dials.
#[derive(Default)]
pub(super) struct Interner {
    set: HashSet<Arc<str>>,
    purge_at: usize,
    /// Strings interned lately, each with the `Arc` it came in as, in the slot its address
    /// picks. A connection reads a phone's repeated strings into one shared `Arc` each (the
    /// link's `SharedStrings`), so most strings arrive as an `Arc` seen before: one pointer
    /// comparison finds it without hashing its text. Holding the incoming `Arc` keeps its
    /// address from being reused for another string while it is here.
    recent: [Option<(Arc<str>, Arc<str>)>; RECENT_SLOTS],
}

impl Interner {
    /// The shared copy of `s`: the first `Arc` interned with its text.
    pub(super) fn intern(&mut self, s: &Arc<str>) -> Arc<str> {
        // Allocations are at least 8-aligned: the bits above those pick the slot.
        let slot = (Arc::as_ptr(s).cast::<u8>() as usize >> 4) % RECENT_SLOTS;
        if let Some((came, shared)) = &self.recent[slot] {
            if Arc::ptr_eq(came, s) {
                return Arc::clone(shared);
            }
        }
        let shared = self.intern_text(s);
        self.recent[slot] = Some((Arc::clone(s), Arc::clone(&shared)));
        shared
    }

    fn intern_text(&mut self, s: &Arc<str>) -> Arc<str> {
        if let Some(found) = self.set.get(&**s) {
            return Arc::clone(found);
        }
        if self.set.len() >= self.purge_at.max(1024) {
            // Forget strings no dial uses any more, so peer-chosen strings cannot pile up.
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.purge_at = self.set.len() * 2;
        }
        self.set.insert(Arc::clone(s));
        Arc::clone(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_the_first_arc_whichever_arc_they_come_in() {
        let mut i = Interner::default();
        let first: Arc<str> = Arc::from("lumirealm");
        let again: Arc<str> = Arc::from("lumirealm");
        let a = i.intern(&first);
        let b = i.intern(&again);
        let c = i.intern(&again);
        assert!(Arc::ptr_eq(&a, &first));
        assert!(Arc::ptr_eq(&b, &first), "a second Arc of the same text");
        assert!(
            Arc::ptr_eq(&c, &first),
            "the same Arc again (the pointer cache)"
        );
    }

    #[test]
    fn every_string_comes_back_with_its_own_text_however_many_come() {
        // Many distinct strings, each dropped after it is interned: their addresses are
        // reused by the next ones, which must never be taken for the strings cached.
        let mut i = Interner::default();
        let mut kept = Vec::new();
        for n in 0..20_000u32 {
            let s: Arc<str> = Arc::from(format!("endpoint_{}", n % 3_000).as_str());
            let got = i.intern(&s);
            assert_eq!(&*got, &*s, "string {n}");
            if n % 7 == 0 {
                kept.push(got);
            }
        }
        // Purged strings that dials no longer use are gone; the ones still held stay shared.
        for k in &kept {
            let again: Arc<str> = Arc::from(&**k);
            assert!(Arc::ptr_eq(&i.intern(&again), k), "{k}");
        }
    }
}
