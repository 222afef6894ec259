//! The `mqadmin` binary against live nameservers: output shapes, every-nameserver commands,
//! `--json`, `nsDiff`, help and usage errors.

mod common;

use common::{mqadmin, stdout, Net};

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn help_lists_commands_and_every_command_has_help() {
    let out = mqadmin().arg("--help").output().expect("runs");
    assert!(out.status.success());
    let text = stdout(&out);
    for name in [
        "clusterList",
        "topicList",
        "topicRoute",
        "topicClusterList",
        "getNamesrvConfig",
        "updateNamesrvConfig",
        "updateKvConfig",
        "deleteKvConfig",
        "getKvConfig",
        "getKvListByNamespace",
        "wipeWritePerm",
        "addWritePerm",
        "deleteTopic",
        "updateOrderConf",
        "nsDiff",
    ] {
        assert!(text.contains(name), "{name} missing from help");
        let sub = mqadmin().args([name, "--help"]).output().expect("runs");
        assert_eq!(sub.status.code(), Some(0), "{name} --help");
        assert!(stdout(&sub).contains("-n, --namesrvAddr"), "{name} --help shows -n");
    }
    let route = stdout(&mqadmin().args(["topicRoute", "--help"]).output().expect("runs"));
    assert!(route.contains("-t, --topic <TOPIC>") && route.contains("-l, --list"), "{route}");
}

#[test]
fn bad_flags_are_usage_errors_with_exit_2() {
    // A port nothing listens on (a usage error must not need a nameserver).
    let dead =
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    for args in [
        &["topicRoute", "-x", "1"][..],
        &["topicRoute"],
        &["noSuchCommand"],
        &["updateOrderConf", "-t", "T", "-m", "upsert"],
        &["deleteTopic", "-t", "T"],
    ] {
        let out = mqadmin().args(args).args(["-n", &dead.to_string()]).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error:"), "{args:?}");
    }
    let no_addr = mqadmin().arg("clusterList").output().expect("runs");
    assert_eq!(no_addr.status.code(), Some(2));
}

#[test]
fn unreachable_nameserver_fails_with_exit_1() {
    let dead =
        std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let out = mqadmin().args(["clusterList", "-n", &dead.to_string()]).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("clusterList command failed"));
}

#[test]
fn cluster_list_prints_java_columns_and_json() {
    let net = Net::start(1);
    net.register(0, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)]);
    let out = net.mqadmin().arg("clusterList").output().expect("runs");
    assert!(out.status.success());
    let text = stdout(&out);
    let l = lines(&text);
    let header = format!(
        "{:<22}  {:<22}  {:<4}  {:<22} {:<16}  {:>16}  {:>30}  {:<22}  {:<11}  {:<12}  {:<8}  {:<10}",
        "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
        "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED"
    );
    assert_eq!(l[0], header);
    assert_eq!(l.len(), 2, "{text}");
    let cols: Vec<&str> = l[1].split_whitespace().collect();
    assert_eq!(&cols[..4], ["DefaultCluster", "broker-a", "0", "127.0.0.1:10911"]);
    assert!(l[1].starts_with(&format!(
        "{:<22}  {:<22}  {:<4}  {:<22} ",
        "DefaultCluster", "broker-a", "0", "127.0.0.1:10911"
    )));

    let other = stdout(&net.mqadmin().args(["clusterList", "-c", "Other"]).output().expect("runs"));
    assert_eq!(lines(&other).len(), 1, "only the header for an unknown cluster");

    let json = net.mqadmin().args(["clusterList", "--json"]).output().expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["brokerAddrTable"]["broker-a"]["brokerAddrs"]["0"], "127.0.0.1:10911");
    assert_eq!(v["clusterAddrTable"]["DefaultCluster"][0], "broker-a");
}

#[test]
fn topic_commands_print_like_java() {
    let net = Net::start(1);
    net.register(0, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)]);

    let list = stdout(&net.mqadmin().arg("topicList").output().expect("runs"));
    assert!(lines(&list).contains(&"TopicA"), "{list}");
    let by_cluster = stdout(&net.mqadmin().args(["topicList", "-c"]).output().expect("runs"));
    assert!(by_cluster.starts_with(&format!(
        "{:<20}  {:<48}  {:<48}\n",
        "#Cluster Name", "#Topic", "#Consumer Group"
    )));
    assert!(
        by_cluster.contains(&format!("{:<20}  {:<64}", "DefaultCluster", "TopicA")),
        "{by_cluster}"
    );

    let route = net.mqadmin().args(["topicRoute", "-t", "TopicA"]).output().expect("runs");
    assert!(route.status.success());
    let text = stdout(&route);
    assert!(
        text.starts_with(
            "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{0:\"127.0.0.1:10911\"\n\t\t\t},"
        ),
        "{text}"
    );
    assert!(text.contains("\t\"filterServerTable\":{},\n"), "{text}");
    assert!(text.contains("\t\t\t\"writeQueueNums\":4\n\t\t}\n\t]\n}\n"), "{text}");

    let table =
        stdout(&net.mqadmin().args(["topicRoute", "-t", "TopicA", "-l"]).output().expect("runs"));
    let l = lines(&table);
    assert_eq!(
        l[0],
        format!(
            "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}",
            "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"
        )
    );
    assert_eq!(
        l[1],
        format!(
            "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}",
            "DefaultCluster", "broker-a", "{0=127.0.0.1:10911}", 4, 4, 6
        )
    );
    assert_eq!(l[2], "-".repeat(158));
    assert_eq!(
        l[3],
        format!("{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}", "Total:", 1, "", 4, 4, "")
    );

    let json = net.mqadmin().args(["topicRoute", "-t", "TopicA", "--json"]).output().expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["queueDatas"][0]["writeQueueNums"], 4);

    let clusters =
        stdout(&net.mqadmin().args(["topicClusterList", "-t", "TopicA"]).output().expect("runs"));
    assert_eq!(clusters, "DefaultCluster\n");

    let missing = net.mqadmin().args(["topicRoute", "-t", "Nope"]).output().expect("runs");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("No topic route info"));
}

#[test]
fn kv_commands_apply_to_every_nameserver() {
    let net = Net::start(2);
    let out = net
        .mqadmin()
        .args(["updateKvConfig", "-s", "ns", "-k", "k", "-v", "v1"])
        .output()
        .expect("runs");
    assert_eq!(stdout(&out), "create or update kv config to namespace success.\n");
    for i in 0..2 {
        assert_eq!(
            net.block_on(net.client(i).get_kv_config("ns", "k")).expect("get").as_deref(),
            Some("v1")
        );
    }
    let get =
        stdout(&net.mqadmin().args(["getKvConfig", "-s", "ns", "-k", "k"]).output().expect("runs"));
    assert_eq!(get, "get kv config success, namespace: ns, key: k, value: v1.\n");
    let list =
        stdout(&net.mqadmin().args(["getKvListByNamespace", "-s", "ns"]).output().expect("runs"));
    assert_eq!(list, format!("{:<50}=  v1\n", "k"));
    let json =
        net.mqadmin().args(["getKvListByNamespace", "-s", "ns", "--json"]).output().expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["table"]["k"], "v1");

    let del = stdout(
        &net.mqadmin().args(["deleteKvConfig", "-s", "ns", "-k", "k"]).output().expect("runs"),
    );
    assert_eq!(del, "delete kv config from namespace success.\n");
    for i in 0..2 {
        assert_eq!(net.block_on(net.client(i).get_kv_config("ns", "k")).expect("get"), None);
    }
    let gone = net.mqadmin().args(["getKvConfig", "-s", "ns", "-k", "k"]).output().expect("runs");
    assert_eq!(gone.status.code(), Some(1));
}

#[test]
fn order_conf_put_get_delete() {
    let net = Net::start(2);
    let put = stdout(
        &net.mqadmin()
            .args(["updateOrderConf", "-t", "T", "-v", "broker-a:4", "-m", "put"])
            .output()
            .expect("runs"),
    );
    assert_eq!(put, "update orderConf success. topic=[T], orderConf=[broker-a:4]\n");
    for i in 0..2 {
        let v = net.block_on(net.client(i).get_kv_config("ORDER_TOPIC_CONFIG", "T")).expect("get");
        assert_eq!(v.as_deref(), Some("broker-a:4"));
    }
    let get = stdout(
        &net.mqadmin().args(["updateOrderConf", "-t", "T", "-m", "get"]).output().expect("runs"),
    );
    assert_eq!(get, "get orderConf success. topic=[T], orderConf=[broker-a:4] \n");
    let del = stdout(
        &net.mqadmin().args(["updateOrderConf", "-t", "T", "-m", "delete"]).output().expect("runs"),
    );
    assert_eq!(del, "delete orderConf success. topic=[T]\n");
    let no_conf =
        net.mqadmin().args(["updateOrderConf", "-t", "T", "-m", "put"]).output().expect("runs");
    assert_eq!(no_conf.status.code(), Some(2));
}

#[test]
fn namesrv_config_get_and_update_on_every_nameserver() {
    let net = Net::start(2);
    let out = stdout(
        &net.mqadmin()
            .args(["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"])
            .output()
            .expect("runs"),
    );
    assert_eq!(
        out,
        format!(
            "update name server config success![{}, {}]\norderMessageEnable : true\n",
            net.addr(0),
            net.addr(1)
        )
    );
    let text = stdout(&net.mqadmin().arg("getNamesrvConfig").output().expect("runs"));
    for i in 0..2 {
        let header = format!("============{}============", net.addr(i));
        assert!(text.contains(&header), "{text}");
    }
    let line = format!("{:<50}=  true", "orderMessageEnable");
    assert_eq!(text.lines().filter(|l| *l == line).count(), 2, "{text}");
    let blocked = net
        .mqadmin()
        .args(["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x"])
        .output()
        .expect("runs");
    assert_eq!(blocked.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&blocked.stderr).contains("Can not update config in black list.")
    );
}

#[test]
fn write_perm_commands_report_each_nameserver() {
    let net = Net::start(2);
    for i in 0..2 {
        net.register(i, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)]);
    }
    let wipe =
        stdout(&net.mqadmin().args(["wipeWritePerm", "-b", "broker-a"]).output().expect("runs"));
    let expected: String = (0..2)
        .map(|i| {
            format!("wipe write perm of broker[broker-a] in name server[{}] OK, 2\n", net.addr(i))
        })
        .collect();
    assert_eq!(wipe, expected);
    for i in 0..2 {
        assert_eq!(
            net.block_on(net.client(i).get_route("TopicA")).expect("route").queue_datas[0].perm,
            4
        );
    }
    let add =
        stdout(&net.mqadmin().args(["addWritePerm", "-b", "broker-a"]).output().expect("runs"));
    assert!(
        add.starts_with(&format!(
            "add write perm of broker[broker-a] in name server[{}] OK, 2\n",
            net.addr(0)
        )),
        "{add}"
    );
    for i in 0..2 {
        assert_eq!(
            net.block_on(net.client(i).get_route("TopicA")).expect("route").queue_datas[0].perm,
            6
        );
    }
}

#[test]
fn delete_topic_removes_it_from_every_nameserver() {
    let net = Net::start(2);
    for i in 0..2 {
        net.register(i, "broker-a", "127.0.0.1:10911", &[("Gone", 4)]);
    }
    let out = stdout(
        &net.mqadmin()
            .args(["deleteTopic", "-t", "Gone", "-c", "DefaultCluster"])
            .output()
            .expect("runs"),
    );
    assert_eq!(out, "delete topic [Gone] from NameServer success.\n");
    for i in 0..2 {
        let err = net.block_on(net.client(i).get_route("Gone")).expect_err("deleted");
        assert_eq!(err.code(), Some(17));
    }
}

#[test]
fn ns_diff_detects_a_broker_registered_to_only_one_nameserver() {
    let net = Net::start(2);
    for i in 0..2 {
        net.register(i, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)]);
    }
    let same = net.mqadmin().arg("nsDiff").output().expect("runs");
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert_eq!(stdout(&same), "no difference between 2 name servers\n");

    net.register(0, "broker-x", "127.0.0.1:10921", &[("TopicX", 2)]);
    let diff = net.mqadmin().arg("nsDiff").output().expect("runs");
    assert_eq!(diff.status.code(), Some(1));
    let text = stdout(&diff);
    assert!(
        text.contains(&format!(
            "broker broker-x: missing on {} (present on {})",
            net.addr(1),
            net.addr(0)
        )),
        "{text}"
    );
    assert!(text.contains(&format!("topic TopicX: missing on {}", net.addr(1))), "{text}");

    let json = net.mqadmin().args(["nsDiff", "--json"]).output().expect("runs");
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["equal"], false);
    assert!(v["differences"].as_array().is_some_and(|d| !d.is_empty()));
}

#[test]
fn namesrv_addr_comes_from_the_environment() {
    let net = Net::start(1);
    net.register(0, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)]);
    let out = mqadmin().arg("topicList").env("NAMESRV_ADDR", net.addr(0)).output().expect("runs");
    assert!(out.status.success());
    assert!(lines(&stdout(&out)).contains(&"TopicA"));
}
