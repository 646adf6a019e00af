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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
