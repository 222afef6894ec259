//! Who may use the HTTP listener, checked before any handler: the `Host` allow-list
//! (`httpAllowedHosts`, against DNS rebinding), the plain-credential guard (no Basic
//! credentials over plain HTTP from another machine unless `httpAllowPlainCredentials`), and,
//! with `authenticationEnabled`, the accounts of the remoting port over HTTP Basic: each route
//! needs what the request code it mirrors needs (`acl::access_of`), so in
//! `authenticationMode=writes` the read-only API stays open and in `all` every route but
//! `/healthz`, `/readyz`, `/metrics` and `/rocketmq/*` needs an account.
//!
//! Status codes: 421 for a `Host` not allowed; 403 for credentials (or a page needing them)
//! over plain HTTP from a non-loopback peer, and for an account whose role or address does not
//! allow the route; 401 with `WWW-Authenticate: Basic` for missing or wrong credentials (the
//! browser then asks for them); 429 while the address is blocked after repeated failures.
//! `X-Forwarded-For` and the like are never read: the TCP peer is the client.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, MatchedPath, Request, State as AxumState};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use remoting::RequestCode as C;

use crate::listener::Refused;
use crate::{ApiError, Context, HttpPeer};

/// The realm the browser shows when it asks for credentials.
pub const REALM: &str = r#"Basic realm="RocketMQ NameServer", charset="UTF-8""#;

/// The request code whose access a route needs; `None` for the routes open to anyone (probes,
/// metrics, the address server).
pub fn code_of(route: &str) -> Option<C> {
    Some(match route {
        "/healthz" | "/readyz" | "/metrics" => return None,
        r if r.starts_with("/rocketmq/") => return None,
        "/api/v1/topics" => C::GetAllTopicListFromNameserver,
        "/api/v1/topics/{topic}/route" => C::GetRouteinfoByTopic,
        "/api/v1/kv" | "/api/v1/kv/{namespace}" => C::GetKvConfig,
        "/api/v1/config" | "/api/v1/stats" => C::GetNamesrvConfig,
        "/api/v1/controller" => C::ControllerGetMetadataInfo,
        // The dashboard, its assets, the overview, clusters and events: what the cluster view
        // of the remoting port needs.
        _ => C::GetBrokerClusterInfo,
    })
}

/// Whether Basic credentials from `peer` must be refused: over plain HTTP from a peer that is
/// not on the loopback interface, unless `allow_plain` (`httpAllowPlainCredentials`).
pub fn plain_credentials_refused(tls: bool, peer: IpAddr, allow_plain: bool) -> bool {
    !tls && !allow_plain && !peer.to_canonical().is_loopback()
}

/// Whether the `Host` header `host` is allowed by `allowed` (`httpAllowedHosts`,
/// comma-separated names, any port). IP literals and `localhost` always are; no header is not.
pub fn host_allowed(host: Option<&str>, allowed: &str) -> bool {
    let Some(host) = host.map(str::trim) else { return false };
    if host.starts_with('[') {
        return true; // an IPv6 literal
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.parse::<IpAddr>().is_ok() || name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    allowed
        .split(',')
        .map(|a| a.trim().trim_end_matches('.'))
        .any(|a| !a.is_empty() && a.eq_ignore_ascii_case(&name))
}

/// The accessKey and secretKey of an `Authorization: Basic` header; `Err` when the header is
/// there but not a readable Basic pair.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, ()> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let value = value.to_str().map_err(|_| ())?;
    let (scheme, encoded) = value.trim().split_once(' ').ok_or(())?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(());
    }
    let decoded =
        base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| ())?;
    let text = String::from_utf8(decoded).map_err(|_| ())?;
    let (key, secret) = text.split_once(':').ok_or(())?;
    Ok(Some((key.to_owned(), secret.to_owned())))
}

/// The middleware of every matched route (see the module documentation).
pub async fn guard(
    AxumState(ctx): AxumState<Context>,
    ConnectInfo(peer): ConnectInfo<HttpPeer>,
    request: Request,
    next: Next,
) -> Response {
    let config = ctx.state.config.load();
    let headers = request.headers();
    if let Some(allowed) = config.http_allowed_hosts.as_deref().filter(|a| !a.trim().is_empty()) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        if !host_allowed(host, allowed) {
            ctx.http_counts.refused(Refused::Host);
            return ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "this server does not answer to that Host (httpAllowedHosts)",
            )
            .into_response();
        }
    }
    let credentials = basic_credentials(headers);
    let sent_credentials = !matches!(credentials, Ok(None));
    let plain_refused =
        plain_credentials_refused(peer.tls, peer.remote.ip(), config.http_allow_plain_credentials);
    if sent_credentials && plain_refused {
        ctx.http_counts.refused(Refused::PlainCredentials);
        return plain_refusal(peer.remote).into_response();
    }
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let (Some(gate), Some(code)) =
        (ctx.state.access.auth.as_deref(), route.as_deref().and_then(code_of))
    else {
        return next.run(request).await;
    };
    let code = code.to_i32();
    if acl::access_of(code) == acl::Access::Read && gate.mode() == acl::AuthMode::Writes {
        return next.run(request).await;
    }
    if plain_refused && !gate.accounts().globally_allowed(peer.remote.ip().to_canonical()) {
        ctx.http_counts.refused(Refused::PlainCredentials);
        return plain_refusal(peer.remote).into_response();
    }
    let pair = credentials.as_ref().ok().and_then(Option::as_ref);
    let basic =
        pair.map(|(access_key, secret_key)| acl::BasicCredentials { access_key, secret_key });
    let basic = match (&credentials, basic) {
        // An unreadable Authorization header is a wrong secret, not an anonymous request.
        (Err(()), _) => Some(acl::BasicCredentials { access_key: "", secret_key: "" }),
        (_, basic) => basic,
    };
    match gate.check_basic(peer.remote, basic, code, tokio::time::Instant::now) {
        Ok(_) => next.run(request).await,
        Err(refusal) => refusal_response(&refusal),
    }
}

fn plain_refusal(peer: SocketAddr) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "credentials are not accepted over plain HTTP from {}: serve HTTPS \
             (httpTlsEnable=true), or set httpAllowPlainCredentials=true",
            peer.ip()
        ),
    )
}

/// The answer to a refused request: 401 with the challenge, 403, or 429.
fn refusal_response(refusal: &acl::Refusal) -> Response {
    use acl::Refusal as R;
    let (status, message) = match refusal {
        R::NoSignature { .. } => (
            StatusCode::UNAUTHORIZED,
            "this page needs an account: HTTP Basic with its accessKey and secretKey".to_owned(),
        ),
        R::UnknownAccessKey | R::BadSignature => (
            StatusCode::UNAUTHORIZED,
            "access denied: unknown access key or wrong secret key".to_owned(),
        ),
        R::RoleDenied { .. } | R::AddressDenied { .. } | R::NotOwner { .. } | R::NotPeer { .. } => {
            (StatusCode::FORBIDDEN, refusal.to_string())
        }
        R::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, refusal.to_string()),
    };
    let mut response = ApiError::new(status, message).into_response();
    let headers = response.headers_mut();
    match status {
        StatusCode::UNAUTHORIZED => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(REALM));
        }
        StatusCode::TOO_MANY_REQUESTS => {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        }
        _ => {}
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn plain_credentials_are_refused_only_from_other_machines_without_tls() {
        assert!(plain_credentials_refused(false, ip("192.0.2.7"), false));
        assert!(plain_credentials_refused(false, ip("::ffff:192.0.2.7"), false));
        assert!(!plain_credentials_refused(false, ip("127.0.0.1"), false));
        assert!(!plain_credentials_refused(false, ip("::1"), false));
        assert!(!plain_credentials_refused(false, ip("::ffff:127.0.0.1"), false));
        assert!(!plain_credentials_refused(true, ip("192.0.2.7"), false), "over TLS");
        assert!(!plain_credentials_refused(false, ip("192.0.2.7"), true), "allowed");
    }

    #[test]
    fn hosts_are_names_in_the_list_ip_literals_or_localhost() {
        let list = "ns.example.com, Dash.Example.com";
        for host in [
            "ns.example.com",
            "NS.example.com:8080",
            "dash.example.com.",
            "10.1.2.3:8080",
            "[::1]:8080",
            "localhost:8080",
            "app.localhost",
        ] {
            assert!(host_allowed(Some(host), list), "{host}");
        }
        for host in ["evil.example.net", "ns.example.com.evil.net:8080", "", "example.com"] {
            assert!(!host_allowed(Some(host), list), "{host}");
        }
        assert!(!host_allowed(None, list));
    }

    #[test]
    fn every_api_route_needs_what_its_remoting_request_needs() {
        assert_eq!(code_of("/api/v1/kv/{namespace}"), Some(C::GetKvConfig));
        assert_eq!(code_of("/api/v1/config"), Some(C::GetNamesrvConfig));
        assert_eq!(code_of("/"), Some(C::GetBrokerClusterInfo));
        for open in ["/healthz", "/readyz", "/metrics", "/rocketmq/{subgroup}"] {
            assert_eq!(code_of(open), None, "{open}");
        }
    }
}
