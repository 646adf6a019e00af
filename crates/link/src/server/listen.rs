//! Binding the listener: which port (the preferred one or the next free of [`PORT_TRIES`]),
//! which families (dual stack when the system has IPv6), and the socket options that keep a
//! second program off the port.
//!
//! Apart from the [`super::Link`] handle because binding happens before a link exists (the caller
//! binds, then hands the listener to [`super::Link::run`]) and is tested on its own.

use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpListener;

use super::LinkError;

/// How many ports [`bind`] tries, starting at the preferred one.
pub const PORT_TRIES: u16 = 10;

/// How the listener's port is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortChoice {
    /// This port, or the next free one up to [`PORT_TRIES`] ports on (0: an ephemeral port).
    Range(u16),
    /// Exactly this port (the Settings' fixed port, for firewall rules): taken is an error.
    Fixed(u16),
}

/// A bound listener and the ports of its range found taken by another program on the way.
#[derive(Debug)]
pub struct Bound {
    /// The listener.
    pub listener: TcpListener,
    /// Ports tried before the bound one and found in use, in order (empty when the first was
    /// free).
    pub taken: Vec<u16>,
}

/// Binds `ip:port`, or the next free port up to [`PORT_TRIES`] ports on; port 0 binds an
/// ephemeral port.
pub async fn bind(ip: IpAddr, port: u16) -> Result<TcpListener, LinkError> {
    Ok(bind_port(ip, false, PortChoice::Range(port))?.listener)
}

/// Binds a dual-stack listener on `[::]:port` (IPv6 with `IPV6_V6ONLY` off, so IPv4 phones
/// reach it too as `::ffff:a.b.c.d`), or the next free port up to [`PORT_TRIES`] ports on
/// (port 0: an ephemeral port). Where IPv6 is unavailable (disabled in the kernel), binds
/// `0.0.0.0` instead, as [`bind`] does.
///
/// Errors: [`LinkError::NoFreePort`] when every port in the range is taken; the socket's error
/// otherwise.
pub async fn bind_dual_stack(port: u16) -> Result<TcpListener, LinkError> {
    Ok(bind_port(
        IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        true,
        PortChoice::Range(port),
    )?
    .listener)
}

/// Binds `ip` (with `dual_stack` and `ip` = `::`, IPv6 with `IPV6_V6ONLY` off, falling back to
/// `0.0.0.0` where IPv6 is unavailable) on the port `choice` says, and reports the ports found
/// taken on the way (Troubleshoot names them).
///
/// Errors: [`LinkError::PortTaken`] for a fixed port in use, [`LinkError::NoFreePort`] when the
/// whole range is; the socket's error otherwise.
pub fn bind_port(ip: IpAddr, dual_stack: bool, choice: PortChoice) -> Result<Bound, LinkError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let open = |ip: IpAddr, p: u16, v6only_off: bool| -> std::io::Result<TcpListener> {
        let domain = if ip.is_ipv6() {
            Domain::IPV6
        } else {
            Domain::IPV4
        };
        let s = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
        if v6only_off {
            s.set_only_v6(false)?;
        }
        reuse_options(&s);
        s.set_nonblocking(true)?;
        s.bind(&SocketAddr::new(ip, p).into())?;
        s.listen(1024)?;
        TcpListener::from_std(s.into())
    };
    let (first, last) = match choice {
        PortChoice::Range(0) | PortChoice::Fixed(0) => (0, 0),
        PortChoice::Range(p) => (p, p.saturating_add(PORT_TRIES - 1)),
        PortChoice::Fixed(p) => (p, p),
    };
    let mut ip = ip;
    let mut v6only_off = dual_stack && ip.is_ipv6() && ip.is_unspecified();
    let mut taken = Vec::new();
    let mut p = first;
    loop {
        match open(ip, p, v6only_off) {
            Ok(listener) => return Ok(Bound { listener, taken }),
            Err(e) if v6only_off && ipv6_unavailable(&e) => {
                ip = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
                v6only_off = false;
                continue;
            }
            Err(e) if port_taken(&e) && p != 0 => taken.push(p),
            Err(e) => return Err(e.into()),
        }
        if p >= last {
            break;
        }
        p += 1;
    }
    Err(match choice {
        PortChoice::Fixed(port) => LinkError::PortTaken { ip, port },
        PortChoice::Range(_) => LinkError::NoFreePort { ip, first, last },
    })
}

/// Unix: `SO_REUSEADDR`, so a restart binds the port while the last run's connections are in
/// `TIME_WAIT` (it never lets two listeners share a port there). Windows: never `SO_REUSEADDR`,
/// which there lets a second listener (a second Switchboard, or any program) bind the same port
/// and take connections; `SO_EXCLUSIVEADDRUSE` instead, so nobody can bind it over this one. A
/// system that refuses the option gets the default (Windows already lets a restart bind past
/// `TIME_WAIT`), logged.
fn reuse_options(s: &socket2::Socket) {
    #[cfg(not(windows))]
    if let Err(e) = s.set_reuse_address(true) {
        tracing::debug!("SO_REUSEADDR not set: {e}");
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawSocket as _;
        use windows_sys::Win32::Networking::WinSock::{
            setsockopt, SOCKET_ERROR, SOL_SOCKET, SO_EXCLUSIVEADDRUSE,
        };
        let on: i32 = 1;
        // SAFETY: an open socket, a 4-byte BOOL option value that outlives the call.
        let r = unsafe {
            setsockopt(
                s.as_raw_socket() as usize,
                SOL_SOCKET,
                SO_EXCLUSIVEADDRUSE,
                (&on as *const i32).cast::<u8>(),
                std::mem::size_of::<i32>() as i32,
            )
        };
        if r == SOCKET_ERROR {
            tracing::debug!(
                "SO_EXCLUSIVEADDRUSE not set: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Whether binding failed because another socket holds the port: `EADDRINUSE` everywhere, and
/// on Windows also `WSAEACCES` (10013), which a port held with `SO_EXCLUSIVEADDRUSE` (or
/// reserved by the system, e.g. Hyper-V's excluded ranges) gives instead.
pub fn port_taken(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrInUse || (cfg!(windows) && e.raw_os_error() == Some(10013))
}

/// Whether opening an IPv6 socket failed because this machine has no IPv6 (Linux:
/// `EAFNOSUPPORT` 97, or `EADDRNOTAVAIL` 99 when IPv6 is disabled by sysctl; elsewhere the error
/// is returned as it is).
fn ipv6_unavailable(e: &std::io::Error) -> bool {
    cfg!(target_os = "linux") && matches!(e.raw_os_error(), Some(97) | Some(99))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::net::Ipv4Addr;

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// A second Switchboard on the port the first holds takes the next one (on Windows too,
    /// where `SO_REUSEADDR` would have let both bind it, and the refusal is `WSAEACCES`), and
    /// names the port as taken; fixed, it is said.
    #[tokio::test]
    async fn a_second_listener_never_shares_the_port() {
        let first = bind_port(LOOPBACK, false, PortChoice::Range(0)).unwrap();
        let port = first.listener.local_addr().unwrap().port();
        let second = bind_port(LOOPBACK, false, PortChoice::Range(port)).unwrap();
        let got = second.listener.local_addr().unwrap().port();
        assert_ne!(got, port, "two listeners on one port");
        assert_eq!(second.taken.first(), Some(&port), "{:?}", second.taken);
        assert!(matches!(
            bind_port(LOOPBACK, false, PortChoice::Fixed(port)),
            Err(LinkError::PortTaken { port: p, .. }) if p == port
        ));
    }

    /// Another program binding with `SO_REUSEADDR` (what Windows lets hijack a port) cannot
    /// take the port the link holds.
    #[tokio::test]
    async fn another_program_with_reuseaddr_cannot_take_the_port() {
        let ours = bind_port(LOOPBACK, false, PortChoice::Range(0)).unwrap();
        let port = ours.listener.local_addr().unwrap().port();
        let other = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )
        .unwrap();
        other.set_reuse_address(true).unwrap();
        let e = other
            .bind(&SocketAddr::new(LOOPBACK, port).into())
            .and_then(|()| other.listen(8))
            .expect_err("the other program bound the link's port");
        assert!(port_taken(&e), "{e:?}");
    }
}
