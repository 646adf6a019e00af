//! The C allocator's set-up for a process left running all day.
//!
//! glibc's `malloc` gives a thread that finds the arena it used locked an arena of its own, up
//! to eight per core. The live dial ring's records are made on one tokio worker and freed on
//! whichever worker evicts them, so over an app's first minutes each arena ends up holding
//! half-used pages the others cannot reuse: the app started hidden on a full ring and fed 10
//! dials a second grew its anonymous memory by 3.7 MB between its 10th and 100th second with
//! glibc's default, 0.85 MB with two arenas, 2.6 MB with four (`docs/performance.md`, "Memory
//! that settles"). Two arenas cost a flood about a seventh of its rate on a 2-core machine
//! (threads wait for an arena more often); an app a person leaves open all day gains more from
//! memory that stops growing than it loses there.

/// Arenas a Switchboard process lets glibc's `malloc` make (`M_ARENA_MAX`).
pub const MALLOC_ARENAS: u8 = 2;

/// What [`limit_malloc_arenas`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArenaLimit {
    /// `mallopt(M_ARENA_MAX, n)` took: at most `n` arenas.
    Set(u8),
    /// The environment decides (`MALLOC_ARENA_MAX`, or `GLIBC_TUNABLES` naming
    /// `glibc.malloc.arena_max`): its value, left as it is.
    Environment(String),
    /// glibc refused the setting (`mallopt` returned 0): its default stays.
    Refused,
    /// Not glibc (macOS, Windows, musl): their allocators have no such setting.
    NotGlibc,
}

impl ArenaLimit {
    /// One line for the log at start.
    pub fn words(&self) -> String {
        match self {
            Self::Set(n) => format!("memory allocator: glibc malloc, at most {n} arenas"),
            Self::Environment(v) => {
                format!("memory allocator: glibc malloc, arenas as the environment says ({v})")
            }
            Self::Refused => "memory allocator: glibc malloc refused the arena limit; its \
                              default stays"
                .to_owned(),
            Self::NotGlibc => "memory allocator: the system's own".to_owned(),
        }
    }
}

/// Limits glibc's `malloc` to [`MALLOC_ARENAS`] arenas, unless the environment already says
/// how many (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`: a person's
/// own setting wins). Call it first thing in `main`, before any thread starts: arenas made
/// before it stay. Elsewhere than Linux with glibc it does nothing and says so.
pub fn limit_malloc_arenas() -> ArenaLimit {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if let Ok(v) = std::env::var("MALLOC_ARENA_MAX") {
            return ArenaLimit::Environment(format!("MALLOC_ARENA_MAX={v}"));
        }
        if let Ok(v) = std::env::var("GLIBC_TUNABLES") {
            if v.contains("glibc.malloc.arena_max") {
                return ArenaLimit::Environment(format!("GLIBC_TUNABLES={v}"));
            }
        }
        // SAFETY: mallopt only sets one of malloc's parameters (under its own lock); arenas
        // already made stay usable, later threads share the ones allowed.
        let ok = unsafe { libc::mallopt(libc::M_ARENA_MAX, libc::c_int::from(MALLOC_ARENAS)) };
        if ok == 1 {
            ArenaLimit::Set(MALLOC_ARENAS)
        } else {
            ArenaLimit::Refused
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        ArenaLimit::NotGlibc
    }
}

/// The size from which glibc's `malloc` gives a block a mapping of its own, which goes back to
/// the system when the block is freed (`M_MMAP_THRESHOLD`), in bytes: 256 KiB.
///
/// glibc starts at 128 KiB but raises the threshold to the size of every mapped block freed
/// (up to 32 MiB), after which blocks that large are carved out of the arenas instead. Opening
/// the window makes such blocks (the page's first data, the IPC answers it asks for), so from
/// the second window on they landed in the arenas, between records the dial ring keeps for
/// hours, and each open and close of the window left the app a little larger in the tray: the
/// tray bench's app grew 4.6 % over 10 cycles with the threshold sliding, 1.5 and 1.6 % with it
/// fixed (`docs/performance.md`, "In the tray"). Setting it also stops the sliding.
pub const MMAP_THRESHOLD_BYTES: i32 = 256 * 1024;

/// What [`fix_mmap_threshold`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MmapThreshold {
    /// `mallopt(M_MMAP_THRESHOLD, n)` took: blocks of `n` bytes or more are mapped on their
    /// own.
    Set(i32),
    /// The environment decides (`MALLOC_MMAP_THRESHOLD_`, or `GLIBC_TUNABLES` naming
    /// `glibc.malloc.mmap_threshold`): its value, left as it is.
    Environment(String),
    /// glibc refused the setting (`mallopt` returned 0): its sliding default stays.
    Refused,
    /// Not glibc: nothing to set.
    NotGlibc,
}

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD_BYTES`], unless the environment already
/// sets it (a person's own setting wins). Call it first thing in `main`, with
/// [`limit_malloc_arenas`]. Elsewhere than Linux with glibc it does nothing and says so.
pub fn fix_mmap_threshold() -> MmapThreshold {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if let Ok(v) = std::env::var("MALLOC_MMAP_THRESHOLD_") {
            return MmapThreshold::Environment(format!("MALLOC_MMAP_THRESHOLD_={v}"));
        }
        if let Ok(v) = std::env::var("GLIBC_TUNABLES") {
            if v.contains("glibc.malloc.mmap_threshold") {
                return MmapThreshold::Environment(format!("GLIBC_TUNABLES={v}"));
            }
        }
        // SAFETY: mallopt only sets one of malloc's parameters (under its own lock); blocks
        // already made keep where they are.
        let ok = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) };
        if ok == 1 {
            MmapThreshold::Set(MMAP_THRESHOLD_BYTES)
        } else {
            MmapThreshold::Refused
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        MmapThreshold::NotGlibc
    }
}

/// The C allocator's set-up of a Switchboard process: its arenas and its mmap threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatorSetup {
    /// What [`limit_malloc_arenas`] did.
    pub arenas: ArenaLimit,
    /// What [`fix_mmap_threshold`] did.
    pub mmap_threshold: MmapThreshold,
}

impl AllocatorSetup {
    /// Both settings, first thing in `main`, before any thread starts.
    pub fn apply() -> Self {
        Self {
            arenas: limit_malloc_arenas(),
            mmap_threshold: fix_mmap_threshold(),
        }
    }

    /// One line for the log at start.
    pub fn words(&self) -> String {
        let mmap = match &self.mmap_threshold {
            MmapThreshold::Set(n) => {
                format!("blocks of {} KiB or more mapped on their own", n / 1024)
            }
            MmapThreshold::Environment(v) => {
                format!("mmap threshold as the environment says ({v})")
            }
            MmapThreshold::Refused => {
                "glibc refused the mmap threshold; its sliding default stays".to_owned()
            }
            MmapThreshold::NotGlibc => return self.arenas.words(),
        };
        format!("{}; {mmap}", self.arenas.words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_mmap_threshold_unless_the_environment_set_one() {
        let got = fix_mmap_threshold();
        let set_outside = std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|v| v.contains("mmap_threshold"));
        if set_outside {
            assert!(matches!(got, MmapThreshold::Environment(_)), "{got:?}");
        } else {
            assert_eq!(got, MmapThreshold::Set(MMAP_THRESHOLD_BYTES));
            let setup = AllocatorSetup {
                arenas: ArenaLimit::Set(MALLOC_ARENAS),
                mmap_threshold: got,
            };
            assert_eq!(
                setup.words(),
                "memory allocator: glibc malloc, at most 2 arenas; blocks of 256 KiB or more mapped on their own"
            );
        }
    }

    #[test]
    fn a_threshold_from_the_environment_is_named_as_such() {
        let setup = AllocatorSetup {
            arenas: ArenaLimit::Environment("MALLOC_ARENA_MAX=4".to_owned()),
            mmap_threshold: MmapThreshold::Environment("MALLOC_MMAP_THRESHOLD_=65536".to_owned()),
        };
        assert!(
            setup.words().ends_with("(MALLOC_MMAP_THRESHOLD_=65536)"),
            "{}",
            setup.words()
        );
        let elsewhere = AllocatorSetup {
            arenas: ArenaLimit::NotGlibc,
            mmap_threshold: MmapThreshold::NotGlibc,
        };
        assert_eq!(elsewhere.words(), "memory allocator: the system's own");
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_takes_the_limit_unless_the_environment_set_one() {
        let got = limit_malloc_arenas();
        let set_outside = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|v| v.contains("arena_max"));
        if set_outside {
            assert!(matches!(got, ArenaLimit::Environment(_)), "{got:?}");
        } else {
            assert_eq!(got, ArenaLimit::Set(MALLOC_ARENAS));
        }
        assert!(got.words().starts_with("memory allocator: glibc malloc"));
    }

    #[test]
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    fn elsewhere_nothing_is_changed() {
        assert_eq!(limit_malloc_arenas(), ArenaLimit::NotGlibc);
        assert_eq!(fix_mmap_threshold(), MmapThreshold::NotGlibc);
    }
}
