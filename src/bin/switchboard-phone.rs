//! `switchboard-phone`: a simulated phone for Switchboard (the reference phone).
//!
//! It finds the desktop (a `switchboard://pair` link, `--addr` + `--fp`, the address kept from
//! an earlier pairing, or mDNS), pairs with a code when asked, says hello, and plays a scenario
//! (`--scenario FILE`, or the built-in demo) at the recorded pace or `--rate N/s` / `--rate max`,
//! `--count N` times, reconnecting and replaying whatever the desktop has not acknowledged.
//! Protocol and scenario format: `docs/protocol.md`. Code: `switchboard::phone`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use switchboard::link::phone_client::PhoneClient;
use switchboard::phone::demo::{DEMO_LABEL, DEMO_SCENARIO};
use switchboard::phone::discover::{browse, parse_pair_link, DesktopAddress};
use switchboard::phone::identity::{IdentityFile, KnownDesktop};
use switchboard::phone::player::{random_run, Confirmer, Join, PlayOptions, Player, Rate};
use switchboard::phone::scenario::Scenario;

const SIMULATOR_NOTE: &str =
    "switchboard-phone is a SIMULATOR: it keeps its private key in the plain \
file given with --identity, not in a key store as a real phone must.";

/// A simulated phone for Switchboard. SIMULATOR: its private key is kept in the plain file given
/// with --identity (a real phone keeps it in the OS key store).
#[derive(Debug, Parser)]
#[command(name = "switchboard-phone", version, after_help = SIMULATOR_NOTE)]
struct Args {
    /// The simulator's identity file (created if missing): Ed25519 seed, device id, label and
    /// the paired desktop. Plain JSON: a simulator, not a real phone.
    #[arg(long, value_name = "FILE")]
    identity: PathBuf,
    /// Label sent at pairing when the identity file is created.
    #[arg(long, default_value = "switchboard-phone")]
    label: String,
    /// A pairing link `switchboard://pair?addr=..&port=..&code=..&fp=..[&alt=..]` (pairs with
    /// its code; every address in it is tried, concurrently with a 250 ms stagger).
    #[arg(long, value_name = "URL", conflicts_with_all = ["addr", "fp"])]
    link: Option<String>,
    /// The typed pairing line the desktop shows under its QR code, `address:port code` (e.g.
    /// `"192.0.2.1:47470 123-456"`), for a phone that cannot scan: no fingerprint, so the
    /// certificate is trusted on first use and the verification code (compared by the person)
    /// checks it (docs/protocol.md, "Typed pairing line").
    /// A line may name several addresses before the code (`"192.0.2.1:47470
    /// [2001:db8::1]:47470 123-456"`): they are tried as a link's are.
    #[arg(long, value_name = "LINE", conflicts_with_all = ["link", "addr", "fp", "code"])]
    typed: Option<String>,
    /// Find the desktop over mDNS (`_switchboard._tcp.local.`, at most --mdns-wait seconds)
    /// and pair with the code the person typed (--code): the addresses come from mDNS, the
    /// certificate is trusted on first use and the verification code (compared by the person)
    /// checks it, as with --typed; the fingerprint mDNS advertises is never trusted
    /// (docs/protocol.md, "Pairing through mDNS").
    #[arg(long, requires = "code", conflicts_with_all = ["link", "addr", "fp", "typed"])]
    find: bool,
    /// The desktop's address `ip:port` (with --fp).
    #[arg(long, value_name = "IP:PORT", requires = "fp")]
    addr: Option<SocketAddr>,
    /// The desktop's certificate fingerprint (64 hex), pinned.
    #[arg(long, value_name = "HEX", requires = "addr")]
    fp: Option<String>,
    /// Pairing code the desktop shows (`123-456`); pairs before playing.
    #[arg(long)]
    code: Option<String>,
    /// When pairing, say the verification code matches without asking (for scripts and tests;
    /// the person on the desktop still has to confirm there). Without it the code is shown and
    /// the person at this terminal answers y or n.
    #[arg(long)]
    confirm_code: bool,
    /// Pair (with the code) and stop, keeping the desktop in the identity file; a later run
    /// without a code says hello and plays.
    #[arg(long)]
    pair_only: bool,
    /// Scenario file (JSON Lines, docs/protocol.md "Scenarios"); the built-in demo when absent.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Pace: `recorded` (the scenario's times), `max` (batched, as fast as the link takes them)
    /// or messages per second (`200/s`).
    #[arg(long, default_value = "recorded")]
    rate: Rate,
    /// Play the scenario this many times in a row (fresh ids each time), for load.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Seed of the ids (default random): the same seed replays the same ids.
    #[arg(long)]
    run: Option<String>,
    /// Seconds to look for the desktop over mDNS when no address is known.
    #[arg(long, default_value_t = 5)]
    mdns_wait: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    eprintln!("{SIMULATOR_NOTE}");
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard-phone: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Shows the code and asks the person at the terminal whether the desktop shows the same.
fn ask_codes_match(code: &str) -> bool {
    use std::io::Write as _;
    println!("verification code {code}");
    print!("Does the desktop show {code}? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn list_addrs(a: &[SocketAddr]) -> String {
    a.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidates other than the one that worked, as kept in the identity file.
fn others(candidates: &[SocketAddr], reached: SocketAddr) -> Vec<String> {
    candidates
        .iter()
        .filter(|a| **a != reached)
        .map(ToString::to_string)
        .collect()
}

/// Prints the tries that did not become the connection (the hello reports them too).
fn report_attempts(c: &PhoneClient) {
    for a in &c.link_attempts {
        println!(
            "attempt {} {:?} after {} ms: {}",
            a.addr, a.outcome, a.after_ms, a.error
        );
    }
}

async fn run(args: Args) -> Result<(), String> {
    let label = if args.scenario.is_none() && args.label == "switchboard-phone" {
        DEMO_LABEL.to_string()
    } else {
        args.label.clone()
    };
    let mut file =
        IdentityFile::load_or_create(&args.identity, &label).map_err(|e| e.to_string())?;
    eprintln!(
        "identity {} ({}) from {}",
        file.device_id,
        file.label,
        args.identity.display()
    );
    // Discovery is a hint: the certificate fingerprint a pairing trusts comes from the pairing
    // link (the QR code) or from what the person typed, never from mDNS (docs/protocol.md,
    // "Pairing"), or a host that answers mDNS first would receive the code.
    let typed = match &args.typed {
        Some(line) => {
            Some(switchboard::link::pairing::parse_typed_line(line).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    if args.code.is_some()
        && !args.find
        && args.link.is_none()
        && (args.addr.is_none() || args.fp.is_none())
    {
        return Err(
            "a pairing code alone is not enough: the desktop's fingerprint must come from \
             its pairing link (--link, the QR code) or be typed (--addr and --fp, as the desktop \
             shows them), never from mDNS, which any host on the network can answer (--find \
             pairs through mDNS with the certificate trusted on first use, checked by the \
             verification code)"
                .to_string(),
        );
    }
    // Pairing without a fingerprint: the certificate is trusted on first use and the
    // verification code, compared by the person, checks it.
    let first_use = typed.is_some() || args.find;
    let mut target: DesktopAddress = if let Some((addrs, code)) = &typed {
        // The fingerprint is learned on the pairing connection itself (trust on first use).
        DesktopAddress {
            addr: addrs[0],
            alternatives: addrs[1..].to_vec(),
            cert_fp: String::new(),
            code: Some(code.clone()),
            device_id: None,
        }
    } else if args.find {
        eprintln!(
            "looking for a Switchboard desktop over mDNS ({} s)...",
            args.mdns_wait
        );
        let wait = Duration::from_secs(args.mdns_wait);
        let mut found = tokio::task::spawn_blocking(move || browse(wait))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        println!(
            "found {} over mDNS at {}",
            found.device_id.as_deref().unwrap_or("a desktop"),
            list_addrs(&found.candidates())
        );
        // Only the addresses are taken from mDNS; the fingerprint it advertises is not.
        found.cert_fp = String::new();
        found.code = args.code.clone();
        found
    } else if let Some(link) = &args.link {
        parse_pair_link(link).map_err(|e| e.to_string())?
    } else if let (Some(addr), Some(fp)) = (args.addr, &args.fp) {
        DesktopAddress {
            addr,
            alternatives: Vec::new(),
            cert_fp: fp.to_ascii_lowercase(),
            code: None,
            device_id: None,
        }
    } else if let Some(d) = &file.desktop {
        DesktopAddress {
            addr: d
                .address
                .parse()
                .map_err(|e| format!("identity file: desktop.address {:?}: {e}", d.address))?,
            alternatives: d
                .other_addresses
                .iter()
                .map(|a| {
                    a.parse()
                        .map_err(|e| format!("identity file: desktop.other_addresses {a:?}: {e}"))
                })
                .collect::<Result<_, String>>()?,
            cert_fp: d.cert_fp.clone(),
            code: None,
            device_id: None,
        }
    } else {
        eprintln!(
            "looking for a Switchboard desktop over mDNS ({} s)...",
            args.mdns_wait
        );
        let wait = Duration::from_secs(args.mdns_wait);
        tokio::task::spawn_blocking(move || browse(wait))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?
    };
    let code = args.code.clone().or(target.code.clone());
    let mut join = match (code, &file.desktop) {
        (Some(code), _) => Join::Pair { code },
        (None, Some(d)) if d.cert_fp == target.cert_fp => Join::Paired {
            desktop_public_key: d.public_key.clone(),
        },
        (None, _) => {
            return Err(format!(
                "not paired with the desktop at {} (fingerprint {}): give --code or a --link",
                target.addr, target.cert_fp
            ))
        }
    };
    let confirm = if args.confirm_code {
        Confirmer::new(|p| {
            println!(
                "verification code {} (confirmed by --confirm-code; confirm the same code on the desktop)",
                p.verification_code
            );
            true
        })
    } else {
        use std::io::IsTerminal as _;
        if matches!(join, Join::Pair { .. }) && !std::io::stdin().is_terminal() {
            return Err("pairing needs the person to compare the verification code: run this on a terminal, or give --confirm-code in scripts".to_string());
        }
        Confirmer::new(|p| tokio::task::block_in_place(|| ask_codes_match(&p.verification_code)))
    };
    if args.pair_only || first_use {
        // Pair now, play later (the identity file keeps the desktop).
        let Join::Pair { code } = &join else {
            return Err("--pair-only needs a pairing code (--code, or a --link with one)".into());
        };
        let me = file.identity();
        let candidates = target.candidates();
        eprintln!("trying {}", list_addrs(&candidates));
        let mut c = if first_use {
            let c = PhoneClient::connect_any_first_use(&candidates)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "certificate {} trusted on first use: compare the verification code with the desktop's to be sure it is this desktop's",
                c.cert_fp()
            );
            target.cert_fp = c.cert_fp().to_string();
            c
        } else {
            PhoneClient::connect_any(&candidates, &target.cert_fp)
                .await
                .map_err(|e| e.to_string())?
        };
        report_attempts(&c);
        let pending = c
            .pair_start(&me, code, vec![])
            .await
            .map_err(|e| e.to_string())?;
        let matches = confirm.confirm(&pending);
        let paired = c
            .pair_confirm(&me, &pending, matches, switchboard::app_info::IFP_RANGE)
            .await
            .map_err(|e| e.to_string())?;
        let c_addr = c.connected_to;
        c.close().await;
        println!("paired: verification code {}", paired.verification_code);
        println!("connected to {}", c_addr);
        file.desktop = Some(KnownDesktop {
            other_addresses: others(&candidates, c_addr),
            address: c_addr.to_string(),
            cert_fp: target.cert_fp.clone(),
            public_key: paired.desktop_public_key,
        });
        file.save(&args.identity).map_err(|e| e.to_string())?;
        if args.pair_only {
            return Ok(());
        }
        // Typed line or --find without --pair-only: play now, as a paired phone.
        if let Some(d) = &file.desktop {
            target.addr = c_addr;
            join = Join::Paired {
                desktop_public_key: d.public_key.clone(),
            };
        }
    }
    let scenario = match &args.scenario {
        Some(p) => Scenario::load(p).map_err(|e| e.to_string())?,
        None => Scenario::parse(DEMO_SCENARIO).map_err(|e| e.to_string())?,
    };
    let mut opts = PlayOptions::new();
    opts.rate = args.rate;
    opts.count = args.count.max(1);
    opts.run = args.run.clone().unwrap_or_else(random_run);
    opts.confirm = confirm;
    opts.also_try = target.alternatives.clone();
    eprintln!(
        "playing {} message(s) x {} to {} at {:?}",
        scenario.len(),
        opts.count,
        target.addr,
        opts.rate
    );
    let player = Player::new(
        target.addr,
        &target.cert_fp,
        file.identity(),
        join,
        &scenario,
        opts,
    );
    let report = player.play().await.map_err(|e| e.to_string())?;
    let reached = report.connected_to.unwrap_or(target.addr);
    if let Some(c) = report.connected_to {
        println!("connected to {c}");
    }
    if let Some(p) = &report.paired {
        println!("paired: verification code {}", p.verification_code);
        file.desktop = Some(KnownDesktop {
            other_addresses: others(&target.candidates(), reached),
            address: reached.to_string(),
            cert_fp: target.cert_fp.clone(),
            public_key: p.desktop_public_key.clone(),
        });
        file.save(&args.identity).map_err(|e| e.to_string())?;
    }
    if report.unpaired {
        file.desktop = None;
        file.save(&args.identity).map_err(|e| e.to_string())?;
        println!("the desktop unpaired this phone; its pairing was forgotten");
    }
    let secs = report.elapsed_ms as f64 / 1000.0;
    let rate = if secs > 0.0 {
        report.sent as f64 / secs
    } else {
        0.0
    };
    println!(
        "sent {} frame(s) in {secs:.3} s ({rate:.0}/s), {} resent after {} reconnect(s), {} ack(s), {} unacknowledged",
        report.sent, report.resent, report.reconnects, report.acks, report.unacked
    );
    for e in &report.desktop_errors {
        println!("desktop refused: {e}");
    }
    for r in &report.requests {
        println!("desktop asked: {r}");
    }
    Ok(())
}
