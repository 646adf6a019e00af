//! One version for everything (CHANGELOG.md): `[workspace.package] version` in `Cargo.toml` is
//! the version of every crate (each says `version.workspace = true`), of `tauri.conf.json` (the
//! packages' version), of `switchboard --version` and `switchboard info` (which Settings' About
//! line shows), and the newest entry of `CHANGELOG.md` and the newest `<release>` of the
//! AppStream metainfo name it, with the same date. The metainfo's and the bundle's URLs start
//! with the workspace's `repository`, and its screenshots are files in `docs/img`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const METAINFO: &str = "packaging/linux/dev.switchboard.desktop.metainfo.xml";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `cargo metadata` of the workspace (offline, no dependencies); the layers module reads it too.
pub(crate) fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of `attr="..."` in the first element `<tag ...>` of `xml`.
fn first_attr<'a>(xml: &'a str, tag: &str, attr: &str) -> &'a str {
    let at = xml
        .find(&format!("<{tag} "))
        .unwrap_or_else(|| panic!("no <{tag}>"));
    let rest = &xml[at..];
    let end = rest.find('>').unwrap();
    let key = format!("{attr}=\"");
    let v = rest[..end]
        .find(&key)
        .unwrap_or_else(|| panic!("<{tag}> has no {attr}"));
    let v = &rest[v + key.len()..];
    &v[..v.find('"').unwrap()]
}

/// The text of every element `<tag>` (with or without attributes) of `xml`.
fn all_text<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
    xml.match_indices(&open)
        .filter(|(i, _)| matches!(xml.as_bytes().get(i + open.len()), Some(b'>' | b' ')))
        .map(|(i, _)| {
            let t = &xml[i..];
            let t = &t[t.find('>').unwrap() + 1..];
            &t[..t.find(&close).unwrap()]
        })
        .collect()
}

fn repository() -> String {
    let meta = metadata();
    let repo = meta["packages"][0]["repository"]
        .as_str()
        .expect("a repository");
    repo.to_string()
}

#[test]
fn every_crate_takes_the_workspace_version() {
    let meta = metadata();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // The CLIs' crate, the six layers under crates/ and the desktop shell.
    assert_eq!(names.len(), 8, "{names:?}");
    for p in packages {
        assert_eq!(p["version"], VERSION, "{}", p["name"]);
        let manifest = p["manifest_path"].as_str().unwrap();
        assert!(
            std::fs::read_to_string(manifest)
                .unwrap()
                .contains("\nversion.workspace = true\n"),
            "{manifest} must take its version from [workspace.package]"
        );
    }
}

#[test]
fn tauri_conf_gives_the_packages_the_workspace_version() {
    let conf: Value = serde_json::from_str(&read("tauri.conf.json")).unwrap();
    assert_eq!(conf["version"], VERSION, "tauri.conf.json's version");
    assert_eq!(
        conf["bundle"]["homepage"].as_str(),
        Some(repository().as_str())
    );
}

#[test]
fn changelog_and_metainfo_name_this_version_as_the_newest() {
    let changelog = read("CHANGELOG.md");
    let heading = changelog
        .lines()
        .find(|l| l.starts_with("## ["))
        .expect("CHANGELOG.md has a version heading");
    // "## [0.1.0] - 2026-12-01"
    let (version, date) = heading["## [".len()..]
        .split_once("] - ")
        .expect("## [X.Y.Z] - DATE");
    assert_eq!(version, VERSION, "CHANGELOG.md's newest entry");
    let link = format!("[{VERSION}]: {}/releases/tag/v{VERSION}", repository());
    assert!(
        changelog.contains(&link),
        "CHANGELOG.md lacks the link {link}"
    );

    let metainfo = read(METAINFO);
    assert_eq!(
        first_attr(&metainfo, "release", "version"),
        VERSION,
        "{METAINFO}"
    );
    assert_eq!(
        first_attr(&metainfo, "release", "date"),
        date,
        "{METAINFO}: release date"
    );
}

#[test]
fn metainfo_urls_are_the_repository_and_its_screenshots_exist() {
    let metainfo = read(METAINFO);
    let repo = repository();
    let urls = all_text(&metainfo, "url");
    assert!(!urls.is_empty());
    for url in urls {
        assert!(url.starts_with(&repo), "{url} is not under {repo}");
    }
    let raw = repo.replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/";
    let images = all_text(&metainfo, "image");
    assert!(images.len() >= 2, "{METAINFO}: at least two screenshots");
    assert_eq!(
        all_text(&metainfo, "caption").len(),
        images.len(),
        "every screenshot has a caption"
    );
    for url in images {
        let file = url
            .strip_prefix(&raw)
            .unwrap_or_else(|| panic!("{url} is not under {raw}"));
        assert!(file.starts_with("docs/img/"), "{url}");
        assert!(
            Path::new(&root().join(file)).is_file(),
            "{file} is not in the repository"
        );
    }
}

#[test]
fn the_cli_reports_the_workspace_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("switchboard {VERSION}")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["info", "--json"])
        .output()
        .unwrap();
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["version"], VERSION);
    assert_eq!(switchboard::app_info::app_info().version, VERSION);
}
