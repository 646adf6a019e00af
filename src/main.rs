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
    /// Read a dial export (JSON Lines): list matching dials or per-op stats.
    Dials(cli::dials::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => cli::info::run(args),
        Command::Dials(args) => cli::dials::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}
