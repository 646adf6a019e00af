//! The `switchboard` command-line tool: the core library's checks and parsers, for phone-app
//! developers and support staff. Each subcommand lives in its own module under `src/cli/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Switchboard: look at what a paired phone's lines, dials and confirmations do.
// `pub(crate)` because `src/bin/switchboard-gen-docs.rs` includes this file to write the man
// pages and shell completions from it.
#[derive(Parser, Debug)]
#[command(name = "switchboard", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the app's name, version and protocol ranges.
    Info(cli::info::Args),
    /// ifp/1 tools: validate messages, replay conformance sequences, compute params_hash.
    Ifp(cli::ifp::Args),
    /// Classify a host or phone-line error text and show its bridge banner.
    ExplainError(cli::explain_error::Args),
    /// Check a phone line's describe manifest, or test a path against its excludeFromSearch.
    Manifest(cli::manifest::Args),
    /// Show the phone lines of a phoneline-pairings.json.
    Pairings(cli::pairings::Args),
    /// Check OpenPhone runtime manifests; show what a phone asks you to confirm per autonomy.
    Runtime(cli::runtime::Args),
    /// Read a dial export (JSON Lines): list matching dials or per-op stats; `check` it against
    /// phone-line.md.
    Dials(cli::dials::Args),
    /// Save a support bundle (one .tar.gz: versions, phones, link diagnostics, banners, phone
    /// lines, confirmations, the last 1 000 dials redacted, three days of logs scrubbed).
    Bundle(cli::bundle::Args),
    /// Ask the running app how it is: version, link, and whether dials are being stored (a
    /// full disk says so and where; exit 1 while dials are not being stored).
    Status(cli::app::StatusArgs),
    /// Ask the running app to open a pairing window: print its code, link and a QR code, and
    /// wait until the phone paired. It asks "Does the phone show 534 784? Answer here [y/N] or
    /// in the Switchboard window:" (the verification code both screens show).
    Pair(cli::app::PairArgs),
    /// List the running app's paired phones: link state, address, last seen.
    Phones(cli::app::PhonesArgs),
    /// Unpair a phone in the running app (by device id or label).
    Unpair(cli::app::UnpairArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => cli::info::run(args),
        Command::Ifp(args) => cli::ifp::run(args),
        Command::ExplainError(args) => cli::explain_error::run(args),
        Command::Manifest(args) => cli::manifest::run(args),
        Command::Pairings(args) => cli::pairings::run(args),
        Command::Runtime(args) => cli::runtime::run(args),
        Command::Dials(args) => cli::dials::run(args),
        Command::Bundle(args) => cli::bundle::run(args),
        Command::Status(args) => cli::app::status(args),
        Command::Pair(args) => cli::app::pair(args),
        Command::Phones(args) => cli::app::phones(args),
        Command::Unpair(args) => cli::app::unpair(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::from(2)
        }
    }
}
