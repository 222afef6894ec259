//! A REGISTER_BROKER body decoded from its skim (`Skimmed::decode_whole`, #25: a broker's first
//! registration at a fleet's cold start) is the body the full decoder gives, for every body it
//! decodes; a broker's body is always decoded that way; bodies it cannot take are left to the
//! full decoder.

use proptest::prelude::*;
use remoting::body::compressed::BodyLimits;
use remoting::body::difference::{RecentTables, Skimmed, RECENT_TABLES, RECENT_TOPICS};
use remoting::body::register_digest::Xxh3;
use remoting::body::RegisterBrokerBody;
use remoting::{version, RemotingCommand, RequestCode};

fn request(body: &str, version: i32) -> RemotingCommand {
    let mut request =
        RemotingCommand::request(RequestCode::RegisterBroker).with_body(body.to_owned());
    request.version = version;
    request
}

/// Decoded from the skim (`None` when it is not), and by the full decoder.
fn both(
    body: &str,
    version: i32,
    limits: BodyLimits,
) -> (Option<RegisterBrokerBody>, Option<RegisterBrokerBody>) {
    let request = request(body, version);
    let skimmed = Skimmed::new(&request, &Xxh3::new(), false, None);
    let whole =
        skimmed.and_then(|s| s.decode_whole(&request, limits, &mut RecentTables::default()));
    let full = RegisterBrokerBody::decode_limited(body.as_bytes(), false, version, limits).ok();
    (whole, full)
}

const V5: i32 = version::V5_0_0;

fn wrapped(table: &str) -> String {
    format!(
        r#"{{"filterServerList":["10.0.0.1:1"],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":3,"stateVersion":1,"timestamp":9}},"topicConfigTable":{table},"topicQueueMappingInfoMap":{{}}}}}}"#
    )
}

const TOPIC: &str = r#"{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"NAME","topicSysFlag":0,"writeQueueNums":8}"#;

fn entry(key: &str, name: &str) -> String {
    format!(r#""{key}":{}"#, TOPIC.replace("NAME", name))
}

#[test]
fn a_brokers_body_is_decoded_from_its_skim_as_the_full_decoder_does() {
    let table = format!(
        "{{{}}}",
        (0..500).map(|i| entry(&format!("t{i}"), &format!("t{i}"))).collect::<Vec<_>>().join(",")
    );
    for (body, version) in [(wrapped(&table), V5), (wrapped("{}"), V5)] {
        let (whole, full) = both(&body, version, BodyLimits::default());
        assert!(whole.is_some(), "decoded from the skim");
        assert_eq!(whole, full);
    }
    // A pre-V3_0_11 broker sends the bare wrapper.
    let bare = format!(r#"{{"dataVersion":{{"counter":1}},"topicConfigTable":{table}}}"#);
    let (whole, full) = both(&bare, version::V3_0_11 - 1, BodyLimits::default());
    assert!(whole.is_some());
    assert_eq!(whole, full);
}

/// A repeated key keeps its last entry, a topic named otherwise than its key keeps its name,
/// a nameless topic and an entry of fastjson's lenient forms decode as the full decoder has them.
#[test]
fn odd_tables_decode_as_the_full_decoder_has_them() {
    let tables = [
        format!("{{{},{}}}", entry("a", "first"), entry("a", "second")),
        format!("{{{}}}", entry("a", "b")),
        r#"{"a":{"perm":"6","order":"true","readQueueNums":8.0}}"#.to_owned(),
        r#"{"a":{"topicName":null}}"#.to_owned(),
        r#"{"a":{}, "b" : { "topicName" : "b" } }"#.to_owned(),
        r#"{"a":{"topicName":"x\"y"}}"#.to_owned(),
        r#"{"é":{"topicName":"é"}}"#.to_owned(),
    ];
    for table in tables {
        let (whole, full) = both(&wrapped(&table), V5, BodyLimits::default());
        assert!(whole.is_some(), "{table}");
        assert_eq!(whole, full, "{table}");
    }
}

/// What the full decoder refuses is never decoded from the skim; nor is a body over the topic
/// cap; a key with a control character (which the lenient decoder takes) is left to it.
#[test]
fn what_the_full_decoder_refuses_is_left_to_it() {
    for table in [
        r#"{"a":{"perm":"six"}}"#,
        r#"{"a":{"perm":6,"perm":7}}"#,
        r#"{"a":{"attributes":{"k":1}}}"#,
    ] {
        let (whole, full) = both(&wrapped(table), V5, BodyLimits::default());
        assert_eq!((whole, full), (None, None), "{table}");
    }
    let outside = wrapped("{}").replace(r#""counter":3"#, r#""counter":"x""#);
    assert_eq!(both(&outside, V5, BodyLimits::default()), (None, None));
    let three = format!("{{{},{},{}}}", entry("a", "a"), entry("b", "b"), entry("c", "c"));
    let limits = BodyLimits { max_topics: 2, ..BodyLimits::default() };
    let (whole, full) = both(&wrapped(&three), V5, limits);
    assert_eq!((whole, full), (None, None), "over the cap: the full decoder's error");
    let (whole, full) = both(&wrapped("{\"a\tb\":{}}"), V5, BodyLimits::default());
    assert!(whole.is_none() && full.is_some());
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(TOPIC.replace("NAME", "n")),
        "[a-z]{1,3}".prop_map(|n| TOPIC.replace("NAME", &n)),
        Just(r#"{"perm":"6"}"#.to_owned()),
        Just(r#"{"perm":"x"}"#.to_owned()),
        Just(r#"{"topicName":"a\u0041"}"#.to_owned()),
        Just("{}".to_owned()),
        Just(r#"{"attributes":{"+k":"v"},"topicName":"q"}"#.to_owned()),
    ]
}

proptest! {
    /// Any table of plain and odd entries (keys repeated, names unlike their keys): decoded from
    /// the skim only as the full decoder decodes it.
    #[test]
    fn decoded_from_the_skim_only_as_the_full_decoder_decodes(
        entries in prop::collection::vec(("[a-c]{1,2}", value()), 0..12),
        blank in prop::sample::select(vec!["", " ", "\n"]),
    ) {
        let table: Vec<String> = entries.iter().map(|(k, v)| format!("{blank}\"{k}\"{blank}:{blank}{v}")).collect();
        let (whole, full) = both(&wrapped(&format!("{{{}}}", table.join(","))), V5, BodyLimits::default());
        if whole.is_some() {
            prop_assert_eq!(whole, full);
        }
    }
}

/// `body` decoded from its skim with `recent`.
fn decoded_with(body: &str, recent: &mut RecentTables) -> RegisterBrokerBody {
    let request = request(body, V5);
    let skimmed = Skimmed::new(&request, &Xxh3::new(), false, None).expect("skimmed");
    skimmed.decode_whole(&request, BodyLimits::default(), recent).expect("decoded")
}

fn full(body: &str) -> RegisterBrokerBody {
    RegisterBrokerBody::decode_limited(body.as_bytes(), false, V5, BodyLimits::default())
        .expect("decodes")
}

/// The second broker of a pair sends the first one's table (in another order, with its own
/// DataVersion), a few bodies later: it is that very table, and still what the full decoder
/// gives; a table with one entry changed is decoded afresh; tables are let go once idle.
#[test]
fn a_table_sent_again_shares_the_one_decoded_a_moment_before() {
    let names: Vec<String> = (0..300).map(|i| format!("t{i}")).collect();
    let table = |order: &mut dyn Iterator<Item = &String>, perm_of_t7: u8| {
        let entries: Vec<String> = order
            .map(|n| {
                let e = entry(n, n);
                if n == "t7" {
                    e.replace(r#""perm":6"#, &format!(r#""perm":{perm_of_t7}"#))
                } else {
                    e
                }
            })
            .collect();
        format!("{{{}}}", entries.join(","))
    };
    let first = wrapped(&table(&mut names.iter(), 6));
    let second =
        wrapped(&table(&mut names.iter().rev(), 6)).replace(r#""counter":3"#, r#""counter":4"#);
    let changed = wrapped(&table(&mut names.iter(), 2));
    let mut recent = RecentTables::default();
    let a = decoded_with(&first, &mut recent);
    let c = decoded_with(&changed, &mut recent);
    let b = decoded_with(&second, &mut recent);
    let table_of =
        |b: &RegisterBrokerBody| b.topic_config_serialize_wrapper.topic_config_table.clone();
    assert!(std::sync::Arc::ptr_eq(&table_of(&a), &table_of(&b)), "shared");
    assert_eq!(b, full(&second));
    assert_eq!(b.topic_config_serialize_wrapper.data_version.counter, 4, "its own version");
    assert!(!std::sync::Arc::ptr_eq(&table_of(&a), &table_of(&c)));
    assert_eq!(c, full(&changed));
    assert_eq!(recent.len(), 2);
    recent.expire(std::time::Duration::from_secs(3600));
    assert_eq!(recent.len(), 2, "not idle yet");
    recent.expire(std::time::Duration::ZERO);
    assert!(recent.is_empty(), "let go once idle");
    let again = decoded_with(&first, &mut recent);
    assert!(!std::sync::Arc::ptr_eq(&table_of(&a), &table_of(&again)), "decoded afresh");
    assert_eq!(again, full(&first));
}

/// It holds at most `RECENT_TABLES` tables, and `RECENT_TOPICS` topics in all.
#[test]
fn the_tables_kept_are_bounded() {
    let mut recent = RecentTables::default();
    for i in 0..RECENT_TABLES + 3 {
        decoded_with(
            &wrapped(&format!("{{{}}}", entry(&format!("t{i}"), &format!("t{i}")))),
            &mut recent,
        );
    }
    assert_eq!(recent.len(), RECENT_TABLES);
    let big = |k: usize| {
        let n = RECENT_TOPICS / 2 + 1;
        let entries: Vec<String> =
            (0..n).map(|i| entry(&format!("b{k}-{i}"), &format!("b{k}-{i}"))).collect();
        wrapped(&format!("{{{}}}", entries.join(",")))
    };
    decoded_with(&big(0), &mut recent);
    decoded_with(&big(1), &mut recent);
    assert_eq!(recent.len(), 1, "two halves and more do not fit");
}

/// A key sent twice keeps its last entry, which depends on the order: a table with a repeated
/// key is never shared, though another body holds the same entries.
#[test]
fn a_table_with_a_repeated_key_is_not_shared() {
    let (x, y) = (entry("t1", "t1"), entry("t1", "t1").replace(r#""perm":6"#, r#""perm":2"#));
    let first = wrapped(&format!("{{{x},{y}}}"));
    let second = wrapped(&format!("{{{y},{x}}}"));
    let mut recent = RecentTables::default();
    let a = decoded_with(&first, &mut recent);
    let b = decoded_with(&second, &mut recent);
    assert_eq!((a, b.clone()), (full(&first), full(&second)));
    assert_eq!(b.topic_config_serialize_wrapper.topic_config_table["t1"].perm, 6, "the last entry");
}
