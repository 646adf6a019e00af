//! `switchboard bundle [FILE]`: saves a support bundle (see `switchboard::support`). It reads
//! the app's files directly (settings, paired phones, dial history, logs); the running app's
//! live state (banners, confirmations, link diagnostics) needs the app's control socket.

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
    let bundle =
        collect::from_files(&paths, args.demo, options, now).map_err(|e| e.to_string())?;
    let file = args
        .file
        .unwrap_or_else(|| PathBuf::from(default_file_name(now)));
    let saved = bundle.save(&file).map_err(|e| e.to_string())?;
    println!(
        "saved {} ({} files, {} bytes) from the app's files in {}",
        saved.path,
        saved.files,
        saved.bytes,
        paths.data_dir.display()
    );
    for f in &bundle.manifest.files {
        println!("  {:<36} {:>9} bytes", f.name, f.bytes);
    }
    for l in &bundle.manifest.left_out {
        println!("  left out: {l}");
    }
    Ok(ExitCode::SUCCESS)
}
