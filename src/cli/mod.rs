//! Subcommands of the `switchboard` CLI, one module each. Every `run` returns the process exit
//! code, or an error message that `main` prints to stderr with exit code 2.

pub mod dials;
pub mod explain_error;
pub mod ifp;
pub mod info;
pub mod manifest;
pub mod pairings;
pub mod runtime;

/// What a subcommand returns: its exit code, or a message for stderr (exit code 2).
pub type CliResult = Result<std::process::ExitCode, String>;
