//! The built `switchboard-desktop` without a display: `--help` and `--version` print, an
//! unknown flag is a usage error, and a start with no display or an unreachable one ends with
//! one sentence and a non-zero exit code, never a panic or a backtrace (`src/cli.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::process::{Command, Output};

use clap::Parser;
use switchboard_desktop::cli::{check_display_vars, Cli, DisplayProblem};

/// Runs the app with `args`, no display variables and backtraces asked for, so a panic would
/// show one.
fn run(args: &[&str], display: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard-desktop"));
    cmd.args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("GDK_BACKEND")
        .env("RUST_BACKTRACE", "1")
        .env("SWITCHBOARD_HOME", home.path())
        .env("HOME", home.path());
    if let Some(d) = display {
        cmd.env("DISPLAY", d);
    }
    cmd.output().expect("the app starts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_no_panic(out: &Output) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr)).to_lowercase();
    assert!(
        !all.contains("panicked") && !all.contains("backtrace"),
        "{all}"
    );
}

#[test]
fn help_prints_without_a_display_and_lists_demo() {
    let out = run(&["--help"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("--demo"), "{stdout}");
    assert!(stdout.contains("--version"), "{stdout}");
    // The flag WebKitWebDriver adds is accepted but not advertised.
    assert!(!stdout.contains("--automation"), "{stdout}");
    assert_no_panic(&out);
}

#[test]
fn version_prints_without_a_display() {
    let out = run(&["--version"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("switchboard-desktop {}", env!("CARGO_PKG_VERSION"))
    );
    assert_no_panic(&out);
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = run(&["--no-such-flag"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    assert!(stderr.contains("Usage:"), "{stderr}");
    assert_no_panic(&out);
}

#[test]
fn a_start_without_a_display_says_so_in_one_sentence() {
    for args in [&[][..], &["--demo"][..]] {
        let out = run(args, None);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim(),
            "switchboard-desktop needs a graphical desktop: no DISPLAY or WAYLAND_DISPLAY is set. \
             Run it from your desktop session, or under Xvfb: xvfb-run switchboard-desktop --demo",
            "{args:?}"
        );
        assert_no_panic(&out);
    }
}

#[test]
fn an_empty_display_counts_as_none() {
    let out = run(&[], Some(""));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("no DISPLAY or WAYLAND_DISPLAY is set"),
        "{stderr}"
    );
    assert_no_panic(&out);
}

#[cfg(target_os = "linux")]
#[test]
fn an_unreachable_display_says_so_without_a_panic() {
    // No X server listens on this display number (Xvfb -displayfd picks low free numbers).
    let out = run(&["--demo"], Some(":64999"));
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("could not open the display (DISPLAY=:64999)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("xvfb-run switchboard-desktop --demo"),
        "{stderr}"
    );
    assert_no_panic(&out);
}

// The parser and the display check, without starting the binary.
fn os(s: &str) -> Option<&OsStr> {
    Some(OsStr::new(s))
}

#[test]
fn parses_demo_and_the_webdriver_flag() {
    let cli = Cli::try_parse_from(["switchboard-desktop"]);
    assert_eq!(cli.ok(), Some(Cli::default()));
    let cli = Cli::try_parse_from(["switchboard-desktop", "--demo"]);
    assert!(matches!(&cli, Ok(c) if c.launch_options().demo), "{cli:?}");
    let cli = Cli::try_parse_from(["switchboard-desktop", "--automation", "--demo"]);
    assert!(
        matches!(
            cli,
            Ok(Cli {
                demo: true,
                automation: true,
                open: None,
                hidden: false,
            })
        ),
        "{cli:?}"
    );
}

#[test]
fn hidden_and_its_alias_minimized_start_in_the_tray() {
    for flag in ["--hidden", "--minimized"] {
        let cli = Cli::try_parse_from(["switchboard-desktop", flag]);
        assert!(
            matches!(&cli, Ok(c) if c.launch_options().hidden && !c.launch_options().demo),
            "{flag}: {cli:?}"
        );
    }
    let plain = Cli::try_parse_from(["switchboard-desktop", "--demo"]);
    assert!(
        matches!(&plain, Ok(c) if !c.launch_options().hidden),
        "{plain:?}"
    );
}

#[test]
fn unknown_flags_are_usage_errors() {
    let err = Cli::try_parse_from(["switchboard-desktop", "--bogus"]).err();
    assert_eq!(err.map(|e| e.exit_code()), Some(2));
}

#[test]
fn a_display_needs_one_of_the_variables() {
    assert_eq!(
        check_display_vars(None, None, None),
        Err(DisplayProblem::NotSet)
    );
    assert_eq!(
        check_display_vars(os(""), os(""), None),
        Err(DisplayProblem::NotSet)
    );
    assert_eq!(check_display_vars(os(":0"), None, None), Ok(()));
    assert_eq!(check_display_vars(None, os("wayland-0"), None), Ok(()));
    assert_eq!(check_display_vars(None, None, os("broadway")), Ok(()));
}

#[test]
fn the_sentences_say_what_is_missing_and_how_to_run_it() {
    let s = DisplayProblem::NotSet.to_string();
    assert!(s.contains("no DISPLAY or WAYLAND_DISPLAY is set"), "{s}");
    assert!(s.contains("xvfb-run switchboard-desktop --demo"), "{s}");
    let s = DisplayProblem::Unreachable {
        display: "DISPLAY=:99".into(),
    }
    .to_string();
    assert!(
        s.contains("could not open the display (DISPLAY=:99)"),
        "{s}"
    );
    assert!(!s.contains('\n'), "{s}");
}

/// `--open FILE` with a file that is not a support bundle: one sentence naming the file and
/// what is wrong, exit code 2, before any window (no display needed).
#[test]
fn open_refuses_a_damaged_bundle_before_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("report.tar.gz");
    std::fs::write(&bad, b"PK\x03\x04 a zip, not a bundle").unwrap();
    let out = run(&["--open", bad.to_str().unwrap()], None);
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("report.tar.gz is not a support bundle Switchboard can open"),
        "{err}"
    );
    assert!(err.contains("not gzip-compressed"), "{err}");
    let cli = Cli::try_parse_from(["switchboard-desktop", "--open", "b.tar.gz"]).unwrap();
    assert_eq!(
        cli.launch_options().open.as_deref(),
        Some(std::path::Path::new("b.tar.gz"))
    );
}
