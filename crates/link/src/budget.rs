//! The budget of connections that have not said a valid hello yet: per source address and in
//! total, apart from the phones' live sessions, with eviction instead of refusal.
//!
//! Why a file of its own: anyone on the network can open connections; a paired phone must get in
//! whatever they do, or a flood of half-open sockets from one host (or many) would lock the person
//! out of their own phone. The listener ([`super::server`]) admits every accepted socket
//! here before serving it, and a connection leaves the budget when its phone's hello verifies
//! ([`PendingTicket::promote`]) or when it ends. `docs/protocol.md`, "Connection budget".
//!
//! Rules (`max_total` = [`LinkConfig::max_unauthenticated`], `max_per_source` =
//! [`LinkConfig::max_unauthenticated_per_source`]):
//! - a newcomer is always admitted;
//! - if its source already holds `max_per_source`, that source's oldest connection is evicted
//!   (a source only ever pushes out its own);
//! - else if `max_total` are held, a connection of the source holding the most is evicted; among
//!   sources holding equally many, the one that opened clearly the most connections lately (its
//!   *open rate*: every connection it opened counts 1, halving every [`OPEN_RATE_HALF_LIFE`];
//!   rates are compared in doublings, [`rate_class`], so opening one or two more than another
//!   source does not single an address out); then the oldest connection of those. Sources that are not *known* are looked at first: a known
//!   source is the address a paired phone last connected from (its pairing record's
//!   `last_address`), whose connections go last;
//! - an evicted connection's task is aborted at once (its socket is dropped, wherever it is
//!   stuck: TCP, TLS, upgrade, or a write to a peer that does not read), and so is any
//!   connection still without hello [`LinkConfig::hello_timeout`] after its accept
//!   ([`Budget::overdue`]).
//!
//! What an attacker gets: from one address, at most `max_per_source` connections, and every one
//! it opens pushes out only its own. A paired phone coming from the address it last used is
//! never pushed out by connections from other addresses, however many. From a new address, a
//! phone's fresh connection (its source holding 1, having opened 1) is never the one evicted
//! while any source holds more than one, nor while any source holding one has opened more
//! lately than the phone's address: a host that keeps re-opening raises its own addresses' open
//! rate with every connection, so the connections it pushes out are its own. The only way to
//! push such a phone out is from at least `max_total` distinct addresses each opening no more
//! than the phone does (about one connection per [`OPEN_RATE_HALF_LIFE`]), all within the
//! phone's handshake (a few milliseconds on a LAN), over and over.
//!
//! Memory: the open rates are kept for at most [`MAX_RATED_SOURCES`] addresses (the ones that
//! opened the most lately stay), so addresses without end (an IPv6 prefix) cannot grow it.
//!
//! [`LinkConfig::max_unauthenticated`]: super::config::LinkConfig::max_unauthenticated
//! [`LinkConfig::max_unauthenticated_per_source`]: super::config::LinkConfig::max_unauthenticated_per_source
//! [`LinkConfig::hello_timeout`]: super::config::LinkConfig::hello_timeout

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use switchboard_wire::sync::lock;

/// How fast a source's open rate fades: each connection it opened counts half as much this
/// much later (10 s).
pub(super) const OPEN_RATE_HALF_LIFE: Duration = Duration::from_secs(10);

/// Most source addresses whose open rate is kept (4 096); past it the ones that opened the
/// least lately are forgotten first.
pub(super) const MAX_RATED_SOURCES: usize = 4096;

/// A source's open rate: connections it opened, each weighing `0.5^(age / half-life)`.
#[derive(Debug, Clone, Copy)]
struct OpenRate {
    /// The weight at `at`.
    weight: f64,
    at: Instant,
}

impl OpenRate {
    fn at(&self, now: Instant) -> f64 {
        let age = now.saturating_duration_since(self.at).as_secs_f64();
        self.weight * (-age / OPEN_RATE_HALF_LIFE.as_secs_f64()).exp2()
    }
}

/// The class an open rate falls in for eviction: `floor(log2(rate + 0.5))`, so a source that
/// opened 1 lately is class 0, 2 or 3 class 1, 4 to 7 class 2, and so on (a rate still
/// fading towards a whole number stays in its class). A source goes before another holding
/// as many only when its class is higher.
fn rate_class(rate: f64) -> i32 {
    // Bounded: rates are counts of connections (at most 2^64), so the log is at most 64.
    (rate.max(0.0) + 0.5).log2().floor() as i32
}

/// Why a connection without hello was dropped by the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Eviction {
    /// Its source held its per-source share and opened another connection.
    SourceFull,
    /// The budget was full and its source held the most.
    TotalFull,
    /// It was still without hello past the hello deadline.
    Overdue,
}

/// One connection the budget dropped: who, why, and the handle that ends its task (the caller
/// calls [`Evicted::abort`] once it let go of the budget's lock).
#[derive(Debug)]
pub(super) struct Evicted {
    /// The peer's address.
    pub(super) peer: SocketAddr,
    /// Why.
    pub(super) why: Eviction,
    /// How long it had been held.
    pub(super) held: Duration,
    task: Option<AbortHandle>,
}

impl Evicted {
    /// Ends the evicted connection's task (its socket is dropped wherever it is stuck).
    pub(super) fn abort(&self) {
        if let Some(a) = &self.task {
            a.abort();
        }
    }
}

struct Pending {
    peer: SocketAddr,
    /// From a known source (a paired phone's last address): evicted for another source only
    /// when no connection of an unknown source is held.
    known: bool,
    since: Instant,
    abort: Option<AbortHandle>,
}

/// The connections without a valid hello, oldest first, and how many each source holds.
#[derive(Default)]
pub(super) struct Budget {
    max_total: usize,
    max_per_source: usize,
    next: u64,
    /// By admission number, so the first entry is the oldest.
    pending: BTreeMap<u64, Pending>,
    per_source: HashMap<IpAddr, usize>,
    /// Each source's open rate (at most [`MAX_RATED_SOURCES`]).
    opened: HashMap<IpAddr, OpenRate>,
    evicted: u64,
}

impl Budget {
    /// A budget of `max_total` connections, `max_per_source` from one address (both at least 1).
    pub(super) fn new(max_total: usize, max_per_source: usize) -> Self {
        Self {
            max_total: max_total.max(1),
            max_per_source: max_per_source.max(1),
            ..Self::default()
        }
    }

    /// Admits a newcomer from `peer` at `now` (`known`: from a paired phone's last address);
    /// returns its number and the connections evicted to make room (already out of the budget;
    /// the caller aborts them).
    pub(super) fn admit(
        &mut self,
        peer: SocketAddr,
        known: bool,
        now: Instant,
    ) -> (u64, Vec<Evicted>) {
        let source = peer.ip();
        self.count_open(source, now);
        let mut out = Vec::new();
        let held = self.per_source.get(&source).copied().unwrap_or(0);
        let victim = if held >= self.max_per_source {
            self.oldest_of(|p| p.peer.ip() == source)
                .map(|n| (n, Eviction::SourceFull))
        } else if self.pending.len() >= self.max_total {
            self.most_held(false, now)
                .or_else(|| self.most_held(true, now))
                .map(|n| (n, Eviction::TotalFull))
        } else {
            None
        };
        if let Some((n, why)) = victim {
            if let Some(e) = self.evict(n, why, now) {
                out.push(e);
            }
        }
        let n = self.next;
        self.next += 1;
        self.pending.insert(
            n,
            Pending {
                peer,
                known,
                since: now,
                abort: None,
            },
        );
        *self.per_source.entry(source).or_insert(0) += 1;
        (n, out)
    }

    /// Gives admitted connection `n` the handle that aborts its task (once it is spawned).
    /// Returns false when `n` already left the budget (nothing to abort then).
    pub(super) fn set_abort(&mut self, n: u64, abort: AbortHandle) -> bool {
        match self.pending.get_mut(&n) {
            Some(p) => {
                p.abort = Some(abort);
                true
            }
            None => false,
        }
    }

    /// Removes connection `n` (its hello verified, or it ended). Returns whether it was still
    /// held: false means it was evicted meanwhile.
    pub(super) fn release(&mut self, n: u64) -> bool {
        let Some(p) = self.pending.remove(&n) else {
            return false;
        };
        self.forget_one(p.peer.ip());
        true
    }

    /// Evicts every connection admitted more than `limit` before `now`.
    pub(super) fn overdue(&mut self, now: Instant, limit: Duration) -> Vec<Evicted> {
        let late: Vec<u64> = self
            .pending
            .iter()
            .take_while(|(_, p)| now.saturating_duration_since(p.since) > limit)
            .map(|(n, _)| *n)
            .collect();
        late.into_iter()
            .filter_map(|n| self.evict(n, Eviction::Overdue, now))
            .collect()
    }

    /// When the oldest held connection passes `limit`, if any is held.
    pub(super) fn next_due(&self, limit: Duration) -> Option<Instant> {
        self.pending.values().next().map(|p| p.since + limit)
    }

    /// Connections without hello held now.
    pub(super) fn held(&self) -> usize {
        self.pending.len()
    }

    /// Connections evicted since the link started (overdue ones included).
    pub(super) fn evicted_total(&self) -> u64 {
        self.evicted
    }

    /// Empties the budget (the link is stopping); returns the tasks to abort.
    pub(super) fn take_all(&mut self) -> Vec<AbortHandle> {
        self.per_source.clear();
        std::mem::take(&mut self.pending)
            .into_values()
            .filter_map(|p| p.abort)
            .collect()
    }

    fn oldest_of(&self, pick: impl Fn(&Pending) -> bool) -> Option<u64> {
        self.pending.iter().find(|(_, p)| pick(p)).map(|(n, _)| *n)
    }

    /// Among known sources (`known`) or unknown ones: the oldest connection of the source
    /// holding the most, ties going to the source in the highest [`rate_class`] at `now`.
    fn most_held(&self, known: bool, now: Instant) -> Option<u64> {
        let mut best: Option<(usize, i32, u64)> = None;
        // Oldest first, so a later connection wins only by holding more or opening more.
        for (n, p) in self.pending.iter().filter(|(_, p)| p.known == known) {
            let ip = p.peer.ip();
            let held = self.per_source.get(&ip).copied().unwrap_or(0);
            let rate = rate_class(self.opened.get(&ip).map_or(0.0, |r| r.at(now)));
            let better = match best {
                None => true,
                Some((h, r, _)) => held > h || (held == h && rate > r),
            };
            if better {
                best = Some((held, rate, *n));
            }
        }
        best.map(|(_, _, n)| n)
    }

    /// Counts a connection opened from `source` at `now` in its open rate.
    fn count_open(&mut self, source: IpAddr, now: Instant) {
        let weight = self.opened.get(&source).map_or(0.0, |r| r.at(now)) + 1.0;
        self.opened.insert(source, OpenRate { weight, at: now });
        if self.opened.len() > MAX_RATED_SOURCES {
            // Keep the half that opened the most lately, and every source holding one now.
            let mut rates: Vec<(IpAddr, f64)> =
                self.opened.iter().map(|(ip, r)| (*ip, r.at(now))).collect();
            rates.sort_by(|a, b| b.1.total_cmp(&a.1));
            let keep: std::collections::HashSet<IpAddr> = rates
                .iter()
                .take(MAX_RATED_SOURCES / 2)
                .map(|(ip, _)| *ip)
                .collect();
            let per_source = &self.per_source;
            self.opened
                .retain(|ip, _| keep.contains(ip) || per_source.contains_key(ip) || *ip == source);
        }
    }

    /// The open rate of `source` at `now` (0 when never seen or forgotten).
    #[cfg(test)]
    fn open_rate(&self, source: IpAddr, now: Instant) -> f64 {
        self.opened.get(&source).map_or(0.0, |r| r.at(now))
    }

    fn evict(&mut self, n: u64, why: Eviction, now: Instant) -> Option<Evicted> {
        let p = self.pending.remove(&n)?;
        self.forget_one(p.peer.ip());
        self.evicted += 1;
        Some(Evicted {
            peer: p.peer,
            why,
            held: now.saturating_duration_since(p.since),
            task: p.abort,
        })
    }

    fn forget_one(&mut self, ip: IpAddr) {
        if let Some(c) = self.per_source.get_mut(&ip) {
            *c -= 1;
            if *c == 0 {
                self.per_source.remove(&ip);
            }
        }
    }
}

/// A connection's place in the [`Budget`]: released when dropped (the connection ended),
/// or by [`PendingTicket::promote`] when its phone's hello verified.
pub(super) struct PendingTicket {
    budget: Arc<Mutex<Budget>>,
    n: u64,
    held: bool,
}

impl PendingTicket {
    /// The ticket of admitted connection `n`.
    pub(super) fn new(budget: Arc<Mutex<Budget>>, n: u64) -> Self {
        Self {
            budget,
            n,
            held: true,
        }
    }

    /// Takes the connection out of the budget because its hello verified. Returns false when
    /// it was evicted meanwhile (its task is being aborted): the caller must not go live.
    pub(super) fn promote(&mut self) -> bool {
        if !self.held {
            return true;
        }
        self.held = false;
        lock(&self.budget).release(self.n)
    }
}

impl Drop for PendingTicket {
    fn drop(&mut self) {
        if self.held {
            lock(&self.budget).release(self.n);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn at(ip: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((ip, port))
    }

    impl Budget {
        /// `admit` from an unknown source.
        fn admit_u(&mut self, peer: SocketAddr, now: Instant) -> (u64, Vec<Evicted>) {
            self.admit(peer, false, now)
        }
    }

    #[test]
    fn a_paired_phones_last_address_goes_last() {
        let t = Instant::now();
        let mut b = Budget::new(3, 3);
        let (phone, _) = b.admit(at([192, 0, 2, 1], 1), true, t);
        // Three other addresses, one connection each, again and again: with every source
        // holding one, the oldest would go, but the known source's connection never does.
        for i in 0..50u8 {
            let (_, e) = b.admit_u(at([198, 51, 100, i], 1), t);
            assert!(e.iter().all(|e| e.peer.ip() != at([192, 0, 2, 1], 1).ip()));
        }
        assert!(b.release(phone));
        // Only known sources held: they go, oldest of the most first.
        let mut b = Budget::new(2, 2);
        let (_, _) = b.admit(at([192, 0, 2, 1], 1), true, t);
        let (_, _) = b.admit(at([192, 0, 2, 2], 1), true, t);
        let (_, e) = b.admit_u(at([198, 51, 100, 1], 1), t);
        assert_eq!(e[0].peer, at([192, 0, 2, 1], 1));
    }

    #[test]
    fn a_source_at_its_share_pushes_out_only_its_own_oldest() {
        let t = Instant::now();
        let mut b = Budget::new(8, 2);
        let (phone, _) = b.admit_u(at([192, 0, 2, 1], 1), t);
        let (a1, e) = b.admit_u(at([192, 0, 2, 66], 1), t);
        assert!(e.is_empty());
        let (_a2, e) = b.admit_u(at([192, 0, 2, 66], 2), t);
        assert!(e.is_empty());
        let (_a3, e) = b.admit_u(at([192, 0, 2, 66], 3), t);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].peer, at([192, 0, 2, 66], 1));
        assert_eq!(e[0].why, Eviction::SourceFull);
        assert!(!b.release(a1), "a1 was evicted");
        assert_eq!(b.held(), 3);
        assert!(b.release(phone), "the phone's connection is still held");
    }

    #[test]
    fn a_full_budget_evicts_from_the_source_holding_the_most_never_the_newcomer() {
        let t = Instant::now();
        let mut b = Budget::new(4, 3);
        let (p, _) = b.admit_u(at([192, 0, 2, 1], 1), t);
        for port in 1..=3 {
            let (_, e) = b.admit_u(at([192, 0, 2, 66], port), t);
            assert!(e.is_empty());
        }
        // Full: a second phone comes in; the attacker's oldest goes, not the first phone.
        let (q, e) = b.admit_u(at([192, 0, 2, 2], 1), t);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].peer, at([192, 0, 2, 66], 1));
        assert_eq!(e[0].why, Eviction::TotalFull);
        assert_eq!(b.held(), 4);
        assert!(b.release(p) && b.release(q));
        assert_eq!(b.evicted_total(), 1);
    }

    #[test]
    fn with_every_source_holding_one_the_oldest_goes() {
        let t = Instant::now();
        let mut b = Budget::new(3, 3);
        for i in 1..=3 {
            let _ = b.admit_u(at([192, 0, 2, i], 1), t);
        }
        let (_, e) = b.admit_u(at([192, 0, 2, 9], 1), t);
        assert_eq!(e[0].peer, at([192, 0, 2, 1], 1));
    }

    #[test]
    fn overdue_connections_are_evicted_oldest_first_and_promotion_after_eviction_fails() {
        let t = Instant::now();
        let b = Arc::new(Mutex::new(Budget::new(8, 8)));
        let (old, _) = lock(&b).admit_u(at([192, 0, 2, 1], 1), t);
        let (young, _) = lock(&b).admit_u(at([192, 0, 2, 1], 2), t + Duration::from_secs(5));
        let mut old_ticket = PendingTicket::new(b.clone(), old);
        let mut young_ticket = PendingTicket::new(b.clone(), young);
        let limit = Duration::from_secs(10);
        assert_eq!(lock(&b).next_due(limit), Some(t + limit));
        let late = lock(&b).overdue(t + Duration::from_secs(11), limit);
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].why, Eviction::Overdue);
        assert!(!old_ticket.promote());
        assert!(young_ticket.promote());
        assert_eq!(lock(&b).held(), 0);
        drop(young_ticket);
        drop(old_ticket);
        assert_eq!(lock(&b).held(), 0);
    }

    #[test]
    fn among_sources_holding_one_the_one_that_opened_most_lately_goes() {
        let t = Instant::now();
        let mut b = Budget::new(3, 3);
        // A phone from a new address, then two addresses that keep re-opening.
        let (phone, _) = b.admit_u(at([192, 0, 2, 1], 1), t);
        let _ = b.admit_u(at([198, 51, 100, 1], 1), t);
        let _ = b.admit_u(at([198, 51, 100, 2], 1), t);
        for i in 0..200u16 {
            let ip = [198, 51, 100, 1 + (i % 2) as u8];
            let (_, e) = b.admit_u(at(ip, 2 + i), t + Duration::from_millis(u64::from(i)));
            assert_eq!(e.len(), 1);
            assert_ne!(e[0].peer.ip(), at([192, 0, 2, 1], 1).ip(), "round {i}");
        }
        assert!(b.release(phone), "the phone's connection is still held");
        // The rate fades: 101 opens ten half-lives ago weigh less than one now.
        let later = t + OPEN_RATE_HALF_LIFE * 10;
        assert!(b.open_rate(at([198, 51, 100, 1], 1).ip(), later) < 0.2);
    }

    #[test]
    fn rate_classes_go_by_doublings() {
        let classes: Vec<i32> = [0.0, 0.99, 1.0, 1.49, 1.6, 1.99, 3.0, 3.6, 7.4, 1e6]
            .into_iter()
            .map(rate_class)
            .collect();
        assert_eq!(classes, [-1, 0, 0, 0, 1, 1, 1, 2, 2, 19]);
    }

    #[test]
    fn open_rates_are_kept_for_a_bounded_number_of_sources() {
        let t = Instant::now();
        let mut b = Budget::new(4, 4);
        let busy = SocketAddr::from(([2001, 0xdb8, 0, 0, 0, 0, 0, 1], 1));
        for _ in 0..5 {
            let (n, _) = b.admit_u(busy, t);
            b.release(n);
        }
        for i in 0..(3 * MAX_RATED_SOURCES as u32) {
            let [a, c] = [(i >> 16) as u16, i as u16];
            let peer = SocketAddr::from(([2001, 0xdb8, 1, 0, 0, 0, a, c], 1));
            let (n, _) = b.admit_u(peer, t);
            b.release(n);
            assert!(b.opened.len() <= MAX_RATED_SOURCES + 1);
        }
        assert!(
            b.open_rate(busy.ip(), t) >= 5.0,
            "the busiest source is remembered"
        );
    }

    #[test]
    fn a_dropped_ticket_gives_its_place_back() {
        let t = Instant::now();
        let b = Arc::new(Mutex::new(Budget::new(2, 2)));
        let (n, _) = lock(&b).admit_u(at([192, 0, 2, 1], 1), t);
        drop(PendingTicket::new(b.clone(), n));
        assert_eq!(lock(&b).held(), 0);
        assert!(lock(&b).per_source.is_empty());
    }
}
