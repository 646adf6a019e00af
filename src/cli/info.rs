//! `switchboard info [--json]`: the app's name, version and protocol ranges.

use std::process::ExitCode;

use super::CliResult;

/// Arguments of `switchboard info`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Print one JSON object (`{name, version, runtime_protocol: {name, min_version, max_version}, ifp}`).
    #[arg(long)]
    json: bool,
}

/// Runs `switchboard info`.
pub(crate) fn run(args: Args) -> CliResult {
    let info = switchboard::app_info::app_info();
    if args.json {
        let text = serde_json::to_string_pretty(&info).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        println!("{} {}", info.name, info.version);
        println!(
            "OpenPhone runtime protocol ({}): versions {} to {}",
            info.runtime_protocol.name,
            info.runtime_protocol.min_version,
            info.runtime_protocol.max_version
        );
        println!(
            "ifp wire protocol: versions {} to {}",
            info.ifp.min_version, info.ifp.max_version
        );
    }
    Ok(ExitCode::SUCCESS)
}
