//! The tray icon at a glance: its tooltip and icon say how many phones are connected, banners
//! raised and confirmations waiting on a phone (the core computes the summary:
//! [`switchboard::app::tray`]); its menu lists them, each opening its view, then Show and
//! Quit.

use switchboard::app::tray::{TraySummary, TrayView};
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Runtime};

/// The tray icon's id.
pub const TRAY_ID: &str = "switchboard";

/// The tray menu's fixed items, `(id, label)`: showing the window and quitting (none answers
/// anything on a phone; the end-to-end tests check these labels).
pub const MENU_ITEMS: [(&str, &str); 2] =
    [("show", "Show Switchboard"), ("quit", "Quit Switchboard")];

/// The prefix of a summary entry's menu id (`view:<view id>:<n>`).
const VIEW_PREFIX: &str = "view:";

/// The menu's summary entries for `summary`, `(id, label)`, in order: phones, banners, waiting
/// confirmations; a single disabled "Nothing to show" line when there is none.
pub fn summary_items(summary: &TraySummary) -> Vec<(String, String)> {
    summary
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("{VIEW_PREFIX}{}:{i}", e.view.id()), e.label.clone()))
        .collect()
}

/// The view a menu id opens, for a summary entry's id.
pub fn view_of_menu_id(id: &str) -> Option<TrayView> {
    let rest = id.strip_prefix(VIEW_PREFIX)?;
    TrayView::from_id(rest.split(':').next()?)
}

fn build_menu<R: Runtime>(app: &AppHandle<R>, summary: &TraySummary) -> tauri::Result<Menu<R>> {
    let mut items: Vec<Box<dyn IsMenuItem<R>>> = Vec::new();
    items.push(Box::new(MenuItem::with_id(
        app,
        "summary",
        summary.tooltip(),
        false,
        None::<&str>,
    )?));
    for (id, label) in summary_items(summary) {
        items.push(Box::new(MenuItem::with_id(
            app,
            id,
            label,
            true,
            None::<&str>,
        )?));
    }
    items.push(Box::new(PredefinedMenuItem::separator(app)?));
    for (id, label) in MENU_ITEMS {
        items.push(Box::new(MenuItem::with_id(
            app,
            id,
            label,
            true,
            None::<&str>,
        )?));
    }
    let refs: Vec<&dyn IsMenuItem<R>> = items.iter().map(|i| i.as_ref()).collect();
    Menu::with_items(app, &refs)
}

/// The well-known D-Bus name of the freedesktop StatusNotifier watcher: the desktop's tray
/// (KDE, XFCE, Cinnamon, MATE, Budgie, GNOME with its AppIndicator extension) owns it on the
/// session bus, and the tray library shows Switchboard's icon through it.
pub const STATUS_NOTIFIER_WATCHER: &str = "org.kde.StatusNotifierWatcher";

/// How long the close button waits for the session bus to say whether a tray is there (Linux:
/// elsewhere the tray is always shown and nothing is asked).
#[cfg(target_os = "linux")]
const TRAY_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a tray on this desktop shows Switchboard's icon, so a hidden window can be brought
/// back from it. On Linux: whether [`STATUS_NOTIFIER_WATCHER`] has an owner on the session bus
/// (vanilla GNOME and bare window managers have none: the icon is created but nobody shows
/// it); `false` when the bus cannot be asked within a second. Elsewhere: `true`.
pub fn tray_is_shown() -> bool {
    #[cfg(target_os = "linux")]
    {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(watcher_on_bus(None));
        });
        match rx.recv_timeout(TRAY_CHECK_TIMEOUT) {
            Ok(Ok(shown)) => shown,
            Ok(Err(e)) => {
                tracing::info!("no tray: the session bus could not be asked for one: {e}");
                false
            }
            Err(_) => {
                tracing::info!("no tray: the session bus did not answer within a second");
                false
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        true
    }
}

/// Whether [`STATUS_NOTIFIER_WATCHER`] has an owner on the bus at `address` (`None`: the
/// session bus).
///
/// # Errors
/// The bus's error in words when it cannot be reached or asked.
#[cfg(target_os = "linux")]
pub fn watcher_on_bus(address: Option<&str>) -> Result<bool, String> {
    zbus::block_on(async {
        let conn = match address {
            Some(a) => zbus::connection::Builder::address(a).build().await,
            None => zbus::Connection::session().await,
        }
        .map_err(|e| e.to_string())?;
        let bus = zbus::fdo::DBusProxy::new(&conn)
            .await
            .map_err(|e| e.to_string())?;
        let name =
            zbus::names::BusName::try_from(STATUS_NOTIFIER_WATCHER).map_err(|e| e.to_string())?;
        bus.name_has_owner(name).await.map_err(|e| e.to_string())
    })
}

/// Whether closing the window keeps Switchboard running: the setting asks for it
/// (`close_to_tray`), the tray icon exists and a tray shows it (`shown`, [`tray_is_shown`]).
/// Otherwise closing quits: a window hidden with no tray to show it from would leave the app
/// running out of reach.
pub fn close_keeps_running(setting: bool, icon: bool, shown: impl FnOnce() -> bool) -> bool {
    setting && icon && shown()
}

/// Creates the tray icon with its menu.
///
/// # Errors
/// When the platform has no tray (the app then quits when its window closes).
pub fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let summary = TraySummary::default();
    let menu = build_menu(app, &summary)?;
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(icon_for(&summary)?)
        // The menu bar draws a template icon in its own colour (light or dark bar): see
        // `menu_bar_template`.
        .icon_as_template(cfg!(target_os = "macos"))
        .tooltip(summary.tooltip())
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| match event.id.as_ref() {
            "show" => crate::show_main_window(app),
            "quit" => {
                crate::shutdown(app);
                app.exit(0);
            }
            other => {
                if let Some(view) = view_of_menu_id(other) {
                    crate::window::open(app, Some(view.id()), true);
                }
            }
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

/// The icon for `summary`: green while a phone is connected; with an amber dot in the corner
/// while a banner is raised or a confirmation waits.
fn icon_for(summary: &TraySummary) -> tauri::Result<tauri::image::Image<'static>> {
    let bytes: &[u8] = if summary.connected > 0 {
        include_bytes!("../../icons/tray-connected.png")
    } else {
        include_bytes!("../../icons/tray.png")
    };
    let base = tauri::image::Image::from_bytes(bytes)?;
    let (w, h) = (base.width(), base.height());
    let mut rgba = base.rgba().to_vec();
    if summary.needs_attention() {
        let r = (w.min(h) / 4).max(2) as i64;
        let (cx, cy) = (i64::from(w) - r - 1, i64::from(h) - r - 1);
        for y in 0..i64::from(h) {
            for x in 0..i64::from(w) {
                let (dx, dy) = (x - cx, y - cy);
                if dx * dx + dy * dy <= r * r {
                    let i = usize::try_from((y * i64::from(w) + x) * 4).unwrap_or(usize::MAX);
                    if let Some(px) = rgba.get_mut(i..i + 4) {
                        px.copy_from_slice(&[0xf5, 0x9e, 0x0b, 0xff]);
                    }
                }
            }
        }
    }
    if cfg!(target_os = "macos") {
        menu_bar_template(&mut rgba);
    }
    Ok(tauri::image::Image::new_owned(rgba, w, h))
}

/// Makes `rgba` (RGBA8 pixels) a menu-bar template image: every pixel black, its alpha kept.
/// macOS draws a template's alpha only, in the menu bar's own colour (light or dark), so the
/// attention dot stays as a shape, and connected or not is in the tooltip and the menu.
pub fn menu_bar_template(rgba: &mut [u8]) {
    for px in rgba.chunks_exact_mut(4) {
        px[0] = 0;
        px[1] = 0;
        px[2] = 0;
    }
}

/// Shows `summary`: the tooltip (counts only), the icon and the menu's entries.
pub fn set_summary<R: Runtime>(app: &AppHandle<R>, summary: &TraySummary) {
    if let Some(tray) = app.tray_by_id(TRAY_ID) {
        let _ = tray.set_tooltip(Some(summary.tooltip()));
        if let Ok(icon) = icon_for(summary) {
            let _ = tray.set_icon(Some(icon));
            #[cfg(target_os = "macos")]
            let _ = tray.set_icon_as_template(true);
        }
        match build_menu(app, summary) {
            Ok(menu) => {
                let _ = tray.set_menu(Some(menu));
            }
            Err(e) => tracing::debug!("tray menu not updated: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard::app::tray::TrayEntry;

    #[test]
    fn entries_open_their_views() {
        let summary = TraySummary {
            connected: 1,
            banners: 1,
            waiting: 0,
            entries: vec![
                TrayEntry {
                    label: "Ada's Pixel (connected)".into(),
                    view: TrayView::Phones,
                },
                TrayEntry {
                    label: "Banner: LumiRealm is missing files.read".into(),
                    view: TrayView::Bridge,
                },
            ],
            storage_problem: None,
        };
        let items = summary_items(&summary);
        assert_eq!(items.len(), 2);
        assert_eq!(view_of_menu_id(&items[0].0), Some(TrayView::Phones));
        assert_eq!(view_of_menu_id(&items[1].0), Some(TrayView::Bridge));
        assert_eq!(items[1].1, "Banner: LumiRealm is missing files.read");
        assert_eq!(view_of_menu_id("show"), None);
        assert_eq!(view_of_menu_id("view:settings:0"), None);
        // The fixed items do not collide with entry ids.
        for (id, _) in MENU_ITEMS {
            assert!(!items.iter().any(|(i, _)| i == id));
        }
    }
}
