//! TLS 1.3 configuration for the link: the desktop's server side and a phone's pinning client.
//!
//! `docs/protocol.md`, "Link: pairing and sessions": the link is WebSocket over TLS 1.3 only
//! (rustls with the `ring` provider). The desktop presents its self-signed certificate; a phone
//! trusts exactly the certificate whose SHA-256 fingerprint it learned from the pairing link
//! (or from an earlier pairing), and nothing else — no CA, no name check.

use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

use super::identity::{cert_fingerprint, DesktopIdentity};

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The desktop's TLS 1.3-only server configuration for `identity`'s certificate.
pub fn server_config(identity: &DesktopIdentity) -> Result<Arc<ServerConfig>, rustls::Error> {
    let cert = CertificateDer::from(identity.cert_der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(identity.key_der().to_vec()));
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)?;
    Ok(Arc::new(cfg))
}

/// A rustls server-certificate verifier that accepts exactly one certificate, by fingerprint.
///
/// The fingerprint it saw last is kept so a caller can report "expected X, got Y".
#[derive(Debug)]
pub struct PinnedCertVerifier {
    /// `None`: trust on first use (a typed pairing line), the fingerprint only recorded.
    expected: Option<String>,
    seen: Mutex<Option<String>>,
    provider: Arc<CryptoProvider>,
}

impl PinnedCertVerifier {
    /// Accepts only the certificate whose lowercase hex SHA-256 is `fingerprint`.
    pub fn new(fingerprint: &str) -> Self {
        Self {
            expected: Some(fingerprint.to_ascii_lowercase()),
            seen: Mutex::new(None),
            provider: provider(),
        }
    }

    /// Accepts any certificate and records its fingerprint ([`PinnedCertVerifier::seen`]):
    /// trust on first use, for pairing from a typed line (`docs/protocol.md`, "Typed pairing
    /// line"), where the verification code the person compares binds the fingerprint seen.
    /// The TLS handshake's signature is still checked against the presented certificate.
    pub fn first_use() -> Self {
        Self {
            expected: None,
            seen: Mutex::new(None),
            provider: provider(),
        }
    }

    /// The fingerprint of the certificate the server presented last, if any.
    pub fn seen(&self) -> Option<String> {
        switchboard_wire::sync::lock(&self.seen).clone()
    }
}

impl ServerCertVerifier for PinnedCertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let fp = cert_fingerprint(end_entity.as_ref());
        *switchboard_wire::sync::lock(&self.seen) = Some(fp.clone());
        if self.expected.as_deref().map_or(true, |e| e == fp) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A TLS 1.3-only client configuration that trusts only `verifier`'s pinned certificate.
pub fn pinned_client_config(
    verifier: Arc<PinnedCertVerifier>,
) -> Result<Arc<ClientConfig>, rustls::Error> {
    let cfg = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}
