//! What can go wrong on the phone end of the link, as one error type every step returns.

use crate::diagnostics::LinkAttempt;

/// Errors of the phone client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PhoneError {
    /// TCP connect failed.
    #[error("connect: {0}")]
    Connect(#[from] std::io::Error),
    /// The desktop presented another certificate than the pinned one.
    #[error("certificate mismatch: pinned {expected}, the desktop presented {}", got.as_deref().unwrap_or("nothing"))]
    CertificateMismatch {
        /// The pinned fingerprint.
        expected: String,
        /// The fingerprint presented, if one was.
        got: Option<String>,
    },
    /// TLS failed for another reason.
    #[error("TLS: {0}")]
    Tls(String),
    /// WebSocket failed.
    #[error("WebSocket: {0}")]
    WebSocket(String),
    /// The desktop answered with an ifp `error`.
    #[error("refused: {class}: {detail}")]
    Refused {
        /// The error class (`pairing_failed`, `unauthorized_device`, ...).
        class: String,
        /// The desktop's words.
        detail: String,
    },
    /// The desktop said something unexpected.
    #[error("protocol: {0}")]
    Protocol(String),
    /// Nothing arrived in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// The desktop closed the connection.
    #[error("the desktop closed the connection")]
    Closed,
    /// No address of the desktop could be reached ([`PhoneClient::connect_any`]): every try.
    #[error("no address of the desktop answered: {}", attempts_words(.0))]
    Unreachable(Vec<LinkAttempt>),
    /// The pairing was not confirmed: the codes differ (said on this phone), or the desktop's
    /// revealed nonce does not match its commitment.
    #[error("not paired: {0}")]
    NotConfirmed(String),
}

fn attempts_words(a: &[LinkAttempt]) -> String {
    if a.is_empty() {
        return "no address to try".to_string();
    }
    a.iter()
        .map(|x| format!("{}: {}", x.addr, x.error))
        .collect::<Vec<_>>()
        .join("; ")
}
