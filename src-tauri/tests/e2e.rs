//! End to end in the real window: the user journeys, driven through WebDriver.
//!
//! Each journey starts its own world (`e2e/env.rs`: Xvfb, a private D-Bus session with an
//! unlocked gnome-keyring as the OS key store, tauri-driver + WebKitWebDriver on free ports),
//! opens the real built `switchboard-desktop` (without `--demo`: the real link, keys in the key
//! store) and pairs the real reference phone `switchboard-phone` on loopback through the
//! window, reading the code from the screen. Journeys run one at a time (a lock) to keep CPU
//! use low. Each saves a screenshot of every view it visits under `target/e2e-shots/`, fails on
//! any error the page reports (console.error, uncaught errors, unhandled rejections), and checks
//! that every interactive element has an accessible name and that the views are reachable by
//! keyboard.
//!
//! Needs: Xvfb, dbus, gnome-keyring, WebKitWebDriver (`scripts/install-deps.sh`), tauri-driver
//! (`scripts/test.sh` installs it), and the `switchboard-phone` binary built next to the app
//! (`cargo test --workspace` builds it).
// Linux only: each journey runs in its own Xvfb, D-Bus session and gnome-keyring, driven
// through WebKitWebDriver (WebKitGTK): none of them exists on Windows or macOS.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e/env.rs"]
mod env;
#[path = "e2e/measure.rs"]
mod measure;
mod real_window;
#[path = "e2e/ui.rs"]
mod ui;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use env::{scenario, Env, Phone, R};
use serde_json::Value;
use ui::{Control, Ui, WAIT};

/// Fails the journey step with a message when `cond` is false.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(format!($($arg)+));
        }
    };
}

/// One journey at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `journey` in a fresh world and fails the test with everything needed to see why.
fn run_journey<F>(name: &str, journey: F)
where
    F: for<'a> FnOnce(
        &'a mut Journey,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = R<()>> + 'a>>,
{
    run_journey_with(name, &[], journey)
}

/// [`run_journey`] with the app started with `args`.
fn run_journey_with<F>(name: &str, args: &[&str], journey: F)
where
    F: for<'a> FnOnce(
        &'a mut Journey,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = R<()>> + 'a>>,
{
    let _one = serial();
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome: R<()> = rt.block_on(async {
        Ui::clear_old_shots(name);
        let env = Env::start()?;
        let client = match env.open_app_with(args).await {
            Ok(c) => c,
            Err(e) => return Err(format!("{e}\n{}", env.app_log())),
        };
        let ui = Ui::new(client, name);
        let mut j = Journey {
            env,
            ui: Some(ui),
            phones: Vec::new(),
        };
        let mut r = match j.ui().start().await {
            Ok(()) => journey(&mut j).await,
            Err(e) => Err(e),
        };
        if r.is_ok() {
            r = j.ui().assert_no_console_errors("during the journey").await;
        }
        if let Err(e) = &r {
            let shot = match j.ui.as_mut() {
                Some(ui) => ui
                    .shot("FAILED")
                    .await
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|e| e),
                None => "no window".into(),
            };
            let phones: Vec<String> = j
                .phones
                .iter()
                .map(|p| format!("--- {} ---\n{}", p.log.display(), p.output()))
                .collect();
            r = Err(format!(
                "{e}\n\nscreenshot: {shot}\n{}\n{}\n{}",
                j.env.app_log(),
                j.env.driver_output(),
                phones.join("\n")
            ));
        }
        j.close().await;
        r
    });
    eprintln!(
        "e2e journey {name}: {} in {:.1} s",
        if outcome.is_ok() { "passed" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if let Err(e) = outcome {
        panic!("journey {name} failed: {e}");
    }
}

/// A journey's world, its window and its phones.
struct Journey {
    env: Env,
    ui: Option<Ui>,
    phones: Vec<Phone>,
}

impl Journey {
    fn ui(&mut self) -> &mut Ui {
        self.ui.as_mut().expect("the window is open")
    }

    /// Ends the WebDriver session (the app quits), then stops the phones and tauri-driver.
    async fn close(&mut self) {
        if let Some(ui) = self.ui.take() {
            let _ = tokio::time::timeout(Duration::from_secs(20), ui.c.close()).await;
        }
        for p in &mut self.phones {
            p.proc.stop();
        }
        self.env.stop_driver();
    }

    /// Quits the app and opens it again with the same home and key store.
    async fn restart(&mut self, link_port: u16) -> R<()> {
        let old = self.ui.take().ok_or("no window to restart")?;
        old.assert_no_console_errors("before the restart").await?;
        tokio::time::timeout(Duration::from_secs(20), old.c.clone().close())
            .await
            .map_err(|_| "closing the session took over 20 s".to_string())?
            .map_err(|e| format!("closing the session: {e}"))?;
        // The first app is gone once its link stops listening.
        env::wait_port(
            link_port,
            false,
            Duration::from_secs(30),
            "the first app's link",
        )?;
        let client = self.env.open_app().await?;
        let ui = Ui::new(client, "").continue_from(&old);
        self.ui = Some(ui);
        self.ui().start().await
    }

    /// Starts `switchboard-phone` with `args` and keeps it for the failure report.
    fn phone(&mut self, name: &str, args: Vec<String>) -> R<usize> {
        let p = self.env.phone(name, &args)?;
        self.phones.push(p);
        Ok(self.phones.len() - 1)
    }
}

/// What the pairing window shows.
struct Invite {
    code: String,
    port: u16,
    fingerprint: String,
}

impl Invite {
    /// The pairing link the QR code holds, built from what the window shows.
    fn link(&self) -> String {
        format!(
            "switchboard://pair?addr=127.0.0.1&port={}&code={}&fp={}",
            self.port,
            self.code.replace('-', ""),
            self.fingerprint
        )
    }
}

/// Waits for the Phones view with a running link (the key store works).
async fn phones_ready(ui: &Ui) -> R<()> {
    let v = ui
        .wait(
            "the Phones view with the link running",
            WAIT,
            "const t = document.querySelector('main').innerText; \
             if (t.includes('The phone link is not running')) return 'ERROR: ' + t; \
             const b = window.__e2e.find('button', 'Pair a phone'); \
             return b && !b.disabled ? 'ok' : null;",
        )
        .await?;
    ensure!(v == "ok", "the link did not start (no key store?): {v}");
    Ok(())
}

/// Opens the pairing window and reads the code, port and certificate fingerprint off it.
async fn open_pairing(ui: &mut Ui, shot: bool) -> R<Invite> {
    phones_ready(ui).await?;
    ui.click_button("Pair a phone").await?;
    let v = ui
        .wait(
            "a pairing code",
            WAIT,
            "const c = document.querySelector('[aria-label=\"Pairing code\"]'); \
             const code = c ? c.textContent.trim() : ''; \
             if (!/^\\d{3}-\\d{3}$/.test(code)) return null; \
             const q = document.querySelector('[aria-label=\"QR code with the pairing link\"] svg'); \
             const qr = q ? Math.round(q.getBoundingClientRect().width) : 0; \
             return { code, qr, port: window.__e2e.dd('Port'), fp: window.__e2e.dd('Certificate') };",
        )
        .await?;
    // A phone's camera needs the code at its full size, not squeezed by the text beside it.
    let qr = v["qr"].as_u64().unwrap_or(0);
    ensure!(
        qr >= 180,
        "the QR code is drawn {qr} px wide (its box is 200 px): {v}"
    );
    let code = v["code"].as_str().unwrap_or_default().to_string();
    let port: u16 = v["port"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("no link port in the diagnostics: {v}"))?;
    let fingerprint = v["fp"].as_str().unwrap_or_default().to_string();
    ensure!(
        fingerprint.len() == 64 && fingerprint.chars().all(|c| c.is_ascii_hexdigit()),
        "the certificate fingerprint shown is not 64 hex digits: {fingerprint:?}"
    );
    let text = ui.main_text().await?;
    ensure!(
        text.contains("Valid for") && text.contains("single use"),
        "the pairing window does not say how long the code is valid:\n{text}"
    );
    if shot {
        ui.assert_names("Phones (pairing window)").await?;
        ui.shot("phones-pairing").await?;
    }
    Ok(Invite {
        code,
        port,
        fingerprint,
    })
}

fn s(x: &str) -> String {
    x.to_string()
}

fn scenario_arg(name: &str) -> Vec<String> {
    vec![s("--scenario"), scenario(name).display().to_string()]
}

/// The phone card for `label` shows Connected.
async fn wait_connected(ui: &Ui, label: &str, limit: Duration) -> R<String> {
    let body = format!(
        "const li = [...document.querySelectorAll('li.phone')].find((l) => l.innerText.includes({l})); \
         const st = li && li.querySelector('.status'); \
         return st && st.innerText.trim() === 'Connected' ? li.innerText : null;",
        l = serde_json::to_string(label).unwrap()
    );
    let v = ui
        .wait(&format!("{label} shown as Connected"), limit, &body)
        .await?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

/// The person's part of a pairing: waits for the pending pairing's verification code in the
/// Phones view, checks that the phone (started with `--confirm-code`) printed the same code, and
/// clicks "Codes match". With `shot`, checks the names and takes a screenshot first.
async fn confirm_codes(j: &mut Journey, phone: usize, shot: bool) -> R<String> {
    let v = j
        .ui()
        .wait(
            "the verification code to compare",
            WAIT,
            "const c = document.querySelector('[aria-label=\"Verification code\"]'); \
             const code = c ? c.textContent.trim() : ''; \
             return /^\\d{3} \\d{3}$/.test(code) ? code : null;",
        )
        .await?;
    let code = v.as_str().unwrap_or_default().to_string();
    let printed = format!("verification code {code}");
    let end = std::time::Instant::now() + WAIT;
    while !j.phones[phone].output().contains(&printed) {
        ensure!(
            std::time::Instant::now() < end,
            "the phone does not show the desktop's code {code}:\n{}",
            j.phones[phone].output()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ui = j.ui();
    let text = ui.main_text().await?;
    ensure!(
        text.contains("Does the phone show this code?")
            && text.contains("Nothing is saved until both screens confirm"),
        "the pending pairing does not ask the person:\n{text}"
    );
    if shot {
        ui.assert_names("Phones (pending pairing)").await?;
        ui.shot("phones-pending").await?;
    }
    ui.click_button("Codes match").await?;
    Ok(code)
}

/// Pairs a phone through the window: opens pairing, reads the code, starts `switchboard-phone`
/// with the link (and `--confirm-code`) and clicks "Codes match" once both screens show the same
/// code. With `then` (a view's shortcut, its title, and the text it shows once loaded and
/// empty, or "" for none), the phone only pairs (`--pair-only`), the view is opened and, when
/// given, its text waited for, and only then does the phone come back (without a code) to
/// play: so that view is open and loaded before anything of the phone's arrives (on a loaded
/// machine a phone that plays at once can beat the view's first read of the history).
async fn pair_phone(
    j: &mut Journey,
    name: &str,
    label: &str,
    mut extra: Vec<String>,
    then: Option<(char, &str, &str)>,
) -> R<usize> {
    let Some((digit, title, ready)) = then else {
        let invite = open_pairing(j.ui(), false).await?;
        let mut args = vec![
            s("--link"),
            invite.link(),
            s("--label"),
            s(label),
            s("--confirm-code"),
        ];
        args.append(&mut extra);
        let phone = j.phone(name, args)?;
        confirm_codes(j, phone, false).await?;
        return Ok(phone);
    };
    pair_then_open(j, name, label, digit, title).await?;
    if !ready.is_empty() {
        j.ui().wait_text(ready, WAIT).await?;
    }
    j.phone(name, extra)
}

/// Pairs phone `name` through the window as [`pair_phone`] does (`--pair-only`: it ends once
/// paired) and opens the view `digit`/`title`; the phone is not started again.
async fn pair_then_open(
    j: &mut Journey,
    name: &str,
    label: &str,
    digit: char,
    title: &str,
) -> R<()> {
    let invite = open_pairing(j.ui(), false).await?;
    let args = vec![
        s("--link"),
        invite.link(),
        s("--label"),
        s(label),
        s("--confirm-code"),
        s("--pair-only"),
    ];
    let pairing = j.phone(&format!("{name}-pair"), args)?;
    confirm_codes(j, pairing, false).await?;
    j.phones[pairing].finish(Duration::from_secs(30))?;
    j.ui().view(digit, title).await
}

// ---------------------------------------------------------------------------------------------
// Journey 1: pair, restart and reconnect, unpair.

#[test]
fn journey_1_pair_restart_unpair() {
    run_journey("1-pair", |j| Box::pin(pair_journey(j)));
}

async fn pair_journey(j: &mut Journey) -> R<()> {
    let ui = j.ui();
    ui.self_test().await?;
    ui.view('1', "Phones").await?;
    phones_ready(ui).await?;
    ui.wait_text("No phone paired yet", WAIT).await?;
    ui.assert_names("Phones (empty)").await?;
    ui.shot("phones-empty").await?;

    let invite = open_pairing(ui, true).await?;
    let phone = j.phone(
        "pair",
        [
            vec![
                s("--link"),
                invite.link(),
                s("--label"),
                s("E2E phone"),
                s("--confirm-code"),
            ],
            scenario_arg("settings.jsonl"),
        ]
        .concat(),
    )?;
    // Nothing is trusted until the person compares the codes and clicks "Codes match".
    let code = confirm_codes(j, phone, true).await?;
    let ui = j.ui();
    let card = wait_connected(ui, "E2E phone", WAIT).await?;
    ensure!(
        card.contains("ifp/1"),
        "the phone card shows no protocol version:\n{card}"
    );
    let text = ui.main_text().await?;
    ensure!(
        text.contains("Paired E2E phone") && text.contains("matched on both screens"),
        "no word that the pairing was confirmed:\n{text}"
    );
    ensure!(
        !text.contains(&code) && !text.contains("Does the phone show this code?"),
        "the verification code is still shown after the pairing ended:\n{text}"
    );
    let gone = ui
        .js(
            "return !document.querySelector('[aria-label=\"Pairing window\"]');",
            vec![],
        )
        .await?;
    ensure!(
        gone == true,
        "the single-use pairing window is still open after pairing"
    );
    let device = device_id(&card)?;
    ui.assert_names("Phones (paired)").await?;
    ui.shot("phones-connected").await?;

    // Restart: the same home and key store; the phone reconnects by itself, without a code.
    j.restart(invite.port).await?;
    let ui = j.ui();
    ui.view('1', "Phones").await?;
    let card = wait_connected(ui, "E2E phone", Duration::from_secs(60)).await?;
    ensure!(
        device_id(&card)? == device,
        "after the restart a different device is shown:\n{card}"
    );
    let text = ui.main_text().await?;
    ensure!(
        !text.contains("Does the phone show this code?") && !text.contains("Valid for"),
        "the phone was paired again after the restart:\n{text}"
    );
    ensure!(
        j.phones[phone].running(),
        "the phone stopped instead of reconnecting:\n{}",
        j.phones[phone].output()
    );
    let ui = j.ui();
    ui.shot("phones-reconnected").await?;

    // Unpair: two steps (Unpair…, then Unpair); the phone is told and forgets the desktop.
    ui.click_button("Unpair E2E phone").await?;
    ui.wait_text("Forget this phone's key?", WAIT).await?;
    ui.shot("phones-unpair-confirm").await?;
    ui.click_button("Unpair").await?;
    ui.wait_text("No phone paired yet", WAIT).await?;
    ui.shot("phones-unpaired").await?;
    let out = j.phones[phone].finish(Duration::from_secs(30))?;
    ensure!(
        out.contains("the desktop unpaired this phone"),
        "the phone was not told it was unpaired:\n{out}"
    );
    let identity: Value =
        serde_json::from_str(&std::fs::read_to_string(j.env.identity_file()).unwrap_or_default())
            .map_err(|e| format!("phone identity file: {e}"))?;
    ensure!(
        identity["desktop"].is_null(),
        "the phone still keeps the desktop after unpairing: {identity}"
    );
    Ok(())
}

fn device_id(card: &str) -> R<String> {
    card.split_whitespace()
        .find(|w| w.starts_with("dev_"))
        .map(str::to_string)
        .ok_or_else(|| format!("no device id on the phone card:\n{card}"))
}

// ---------------------------------------------------------------------------------------------
// Journey 2: phone lines.

#[test]
fn journey_2_phone_lines() {
    run_journey("2-lines", |j| Box::pin(lines_journey(j)));
}

/// Clicks the phone line named `name` in the list and waits for its details.
async fn select_line(ui: &Ui, name: &str) -> R<()> {
    let body = format!(
        "return [...document.querySelectorAll('ul.lines button')].find((b) => b.querySelector('.name') && b.querySelector('.name').innerText.startsWith({n})) || null;",
        n = serde_json::to_string(name).unwrap()
    );
    let el = ui.find_by(&format!("the line {name}"), &body).await?;
    el.click()
        .await
        .map_err(|e| format!("clicking {name}: {e}"))?;
    let body = format!(
        "const d = document.querySelector('section.detail'); return !!d && d.getAttribute('aria-label') === {n};",
        n = serde_json::to_string(&format!("Details of {name}")).unwrap()
    );
    ui.wait(&format!("the details of {name}"), WAIT, &body)
        .await
        .map(|_| ())
}

async fn detail_text(ui: &Ui) -> R<String> {
    let v = ui
        .js(
            "const d = document.querySelector('section.detail'); return d ? d.innerText : '';",
            vec![],
        )
        .await?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

const STATUS_IN_DETAIL: &str = "return document.querySelector('section.detail p[role=status]');";

async fn lines_journey(j: &mut Journey) -> R<()> {
    let phone = pair_phone(
        j,
        "lines",
        "E2E phone",
        scenario_arg("settings.jsonl"),
        None,
    )
    .await?;
    wait_connected(j.ui(), "E2E phone", WAIT).await?;
    let ui = j.ui();
    ui.view('2', "Phone lines").await?;
    // The view names the phone as it was paired, with its device id.
    ui.wait_text("Showing the phone-line settings of E2E phone (dev_", WAIT)
        .await?;

    // LumiRealm: paired, with its surface and its exclusions.
    select_line(ui, "LumiRealm").await?;
    let d = detail_text(ui).await?;
    for want in [
        "Paired",
        "Allowed",
        "module_envelope",
        "Risu modules",
        "Per character",
        "Excluded from search (19)",
    ] {
        ensure!(d.contains(want), "LumiRealm's details lack {want:?}:\n{d}");
    }
    ui.assert_names("Phone lines").await?;
    ui.shot("lines-lumirealm").await?;

    // LumiWeather: its describe declares another name, so it is skipped, with a warning.
    select_line(ui, "LumiWeather").await?;
    let d = detail_text(ui).await?;
    ensure!(
        d.contains("Skipped: name mismatch") && d.contains("declares another extension.name"),
        "LumiWeather is not shown as skipped for its name:\n{d}"
    );
    ensure!(d.contains("Warnings"), "LumiWeather shows no warning:\n{d}");
    ui.shot("lines-lumiweather-skipped").await?;

    // Test paths against LumiRealm's exclusions.
    select_line(ui, "LumiRealm").await?;
    let field = ui
        .find_by(
            "the exclusion test field",
            "const l = [...document.querySelectorAll('section.detail label')].find((x) => x.innerText.startsWith('Test a path')); return l ? l.querySelector('input') : null;",
        )
        .await?;
    ui.type_into(&field, "lumirealm.payload.first_mes").await?;
    ui.wait_text(
        "Excluded: lumirealm.payload.first_mes is covered by \"lumirealm.payload.first_mes\"",
        WAIT,
    )
    .await?;
    ui.reveal(STATUS_IN_DETAIL).await?;
    ui.shot("lines-exclusion-excluded").await?;
    ui.type_into(&field, "lumirealm.payload.name").await?;
    ui.wait_text(
        "Not excluded: none of the 19 prefixes covers lumirealm.payload.name",
        WAIT,
    )
    .await?;
    ui.reveal(STATUS_IN_DETAIL).await?;
    ui.shot("lines-exclusion-not-excluded").await?;

    // Revoke LumiRealm: the desktop asks the phone; the phone's new settings show it revoked.
    ui.click_button("Revoke LumiRealm…").await?;
    ui.wait(
        "the revoke dialog",
        WAIT,
        "const d = document.querySelector('dialog[open]'); return d ? d.innerText : null;",
    )
    .await?;
    let dialog = ui
        .js(
            "return document.querySelector('dialog[open]').innerText;",
            vec![],
        )
        .await?;
    let dialog = dialog.as_str().unwrap_or_default().to_string();
    ensure!(
        dialog.contains("Revoke LumiRealm?") && dialog.contains("asks the phone"),
        "the revoke dialog does not say the phone is asked:\n{dialog}"
    );
    ui.shot("lines-revoke-dialog").await?;
    ui.click_button("Ask the phone to revoke").await?;
    ui.wait(
        "LumiRealm revoked in the phone's new settings",
        WAIT,
        "const b = [...document.querySelectorAll('ul.lines button')].find((x) => x.innerText.startsWith('LumiRealm')); \
         return !!b && b.innerText.includes('Revoked') && b.innerText.includes('Not allowed');",
    )
    .await?;
    ui.wait_text("LumiRealm revoked: the phone's new settings arrived.", WAIT)
        .await?;
    let d = detail_text(ui).await?;
    ensure!(
        d.contains("Revoked") && !d.contains("Revoke LumiRealm…"),
        "LumiRealm's details do not show the revoke:\n{d}"
    );
    ui.scroll_top().await?;
    ui.shot("lines-revoked").await?;
    ensure!(
        j.phones[phone].running(),
        "the phone stopped during the revoke:\n{}",
        j.phones[phone].output()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Journey 3: bridge status.

#[test]
fn journey_3_bridge_status() {
    run_journey("3-bridge", |j| Box::pin(bridge_journey(j)));
}

const BANNER: &str =
    "LumiAgent is missing push_notification, required for LumiRealm communication.";

async fn section_text(ui: &Ui, heading_id: &str) -> R<String> {
    let v = ui
        .js(
            &format!(
                "const s = document.querySelector('section[aria-labelledby=\"{heading_id}\"]'); return s ? s.innerText : '';"
            ),
            vec![],
        )
        .await?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

async fn bridge_journey(j: &mut Journey) -> R<()> {
    let phone = pair_phone(
        j,
        "bridge-fail",
        "E2E phone",
        scenario_arg("bridge-fail.jsonl"),
        Some(('3', "Bridge status", "No banners.")),
    )
    .await?;
    let ui = j.ui();
    ui.wait_text("No banners.", WAIT).await?;
    // The failing dial raises the banner, in the spec's words.
    let body = format!(
        "const s = document.querySelector('section[aria-labelledby=\"current-h\"]'); return !!s && s.innerText.includes({});",
        serde_json::to_string(BANNER).unwrap()
    );
    ui.wait("the push_notification banner", WAIT, &body).await?;
    j.phones[phone].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    let current = section_text(ui, "current-h").await?;
    ensure!(
        current.contains("Fix:") && current.contains("lumirealm.phoneline"),
        "the banner has no fix or endpoint:\n{current}"
    );
    ui.assert_names("Bridge status (banner)").await?;
    ui.shot("bridge-banner").await?;

    // The same call succeeding later clears the banner into the history.
    let ok = j.phone("bridge-ok", scenario_arg("bridge-ok.jsonl"))?;
    j.phones[ok].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    let body = format!(
        "const c = document.querySelector('section[aria-labelledby=\"current-h\"]'); \
         const h = document.querySelector('section[aria-labelledby=\"hist-h\"]'); \
         const m = {}; return !!c && !!h && !c.innerText.includes(m) && h.innerText.includes(m);",
        serde_json::to_string(BANNER).unwrap()
    );
    ui.wait("the banner cleared into the history", WAIT, &body)
        .await?;
    ui.reveal("return document.querySelector('section[aria-labelledby=\"hist-h\"]');")
        .await?;
    ui.shot("bridge-history").await?;
    ui.scroll_top().await?;

    // Paste an error a user sent and read it explained.
    let pasted = ui
        .find("textarea", "Error text from a user's report or a log")
        .await?;
    let error = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters";
    ui.type_into(&pasted, error).await?;
    // The view explains the text as it changes (after a short pause in typing), so a slow
    // typist's half-typed text is explained first, as not recognised; wait for the whole one's.
    let expected =
        "Permission check failed on lumiagent.phoneline_probe: lumirealm is missing characters.";
    let v = ui
        .wait(
            "the whole pasted error explained",
            WAIT,
            &format!(
                "const x = document.querySelector('.explained'); \
                 return x && x.innerText.includes({}) ? x.innerText : null;",
                serde_json::to_string(expected).unwrap()
            ),
        )
        .await?;
    let explained = v.as_str().unwrap_or_default();
    ensure!(
        explained.contains(expected),
        "the pasted error is not explained as expected:\n{explained}"
    );
    ensure!(
        explained.contains("The banner it raises")
            && explained.contains("LumiRealm is missing characters"),
        "the pasted error's banner is not shown:\n{explained}"
    );
    ui.reveal("return document.querySelector('.explained dl');")
        .await?;
    ui.assert_names("Bridge status (explained)").await?;
    ui.shot("bridge-explained").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Journey 4: live dials.

#[test]
fn journey_4_live_dials() {
    run_journey("4-dials", |j| Box::pin(dials_journey(j)));
}

/// Dials in one play of the built-in demo, and how many of them are `read_item`.
fn demo_dials() -> (u64, u64) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/demo.jsonl"
    ))
    .unwrap();
    let mut dials = 0;
    let mut reads = 0;
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["msg"]["type"] == "event.phoneline.dial" {
            dials += 1;
            if v["msg"]["payload"]["op"] == "read_item" {
                reads += 1;
            }
        }
    }
    (dials, reads)
}

/// What the filter line holds now.
async fn filter_line(ui: &Ui) -> R<String> {
    let v = ui
        .js(
            "const i = document.querySelector('input[aria-label=\"Filter line\"]'); return i ? i.value : null;",
            vec![],
        )
        .await?;
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| "no filter line in the view".to_string())
}

/// Puts `text` into the filter line at once, as a paste does (one input event).
async fn set_filter_line(ui: &Ui, text: &str) -> R<()> {
    ui.js(
        "const i = document.querySelector('input[aria-label=\"Filter line\"]'); if (!i) return false; \
         i.focus(); i.value = arguments[0]; i.dispatchEvent(new Event('input', { bubbles: true })); return true;",
        vec![Value::String(text.to_string())],
    )
    .await?
    .as_bool()
    .filter(|b| *b)
    .map(|_| ())
    .ok_or_else(|| "no filter line to type into".to_string())
}

/// The dial count the toolbar shows ("27 dials", "6 dials match").
async fn dial_count(ui: &Ui) -> R<Option<u64>> {
    let v = ui
        .js(
            "const c = document.querySelector('.toolbar .counts'); return c ? c.innerText : null;",
            vec![],
        )
        .await?;
    Ok(v.as_str()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok()))
}

async fn wait_counts(ui: &Ui, what: &str, needle: &str) -> R<()> {
    let body = format!(
        "const c = document.querySelector('.toolbar .counts'); return !!c && c.innerText.includes({});",
        serde_json::to_string(needle).unwrap()
    );
    ui.wait(what, WAIT, &body).await.map(|_| ())
}

/// As [`wait_counts`], the counts starting with `start` ("0 dials match" is in "10 dials match").
async fn wait_counts_start(ui: &Ui, what: &str, start: &str) -> R<()> {
    let body = format!(
        "const c = document.querySelector('.toolbar .counts'); return !!c && c.innerText.trim().startsWith({});",
        serde_json::to_string(start).unwrap()
    );
    ui.wait(what, WAIT, &body).await.map(|_| ())
}

async fn dials_journey(j: &mut Journey) -> R<()> {
    let (per_play, reads) = demo_dials();
    ensure!(per_play > 0 && reads > 0, "the demo scenario has no dials");
    // Dials only (the timeline also holds the phone's connection events): the line is kept in
    // the settings, so the view opens on it again after pairing.
    j.ui().view('4', "Live dials").await?;
    set_filter_line(j.ui(), "kind:dial").await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    j.ui().view('1', "Phones").await?;
    // Paired, the view open and shown empty (the phone plays only after).
    pair_then_open(j, "dials-stream", "E2E phone", '4', "Live dials").await?;
    let ui = j.ui();
    ui.wait_text("No dials yet", WAIT).await?;
    ensure!(
        filter_line(ui).await? == "kind:dial",
        "the filter line was not kept when the view opened again"
    );
    ui.assert_names("Live dials (empty)").await?;
    ui.shot("dials-empty").await?;
    let phone = j.phone(
        "dials-stream",
        vec![s("--rate"), s("12/s"), s("--count"), s("2")],
    )?;
    let ui = j.ui();

    // Dials stream in: the count grows while the phone plays, then reaches every dial.
    let total = per_play * 2;
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen = Vec::new();
    loop {
        if let Some(n) = dial_count(ui).await? {
            if seen.last() != Some(&n) {
                seen.push(n);
            }
            if n >= total {
                break;
            }
        }
        ensure!(
            Instant::now() < deadline,
            "dials stopped arriving; counts seen {seen:?}, expected {total}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    ensure!(
        seen.last() == Some(&total),
        "expected {total} dials, saw {seen:?}"
    );
    ensure!(
        seen.iter().any(|&n| n > 0 && n < total),
        "the dials did not stream in (counts seen {seen:?})"
    );
    j.phones[phone].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    ui.assert_names("Live dials").await?;
    ui.shot("dials-streamed").await?;

    // Filter by op with its shortcut box: it writes into the filter line.
    let op = ui.find("input", "Op (exact)").await?;
    ui.type_into(&op, "read_item").await?;
    wait_counts(
        ui,
        "the read_item filter",
        &format!("{} dials match", reads * 2),
    )
    .await?;
    let line = filter_line(ui).await?;
    ensure!(
        line == "kind:dial op:read_item",
        "the Op box did not write into the filter line: {line:?}"
    );
    ui.shot("dials-filtered-read_item").await?;

    // A term the parser refuses: the error is shown under the line with its place marked,
    // and the table keeps the last valid filter.
    // (Set in one go: typed a key at a time, its prefixes would be valid filters of their own.)
    set_filter_line(ui, "kind:dial op:read_item duration>soon").await?;
    let v = ui
        .wait(
            "the filter line's error",
            WAIT,
            "const a = document.querySelector('#filter-line-status [role=alert]'); \
             const m = a && a.querySelector('mark'); \
             return a && m ? { text: a.innerText, mark: m.textContent } : null;",
        )
        .await?;
    let marked = v["mark"].as_str().unwrap_or_default();
    ensure!(
        marked.contains("soon"),
        "the error does not mark the bad term: {v}"
    );
    ensure!(
        dial_count(ui).await? == Some(reads * 2),
        "an invalid line changed the table"
    );
    ui.assert_names("Live dials (filter line error)").await?;
    ui.shot("dials-filter-line-error").await?;

    // Ctrl+F focuses the line from anywhere, the sidebar included (Ctrl+4 leaves the focus on
    // the view's sidebar entry, outside the view); Escape in the line clears it.
    ui.view('4', "Live dials").await?;
    ui.ctrl('f').await?;
    ui.wait(
        "Ctrl+F to focus the filter line",
        WAIT,
        "return document.activeElement && document.activeElement.getAttribute('aria-label') === 'Filter line';",
    )
    .await?;
    ui.press('\u{E00C}').await?; // Escape
    wait_counts(
        ui,
        "the line cleared by Escape",
        "rows (dials and connection events)",
    )
    .await?;
    ensure!(
        filter_line(ui).await?.is_empty(),
        "Escape did not clear the filter line"
    );
    set_filter_line(ui, "kind:dial").await?;
    wait_counts(ui, "dials only again", &format!("{total} dials match")).await?;
    let op = ui.find("input", "Op (exact)").await?;
    ui.type_into(&op, "read_item").await?;
    wait_counts(
        ui,
        "the read_item filter again",
        &format!("{} dials match", reads * 2),
    )
    .await?;

    // Open one in the inspector (select with a click, Enter inspects).
    let row = ui
        .find_by(
            "the first dial row",
            "return document.getElementById('dial-row-0');",
        )
        .await?;
    row.click()
        .await
        .map_err(|e| format!("clicking a dial: {e}"))?;
    ui.press('\u{E007}').await?; // Enter
    let v = ui
        .wait(
            "the dial inspector",
            WAIT,
            "const a = document.querySelector('aside[aria-label=\"Dial inspector\"]'); \
             return a && a.innerText.includes('Request') && a.innerText.includes('Call id') ? a.innerText : null;",
        )
        .await?;
    let inspector = v.as_str().unwrap_or_default();
    ensure!(
        inspector.contains("\"op\": \"read_item\"")
            && inspector.contains("lumiagent → lumirealm.phoneline"),
        "the inspector does not show the read_item dial:\n{inspector}"
    );
    ui.assert_names("Live dials (inspector)").await?;
    ui.shot("dials-inspector").await?;

    // Follow this call: the inspector writes `call:<id>` into the filter line.
    let call_id = ui
        .js("return window.__e2e.dd('Call id');", vec![])
        .await?
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(!call_id.is_empty(), "the inspector shows no call id");
    ui.click_button("Follow this call").await?;
    let want = format!("call:{call_id}");
    let body = format!(
        "const i = document.querySelector('input[aria-label=\"Filter line\"]'); \
         const c = document.querySelector('.toolbar .counts'); \
         return i && i.value === {w} && c && /^1 dial matches/.test(c.innerText) ? c.innerText : null;",
        w = serde_json::to_string(&want).unwrap()
    );
    ui.wait("the followed call", WAIT, &body).await?;
    ui.assert_names("Live dials (followed call)").await?;
    ui.shot("dials-followed-call").await?;

    // Connection events are rows of the same timeline, filterable.
    set_filter_line(ui, "kind:connection").await?;
    let v = ui
        .wait(
            "connection rows",
            WAIT,
            "const rows = [...document.querySelectorAll('.rows .row.connection')]; \
             const dials = document.querySelectorAll('.rows .row:not(.connection):not(.placeholder)').length; \
             return rows.length > 0 && dials === 0 ? rows.map((r) => r.innerText.replace(/\\s+/g, ' ')) : null;",
        )
        .await?;
    let rows = v.to_string();
    ensure!(
        rows.contains("Connected") && rows.contains("E2E phone"),
        "the connection rows do not show the phone connecting: {rows}"
    );
    ui.shot("dials-connection-rows").await?;
    set_filter_line(ui, "kind:dial").await?;
    wait_counts(ui, "dials only again", &format!("{total} dials match")).await?;
    let op = ui.find("input", "Op (exact)").await?;
    ui.type_into(&op, "read_item").await?;
    wait_counts(
        ui,
        "the read_item filter once more",
        &format!("{} dials match", reads * 2),
    )
    .await?;
    set_filter_line(ui, "kind:dial").await?;
    wait_counts(ui, "dials only", &format!("{total} dials match")).await?;

    // Pause; the phone plays the demo again; the new dials wait until Resume.
    let pause = ui
        .find_by(
            "the Pause button",
            "return [...document.querySelectorAll('.toolbar button')].find((b) => b.innerText.includes('Pause')) || null;",
        )
        .await?;
    pause.click().await.map_err(|e| format!("Pause: {e}"))?;
    ui.wait(
        "Pause to be pressed",
        WAIT,
        "const b = document.querySelector('.toolbar button[aria-pressed=true]'); return !!b && b.innerText.includes('Resume');",
    )
    .await?;
    let more = j.phone("dials-more", vec![s("--rate"), s("max")])?;
    j.phones[more].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    wait_counts(
        ui,
        "dials waiting while paused",
        &format!("paused, {per_play} waiting"),
    )
    .await?;
    ensure!(
        dial_count(ui).await? == Some(total),
        "dials were added to the table while paused"
    );
    ui.shot("dials-paused").await?;
    let resume = ui
        .find_by(
            "the Resume button",
            "return [...document.querySelectorAll('.toolbar button')].find((b) => b.innerText.includes('Resume')) || null;",
        )
        .await?;
    resume.click().await.map_err(|e| format!("Resume: {e}"))?;
    let all = total + per_play;
    wait_counts(
        ui,
        "the waiting dials after Resume",
        &format!("{all} dials"),
    )
    .await?;
    ui.shot("dials-resumed").await?;

    // Export to a file and read it back.
    let summary = ui.find("summary", "Export or import JSON Lines").await?;
    summary
        .click()
        .await
        .map_err(|e| format!("opening export: {e}"))?;
    let path = j.env.root.path().join("export").join("dials.jsonl");
    let _ = std::fs::create_dir_all(path.parent().unwrap());
    let ui = j.ui();
    let field = ui.find("input", "Export the dials shown to").await?;
    ui.type_into(&field, &path.display().to_string()).await?;
    ui.click_button("Export").await?;
    ui.wait_text(&format!("Wrote {all} dials to {}", path.display()), WAIT)
        .await?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    ensure!(
        lines.len() as u64 == all,
        "the export holds {} lines, expected {all}",
        lines.len()
    );
    for l in &lines {
        let v: Value = serde_json::from_str(l).map_err(|e| format!("export line {l:?}: {e}"))?;
        ensure!(
            v["op"].is_string() && v["caller"] == "lumiagent",
            "odd export line {l}"
        );
    }
    ui.assert_names("Live dials (export)").await?;
    ui.shot("dials-exported").await?;

    // Clear view empties the table (nothing is deleted: the export above holds every dial);
    // the dials that come after it show.
    ui.click_button("Clear…").await?;
    ui.click_button("Clear view").await?;
    wait_counts_start(ui, "the view cleared", "0 dials match").await?;
    ui.wait_text("Cleared the view", WAIT).await?;
    ui.shot("dials-cleared").await?;
    let after = j.phone("dials-after-clear", vec![s("--rate"), s("max")])?;
    j.phones[after].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    wait_counts_start(
        ui,
        "the dials after the clear",
        &format!("{per_play} dials match"),
    )
    .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Journey 5: confirmations, and no control anywhere that answers for the phone.

#[test]
fn journey_5_confirmations() {
    run_journey("5-confirm", |j| Box::pin(confirm_journey(j)));
}

/// A control that would approve, decline or cancel something; `None` when it is harmless.
/// "Cancel" is allowed only inside a local dialog, where it closes that dialog.
fn answers_for_the_phone(c: &Control) -> Option<String> {
    // Words that say where answering happens ("Confirm on your phone", "Approved on the phone,
    // waiting for the result") describe the phone, not this control.
    let mut all = format!("{} | {} | {}", c.name, c.text, c.title).to_lowercase();
    for phrase in [
        "confirm on your phone",
        "approved on the phone",
        "declined on the phone",
    ] {
        all = all.replace(phrase, "");
    }
    let words: Vec<&str> = all
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    const FORBIDDEN: [&str; 14] = [
        "approve", "approves", "approved", "approval", "decline", "declines", "reject", "deny",
        "accept", "allow", "confirm", "answer", "grant", "ok",
    ];
    if let Some(w) = words.iter().find(|w| FORBIDDEN.contains(w)) {
        return Some(format!("{c:?} ({w})"));
    }
    if words.contains(&"cancel") && !c.local_dialog {
        return Some(format!("{c:?} (cancel)"));
    }
    None
}

async fn assert_no_answer_controls(ui: &Ui, view: &str) -> R<usize> {
    let controls = ui.controls().await?;
    let bad: Vec<String> = controls.iter().filter_map(answers_for_the_phone).collect();
    ensure!(
        bad.is_empty(),
        "{view}: controls that would answer for the phone:\n  {}",
        bad.join("\n  ")
    );
    Ok(controls.len())
}

const VIEWS: [&str; 6] = [
    "Phones",
    "Phone lines",
    "Bridge status",
    "Live dials",
    "Confirmations",
    "Settings",
];

async fn confirm_journey(j: &mut Journey) -> R<()> {
    let propose = pair_phone(
        j,
        "confirm-propose",
        "E2E phone",
        scenario_arg("confirm-propose.jsonl"),
        Some(('5', "Confirmations", "")),
    )
    .await?;
    let ui = j.ui();
    // The proposal waits on the phone, with a live countdown.
    let body = "const s = document.querySelector('section[aria-labelledby=\"waiting-h\"]'); \
                const t = s && s.querySelector('[role=timer]'); \
                return t && t.innerText.includes('expires in') ? t.innerText : null;";
    let first = ui
        .wait("a waiting proposal with a countdown", WAIT, body)
        .await?;
    j.phones[propose].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    let waiting = section_text(ui, "waiting-h").await?;
    ensure!(
        waiting.contains("Waiting on the phone 1")
            && waiting.contains("Confirm on your phone")
            && waiting.contains("Tell Sam you are running late")
            && waiting.contains("E2E phone · messages.send"),
        "the proposal is not shown as waiting on the phone:\n{waiting}"
    );
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let second = ui.js(body, vec![]).await?;
    ensure!(
        second.is_string() && second != first,
        "the countdown does not run: {first} then {second}"
    );
    ui.assert_names("Confirmations (waiting)").await?;
    ui.shot("confirm-waiting").await?;
    let pick = ui
        .find_by(
            "the waiting proposal",
            "const s = document.querySelector('section[aria-labelledby=\"waiting-h\"]'); return s ? s.querySelector('button.pick') : null;",
        )
        .await?;
    pick.click()
        .await
        .map_err(|e| format!("opening the proposal: {e}"))?;
    let v = ui
        .wait(
            "the proposal's details",
            WAIT,
            "const a = document.querySelector('aside[aria-label=\"Details\"]'); return a && a.textContent.includes('Parameters') ? a.textContent : null;",
        )
        .await?;
    let detail = v.as_str().unwrap_or_default();
    ensure!(
        detail.contains("messages.send") && detail.contains("params_hash matches the parameters"),
        "the proposal's details lack the tool or the hash check:\n{detail}"
    );
    let n = assert_no_answer_controls(ui, "Confirmations (waiting, details open)").await?;
    let main_buttons = ui
        .js(
            "return [...document.querySelectorAll('main button, main [role=button], main [role=menuitem]')].map((b) => window.__e2e.name(b));",
            vec![],
        )
        .await?;
    let main_buttons: Vec<String> = serde_json::from_value(main_buttons).unwrap_or_default();
    ensure!(
        main_buttons.iter().all(|b| b.starts_with("Details of ")),
        "the Confirmations view has buttons other than the ones opening details: {main_buttons:?}"
    );
    ensure!(n > 0, "no controls found at all");
    ui.shot("confirm-details").await?;
    // Escape closes the details (the fresh user's report: it did not).
    ui.press('\u{E00C}').await?; // Escape
    ui.wait(
        "Escape to close the proposal's details",
        WAIT,
        "const a = document.querySelector('aside[aria-label=\"Details\"]'); return !!a && a.textContent.includes('Choose a confirmation');",
    )
    .await?;

    // Every view by keyboard: Tab into the sidebar, then the arrow keys; in each view, no
    // control answers for the phone and every control has a name.
    ui.js(
        "document.activeElement && document.activeElement.blur(); return true;",
        vec![],
    )
    .await?;
    ui.press('\u{E004}').await?; // Tab
    ui.wait(
        "Tab to reach the sidebar's current entry",
        WAIT,
        "const a = document.activeElement; return !!a && a.closest('nav.sidebar') !== null && a.getAttribute('aria-current') === 'page' && a.innerText.trim() === 'Confirmations';",
    )
    .await?;
    ui.press('\u{E011}').await?; // Home
    for (i, view) in VIEWS.iter().enumerate() {
        if i > 0 {
            ui.press('\u{E015}').await?; // ArrowDown
        }
        let body = format!(
            "const a = document.activeElement; const h = document.querySelector('main h1'); \
             return !!a && a.getAttribute('aria-current') === 'page' && a.innerText.trim() === {v} && !!h && h.innerText.startsWith({h});",
            v = serde_json::to_string(view).unwrap(),
            h = serde_json::to_string(view.split(' ').next().unwrap()).unwrap()
        );
        ui.wait(&format!("the arrow keys to reach {view}"), WAIT, &body)
            .await?;
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_no_answer_controls(ui, view).await?;
        ui.assert_names(view).await?;
        ui.shot(&format!(
            "keyboard-{}",
            view.to_lowercase().replace(' ', "-")
        ))
        .await?;
    }
    ui.press('\u{E015}').await?; // ArrowDown wraps to Phones
    ui.wait(
        "ArrowDown on the last view to wrap to Phones",
        WAIT,
        "const a = document.activeElement; return !!a && a.getAttribute('aria-current') === 'page' && a.innerText.trim() === 'Phones';",
    )
    .await?;

    // Ctrl+1..6 open every view too.
    for (i, view) in VIEWS.iter().enumerate() {
        let digit = char::from(b'1' + i as u8);
        ui.view(digit, view).await?;
    }

    // The tray menu (native, outside the page) answers nothing either.
    for (id, label) in switchboard_desktop::tray::MENU_ITEMS {
        let item = Control {
            name: label.to_string(),
            text: label.to_string(),
            title: String::new(),
            local_dialog: false,
        };
        ensure!(
            answers_for_the_phone(&item).is_none(),
            "the tray menu item {id} would answer for the phone: {label}"
        );
    }

    // It ends on the phone (declined there); the view follows.
    ui.view('5', "Confirmations").await?;
    let end = j.phone("confirm-end", scenario_arg("confirm-end.jsonl"))?;
    j.phones[end].finish(Duration::from_secs(60))?;
    let ui = j.ui();
    ui.wait(
        "the proposal to end",
        WAIT,
        "const w = document.querySelector('section[aria-labelledby=\"waiting-h\"]'); \
         const e = document.querySelector('section[aria-labelledby=\"ended-h\"]'); \
         return !!w && !!e && w.innerText.includes('Nothing is waiting right now') && e.innerText.toLowerCase().includes('declined on the phone');",
    )
    .await?;
    let ended = section_text(ui, "ended-h").await?;
    ensure!(
        ended.contains("Ended 1") && ended.contains("Declined") && ended.contains("E2E phone"),
        "the ended proposal is not in the timeline:\n{ended}"
    );
    assert_no_answer_controls(ui, "Confirmations (ended)").await?;
    ui.assert_names("Confirmations (ended)").await?;
    ui.shot("confirm-ended").await?;
    Ok(())
}

#[test]
fn the_answer_check_catches_answer_controls() {
    let c = |name: &str, text: &str, local_dialog: bool| Control {
        name: name.into(),
        text: text.into(),
        title: String::new(),
        local_dialog,
    };
    for bad in [
        "Approve",
        "Decline",
        "Reject action",
        "Cancel",
        "Confirm",
        "Allow once",
        "Deny",
    ] {
        assert!(
            answers_for_the_phone(&c(bad, bad, false)).is_some(),
            "{bad} not caught"
        );
    }
    assert!(answers_for_the_phone(&c("Details of X", "Approve", false)).is_some());
    assert!(answers_for_the_phone(&c("Cancel", "Cancel", true)).is_none());
    for ok in [
        "Details of Tell Sam on dev_1",
        "Confirmations",
        "Unpair E2E phone",
        "Pair a phone",
        "Clear filters",
    ] {
        assert!(
            answers_for_the_phone(&c(ok, ok, false)).is_none(),
            "{ok} flagged"
        );
    }
    let card = c(
        "Details of Tell Sam",
        "Tell Sam high Confirm on your phone expires in 4 min",
        false,
    );
    assert!(answers_for_the_phone(&card).is_none());
}

// ---------------------------------------------------------------------------------------------
// Journey 6: switchboard-tap (tap/) from its example phone line feeds Live dials.

/// A Bun process of the tap (`tap/node_modules/.bin/bun`, Lumiverse's runtime), killed when
/// dropped; its output goes to `log`.
struct NodeProc {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl NodeProc {
    fn start(
        name: &str,
        dir: &std::path::Path,
        tap: &std::path::Path,
        args: &[String],
    ) -> R<NodeProc> {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let bun = tap.join("node_modules/.bin/bun");
        let child = std::process::Command::new(&bun)
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("{} (npm ci in tap/ installs it): {e}", bun.display()))?;
        Ok(NodeProc { child, log })
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn finish(&mut self, limit: Duration) -> R<String> {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().map_err(|e| e.to_string())? {
                ensure!(
                    st.success(),
                    "{} failed ({st}):\n{}",
                    self.log.display(),
                    self.output()
                );
                return Ok(self.output());
            }
            ensure!(
                Instant::now() < end,
                "{} still running after {limit:?}:\n{}",
                self.log.display(),
                self.output()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds tap/ with its own TypeScript (offline); `tap/node_modules` comes from
/// `scripts/install-deps.sh`.
fn build_tap() -> R<std::path::PathBuf> {
    let tap = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tap");
    let tsc = tap.join("node_modules/typescript/bin/tsc");
    ensure!(
        tsc.exists(),
        "{} is missing: run `bash scripts/install-deps.sh` (npm ci in tap/)",
        tsc.display()
    );
    let out = std::process::Command::new("node")
        .arg(&tsc)
        .args(["-p", "tsconfig.json"])
        .current_dir(&tap)
        .output()
        .map_err(|e| format!("node: {e}"))?;
    ensure!(
        out.status.success(),
        "tsc in tap/ failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(tap)
}

#[test]
fn journey_6_tap_feeds_live_dials() {
    run_journey("6-tap", |j| Box::pin(tap_journey(j)));
}

async fn tap_journey(j: &mut Journey) -> R<()> {
    let tap = build_tap()?;
    let dir = j.env.root.path().join("tap");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // The extension's storage folder (the fake host's `DATA_DIR/extensions/<id>/storage`).
    let storage = dir.join("host-storage").display().to_string();
    let demo = tap.join("dist/example/demo.js").display().to_string();

    // Pair as the Weather Line's settings piece does, the person comparing the codes; then the
    // example phone line, dialed as LumiAgent would, streams into Live dials.
    let invite = open_pairing(j.ui(), false).await?;
    let mut feed = NodeProc::start(
        "tap-demo",
        &dir,
        &tap,
        &[demo, storage, invite.link(), s("40"), s("100")],
    )?;
    let v = j
        .ui()
        .wait(
            "the verification code to compare",
            WAIT,
            "const c = document.querySelector('[aria-label=\"Verification code\"]'); \
             const code = c ? c.textContent.trim() : ''; \
             return /^\\d{3} \\d{3}$/.test(code) ? code : null;",
        )
        .await?;
    let code = v.as_str().unwrap_or_default().to_string();
    let end = Instant::now() + WAIT;
    while !feed
        .output()
        .contains(&format!("Verification code: {code}"))
    {
        ensure!(
            Instant::now() < end,
            "the tap does not show the desktop's code {code}:\n{}",
            feed.output()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    j.ui().click_button("Codes match").await?;
    j.ui().view('4', "Live dials").await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if dial_count(j.ui()).await?.unwrap_or(0) >= 40 {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the tap's dials did not reach Live dials:\n{}",
            feed.output()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let said = feed.finish(Duration::from_secs(30))?;
    ensure!(said.contains("paired as dev_"), "{said}");
    let ui = j.ui();
    let text = ui.main_text().await?;
    ensure!(
        text.contains("weatherline") && text.contains("read_item"),
        "Live dials does not show the Weather Line's calls:\n{text}"
    );
    ui.assert_names("Live dials (tap)").await?;
    ui.shot("tap-live-dials").await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Journey 7: a support bundle round trip

/// What the views show that a bundle must show the same: the phones' labels, the banners'
/// texts, the confirmations' summaries with their states, and the dial count.
#[derive(Debug, PartialEq)]
struct Shown {
    phones: Vec<String>,
    banners: Vec<String>,
    confirmations: Vec<String>,
    dials: Option<u64>,
}

async fn texts(ui: &Ui, script: &str) -> R<Vec<String>> {
    let v = ui.js(script, vec![]).await?;
    Ok(v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default())
}

/// Visits Phones, Bridge, Confirmations and Live dials and reads what they show; a screenshot
/// of each with `prefix`.
async fn read_views(ui: &mut Ui, prefix: &str) -> R<Shown> {
    ui.view('1', "Phones").await?;
    ui.wait(
        "a paired phone",
        WAIT,
        "return document.querySelectorAll('li.phone strong').length > 0",
    )
    .await?;
    let phones = texts(
        ui,
        "return [...document.querySelectorAll('li.phone strong')].map((e) => e.innerText.trim());",
    )
    .await?;
    ui.shot(&format!("{prefix}-phones")).await?;
    ui.view('3', "Bridge status").await?;
    ui.wait(
        "a banner, current or cleared",
        WAIT,
        "return document.querySelectorAll('article.banner, #hist-h + ul li').length > 0",
    )
    .await?;
    let banners = texts(ui, "return [...document.querySelectorAll('article.banner')].map((e) => 'now: ' + e.getAttribute('aria-label')).concat([...document.querySelectorAll('#hist-h + ul li')].map((li) => 'cleared: ' + li.innerText.trim()));").await?;
    ui.shot(&format!("{prefix}-bridge")).await?;
    ui.view('5', "Confirmations").await?;
    ui.wait(
        "confirmations",
        WAIT,
        "return document.querySelectorAll('li.item').length > 0",
    )
    .await?;
    let confirmations = texts(
        ui,
        "return [...document.querySelectorAll('li.item')].map((li) => (li.querySelector('.summary')?.innerText ?? '') + ' | ' + (li.querySelector('.badge, .confirm-on-phone')?.innerText ?? ''));",
    )
    .await?;
    ui.shot(&format!("{prefix}-confirmations")).await?;
    ui.view('4', "Live dials").await?;
    // Dials only: the live timeline also holds connection events, a bundle only dials.
    set_filter_line(ui, "kind:dial").await?;
    ui.wait("dials", WAIT, "const c = document.querySelector('.toolbar .counts'); return !!c && /^[1-9][\\d\\s]* dials? match/.test(c.innerText);")
        .await?;
    let dials = dial_count(ui).await?;
    ui.shot(&format!("{prefix}-dials")).await?;
    Ok(Shown {
        phones,
        banners,
        confirmations,
        dials,
    })
}

async fn bundle_journey(j: &mut Journey) -> R<()> {
    let started = Instant::now();
    let (per_play, reads) = demo_dials();
    let bundle = j
        .env
        .root
        .path()
        .join("support.tar.gz")
        .display()
        .to_string();
    let damaged = j.env.root.path().join("damaged.tar.gz");
    std::fs::write(&damaged, b"not a bundle").map_err(|e| e.to_string())?;
    let ui = j.ui();
    // The demo plays its script: everything but a late proposal and dial within 30 s.
    ui.view('4', "Live dials").await?;
    ui.wait("the demo's dials", WAIT, "const c = document.querySelector('.toolbar .counts'); return !!c && /^[1-9]/.test(c.innerText);").await?;
    let settle = Duration::from_secs(35).saturating_sub(started.elapsed());
    tokio::time::sleep(settle).await;
    let live = read_views(ui, "live").await?;
    ensure!(
        live.dials.is_some_and(|n| n > 0 && n <= per_play),
        "live dials: {live:?}"
    );
    ensure!(
        !live.banners.is_empty() && !live.confirmations.is_empty(),
        "the demo shows banners and confirmations: {live:?}"
    );
    // The sidebar at a glance: the tray's counts (the tray itself has no host under Xvfb).
    let glance = ui
        .js(
            "const g = document.querySelector('[data-testid=glance]'); return g ? g.innerText : '';",
            vec![],
        )
        .await?;
    let glance = glance.as_str().unwrap_or_default().to_string();
    let raised = live
        .banners
        .iter()
        .filter(|b| b.starts_with("now: "))
        .count();
    ensure!(
        glance.contains(&format!("{raised} banner")) && glance.contains("1 connected"),
        "at a glance: {glance:?}"
    );

    // Settings: preview every file, then save.
    ui.view('6', "Settings").await?;
    ui.click_button("Preview and save a support bundle…")
        .await?;
    ui.wait("the preview dialog", WAIT, "const d = document.querySelector('dialog.preview'); return !!d && d.open && d.querySelectorAll('[role=option]').length > 5;")
        .await?;
    let files = texts(ui, "return [...document.querySelectorAll('dialog.preview [role=option] .name')].map((e) => e.innerText);").await?;
    for want in [
        "manifest.json",
        "app.json",
        "phones.json",
        "link.json",
        "banners.json",
        "phone-lines.json",
        "confirmations.json",
        "dials.jsonl",
    ] {
        ensure!(
            files.iter().any(|f| f == want),
            "the preview lists no {want}: {files:?}"
        );
    }
    let el = ui.find_by("the dials.jsonl entry", "return [...document.querySelectorAll('dialog.preview [role=option]')].find((b) => b.querySelector('.name').innerText === 'dials.jsonl');").await?;
    el.click()
        .await
        .map_err(|e| format!("choosing dials.jsonl: {e}"))?;
    ui.wait("the dials file's text, values redacted", WAIT, "const p = document.querySelector('[data-testid=bundle-file-text]'); return !!p && p.innerText.includes('\"<string>\"') && p.innerText.includes('\"op\":\"');")
        .await?;
    ui.assert_names("Settings (support bundle preview)").await?;
    ui.shot("preview").await?;
    let path = ui.find("input", "Save as").await?;
    ui.type_into(&path, &bundle).await?;
    ui.click_button("Save bundle").await?;
    ui.wait("the saved bundle", WAIT, "const s = document.querySelector('[data-testid=bundle-saved]'); return s ? s.innerText : null;")
        .await?;
    ensure!(
        std::path::Path::new(&bundle).exists(),
        "no file at {bundle}"
    );

    // A damaged file is refused, naming what is wrong.
    let open = ui.find("input", "Bundle file").await?;
    ui.type_into(&open, &damaged.display().to_string()).await?;
    ui.click_button("Open read only").await?;
    let e = ui.wait("the damaged file's error", WAIT, "const e = document.querySelector('[data-testid=bundle-open-error]'); return e ? e.innerText : null;").await?;
    ensure!(
        e.as_str()
            .unwrap_or_default()
            .contains("not gzip-compressed"),
        "error: {e}"
    );

    // The live app moves on after the save: the viewer changes a setting and unpairs the demo
    // phone. The bundle must go on showing the sender's (the saved) state.
    let ring_js = "const l = [...document.querySelectorAll('main label')].find((l) => l.innerText.trim().startsWith('Dials kept in memory')); const i = l && l.querySelector('input'); return i ? { value: i.value, disabled: i.matches(':disabled') } : null;";
    let sender_ring = ui
        .wait("the Dials kept in memory field", WAIT, ring_js)
        .await?["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mine = if sender_ring == "54000" {
        "55000"
    } else {
        "54000"
    };
    let ring = ui.find("input", "Dials kept in memory").await?;
    ui.type_into(&ring, mine).await?;
    ui.click_button("Save settings").await?;
    ui.wait_text("Saved.", WAIT).await?;
    ui.view('1', "Phones").await?;
    ui.click_button("Unpair Demo phone").await?;
    ui.click_button("Unpair").await?;
    ui.wait("the live glance line with no phone", WAIT, "const g = document.querySelector('[data-testid=glance]'); return !!g && g.innerText.includes('0 connected') && !document.querySelector('li.phone');").await?;

    // File → Open support bundle… by its shortcut, pressed through X as a person would (the
    // GTK menu bar takes it; WebDriver's keys reach only the page): the window asks for a path.
    x_keys(j, "ctrl+o")?;
    let ui = j.ui();
    ui.wait("the File menu's open prompt", WAIT, "const d = document.querySelector('dialog[data-testid=open-prompt]'); return !!d && d.open;").await?;
    let path = ui.find("input", "Bundle file").await?;
    ui.type_into(&path, &bundle).await?;
    let submit = ui
        .find_by(
            "the prompt's Open read only",
            "return document.querySelector('dialog[data-testid=open-prompt] button[type=submit]');",
        )
        .await?;
    submit
        .click()
        .await
        .map_err(|e| format!("opening from the prompt: {e}"))?;
    // The read-only banner names the sender's version and the save time.
    let b = ui.wait("the bundle's banner", WAIT, "const b = document.querySelector('[data-testid=bundle-banner]'); return b ? b.innerText : null;").await?;
    let b = b.as_str().unwrap_or_default().to_string();
    ensure!(
        b.contains(&format!(
            "Support bundle from Switchboard {}",
            env!("CARGO_PKG_VERSION")
        )) && b.contains("saved")
            && b.contains("read only"),
        "banner: {b}"
    );
    ui.wait(
        "the prompt closed",
        WAIT,
        "return !document.querySelector('dialog[data-testid=open-prompt]').open;",
    )
    .await?;
    // At a glance: the bundle's counts (as the sender's tray showed them), not the live app's
    // (no phone now).
    let in_bundle = ui.wait("the glance line of the bundle", WAIT, "const g = document.querySelector('[data-testid=glance]'); return g && g.innerText.includes('In the bundle:') ? g.innerText : null;").await?;
    let in_bundle = in_bundle.as_str().unwrap_or_default().replace('\n', " ");
    let counts = |t: &str| {
        t.replace("In the bundle:", "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    ensure!(
        counts(&in_bundle) == counts(&glance) && in_bundle.contains("1 connected"),
        "the bundle's glance line {in_bundle:?} is not the sender's {glance:?}"
    );
    ui.shot("opened").await?;
    let opened = read_views(ui, "bundle").await?;
    ensure!(
        opened == live,
        "the bundle shows other things than the app did:\nlive   {live:?}\nbundle {opened:?}"
    );

    // The Live dials filters work on the bundle's dials; nothing there changes anything.
    let op = ui.find("input", "Op (exact)").await?;
    ui.type_into(&op, "read_item").await?;
    wait_counts(
        ui,
        "the read_item filter on the bundle",
        &format!("{reads} dial"),
    )
    .await?;
    ui.shot("bundle-dials-filtered").await?;
    let dial_controls = ui.js("const b = (t) => [...document.querySelectorAll('main button')].find((e) => e.textContent.trim() === t); return { clear: b('Clear…')?.disabled ?? null, export: b('Export')?.disabled ?? null };", vec![]).await?;
    ensure!(
        dial_controls == serde_json::json!({"clear": true, "export": true}),
        "Live dials' Clear… and Export in a bundle: {dial_controls}"
    );

    // Nothing can be acted on: Pair a phone is disabled with the reason, no phone can be
    // unpaired.
    ui.view('1', "Phones").await?;
    let phones = ui.wait("the bundle's phone", WAIT, "const b = [...document.querySelectorAll('main button')].find((e) => e.innerText.trim() === 'Pair a phone'); return document.querySelector('li.phone') && b ? { pair_disabled: b.disabled, reason: b.title, notes: document.querySelectorAll('[data-testid=read-only-note]').length, unpair: [...document.querySelectorAll('main button')].filter((e) => e.innerText.startsWith('Unpair')).length } : null;").await?;
    ensure!(
        phones["pair_disabled"] == true
            && phones["reason"] == "read only: a support bundle is open"
            && phones["notes"].as_u64().unwrap_or(0) >= 2
            && phones["unpair"] == 0,
        "Phones in a bundle: {phones}"
    );
    ui.shot("bundle-read-only").await?;

    // Settings: the sender's settings, read only, not the viewer's.
    ui.view('6', "Settings").await?;
    ui.wait("the sender's settings", WAIT, "return !!document.querySelector('[data-testid=bundle-settings-head]') && !!document.querySelector('[data-testid=bundle-settings]');").await?;
    let ring = ui
        .wait("the sender's Dials kept in memory", WAIT, ring_js)
        .await?;
    ensure!(
        ring["value"] == sender_ring.as_str() && ring["disabled"] == true,
        "the bundle's Dials kept in memory: {ring} (the sender's {sender_ring}, mine {mine})"
    );
    let settings_controls = ui.js("const b = (t) => [...document.querySelectorAll('main button')].find((e) => e.innerText.trim() === t); return { save: !!b('Save settings'), preview: b('Preview and save a support bundle…')?.disabled ?? null, app: document.querySelector('[data-testid=bundle-app]')?.innerText ?? '' };", vec![]).await?;
    ensure!(
        settings_controls["save"] == false
            && settings_controls["preview"] == true
            && settings_controls["app"]
                .as_str()
                .unwrap_or_default()
                .contains(env!("CARGO_PKG_VERSION")),
        "Settings in a bundle: {settings_controls}"
    );
    ui.shot("bundle-settings").await?;

    // Close it: the live app again, with the viewer's own setting and glance line.
    ui.click_button("Close bundle").await?;
    ui.wait(
        "the banner gone",
        WAIT,
        "return !document.querySelector('[data-testid=bundle-banner]');",
    )
    .await?;
    ui.wait("the live glance line again", WAIT, "const g = document.querySelector('[data-testid=glance]'); return !!g && !g.innerText.includes('In the bundle') && g.innerText.includes('0 connected');").await?;
    let ring = ui.wait("my Dials kept in memory", WAIT, ring_js).await?;
    ensure!(
        ring["value"] == mine && ring["disabled"] == false,
        "my Dials kept in memory after closing: {ring}"
    );
    Ok(())
}

/// Presses `keys` (xdotool's names, `ctrl+o`) in the app's window through this world's X
/// server, as a person's key press: it reaches the window's GTK menu bar, which WebDriver's
/// keys (sent to the page) do not. Bounded by 20 s.
fn x_keys(j: &Journey, keys: &str) -> R<()> {
    let out = std::process::Command::new("timeout")
        .args([
            "20",
            "xdotool",
            "search",
            "--sync",
            "--limit",
            "1",
            "--name",
            "^Switchboard$",
            "windowfocus",
            "--sync",
            "key",
            "--clearmodifiers",
            keys,
        ])
        .env("DISPLAY", &j.env.display)
        .output()
        .map_err(|e| {
            format!("xdotool (bash scripts/install-deps.sh installs it) for {keys}: {e}")
        })?;
    ensure!(
        out.status.success(),
        "xdotool key {keys} in the Switchboard window: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn journey_7_support_bundle_round_trip() {
    run_journey_with("7-bundle", &["--demo"], |j| Box::pin(bundle_journey(j)));
}

// Journey 8: the Live dials window under load, measured (figures printed, not asserted).

/// A measurement (minutes long: 100 000 dials at 1 000 a second), run on its own:
/// `cargo test -p switchboard-desktop --test e2e journey_8 -- --ignored --nocapture`.
#[test]
#[ignore = "measurement: cargo test -p switchboard-desktop --test e2e journey_8 -- --ignored --nocapture"]
fn journey_8_dial_window_figures() {
    run_journey_with("8-dial-window", &["--demo"], |j| {
        Box::pin(window_figures_journey(j))
    });
}

/// The number in the Live dials header ("100 008 dials match · ..."), if shown.
async fn header_count(ui: &Ui) -> R<Option<u64>> {
    let v = ui
        .js(
            "const c = document.querySelector('.toolbar .counts'); if (!c) return null; \
             const m = c.innerText.match(/^\\s*(?:about\\s+)?([\\d\\s]+?)\\s+(?:dials?|rows?)\\b/); return m ? m[1].replace(/\\s/g, '') : null;",
            vec![],
        )
        .await?;
    Ok(v.as_str().and_then(|n| n.parse().ok()))
}

/// A scenario of only the demo's dials (one play), for the phone to stream.
fn dials_only_scenario(dir: &std::path::Path) -> R<(std::path::PathBuf, u64)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/demo.jsonl"
    ))
    .map_err(|e| format!("demo scenario: {e}"))?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('{') && l.contains("\"event.phoneline.dial\""))
        .collect();
    let path = dir.join("dials-only.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n")
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((path, lines.len() as u64))
}

/// The web processes of the app (below tauri-driver) and their memory.
fn app_memory(j: &Journey) -> R<(measure::Mem, Vec<u32>)> {
    let root = j.env.driver_pid().ok_or("tauri-driver is not running")?;
    let pids = measure::web_processes(root);
    ensure!(
        !pids.is_empty(),
        "no WebKitWebProcess below tauri-driver ({root})"
    );
    Ok((measure::memory(&pids)?, pids))
}

/// The window's memory at rest on the demo as a person runs it: the app started without
/// WebDriver (journey 8's figure at rest includes the automation session WebKitWebDriver
/// keeps in the web process, which no user has), Live dials opened by its shortcut, the demo's
/// first minute of dials played, then the web process's PSS and RSS against an empty WebKitGTK
/// page in the same X server (at most 1.2 times). Prints the figures; fails only when
/// the measurement itself cannot be made.
///
/// `WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --release -p switchboard-desktop --test e2e window_at_rest -- --ignored --nocapture`.
#[test]
#[ignore = "measurement: cargo test --release -p switchboard-desktop --test e2e window_at_rest -- --ignored --nocapture"]
fn window_at_rest_without_webdriver() {
    let _one = serial();
    if let Err(e) = window_at_rest() {
        panic!("window at rest: {e}");
    }
}

fn window_at_rest() -> R<()> {
    let env = Env::start()?;
    let log = env.root.path().join("plain-app.log");
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let started = Instant::now();
    let mut app = env.start_app_plain(&["--demo"], "info,switchboard=debug", &log)?;
    let pid = app.pid().ok_or("the app is not running")?;
    let xdotool = |args: &[&str]| -> R<String> {
        let out = std::process::Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &env.display)
            .output()
            .map_err(|e| format!("xdotool (scripts/install-deps.sh): {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    let window = loop {
        let found = xdotool(&["search", "--onlyvisible", "--name", "^Switchboard$"])?;
        if let Some(w) = found.lines().next().filter(|w| !w.is_empty()) {
            break w.to_string();
        }
        ensure!(
            app.try_status().is_none(),
            "the app ended before its window showed:\n{}",
            read_log()
        );
        ensure!(
            Instant::now() < deadline,
            "no window showed within 90 s:\n{}",
            read_log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Live dials by its shortcut: the view's subscription shows in the debug log.
    let opened = (0..5).any(|_| {
        let _ = xdotool(&["windowfocus", "--sync", &window, "key", "ctrl+4"]);
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if read_log()
                .lines()
                .any(|l| l.contains("dial view") && l.ends_with("started"))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    });
    ensure!(opened, "Ctrl+4 did not open Live dials:\n{}", read_log());
    // The demo plays its first dials within a minute of the start; then the page settles.
    let played = Duration::from_secs(65);
    std::thread::sleep(played.saturating_sub(started.elapsed()) + Duration::from_secs(5));
    ensure!(app.try_status().is_none(), "the app ended:\n{}", read_log());
    let pids = measure::web_processes(pid);
    ensure!(
        !pids.is_empty(),
        "no WebKitWebProcess below the app ({pid})"
    );
    let rest = measure::settled(&pids)?;
    let app_top = measure::top_mappings(pids[0], 6);

    let empty = measure::EmptyPage::open(&env.display, &env.home)?;
    std::thread::sleep(Duration::from_secs(5));
    let empty_pids = empty.web_processes();
    ensure!(!empty_pids.is_empty(), "the empty page has no web process");
    let base = measure::settled(&empty_pids)?;
    let empty_top = measure::top_mappings(empty_pids[0], 6);
    empty.close();
    app.stop();

    let graphics = match std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref() {
        Ok("1") => "drawn without accelerated compositing",
        Ok(_) => "WEBKIT_DISABLE_COMPOSITING_MODE set otherwise",
        Err(_) => "the app's own choice of compositing",
    };
    let mb = |v: &[(String, u64)]| {
        v.iter()
            .map(|(n, kb)| format!("{n} {:.1} MB", *kb as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    eprintln!(
        "window at rest, started without WebDriver (--demo, Live dials, Xvfb 1280x800, {graphics}):\n\
         Switchboard's web process {rest}; an empty WebKitGTK page {base}\n\
         ratio: PSS {:.3}x, RSS {:.3}x (target <= 1.2)\n\
         biggest mappings (PSS): Switchboard: {}; empty page: {}",
        rest.pss_kb as f64 / base.pss_kb.max(1) as f64,
        rest.rss_kb as f64 / base.rss_kb.max(1) as f64,
        mb(&app_top),
        mb(&empty_top),
    );
    Ok(())
}

/// The app's web processes and their memory once settled ([`measure::settled`]).
fn settled_memory(j: &Journey) -> R<(measure::Mem, Vec<u32>)> {
    let (_, pids) = app_memory(j)?;
    let m = tokio::task::block_in_place(|| measure::settled(&pids))?;
    Ok((m, pids))
}

/// Dials the demo plays in its first minute (a last one comes after two and a half minutes).
fn demo_early_dials() -> u64 {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/demo.jsonl"
    ))
    .unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["msg"]["type"] == "event.phoneline.dial" && v["at_ms"].as_u64() < Some(60_000)
        })
        .count() as u64
}

async fn window_figures_journey(j: &mut Journey) -> R<()> {
    let per_play = demo_early_dials();
    ensure!(
        per_play > 0,
        "the demo scenario has no dials in its first minute"
    );
    j.ui().view('4', "Live dials").await?;
    // The recorder's wrappers time the channel of the subscription the filter line makes.
    j.ui().js(measure::RAF_START, vec![]).await?;
    // A filter is active throughout (dials only: every dial has caller lumiagent).
    set_filter_line(j.ui(), "caller:lumiagent").await?;
    // The demo phone plays its dials: wait for all of them, then let the page come to rest.
    let deadline = Instant::now() + Duration::from_secs(90);
    while header_count(j.ui()).await?.unwrap_or(0) < per_play {
        ensure!(
            Instant::now() < deadline,
            "the demo's {per_play} dials did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (rest, app_pids) = settled_memory(j)?;

    // The baseline: an empty WebKitGTK page in the same X server, measured now.
    let empty = measure::EmptyPage::open(&j.env.display, &j.env.home)?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let empty_pids = empty.web_processes();
    ensure!(!empty_pids.is_empty(), "the empty page has no web process");
    let base = tokio::task::block_in_place(|| measure::settled(&empty_pids))?;
    let empty_top = measure::top_mappings(empty_pids[0], 6);
    empty.close();

    ensure!(
        filter_line(j.ui()).await? == "caller:lumiagent",
        "the filter line is not the one set"
    );

    // The reference phone streams 1 000 dials a second until the table holds 100 000.
    let (scenario, dials_per_play) = dials_only_scenario(j.env.root.path())?;
    let count = 100_000u64.div_ceil(dials_per_play);
    let streamed = count * dials_per_play;
    let want = streamed + per_play;
    eprintln!("dial window: empty page {base}; Switchboard at rest on the demo {rest}");
    j.ui().view('1', "Phones").await?;
    let phone = pair_phone(
        j,
        "stream",
        "Bench phone",
        vec![
            s("--scenario"),
            scenario.display().to_string(),
            s("--rate"),
            s("1000/s"),
            s("--count"),
            count.to_string(),
        ],
        Some(('4', "Live dials", "")),
    )
    .await?;
    let ui = j.ui();
    ui.js(measure::RAF_START, vec![]).await?;
    let steal = measure::StealSampler::start();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(1500);
    let mut scrolled = false;
    let mut kept = None;
    let mut n = 0;
    while n < want {
        ensure!(
            Instant::now() < deadline,
            "the stream stalled at {n} of {want} dials"
        );
        tokio::time::sleep(Duration::from_millis(1000)).await;
        n = header_count(j.ui()).await?.unwrap_or(0);
        let at = started.elapsed().as_secs();
        if at % 5 == 0 {
            eprintln!("dial window: {at} s into the stream, the header says {n} dials");
        }
        // A third of the way: the stream goes on for a minute more while the table is scrolled.
        if !scrolled && n >= want / 3 {
            scrolled = true;
            kept = Some(scrolled_rows_stay(j.ui()).await?);
        }
    }
    let gaps = measure::FrameGaps::from_value(&j.ui().js(measure::RAF_STOP, vec![]).await?)?;
    // Every frame's time and the page's timed callbacks, for a closer look than the figures
    // (with `window.__probe`, what a build made for a closer look recorded itself).
    let raw = j
        .ui()
        .js(
            "return { origin: performance.timeOrigin, t: window.__raf.t, now: window.__raf.now, after: window.__raf.after, busy: window.__raf.busy, marks: window.__raf.marks, probe: window.__probe || null };",
            vec![],
        )
        .await?;
    let dom = j
        .ui()
        .js("return document.documentElement.outerHTML;", vec![])
        .await?;
    save_shot_file("dial-window-dom.html", dom.as_str().unwrap_or_default())?;
    save_shot_file("dial-window-frames.json", &raw.to_string())?;
    let steal = steal.stop();
    let host = measure::gaps_beside_steal(&j.ui().js(measure::RAF_TIMES, vec![]).await?, &steal)?;
    let stream_s = started.elapsed().as_secs_f64();
    j.phones[phone].finish(Duration::from_secs(120))?;
    let ui = j.ui();
    let v = ui
        .js(
            "const g = document.querySelector('[role=grid]'); \
             return { rendered: g.querySelectorAll('.rows .row').length, cached: Number(g.dataset.cachedRows) };",
            vec![],
        )
        .await?;
    let rendered = v["rendered"].as_u64().unwrap_or(u64::MAX);
    let cached = v["cached"].as_u64().unwrap_or(u64::MAX);
    ensure!(
        rendered < 100,
        "the table rendered {rendered} rows for {want} dials"
    );
    ensure!(
        cached <= 2400,
        "the page holds {cached} rows: more than the view and its cache"
    );
    ui.shot("dials-100k").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (full, _) = settled_memory(j)?;
    let app_top = measure::top_mappings(app_pids[0], 6);

    let ratio = |m: measure::Mem| {
        (
            m.pss_kb as f64 / base.pss_kb.max(1) as f64,
            m.rss_kb as f64 / base.rss_kb.max(1) as f64,
        )
    };
    let (rest_pss, rest_rss) = ratio(rest);
    let (full_pss, full_rss) = ratio(full);
    let graphics = match std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref() {
        Ok("1") => "drawn without accelerated compositing, the app's default",
        _ => "drawn with accelerated compositing (software GL under Xvfb)",
    };
    // How the web process ran the page's scripts: the app sets `JSC_useJIT=false` unless the
    // environment it was started with says otherwise (`WindowScripts`); read from the web
    // process's own environment.
    let scripts = match web_process_variable(app_pids[0], "JSC_useJIT").as_deref() {
        Some("false") => {
            "scripts in JavaScriptCore's interpreter (JSC_useJIT=false, the app's default)"
                .to_string()
        }
        Some(v) => format!("scripts with JSC_useJIT={v}"),
        None => "scripts with JavaScriptCore's JIT (JSC_useJIT not set)".to_string(),
    };
    let scripts = match web_process_variable(app_pids[0], "JSC_largeHeapSize") {
        Some(v) => format!("{scripts}, a collection step of {v} bytes (JSC_largeHeapSize)"),
        None => format!("{scripts}, JavaScriptCore's own collection step (32 MiB)"),
    };
    let report = format!(
        "dial window figures (journey 8, --demo, Xvfb 1280x800, {graphics}, {scripts}):\n\
         stream: {streamed} dials by switchboard-phone --rate 1000/s in {stream_s:.1} s ({:.0} dials/s as seen), filter `caller:lumiagent`, table at {n} rows\n\
         frames: {} in {:.1} s; longest gap {:.1} ms (target <= 50), p99 {:.1} ms (target <= 20), p50 {:.1} ms, {} gaps over 50 ms ({} of them while the harness ran a script in the page); the gaps no harness script fell in: {}; the page's code in them: {}; the page's callbacks by kind (ms): {}; the gaps over 50 ms [began, ms]: {}; the harness's actions [what, at ms]: {}\n\
         the host (a virtual machine's CPUs taken by others): {host}\n\
         scrolled down mid-stream: rows in view kept their place: {}\n\
         rows rendered {rendered}, rows held in the page {cached}\n\
         memory, web process: empty WebKitGTK page {base}\n\
         memory, web process: Switchboard at rest on the demo {rest} = {rest_pss:.2}x PSS, {rest_rss:.2}x RSS (target <= 1.2x)\n\
         memory, web process: Switchboard showing {n} dials {full} = {full_pss:.2}x PSS, {full_rss:.2}x RSS (target <= 1.4x)\n\
         biggest mappings by PSS, empty page: {empty_top:?}\n\
         biggest mappings by PSS, Switchboard: {app_top:?}\n",
        streamed as f64 / stream_s,
        gaps.frames,
        gaps.span_ms / 1000.0,
        gaps.max_ms,
        gaps.p99_ms,
        gaps.p50_ms,
        gaps.over50,
        gaps.over50_at_mark,
        gaps.unmarked,
        gaps.busy_in_long,
        gaps.by_kind,
        gaps.long_gaps,
        gaps.acts,
        kept.unwrap_or_default(),
    );
    eprintln!("{report}");
    let out = ui::shots_dir().join("dial-window-figures.txt");
    std::fs::write(&out, &report).map_err(|e| format!("{}: {e}", out.display()))?;
    // The app's output (with `JSC_logGC=1` in the environment: the web process's collections).
    let log = ui::shots_dir().join("dial-window-driver.log");
    std::fs::copy(j.env.driver_log_path(), &log).map_err(|e| format!("{}: {e}", log.display()))?;
    Ok(())
}

/// The value of `name` in the environment of process `pid` (`None`: not set or unreadable).
fn web_process_variable(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    env.split(|b| *b == 0)
        .filter_map(|e| std::str::from_utf8(e).ok())
        .find_map(|e| e.strip_prefix(&prefix).map(str::to_string))
}

/// Scrolls the table to its middle and checks that the row at the top of the view stays the
/// same while live dials keep arriving above it; returns what it saw.
async fn scrolled_rows_stay(ui: &Ui) -> R<String> {
    let top_row = "const g = document.querySelector('[role=grid]'); const r = g.getBoundingClientRect(); \
                   const el = document.elementFromPoint(r.left + 40, r.top + 28 + 14); const row = el && el.closest('.rows .row'); \
                   return row && !row.classList.contains('placeholder') ? row.innerText.replace(/\\s+/g, ' ') + ' [row ' + row.getAttribute('aria-rowindex') + ', scrollTop ' + g.scrollTop + ', cached ' + g.dataset.cachedRows + ']' : null;";
    ui.js(
        "if (window.__raf) (window.__raf.acts = window.__raf.acts || []).push(['scroll to the middle', performance.now()]); \
         const g = document.querySelector('[role=grid]'); g.scrollTop = Math.floor(g.scrollHeight / 2); return true;",
        vec![],
    )
    .await?;
    let asked = Instant::now();
    let first = ui
        .wait("the rows in the middle of the table", WAIT, top_row)
        .await?;
    let shown_after = asked.elapsed();
    let before = header_count(ui).await?.unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let after = header_count(ui).await?.unwrap_or(0);
    let second = ui.js(top_row, vec![]).await?;
    ensure!(
        after > before,
        "no dials arrived while scrolled down ({before} -> {after})"
    );
    let dial = |v: &Value| {
        v.as_str()
            .and_then(|t| t.split(" [row ").next())
            .unwrap_or_default()
            .to_string()
    };
    ensure!(
        dial(&first) == dial(&second),
        "the rows in view moved while {} dials arrived: {first} -> {second}",
        after - before
    );
    ui.js(
        "document.querySelector('[role=grid]').scrollTop = 0; return true;",
        vec![],
    )
    .await?;
    Ok(format!(
        "yes ({} dials arrived; the middle rows shown {:.2} s after the jump; top row {})",
        after - before,
        shown_after.as_secs_f64(),
        first.as_str().unwrap_or_default()
    ))
}

/// Writes `text` to `name` in the screenshots' folder (`target/e2e-shots`); the error names the
/// file.
fn save_shot_file(name: &str, text: &str) -> Result<(), String> {
    let path = ui::shots_dir().join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

// Dial to pixel: a dial leaving the phone to its row painted in Live dials (docs/performance.md,
// `dial_to_pixel_p99_ms`; figures printed, the view's following checked, the goal not asserted).

/// A measurement (about a minute of streaming), run on its own, release build, drawn as the
/// app draws by default:
/// `WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --release -p switchboard-desktop --test e2e dial_to_pixel -- --ignored --nocapture`
/// (`scripts/bench.sh` runs it; it needs `switchboard-phone` built next to the app).
/// `DIAL_TO_PIXEL_S` sets the seconds streamed at each rate (default 20).
#[test]
#[ignore = "measurement: WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --release -p switchboard-desktop --test e2e dial_to_pixel -- --ignored --nocapture"]
fn journey_9_dial_to_pixel() {
    run_journey("9-dial-to-pixel", |j| Box::pin(dial_to_pixel_journey(j)));
}

/// The rates measured, dials a second; `dial_to_pixel_p99_ms` is the last one's p99.
const DIAL_TO_PIXEL_RATES: [u64; 2] = [100, 1000];

/// Time before a stream's first dial, ms: the phone connects and says hello in it, so no dial
/// is sent later than its stamp for want of a connection.
const DIAL_TO_PIXEL_LEAD_MS: u64 = 1500;

/// The scenario of one stream: `rate` dials a second for `secs` seconds after
/// [`DIAL_TO_PIXEL_LEAD_MS`], each `started_at` its own line's time (`{{ts}}`: the phone's
/// clock when it is due to be sent) with a duration of 0, so a dial's `start_ms` is the moment
/// the phone sends it. Returns the file, the dials in it and the last one's time from the
/// phone's start, ms.
fn dial_to_pixel_scenario(
    dir: &std::path::Path,
    rate: u64,
    secs: u64,
) -> R<(std::path::PathBuf, u64, u64)> {
    let n = rate * secs;
    let mut text = String::new();
    let mut last = 0;
    for i in 0..n {
        last = DIAL_TO_PIXEL_LEAD_MS + i * 1000 / rate;
        let call = format!("{{{{id:call:c{i}}}}}");
        let line = serde_json::json!({
            "at_ms": last,
            "msg": {
                "type": "event.phoneline.dial",
                "session": "{{id:ses:dtp}}",
                "payload": {
                    "call_id": call,
                    "caller": "lumiagent",
                    "callee": "lumirealm",
                    "endpoint": "lumirealm.phoneline",
                    "op": "read_item",
                    "request": { "op": "read_item", "userId": "user_demo", "itemId": format!("item_{i}"), "callId": call },
                    "started_at": "{{ts}}",
                    "duration_ms": 0,
                    "outcome": "ok",
                    "response": { "item": { "id": format!("item_{i}"), "label": "A lorebook entry" } }
                }
            }
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let path = dir.join(format!("dial-to-pixel-{rate}.jsonl"));
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((path, n, last))
}

/// Nearest-rank percentile `p` (0..=1) of sorted `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = (p * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Wall clock, epoch ms (the clock the phone stamps its dials with and the page reads).
fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// What the page's probe recorded since the last read: `[start_ms, dom_ms, paint_ms,
/// arrived_ms]` per dial shown (`ui/src/lib/rowPainter.ts`) and `[arrived_ms, rows, left_out,
/// skipped, newest_start_ms]` per live batch that reached the page, and whether the table is at
/// the top (following the newest row; before the first dial the view shows no table, which
/// counts as at the top).
async fn dial_to_pixel_read(ui: &Ui) -> R<(Vec<[f64; 4]>, Vec<[f64; 5]>, bool)> {
    let v = ui
        .js(
            "const p = window.__dialToPixel; if (!p) return null; const out = p.out; p.out = []; \
             const batches = p.batches || []; p.batches = []; \
             const g = document.querySelector('[role=grid]'); \
             return { out, batches, top: !g || g.scrollTop === 0 };",
            vec![],
        )
        .await?;
    ensure!(
        !v.is_null(),
        "the probe is gone (the page was loaded again?)"
    );
    fn rows<const N: usize>(v: &Value, what: &str) -> R<Vec<[f64; N]>> {
        Ok(v.as_array()
            .ok_or_else(|| format!("the probe gave no {what}: {v}"))?
            .iter()
            .map(|r| std::array::from_fn(|k| r[k].as_f64().unwrap_or(f64::NAN)))
            .collect())
    }
    Ok((
        rows(&v["out"], "records")?,
        rows(&v["batches"], "batches")?,
        v["top"].as_bool().unwrap_or(false),
    ))
}

/// Sets the page's dial-to-pixel probe anew (`ui/src/lib/rowPainter.ts`): the paints and the
/// batches' arrivals from now on.
const DIAL_TO_PIXEL_PROBE: &str = "window.__dialToPixel = { seen: new Set(), out: [], arrived: new Map(), batches: [] }; return true;";

/// `p50 / p99 / max` of `v` in ms (`v` sorted here), or "none".
fn spread(mut v: Vec<f64>) -> String {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return "none".into();
    }
    v.sort_by(f64::total_cmp);
    format!(
        "p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        percentile(&v, 0.5),
        percentile(&v, 0.99),
        v[v.len() - 1]
    )
}

/// The batches' figures: how many, rows a batch, time between two, and from a batch's newest
/// dial leaving the phone to the batch reaching the page.
fn batch_figures(batches: &[[f64; 5]]) -> String {
    let rows: Vec<f64> = batches.iter().map(|b| b[1]).collect();
    let left_out: f64 = batches.iter().map(|b| b[2]).sum();
    let skipped: f64 = batches.iter().map(|b| b[3]).sum();
    let apart: Vec<f64> = batches.windows(2).map(|w| w[1][0] - w[0][0]).collect();
    let delivery: Vec<f64> = batches.iter().map(|b| b[0] - b[4]).collect();
    format!(
        "{} batches into the page, rows a batch {}, {left_out} dials left out and {skipped} dropped by the core; \
         apart {}; the newest dial's phone to the page {}",
        batches.len(),
        spread(rows).replace(" ms", ""),
        spread(apart),
        spread(delivery),
    )
}

async fn dial_to_pixel_journey(j: &mut Journey) -> R<()> {
    let secs = std::env::var("DIAL_TO_PIXEL_S")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(20)
        .clamp(1, 600);
    let graphics = match std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref() {
        Ok("1") => "without accelerated compositing (the app's default)",
        _ => "with accelerated compositing (software GL under Xvfb; not the app's default)",
    };
    // Pair the phone first (it only pairs), then open Live dials: the table is at the top
    // with nothing in it before the first dial arrives.
    j.ui().view('1', "Phones").await?;
    let invite = open_pairing(j.ui(), false).await?;
    let pairing = j.phone(
        "dtp-pair",
        vec![
            s("--link"),
            invite.link(),
            s("--label"),
            s("Bench phone"),
            s("--confirm-code"),
            s("--pair-only"),
        ],
    )?;
    confirm_codes(j, pairing, false).await?;
    j.phones[pairing].finish(Duration::from_secs(30))?;
    j.ui().view('4', "Live dials").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut raw = serde_json::Map::new();
    let mut summary = Vec::new();
    let mut last_p99 = f64::NAN;
    for rate in DIAL_TO_PIXEL_RATES {
        let (path, sent, last_at) = dial_to_pixel_scenario(j.env.root.path(), rate, secs)?;
        j.ui().js(DIAL_TO_PIXEL_PROBE, vec![]).await?;
        let steal = measure::StealSampler::start();
        let t0 = wall_ms();
        let phone = j.phone(
            &format!("dtp-{rate}"),
            vec![
                s("--scenario"),
                path.display().to_string(),
                s("--rate"),
                s("recorded"),
            ],
        )?;
        let deadline = Instant::now() + Duration::from_secs(secs + 120);
        let mut got: Vec<[f64; 4]> = Vec::new();
        let mut batches: Vec<[f64; 5]> = Vec::new();
        let mut off_top = 0u32;
        let mut ended: Option<Instant> = None;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (out, b, top) = dial_to_pixel_read(j.ui()).await?;
            got.extend(out);
            batches.extend(b);
            off_top += u32::from(!top);
            if ended.is_none() && !j.phones[phone].running() {
                ended = Some(Instant::now());
            }
            // Two reads after the phone ended: the last batch is painted by then.
            if ended.is_some_and(|e| e.elapsed() >= Duration::from_secs(2)) {
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "the {rate}/s stream did not end within {} s",
                secs + 120
            );
        }
        j.phones[phone].finish(Duration::from_secs(30))?;
        let (stolen_ms, sampled_s) = steal.stop().total();
        ensure!(
            off_top == 0,
            "the table left the top {off_top} times at {rate}/s: the view did not follow the newest row"
        );
        // This stream's dials only (the phone's stamps are after `t0`).
        got.retain(|r| r[0] >= t0.floor());
        batches.retain(|b| b[4] >= t0.floor());
        let newest = got.iter().map(|r| r[0]).fold(f64::NAN, f64::max);
        // NaN (nothing painted) is not at or after the due time either.
        let due = (t0 + last_at as f64).floor();
        let followed = newest.partial_cmp(&due).is_some_and(|o| o.is_ge());
        ensure!(
            followed,
            "the last dial of the {rate}/s stream was never painted (newest painted stamp {newest}, \
             due at or after {due}): the view did not follow to the end"
        );
        let mut total: Vec<f64> = got.iter().map(|r| r[2] - r[0]).collect();
        total.sort_by(f64::total_cmp);
        let line = format!(
            "dial to pixel at {rate} dials/s: {} ({} of {sent} dials painted as the newest rows; \
             phone to DOM {}, of which phone to the page {} and the page's wait {}; DOM to painted {}; \
             host steal {stolen_ms} ms in {sampled_s:.0} s)\n  {rate} dials/s: {}",
            spread(total.clone()),
            got.len(),
            spread(got.iter().map(|r| r[1] - r[0]).collect()),
            spread(got.iter().map(|r| r[3] - r[0]).collect()),
            spread(got.iter().map(|r| r[1] - r[3]).collect()),
            spread(got.iter().map(|r| r[2] - r[1]).collect()),
            batch_figures(&batches),
        );
        eprintln!("{line}");
        summary.push(line);
        last_p99 = percentile(&total, 0.99);
        raw.insert(
            rate.to_string(),
            serde_json::json!({ "t0": t0, "sent": sent, "records": got, "batches": batches }),
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    save_shot_file("dial-to-pixel.json", &Value::Object(raw).to_string())?;
    eprintln!("dial to pixel: drawn {graphics}; {secs} s a rate");
    for l in &summary {
        println!("{l}");
    }
    println!("dial_to_pixel_p99_ms={last_p99:.0}");
    Ok(())
}

// Many phones in the window: eight paired phones streaming at once into the real app, the
// Live dials view open and following, its frames measured (docs/faults.md, "Many phones";
// figures printed, the view's following checked, the goal not asserted).

/// A measurement (about a minute of streaming after eight pairings), run on its own, release
/// build, drawn as the app draws by default:
/// `WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --release -p switchboard-desktop --test e2e many_phones_window -- --ignored --nocapture`
/// (it needs `switchboard-phone` built next to the app). `MANY_PHONES_WINDOW_S` sets the
/// seconds streamed (default 60), `MANY_PHONES_WINDOW_N` the phones (default 8) and
/// `MANY_PHONES_WINDOW_RATE` each phone's dials a second (default 1 000).
#[test]
#[ignore = "measurement: WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --release -p switchboard-desktop --test e2e many_phones_window -- --ignored --nocapture"]
fn journey_10_many_phones_window() {
    run_journey("10-many-phones-window", |j| {
        Box::pin(many_phones_window_journey(j))
    });
}

/// `name` from the environment as a whole number in `range`, else `default`.
fn env_number(name: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(default)
        .clamp(*range.start(), *range.end())
}

/// The live log's counters as the app reports them (`dials_status`): `held`, `ingested`,
/// `duplicates`, `rows_written`, ...
async fn log_counters(ui: &Ui) -> R<Value> {
    let v = ui
        .js(
            "return window.__TAURI_INTERNALS__.invoke('dials_status').then((s) => s.live);",
            vec![],
        )
        .await?;
    ensure!(v.is_object(), "dials_status gave no counters: {v}");
    Ok(v)
}

async fn many_phones_window_journey(j: &mut Journey) -> R<()> {
    let secs = env_number("MANY_PHONES_WINDOW_S", 60, 5..=600);
    let phones = env_number("MANY_PHONES_WINDOW_N", 8, 1..=16) as usize;
    let rate = env_number("MANY_PHONES_WINDOW_RATE", 1000, 1..=5000);
    let graphics = match std::env::var("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref() {
        Ok("1") => "without accelerated compositing (the app's default)",
        _ => "with accelerated compositing (software GL under Xvfb; not the app's default)",
    };
    // Each phone is paired through the window with an identity of its own (it only pairs);
    // then Live dials is opened, empty and at the top, before any dial arrives.
    j.ui().view('1', "Phones").await?;
    let mut identities = Vec::new();
    for k in 1..=phones {
        let identity = j.env.root.path().join(format!("phone-{k}-identity.json"));
        let invite = open_pairing(j.ui(), false).await?;
        let p = j.env.phone_as(
            &format!("many-{k}-pair"),
            &identity,
            &[
                s("--link"),
                invite.link(),
                s("--label"),
                format!("Phone {k}"),
                s("--confirm-code"),
                s("--pair-only"),
            ],
        )?;
        j.phones.push(p);
        let pairing = j.phones.len() - 1;
        confirm_codes(j, pairing, false).await?;
        j.phones[pairing].finish(Duration::from_secs(30))?;
        identities.push(identity);
    }
    j.ui().view('4', "Live dials").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Every phone plays the same stamped stream (each dial's `start_ms` its send time).
    let (path, per_phone, last_at) = dial_to_pixel_scenario(j.env.root.path(), rate, secs)?;
    let ui = j.ui();
    ui.js(DIAL_TO_PIXEL_PROBE, vec![]).await?;
    ui.js(measure::RAF_START, vec![]).await?;
    let before = log_counters(ui).await?;
    let driver = j.env.driver_pid().ok_or("tauri-driver is not running")?;
    let app_pids = measure::descendants(driver);
    let cpu_before = measure::cpu_by_name(&app_pids);
    let machine_before = measure::machine_cpu_ms();
    let steal = measure::StealSampler::start();
    let t0 = wall_ms();
    let started = Instant::now();
    let mut streams = Vec::new();
    for (k, identity) in identities.iter().enumerate() {
        let p = j.env.phone_as(
            &format!("many-{}", k + 1),
            identity,
            &[
                s("--scenario"),
                path.display().to_string(),
                s("--rate"),
                s("recorded"),
            ],
        )?;
        j.phones.push(p);
        streams.push(j.phones.len() - 1);
    }
    let deadline = Instant::now() + Duration::from_secs(secs + 180);
    let mut got: Vec<[f64; 4]> = Vec::new();
    let mut batches: Vec<[f64; 5]> = Vec::new();
    let mut off_top = 0u32;
    let mut ended: Option<Instant> = None;
    let mut cpu_end = None;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (out, b, top) = dial_to_pixel_read(j.ui()).await?;
        got.extend(out);
        batches.extend(b);
        off_top += u32::from(!top);
        let at = started.elapsed().as_secs();
        if at % 10 == 0 {
            let n = header_count(j.ui()).await?.unwrap_or(0);
            eprintln!("many phones in the window: {at} s in, the header says {n}");
        }
        if ended.is_none() && streams.iter().all(|&p| !j.phones[p].running()) {
            ended = Some(Instant::now());
            cpu_end = Some((
                measure::cpu_by_name(&app_pids),
                measure::machine_cpu_ms(),
                started.elapsed().as_secs_f64(),
            ));
        }
        // Two reads after the last phone ended: the last batch is painted by then.
        if ended.is_some_and(|e| e.elapsed() >= Duration::from_secs(2)) {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the phones did not end within {} s",
            secs + 180
        );
    }
    let gaps = measure::FrameGaps::from_value(&j.ui().js(measure::RAF_STOP, vec![]).await?)?;
    let steal = steal.stop();
    let host = measure::gaps_beside_steal(&j.ui().js(measure::RAF_TIMES, vec![]).await?, &steal)?;
    let (stolen_ms, sampled_s) = steal.total();
    let mut sent = Vec::new();
    for &p in &streams {
        let out = j.phones[p].finish(Duration::from_secs(30))?;
        sent.push(
            out.lines()
                .find(|l| l.starts_with("sent "))
                .unwrap_or("no summary")
                .to_string(),
        );
    }
    let after = log_counters(j.ui()).await?;
    let header = header_count(j.ui()).await?.unwrap_or(0);
    ensure!(
        off_top == 0,
        "the table left the top {off_top} times: the view did not follow the newest row"
    );
    got.retain(|r| r[0] >= t0.floor());
    batches.retain(|b| b[4] >= t0.floor());
    let newest = got.iter().map(|r| r[0]).fold(f64::NAN, f64::max);
    let due = (t0 + last_at as f64).floor();
    ensure!(
        newest.partial_cmp(&due).is_some_and(|o| o.is_ge()),
        "the streams' last dials were never painted (newest painted stamp {newest}, due at or \
         after {due}): the view did not follow to the end"
    );
    let counter = |k: &str| after[k].as_u64().unwrap_or(0) - before[k].as_u64().unwrap_or(0);
    let (cpu_after, machine_after, span_s) = cpu_end.ok_or("the phones never ended")?;
    let cpu: Vec<String> = cpu_after
        .iter()
        .map(|(name, ms)| {
            let was = cpu_before.get(name).copied().unwrap_or(0.0);
            format!("{name} {:.0} %", (ms - was) / span_s / 10.0)
        })
        .collect();
    let machine =
        (machine_after.0 - machine_before.0) / (machine_after.1 - machine_before.1).max(1.0);
    let report = format!(
        "many phones in the window (journey 10, Xvfb 1280x800, drawn {graphics}):\n\
         stream: {phones} phones x {rate} dials/s x {secs} s ({} dials each) in {span_s:.1} s; \
         the log ingested {} dials ({} duplicates dropped), wrote {} rows; the header says {header}\n\
         phones: {}\n\
         frames: {} in {:.1} s; p50 {:.1} ms, p99 {:.1} ms (target <= 50), longest {:.1} ms, {} gaps over 50 ms ({} while the harness ran a script in the page); the gaps no harness script fell in: {}; the page's callbacks by kind (ms): {}; the gaps over 50 ms [began, ms]: {}\n\
         the host: {host}; steal {stolen_ms} ms in {sampled_s:.0} s\n\
         CPU over the stream (of one core): {}; the machine {:.0} % busy (both cores)\n\
         {}\n\
         dial to pixel: {} ({} dials painted as the newest rows; phone to the page {}, the page's wait {}, DOM to painted {})\n",
        per_phone,
        counter("ingested"),
        counter("duplicates"),
        counter("rows_written"),
        sent.join("; "),
        gaps.frames,
        gaps.span_ms / 1000.0,
        gaps.p50_ms,
        gaps.p99_ms,
        gaps.max_ms,
        gaps.over50,
        gaps.over50_at_mark,
        gaps.unmarked,
        gaps.by_kind,
        gaps.long_gaps,
        cpu.join(", "),
        machine * 100.0,
        batch_figures(&batches),
        spread(got.iter().map(|r| r[2] - r[0]).collect()),
        got.len(),
        spread(got.iter().map(|r| r[3] - r[0]).collect()),
        spread(got.iter().map(|r| r[1] - r[3]).collect()),
        spread(got.iter().map(|r| r[2] - r[1]).collect()),
    );
    eprintln!("{report}");
    save_shot_file("many-phones-window.txt", &report)?;
    save_shot_file(
        "many-phones-window.json",
        &serde_json::json!({ "t0": t0, "records": got, "batches": batches }).to_string(),
    )?;
    println!("many_phones_window_frames_p99_ms={:.1}", gaps.p99_ms);
    Ok(())
}
