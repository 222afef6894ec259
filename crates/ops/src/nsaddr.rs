//! The address server: `GET /rocketmq/nsaddr` (and `/rocketmq/<any subgroup>`) answers the
//! `;`-separated nameserver list that the Java client's `TopAddressing` fetches when it is
//! started with `-Drocketmq.namesrv.domain=<host>:<httpListenPort>` and no nameserver address.
//! Java: `TopAddressing#fetchNSAddr` (client side; the body is trimmed and used as `namesrvAddr`)

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State as AxumState};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use namesrv::state::State;

use crate::{ApiError, HttpPeer};

/// `GET /rocketmq/{subgroup}`: `httpNamesrvAddr`, or this server's own remoting address.
pub async fn nsaddr(
    AxumState(state): AxumState<Arc<State>>,
    ConnectInfo(peer): ConnectInfo<HttpPeer>,
) -> Result<Response, ApiError> {
    let configured = state.config.load().http_namesrv_addr.clone().filter(|l| !l.trim().is_empty());
    let list = match configured {
        Some(list) => list.trim().to_owned(),
        None => own_address(state.remoting_addr(), peer.local)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the remoting listener is not serving yet",
                )
            })?
            .to_string(),
    };
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], list).into_response())
}

/// The remoting address a client can reach: the remoting listener's, with the address the HTTP
/// request came in on when the listener is bound to a wildcard (0.0.0.0 or ::).
fn own_address(remoting: Option<SocketAddr>, http_local: Option<SocketAddr>) -> Option<SocketAddr> {
    let remoting = remoting?;
    if !remoting.ip().is_unspecified() {
        return Some(remoting);
    }
    Some(SocketAddr::new(http_local?.ip(), remoting.port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_remoting_address_takes_the_requests_local_address() {
        let addr = |s: &str| s.parse::<SocketAddr>().ok();
        assert_eq!(own_address(addr("0.0.0.0:9876"), addr("10.1.2.3:8080")), addr("10.1.2.3:9876"));
        assert_eq!(own_address(addr("[::]:9876"), addr("[::1]:8080")), addr("[::1]:9876"));
        assert_eq!(
            own_address(addr("10.0.0.5:9876"), addr("127.0.0.1:8080")),
            addr("10.0.0.5:9876")
        );
        assert_eq!(own_address(None, addr("127.0.0.1:8080")), None);
    }
}
