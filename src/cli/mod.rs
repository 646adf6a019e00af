//! Subcommands of the `switchboard` CLI, one module each. Every `run` returns the process exit
//! code, or an error message that `main` prints to stderr with exit code 2.

pub(crate) mod app;
pub(crate) mod bundle;
pub(crate) mod dials;
pub(crate) mod explain_error;
pub(crate) mod ifp;
pub(crate) mod info;
pub(crate) mod manifest;
pub(crate) mod pairings;
pub(crate) mod runtime;

/// What a subcommand returns: its exit code, or a message for stderr (exit code 2).
pub(crate) type CliResult = Result<std::process::ExitCode, String>;
