//! The main window's menu bar: File → "Open support bundle…" (Ctrl+O, Cmd+O on macOS), "Save
//! support bundle…", "Close bundle", "Quit" (Ctrl+Q). On Linux it is a GTK menu bar inside the
//! window.
//!
//! Open and Save are carried out by the window (it is sent `switchboard://menu` with a
//! [`MenuAction`]: a path prompt, or Settings with the bundle's preview); Close bundle and Quit
//! are carried out here (Quit runs the same [`crate::shutdown`] as the tray's Quit). "Close
//! bundle" is enabled only while a bundle is open and "Save support bundle…" only while none
//! is ([`sync`]). Nothing in this menu acts on a phone.

use std::sync::Arc;

use switchboard::app::{App, AppEvent, MenuAction};
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{AppHandle, Manager, Runtime};

/// The File menu's entries, `(id, label, accelerator)`, in order (the tests check these).
pub const FILE_ITEMS: [(&str, &str, Option<&str>); 4] = [
    ("file-open", "Open support bundle…", Some("CmdOrCtrl+O")),
    ("file-save", "Save support bundle…", None),
    ("file-close", "Close bundle", None),
    ("file-quit", "Quit", Some("CmdOrCtrl+Q")),
];

/// What choosing a menu entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The window carries it out (sent as `switchboard://menu`).
    Window(MenuAction),
    /// Close the open bundle.
    CloseBundle,
    /// Quit the app (the one shutdown).
    Quit,
}

/// What the entry with menu id `id` does; `None` for ids that are not the File menu's.
pub fn choice_of(id: &str) -> Option<Choice> {
    match id {
        "file-open" => Some(Choice::Window(MenuAction::OpenBundle)),
        "file-save" => Some(Choice::Window(MenuAction::SaveBundle)),
        "file-close" => Some(Choice::CloseBundle),
        "file-quit" => Some(Choice::Quit),
        _ => None,
    }
}

/// Whether entry `id` is enabled with a bundle open (`bundle_open`) or not: Close bundle only
/// with one, Save only without (a bundle's views cannot be saved as a new bundle).
pub fn enabled(id: &str, bundle_open: bool) -> bool {
    match id {
        "file-close" => bundle_open,
        "file-save" => !bundle_open,
        _ => true,
    }
}

/// The menu entries whose enabled state follows the bundle ([`sync`]), managed.
pub struct FileMenu<R: Runtime> {
    /// The entries of the current window's menu (replaced when a window is made again).
    items: std::sync::Mutex<Vec<MenuItem<R>>>,
}

/// Builds the File menu, sets it on the main window and handles its entries. The main thread
/// calls it, each time the main window is made (`window::ensure`; on macOS once, at start).
///
/// # Errors
/// When the menu cannot be built or set (the app then goes on without it).
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let open = app
        .try_state::<Arc<App>>()
        .is_some_and(|core| core.bundle_open());
    let mut items = Vec::new();
    for (id, label, accel) in FILE_ITEMS {
        items.push(MenuItem::with_id(app, id, label, enabled(id, open), accel)?);
    }
    let separator = PredefinedMenuItem::separator(app)?;
    let file = Submenu::with_id_and_items(
        app,
        "file",
        "File",
        true,
        &[&items[0], &items[1], &items[2], &separator, &items[3]],
    )?;
    let menu = Menu::with_items(app, &[&file])?;
    if cfg!(target_os = "macos") {
        // macOS has one menu bar for the app (a window's menu is not supported there); its
        // events reach the app's handler, which ignores the tray's ids.
        app.set_menu(menu)?;
        app.on_menu_event(|app, event| choose(app, event.id.as_ref()));
    } else {
        let Some(window) = app.get_webview_window("main") else {
            return Err(tauri::Error::WindowNotFound);
        };
        window.set_menu(menu)?;
        window.on_menu_event(|window, event| choose(window.app_handle(), event.id.as_ref()));
    }
    match app.try_state::<FileMenu<R>>() {
        Some(menu) => *switchboard::sync::lock(&menu.items) = items,
        None => {
            app.manage(FileMenu {
                items: std::sync::Mutex::new(items),
            });
        }
    }
    Ok(())
}

/// Carries out the entry with menu id `id`.
fn choose<R: Runtime>(app: &AppHandle<R>, id: &str) {
    let Some(choice) = choice_of(id) else {
        return;
    };
    match choice {
        Choice::Window(action) => {
            crate::show_main_window(app);
            if let Some(core) = app.try_state::<Arc<App>>() {
                core.host().emit(&AppEvent::Menu(action));
            }
        }
        Choice::CloseBundle => {
            if let Some(core) = app.try_state::<Arc<App>>() {
                core.close_bundle();
            }
        }
        Choice::Quit => {
            crate::shutdown(app);
            app.exit(0);
        }
    }
}

/// Enables or disables the entries that follow the bundle (`bundle_open`). Queued to the main
/// thread, never waited for (as the tray).
pub fn sync<R: Runtime>(app: &AppHandle<R>, bundle_open: bool) {
    let handle = app.clone();
    let run = app.run_on_main_thread(move || {
        if let Some(menu) = handle.try_state::<FileMenu<R>>() {
            for item in switchboard::sync::lock(&menu.items).iter() {
                let id = item.id().0.clone();
                if let Err(e) = item.set_enabled(enabled(&id, bundle_open)) {
                    tracing::debug!("menu entry {id} not updated: {e}");
                }
            }
        }
    });
    if let Err(e) = run {
        tracing::debug!("menu not updated: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_do_what_they_say_and_follow_the_bundle() {
        let ids: Vec<&str> = FILE_ITEMS.iter().map(|i| i.0).collect();
        assert_eq!(ids, ["file-open", "file-save", "file-close", "file-quit"]);
        assert_eq!(
            choice_of("file-open"),
            Some(Choice::Window(MenuAction::OpenBundle))
        );
        assert_eq!(
            choice_of("file-save"),
            Some(Choice::Window(MenuAction::SaveBundle))
        );
        assert_eq!(choice_of("file-close"), Some(Choice::CloseBundle));
        assert_eq!(choice_of("file-quit"), Some(Choice::Quit));
        // The tray's ids are not the File menu's.
        for (id, _) in crate::tray::MENU_ITEMS {
            assert_eq!(choice_of(id), None);
        }
        assert!(!enabled("file-close", false) && enabled("file-close", true));
        assert!(enabled("file-save", false) && !enabled("file-save", true));
        assert!(enabled("file-open", true) && enabled("file-quit", true));
        let accel = |id: &str| FILE_ITEMS.iter().find(|i| i.0 == id).and_then(|i| i.2);
        assert_eq!(accel("file-open"), Some("CmdOrCtrl+O"));
        assert_eq!(accel("file-quit"), Some("CmdOrCtrl+Q"));
    }
}
