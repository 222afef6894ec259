//! `mqadmin` against nameservers enforcing access control: an unsigned `wipeWritePerm` is
//! refused and changes nothing; signed with `--accessKey/--secretKey`, with the
//! `ROCKETMQ_ACCESS_KEY`/`ROCKETMQ_SECRET_KEY` variables, or with the Java tool's
//! `$ROCKETMQ_HOME/conf/tools.yml`, it is applied on every nameserver; a wrong secret is refused.

mod common;

use common::{stdout, Net};

const ACCOUNTS: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret-9", role: admin}
  - {accessKey: broker-a, secretKey: "broker-secret-9", role: broker}
"#;

fn perms(net: &Net) -> Vec<i32> {
    (0..net.servers.len())
        .map(|i| {
            net.block_on(net.client(i).get_route("TopicA")).expect("route").queue_datas[0].perm
        })
        .collect()
}

/// `mqadmin wipeWritePerm -b broker-a` signed as account `ops` with `secret`.
fn wipe_signed(net: &Net, secret: &str) -> std::process::Output {
    let args = ["wipeWritePerm", "-b", "broker-a", "--accessKey", "ops", "--secretKey", secret];
    net.mqadmin().args(args).output().expect("runs")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn write_permission_commands_need_admin_credentials_from_flags_environment_or_tools_yml() {
    let net = Net::start_enforcing(2, ACCOUNTS);
    for i in 0..2 {
        let broker = client::Credentials::new("broker-a", "broker-secret-9");
        net.register_signed(i, "broker-a", "127.0.0.1:10911", &[("TopicA", 4)], Some(broker));
    }
    assert_eq!(perms(&net), [6, 6]);

    let unsigned = net.mqadmin().args(["wipeWritePerm", "-b", "broker-a"]).output().expect("runs");
    assert_eq!(unsigned.status.code(), Some(1));
    assert!(stdout(&unsigned).contains("Failed"), "{}", stdout(&unsigned));
    assert!(
        stderr(&unsigned).contains("access denied: request code 205 must be signed"),
        "{}",
        stderr(&unsigned)
    );
    assert_eq!(perms(&net), [6, 6], "nothing applied");

    let wrong = wipe_signed(&net, "ops-secret-0");
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stderr(&wrong).contains("signature mismatch"), "{}", stderr(&wrong));
    assert_eq!(perms(&net), [6, 6], "nothing applied");

    let flags = wipe_signed(&net, "ops-secret-9");
    assert_eq!(flags.status.code(), Some(0), "{}", stderr(&flags));
    assert_eq!(stdout(&flags).matches(" OK, 2").count(), 2, "{}", stdout(&flags));
    assert_eq!(perms(&net), [4, 4]);

    let env = net
        .mqadmin()
        .args(["addWritePerm", "-b", "broker-a"])
        .env("ROCKETMQ_ACCESS_KEY", "ops")
        .env("ROCKETMQ_SECRET_KEY", "ops-secret-9")
        .output()
        .expect("runs");
    assert_eq!(env.status.code(), Some(0), "{}", stderr(&env));
    assert_eq!(perms(&net), [6, 6]);

    // The Java mqadmin's file (a numeric secret, as in its sample, is covered by the unit tests).
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf");
    std::fs::write(home.path().join("conf/tools.yml"), "accessKey: ops\nsecretKey: ops-secret-9\n")
        .expect("tools.yml");
    let file = net
        .mqadmin()
        .args(["wipeWritePerm", "-b", "broker-a"])
        .env("ROCKETMQ_HOME", home.path())
        .output()
        .expect("runs");
    assert_eq!(file.status.code(), Some(0), "{}", stderr(&file));
    assert_eq!(perms(&net), [4, 4]);

    // Reads stay open (authenticationMode=writes).
    let route = net.mqadmin().args(["topicRoute", "-t", "TopicA"]).output().expect("runs");
    assert_eq!(route.status.code(), Some(0), "{}", stderr(&route));
}
