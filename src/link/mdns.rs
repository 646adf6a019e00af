//! mDNS advertisement of the link (`_switchboard._tcp.local.`), via `mdns-sd`.
//!
//! `docs/protocol.md`, "Link: pairing and sessions" ("Discovery"): TXT records `id` (the
//! desktop's device id), `proto` (`<min>-<max>` ifp versions) and `fp` (certificate
//! fingerprint). Advertising is best-effort: a failure is reported in diagnostics and never
//! stops the listener.

use mdns_sd::{ServiceDaemon, ServiceInfo};

/// The DNS-SD service type advertised.
pub const SERVICE_TYPE: &str = "_switchboard._tcp.local.";

/// A running advertisement; dropped or [`Advertisement::stop`]ped to withdraw it.
pub(crate) struct Advertisement {
    daemon: ServiceDaemon,
    fullname: String,
}

impl Advertisement {
    /// Starts advertising `port` on every interface; `Err` holds words for diagnostics.
    pub(crate) fn start(
        device_id: &str,
        port: u16,
        protocol: (u32, u32),
        fingerprint: &str,
    ) -> Result<(Self, String), String> {
        let daemon = ServiceDaemon::new().map_err(|e| format!("mDNS daemon: {e}"))?;
        let host = format!("{device_id}.local.");
        let proto = format!("{}-{}", protocol.0, protocol.1);
        let props = [
            ("id", device_id),
            ("proto", proto.as_str()),
            ("fp", fingerprint),
        ];
        let info = ServiceInfo::new(SERVICE_TYPE, device_id, &host, (), port, &props[..])
            .map_err(|e| format!("mDNS service record: {e}"))?
            .enable_addr_auto();
        let fullname = info.get_fullname().to_string();
        daemon
            .register(info)
            .map_err(|e| format!("mDNS register: {e}"))?;
        Ok((
            Self {
                daemon,
                fullname: fullname.clone(),
            },
            fullname,
        ))
    }

    /// Withdraws the advertisement and stops the daemon.
    pub(crate) fn stop(self) {
        let _ = self.daemon.unregister(&self.fullname);
        let _ = self.daemon.shutdown();
    }
}
