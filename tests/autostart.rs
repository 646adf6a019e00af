//! Start on login through the application layer: the setting is off by default, turning it on
//! writes the XDG autostart entry (in an `XDG_CONFIG_HOME` this test owns) starting the app
//! with `--hidden`, turning it off removes it, the entry's presence is what Settings reads back
//! (removed by hand, the setting reads off), and with the demo phone nothing touches any entry.
//!
//! On Windows the same through the Run key (a test key of this process's own,
//! `HKEY_CURRENT_USER\Software\SwitchboardTest<pid>`, whose values it removes), with Task
//! Manager's "disabled" read back.
//!
//! One XDG test in this binary: it sets `XDG_CONFIG_HOME` for the whole process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use switchboard::app::autostart::Autostart;
#[cfg(any(
    target_os = "linux",
    target_os = "dragonfly",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd"
))]
use switchboard::app::autostart::ENTRY_FILE_NAME;
use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
use switchboard::confirmations::ConfirmationMirror;
#[cfg(any(
    target_os = "linux",
    target_os = "dragonfly",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd"
))]
use switchboard::error::IpcErrorKind;

fn app(home: &std::path::Path, demo: bool, autostart: Option<Autostart>) -> Arc<App> {
    let mut config = AppConfig::new(AppPaths::under(home), demo);
    config.identity = IdentityStore::Memory;
    config.autostart = autostart;
    let rt = tokio::runtime::Handle::current();
    App::new(
        config,
        Arc::new(RecordingHost::new()),
        rt,
        ConfirmationMirror::with_bundled_catalogue(),
    )
}

// XDG autostart is what Linux and BSD desktops read (macOS and Windows have their own, below
// and in the unit tests of `app::autostart`).
#[cfg(any(
    target_os = "linux",
    target_os = "dragonfly",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd"
))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_on_login_writes_and_removes_the_xdg_autostart_entry() {
    let config_home = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_CONFIG_HOME", config_home.path());
    let exe = PathBuf::from("/opt/Switch Board/switchboard-desktop");
    let autostart = Autostart::for_platform(exe.clone()).expect("XDG autostart on this system");
    let entry = config_home.path().join("autostart").join(ENTRY_FILE_NAME);
    assert_eq!(autostart.entry, entry);

    let home = tempfile::tempdir().unwrap();
    let desk = app(home.path(), false, Some(autostart));
    assert_eq!(
        desk.diagnostics().autostart_entry.as_deref(),
        Some(entry.to_str().unwrap())
    );
    let settings = desk.get_settings();
    assert!(!settings.start_on_login, "off by default");
    assert!(!entry.exists());

    // On: the entry exists, whole, and starts this program hidden.
    let mut on = settings.clone();
    on.start_on_login = true;
    assert!(
        desk.change()
            .unwrap()
            .save_settings(on)
            .unwrap()
            .start_on_login
    );
    let text = std::fs::read_to_string(&entry).unwrap();
    assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
    assert!(text.contains("\nType=Application\n"), "{text}");
    assert!(
        text.contains("\nExec=\"/opt/Switch Board/switchboard-desktop\" --hidden\n"),
        "{text}"
    );
    assert!(desk.get_settings().start_on_login);
    // No temporary file left beside it (atomic write).
    let names: Vec<_> = std::fs::read_dir(entry.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from(ENTRY_FILE_NAME)]);
    // desktop-file-validate accepts the entry (scripts/install-deps.sh installs it).
    let check = std::process::Command::new("desktop-file-validate")
        .arg(&entry)
        .output()
        .expect("desktop-file-validate runs (bash scripts/install-deps.sh installs it)");
    assert!(
        check.status.success() && check.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    // Removed by hand (the desktop's Startup Applications): the setting reads off.
    std::fs::remove_file(&entry).unwrap();
    assert!(!desk.get_settings().start_on_login);

    // On again, then off: the entry is gone; off when already off is fine.
    let mut s = desk.get_settings();
    s.start_on_login = true;
    desk.change().unwrap().save_settings(s.clone()).unwrap();
    assert!(entry.is_file());
    s.start_on_login = false;
    assert!(
        !desk
            .change()
            .unwrap()
            .save_settings(s.clone())
            .unwrap()
            .start_on_login
    );
    assert!(!entry.exists());
    desk.change().unwrap().save_settings(s).unwrap();
    assert!(!entry.exists());

    // The demo phone never touches the real app's entry, and says why it cannot turn it on.
    let mut real = desk.get_settings();
    real.start_on_login = true;
    desk.change().unwrap().save_settings(real).unwrap();
    let demo_home = tempfile::tempdir().unwrap();
    let demo = app(demo_home.path(), true, None);
    assert_eq!(demo.diagnostics().autostart_entry, None);
    let mut s = demo.get_settings();
    assert!(!s.start_on_login);
    demo.change().unwrap().save_settings(s.clone()).unwrap();
    assert!(entry.is_file(), "the demo's save removed the real entry");
    s.start_on_login = true;
    let err = demo.change().unwrap().save_settings(s).unwrap_err();
    assert_eq!(err.kind, IpcErrorKind::InvalidInput);
    assert!(err.message.contains("demo"), "{}", err.message);
    assert!(entry.is_file());

    // An autostart folder that cannot be made (a file in its place): an error naming the entry,
    // and the settings file keeps its old value.
    std::fs::remove_file(&entry).unwrap();
    std::fs::remove_dir(entry.parent().unwrap()).unwrap();
    std::fs::write(entry.parent().unwrap(), b"not a folder").unwrap();
    let before = desk.get_settings();
    let mut s = before.clone();
    s.start_on_login = true;
    s.close_to_tray = !s.close_to_tray;
    let err = desk.change().unwrap().save_settings(s).unwrap_err();
    assert_eq!(err.kind, IpcErrorKind::Io);
    assert!(err.message.contains(ENTRY_FILE_NAME), "{}", err.message);
    assert_eq!(
        desk.get_settings(),
        before,
        "nothing saved when the entry failed"
    );
}

#[cfg(windows)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_on_login_writes_and_removes_the_run_key_value() {
    use switchboard::app::autostart::{registry, RUN_KEY, RUN_VALUE, STARTUP_APPROVED_KEY};
    // The real keys' names are the system's; this test's live under its own key.
    assert_eq!(RUN_KEY, r"Software\Microsoft\Windows\CurrentVersion\Run");
    assert!(Autostart::for_platform(PathBuf::from(r"C:\sb.exe"))
        .unwrap()
        .entry
        .ends_with(r"CurrentVersion\Run\Switchboard"));
    assert!(STARTUP_APPROVED_KEY.ends_with(r"StartupApproved\Run"));
    let root = format!(r"Software\SwitchboardTest{}", std::process::id());
    let (key, approved) = (format!(r"{root}\Run"), format!(r"{root}\Approved"));
    let exe = PathBuf::from(r"C:\Program Files\Switch Board\switchboard-desktop.exe");
    let autostart = Autostart::run_key(&key, &approved, RUN_VALUE, exe);
    let home = tempfile::tempdir().unwrap();
    let desk = app(home.path(), false, Some(autostart));
    assert!(desk
        .diagnostics()
        .autostart_entry
        .unwrap()
        .ends_with(r"\Run\Switchboard"));
    assert!(!desk.get_settings().start_on_login, "off by default");

    let mut on = desk.get_settings();
    on.start_on_login = true;
    assert!(
        desk.change()
            .unwrap()
            .save_settings(on)
            .unwrap()
            .start_on_login
    );
    let value = registry::get(&key, RUN_VALUE).unwrap().unwrap();
    let text: Vec<u16> = value
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .take_while(|c| *c != 0)
        .collect();
    assert_eq!(
        String::from_utf16(&text).unwrap(),
        r#""C:\Program Files\Switch Board\switchboard-desktop.exe" --hidden"#
    );
    assert!(desk.get_settings().start_on_login);

    // Task Manager turns it off (odd first byte): the setting reads off; on again clears it.
    registry::set_binary(&approved, RUN_VALUE, &[3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    assert!(!desk.get_settings().start_on_login);
    let mut s = desk.get_settings();
    s.start_on_login = true;
    desk.change().unwrap().save_settings(s.clone()).unwrap();
    assert!(desk.get_settings().start_on_login);
    assert_eq!(registry::get(&approved, RUN_VALUE).unwrap(), None);
    // Task Manager's "enabled" (even first byte) reads on.
    registry::set_binary(&approved, RUN_VALUE, &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    assert!(desk.get_settings().start_on_login);

    // Off: the value is gone; off again is fine.
    s.start_on_login = false;
    assert!(
        !desk
            .change()
            .unwrap()
            .save_settings(s.clone())
            .unwrap()
            .start_on_login
    );
    assert_eq!(registry::get(&key, RUN_VALUE).unwrap(), None);
    desk.change().unwrap().save_settings(s).unwrap();
    assert!(!desk.get_settings().start_on_login);
}

// The LaunchAgent is macOS's; its file is written and read the same way everywhere, so this
// runs on every system with the agent in a folder of its own (on a Mac the folder is
// `~/Library/LaunchAgents`, `Autostart::for_platform`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_on_login_writes_and_removes_the_launch_agent() {
    let agents = tempfile::tempdir().unwrap();
    let exe = PathBuf::from("/Applications/Switch & Board.app/Contents/MacOS/switchboard-desktop");
    let autostart = Autostart::launch_agent_in(agents.path(), exe);
    let plist = agents.path().join("dev.switchboard.desktop.plist");
    assert_eq!(autostart.entry, plist);

    let home = tempfile::tempdir().unwrap();
    let desk = app(home.path(), false, Some(autostart));
    let settings = desk.get_settings();
    assert!(!settings.start_on_login, "off by default");
    assert!(!plist.exists());

    // On: a whole property list that launchd runs at login, hidden, the path escaped.
    let mut on = settings.clone();
    on.start_on_login = true;
    assert!(
        desk.change()
            .unwrap()
            .save_settings(on)
            .unwrap()
            .start_on_login
    );
    let text = std::fs::read_to_string(&plist).unwrap();
    for needle in [
        "<key>Label</key>\n\t<string>dev.switchboard.desktop</string>",
        "<string>/Applications/Switch &amp; Board.app/Contents/MacOS/switchboard-desktop</string>\n\t\t<string>--hidden</string>",
        "<key>RunAtLoad</key>\n\t<true/>",
        "<key>LimitLoadToSessionType</key>\n\t<string>Aqua</string>",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    assert!(text.trim_end().ends_with("</plist>"), "{text}");
    let names: Vec<_> = std::fs::read_dir(agents.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("dev.switchboard.desktop.plist")],
        "no temporary file left beside it"
    );
    assert!(desk.get_settings().start_on_login);

    // Removed by hand (System Settings → Login Items): the setting reads off.
    std::fs::remove_file(&plist).unwrap();
    assert!(!desk.get_settings().start_on_login);

    // On again, then off: the agent is gone.
    let mut s = desk.get_settings();
    s.start_on_login = true;
    desk.change().unwrap().save_settings(s.clone()).unwrap();
    assert!(plist.is_file());
    s.start_on_login = false;
    assert!(
        !desk
            .change()
            .unwrap()
            .save_settings(s)
            .unwrap()
            .start_on_login
    );
    assert!(!plist.exists());
}
