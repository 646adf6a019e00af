//! Interning of the strings dials repeat (phone, caller, callee, endpoint, op), so a ring of
//! 100 000 dials holds each distinct string once.

use std::sync::Arc;

use foldhash::HashSet;

/// Shares repeated strings (phone, caller, callee, endpoint, op) between dials.
#[derive(Default)]
pub(super) struct Interner {
    set: HashSet<Arc<str>>,
    purge_at: usize,
}

impl Interner {
    pub(super) fn intern(&mut self, s: &Arc<str>) -> Arc<str> {
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
