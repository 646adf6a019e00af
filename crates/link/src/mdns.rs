//! mDNS advertisement of the link (`_switchboard._tcp.local.`), via `mdns-sd`.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" ("Discovery"): TXT records `id` (the
//! desktop's device id), `proto` (`<min>-<max>` ifp versions) and `fp` (certificate
//! fingerprint), under the host name [`host_name`] (letters, digits and hyphens: RFC 952/1123),
//! with exactly the addresses the listener serves and the pairing link offers. When those
//! change while the link runs, [`Advertisement::readvertise`] announces the new ones
//! ("Discovery", "Addresses that change"). Advertising is best-effort: a failure is reported in
//! diagnostics and never stops the listener.

use std::net::IpAddr;

use mdns_sd::{ServiceDaemon, ServiceInfo};

/// The DNS-SD service type advertised.
pub const SERVICE_TYPE: &str = "_switchboard._tcp.local.";

/// The mDNS host name for a desktop device id: `switchboard-` and the id's letters and digits,
/// lowercase, at most 63 characters, then `.local.` (host names may hold letters, digits and
/// hyphens only, RFC 952 / RFC 1123 section 2.1: no underscore).
pub fn host_name(device_id: &str) -> String {
    let tail: String = device_id
        .strip_prefix("dev_")
        .unwrap_or(device_id)
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut label = format!("switchboard-{}", tail.trim_matches('-'));
    label.truncate(63);
    let label = label.trim_end_matches('-');
    format!("{label}.local.")
}

/// Why the link is not advertised over mDNS; its text goes to diagnostics
/// ([`crate::diagnostics::MdnsStatus::Unavailable`]) and never stops the listener.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum MdnsError {
    /// The mDNS daemon could not start (no multicast socket, ...).
    #[error("mDNS daemon: {0}")]
    Daemon(mdns_sd::Error),
    /// The service record could not be built from the name, addresses and TXT records.
    #[error("mDNS service record: {0}")]
    Record(mdns_sd::Error),
    /// The daemon refused to register the service.
    #[error("mDNS register: {0}")]
    Register(mdns_sd::Error),
}

/// A running advertisement; dropped or [`Advertisement::stop`]ped to withdraw it.
pub(crate) struct Advertisement {
    daemon: ServiceDaemon,
    fullname: String,
    device_id: String,
    port: u16,
    proto: String,
    fingerprint: String,
}

impl Advertisement {
    /// Starts advertising `port` with the addresses `addrs` (those the listener serves; every
    /// address of the machine when empty).
    ///
    /// Errors: [`MdnsError`], for diagnostics.
    pub(crate) fn start(
        device_id: &str,
        port: u16,
        protocol: (u32, u32),
        fingerprint: &str,
        addrs: &[IpAddr],
    ) -> Result<(Self, String), MdnsError> {
        let daemon = ServiceDaemon::new().map_err(MdnsError::Daemon)?;
        let mut ad = Self {
            daemon,
            fullname: String::new(),
            device_id: device_id.to_string(),
            port,
            proto: format!("{}-{}", protocol.0, protocol.1),
            fingerprint: fingerprint.to_string(),
        };
        ad.fullname = ad.register(addrs)?;
        let fullname = ad.fullname.clone();
        Ok((ad, fullname))
    }

    /// Registers (or registers again: mdns-sd then announces the new records) the service with
    /// `addrs`; returns its full name.
    fn register(&self, addrs: &[IpAddr]) -> Result<String, MdnsError> {
        let host = host_name(&self.device_id);
        let props = [
            ("id", self.device_id.as_str()),
            ("proto", self.proto.as_str()),
            ("fp", self.fingerprint.as_str()),
        ];
        let info = ServiceInfo::new(
            SERVICE_TYPE,
            &self.device_id,
            &host,
            addrs,
            self.port,
            &props[..],
        )
        .map_err(MdnsError::Record)?;
        let info = if addrs.is_empty() {
            info.enable_addr_auto()
        } else {
            info
        };
        let fullname = info.get_fullname().to_string();
        self.daemon.register(info).map_err(MdnsError::Register)?;
        Ok(fullname)
    }

    /// Advertises `addrs` instead of the addresses given before (the machine's addresses
    /// changed while the link runs); same name, port and TXT records. The old daemon withdraws
    /// the service and a new one, bound to the interfaces of now, announces it (mdns-sd only
    /// looks for new interfaces every few seconds, and answers on an interface only with the
    /// addresses of that interface's subnet). Returns the service's full name.
    ///
    /// Errors: [`MdnsError`], for diagnostics (when the new daemon could not start, the old one
    /// still advertises the old addresses; when registering failed, nothing is advertised).
    pub(crate) fn readvertise(&mut self, addrs: &[IpAddr]) -> Result<String, MdnsError> {
        let daemon = ServiceDaemon::new().map_err(MdnsError::Daemon)?;
        let old = std::mem::replace(&mut self.daemon, daemon);
        if let Ok(done) = old.unregister(&self.fullname) {
            // The goodbye goes out before the new announcement (bounded wait).
            let _ = done.recv_timeout(std::time::Duration::from_millis(500));
        }
        let _ = old.shutdown();
        self.fullname = self.register(addrs)?;
        Ok(self.fullname.clone())
    }

    /// Withdraws the advertisement and stops the daemon.
    pub(crate) fn stop(self) {
        let _ = self.daemon.unregister(&self.fullname);
        let _ = self.daemon.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_valid() {
        for id in [
            "dev_3f9a01c2b4d5e6f7",
            "dev_",
            "Weird_Name.with dots",
            &"x".repeat(90),
        ] {
            let h = host_name(id);
            let label = h.strip_suffix(".local.").unwrap_or("");
            assert!(!label.is_empty() && label.len() <= 63, "{h}");
            assert!(
                label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{h}"
            );
            assert!(!label.starts_with('-') && !label.ends_with('-'), "{h}");
        }
        assert_eq!(host_name("dev_3f9a01c2"), "switchboard-3f9a01c2.local.");
    }
}
