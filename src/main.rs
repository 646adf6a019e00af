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
    /// Check OpenPhone runtime manifests; show what a phone asks you to confirm per autonomy.
    Runtime(cli::runtime::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => cli::info::run(args),
        Command::Runtime(args) => cli::runtime::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}
