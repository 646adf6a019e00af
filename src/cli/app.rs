//! `switchboard status [--json]`, `switchboard pair [--json]`, `switchboard phones [--json]`,
//! `switchboard unpair DEVICE`: ask the running app over its control socket
//! ([`switchboard::control`]), like `kdeconnect-cli`.
//!
//! Exit codes: 0 done; 1 the pairing did not complete, no such phone, or (`status`) dials are
//! not being stored; 2 the app is not running, or the exchange failed (the message says which,
//! in one sentence).
//!
//! **Comparing the verification codes.** `pair` shows the code the phone must show too and asks
//! "Does the phone show 534 784? Answer here [y/N] or in the Switchboard window:" on this
//! terminal; the Switchboard window asks the same,
//! and whichever answers first counts. The terminal may answer because only the same user can
//! open the control socket (the same person who could click the window), and because a desktop
//! reached over SSH has nobody at its window. With `--json` nothing is asked here: the person
//! answers in the window (scripts cannot compare codes). The end of standard input answers
//! nothing (only `y` or `n`, or Enter for no, does).

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use switchboard::app::phones::PairingResult;
use switchboard::app::AppPaths;
use switchboard::control::client::ControlClient;
use switchboard::control::{
    ControlError, PairAnswer, PairingStateAnswer, PhonesAnswer, Request, StatusAnswer, UnpairAnswer,
};
use switchboard::link::{PairingEnd, PendingPairing};

use super::CliResult;

/// Arguments of `switchboard pair`.
#[derive(clap::Args, Debug)]
pub(crate) struct PairArgs {
    /// Print JSON Lines (`{"event":"window",…}`, `{"event":"pending",…}`, then
    /// `{"event":"paired",…}` or `{"event":"ended",…}`); the codes are compared in the window.
    #[arg(long)]
    json: bool,
}

/// Arguments of `switchboard status`.
#[derive(clap::Args, Debug)]
pub(crate) struct StatusArgs {
    /// Print one JSON object `{version, pid, demo, link_running, link_error, key_store_problem,
    /// storage_problem, storage_error, history_recovery}`.
    #[arg(long)]
    json: bool,
}

/// Arguments of `switchboard phones`.
#[derive(clap::Args, Debug)]
pub(crate) struct PhonesArgs {
    /// Print one JSON object `{phones: [{device_id, label, connected, address, last_seen_ms,
    /// paired_at_ms, key_fingerprint}]}`.
    #[arg(long)]
    json: bool,
}

/// Arguments of `switchboard unpair`.
#[derive(clap::Args, Debug)]
pub(crate) struct UnpairArgs {
    /// The phone's device id (`dev_…`, as `switchboard phones` lists it) or its label.
    device: String,
    /// Print one JSON object `{device_id, label}`.
    #[arg(long)]
    json: bool,
}

/// How often `pair` asks the app how the pairing goes.
const POLL: Duration = Duration::from_millis(200);

fn connect() -> Result<ControlClient, String> {
    let paths = AppPaths::from_env_or_os().ok_or_else(|| {
        "this system gives no home folder, so the running app cannot be found; set SWITCHBOARD_HOME"
            .to_string()
    })?;
    ControlClient::connect(&paths).map_err(|e| e.to_string())
}

fn call<T: serde::de::DeserializeOwned>(c: &mut ControlClient, r: &Request) -> Result<T, String> {
    c.call(r).map_err(|e| e.to_string())
}

/// The QR code of `text` drawn with half blocks (two rows a line), with its quiet zone.
fn terminal_qr(text: &str) -> Option<String> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    Some(
        code.render::<qrcode::render::unicode::Dense1x2>()
            .dark_color(qrcode::render::unicode::Dense1x2::Light)
            .light_color(qrcode::render::unicode::Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
    )
}

fn end_words(end: PairingEnd) -> &'static str {
    match end {
        PairingEnd::CodesDifferDesktop => {
            "the codes differ (said on the desktop); nothing was saved"
        }
        PairingEnd::CodesDifferPhone => "the phone said the codes differ; nothing was saved",
        PairingEnd::Expired => {
            "the codes were not confirmed on both sides in time; nothing was saved"
        }
        PairingEnd::PhoneLeft => {
            "the phone went away before the codes were confirmed; nothing was saved"
        }
    }
}

fn print_json(v: &serde_json::Value) {
    println!("{v}");
}

/// Reads one answer line from standard input on its own thread: `Some(true)` for y/yes,
/// `Some(false)` for anything else typed, `None` at the end of input.
fn ask_in_background() -> std::sync::mpsc::Receiver<Option<bool>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let answer = match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(matches!(
                line.trim().to_ascii_lowercase().as_str(),
                "y" | "yes"
            )),
        };
        let _ = tx.send(answer);
    });
    rx
}

/// Runs `switchboard pair`.
pub(crate) fn pair(args: PairArgs) -> CliResult {
    let mut c = connect()?;
    let w: PairAnswer = call(&mut c, &Request::Pair)?;
    let secs = w.expires_at_ms.saturating_sub(w.opened_at_ms) / 1000;
    if args.json {
        let mut v = serde_json::to_value(&w).map_err(|e| e.to_string())?;
        v["event"] = "window".into();
        print_json(&v);
    } else {
        println!(
            "Pairing window open for {secs} s. On the phone, scan the QR code below or open the link; the code is {}.",
            w.code
        );
        println!(
            "Port {}; addresses, in the order the phone tries them:",
            w.port
        );
        for a in &w.addresses {
            println!("  {} on {} ({})", a.address, a.interface, a.kind.words());
        }
        if !w.left_out.is_empty() {
            println!(
                "  left out to keep the QR code small: {}",
                w.left_out
                    .iter()
                    .map(|a| a.address.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        println!();
        println!("{}", w.link);
        println!();
        match terminal_qr(&w.link) {
            Some(qr) => println!("{qr}"),
            None => println!("(the link is too long for a QR code; open it on the phone)"),
        }
        println!(
            "Cannot scan? On the phone, type this one line: {} (it carries no fingerprint: compare the verification codes)",
            w.typed_line
        );
        for line in w.typed_lines.iter().skip(1) {
            println!("  or, on another network: {line}");
        }
        println!("Waiting for the phone...");
    }
    let _ = std::io::stdout().flush();

    // Bounded: the window's life, then a pending pairing's, and a margin.
    let deadline = Instant::now()
        + Duration::from_millis(
            w.expires_at_ms.saturating_sub(w.opened_at_ms)
                + switchboard::link::pairing::PENDING_TTL_MS
                + 10_000,
        );
    let mut shown: Option<String> = None;
    let mut asked: Option<std::sync::mpsc::Receiver<Option<bool>>> = None;
    let mut closed_since: Option<Instant> = None;
    while Instant::now() < deadline {
        let s: PairingStateAnswer = call(&mut c, &Request::PairingState)?;
        if let Some(done) = s.last_pairing.filter(|p| p.at_ms >= w.opened_at_ms) {
            return Ok(finish(&done, args.json));
        }
        if let Some(p) = &s.pending {
            closed_since = None;
            if shown.as_deref() != Some(p.id.as_str()) {
                shown = Some(p.id.clone());
                show_pending(p, args.json);
                if !args.json && !p.desktop_confirmed {
                    asked = Some(ask_in_background());
                }
            }
            if let Some(rx) = &asked {
                if let Ok(answer) = rx.try_recv() {
                    asked = None;
                    match answer {
                        Some(codes_match) => {
                            let r = c.request(&Request::ConfirmPairing {
                                id: p.id.clone(),
                                codes_match,
                            });
                            match r {
                                Ok(_) if codes_match => {
                                    println!(
                                        "Confirmed here; waiting for the phone to confirm too..."
                                    )
                                }
                                Ok(_) => {}
                                Err(ControlError::App(e)) => println!("{}", e.message),
                                Err(e) => return Err(e.to_string()),
                            }
                        }
                        None => println!("(no answer typed: confirm in the Switchboard window)"),
                    }
                }
            }
        } else if s.window_code.as_deref() != Some(w.code.as_str()) {
            // No window of ours and nothing pending: ended, unless the hub is about to say how
            // (the pairing's end reaches the app a moment after the pending one goes).
            let since = *closed_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_secs(2) {
                let why = if s.window_code.is_some() {
                    "another pairing window replaced this one"
                } else if shown.is_some() {
                    "the pending pairing ended"
                } else {
                    "the pairing window closed (it expired, took too many wrong codes, or was closed in the app) before a phone paired"
                };
                if args.json {
                    print_json(&serde_json::json!({"event": "ended", "reason": why}));
                } else {
                    println!("Not paired: {why}.");
                }
                return Ok(ExitCode::from(1));
            }
        }
        std::thread::sleep(POLL);
    }
    if args.json {
        print_json(&serde_json::json!({"event": "ended", "reason": "timed out"}));
    } else {
        println!("Not paired: the pairing did not end in time.");
    }
    Ok(ExitCode::from(1))
}

fn show_pending(p: &PendingPairing, json: bool) {
    if json {
        let mut v = serde_json::to_value(p).unwrap_or_default();
        v["event"] = "pending".into();
        print_json(&v);
        return;
    }
    let label = if p.label.trim().is_empty() {
        &p.device_id
    } else {
        &p.label
    };
    println!(
        "The phone {label:?} entered the code. Verification code: {}",
        p.verification_code
    );
    if p.desktop_confirmed {
        println!("Confirmed in the Switchboard window; waiting for the phone...");
    } else {
        print!(
            "Does the phone show {}? Answer here [y/N] or in the Switchboard window: ",
            p.verification_code
        );
    }
    let _ = std::io::stdout().flush();
}

fn finish(done: &PairingResult, json: bool) -> ExitCode {
    match done.ended {
        None => {
            if json {
                print_json(
                    &serde_json::json!({"event": "paired", "device_id": done.device_id, "label": done.label}),
                );
            } else {
                println!("Paired with {:?} ({}).", done.label, done.device_id);
            }
            ExitCode::SUCCESS
        }
        Some(end) => {
            if json {
                print_json(
                    &serde_json::json!({"event": "ended", "device_id": done.device_id, "reason": end, "words": end_words(end)}),
                );
            } else {
                println!("Not paired: {}.", end_words(end));
            }
            ExitCode::from(1)
        }
    }
}

/// The lines `switchboard status` prints for `s`, and whether dials are being stored (a full
/// disk, or a history kept in memory only, says they are not).
fn status_lines(s: &StatusAnswer) -> (Vec<String>, bool) {
    let mut out = vec![format!(
        "Switchboard {} is running (process {}{})",
        s.version,
        s.pid,
        if s.demo { ", demo phone" } else { "" }
    )];
    out.push(match (&s.link_error, s.link_running) {
        (Some(e), _) => format!("Link: not running: {e}"),
        (None, true) => "Link: running".to_string(),
        (None, false) => "Link: starting".to_string(),
    });
    let mut stored = true;
    if let Some(p) = &s.storage_problem {
        stored = false;
        out.push(format!(
            "Dial history: DISK FULL, dials are not being saved: {p}"
        ));
    }
    if let Some(e) = &s.storage_error {
        stored = false;
        out.push(format!(
            "Dial history: kept in memory only, nothing is saved: {e}"
        ));
    }
    if stored {
        out.push("Dial history: dials are being saved".to_string());
    }
    if let Some(r) = &s.history_recovery {
        out.push(format!("Dial history repaired at this start: {r}"));
    }
    if let Some(k) = &s.key_store_problem {
        out.push(format!("Key store: {k}"));
    }
    (out, stored)
}

/// Runs `switchboard status`: exit 0 when dials are being stored, 1 when not (the disk is
/// full, or the history is kept in memory only).
pub(crate) fn status(args: StatusArgs) -> CliResult {
    let mut c = connect()?;
    let s: StatusAnswer = call(&mut c, &Request::Status)?;
    let (lines, stored) = status_lines(&s);
    if args.json {
        println!("{}", serde_json::to_string(&s).map_err(|e| e.to_string())?);
    } else {
        for l in lines {
            println!("{l}");
        }
    }
    Ok(if stored {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs `switchboard phones`.
pub(crate) fn phones(args: PhonesArgs) -> CliResult {
    let mut c = connect()?;
    let list: PhonesAnswer = call(&mut c, &Request::Phones)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&list).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if list.phones.is_empty() {
        println!("No phone is paired. Pair one with `switchboard pair`.");
        return Ok(ExitCode::SUCCESS);
    }
    for p in &list.phones {
        let state = if p.connected {
            "connected"
        } else {
            "not connected"
        };
        let addr = p.address.as_deref().unwrap_or("no address yet");
        let seen = p
            .last_seen_ms
            .map(switchboard::timefmt::utc_text_ms)
            .unwrap_or_else(|| "never".to_string());
        // The record's time is its last hello (the link writes it when a phone connects, not at
        // each message), so it is said as that.
        let (via, since) = if p.connected {
            ("at", "connected since")
        } else {
            ("last at", "last connected")
        };
        println!(
            "{}  {}  {state}, {via} {addr}, {since} {seen}, key {}",
            p.label, p.device_id, p.key_fingerprint
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `switchboard unpair DEVICE`.
pub(crate) fn unpair(args: UnpairArgs) -> CliResult {
    let mut c = connect()?;
    match c.call::<UnpairAnswer>(&Request::Unpair {
        device: args.device.clone(),
    }) {
        Ok(u) if args.json => {
            println!("{}", serde_json::to_string(&u).map_err(|e| e.to_string())?);
            Ok(ExitCode::SUCCESS)
        }
        Ok(u) => {
            println!(
                "Unpaired {:?} ({}): its key is forgotten; it must pair again to connect.",
                u.label, u.device_id
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(ControlError::App(e)) if e.kind == switchboard::error::IpcErrorKind::NotFound => {
            eprintln!("switchboard: {}", e.message);
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.to_string()),
    }
}
