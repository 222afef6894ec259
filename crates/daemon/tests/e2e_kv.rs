//! End-to-end KV config over TCP: 100 PUT_KV_CONFIG, 101 GET_KV_CONFIG, 102 DELETE_KV_CONFIG,
//! 219 GET_KVLIST_BY_NAMESPACE — codes, exact headers (errata C), remarks and bodies.

mod common;

use common::{body_text, frame_body, header_json, plain_success_header, request, TestServer};
use remoting::{RemotingCommand, RequestCode};

fn get(ns: &str, key: &str) -> RemotingCommand {
    request(RequestCode::GetKvConfig, &[("namespace", ns), ("key", key)], None)
}

#[tokio::test]
async fn put_answers_plain_success_and_get_returns_value_in_ext_fields() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let put = raw
        .call(request(
            RequestCode::PutKvConfig,
            &[("namespace", "ns"), ("key", "k"), ("value", "v1")],
            None,
        ))
        .await;
    assert_eq!(header_json(&put), plain_success_header(1));
    assert!(frame_body(&put).is_empty());

    let found = raw.call(get("ns", "k")).await;
    // errata C "GET_KV_CONFIG found", 122 bytes.
    assert_eq!(
        header_json(&found),
        r#"{"code":0,"extFields":{"value":"v1"},"flag":1,"language":"JAVA","opaque":2,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(header_json(&found).len(), 122);
    assert!(frame_body(&found).is_empty());
}

#[tokio::test]
async fn put_overwrites_existing_value() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.put_kv("ns", "k", "old").await;
    conn.put_kv("ns", "k", "new").await;
    let resp = conn.call(get("ns", "k")).await;
    assert_eq!(resp.ext("value"), Some("new"));
}

#[tokio::test]
async fn put_without_namespace_or_key_is_system_error_without_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    for ext in
        [&[("key", "k"), ("value", "v")][..], &[("namespace", "ns"), ("value", "v")][..], &[][..]]
    {
        let resp = conn.call(request(RequestCode::PutKvConfig, ext, None)).await;
        assert_eq!(resp.code, 1, "{ext:?}");
        assert_eq!(resp.remark.as_deref(), Some("namespace or key is null"));
        assert!(resp.ext_fields.is_none(), "framework-built error: no extFields");
    }
    // Nothing was stored under the names that were given.
    let resp = conn.call(get("ns", "k")).await;
    assert_eq!(resp.code, 22);
}

#[tokio::test]
async fn get_of_missing_key_is_query_not_found_with_empty_ext_fields() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let _ = raw.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    let missing = raw.call(get("ns", "k")).await;
    // errata C "GET_KV_CONFIG not found", 159 bytes, opaque 2.
    assert_eq!(
        header_json(&missing),
        r#"{"code":22,"extFields":{},"flag":1,"language":"JAVA","opaque":2,"remark":"No config item, Namespace: ns Key: k","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(header_json(&missing).len(), 159);
    assert!(frame_body(&missing).is_empty());
}

#[tokio::test]
async fn get_without_namespace_prints_null_in_remark() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::GetKvConfig, &[("key", "k")], None)).await;
    assert_eq!(resp.code, 22);
    assert_eq!(resp.remark.as_deref(), Some("No config item, Namespace: null Key: k"));
    assert_eq!(resp.ext_fields.as_ref().map(|e| e.len()), Some(0));
}

#[tokio::test]
async fn delete_removes_key_but_keeps_empty_namespace() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.put_kv("ns", "k", "v").await;
    let del = conn
        .call(request(RequestCode::DeleteKvConfig, &[("namespace", "ns"), ("key", "k")], None))
        .await;
    assert_eq!(del.code, 0);
    assert!(del.remark.is_none() && del.ext_fields.is_none() && del.body.is_none());

    assert_eq!(conn.call(get("ns", "k")).await.code, 22);
    let list =
        conn.call(request(RequestCode::GetKvlistByNamespace, &[("namespace", "ns")], None)).await;
    assert_eq!(list.code, 0);
    assert_eq!(body_text(&list), r#"{"table":{}}"#);
}

#[tokio::test]
async fn delete_of_unknown_namespace_or_without_header_is_success() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    for ext in [&[("namespace", "nope"), ("key", "k")][..], &[][..]] {
        let del = conn.call(request(RequestCode::DeleteKvConfig, ext, None)).await;
        assert_eq!(del.code, 0, "{ext:?}");
    }
}

#[tokio::test]
async fn list_namespace_returns_kv_table_without_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.put_kv("ns", "key2", "value2").await;
    conn.put_kv("ns", "key1", "value1").await;
    conn.put_kv("other", "x", "y").await;
    let list =
        conn.call(request(RequestCode::GetKvlistByNamespace, &[("namespace", "ns")], None)).await;
    assert_eq!(list.code, 0);
    assert!(list.remark.is_none());
    assert!(list.ext_fields.is_none(), "no header class for 219");
    // TV-24.
    assert_eq!(body_text(&list), r#"{"table":{"key1":"value1","key2":"value2"}}"#);
}

#[tokio::test]
async fn list_of_unknown_namespace_is_query_not_found_without_ext_fields() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let resp =
        raw.call(request(RequestCode::GetKvlistByNamespace, &[("namespace", "nope")], None)).await;
    assert_eq!(
        header_json(&resp),
        r#"{"code":22,"flag":1,"language":"JAVA","opaque":1,"remark":"No config item, Namespace: nope","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let resp = raw.call(request(RequestCode::GetKvlistByNamespace, &[], None)).await;
    assert!(header_json(&resp).contains(r#""remark":"No config item, Namespace: null""#));
}

#[tokio::test]
async fn kv_survives_an_in_process_restart_on_the_same_file() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4").await;
    drop(conn);
    let dir = server.stop().await;
    let kv_file = std::fs::read_to_string(dir.path().join("kvConfig.json")).expect("kv file");
    assert_eq!(kv_file, r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}"#);

    let server = TestServer::start_in(dir, |_| {}).await;
    let mut conn = server.connect().await;
    let resp = conn.call(get("ORDER_TOPIC_CONFIG", "TopicTest")).await;
    assert_eq!(resp.ext("value"), Some("broker-a:4"));
}

#[tokio::test]
async fn put_without_value_stores_null_which_reads_as_not_found() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let put = conn
        .call(request(RequestCode::PutKvConfig, &[("namespace", "ns"), ("key", "k")], None))
        .await;
    assert_eq!(put.code, 0, "a null value is accepted");
    let resp = conn.call(get("ns", "k")).await;
    assert_eq!(resp.code, 22);
    assert_eq!(resp.remark.as_deref(), Some("No config item, Namespace: ns Key: k"));
    let list =
        conn.call(request(RequestCode::GetKvlistByNamespace, &[("namespace", "ns")], None)).await;
    assert_eq!(list.code, 0, "the namespace exists");
    assert_eq!(body_text(&list), r#"{"table":{}}"#, "null values are left out");
}
