//! What the desktop shows so a phone can find it: the invitation link (`switchboard://pair?..`),
//! its QR code, the typed line, and which offered addresses fit in them.
//!
//! `docs/protocol.md`, "Pairing link". Only presentation of an open window: nothing here checks
//! a code or signs anything.

use std::net::IpAddr;

use serde::Serialize;
use ts_rs::TS;

use super::PairingWindow;
use crate::addresses::{OfferedAddress, MAX_LINK_ADDRESSES, MAX_QR_VERSION};

/// What the desktop shows while a pairing window is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct PairingInvite {
    /// The code, `123-456`.
    pub code: String,
    /// The pairing link (`docs/protocol.md`, "Pairing link"):
    /// `switchboard://pair?addr=<ip>&port=<port>&code=<6 digits>&fp=<cert fingerprint hex>`
    /// then `&alt=<ip>,<ip>,...` with the other addresses, most likely first.
    pub link: String,
    /// The link as a QR code, an SVG document.
    pub qr_svg: String,
    /// When the code stops working, milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub expires_at_ms: u64,
    /// The desktop certificate fingerprint the phone must pin (lowercase hex SHA-256).
    pub cert_fingerprint: String,
    /// The TCP port the link listens on (the one actually bound).
    pub port: u16,
    /// The one line a person types on a phone that cannot scan: `address:port code` for the
    /// first address (`192.0.2.1:47470 123-456`, IPv6 in brackets); no fingerprint, so the
    /// phone trusts the certificate on first use and the verification code checks it
    /// (`docs/protocol.md`, "Typed pairing line").
    pub typed_line: String,
    /// One typed line per offered address, in the order a phone tries them: the link's
    /// addresses, then the ones left out of it ([`PairingInvite::left_out`]: typing has no QR
    /// size to keep), each `address:port code`. The first is [`PairingInvite::typed_line`]; the
    /// card lists the others as alternatives for a phone on another of this computer's networks
    /// (`docs/protocol.md`, "Typed pairing line").
    pub typed_lines: Vec<String>,
    /// The addresses the link carries, in the order a phone tries them.
    pub addresses: Vec<OfferedAddress>,
    /// Addresses this machine has that the link leaves out to stay short enough for a QR code
    /// (the least likely ones: past [`MAX_LINK_ADDRESSES`], or when its QR code would need a
    /// version past [`MAX_QR_VERSION`]).
    pub left_out: Vec<OfferedAddress>,
}

/// Builds the invitation link for `window` offering `addrs` (the first as `addr`, the rest as
/// `alt`, comma-separated). Addresses need no brackets (they are query values); IPv6 colons are
/// written as they are (RFC 3986 allows `:` in a query; phones also accept `%3A`).
pub fn invite_link_multi(addrs: &[IpAddr], port: u16, window: &PairingWindow, fp: &str) -> String {
    let first = addrs
        .first()
        .map(ToString::to_string)
        .unwrap_or_else(|| "127.0.0.1".to_string());
    let mut link = format!(
        "switchboard://pair?addr={first}&port={port}&code={}&fp={fp}",
        window.digits
    );
    if addrs.len() > 1 {
        let alt: Vec<String> = addrs[1..].iter().map(ToString::to_string).collect();
        link.push_str("&alt=");
        link.push_str(&alt.join(","));
    }
    link
}

/// The typed pairing line for `addr` and the shown `code`: `192.0.2.1:47470 123-456`
/// (`[2001:db8::1]:47470 123-456`).
pub fn typed_line(addr: std::net::SocketAddr, code: &str) -> String {
    format!("{addr} {code}")
}

/// Most addresses read from one typed line (as many as a link's `addr` and `alt` together).
pub const MAX_TYPED_ADDRESSES: usize = 17;

/// Reads a typed pairing line: one or more `address:port` (the card's line names one; a line
/// may name several, each tried as "Trying the addresses" says), then the 6-digit code,
/// separated by spaces (the code with or without its dash or a space inside: `123-456`,
/// `123456`, `123 456`). Returns the addresses in the order typed and the code as `123-456`.
///
/// Errors: [`TypedLineError`], naming what is missing or wrong.
pub fn parse_typed_line(line: &str) -> Result<(Vec<std::net::SocketAddr>, String), TypedLineError> {
    let mut parts = line.split_whitespace().peekable();
    let first = parts.next().ok_or(TypedLineError::Empty)?;
    let addr: std::net::SocketAddr = first
        .parse()
        .map_err(|_| TypedLineError::Address(first.to_string()))?;
    let mut addrs = vec![addr];
    while let Some(next) = parts.peek() {
        let Ok(a) = next.parse::<std::net::SocketAddr>() else {
            break;
        };
        if addrs.len() >= MAX_TYPED_ADDRESSES {
            return Err(TypedLineError::TooManyAddresses);
        }
        if !addrs.contains(&a) {
            addrs.push(a);
        }
        parts.next();
    }
    let digits: String = parts.collect::<Vec<_>>().join("").replace('-', "");
    if digits.len() != 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TypedLineError::Code(digits));
    }
    Ok((addrs, format!("{}-{}", &digits[..3], &digits[3..])))
}

/// What is wrong with a typed pairing line ([`parse_typed_line`]), in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TypedLineError {
    /// Nothing was typed.
    #[error("empty line: type the address:port and the code the desktop shows")]
    Empty,
    /// The first word is not `address:port` (the word given).
    #[error("{0:?} is not address:port (like 192.0.2.1:47470, or [2001:db8::1]:47470 for IPv6)")]
    Address(String),
    /// More distinct addresses than [`MAX_TYPED_ADDRESSES`].
    #[error("more than {MAX_TYPED_ADDRESSES} addresses on one line")]
    TooManyAddresses,
    /// What follows the addresses is not a 6-digit code (what was there, dashes and spaces
    /// removed).
    #[error(
        "after the address, type the 6-digit code the desktop shows (like 123-456), not {0:?}"
    )]
    Code(String),
}

/// Builds the invitation link for `window` with the one address `addr` (a link of the first
/// format: no `alt`).
pub fn invite_link(addr: &std::net::IpAddr, port: u16, window: &PairingWindow, fp: &str) -> String {
    invite_link_multi(std::slice::from_ref(addr), port, window, fp)
}

/// The QR code version `text` needs at the error correction [`qr_svg`] uses (M), `None` when it
/// cannot be encoded at all.
pub fn qr_version(text: &str) -> Option<i16> {
    match qrcode::QrCode::new(text.as_bytes()).ok()?.version() {
        qrcode::Version::Normal(v) | qrcode::Version::Micro(v) => Some(v),
    }
}

/// Renders `text` as a QR code SVG document (empty string if it cannot be encoded).
pub fn qr_svg(text: &str) -> String {
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .build(),
        Err(_) => String::new(),
    }
}

/// Splits `offered` into what the link carries and what it leaves out: at most
/// [`MAX_LINK_ADDRESSES`], then the last ones dropped while the link's QR code needs a version
/// past [`MAX_QR_VERSION`] (at least one is always kept). `offered` is in the order of
/// [`crate::addresses::order_addresses`], so the least likely go first.
pub fn fit_addresses(
    offered: &[OfferedAddress],
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> (Vec<OfferedAddress>, Vec<OfferedAddress>) {
    let usable: Vec<&OfferedAddress> = offered.iter().filter(|a| a.ip().is_some()).collect();
    let mut keep = usable.len().clamp(1, MAX_LINK_ADDRESSES);
    while keep > 1 {
        let ips: Vec<IpAddr> = usable[..keep].iter().filter_map(|a| a.ip()).collect();
        if qr_version(&invite_link_multi(&ips, port, window, fp))
            .is_some_and(|v| v <= MAX_QR_VERSION)
        {
            break;
        }
        keep -= 1;
    }
    let kept = usable.iter().take(keep).map(|a| (*a).clone()).collect();
    let left = usable.iter().skip(keep).map(|a| (*a).clone()).collect();
    (kept, left)
}

/// Builds the [`PairingInvite`] for a window offering the one address `addr`.
pub fn invite(
    addr: &std::net::IpAddr,
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> PairingInvite {
    invite_offering(&[crate::addresses::describe(*addr)], port, window, fp)
}

/// Builds the [`PairingInvite`] for a window offering `offered` (most likely first; see
/// [`fit_addresses`] for what is left out). With nothing offered the link names loopback.
pub fn invite_offering(
    offered: &[OfferedAddress],
    port: u16,
    window: &PairingWindow,
    fp: &str,
) -> PairingInvite {
    let (addresses, left_out) = fit_addresses(offered, port, window, fp);
    let ips: Vec<IpAddr> = addresses.iter().filter_map(OfferedAddress::ip).collect();
    let link = invite_link_multi(&ips, port, window, fp);
    let first = ips
        .first()
        .copied()
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
    let typed_lines = addresses
        .iter()
        .chain(&left_out)
        .filter_map(OfferedAddress::ip)
        .map(|ip| typed_line(std::net::SocketAddr::new(ip, port), &window.code()))
        .collect();
    PairingInvite {
        typed_line: typed_line(std::net::SocketAddr::new(first, port), &window.code()),
        typed_lines,
        code: window.code(),
        qr_svg: qr_svg(&link),
        link,
        expires_at_ms: window.expires_at_ms(),
        cert_fingerprint: fp.to_string(),
        port,
        addresses,
        left_out,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::pairing::PAIRING_TTL_MS;

    #[test]
    fn a_typed_line_reads_back_and_bad_ones_are_named() {
        let v4: std::net::SocketAddr = "192.0.2.1:47470".parse().unwrap();
        let v6: std::net::SocketAddr = "[2001:db8::1]:47471".parse().unwrap();
        assert_eq!(typed_line(v4, "123-456"), "192.0.2.1:47470 123-456");
        assert_eq!(typed_line(v6, "012-345"), "[2001:db8::1]:47471 012-345");
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 123-456").unwrap(),
            (vec![v4], "123-456".into())
        );
        assert_eq!(
            parse_typed_line("  [2001:db8::1]:47471   012 345 ").unwrap(),
            (vec![v6], "012-345".into())
        );
        // Several addresses on one line, then the code: every one is tried, in that order.
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 [2001:db8::1]:47471 192.0.2.1:47470 012-345")
                .unwrap(),
            (vec![v4, v6], "012-345".into())
        );
        let many = vec!["192.0.2.1:1"; MAX_TYPED_ADDRESSES + 1].join(" ");
        assert!(
            parse_typed_line(&format!("{many} 123-456")).is_ok(),
            "duplicates count once"
        );
        let many: Vec<String> = (1..=MAX_TYPED_ADDRESSES + 1)
            .map(|p| format!("192.0.2.1:{p}"))
            .collect();
        assert!(parse_typed_line(&format!("{} 123-456", many.join(" ")))
            .unwrap_err()
            .to_string()
            .contains("more than"));
        assert_eq!(
            parse_typed_line("192.0.2.1:47470 123456").unwrap().1,
            "123-456"
        );
        assert_eq!(parse_typed_line("").unwrap_err(), TypedLineError::Empty);
        assert!(parse_typed_line("")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(parse_typed_line("192.0.2.1 123-456")
            .unwrap_err()
            .to_string()
            .contains("address:port"));
        assert!(parse_typed_line("192.0.2.1:47470 12-456")
            .unwrap_err()
            .to_string()
            .contains("6-digit"));
        assert!(parse_typed_line("192.0.2.1:47470")
            .unwrap_err()
            .to_string()
            .contains("6-digit"));
    }

    #[test]
    fn link_and_qr() {
        let w = PairingWindow::open(0, PAIRING_TTL_MS);
        let inv = invite(&"192.168.1.5".parse().unwrap(), 47470, &w, "ab12");
        assert_eq!(
            inv.link,
            format!(
                "switchboard://pair?addr=192.168.1.5&port=47470&code={}&fp=ab12",
                w.digits
            )
        );
        assert!(inv.qr_svg.starts_with("<?xml") && inv.qr_svg.contains("<svg"));
        assert_eq!(inv.port, 47470);
        assert_eq!(inv.addresses.len(), 1);
        assert!(inv.left_out.is_empty());
    }

    fn offered(n: usize) -> Vec<OfferedAddress> {
        use crate::addresses::InterfaceKind;
        (0..n)
            .map(|i| OfferedAddress {
                interface: format!("eth{i}"),
                kind: InterfaceKind::Local,
                // Every other one a long global IPv6 address (the worst case of a real LAN).
                address: if i % 2 == 0 {
                    format!("198.51.100.{}", 200 + i)
                } else {
                    format!("2001:db8:4a2f:91c0:7d3e:12ff:fe4b:{:x}", 0xa000 + i)
                },
            })
            .collect()
    }

    /// The QR code sizes of links with 1, 4 and 8 addresses (printed with `--nocapture`), and
    /// the rule that keeps a link within [`MAX_LINK_CHARS`] by leaving out the last ones.
    #[test]
    fn link_qr_sizes() {
        let w = PairingWindow::open(0, PAIRING_TTL_MS);
        let fp = "ab".repeat(32);
        for n in [1usize, 4, 8] {
            let inv = invite_offering(&offered(n), 47470, &w, &fp);
            let qr = qrcode::QrCode::new(inv.link.as_bytes()).unwrap();
            let qrcode::Version::Normal(v) = qr.version() else {
                panic!("micro QR for a link")
            };
            println!(
                "{n} address(es): link {} chars, QR version {v} ({} modules a side, EC {:?})",
                inv.link.len(),
                qr.width(),
                qr.error_correction_level()
            );
            assert_eq!(inv.addresses.len(), n, "{n} addresses fit");
            assert!(inv.left_out.is_empty());
            assert!(v <= MAX_QR_VERSION, "{n} addresses: QR version {v}");
            // The phone reads back the same addresses, in order.
            let back = crate::phone::discover::parse_pair_link(&inv.link).unwrap();
            let got: Vec<String> = back
                .candidates()
                .iter()
                .map(|a| a.ip().to_string())
                .collect();
            let want: Vec<String> = inv.addresses.iter().map(|a| a.address.clone()).collect();
            assert_eq!(got, want);
        }
        // Twelve addresses: the last four are left out, and said so.
        let inv = invite_offering(&offered(12), 47470, &w, &fp);
        assert_eq!(inv.addresses.len(), MAX_LINK_ADDRESSES);
        assert_eq!(inv.left_out.len(), 4);
        assert_eq!(inv.left_out[0].interface, "eth8");
        // The typed lines name every offered address, the left-out ones too, in order; each
        // reads back as the one address it names and the window's code.
        assert_eq!(inv.typed_lines.len(), 12);
        assert_eq!(inv.typed_lines[0], inv.typed_line);
        for (line, a) in inv
            .typed_lines
            .iter()
            .zip(inv.addresses.iter().chain(&inv.left_out))
        {
            let (addrs, code) = parse_typed_line(line).unwrap();
            assert_eq!(
                addrs,
                [std::net::SocketAddr::new(a.ip().unwrap(), 47470)],
                "{line}"
            );
            assert_eq!(code, w.code());
        }
        assert_eq!(
            inv.typed_lines[1],
            format!(
                "[2001:db8:4a2f:91c0:7d3e:12ff:fe4b:a001]:47470 {}",
                w.code()
            )
        );
        // Eight addresses all long IPv6 ones do not fit version 14: the last are left out.
        let long: Vec<OfferedAddress> = offered(16)
            .into_iter()
            .filter(|a| a.address.contains(':'))
            .collect();
        let inv = invite_offering(&long, 47470, &w, &fp);
        assert!(
            inv.addresses.len() < 8 && !inv.left_out.is_empty(),
            "{}",
            inv.addresses.len()
        );
        assert_eq!(inv.addresses.len() + inv.left_out.len(), 8);
        assert_eq!(
            inv.addresses[0].address, long[0].address,
            "the most likely stays"
        );
        assert!(qr_version(&inv.link).unwrap() <= MAX_QR_VERSION);
    }
}
