//! `switchboard-gen-docs OUT_DIR`: writes the `switchboard` CLI's man pages and shell
//! completions from its clap definition (`src/main.rs`), for the packages
//! (`scripts/package.sh`); nothing it writes is committed.
//!
//! Writes `OUT_DIR/man/switchboard.1` and one page per subcommand (`switchboard-info.1`,
//! `switchboard-ifp-validate.1`, ...: every subcommand at every depth), and
//! `OUT_DIR/completions/switchboard.bash`, `_switchboard` (zsh) and `switchboard.fish`.
//! Exit code 0 when all were written; 2 with a message naming the file otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::CommandFactory;

// The CLI's own definition, so the pages cannot drift from it; its `main` and subcommand
// runners are not used here.
#[allow(dead_code)]
#[path = "../main.rs"]
mod switchboard_main;

/// Writes `bytes` to `path` (plain write: build output, world-readable as packages need).
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// The man page of `cmd` and of every subcommand below it, each named after the command's
/// display name (`switchboard-ifp-validate.1`; clap sets it when the command is built).
fn man_pages(cmd: &clap::Command, dir: &Path) -> Result<usize, String> {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .map_err(|e| format!("could not render the man page of {name}: {e}"))?;
    write(&dir.join(format!("{name}.1")), &page)?;
    let mut written = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written += man_pages(sub, dir)?;
    }
    Ok(written)
}

/// `cmd` and every subcommand below it without clap's `help` subcommand.
fn without_help(cmd: clap::Command) -> clap::Command {
    cmd.disable_help_subcommand(true)
        .mut_subcommands(without_help)
}

fn run(out: &Path) -> Result<(), String> {
    let mut cmd = switchboard_main::Cli::command();
    cmd.build();
    let man = out.join("man");
    let completions = out.join("completions");
    for dir in [&man, &completions] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    }
    // The pages leave out clap's own `help` subcommand (its page would only say "print help",
    // and the parent's SUBCOMMANDS list would name a `switchboard-help(1)` that does not exist).
    let mut for_man = without_help(switchboard_main::Cli::command());
    for_man.build();
    let pages = man_pages(&for_man, &man)?;
    use clap_complete::Shell;
    for (shell, file) in [
        (Shell::Bash, "switchboard.bash"),
        (Shell::Zsh, "_switchboard"),
        (Shell::Fish, "switchboard.fish"),
    ] {
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut cmd, "switchboard", &mut text);
        write(&completions.join(file), &text)?;
    }
    println!(
        "wrote {pages} man pages to {} and bash, zsh and fish completions to {}",
        man.display(),
        completions.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), None) = (args.next(), args.next()) else {
        eprintln!("usage: switchboard-gen-docs OUT_DIR");
        return ExitCode::from(2);
    };
    match run(&PathBuf::from(out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard-gen-docs: {e}");
            ExitCode::from(2)
        }
    }
}
