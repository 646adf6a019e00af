//! `switchboard bundle [FILE]`: saves a support bundle (see `switchboard::support`). It asks
//! the running app over its control socket (`switchboard::control`), which saves what its
//! views show; when the app is not running, it reads the app's files directly (settings,
//! paired phones, dial history, logs; no banners, confirmations or link diagnostics, which
//! live in the running app's memory). `--files` reads the files even with the app running.

use std::path::PathBuf;
use std::process::ExitCode;

use switchboard::app::AppPaths;
use switchboard::clock::{Clock as _, SystemClock};
use switchboard::support::{collect, default_file_name, BundleOptions};

use super::CliResult;

/// Arguments of `switchboard bundle`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Where to save the bundle (default: `switchboard-support-<UTC time>.tar.gz` in the
    /// current folder).
    file: Option<PathBuf>,
    /// Read the demo's files (`<data>/demo`) instead of the real ones.
    #[arg(long)]
    demo: bool,
    /// Put confirmation parameter values in as they are (default: redacted).
    #[arg(long)]
    include_params: bool,
    /// The app's home folder (`<home>/{config,data,logs}`), instead of `SWITCHBOARD_HOME` or the
    /// OS folders.
    #[arg(long, value_name = "DIR")]
    home: Option<PathBuf>,
    /// Read the app's files even when it is running (without its live state).
    #[arg(long)]
    files: bool,
}

/// Runs `switchboard bundle`.
pub(crate) fn run(args: Args) -> CliResult {
    let paths = match &args.home {
        Some(h) => AppPaths::under(h),
        None => AppPaths::from_env_or_os()
            .ok_or("no home folder: give the app's folder with --home DIR")?,
    };
    let options = BundleOptions {
        include_params: args.include_params,
    };
    let now = SystemClock.now_ms();
    let file = args
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_file_name(now)));
    let absolute = std::path::absolute(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    if !args.files {
        match ask_the_app(&paths, &absolute, options)? {
            Some(saved) => {
                println!(
                    "saved {} ({} files, {} bytes) from the running app",
                    saved["path"].as_str().unwrap_or_default(),
                    saved["files"],
                    saved["bytes"]
                );
                return Ok(ExitCode::SUCCESS);
            }
            None => println!("Switchboard is not running: reading its files"),
        }
    }
    let folder = paths.link_dir(args.demo);
    if args.demo && !folder.exists() {
        return Err(format!(
            "no demo files to read: {} does not exist (the demo has not run with this home; \
             start it with `switchboard-desktop --demo`, or leave out --demo for the real app's \
             files)",
            folder.display()
        ));
    }
    let bundle = collect::from_files(&paths, args.demo, options, now).map_err(|e| e.to_string())?;
    let saved = bundle.save(&absolute).map_err(|e| e.to_string())?;
    println!(
        "saved {} ({} files, {} bytes) from the app's files in {}",
        saved.path,
        saved.files,
        saved.bytes,
        folder.display()
    );
    for f in &bundle.manifest.files {
        println!("  {:<36} {:>9} bytes", f.name, f.bytes);
    }
    for l in &bundle.manifest.left_out {
        println!("  left out: {l}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the running app to save the bundle to `path` over the control channel (the Unix
/// socket, or the named pipe on Windows); `None` when no app answers.
fn ask_the_app(
    paths: &AppPaths,
    path: &std::path::Path,
    options: BundleOptions,
) -> Result<Option<serde_json::Value>, String> {
    use switchboard::control::{client::ControlClient, ControlError, Request};
    let mut client = match ControlClient::connect(paths) {
        Ok(c) => c,
        Err(ControlError::NotRunning { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    client
        .request(&Request::Bundle {
            path: path.display().to_string(),
            include_params: options.include_params,
        })
        .map(Some)
        .map_err(|e| e.to_string())
}
