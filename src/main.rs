//! The `switchboard` command-line tool: the core library's checks and parsers, for phone-app
//! developers and support staff. Each subcommand lives in its own module under `src/cli/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Switchboard: look at what a paired phone's lines, dials and confirmations do.
// `pub(crate)` because `src/bin/switchboard-gen-docs.rs` includes this file to write the man
// pages and shell completions from it.
#[derive(Parser, Debug)]
#[command(name = "switchboard", version)]
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

/// Makes a closed output end the command quietly, as it ends `cat` or `grep`.
///
/// `switchboard dials FILE | head` closes the pipe after a few lines; Rust ignores `SIGPIPE`, so
/// the next print fails with a broken pipe (`EPIPE`; `ERROR_NO_DATA` or `ERROR_BROKEN_PIPE` on
/// Windows) and `println!` panics with `failed printing to stdout: ... (os error N)`. That
/// panic exits 0 without a word: the reader wanted no more. Any other failure to print (a full
/// disk under a redirect) is said in one line and exits 2, like the command's other errors.
/// Every other panic keeps the default report.
fn end_quietly_when_the_output_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !(text.starts_with("failed printing to stdout")
            || text.starts_with("failed printing to stderr"))
        {
            report(info);
            return;
        }
        let closed = text
            .rsplit_once("(os error ")
            .and_then(|(_, code)| code.trim_end_matches(')').parse::<i32>().ok())
            .is_some_and(|code| {
                std::io::Error::from_raw_os_error(code).kind() == std::io::ErrorKind::BrokenPipe
            });
        if closed {
            std::process::exit(0);
        }
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "switchboard: its output could not be written: {text}"
        );
        std::process::exit(2);
    }));
}

fn main() -> ExitCode {
    end_quietly_when_the_output_closes();
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
