//! The client's transport against tiny fake servers built on `RemotingCodec`: pipelining with
//! out-of-order responses, timeouts, oneway, reconnect, fail-over, and server error codes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::{Client, ClientConfig, Error};
use futures::{SinkExt, StreamExt};
use remoting::{ExtFields, RemotingCodec, RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

/// Bounds every test: nothing here should take more than a few seconds.
const LIMIT: Duration = Duration::from_secs(20);

fn config(timeout_ms: u64) -> ClientConfig {
    ClientConfig { request_timeout: Duration::from_millis(timeout_ms), ..ClientConfig::default() }
}

/// A response to `req` with `code`, the request's ext field `i` as remark.
fn answer(req: &RemotingCommand, code: ResponseCode) -> RemotingCommand {
    RemotingCommand::response(code, req.ext("i").map(str::to_owned)).respond_to(req)
}

/// A server that answers every request with `f(request)` (no answer for `None`), one task per
/// connection. Counts accepted connections.
async fn serve<F>(f: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(&RemotingCommand) -> Option<RemotingCommand> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let f = f.clone();
            tokio::spawn(async move {
                let mut framed = Framed::new(sock, RemotingCodec::default());
                while let Some(Ok(req)) = framed.next().await {
                    if let Some(resp) = f(&req) {
                        if framed.send(resp).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, accepted)
}

/// An address nothing listens on.
async fn dead_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    l.local_addr().expect("addr")
}

fn req_i(client: &Client, i: usize) -> RemotingCommand {
    let ext: ExtFields = [("i", i.to_string())].into_iter().collect();
    client.request(RequestCode::GetBrokerClusterInfo).with_ext_fields(ext)
}

#[tokio::test]
async fn responses_out_of_order_reach_their_requests() {
    tokio::time::timeout(LIMIT, async {
        // The server collects 16 requests, then answers them in reverse order.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (sock, _) = listener.accept().await.expect("accept");
            let mut framed = Framed::new(sock, RemotingCodec::default());
            let mut got = Vec::new();
            while got.len() < 16 {
                got.push(framed.next().await.expect("frame").expect("decodes"));
            }
            for req in got.iter().rev() {
                framed.send(answer(req, ResponseCode::Success)).await.expect("send");
            }
            // Keep the connection open until the client is done.
            let _ = framed.next().await;
        });
        let client = Client::with_config(&addr.to_string(), config(5_000)).expect("client");
        let calls = (0..16).map(|i| {
            let client = client.clone();
            async move { (i, client.invoke(req_i(&client, i)).await) }
        });
        for (i, result) in futures::future::join_all(calls).await {
            let (from, resp) = result.expect("answered");
            assert_eq!(from, addr.to_string());
            assert_eq!(
                resp.remark.as_deref(),
                Some(i.to_string().as_str()),
                "request {i} got another's response"
            );
        }
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn requests_carry_java_client_language_version_and_increasing_opaques() {
    tokio::time::timeout(LIMIT, async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (addr, _) = serve(move |req| {
            let _ = tx.send(req.clone());
            Some(answer(req, ResponseCode::Success))
        })
        .await;
        let client = Client::new(&addr.to_string()).expect("client");
        for i in 0..3 {
            client.invoke(req_i(&client, i)).await.expect("answered");
        }
        let seen: Vec<RemotingCommand> =
            (0..3).map(|_| rx.try_recv().expect("request seen")).collect();
        assert_eq!(seen.iter().map(|r| r.opaque).collect::<Vec<_>>(), [0, 1, 2]);
        for r in &seen {
            assert_eq!(r.version, 479);
            assert_eq!(r.language, remoting::LanguageCode::Java);
            assert_eq!(r.flag, 0);
            assert_eq!(r.code, 106);
        }
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn timed_out_request_is_forgotten_and_its_late_answer_dropped() {
    tokio::time::timeout(LIMIT, async {
        // Request 0 is answered 600 ms late, after the client gave up on it; the late answer
        // arrives just before the answer to request 1 on the same connection.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (sock, _) = listener.accept().await.expect("accept");
            let mut framed = Framed::new(sock, RemotingCodec::default());
            let first = framed.next().await.expect("frame").expect("decodes");
            let second = framed.next().await.expect("frame").expect("decodes");
            tokio::time::sleep(Duration::from_millis(600)).await;
            framed.send(answer(&first, ResponseCode::Success)).await.expect("send");
            framed.send(answer(&second, ResponseCode::Success)).await.expect("send");
            let _ = framed.next().await;
        });
        let client = Client::with_config(&addr.to_string(), config(300)).expect("client");
        let started = std::time::Instant::now();
        let err = client.invoke(req_i(&client, 0)).await.expect_err("no answer in time");
        assert!(matches!(err, Error::Timeout { code: 106, .. }), "{err:?}");
        assert!(err.is_transport());
        assert!(started.elapsed() >= Duration::from_millis(300));
        let long = client.pinned(&addr.to_string());
        let (_, resp) =
            long.invoke_timeout(req_i(&long, 1), Duration::from_secs(5)).await.expect("answered");
        assert_eq!(
            resp.remark.as_deref(),
            Some("1"),
            "the late answer to request 0 must not complete request 1"
        );
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn oneway_sets_flag_and_waits_for_nothing() {
    tokio::time::timeout(LIMIT, async {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (addr, _) = serve(move |req| {
            let _ = tx.send(req.clone());
            None
        })
        .await;
        let client = Client::new(&addr.to_string()).expect("client");
        client.invoke_oneway(client.request(RequestCode::BrokerHeartbeat)).await.expect("queued");
        let seen = rx.recv().await.expect("server got it");
        assert_eq!(seen.code, 904);
        assert!(seen.is_oneway());
        assert!(!seen.is_response());
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn next_call_reconnects_after_the_server_closed_the_connection() {
    tokio::time::timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            // Each connection answers one request and is then closed by the server.
            while let Ok((sock, _)) = listener.accept().await {
                let mut framed = Framed::new(sock, RemotingCodec::default());
                if let Some(Ok(req)) = framed.next().await {
                    let _ = framed.send(answer(&req, ResponseCode::Success)).await;
                }
            }
        });
        let client = Client::new(&addr.to_string()).expect("client");
        let a = addr.to_string();
        client.invoke(req_i(&client, 1)).await.expect("first answered");
        client.connection_closed(&a).await;
        let (_, resp) =
            client.invoke(req_i(&client, 2)).await.expect("second answered on a new connection");
        assert_eq!(resp.remark.as_deref(), Some("2"));
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn pending_request_fails_when_the_connection_breaks() {
    tokio::time::timeout(LIMIT, async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (sock, _) = listener.accept().await.expect("accept");
            let mut framed = Framed::new(sock, RemotingCodec::default());
            let _ = framed.next().await;
            drop(framed); // close without answering
        });
        let client = Client::with_config(&addr.to_string(), config(10_000)).expect("client");
        let err = client.invoke(req_i(&client, 1)).await.expect_err("connection closed");
        assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn unreachable_nameserver_fails_over_to_the_next() {
    tokio::time::timeout(LIMIT, async {
        let (good, _) = serve(|req| Some(answer(req, ResponseCode::Success))).await;
        let dead = dead_addr().await;
        for list in [format!("{dead};{good}"), format!("{good};{dead}")] {
            let client = Client::new(&list).expect("client");
            for i in 0..3 {
                let (from, _) =
                    client.invoke(req_i(&client, i)).await.expect("answered by the live one");
                assert_eq!(from, good.to_string());
            }
        }
        let pinned =
            Client::new(&format!("{dead};{good}")).expect("client").pinned(&dead.to_string());
        let err = pinned.invoke(req_i(&pinned, 0)).await.expect_err("pinned to a dead address");
        assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn silent_nameserver_fails_over_after_its_timeout() {
    tokio::time::timeout(LIMIT, async {
        let (silent, _) = serve(|_| None).await;
        let (good, _) = serve(|req| Some(answer(req, ResponseCode::Success))).await;
        let client = Client::with_config(&format!("{silent};{good}"), config(200)).expect("client");
        for i in 0..2 {
            let (from, _) = client.invoke(req_i(&client, i)).await.expect("answered");
            assert_eq!(from, good.to_string());
        }
    })
    .await
    .expect("test finished in time");
}

#[tokio::test]
async fn server_error_is_returned_with_code_and_remark_without_fail_over() {
    tokio::time::timeout(LIMIT, async {
        let (refusing, refusing_count) = serve(|req| {
            Some(
                RemotingCommand::response(ResponseCode::SystemError, Some("disable".into()))
                    .respond_to(req),
            )
        })
        .await;
        let (good, good_count) = serve(|req| Some(answer(req, ResponseCode::Success))).await;
        // Pinned to the refusing one so the start index does not matter.
        let client = Client::new(&format!("{refusing};{good}"))
            .expect("client")
            .pinned(&refusing.to_string());
        let err = client.all_topic_list().await.expect_err("SYSTEM_ERROR");
        assert_eq!(err.code(), Some(1));
        assert_eq!(err.remark(), Some("disable"));
        assert!(!err.is_transport());
        // Unpinned: a server error is final, whichever nameserver answered.
        let client = Client::new(&format!("{refusing};{good}")).expect("client");
        let _ = client.all_topic_list().await;
        assert_eq!(refusing_count.load(Ordering::SeqCst) + good_count.load(Ordering::SeqCst), 2);
    })
    .await
    .expect("test finished in time");
}

/// A fake controller that names itself leader and answers CONTROLLER_ELECT_MASTER with 2007
/// (not leader) `refusals` times before electing. Counts metadata look-ups and elections.
async fn moving_leader(refusals: usize) -> (SocketAddr, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let me = Arc::new(std::sync::OnceLock::<String>::new());
    let (lookups, elections) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (who, l, e) = (me.clone(), lookups.clone(), elections.clone());
    let (addr, _) = serve(move |req| {
        let resp = if req.code == i32::from(RequestCode::ControllerGetMetadataInfo) {
            l.fetch_add(1, Ordering::SeqCst);
            RemotingCommand::response(ResponseCode::Success, None).with_header(
                &remoting::headers::GetMetaDataResponseHeader {
                    controller_leader_address: who.get().cloned(),
                    ..Default::default()
                },
            )
        } else if e.fetch_add(1, Ordering::SeqCst) < refusals {
            RemotingCommand::response(ResponseCode::ControllerNotLeader, None)
        } else {
            RemotingCommand::response(ResponseCode::Success, None)
                .with_header(&remoting::headers::ElectMasterResponseHeader {
                    master_broker_id: Some(2),
                    ..Default::default()
                })
                .with_body(b"{}".to_vec())
        };
        Some(resp.respond_to(req))
    })
    .await;
    me.set(addr.to_string()).expect("set once");
    (addr, lookups, elections)
}

#[tokio::test]
async fn a_controller_command_follows_the_leader_when_it_moves() {
    tokio::time::timeout(LIMIT, async {
        let (addr, lookups, elections) = moving_leader(2).await;
        let client = Client::new(&addr.to_string()).expect("client");
        let (h, _) = client
            .on_controller_leader(|l| async move { l.elect_master("c", "b", 2).await })
            .await
            .expect("elected on the third attempt");
        assert_eq!(h.master_broker_id, Some(2));
        assert_eq!(elections.load(Ordering::SeqCst), 3);
        // The leader is looked up again before each attempt.
        assert_eq!(lookups.load(Ordering::SeqCst), 3);

        // A leader that never settles: the 2007 comes back after the last attempt.
        let (addr, lookups, elections) = moving_leader(usize::MAX).await;
        let client = Client::new(&addr.to_string()).expect("client");
        let started = std::time::Instant::now();
        let wait = Duration::from_millis(1200);
        let err = client
            .on_controller_leader_within(wait, |l| async move { l.elect_master("c", "b", 2).await })
            .await
            .expect_err("never elected");
        assert!(matches!(err, Error::Server { code: 2007, .. }), "{err:?}");
        // It gives up before the wait is over rather than sleep past it ...
        assert!(started.elapsed() < wait, "{:?}", started.elapsed());
        // ... having looked the leader up again before each attempt, half a second apart (at
        // 0, 0.5 and 1.0 s; a slow machine may fit only two).
        let (tried, looked) = (elections.load(Ordering::SeqCst), lookups.load(Ordering::SeqCst));
        assert!((2..=3).contains(&tried) && looked == tried, "{tried} {looked}");
        // The default waits out an election at the default timeouts on a busy machine.
        assert!(client::LEADER_WAIT >= Duration::from_secs(6));
    })
    .await
    .expect("test finished in time");
}
