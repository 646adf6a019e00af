//! The tray icon: a menu (Show Switchboard, Quit) and a tooltip carrying the link's status.

use tauri::menu::{Menu, MenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Runtime};

/// The tray icon's id.
pub const TRAY_ID: &str = "switchboard";

/// The tray menu's items, `(id, label)`: showing the window and quitting, nothing else (none
/// answers anything on a phone; the end-to-end tests check these labels).
pub const MENU_ITEMS: [(&str, &str); 2] =
    [("show", "Show Switchboard"), ("quit", "Quit Switchboard")];

/// Creates the tray icon with its menu.
///
/// # Errors
/// When the platform has no tray (the app then quits when its window closes).
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let [(show_id, show_label), (quit_id, quit_label)] = MENU_ITEMS;
    let show = MenuItem::with_id(app, show_id, show_label, true, None::<&str>)?;
    let quit = MenuItem::with_id(app, quit_id, quit_label, true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&show, &quit])?;
    let icon = tauri::image::Image::from_bytes(include_bytes!("../../icons/tray.png"))?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon)
        .tooltip(switchboard::app::phones::tray_tooltip(0))
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| match event.id.as_ref() {
            "show" => crate::show_main_window(app),
            "quit" => {
                crate::shutdown(app);
                app.exit(0);
            }
            _ => {}
        })
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                crate::show_main_window(tray.app_handle());
            }
        })
        .build(app)?;
    Ok(())
}

/// Updates the tray tooltip (how many phones are connected) and icon (a green dot while at
/// least one is).
pub fn set_connected<R: Runtime>(app: &AppHandle<R>, connected: usize) {
    if let Some(tray) = app.tray_by_id(TRAY_ID) {
        let _ = tray.set_tooltip(Some(switchboard::app::phones::tray_tooltip(connected)));
        let bytes: &[u8] = if connected > 0 {
            include_bytes!("../../icons/tray-connected.png")
        } else {
            include_bytes!("../../icons/tray.png")
        };
        if let Ok(icon) = tauri::image::Image::from_bytes(bytes) {
            let _ = tray.set_icon(Some(icon));
        }
    }
}
