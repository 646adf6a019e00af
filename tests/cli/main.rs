//! The command-line programs as a person runs them: `switchboard` (dials, ifp, phone lines,
//! runtime, explain-error) and the `switchboard-phone` reference phone.
//!
//! One test program for the whole area, each file a module of it: linking one program instead
//! of one per file is most of what building the tests costs on a 2-core machine.

#[path = "../support/confirm.rs"]
mod confirm;

mod cli_dials;
mod cli_ifp;
mod cli_phone_line;
mod cli_runtime;
mod cli_runtime_manifest;
mod explain_error_cli;
mod phone_binary;
