//! Pairing on the networks people have, in real Linux network namespaces.
//!
//! Each test makes its own namespaces (`sbt<pid><n>d` for the desktop, `...p` for the phone)
//! joined by a veth pair, with addresses from the documentation ranges only (192.0.2.0/24,
//! 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32). The desktop is this test binary run again
//! inside its namespace (`ip netns exec ... <this binary> --exact desktop_in_namespace`, with
//! [`ROLE_DIR`] set): the `switchboard` library's link on a dual-stack listener, offering
//! [`Link::offered_addresses`] as a person's "Pair a phone" does, clicking "Codes match" when a
//! pairing waits. The phone is the reference phone (`switchboard-phone --link ...
//! --confirm-code --pair-only`) inside the phone's namespace, given the pairing link alone.
//! Every namespace is removed by a [`Namespaces`] guard, also when a test fails. Where
//! namespaces cannot be made (not root, no `ip`), the tests fail and say so.
// Linux only: the tests make Linux network namespaces and veth pairs with iproute2 and run
// their peers inside them with `ip netns exec`; Windows and macOS have nothing like them, and
// the link code they drive is the same on every system (its loopback tests run everywhere).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::link::{
    bind_dual_stack, DesktopIdentity, Link, LinkConfig, LinkEvent, MemoryStore,
};

/// Set (to an output folder) when this binary runs as the desktop inside a namespace.
const ROLE_DIR: &str = "SWITCHBOARD_NETNS_DESKTOP_DIR";

/// Set (to anything) for the desktop roles to advertise over mDNS.
const MDNS_ON: &str = "SWITCHBOARD_NETNS_MDNS";

/// Set (to `<port>,<folder>`) when this binary runs as "another program" holding a port in the
/// desktop's namespace ([`port_holder_in_namespace`]).
const HOLD_ROLE: &str = "SWITCHBOARD_NETNS_HOLD";

/// Set (to an output folder) when this binary runs as a phone browsing mDNS in its namespace
/// ([`browser_in_namespace`]).
const BROWSE_ROLE_DIR: &str = "SWITCHBOARD_NETNS_BROWSE_DIR";

/// Whether this run of the binary plays one of the roles (then the ordinary tests do nothing).
fn in_role() -> bool {
    [ROLE_DIR, APP_ROLE_DIR, HOLD_ROLE, BROWSE_ROLE_DIR]
        .iter()
        .any(|r| std::env::var_os(r).is_some())
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The namespaces one test made; dropping it deletes them all (also on a failed assertion).
struct Namespaces {
    names: Vec<String>,
}

impl Namespaces {
    fn new() -> Self {
        Self { names: Vec::new() }
    }

    /// Makes a namespace with a unique name ending in `role`, loopback up.
    fn add(&mut self, role: &str) -> String {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let name = format!("sbt{}{n}{role}", std::process::id());
        ip(&["netns", "add", &name]);
        self.names.push(name.clone());
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        name
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// Runs `ip args`; a failure panics with the command and its words (namespaces cannot be made:
/// the test fails, it never skips).
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap_or_else(|e| {
        panic!(
            "cannot run `ip {}`: {e} (install iproute2: scripts/install-deps.sh)",
            args.join(" ")
        )
    });
    assert!(
        out.status.success(),
        "`ip {}` failed ({}): {} — these tests need root and network namespaces",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// A veth pair `dev_a` in `ns_a`, `dev_b` in `ns_b`, both up.
fn veth(ns_a: &str, dev_a: &str, ns_b: &str, dev_b: &str) {
    ip(&[
        "-n", ns_a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b,
    ]);
    ip(&["-n", ns_a, "link", "set", dev_a, "up"]);
    ip(&["-n", ns_b, "link", "set", dev_b, "up"]);
}

/// A virtual bridge `dev` in `ns` with `addr`, up (as `docker0` is).
fn bridge(ns: &str, dev: &str, addr: &str) {
    ip(&["-n", ns, "link", "add", dev, "type", "bridge"]);
    ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
    ip(&["-n", ns, "link", "set", dev, "up"]);
}

/// An interface `dev` in `ns` with `addr`, up with carrier, whose other end stays in `ns`: a
/// network the phone is not on (a veth pair, since `dummy` interfaces need a kernel module
/// containers often lack).
fn elsewhere(ns: &str, dev: &str, addr: &str) {
    let peer = format!("{dev}x");
    ip(&[
        "-n", ns, "link", "add", dev, "type", "veth", "peer", "name", &peer,
    ]);
    ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
    ip(&["-n", ns, "link", "set", &peer, "up"]);
    ip(&["-n", ns, "link", "set", dev, "up"]);
}

/// The desktop running in `ns`: the invite it offered and, once the phone said hello, its
/// diagnostics.
struct Desktop {
    child: std::process::Child,
    dir: PathBuf,
}

impl Desktop {
    fn start(ns: &str) -> Self {
        Self::start_role(ns, "desktop_in_namespace", ROLE_DIR, false, &[])
    }

    /// Runs this binary's test `role` in `ns` with `env` set to a fresh output folder (and
    /// [`MDNS_ON`] when `mdns`).
    fn start_role(ns: &str, role: &str, env: &str, mdns: bool, extra: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "sb-netns-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", role, "--nocapture", "--test-threads=1"])
            .env(env, &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if mdns {
            cmd.env(MDNS_ON, "1");
        }
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("run the role in its namespace");
        Self { child, dir }
    }

    /// Waits (at most `within`) until `name` in the output folder satisfies `ok`; returns it.
    fn read_until(&mut self, name: &str, within: Duration, ok: impl Fn(&Value) -> bool) -> Value {
        let path = self.dir.join(name);
        let end = Instant::now() + within;
        let mut last = Value::Null;
        while Instant::now() < end {
            if let Ok(v) = std::fs::read_to_string(&path)
                .map_err(|_| ())
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|_| ()))
            {
                if ok(&v) {
                    return v;
                }
                last = v;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the role in its namespace stopped ({status}); {name} was {last}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{name} did not become what was awaited within {within:?}; last {last}");
    }

    /// Waits (at most 60 s) for `name` in the output folder.
    fn read(&mut self, name: &str) -> Value {
        let path = self.dir.join(name);
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Ok(v) = serde_json::from_str(&text) {
                    return v;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the desktop in its namespace stopped ({status}) before writing {name}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the desktop did not write {name} within 60 s");
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the reference phone in `ns` with the pairing `link` alone (at most 60 s).
fn phone(ns: &str, link: &str, home: &Path) -> Output {
    phone_with(ns, &["--link", link, "--confirm-code", "--pair-only"], home)
}

/// Runs the reference phone in `ns` with `args` and the identity file in `home` (at most 60 s).
fn phone_with(ns: &str, args: &[&str], home: &Path) -> Output {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_switchboard-phone")])
        .arg("--identity")
        .arg(home.join("phone.json"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run switchboard-phone");
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "switchboard-phone did not finish within 60 s: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn phone_home() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "sb-netns-phone-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn check_paired(o: &Output) {
    assert!(
        o.status.success(),
        "the phone did not pair: {}\n{}",
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout(o).contains("paired: verification code"),
        "{}",
        stdout(o)
    );
}

/// The desktop's side, run by [`Desktop::start`] inside its namespace; does nothing in a normal
/// test run (without [`ROLE_DIR`]).
#[test]
fn desktop_in_namespace() {
    let Some(dir) = std::env::var_os(ROLE_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let identity = DesktopIdentity::load_or_create(&MemoryStore::new()).unwrap();
        let mut cfg = LinkConfig::new(dir.join("data"));
        // mDNS only where the test asks for it (it browses from the phone's namespace).
        cfg.mdns = std::env::var_os(MDNS_ON).is_some();
        // An hour: on Linux the kernel's route socket tells the link of the namespace's changes
        // (the test reads them within seconds), no timer does.
        cfg.address_check = Duration::from_secs(3600);
        let (link, mut events) = Link::new(identity, cfg).unwrap();
        let listener = bind_dual_stack(0).await.unwrap();
        let (_stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let run = link.run(listener, async move {
            let _ = stop_rx.await;
        });
        tokio::spawn(run);
        // As the person's "Pair a phone": every network of this machine, most likely first,
        // followed while the window is open.
        let invite = link.open_pairing_on(None);
        write(&dir, "invite.json", &serde_json::to_value(&invite).unwrap());
        let mut connections = 0u32;
        let end = tokio::time::Instant::now() + Duration::from_secs(120);
        while tokio::time::Instant::now() < end && !dir.join("stop").exists() {
            if let Some(p) = link.pending_pairing() {
                // The person compares the codes and clicks "Codes match".
                let _ = link.confirm_pairing(&p.id, true);
            }
            match tokio::time::timeout(Duration::from_millis(20), events.recv()).await {
                Ok(Some(LinkEvent::PhoneConnected { .. })) => {
                    connections += 1;
                    let diag = link.diagnostics();
                    let mut d = serde_json::to_value(&diag).unwrap();
                    d["connections"] = connections.into();
                    // What Troubleshoot makes of it (the Phones view shows the same).
                    d["troubleshoot"] =
                        serde_json::to_value(switchboard::link::troubleshoot::troubleshoot(
                            &diag,
                            &link.offered_addresses(),
                            &switchboard::link::addresses::default_route_interfaces(),
                        ))
                        .unwrap();
                    write(&dir, "diagnostics.json", &d);
                }
                Ok(Some(LinkEvent::AddressesChanged { addresses })) => {
                    // What the pairing card shows now (it reloads on this event).
                    write(
                        &dir,
                        "addresses-changed.json",
                        &serde_json::json!({
                            "addresses": addresses,
                            "invite": link.pairing_invite(),
                        }),
                    );
                }
                Ok(None) => return,
                _ => {}
            }
        }
    });
}

fn write(dir: &Path, name: &str, v: &Value) {
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, v.to_string()).unwrap();
    std::fs::rename(tmp, dir.join(name)).unwrap();
}

fn addresses(invite: &Value) -> Vec<(String, String, String)> {
    invite["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["interface"].as_str().unwrap().to_string(),
                a["kind"].as_str().unwrap().to_string(),
                a["address"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A desktop whose container bridge is listed before the LAN. The link offers the LAN
/// first (it holds the default route) and the bridge last, named as a container network; a
/// phone on the LAN pairs through the link alone, over the LAN address.
#[test]
fn bridge_listed_before_the_lan_pairs_over_the_lan() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    // The bridge first, so the OS lists it before the LAN.
    bridge(&d, "docker0", "203.0.113.1/24");
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&[
        "-n",
        &d,
        "route",
        "add",
        "default",
        "via",
        "192.0.2.254",
        "dev",
        "eth0",
    ]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    let mut desk = Desktop::start(&d);
    let invite = desk.read("invite.json");
    let offered = addresses(&invite);
    assert_eq!(
        offered
            .first()
            .map(|a| (a.0.as_str(), a.1.as_str(), a.2.as_str())),
        Some(("eth0", "default_route", "192.0.2.1")),
        "the LAN first: {offered:?}"
    );
    assert_eq!(
        offered
            .last()
            .map(|a| (a.0.as_str(), a.1.as_str(), a.2.as_str())),
        Some(("docker0", "container", "203.0.113.1")),
        "the bridge last: {offered:?}"
    );
    let link = invite["link"].as_str().unwrap();
    assert!(
        link.contains("addr=192.0.2.1&") && link.contains("alt="),
        "{link}"
    );
    assert!(link.contains("203.0.113.1"), "{link}");
    // One typed line per offered address, the LAN's first.
    let (port, code) = (
        invite["port"].as_u64().unwrap(),
        invite["code"].as_str().unwrap(),
    );
    assert_eq!(
        invite["typed_lines"],
        serde_json::json!([
            format!("192.0.2.1:{port} {code}"),
            format!("203.0.113.1:{port} {code}")
        ]),
        "{invite}"
    );

    let home = phone_home();
    let out = phone(&p, link, &home);
    check_paired(&out);
    let port = invite["port"].as_u64().unwrap();
    assert!(
        stdout(&out).contains(&format!("connected to 192.0.2.1:{port}")),
        "{}",
        stdout(&out)
    );
    let diag = desk.read("diagnostics.json");
    assert_eq!(diag["paired"], 1);
    let _ = std::fs::remove_dir_all(home);
}

/// An IPv6-only network: the dual-stack listener serves it, the link carries the global IPv6
/// address (not the link-local one), and the phone pairs over IPv6.
#[test]
fn ipv6_only_link_pairs() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    veth(&d, "eth0", &p, "wlan0");
    ip(&[
        "-n",
        &d,
        "addr",
        "add",
        "2001:db8:15::1/64",
        "dev",
        "eth0",
        "nodad",
    ]);
    ip(&[
        "-n",
        &p,
        "addr",
        "add",
        "2001:db8:15::2/64",
        "dev",
        "wlan0",
        "nodad",
    ]);

    let mut desk = Desktop::start(&d);
    let invite = desk.read("invite.json");
    let offered = addresses(&invite);
    assert_eq!(
        offered.iter().map(|a| a.2.as_str()).collect::<Vec<_>>(),
        ["2001:db8:15::1"],
        "only the global IPv6 address (no link-local, no IPv4): {offered:?}"
    );
    let link = invite["link"].as_str().unwrap();
    assert!(link.contains("addr=2001:db8:15::1&"), "{link}");

    let home = phone_home();
    let out = phone(&p, link, &home);
    check_paired(&out);
    let port = invite["port"].as_u64().unwrap();
    assert!(
        stdout(&out).contains(&format!("connected to [2001:db8:15::1]:{port}")),
        "{}",
        stdout(&out)
    );
    let diag = desk.read("diagnostics.json");
    assert_eq!(diag["paired"], 1);
    let _ = std::fs::remove_dir_all(home);
}

/// The default route is on a network the phone is not on (a VPN-like uplink named as a plain
/// interface, so it is offered first): the phone's first try fails, the second address answers,
/// and the phone's report of the failed try (address, error, time) reaches the desktop's
/// diagnostics.
#[test]
fn failed_attempts_reach_the_desktop() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    elsewhere(&d, "uplink0", "198.51.100.1/24");
    ip(&["-n", &d, "route", "add", "default", "dev", "uplink0"]);
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    let mut desk = Desktop::start(&d);
    let invite = desk.read("invite.json");
    let offered = addresses(&invite);
    assert_eq!(
        offered.iter().map(|a| a.2.as_str()).collect::<Vec<_>>(),
        ["198.51.100.1", "192.0.2.1"],
        "{offered:?}"
    );
    let port = invite["port"].as_u64().unwrap();
    let home = phone_home();
    let out = phone(&p, invite["link"].as_str().unwrap(), &home);
    check_paired(&out);
    assert!(
        stdout(&out).contains(&format!("connected to 192.0.2.1:{port}")),
        "{}",
        stdout(&out)
    );
    let diag = desk.read("diagnostics.json");
    let reports = diag["phone_attempts"].as_array().unwrap();
    assert_eq!(reports.len(), 1, "{diag}");
    let r = &reports[0];
    assert_eq!(r["connected_to"], format!("192.0.2.1:{port}"));
    assert!(
        r["connected_from"]
            .as_str()
            .unwrap()
            .starts_with("192.0.2.2:"),
        "{r}"
    );
    let attempts = r["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{r}");
    assert_eq!(attempts[0]["addr"], format!("198.51.100.1:{port}"));
    assert_eq!(attempts[0]["outcome"], "failed");
    let err = attempts[0]["error"].as_str().unwrap();
    assert!(err.to_lowercase().contains("unreachable"), "{err}");
    assert!(attempts[0]["at_ms"].as_u64().unwrap() > 1_600_000_000_000);
    // Troubleshoot reads the report: the address offered first is on another network, and the
    // phone had no route to it; each names the address.
    let seen = diag["troubleshoot"]["seen"].as_array().unwrap();
    for class in ["wrong_interface", "other_subnet"] {
        let t = seen
            .iter()
            .find(|t| t["class"] == class)
            .unwrap_or_else(|| panic!("Troubleshoot shows no {class}: {seen:?}"));
        assert!(
            t["seen"]
                .as_str()
                .unwrap()
                .contains(&format!("198.51.100.1:{port}")),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(home);
}

/// The first address hangs (the phone's route to it goes through a neighbour that never
/// answers): the phone does not wait for it to fail, it starts the LAN address 250 ms later,
/// connects there, and reports the first try as abandoned while still connecting.
#[test]
fn a_hanging_address_does_not_hold_up_the_next() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    elsewhere(&d, "uplink0", "203.0.113.1/24");
    ip(&["-n", &d, "route", "add", "default", "dev", "uplink0"]);
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);
    // 192.0.2.99 does not exist: SYNs to 203.0.113.1 wait on ARP that never answers.
    ip(&[
        "-n",
        &p,
        "route",
        "add",
        "203.0.113.0/24",
        "via",
        "192.0.2.99",
        "dev",
        "wlan0",
    ]);

    let mut desk = Desktop::start(&d);
    let invite = desk.read("invite.json");
    let offered = addresses(&invite);
    assert_eq!(
        offered.iter().map(|a| a.2.as_str()).collect::<Vec<_>>(),
        ["203.0.113.1", "192.0.2.1"],
        "{offered:?}"
    );
    let port = invite["port"].as_u64().unwrap();
    let home = phone_home();
    let out = phone(&p, invite["link"].as_str().unwrap(), &home);
    check_paired(&out);
    assert!(
        stdout(&out).contains(&format!("connected to 192.0.2.1:{port}")),
        "{}",
        stdout(&out)
    );
    let diag = desk.read("diagnostics.json");
    let attempts = diag["phone_attempts"][0]["attempts"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(attempts.len(), 1, "{diag}");
    assert_eq!(attempts[0]["addr"], format!("203.0.113.1:{port}"));
    assert_eq!(attempts[0]["outcome"], "abandoned", "{diag}");
    let _ = std::fs::remove_dir_all(home);
}

/// Set (to an output folder) when this binary runs as the whole desktop app inside a namespace
/// ([`app_desktop_in_namespace`]).
const APP_ROLE_DIR: &str = "SWITCHBOARD_NETNS_APP_DIR";

/// The desktop app (the core's [`switchboard::app::App`]: link, hub, dial log) in its
/// namespace, for [`a_link_cut_without_a_close_is_seen_within_45_s_and_replayed_once`]: writes
/// `invite.json`, confirms pending pairings as the person would, and keeps `state.json` current
/// (every change of the phone's connection as the Phones view shows it, with the time, the
/// dial log's counters, the hub's connected and disconnected notices, and this process's open
/// file descriptors and threads from `/proc/self`) until `stop` appears in its folder (at most
/// `SWITCHBOARD_NETNS_APP_SECS`, default 300 s; `scripts/flap.sh` runs it longer).
#[test]
fn app_desktop_in_namespace() {
    let Some(dir) = std::env::var_os(APP_ROLE_DIR) else {
        return;
    };
    use switchboard::app::{App, AppConfig, AppPaths, IdentityStore, RecordingHost};
    use switchboard::clock::Clock as _;
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut config = AppConfig::new(AppPaths::under(&dir.join("home")), false);
        config.identity = IdentityStore::Memory;
        // Port 0 (ephemeral) unless the test asks for the usual range (47470..=47479).
        let port = std::env::var("SWITCHBOARD_NETNS_PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        config.listen = (std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), port);
        config.mdns = std::env::var_os(MDNS_ON).is_some();
        let host = std::sync::Arc::new(RecordingHost::new());
        let app = App::new(
            config,
            host.clone(),
            tokio::runtime::Handle::current(),
            switchboard::confirmations::ConfirmationMirror::with_bundled_catalogue(),
        );
        app.start_link();
        let secs = std::env::var("SWITCHBOARD_NETNS_APP_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300)
            .min(7200);
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        let count = |dir: &str| std::fs::read_dir(dir).map_or(0, |d| d.count());
        let (mut connects, mut disconnects) = (0u64, 0u64);
        while app.phones.link().and_then(|l| l.local_addr()).is_none() {
            assert!(tokio::time::Instant::now() < end, "the link did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let invite = app.change().unwrap().open_pairing().unwrap();
        write(&dir, "invite.json", &serde_json::to_value(&invite).unwrap());
        let mut changes: Vec<Value> = Vec::new();
        let mut was: Option<bool> = None;
        while tokio::time::Instant::now() < end && !dir.join("stop").exists() {
            let snap = app.phones.snapshot();
            if let Some(p) = &snap.pending {
                let _ = app.change().unwrap().confirm_pairing(&p.id, true);
            }
            let now = snap.phones.first().map(|p| p.connected);
            if now.is_some() && now != was {
                changes.push(serde_json::json!({
                    "connected": now,
                    "at_ms": switchboard::clock::SystemClock.now_ms(),
                }));
                was = now;
            }
            for call in host.take_calls() {
                use switchboard::app::{AppEvent, HostCall};
                use switchboard::hub::HubNotice;
                match call {
                    HostCall::Emit(AppEvent::Notice(HubNotice::PhoneConnected { .. })) => {
                        connects += 1;
                    }
                    HostCall::Emit(AppEvent::Notice(HubNotice::PhoneDisconnected { .. })) => {
                        disconnects += 1;
                    }
                    _ => {}
                }
            }
            let status = app.dials().unwrap().dials_status().await.unwrap();
            write(
                &dir,
                "state.json",
                &serde_json::json!({
                    "changes": changes,
                    "ingested": status.live.ingested,
                    "held": status.live.held,
                    "duplicates": status.live.duplicates,
                    "diagnostics": snap.diagnostics,
                    "troubleshoot": snap.troubleshoot,
                    "connects": connects,
                    "disconnects": disconnects,
                    "connected_now": snap.phones.first().is_some_and(|p| p.connected),
                    "fds": count("/proc/self/fd"),
                    "threads": count("/proc/self/task"),
                }),
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        app.shutdown().await;
    });
}

/// Waits (bounded) until `state.json` in `dir` satisfies `ok`; returns it.
fn state_until(dir: &Path, within: Duration, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + within;
    let mut last = Value::Null;
    while Instant::now() < end {
        if let Ok(v) = std::fs::read_to_string(dir.join("state.json"))
            .map_err(|_| ())
            .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|_| ()))
        {
            if ok(&v) {
                return v;
            }
            last = v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not happen within {within:?}; last state {last}");
}

fn now_ms() -> u64 {
    use switchboard::clock::Clock as _;
    switchboard::clock::SystemClock.now_ms()
}

/// A phone whose link is cut without a close (its Wi-Fi interface goes down mid-scenario): the
/// desktop app shows it not connected within 45 s of the cut (pings every 15 s, gone after 45 s
/// of silence); the link comes back, the phone (which noticed the silence too) reconnects and
/// replays what was not acknowledged, and every dial is in the dial log exactly once.
#[test]
fn a_link_cut_without_a_close_is_seen_within_45_s_and_replayed_once() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    let dir = std::env::temp_dir().join(format!(
        "sb-netns-app-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &d])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "app_desktop_in_namespace",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(APP_ROLE_DIR, &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run the desktop app in its namespace");
    let mut desk = Desktop {
        child,
        dir: dir.clone(),
    };
    let invite = desk.read("invite.json");
    let home = phone_home();
    check_paired(&phone(&p, invite["link"].as_str().unwrap(), &home));

    // The demo scenario three times (13 dials each, fresh ids) at 2 messages a second: a
    // minute of traffic, the cut in the middle of it.
    const DIALS: u64 = 39;
    let mut play = Command::new("ip")
        .args(["netns", "exec", &p, env!("CARGO_BIN_EXE_switchboard-phone")])
        .arg("--identity")
        .arg(home.join("phone.json"))
        .args(["--rate", "2/s", "--count", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run switchboard-phone");
    state_until(
        &dir,
        Duration::from_secs(30),
        "the phone connecting and dialling",
        |s| {
            s["changes"]
                .as_array()
                .is_some_and(|c| c.last().is_some_and(|c| c["connected"] == true))
                && s["ingested"].as_u64().unwrap_or(0) >= 3
        },
    );
    // Wi-Fi lost: no close frame, no FIN, nothing reaches the desktop any more.
    ip(&["-n", &p, "link", "set", "wlan0", "down"]);
    let cut_at = now_ms();
    let before = state_until(&dir, Duration::from_secs(5), "a state", |_| true);
    let gone = state_until(
        &dir,
        Duration::from_secs(60),
        "the phone shown not connected",
        |s| {
            s["changes"]
                .as_array()
                .is_some_and(|c| c.last().is_some_and(|c| c["connected"] == false))
        },
    );
    let gone_at = gone["changes"].as_array().unwrap().last().unwrap()["at_ms"]
        .as_u64()
        .unwrap();
    let took = gone_at.saturating_sub(cut_at);
    // 45 s of silence at most, plus the state file's 100 ms polling.
    assert!(
        took <= 45_500,
        "shown not connected {took} ms after the cut (before: {before})"
    );
    assert!(
        gone["ingested"].as_u64().unwrap() < DIALS,
        "the cut came before the end of the traffic: {gone}"
    );
    // The link comes back; the phone reconnects and replays.
    ip(&["-n", &p, "link", "set", "wlan0", "up"]);
    let end = Instant::now() + Duration::from_secs(150);
    let status = loop {
        if let Some(s) = play.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = play.kill();
            panic!("the phone did not finish within 150 s of the link's return");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = play.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(
        status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resent: u64 = regex::Regex::new(r"(\d+) resent after")
        .unwrap()
        .captures(&text)
        .and_then(|c| c[1].parse().ok())
        .unwrap_or_else(|| panic!("no resent count in {text}"));
    assert!(resent > 0, "something was replayed: {text}");
    assert!(text.contains(" 0 unacknowledged"), "{text}");
    let done = state_until(
        &dir,
        Duration::from_secs(20),
        "every dial in the log",
        |s| {
            s["ingested"].as_u64() == Some(DIALS)
                // The phone came back after it was shown gone (it may have left again since:
                // it closes when its scenario is done).
                && s["changes"].as_array().is_some_and(|c| {
                    c.iter().any(|c| {
                        c["connected"] == true && c["at_ms"].as_u64().unwrap_or(0) > gone_at
                    })
                })
        },
    );
    assert_eq!(done["held"], DIALS, "each dial once, none doubled: {done}");
    std::thread::sleep(Duration::from_millis(500));
    let settled = state_until(&dir, Duration::from_secs(5), "a state", |_| true);
    assert_eq!(
        settled["ingested"], DIALS,
        "nothing doubled later: {settled}"
    );
    std::fs::write(dir.join("stop"), b"").unwrap();
    let _ = std::fs::remove_dir_all(home);
}

/// "Another program" holding a TCP port in the desktop's namespace: binds `0.0.0.0:<port>` (as
/// most servers do) from [`HOLD_ROLE`] = `<port>,<folder>`, writes `held` in the folder, and
/// keeps the port until `stop` appears there (at most 180 s).
#[test]
fn port_holder_in_namespace() {
    let Ok(spec) = std::env::var(HOLD_ROLE) else {
        return;
    };
    let (port, dir) = spec.split_once(',').expect("HOLD_ROLE is <port>,<folder>");
    let dir = PathBuf::from(dir);
    let _held = std::net::TcpListener::bind(("0.0.0.0", port.parse::<u16>().unwrap()))
        .expect("hold the port");
    std::fs::write(dir.join("held"), b"").unwrap();
    let end = Instant::now() + Duration::from_secs(180);
    while Instant::now() < end && !dir.join("stop").exists() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A phone browsing mDNS in its namespace, for as long as a test needs: rounds of 3 s, each
/// with a fresh mDNS daemon (nothing cached from an earlier round), writing `found.json` after
/// each (`round`, and every address and port the desktop's service resolved with in that
/// round, or `error`) until `stop` appears in its folder (at most 150 s).
#[test]
fn browser_in_namespace() {
    let Some(dir) = std::env::var_os(BROWSE_ROLE_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let end = Instant::now() + Duration::from_secs(150);
    let mut round = 0u32;
    while Instant::now() < end && !dir.join("stop").exists() {
        round += 1;
        let daemon = mdns_sd::ServiceDaemon::new().expect("mDNS daemon");
        let rx = daemon
            .browse(switchboard::link::SERVICE_TYPE)
            .expect("browse");
        let mut addrs: Vec<String> = Vec::new();
        let mut ports: Vec<u16> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let round_end = Instant::now() + Duration::from_secs(3);
        loop {
            let left = round_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(mdns_sd::ServiceEvent::ServiceResolved(info)) => {
                    for a in info.get_addresses() {
                        if !addrs.contains(&a.to_string()) {
                            addrs.push(a.to_string());
                        }
                    }
                    if !ports.contains(&info.get_port()) {
                        ports.push(info.get_port());
                    }
                    if let Some(id) = info.get_property_val_str("id") {
                        if !ids.iter().any(|i| i == id) {
                            ids.push(id.to_string());
                        }
                    }
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = daemon.shutdown();
        addrs.sort();
        write(
            &dir,
            "found.json",
            &serde_json::json!({"round": round, "addrs": addrs, "ports": ports, "ids": ids}),
        );
    }
}

/// The `found.json` addresses of a browser.
fn found_addrs(f: &Value) -> Vec<String> {
    f["addrs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Stops a role that watches for `stop` in its folder, then the guard kills what is left.
fn stop(role: &Desktop) {
    let _ = std::fs::write(role.dir.join("stop"), b"");
}

/// A desktop whose container bridge is listed before the LAN, paired through mDNS
/// alone: the person types only the code on the phone; the phone browses
/// `_switchboard._tcp.local.`, takes the address mDNS gave (the LAN's: the bridge's is not
/// advertised on the LAN), trusts the certificate on first use (never mDNS's `fp`), and pairs;
/// the verification code binds the certificate, so what it pinned is the desktop's. A later
/// run says hello with the pinned key and plays.
#[test]
fn bridge_listed_before_the_lan_pairs_through_mdns_alone() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    bridge(&d, "docker0", "203.0.113.1/24");
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&[
        "-n",
        &d,
        "route",
        "add",
        "default",
        "via",
        "192.0.2.254",
        "dev",
        "eth0",
    ]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    // The whole desktop app (link, hub, dial log), advertising over mDNS.
    let mut desk = Desktop::start_role(&d, "app_desktop_in_namespace", APP_ROLE_DIR, true, &[]);
    let invite = desk.read("invite.json");
    let code = invite["code"].as_str().unwrap().to_string();
    let port = invite["port"].as_u64().unwrap();
    let fp = invite["cert_fingerprint"].as_str().unwrap().to_string();
    let home = phone_home();
    // No link, no address, no fingerprint: only the code the person reads off the desktop.
    let out = phone_with(
        &p,
        &[
            "--find",
            "--code",
            &code,
            "--confirm-code",
            "--pair-only",
            "--mdns-wait",
            "20",
        ],
        &home,
    );
    check_paired(&out);
    let text = stdout(&out);
    assert!(
        text.contains(&format!("over mDNS at 192.0.2.1:{port}\n")),
        "mDNS gave the LAN address alone: {text}"
    );
    assert!(!text.contains("203.0.113.1"), "{text}");
    assert!(
        text.contains(&format!("connected to 192.0.2.1:{port}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("certificate {fp} trusted on first use")),
        "the certificate seen is the desktop's: {text}"
    );
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("phone.json")).unwrap()).unwrap();
    assert_eq!(kept["desktop"]["cert_fp"], fp.as_str(), "{kept}");
    assert_eq!(
        kept["desktop"]["address"],
        format!("192.0.2.1:{port}"),
        "{kept}"
    );
    let state = desk.read_until("state.json", Duration::from_secs(30), |s| {
        s["diagnostics"]["paired"] == 1
    });
    let diag = &state["diagnostics"];
    assert!(
        diag["mdns"]
            .to_string()
            .contains("_switchboard._tcp.local."),
        "advertised: {}",
        diag["mdns"]
    );

    // Paired: hello with the pinned key, and the demo scenario played to the end.
    let out = phone_with(&p, &["--rate", "max"], &home);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("connected to 192.0.2.1:{port}")),
        "{text}"
    );
    assert!(text.contains(" 0 unacknowledged"), "{text}");
    let state = desk.read_until("state.json", Duration::from_secs(30), |s| {
        s["ingested"].as_u64() > Some(0)
            && s["changes"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["connected"] == true))
    });
    assert_eq!(state["diagnostics"]["paired"], 1, "{state}");
    stop(&desk);
    let _ = std::fs::remove_dir_all(home);
}

/// Another program holds 47470 in the desktop's namespace: the desktop app binds 47471, its
/// pairing link carries 47471, mDNS (browsed from the phone's namespace) advertises 47471, a
/// phone pairs from the link over the LAN, and Troubleshoot names the conflict.
#[test]
fn a_port_taken_in_the_namespace_is_skipped_advertised_and_named() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    let holder_dir = std::env::temp_dir().join(format!(
        "sb-netns-hold-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&holder_dir).unwrap();
    let spec = format!("47470,{}", holder_dir.display());
    let holder = Command::new("ip")
        .args(["netns", "exec", &d])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "port_holder_in_namespace",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLD_ROLE, &spec)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run the port holder in its namespace");
    let mut holder = Desktop {
        child: holder,
        dir: holder_dir,
    };
    let end = Instant::now() + Duration::from_secs(30);
    while !holder.dir.join("held").exists() {
        assert!(Instant::now() < end, "the other program did not take 47470");
        if let Ok(Some(s)) = holder.child.try_wait() {
            panic!("the other program stopped ({s}) before taking 47470");
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut desk = Desktop::start_role(
        &d,
        "app_desktop_in_namespace",
        APP_ROLE_DIR,
        true,
        &[("SWITCHBOARD_NETNS_PORT", "47470")],
    );
    let invite = desk.read("invite.json");
    assert_eq!(invite["port"], 47471, "the next free port: {invite}");
    let link = invite["link"].as_str().unwrap();
    assert!(
        link.contains("addr=192.0.2.1&port=47471&"),
        "the link carries the port in use: {link}"
    );
    assert_eq!(
        invite["typed_line"],
        format!("192.0.2.1:47471 {}", invite["code"].as_str().unwrap())
    );

    let mut browser = Desktop::start_role(&p, "browser_in_namespace", BROWSE_ROLE_DIR, false, &[]);
    let found = browser.read_until("found.json", Duration::from_secs(30), |f| {
        found_addrs(f).iter().any(|a| a == "192.0.2.1")
    });
    assert_eq!(found["ports"], serde_json::json!([47471]), "{found}");
    stop(&browser);

    let home = phone_home();
    let out = phone(&p, link, &home);
    check_paired(&out);
    assert!(
        stdout(&out).contains("connected to 192.0.2.1:47471"),
        "{}",
        stdout(&out)
    );
    let state = desk.read_until("state.json", Duration::from_secs(30), |s| {
        s["diagnostics"]["paired"] == 1
    });
    assert_eq!(
        state["diagnostics"]["ports_taken"],
        serde_json::json!([47470]),
        "{state}"
    );
    let seen = state["troubleshoot"]["seen"].as_array().unwrap();
    let conflict = seen
        .iter()
        .find(|t| t["class"] == "port_conflict")
        .unwrap_or_else(|| panic!("Troubleshoot names the conflict: {state}"));
    let words = conflict["seen"].as_str().unwrap();
    assert!(
        words.contains("47470") && words.contains("47471"),
        "{words}"
    );
    stop(&desk);
    stop(&holder);
    let _ = std::fs::remove_dir_all(home);
}

/// The desktop gains addresses while it runs: a second subnet on its LAN interface
/// (198.51.100.5 beside 192.0.2.1 on `eth0`) and a second network the phone is on too
/// (203.0.113.5 on a new `eth1`). Within a bounded time mDNS, browsed from the phone's
/// namespace, carries both, the open pairing window offers them (same code; the link and a
/// typed line each name them), and a phone typing the new network's line pairs over it.
#[test]
fn an_address_added_while_running_is_advertised_and_offered() {
    if in_role() {
        return;
    }
    let mut ns = Namespaces::new();
    let d = ns.add("d");
    let p = ns.add("p");
    veth(&d, "eth0", &p, "wlan0");
    ip(&["-n", &d, "addr", "add", "192.0.2.1/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "192.0.2.2/24", "dev", "wlan0"]);

    let mut desk = Desktop::start_role(&d, "desktop_in_namespace", ROLE_DIR, true, &[]);
    let invite = desk.read("invite.json");
    let code = invite["code"].as_str().unwrap().to_string();
    let port = invite["port"].as_u64().unwrap();
    assert_eq!(
        addresses(&invite)
            .iter()
            .map(|a| a.2.as_str())
            .collect::<Vec<_>>(),
        ["192.0.2.1"]
    );
    let mut browser = Desktop::start_role(&p, "browser_in_namespace", BROWSE_ROLE_DIR, false, &[]);
    let before = browser.read_until("found.json", Duration::from_secs(30), |f| {
        found_addrs(f).iter().any(|a| a == "192.0.2.1")
    });
    assert_eq!(found_addrs(&before), ["192.0.2.1"], "{before}");

    ip(&["-n", &d, "addr", "add", "198.51.100.5/24", "dev", "eth0"]);
    ip(&["-n", &p, "addr", "add", "198.51.100.6/24", "dev", "wlan0"]);
    veth(&d, "eth1", &p, "wlan1");
    ip(&["-n", &d, "addr", "add", "203.0.113.5/24", "dev", "eth1"]);
    ip(&["-n", &p, "addr", "add", "203.0.113.6/24", "dev", "wlan1"]);
    let added = Instant::now();
    let changed = desk.read_until("addresses-changed.json", Duration::from_secs(10), |v| {
        let a = v["addresses"].to_string();
        a.contains("198.51.100.5") && a.contains("203.0.113.5")
    });
    let after_round = before["round"].as_u64().unwrap();
    let found = browser.read_until("found.json", Duration::from_secs(40), |f| {
        let got = found_addrs(f);
        f["round"].as_u64() > Some(after_round)
            && ["198.51.100.5", "203.0.113.5"]
                .iter()
                .all(|want| got.iter().any(|a| a == want))
    });
    println!(
        "mDNS carried the new addresses {} ms after they were added (round {}: {})",
        added.elapsed().as_millis(),
        found["round"],
        found["addrs"]
    );
    assert!(
        found_addrs(&found).iter().any(|a| a == "192.0.2.1"),
        "the old address stays: {found}"
    );

    let now = &changed["invite"];
    assert_eq!(now["code"], code.as_str(), "the same window: {changed}");
    let link = now["link"].as_str().unwrap();
    assert!(
        link.contains("addr=192.0.2.1&") && link.contains("&alt=198.51.100.5,203.0.113.5"),
        "{link}"
    );
    let new_line = format!("203.0.113.5:{port} {code}");
    assert_eq!(
        now["typed_lines"],
        serde_json::json!([
            format!("192.0.2.1:{port} {code}"),
            format!("198.51.100.5:{port} {code}"),
            new_line
        ]),
        "{changed}"
    );

    // A phone types the new address's line: it pairs there.
    let home = phone_home();
    let out = phone_with(
        &p,
        &["--typed", &new_line, "--confirm-code", "--pair-only"],
        &home,
    );
    check_paired(&out);
    assert!(
        stdout(&out).contains(&format!("connected to 203.0.113.5:{port}")),
        "{}",
        stdout(&out)
    );

    let diag = desk.read_until("diagnostics.json", Duration::from_secs(30), |d| {
        d["connections"].as_u64() >= Some(1)
    });
    assert!(
        diag["mdns"]
            .to_string()
            .contains("_switchboard._tcp.local."),
        "still advertising after the change: {}",
        diag["mdns"]
    );

    // The second network goes away: mDNS stops naming it.
    ip(&["-n", &d, "link", "del", "eth1"]);
    let gone_round = browser.read("found.json")["round"].as_u64().unwrap();
    let found = browser.read_until("found.json", Duration::from_secs(40), |f| {
        let got = found_addrs(f);
        f["round"].as_u64() > Some(gone_round + 1)
            && got.iter().any(|a| a == "192.0.2.1")
            && !got.iter().any(|a| a == "203.0.113.5")
    });
    assert!(
        found_addrs(&found).iter().any(|a| a == "198.51.100.5"),
        "{found}"
    );
    stop(&browser);
    // The link saw it go too (the pairing window closed when the phone paired).
    let changed = desk.read_until("addresses-changed.json", Duration::from_secs(10), |v| {
        !v["addresses"].to_string().contains("203.0.113.5")
    });
    assert_eq!(
        changed["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["address"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["192.0.2.1", "198.51.100.5"],
        "{changed}"
    );
    stop(&desk);
    let _ = std::fs::remove_dir_all(home);
}
