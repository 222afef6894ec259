//! `Client`: a nameserver address list, one lazily (re)connected connection per address, request
//! building (language, version, opaque), and fail-over across the list.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use remoting::signature::Credentials;
use remoting::{version, LanguageCode, RemotingCommand, RequestCode};

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::tls::ClientTls;

/// Settings of a [`Client`]. Defaults follow the Java client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// TCP connect timeout (Java `connectTimeoutMillis` = 3000).
    pub connect_timeout: Duration,
    /// Per-request timeout (Java `mqClientApiTimeout` = 3000).
    pub request_timeout: Duration,
    /// `language` of every request (Java clients send JAVA).
    pub language: LanguageCode,
    /// `version` of every request (default 479 = V5_3_3, like a Java 5.3.3 client).
    pub version: i32,
    /// When set, every request is signed with these credentials (`AccessKey`, `SecurityToken`,
    /// `Signature`), as a Java client with an `AclClientRPCHook` does.
    pub credentials: Option<Credentials>,
    /// When set, every connection is made over TLS with this configuration
    /// ([`crate::tls::TlsSettings::build`]); plain TCP otherwise (Java `tls.enable=false`).
    pub tls: Option<ClientTls>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(3),
            language: LanguageCode::Java,
            version: version::V5_3_3,
            credentials: None,
            tls: None,
        }
    }
}

/// Splits a Java-style address list `"a:9876;b:9876"` (blanks and empty items ignored).
///
/// Errors with [`Error::BadAddress`] when the list is empty or an item is not `host:port`.
pub fn parse_addrs(list: &str) -> Result<Vec<String>> {
    let addrs: Vec<String> =
        list.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    if addrs.is_empty() {
        return Err(Error::BadAddress(list.to_owned()));
    }
    for a in &addrs {
        let ok = a
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !ok {
            return Err(Error::BadAddress(a.clone()));
        }
    }
    Ok(addrs)
}

/// The connection slot of one address; its async lock serialises connecting.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

struct Inner {
    config: ClientConfig,
    addrs: Vec<String>,
    slots: Mutex<HashMap<String, Slot>>,
    /// Index of the nameserver that answered last (Java `namesrvAddrChoosed`).
    chosen: AtomicUsize,
    /// Request ids (Java `RemotingCommand.requestId`, per process there; per client here).
    opaque: AtomicI32,
}

/// An async remoting client for a list of nameservers. Cheap to clone; clones share the
/// connections. Connections are made on first use and remade on the next call after they break.
///
/// Calls without a pinned address go to the nameserver that answered last and fail over to the
/// next one on a transport error (connect failure, timeout, broken connection); a server's
/// error answer is returned as is. See [`Client::pinned`] for calls to one address.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    pinned: Option<Arc<str>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("addrs", &self.inner.addrs)
            .field("pinned", &self.pinned)
            .finish()
    }
}

impl Client {
    /// A client for the address list `"a:9876;b:9876"` with default settings. Does not connect.
    pub fn new(addrs: &str) -> Result<Self> {
        Self::with_config(addrs, ClientConfig::default())
    }

    /// A client for the address list with `config`. Does not connect.
    pub fn with_config(addrs: &str, config: ClientConfig) -> Result<Self> {
        let addrs = parse_addrs(addrs)?;
        let start = random_index(addrs.len());
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                addrs,
                slots: Mutex::default(),
                chosen: AtomicUsize::new(start),
                opaque: AtomicI32::new(0),
            }),
            pinned: None,
        })
    }

    /// The configured nameserver addresses, in list order.
    pub fn addrs(&self) -> &[String] {
        &self.inner.addrs
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// A handle whose calls all go to `addr` only (no fail-over), sharing this client's
    /// connections. `addr` need not be in the list.
    pub fn pinned(&self, addr: &str) -> Client {
        Client { inner: self.inner.clone(), pinned: Some(addr.into()) }
    }

    /// One pinned handle per configured nameserver, in list order.
    pub fn each_namesrv(&self) -> Vec<Client> {
        self.inner.addrs.iter().map(|a| self.pinned(a)).collect()
    }

    /// The address this handle is pinned to, if any.
    pub fn pinned_addr(&self) -> Option<&str> {
        self.pinned.as_deref()
    }

    /// A request with this client's language and version (the opaque is set when sent).
    pub fn request(&self, code: RequestCode) -> RemotingCommand {
        RemotingCommand {
            code: code.to_i32(),
            language: self.inner.config.language,
            version: self.inner.config.version,
            ..RemotingCommand::default()
        }
    }

    /// Sends `req` and returns the answering address and the response, whatever its code.
    /// Pinned: to the pinned address. Otherwise: to the last good nameserver, failing over.
    pub async fn invoke(&self, req: RemotingCommand) -> Result<(String, RemotingCommand)> {
        self.invoke_timeout(req, self.inner.config.request_timeout).await
    }

    /// [`Client::invoke`] with an explicit per-attempt timeout.
    pub async fn invoke_timeout(
        &self,
        req: RemotingCommand,
        timeout: Duration,
    ) -> Result<(String, RemotingCommand)> {
        if let Some(addr) = &self.pinned {
            let resp = self.invoke_addr(addr, req, timeout).await?;
            return Ok((addr.to_string(), resp));
        }
        let n = self.inner.addrs.len();
        let start = self.inner.chosen.load(Ordering::Relaxed) % n;
        let mut last = None;
        for i in 0..n {
            let idx = (start + i) % n;
            let addr = &self.inner.addrs[idx];
            match self.invoke_addr(addr, req.clone(), timeout).await {
                Ok(resp) => {
                    self.inner.chosen.store(idx, Ordering::Relaxed);
                    return Ok((addr.clone(), resp));
                }
                Err(e) if e.is_transport() => {
                    tracing::debug!(addr = %addr, error = %e, "nameserver failed, trying the next");
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(Error::Shutdown))
    }

    /// Sends `req` to `addr` and waits for its response, whatever its code.
    pub async fn invoke_addr(
        &self,
        addr: &str,
        mut req: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        req.opaque = self.next_opaque();
        req.set_oneway(false);
        self.sign(&mut req);
        let conn = self.connection(addr).await?;
        conn.request(req, timeout).await
    }

    /// Sends `req` oneway (flag bit 1): to the pinned address, or to the last good nameserver
    /// (failing over only when it cannot be connected).
    pub async fn invoke_oneway(&self, mut req: RemotingCommand) -> Result<()> {
        req.opaque = self.next_opaque();
        req.set_oneway(true);
        self.sign(&mut req);
        let timeout = self.inner.config.request_timeout;
        if let Some(addr) = &self.pinned {
            return self.connection(addr).await?.send_oneway(req, timeout).await;
        }
        let n = self.inner.addrs.len();
        let start = self.inner.chosen.load(Ordering::Relaxed) % n;
        let mut last = None;
        for i in 0..n {
            let idx = (start + i) % n;
            let conn = match self.connection(&self.inner.addrs[idx]).await {
                Ok(c) => c,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            return conn.send_oneway(req, timeout).await;
        }
        Err(last.unwrap_or(Error::Shutdown))
    }

    /// Resolves when the current connection to `addr` closes; at once if there is none.
    pub async fn connection_closed(&self, addr: &str) {
        let slot = self.slot(addr);
        let conn = slot.lock().await.clone();
        if let Some(c) = conn {
            c.closed().await;
        }
    }

    /// Closes every connection (pending requests fail with [`Error::ConnectionClosed`]); the
    /// next call reconnects.
    pub async fn close(&self) {
        let slots: Vec<Slot> =
            self.inner.slots.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for slot in slots {
            slot.lock().await.take();
        }
    }

    /// Signs `req` when the client has credentials. Java: `AclClientRPCHook#doBeforeRequest`
    fn sign(&self, req: &mut RemotingCommand) {
        if let Some(credentials) = &self.inner.config.credentials {
            credentials.sign(req);
        }
    }

    fn next_opaque(&self) -> i32 {
        self.inner.opaque.fetch_add(1, Ordering::Relaxed)
    }

    fn slot(&self, addr: &str) -> Slot {
        let mut slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(addr.to_owned()).or_default().clone()
    }

    /// The live connection to `addr`, connecting (or reconnecting) if needed.
    async fn connection(&self, addr: &str) -> Result<Arc<Connection>> {
        let slot = self.slot(addr);
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref() {
            if !conn.is_closed() {
                return Ok(conn.clone());
            }
            tracing::debug!(addr = %conn.addr(), "reconnecting");
        }
        let conn = Arc::new(
            Connection::connect(
                addr,
                self.inner.config.connect_timeout,
                self.inner.config.tls.as_ref(),
            )
            .await?,
        );
        *guard = Some(conn.clone());
        Ok(conn)
    }
}

/// A start index that differs between clients, so clients spread over the list like Java's.
fn random_index(n: usize) -> usize {
    use std::hash::{BuildHasher, RandomState};
    (RandomState::new().hash_one(n) as usize) % n.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lists_split_like_java() {
        assert_eq!(parse_addrs("a:9876; b:9877;").unwrap(), ["a:9876", "b:9877"]);
        assert!(matches!(parse_addrs(" ; "), Err(Error::BadAddress(_))));
        assert!(matches!(parse_addrs("a:9876;nohost"), Err(Error::BadAddress(a)) if a == "nohost"));
        assert!(matches!(parse_addrs("a:99999"), Err(Error::BadAddress(_))));
    }
}
