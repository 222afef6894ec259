//! End-to-end config requests over TCP: 318 UPDATE_NAMESRV_CONFIG and 319 GET_NAMESRV_CONFIG —
//! codes, remarks, the black list, the properties body and persistence to `configStorePath`.

mod common;

use common::{body_text, header_json, plain_success_header, request, Conn, TestServer};
use remoting::{RemotingCommand, RequestCode};

fn update(properties: &[u8]) -> RemotingCommand {
    request(RequestCode::UpdateNamesrvConfig, &[], Some(properties))
}

async fn config_text(conn: &mut Conn) -> String {
    let resp = conn.call(request(RequestCode::GetNamesrvConfig, &[], None)).await;
    assert_eq!(resp.code, 0);
    assert!(resp.ext_fields.is_none() && resp.remark.is_none());
    body_text(&resp)
}

fn value_of(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

#[tokio::test]
async fn get_config_is_sorted_key_value_lines_of_every_set_key() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(request(RequestCode::GetNamesrvConfig, &[], None)).await;
    assert_eq!(header_json(&frame), plain_success_header(1));
    let text = String::from_utf8(common::frame_body(&frame).to_vec()).expect("utf-8");
    assert!(text.ends_with('\n'), "{text}");
    let keys: Vec<&str> =
        text.lines().map(|l| l.split_once('=').expect("key=value line").0).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted, "sorted by key");
    let kv_path = server.dir.path().join("kvConfig.json");
    for (key, value) in [
        ("enableAllTopicList", "true".to_owned()),
        ("enableTopicList", "true".to_owned()),
        ("orderMessageEnable", "false".to_owned()),
        ("scanNotActiveBrokerInterval", "5000".to_owned()),
        ("waitSecondsForService", "45".to_owned()),
        ("serverChannelMaxIdleTimeSeconds", "120".to_owned()),
        ("kvConfigPath", kv_path.to_string_lossy().into_owned()),
        ("configBlackList", "configBlackList;configStorePath;kvConfigPath".to_owned()),
    ] {
        assert_eq!(value_of(&text, key).as_deref(), Some(value.as_str()), "{key}");
    }
}

#[tokio::test]
async fn update_config_applies_persists_and_is_read_back() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw
        .call(update(
            b"# a comment\norderMessageEnable = true\nwaitSecondsForService:7\nnotAKnownKey=1\n",
        ))
        .await;
    assert_eq!(header_json(&frame), plain_success_header(1));

    let mut conn = server.connect().await;
    let text = config_text(&mut conn).await;
    assert_eq!(value_of(&text, "orderMessageEnable").as_deref(), Some("true"));
    assert_eq!(value_of(&text, "waitSecondsForService").as_deref(), Some("7"));
    assert_eq!(value_of(&text, "notAKnownKey"), None, "unknown keys are dropped");

    let stored = std::fs::read_to_string(server.dir.path().join("namesrv.properties"))
        .expect("configStorePath written");
    assert_eq!(stored, text, "the file holds what 319 answers");
}

#[tokio::test]
async fn update_config_without_body_changes_nothing() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let before = config_text(&mut conn).await;
    let resp = conn.call(request(RequestCode::UpdateNamesrvConfig, &[], None)).await;
    assert_eq!(resp.code, 0);
    assert!(resp.remark.is_none() && resp.ext_fields.is_none());
    assert_eq!(config_text(&mut conn).await, before);
    assert!(!server.dir.path().join("namesrv.properties").exists());
}

#[tokio::test]
async fn update_of_black_listed_key_is_no_permission() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let mut conn = server.connect().await;
    let before = config_text(&mut conn).await;
    for (i, key) in
        ["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome"].iter().enumerate()
    {
        let body = format!("orderMessageEnable=true\n{key}=/tmp/x\n");
        let frame = raw.call(update(body.as_bytes())).await;
        assert_eq!(
            header_json(&frame),
            format!(
                r#"{{"code":16,"flag":1,"language":"JAVA","opaque":{},"remark":"Can not update config in black list.","serializeTypeCurrentRPC":"JSON","version":479}}"#,
                i + 1
            ),
            "{key}"
        );
    }
    assert_eq!(config_text(&mut conn).await, before, "nothing applied");
}

#[tokio::test]
async fn configured_black_list_is_honoured_exactly() {
    let server = TestServer::start_with(|c| {
        c.config_black_list = "configBlackList;orderMessageEnable".to_owned();
    })
    .await;
    let mut conn = server.connect().await;
    let resp = conn.call(update(b"orderMessageEnable=true\n")).await;
    assert_eq!(resp.code, 16);
    assert_eq!(resp.remark.as_deref(), Some("Can not update config in black list."));
    // Case-sensitive match: a different spelling is not black-listed (and is an unknown key).
    let resp = conn.call(update(b"OrderMessageEnable=true\n")).await;
    assert_eq!(resp.code, 0);
    let text = config_text(&mut conn).await;
    assert_eq!(value_of(&text, "orderMessageEnable").as_deref(), Some("false"));
}

#[tokio::test]
async fn malformed_unicode_escape_is_string2properties_error() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(update(b"orderMessageEnable=\\uZZZZ\n")).await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":1,"flag":1,"language":"JAVA","opaque":1,"remark":"string2Properties error","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let frame = raw.call(update(b"a=\\u12")).await;
    assert!(header_json(&frame).contains(r#""remark":"string2Properties error""#));
}

#[tokio::test]
async fn garbage_that_parses_as_an_unknown_key_is_accepted_and_ignored() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let before = config_text(&mut conn).await;
    // §11 #4: "{key=value}" is key "{key" with value "value}".
    let resp = conn.call(update(b"{key=value}")).await;
    assert_eq!(resp.code, 0);
    assert_eq!(config_text(&mut conn).await, before);
}

/// #21 finding 2, over TCP with the exact payload: a literal backslash-n in a value (a newline
/// once parsed) is refused with SYSTEM_ERROR naming the key, and the `-c` file keeps no trace
/// of it, so nothing black-listed reaches the next start.
#[tokio::test]
async fn an_escaped_line_break_in_318_cannot_write_a_black_listed_key() {
    let server = TestServer::start().await;
    let path = server.dir.path().join("namesrv.properties");
    let before = std::fs::read(&path).ok();
    let mut conn = server.connect().await;
    let resp = conn
        .call(update(
            br"httpNamesrvAddr=1.2.3.4:9876\nauthenticationEnabled=false\nauthConfigPath=/x.yml",
        ))
        .await;
    assert_eq!(resp.code, 1, "SYSTEM_ERROR: {:?}", resp.remark);
    let remark = resp.remark.unwrap_or_default();
    assert!(remark.contains("httpNamesrvAddr") && remark.contains("line break"), "{remark}");
    assert_eq!(std::fs::read(&path).ok(), before, "the config file is untouched");
    let text = config_text(&mut conn).await;
    assert_eq!(value_of(&text, "httpNamesrvAddr"), None, "nothing applied");
    assert!(!text.contains("authenticationEnabled") && !text.contains("authConfigPath"), "{text}");

    // A value that needs escaping is stored escaped and read back as sent.
    let resp = conn.call(update(br"httpNamesrvAddr=10.0.0.1:9876;C\:\\ns\\b#1")).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let stored = std::fs::read_to_string(&path).expect("written");
    let reread = namesrv::Config::load(Some(&path)).expect("the stored file loads");
    assert_eq!(reread.get("httpNamesrvAddr").as_deref(), Some(r"10.0.0.1:9876;C:\ns\b#1"));
    assert!(stored.contains(r"httpNamesrvAddr=10.0.0.1:9876;C:\\ns\\b#1"), "{stored}");
}
