//! The `switchboard` command-line tool: the core library's checks and parsers, for phone-app
//! developers and support staff. Each subcommand lives in its own module under `src/cli/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Switchboard: look at what a paired phone's lines, dials and confirmations do.
#[derive(Parser, Debug)]
#[command(name = "switchboard", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the app's name, version and protocol ranges.
    Info(cli::info::Args),
    /// Check a phone line's describe manifest, or test a path against its excludeFromSearch.
    Manifest(cli::manifest::Args),
    /// Show the phone lines of a phoneline-pairings.json.
    Pairings(cli::pairings::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => cli::info::run(args),
        Command::Manifest(args) => cli::manifest::run(args),
        Command::Pairings(args) => cli::pairings::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}
