//! IPC commands, grouped by view. Each is a few lines over the core's application layer
//! ([`switchboard::app::App`]) and returns `Result<T, IpcError>` (`{ kind, message }` on the
//! front end).
//!
//! [`commands!`] below is the one list of commands: it registers the handlers
//! ([`handler`]), names them ([`ALL_COMMANDS`]) and describes their arguments and answers for
//! the generated TypeScript map (`ui/src/bindings/ipc.ts`, [`ipc_bindings`]) that
//! `ui/src/lib/api.ts` types its calls against. A listed command without a handler does not
//! compile; a call from the front end of a command that is not listed does not type-check.
//!
//! None of them approves, rejects or cancels anything on a phone (`tests/protocol/confirmations.rs`
//! drives them all).

use tauri::{ipc::Invoke, Runtime};

pub mod app;
pub mod bridge;
pub mod confirmations;
pub mod dials;
pub mod phone_lines;
pub mod phones;
pub mod support;

mod ts;
pub use ts::{ipc_bindings, CommandSpec};

/// The core app as the commands receive it (`manage()`d once by [`crate::init`]).
pub type Core<'a> = tauri::State<'a, std::sync::Arc<switchboard::app::App>>;

/// The one command list (module docs). Each entry: `module::command(arg: Type, ...) -> Ok
/// type;` where the argument names and types are the ones the window sends (Tauri's managed
/// state is not listed) and `@channel T` marks a `tauri::ipc::Channel<T>` argument.
macro_rules! commands {
    ($( $module:ident :: $name:ident ( $( $arg:ident : $(@$ch:ident)? $ty:ty ),* ) -> $ret:ty ; )*) => {
        /// The names of every command in [`handler`], for tests that drive them all.
        pub const ALL_COMMANDS: &[&str] = &[ $( stringify!($name) ),* ];

        /// The invoke handler with every command.
        pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
            tauri::generate_handler![ $( $module::$name ),* ]
        }

        /// Every command's name, arguments and answer as TypeScript types.
        pub fn command_specs() -> Vec<CommandSpec> {
            vec![ $( CommandSpec {
                name: stringify!($name),
                args: vec![ $( ts::arg(stringify!($arg), ts::arg_ty!($(@$ch)? $ty)) ),* ],
                ret: ts::ty::<$ret>(),
            } ),* ]
        }
    };
}

use switchboard::app::dials::{
    DialBanner, DialBatchMsg, DialClearScope, DialHistoryPage, DialSource, DialsStatus,
    ExportRequest, ExportSummary, FollowBy, HistoryStats, ImportSummary,
};
use switchboard::app::phone_lines::{ExclusionTest, PhoneLinesSnapshot};
use switchboard::app::phones::PhonesSnapshot;
use switchboard::app::tray::TraySummary;
use switchboard::app::{confirmations::PhoneAutonomy, Diagnostics};
use switchboard::app_info::AppInfo;
use switchboard::bridge::explain::ErrorExplanation;
use switchboard::bridge::store::BridgeSnapshot;
use switchboard::confirmations::ConfirmationsSnapshot;
use switchboard::dial::conformance::DialConformance;
use switchboard::dials::{Dial, DialFilter, DialPage, FilterCheck, HistoryQuery, OpStats};
use switchboard::link::PairingInvite;
use switchboard::settings::Settings;
use switchboard::support::open::{BundleDetails, BundleInfo};
use switchboard::support::{BundleOptions, BundlePreview, SavedBundle};

commands! {
    app::app_info() -> AppInfo;
    app::get_settings() -> Settings;
    app::save_settings(settings: Settings) -> Settings;
    app::diagnostics() -> Diagnostics;
    app::window_place() -> crate::window::WindowPlace;
    app::save_window_place(place: crate::window::WindowPlace) -> ();
    app::window_painted(view: String, scroll: f64, marks: Option<crate::window::PaintMarks>) -> ();
    phones::phones_snapshot() -> PhonesSnapshot;
    phones::open_pairing(networks: Option<Vec<String>>) -> PairingInvite;
    phones::close_pairing() -> ();
    phones::confirm_pairing(id: String, codes_match: bool) -> ();
    phones::unpair_phone(device_id: String) -> bool;
    bridge::bridge_snapshot() -> BridgeSnapshot;
    bridge::explain_error(text: String, caller: Option<String>, endpoint: Option<String>) -> ErrorExplanation;
    phone_lines::phone_lines_snapshot() -> PhoneLinesSnapshot;
    phone_lines::open_pairings_file(path: String) -> PhoneLinesSnapshot;
    phone_lines::show_phone_lines_of(phone: String) -> PhoneLinesSnapshot;
    phone_lines::close_pairings_file() -> PhoneLinesSnapshot;
    phone_lines::attach_describe(identifier: String, text: String) -> PhoneLinesSnapshot;
    phone_lines::revoke_phone_line(identifier: String, confirm: bool) -> PhoneLinesSnapshot;
    phone_lines::test_exclusion(identifier: String, path: String) -> ExclusionTest;
    phone_lines::add_known_phone_line(identifier: String, name: String) -> PhoneLinesSnapshot;
    phone_lines::remove_known_phone_line(identifier: String) -> PhoneLinesSnapshot;
    dials::dials_query(filter: Option<DialFilter>, source: Option<DialSource>) -> DialPage;
    dials::dials_stats(filter: Option<DialFilter>, source: Option<DialSource>) -> Vec<OpStats>;
    dials::dials_subscribe(filter: Option<DialFilter>, source: Option<DialSource>, line: Option<String>, channel: @channel DialBatchMsg) -> u64;
    dials::dials_history(query: HistoryQuery, source: Option<DialSource>) -> DialHistoryPage;
    dials::dials_history_stats(line: String, source: Option<DialSource>) -> HistoryStats;
    dials::dials_follow(id: String, start_ms: Option<i64>, by: FollowBy, source: Option<DialSource>) -> DialHistoryPage;
    dials::parse_dial_filter(line: String) -> FilterCheck;
    dials::dial_filter_help() -> String;
    dials::dials_unsubscribe(id: u64) -> bool;
    dials::dials_get(id: String, start_ms: Option<i64>, seq: Option<u64>, source: Option<DialSource>) -> Option<Dial>;
    dials::dial_conformance(id: String, start_ms: Option<i64>, seq: Option<u64>, source: Option<DialSource>) -> Option<DialConformance>;
    dials::dials_export(request: ExportRequest) -> ExportSummary;
    dials::dials_import(path: String) -> ImportSummary;
    dials::dials_close_import() -> ();
    dials::dials_clear(scope: DialClearScope) -> u64;
    dials::dials_status() -> DialsStatus;
    dials::dial_banner(dial_id: String, start_ms: Option<i64>, seq: Option<u64>, source: Option<DialSource>) -> Option<DialBanner>;
    confirmations::confirmations_snapshot() -> ConfirmationsSnapshot;
    confirmations::autonomy_table(phone: String) -> PhoneAutonomy;
    confirmations::notification_status() -> crate::notify::NotificationStatus;
    support::support_preview(options: Option<BundleOptions>) -> BundlePreview;
    support::save_support_bundle(path: String, options: Option<BundleOptions>) -> SavedBundle;
    support::open_bundle(path: String) -> BundleInfo;
    support::close_bundle() -> bool;
    support::bundle_info() -> Option<BundleInfo>;
    support::tray_summary() -> TraySummary;
    support::bundle_details() -> Option<BundleDetails>;
}
