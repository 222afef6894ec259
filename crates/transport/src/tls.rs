//! `TlsContext`: builds the rustls server configuration from `TlsSettings` and holds the current
//! acceptor, swappable at run time (hot reload) without touching established connections.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::UnixTime;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};
use tokio_rustls::TlsAcceptor;

use super::settings::{
    ClientAuth, TlsMode, TlsSettings, KEY_CERT_PATH, KEY_CLIENT_AUTH, KEY_KEY_PASSWORD,
    KEY_KEY_PATH, KEY_TRUST_CERT_PATH,
};

/// Why a TLS server configuration could not be built. Every variant names the setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A configured file could not be read.
    #[error("{key}: cannot read {}: {source}", path.display())]
    Read {
        /// The setting that names the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A configured file is not usable PEM (or holds nothing of the expected kind).
    #[error("{key}: {}: {reason}", path.display())]
    Pem {
        /// The setting that names the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting that the others make necessary is absent.
    #[error("{key} must be set {why}")]
    Missing {
        /// The absent setting.
        key: &'static str,
        /// Which other setting needs it.
        why: &'static str,
    },
    /// A setting has a value that cannot be used.
    #[error("{key}: {reason}")]
    Invalid {
        /// The setting at fault.
        key: &'static str,
        /// Why.
        reason: String,
    },
    /// The test-mode self-signed certificate could not be generated.
    #[error("tls.test.mode.enable: cannot generate the self-signed certificate: {0}")]
    SelfSigned(#[from] rcgen::Error),
}

/// The acceptor in force plus the leaf certificate it serves.
struct Active {
    acceptor: TlsAcceptor,
    certificate: CertificateDer<'static>,
}

/// TLS mode and the current acceptor; shared by the accept loop and the reloader.
///
/// New connections take the acceptor current when their handshake starts ([`TlsContext::acceptor`]);
/// a reload swaps it atomically and never affects connections already established.
pub struct TlsContext {
    settings: TlsSettings,
    current: ArcSwapOption<Active>,
    reloads: ReloadCounts,
}

/// How many reloads succeeded and failed since start (for metrics, and for tests to know that a
/// reload was attempted).
#[derive(Debug, Default)]
pub struct ReloadCounts {
    /// Reloads that swapped in a new acceptor.
    pub succeeded: std::sync::atomic::AtomicU64,
    /// Reloads that failed and kept the acceptor in force.
    pub failed: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsContext")
            .field("settings", &self.settings)
            .field("has_acceptor", &self.current.load().is_some())
            .finish()
    }
}

impl TlsContext {
    /// Builds the context. With mode `disabled` nothing is loaded; otherwise the certificate, key and
    /// trust files are read now (or a self-signed certificate generated in test mode).
    ///
    /// Errors name the offending setting. Java logs such an error and keeps running without TLS;
    /// the caller may do the same with [`TlsContext::without_acceptor`].
    /// Java: `NettyRemotingServer#loadSslContext`, `TlsHelper#buildSslContext`
    pub fn new(settings: TlsSettings) -> Result<Self, TlsError> {
        let current = if settings.mode == TlsMode::Disabled {
            None
        } else {
            Some(Arc::new(build(&settings)?))
        };
        Ok(TlsContext {
            settings,
            current: ArcSwapOption::new(current),
            reloads: ReloadCounts::default(),
        })
    }

    /// A context whose mode is `disabled`: a TLS ClientHello closes the connection.
    pub fn disabled() -> Self {
        TlsContext::without_acceptor(TlsSettings::disabled())
    }

    /// A context with `settings` but no acceptor: TLS connections are closed until a reload succeeds
    /// (Java's behaviour when the SSL context fails to build at start-up).
    pub fn without_acceptor(settings: TlsSettings) -> Self {
        TlsContext { settings, current: ArcSwapOption::empty(), reloads: ReloadCounts::default() }
    }

    /// The TLS mode.
    pub fn mode(&self) -> TlsMode {
        self.settings.mode
    }

    /// The settings this context was built from.
    pub fn settings(&self) -> &TlsSettings {
        &self.settings
    }

    /// Whether a client certificate accepted by the handshake was checked against the trust
    /// certificates (so its subject may serve as an identity): client auth asked for with
    /// `tls.server.authClient=true`, or test mode with a trust file.
    pub fn verifies_client_certificates(&self) -> bool {
        if self.settings.test_mode {
            self.settings.trust_cert_path.is_some()
        } else {
            self.settings.client_auth != ClientAuth::None && self.settings.auth_client
        }
    }

    /// The acceptor for a new connection, `None` when TLS cannot be served.
    pub fn acceptor(&self) -> Option<TlsAcceptor> {
        self.current.load().as_ref().map(|a| a.acceptor.clone())
    }

    /// The leaf certificate new connections are served (the generated one in test mode).
    pub fn certificate(&self) -> Option<CertificateDer<'static>> {
        self.current.load().as_ref().map(|a| a.certificate.clone())
    }

    /// Re-reads the files and swaps in a new acceptor. On error the old acceptor stays in force.
    /// Does nothing when the mode is `disabled`.
    /// Java: `NettyRemotingServer#loadSslContext` (called by the `FileWatchService` listener)
    pub fn reload(&self) -> Result<(), TlsError> {
        if self.settings.mode == TlsMode::Disabled {
            return Ok(());
        }
        let counter = |c: &std::sync::atomic::AtomicU64| {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let active = build(&self.settings).inspect_err(|_| counter(&self.reloads.failed))?;
        self.current.store(Some(Arc::new(active)));
        counter(&self.reloads.succeeded);
        Ok(())
    }

    /// Reload outcomes since start.
    pub fn reloads(&self) -> &ReloadCounts {
        &self.reloads
    }
}

/// The crypto provider: ring, chosen explicitly so no process-wide default is needed.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds an acceptor from the settings. Java: `TlsHelper#buildSslContext(false)`
fn build(settings: &TlsSettings) -> Result<Active, TlsError> {
    let provider = provider();
    let (chain, key) = if settings.test_mode {
        self_signed()?
    } else {
        let cert_path = settings.cert_path.as_deref().ok_or(TlsError::Missing {
            key: KEY_CERT_PATH,
            why: "when tls.test.mode.enable is false",
        })?;
        let key_path = settings.key_path.as_deref().ok_or(TlsError::Missing {
            key: KEY_KEY_PATH,
            why: "when tls.test.mode.enable is false",
        })?;
        (load_certs(cert_path)?, load_key(key_path, settings.key_password.as_deref())?)
    };
    // Java reads the trust file only when it checks client certificates with it.
    let roots = if settings.test_mode || settings.auth_client {
        settings.trust_cert_path.as_deref().map(load_roots).transpose()?
    } else {
        None
    };
    // Test mode asks for an optional client certificate (Java: ClientAuth.OPTIONAL); without a trust
    // certificate there is nothing to check one against, so none is asked for.
    let client_auth = match (settings.test_mode, settings.client_auth) {
        (true, _) if roots.is_some() => ClientAuth::Optional,
        (true, _) => ClientAuth::None,
        (false, mode) => mode,
    };
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Invalid { key: KEY_CERT_PATH, reason: e.to_string() })?;
    let builder = match (client_auth, roots) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (mode, _) if !settings.test_mode && !settings.auth_client => {
            // Java: tls.server.authClient=false trusts every client certificate.
            builder.with_client_cert_verifier(Arc::new(AnyClientCertificate {
                mandatory: mode == ClientAuth::Require,
                algorithms: provider.signature_verification_algorithms,
            }))
        }
        (_, None) => {
            return Err(TlsError::Missing {
                key: KEY_TRUST_CERT_PATH,
                why: "when tls.server.need.client.auth is optional or require and tls.server.authClient is true",
            })
        }
        (mode, Some(roots)) => {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let verifier = if mode == ClientAuth::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError::Invalid { key: KEY_CLIENT_AUTH, reason: e.to_string() })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::Invalid { key: KEY_KEY_PATH, reason: e.to_string() })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(e) => {
            return Err(TlsError::Invalid {
                key: KEY_KEY_PATH,
                reason: format!("does not match the certificate in {KEY_CERT_PATH}: {e}"),
            })
        }
    }
    let certificate = certified
        .end_entity_cert()
        .map_err(|e| TlsError::Invalid { key: KEY_CERT_PATH, reason: e.to_string() })?
        .clone()
        .into_owned();
    let config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    Ok(Active { acceptor: TlsAcceptor::from(Arc::new(config)), certificate })
}

/// Accepts any client certificate (its chain is not checked), while the handshake still proves
/// the client holds the certificate's key. Java: `InsecureTrustManagerFactory` when
/// `tls.server.authClient=false`.
#[derive(Debug)]
struct AnyClientCertificate {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The subject CN of the client's leaf certificate, if it sent one that has a CN.
pub fn client_cn(connection: &rustls::ServerConnection) -> Option<String> {
    let leaf = connection.peer_certificates()?.first()?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref()).ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?.to_owned();
    Some(cn)
}

/// A fresh self-signed certificate for `localhost` / `127.0.0.1`.
/// Java: Netty `SelfSignedCertificate` in `TlsHelper#buildSslContext`
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    let key = PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der());
    Ok((vec![generated.cert.der().clone()], key.into()))
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { key, path: path.to_owned(), source })
}

fn pem_error(key: &'static str, path: &Path, reason: impl ToString) -> TlsError {
    TlsError::Pem { key, path: path.to_owned(), reason: reason.to_string() }
}

/// All `CERTIFICATE` blocks of a PEM file, in order; at least one.
fn load_cert_file(
    key: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(key, path, e))?;
    if certs.is_empty() {
        return Err(pem_error(key, path, "no CERTIFICATE block"));
    }
    Ok(certs)
}

fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    load_cert_file(KEY_CERT_PATH, path)
}

fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_cert_file(KEY_TRUST_CERT_PATH, path)? {
        roots.add(cert).map_err(|e| pem_error(KEY_TRUST_CERT_PATH, path, e))?;
    }
    Ok(roots)
}

const ENCRYPTED_BEGIN: &[u8] = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &[u8] = b"-----END ENCRYPTED PRIVATE KEY-----";

/// The private key: PKCS#8, PKCS#1 or SEC1 PEM, or an encrypted PKCS#8 (PBES2) with `password`.
fn load_key(path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(KEY_KEY_PATH, path)?;
    if let Some(begin) = find(&bytes, ENCRYPTED_BEGIN) {
        let password = password.ok_or(TlsError::Missing {
            key: KEY_KEY_PASSWORD,
            why: "when tls.server.keyPath holds an ENCRYPTED PRIVATE KEY",
        })?;
        let end = find(&bytes[begin..], ENCRYPTED_END)
            .map(|e| begin + e + ENCRYPTED_END.len())
            .ok_or_else(|| pem_error(KEY_KEY_PATH, path, "unterminated ENCRYPTED PRIVATE KEY"))?;
        let (_, der) = pkcs8::der::pem::decode_vec(&bytes[begin..end])
            .map_err(|e| pem_error(KEY_KEY_PATH, path, e))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| pem_error(KEY_KEY_PATH, path, e))?;
        let plain = info.decrypt(password).map_err(|e| TlsError::Invalid {
            key: KEY_KEY_PASSWORD,
            reason: format!(
                "cannot decrypt {} (wrong password or an encryption scheme other than PBES2): {e}",
                path.display()
            ),
        })?;
        return Ok(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec()).into());
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| pem_error(KEY_KEY_PATH, path, e))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pki {
        dir: tempfile::TempDir,
        cert: PathBuf,
        key: PathBuf,
    }

    fn pki() -> (Pki, rcgen::KeyPair) {
        let dir = tempfile::tempdir().unwrap();
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        (Pki { dir, cert, key }, generated.signing_key)
    }

    fn files(p: &Pki) -> TlsSettings {
        TlsSettings {
            test_mode: false,
            cert_path: Some(p.cert.clone()),
            key_path: Some(p.key.clone()),
            ..TlsSettings::default()
        }
    }

    fn key_of(err: TlsError) -> &'static str {
        match err {
            TlsError::Read { key, .. }
            | TlsError::Pem { key, .. }
            | TlsError::Missing { key, .. }
            | TlsError::Invalid { key, .. } => key,
            TlsError::SelfSigned(_) => "self-signed",
        }
    }

    #[test]
    fn test_mode_serves_a_generated_certificate() {
        let ctx = TlsContext::new(TlsSettings::default()).unwrap();
        assert!(ctx.acceptor().is_some());
        let first = ctx.certificate().unwrap();
        ctx.reload().unwrap();
        assert_ne!(ctx.certificate().unwrap(), first, "a reload generates a new certificate");
    }

    #[test]
    fn disabled_mode_loads_nothing_even_with_bad_paths() {
        let s = TlsSettings {
            mode: TlsMode::Disabled,
            test_mode: false,
            cert_path: Some("/nonexistent/cert.pem".into()),
            ..TlsSettings::default()
        };
        let ctx = TlsContext::new(s).unwrap();
        assert!(ctx.acceptor().is_none());
        assert!(TlsContext::disabled().acceptor().is_none());
    }

    #[test]
    fn pem_files_are_loaded_and_the_leaf_is_served() {
        let (p, _) = pki();
        let ctx = TlsContext::new(files(&p)).unwrap();
        let served = ctx.certificate().unwrap();
        let on_disk = CertificateDer::from_pem_file(&p.cert).unwrap();
        assert_eq!(served, on_disk);
    }

    #[test]
    fn errors_name_the_setting_at_fault() {
        let (p, _) = pki();
        let unreadable =
            TlsSettings { cert_path: Some(p.dir.path().join("nope.pem")), ..files(&p) };
        let err = TlsContext::new(unreadable).unwrap_err();
        assert!(err.to_string().starts_with("tls.server.certPath: cannot read"), "{err}");

        let garbage = p.dir.path().join("garbage.pem");
        std::fs::write(&garbage, "not pem at all").unwrap();
        let bad_cert = TlsSettings { cert_path: Some(garbage.clone()), ..files(&p) };
        assert_eq!(key_of(TlsContext::new(bad_cert).unwrap_err()), KEY_CERT_PATH);
        let bad_key = TlsSettings { key_path: Some(garbage.clone()), ..files(&p) };
        assert_eq!(key_of(TlsContext::new(bad_key).unwrap_err()), KEY_KEY_PATH);
        let bad_trust =
            TlsSettings { trust_cert_path: Some(garbage.clone()), auth_client: true, ..files(&p) };
        assert_eq!(key_of(TlsContext::new(bad_trust).unwrap_err()), KEY_TRUST_CERT_PATH);

        let no_cert = TlsSettings { cert_path: None, ..files(&p) };
        assert_eq!(key_of(TlsContext::new(no_cert).unwrap_err()), KEY_CERT_PATH);
        let no_trust =
            TlsSettings { client_auth: ClientAuth::Require, auth_client: true, ..files(&p) };
        assert_eq!(key_of(TlsContext::new(no_trust).unwrap_err()), KEY_TRUST_CERT_PATH);

        // Java reads no trust file when tls.server.authClient is false: any certificate goes.
        let unchecked = TlsSettings {
            client_auth: ClientAuth::Require,
            trust_cert_path: Some(garbage),
            ..files(&p)
        };
        let ctx = TlsContext::new(unchecked).expect("authClient=false needs no trust file");
        assert!(!ctx.verifies_client_certificates());
    }

    #[test]
    fn a_key_that_does_not_match_the_certificate_is_refused() {
        let (p, _) = pki();
        let (other, _) = pki();
        let mismatched = TlsSettings { key_path: Some(other.key.clone()), ..files(&p) };
        let err = TlsContext::new(mismatched).unwrap_err();
        assert_eq!(key_of(err), KEY_KEY_PATH);
    }

    #[test]
    fn encrypted_pkcs8_key_needs_the_right_password() {
        let (p, key) = pki();
        let der = key.serialize_der();
        let info = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).unwrap();
        let params =
            pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(1000, b"saltsalt", &[7; 16])
                .unwrap();
        let encrypted = info.encrypt_with_params(params, "s3cret").unwrap();
        let pem = encrypted.to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF).unwrap();
        std::fs::write(&p.key, pem.as_bytes()).unwrap();

        let no_password = files(&p);
        assert_eq!(key_of(TlsContext::new(no_password).unwrap_err()), KEY_KEY_PASSWORD);
        let wrong = TlsSettings { key_password: Some("wrong".into()), ..files(&p) };
        assert_eq!(key_of(TlsContext::new(wrong).unwrap_err()), KEY_KEY_PASSWORD);
        let right = TlsSettings { key_password: Some("s3cret".into()), ..files(&p) };
        assert!(TlsContext::new(right).unwrap().acceptor().is_some());
    }

    #[test]
    fn failed_reload_keeps_the_old_certificate() {
        let (p, _) = pki();
        let ctx = TlsContext::new(files(&p)).unwrap();
        let before = ctx.certificate().unwrap();
        std::fs::write(&p.key, "-----BEGIN PRIVATE KEY-----\nMIIB").unwrap();
        assert_eq!(key_of(ctx.reload().unwrap_err()), KEY_KEY_PATH);
        assert_eq!(ctx.certificate().unwrap(), before);
    }
}
