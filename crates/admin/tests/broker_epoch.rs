//! `mqadmin getBrokerEpoch` against fake controller-mode brokers (each answering
//! GET_BROKER_EPOCH_CACHE with the body a real 5.5.0 broker sends) registered in one of our
//! nameservers: the brokers of `-b` and `-c` come from its cluster info and the output is
//! Java's, line for line.

mod common;

use client::BrokerIdentity;
use common::{stdout, Net};
use futures::{SinkExt, StreamExt};
use remoting::{RemotingCodec, RemotingCommand, RequestCode, ResponseCode};
use tokio_util::codec::Framed;

/// A broker that answers GET_BROKER_EPOCH_CACHE with `answer` (code, remark, body) and
/// anything else with SYSTEM_ERROR; its address.
fn fake_broker(net: &Net, answer: (ResponseCode, Option<&str>, Option<String>)) -> String {
    let (code, remark, body) = answer;
    let remark = remark.map(str::to_owned);
    net.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let (remark, body) = (remark.clone(), body.clone());
                tokio::spawn(async move {
                    let mut framed = Framed::new(sock, RemotingCodec::default());
                    while let Some(Ok(req)) = framed.next().await {
                        let resp = if req.code == RequestCode::GetBrokerEpochCache.to_i32() {
                            let resp = RemotingCommand::response(code, remark.clone());
                            match &body {
                                Some(b) => resp.with_body(b.clone().into_bytes()),
                                None => resp,
                            }
                        } else {
                            RemotingCommand::response(ResponseCode::SystemError, None)
                        };
                        if framed.send(resp.respond_to(&req)).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    })
}

/// The body of a real broker's answer: fastjson, keys sorted, the current epoch open-ended
/// (`Long.MAX_VALUE`).
fn epoch_body(cluster: &str, name: &str, id: i64, epochs: &[(i32, i64)], max: i64) -> String {
    let list: Vec<String> = epochs
        .iter()
        .enumerate()
        .map(|(i, (epoch, start))| {
            let end = epochs.get(i + 1).map_or(i64::MAX, |next| next.1);
            format!(r#"{{"endOffset":{end},"epoch":{epoch},"startOffset":{start}}}"#)
        })
        .collect();
    format!(
        r#"{{"brokerId":{id},"brokerName":"{name}","clusterName":"{cluster}","epochList":[{}],"maxOffset":{max}}}"#,
        list.join(",")
    )
}

fn ok(body: String) -> (ResponseCode, Option<&'static str>, Option<String>) {
    (ResponseCode::Success, None, Some(body))
}

/// broker-a (master 0 and slave 1, two epochs) and broker-b (master 0, one epoch) of
/// DefaultCluster; their addresses.
fn two_groups(net: &Net) -> (String, String, String) {
    let a0 = fake_broker(
        net,
        ok(epoch_body("DefaultCluster", "broker-a", 0, &[(1, 0), (2, 1024)], 2048)),
    );
    let a1 = fake_broker(
        net,
        ok(epoch_body("DefaultCluster", "broker-a", 1, &[(1, 0), (2, 1024)], 1536)),
    );
    let b0 = fake_broker(net, ok(epoch_body("DefaultCluster", "broker-b", 0, &[(3, 0)], 77)));
    for (name, id, addr) in [("broker-a", 0, &a0), ("broker-a", 1, &a1), ("broker-b", 0, &b0)] {
        net.register_identity(
            0,
            BrokerIdentity::new("DefaultCluster", name, id, addr),
            &[("TopicA", 1)],
            None,
        );
    }
    (a0, a1, b0)
}

fn broker_a_text(a0: &str, a1: &str) -> String {
    format!(
        "\n#clusterName\tDefaultCluster\n#brokerName\tbroker-a\n#brokerAddr\t{a0}\n#brokerId\t0\
         \n#Epoch: EpochEntry{{epoch=1, startOffset=0, endOffset=1024}}\
         \n#Epoch: EpochEntry{{epoch=2, startOffset=1024, endOffset=2048}}\n\
         \n#clusterName\tDefaultCluster\n#brokerName\tbroker-a\n#brokerAddr\t{a1}\n#brokerId\t1\
         \n#Epoch: EpochEntry{{epoch=1, startOffset=0, endOffset=1024}}\
         \n#Epoch: EpochEntry{{epoch=2, startOffset=1024, endOffset=1536}}\n"
    )
}

#[test]
fn by_broker_name_prints_every_member_of_the_group_like_java() {
    let net = Net::start(1);
    let (a0, a1, _) = two_groups(&net);
    let out = net.mqadmin().args(["getBrokerEpoch", "-b", "broker-a"]).output().expect("runs");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), broker_a_text(&a0, &a1));

    let unknown = net.mqadmin().args(["getBrokerEpoch", "-b", "nope"]).output().expect("runs");
    assert!(unknown.status.success());
    assert_eq!(stdout(&unknown), "", "Java prints nothing for a broker name nobody registered");
}

#[test]
fn by_cluster_prints_every_group_and_names_an_unknown_cluster() {
    let net = Net::start(1);
    let (a0, a1, b0) = two_groups(&net);
    let out =
        net.mqadmin().args(["getBrokerEpoch", "-c", "DefaultCluster"]).output().expect("runs");
    assert!(out.status.success(), "{out:?}");
    let b = format!(
        "\n#clusterName\tDefaultCluster\n#brokerName\tbroker-b\n#brokerAddr\t{b0}\n#brokerId\t0\
         \n#Epoch: EpochEntry{{epoch=3, startOffset=0, endOffset=77}}\n"
    );
    assert_eq!(stdout(&out), broker_a_text(&a0, &a1) + &b);

    let unknown = net.mqadmin().args(["getBrokerEpoch", "-c", "Other"]).output().expect("runs");
    assert!(unknown.status.success());
    assert_eq!(
        stdout(&unknown),
        "[error] Make sure the specified clusterName exists or the name server connected to is correct."
    );
}

#[test]
fn json_lists_each_broker_with_its_current_epoch_closed_at_max_offset() {
    let net = Net::start(1);
    let (a0, a1, _) = two_groups(&net);
    let out =
        net.mqadmin().args(["getBrokerEpoch", "-b", "broker-a", "--json"]).output().expect("runs");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v[0]["brokerAddr"], a0.as_str());
    assert_eq!(v[1]["brokerAddr"], a1.as_str());
    assert_eq!(v[1]["brokerId"], 1);
    assert_eq!(v[1]["maxOffset"], 1536);
    assert_eq!(
        v[1]["epochList"],
        serde_json::json!([
            {"epoch": 1, "startOffset": 0, "endOffset": 1024},
            {"epoch": 2, "startOffset": 1024, "endOffset": 1536},
        ])
    );
}

#[test]
fn a_broker_not_in_controller_mode_fails_the_command_with_its_remark() {
    let net = Net::start(1);
    let plain = fake_broker(
        &net,
        (ResponseCode::SystemError, Some("this request only for controllerMode "), None),
    );
    net.register_identity(
        0,
        BrokerIdentity::new("Plain", "broker-p", 0, &plain),
        &[("TopicA", 1)],
        None,
    );
    let out = net.mqadmin().args(["getBrokerEpoch", "-b", "broker-p"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("getBrokerEpoch command failed"), "{err}");
    assert!(err.contains("this request only for controllerMode"), "{err}");

    let neither = net.mqadmin().arg("getBrokerEpoch").output().expect("runs");
    assert_eq!(neither.status.code(), Some(2));
}
