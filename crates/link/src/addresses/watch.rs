//! Knowing when this machine's addresses may have changed, so the link looks at them again
//! only then ([`AddressWatch`]).
//!
//! Why: an app left in the tray all day should not wake to read every interface every few
//! seconds. On Linux the kernel tells a route socket (`NETLINK_ROUTE`, `rtnetlink(7)`) of every
//! link, address and route change, and the watch sleeps until it does; elsewhere, or where that
//! socket cannot be opened, it looks on a timer as before.

use std::time::Duration;

use tokio::time::Instant;

/// How long after the first change the watch waits before it reports: bringing an interface
/// up sends the link, each address and each route as messages of their own, within a few
/// milliseconds; they are reported as one change.
pub const SETTLE: Duration = Duration::from_millis(100);

/// Tells when this machine's interfaces, addresses or routes may have changed: from the kernel
/// on Linux (no timer), else every `poll_every`. Made on a tokio runtime with I/O enabled.
#[derive(Debug)]
pub struct AddressWatch {
    how: How,
    /// The timer's period, kept for a route socket that fails (Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    poll_every: Duration,
    /// A change was seen; reported at this moment ([`SETTLE`] later).
    due: Option<Instant>,
}

#[derive(Debug)]
enum How {
    #[cfg(target_os = "linux")]
    Kernel(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>),
    Poll(tokio::time::Interval),
}

impl AddressWatch {
    /// Watches the kernel's route messages where the system has them (Linux), else looks every
    /// `poll_every` (at least 10 ms). A route socket that cannot be opened is logged and the
    /// watch looks on the timer instead.
    pub fn new(poll_every: Duration) -> Self {
        let poll_every = poll_every.max(Duration::from_millis(10));
        #[cfg(target_os = "linux")]
        match netlink::open() {
            Ok(fd) => {
                return Self {
                    how: How::Kernel(fd),
                    poll_every,
                    due: None,
                }
            }
            Err(e) => tracing::warn!(
                "the kernel's route socket could not be opened ({e}); looking at this computer's addresses every {poll_every:?} instead"
            ),
        }
        Self::polling(poll_every)
    }

    /// Looks every `poll_every` (at least 10 ms), whatever the system offers.
    pub fn polling(poll_every: Duration) -> Self {
        let poll_every = poll_every.max(Duration::from_millis(10));
        Self {
            how: How::Poll(Self::timer(poll_every)),
            poll_every,
            due: None,
        }
    }

    fn timer(every: Duration) -> tokio::time::Interval {
        let mut t = tokio::time::interval_at(Instant::now() + every, every);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    }

    /// Whether the kernel tells of changes (no timer runs).
    pub fn from_the_kernel(&self) -> bool {
        match self.how {
            #[cfg(target_os = "linux")]
            How::Kernel(_) => true,
            How::Poll(_) => false,
        }
    }

    /// Waits until the addresses may have changed: [`SETTLE`] after the kernel's first message
    /// of a change, or the timer's next tick. Cancel-safe: a change seen before the future is
    /// dropped is reported by the next call. A route socket that fails is logged and replaced by
    /// the timer (and reported as a change, since one may have been missed).
    pub async fn changed(&mut self) {
        loop {
            if let Some(at) = self.due {
                tokio::time::sleep_until(at).await;
                self.due = None;
                // What came while settling belongs to the change about to be reported.
                #[cfg(target_os = "linux")]
                if let How::Kernel(fd) = &self.how {
                    let _ = netlink::drain(fd.get_ref());
                }
                return;
            }
            match &mut self.how {
                How::Poll(t) => {
                    t.tick().await;
                    return;
                }
                #[cfg(target_os = "linux")]
                How::Kernel(fd) => match netlink::wait(fd).await {
                    Ok(()) => self.due = Some(Instant::now() + SETTLE),
                    Err(e) => {
                        tracing::warn!(
                            "the kernel's route socket failed ({e}); looking at this computer's addresses every {:?} instead",
                            self.poll_every
                        );
                        self.how = How::Poll(Self::timer(self.poll_every));
                        return;
                    }
                },
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod netlink {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// The route socket's groups: links, IPv4 and IPv6 addresses and routes (`rtnetlink(7)`).
    const GROUPS: u32 = (libc::RTMGRP_LINK
        | libc::RTMGRP_IPV4_IFADDR
        | libc::RTMGRP_IPV6_IFADDR
        | libc::RTMGRP_IPV4_ROUTE
        | libc::RTMGRP_IPV6_ROUTE) as u32;

    /// A non-blocking `NETLINK_ROUTE` socket bound to [`GROUPS`], registered with tokio.
    pub(super) fn open() -> io::Result<AsyncFd<OwnedFd>> {
        // SAFETY: plain socket(2); the result is checked before it is owned.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor no one else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_nl is plain data; all-zero is its empty value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = GROUPS;
        // SAFETY: `addr` is a valid sockaddr_nl for the length given, alive for the call.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor is owned by the AsyncFd from here on, so it stays open and the
        // same until the AsyncFd is dropped.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(io::Error::from)
    }

    /// Waits for the kernel's next messages and reads them all.
    pub(super) async fn wait(fd: &AsyncFd<OwnedFd>) -> io::Result<()> {
        loop {
            let mut ready = fd.readable().await?;
            let read = drain(fd.get_ref())?;
            // Read to `EAGAIN`: nothing is left until the kernel says so again.
            ready.clear_ready();
            if read > 0 {
                return Ok(());
            }
        }
    }

    /// Reads every waiting message (their content is not needed: any of them means "look
    /// again"); how many reads returned something. A full receive queue (`ENOBUFS`: messages
    /// were lost) counts as one.
    pub(super) fn drain(fd: &OwnedFd) -> io::Result<usize> {
        let mut buf = [0u8; 8192];
        let mut read = 0;
        // Bounded: the kernel's queue for one socket holds far fewer messages than this.
        for _ in 0..10_000 {
            // SAFETY: `buf` is writable for its whole length for the call.
            let n = unsafe {
                libc::recv(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n > 0 {
                read += 1;
                continue;
            }
            if n == 0 {
                return Ok(read);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(read),
                Some(libc::EINTR) => {}
                Some(libc::ENOBUFS) => read += 1,
                _ => return Err(e),
            }
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// On Linux the watch listens to the kernel (no timer runs in the tray); the timer ticks
    /// where it is asked for.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_kernel_tells_on_linux_and_the_timer_ticks_elsewhere() {
        let w = AddressWatch::new(Duration::from_secs(3));
        assert_eq!(w.from_the_kernel(), cfg!(target_os = "linux"));
        let mut p = AddressWatch::polling(Duration::from_secs(3));
        assert!(!p.from_the_kernel());
        let start = Instant::now();
        p.changed().await;
        assert_eq!(Instant::now() - start, Duration::from_secs(3));
        // A change seen and not yet reported survives a dropped wait.
        p.due = Some(Instant::now() + SETTLE);
        let _ = tokio::time::timeout(Duration::from_millis(10), p.changed()).await;
        assert!(p.due.is_some());
        let before = Instant::now();
        p.changed().await;
        assert!(Instant::now() - before <= SETTLE);
        assert!(p.due.is_none());
    }
}
