//! The control channel on Windows: a named pipe `\\.\pipe\switchboard-<16 hex>` (the hex as the
//! Unix socket's folder: a SHA-256 of the app's data folder, [`super::socket_path`]) speaking
//! the same JSON Lines requests as the Unix socket ([`super::serve::answer`]).
//!
//! ## Who can open it
//! - The pipe is created with a security descriptor whose DACL is protected and holds one entry:
//!   full access for the current user's SID (SDDL `O:<sid>D:P(A;;GA;;;<sid>)`,
//!   [`PipeSecurity::current_user`]); no other user, not even an administrator's process
//!   without that SID, is granted anything. [`pipe_security_sddl`] reads it back.
//! - Remote clients (SMB) are rejected (`PIPE_REJECT_REMOTE_CLIENTS`).
//! - The first instance is created with `FILE_FLAG_FIRST_PIPE_INSTANCE`: if the name is already
//!   held (another app, or another program squatting it) this app does not serve
//!   ([`ControlError::AlreadyRunning`]).
//! - Each client's process user is checked again ([`process_user_sid`], as the Unix socket
//!   checks `SO_PEERCRED`), and the CLI checks the server's the same way before it sends
//!   anything: a pipe of another user's is never told a pairing code.

use std::ffi::c_void;
use std::io;
use std::os::windows::io::{AsRawHandle as _, RawHandle};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSecurityDescriptorToStringSecurityDescriptorW, ConvertSidToStringSidW,
    ConvertStringSecurityDescriptorToSecurityDescriptorW, GetSecurityInfo, SE_KERNEL_OBJECT,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, TokenUser, DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Pipes::{GetNamedPipeClientProcessId, GetNamedPipeServerProcessId};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

use super::serve::{failed, refuse, serve_requests, write_answer};
use super::{ControlError, MAX_CONNECTIONS};
use switchboard_app::App;
use switchboard_wire::error::IpcErrorKind;

/// The pipe namespace's prefix.
pub const PIPE_PREFIX: &str = r"\\.\pipe\";

/// `SDDL_REVISION_1`.
const SDDL_REVISION_1: u32 = 1;
/// `ERROR_ACCESS_DENIED`: the first instance's name is held by a pipe this user may not open.
const ERROR_ACCESS_DENIED: i32 = 5;
/// `ERROR_PIPE_BUSY`: every instance is busy (or the first-instance flag found the name held).
pub const ERROR_PIPE_BUSY: i32 = 231;

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// A `LocalAlloc`ed wide string, read and freed.
///
/// # Safety
/// `p` is null or a NUL-terminated wide string allocated with `LocalAlloc`.
unsafe fn take_local_wide(p: *mut u16) -> String {
    if p.is_null() {
        return String::new();
    }
    let mut len = 0;
    while *p.add(len) != 0 {
        len += 1;
    }
    let s = String::from_utf16_lossy(std::slice::from_raw_parts(p, len));
    LocalFree(p.cast());
    s
}

struct Handle(HANDLE);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was opened by this module and is closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// The user SID (`S-1-5-21-…`) of the process `pid` (`None`: this process).
///
/// # Errors
/// The OS error when the process or its token cannot be opened or read.
pub fn process_user_sid(pid: Option<u32>) -> io::Result<String> {
    // SAFETY: plain Win32 calls on handles this function opens and closes; the token buffer is
    // sized by the first GetTokenInformation call and read as the TOKEN_USER it holds.
    unsafe {
        let process = match pid {
            None => GetCurrentProcess(),
            Some(pid) => {
                let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
                if h.is_null() {
                    return Err(io::Error::last_os_error());
                }
                h
            }
        };
        let _process = pid.map(|_| Handle(process));
        let mut token: HANDLE = std::ptr::null_mut();
        if OpenProcessToken(process, TOKEN_QUERY, &mut token) == 0 {
            return Err(io::Error::last_os_error());
        }
        let token = Handle(token);
        let mut len = 0u32;
        GetTokenInformation(token.0, TokenUser, std::ptr::null_mut(), 0, &mut len);
        if len == 0 {
            return Err(io::Error::last_os_error());
        }
        // u64s keep the buffer aligned for TOKEN_USER.
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        if GetTokenInformation(token.0, TokenUser, buf.as_mut_ptr().cast(), len, &mut len) == 0 {
            return Err(io::Error::last_os_error());
        }
        let user = &*(buf.as_ptr().cast::<TOKEN_USER>());
        let mut text: *mut u16 = std::ptr::null_mut();
        if ConvertSidToStringSidW(user.User.Sid, &mut text) == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(take_local_wide(text))
    }
}

/// The pipe's security descriptor: owner and only ACE the current user's SID.
#[derive(Debug)]
pub struct PipeSecurity {
    sid: String,
    descriptor: PSECURITY_DESCRIPTOR,
}

// SAFETY: the descriptor is immutable after creation and only read by CreateNamedPipeW.
unsafe impl Send for PipeSecurity {}
// SAFETY: as above.
unsafe impl Sync for PipeSecurity {}

impl Drop for PipeSecurity {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW, freed once.
        unsafe { LocalFree(self.descriptor) };
    }
}

/// The SDDL of the descriptor the pipe gets for `sid`: `sid` owns it and its protected DACL
/// grants `sid` full access and nobody else anything.
pub fn sddl_for(sid: &str) -> String {
    format!("O:{sid}D:P(A;;GA;;;{sid})")
}

impl PipeSecurity {
    /// The descriptor for this process's user ([`sddl_for`]).
    ///
    /// # Errors
    /// The OS error when the user's SID cannot be read or the descriptor not made.
    pub fn current_user() -> io::Result<Self> {
        let sid = process_user_sid(None)?;
        let sddl = wide(&sddl_for(&sid));
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a NUL-terminated SDDL string; the descriptor is LocalFree'd in Drop.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { sid, descriptor })
    }

    /// The SID it grants access to.
    pub fn sid(&self) -> &str {
        &self.sid
    }
}

/// The owner and DACL of the kernel object `handle` (a pipe), as SDDL (`O:…D:…`).
///
/// # Errors
/// The OS error when they cannot be read.
pub fn pipe_security_sddl(handle: RawHandle) -> io::Result<String> {
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    let info = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
    // SAFETY: `handle` is an open pipe handle; the descriptor GetSecurityInfo allocates is
    // converted to a string and LocalFree'd.
    unsafe {
        let e = GetSecurityInfo(
            handle as HANDLE,
            SE_KERNEL_OBJECT,
            info,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut descriptor,
        );
        if e != 0 {
            return Err(io::Error::from_raw_os_error(e as i32));
        }
        let mut text: *mut u16 = std::ptr::null_mut();
        let ok = ConvertSecurityDescriptorToStringSecurityDescriptorW(
            descriptor,
            SDDL_REVISION_1,
            info,
            &mut text,
            std::ptr::null_mut(),
        );
        LocalFree(descriptor);
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(take_local_wide(text))
    }
}

/// Creates one instance of the pipe `path` with `security` (the first with
/// `FILE_FLAG_FIRST_PIPE_INSTANCE`), remote clients rejected. Call inside a Tokio runtime.
///
/// # Errors
/// [`ControlError::AlreadyRunning`] when `first` and the name is already held;
/// [`ControlError::Io`] otherwise.
pub fn create_instance(
    path: &Path,
    first: bool,
    security: &PipeSecurity,
) -> Result<NamedPipeServer, ControlError> {
    let mut attributes = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: security.descriptor,
        bInheritHandle: 0,
    };
    // SAFETY: `attributes` points at a valid descriptor that outlives the call.
    let created = unsafe {
        ServerOptions::new()
            .first_pipe_instance(first)
            .reject_remote_clients(true)
            .create_with_security_attributes_raw(
                path.as_os_str(),
                (&mut attributes as *mut SECURITY_ATTRIBUTES).cast::<c_void>(),
            )
    };
    created.map_err(|source| {
        if first
            && matches!(
                source.raw_os_error(),
                Some(ERROR_ACCESS_DENIED) | Some(ERROR_PIPE_BUSY)
            )
        {
            ControlError::AlreadyRunning {
                path: path.to_path_buf(),
            }
        } else {
            ControlError::Io {
                what: "create",
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// The process id of the client connected to `pipe`.
///
/// # Errors
/// The OS error.
pub fn client_pid(pipe: &NamedPipeServer) -> io::Result<u32> {
    let mut pid = 0u32;
    // SAFETY: an open, connected pipe handle.
    if unsafe { GetNamedPipeClientProcessId(pipe.as_raw_handle() as HANDLE, &mut pid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// The process id of the server end of the pipe `handle` (a client's).
///
/// # Errors
/// The OS error.
pub fn server_pid(handle: RawHandle) -> io::Result<u32> {
    let mut pid = 0u32;
    // SAFETY: an open pipe handle.
    if unsafe { GetNamedPipeServerProcessId(handle as HANDLE, &mut pid) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// Whether a peer running as `peer_sid` may use the pipe of an app running as `own_sid`: only
/// the same user.
///
/// # Errors
/// [`crate::PeerRefused`] naming both SIDs.
pub fn peer_sid_allowed(peer_sid: &str, own_sid: &str) -> Result<(), crate::PeerRefused> {
    if peer_sid == own_sid {
        Ok(())
    } else {
        Err(crate::PeerRefused {
            own: format!("user {own_sid}"),
            peer: peer_sid.to_string(),
        })
    }
}

/// Accepts connections on `path` (the first instance `first` already created) until `stop`:
/// each connected instance is replaced by a new one, its client's user checked, and served.
pub(super) async fn accept_loop(
    app: Weak<App>,
    path: PathBuf,
    security: PipeSecurity,
    first: NamedPipeServer,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    let mut next = first;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            connected = next.connect() => {
                // A new instance for the next client before this one is served.
                let fresh = match create_instance(&path, false, &security) {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!("control pipe: no new instance ({e}); serving stops");
                        break;
                    }
                };
                let conn = std::mem::replace(&mut next, fresh);
                if connected.is_err() {
                    continue;
                }
                let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                    conns.spawn(refuse(conn, "busy: too many control connections at once; try again"));
                    continue;
                };
                let app = app.clone();
                let own = security.sid().to_string();
                conns.spawn(async move {
                    serve(app, conn, &own).await;
                    drop(slot);
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// One connection: the client's user checked, then request after request.
async fn serve(app: Weak<App>, mut pipe: NamedPipeServer, own_sid: &str) {
    let peer = client_pid(&pipe).and_then(|pid| process_user_sid(Some(pid)));
    let peer = match peer {
        Ok(sid) => sid,
        Err(e) => {
            tracing::warn!("control pipe: the client's user is unreadable: {e}");
            return;
        }
    };
    if let Err(why) = peer_sid_allowed(&peer, own_sid) {
        tracing::warn!("control pipe: {why}");
        let _ = write_answer(
            &mut pipe,
            &failed(IpcErrorKind::InvalidInput, why.to_string()),
        )
        .await;
        return;
    }
    serve_requests(app, pipe).await;
}
