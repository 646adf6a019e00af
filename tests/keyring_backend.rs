//! The OS key store backend each system gets (`Cargo.toml`'s target sections choose `keyring`'s
//! features), and that `keyring`'s in-memory mock is refused instead of used.
//!
//! - `keyring_features_per_target`: `cargo tree --target` for Windows, macOS and
//!   Linux targets (offline: the lock file and `cargo fetch --locked` have every platform's
//!   crates), each resolving `keyring` with that system's own backend feature and none of the
//!   others'.
//! - `this_systems_backend_is_compiled_in_and_the_mock_is_refused`: at run time, the entry
//!   `keyring` makes here is the system's own credential type (under wine: the Windows
//!   Credential Manager's); then, with `keyring`'s mock chosen (what it falls back to when no
//!   backend is compiled in), the store answers `Unavailable`, never a key a restart would lose.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use switchboard::link::secret_store::NO_BACKEND;
use switchboard::link::{KeyringStore, SecretStore as _, SecretStoreError};

/// `cargo tree`'s lines (no prefix) for the workspace resolved for `triple`, with `args`.
// Needs cargo and the workspace's sources, which exist on the build machine only: under wine
// (the Windows test binary run from Linux) there is no Windows cargo to ask, and the question
// is about the build, not about the system the binary runs on.
#[cfg(not(windows))]
fn tree(triple: &str, args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "--prefix",
            "none",
            "--target",
            triple,
        ])
        .args(args)
        .arg("--manifest-path")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree --target {triple} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `keyring`'s features resolved for `triple` (the feature resolver's, per target: `cargo
/// metadata` would show every target's union) and the crates it depends on there.
#[cfg(not(windows))]
fn keyring_for(triple: &str) -> (Vec<String>, Vec<String>) {
    let features = tree(
        triple,
        &[
            "-p",
            "switchboard",
            "-e",
            "features,normal",
            "-i",
            "keyring",
        ],
    )
    .into_iter()
    .filter_map(|l| {
        l.strip_prefix("keyring feature \"")
            .and_then(|f| f.strip_suffix('"'))
            .map(str::to_string)
    })
    .collect();
    let deps = tree(triple, &["-p", "keyring", "-e", "normal", "--depth", "1"])
        .into_iter()
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .collect();
    (features, deps)
}

#[cfg(not(windows))]
#[test]
fn keyring_features_per_target() {
    const BACKENDS: [&str; 3] = ["windows-native", "apple-native", "sync-secret-service"];
    // (target, its backend feature, a crate that backend brings)
    let cases = [
        ("x86_64-pc-windows-gnu", "windows-native", "windows-sys"),
        ("x86_64-pc-windows-msvc", "windows-native", "windows-sys"),
        ("aarch64-apple-darwin", "apple-native", "security-framework"),
        ("x86_64-apple-darwin", "apple-native", "security-framework"),
        (
            "x86_64-unknown-linux-gnu",
            "sync-secret-service",
            "dbus-secret-service",
        ),
    ];
    for (triple, backend, dep) in cases {
        let (features, deps) = keyring_for(triple);
        assert!(
            features.iter().any(|f| f == backend),
            "{triple}: keyring built without {backend}: {features:?}"
        );
        for other in BACKENDS.iter().filter(|b| **b != backend) {
            assert!(
                !features.iter().any(|f| f == other),
                "{triple}: keyring also has {other}: {features:?}"
            );
        }
        assert!(
            deps.iter().any(|d| d == dep),
            "{triple}: keyring's backend crate {dep} is missing: {deps:?}"
        );
    }
}

#[test]
fn this_systems_backend_is_compiled_in_and_the_mock_is_refused() {
    let entry = keyring::Entry::new("switchboard-backend-test", "probe").unwrap();
    let any = entry.get_credential();
    #[cfg(windows)]
    assert!(any
        .downcast_ref::<keyring::windows::WinCredential>()
        .is_some());
    #[cfg(target_os = "macos")]
    assert!(any
        .downcast_ref::<keyring::macos::MacCredential>()
        .is_some());
    #[cfg(target_os = "linux")]
    assert!(any
        .downcast_ref::<keyring::secret_service::SsCredential>()
        .is_some());
    assert!(any
        .downcast_ref::<keyring::mock::MockCredential>()
        .is_none());

    // Then with the mock chosen (in the same test: the default builder is the process's).
    keyring::set_default_credential_builder(keyring::mock::default_credential_builder());
    let store = KeyringStore::with_service("switchboard-mock-test");
    for result in [
        store.get("identity").map(|_| ()),
        store.set("identity", b"secret"),
        store.delete("identity"),
    ] {
        match result {
            Err(e @ SecretStoreError::Unavailable { .. }) => {
                let words = e.to_string();
                assert!(words.contains(NO_BACKEND), "{words}");
                assert!(words.starts_with("No OS key store is available"), "{words}");
            }
            other => panic!("the mock was used: {other:?}"),
        }
    }
}
