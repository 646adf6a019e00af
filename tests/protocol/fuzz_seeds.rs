//! Replays the fuzz seed corpus and every crasher kept as a regression (`fuzz/seeds/<target>/`)
//! through the same target functions AFL++ runs (`switchboard::fuzz`), in plain `cargo test`:
//! CI replays them without AFL. A target panics only on a finding (a reader that panicked, or a
//! differential or round-trip disagreement), so every seed must pass. Also checks that the seeds
//! reach what they are for: every target has seeds, the dial seeds take the shortcut (else the
//! differential target compares nothing), and the demo fed to the hub after hello stores its
//! dials.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard::fuzz::{target, TARGETS};
use switchboard::phone_events::DialFrame;

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds")
}

fn seeds(name: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = seeds_dir().join(name);
    let mut out: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no seed folder {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_seed_and_crasher_passes_its_target() {
    let mut replayed = 0;
    for (name, run) in TARGETS {
        let files = seeds(name);
        assert!(!files.is_empty(), "target {name} has no seeds");
        for (path, bytes) in files {
            let result = std::panic::catch_unwind(|| run(&bytes));
            assert!(result.is_ok(), "{name}: {} fails", path.display());
            replayed += 1;
        }
    }
    println!("replayed {replayed} seeds over {} targets", TARGETS.len());
}

#[test]
fn every_seed_folder_is_a_target() {
    for entry in fs::read_dir(seeds_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(target(&name).is_some(), "fuzz/seeds/{name} names no target");
    }
}

#[test]
fn the_dial_seeds_take_the_shortcut() {
    let phone: Arc<str> = Arc::from("dev_phone_a1b2");
    let files = seeds("dial_shortcut");
    let taken = files
        .iter()
        .filter(|(_, b)| DialFrame::parse(std::str::from_utf8(b).unwrap_or(""), &phone).is_some())
        .count();
    assert!(
        taken >= 5,
        "only {taken} of {} dial seeds take the shortcut",
        files.len()
    );
}

#[test]
fn the_demo_fed_after_hello_stores_each_dial_once() {
    let demo = fs::read(seeds_dir().join("link_after_hello/demo.txt")).unwrap();
    let once = switchboard::fuzz::feed_link_after_hello(&demo).unwrap();
    let dials = seeds("dial_shortcut").len() as u64;
    assert_eq!(once.dials_sent, dials);
    assert_eq!(once.dials_held, dials, "every demo dial is stored");
    let twice = fs::read(seeds_dir().join("link_after_hello/demo-replayed.txt")).unwrap();
    let replayed = switchboard::fuzz::feed_link_after_hello(&twice).unwrap();
    assert_eq!(replayed.dials_sent, 2 * dials);
    assert_eq!(replayed.dials_held, dials, "a replayed dial is stored once");
}
