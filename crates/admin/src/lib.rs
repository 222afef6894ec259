//! `mqadmin`: the nameserver commands of the Java RocketMQ admin tool, with the same names, flags
//! and text output, plus `--json` output and `nsDiff`. The binary only parses and calls [`run`].
//!
//! Architecture invariant: commands talk to nameservers only, never to brokers (so the broker
//! statistics columns of `clusterList` show what Java prints when a broker cannot be reached,
//! and `deleteTopic` does the nameserver part only).

mod cmd;
pub mod credentials;
pub mod pretty;

use std::io::Write;

use clap::{Parser, Subcommand, ValueEnum};

/// Command line of `mqadmin`.
#[derive(Debug, Parser)]
#[command(name = "mqadmin", version, about = "RocketMQ admin tool (nameserver commands)")]
pub struct Cli {
    /// Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'
    #[arg(short = 'n', long = "namesrvAddr", env = "NAMESRV_ADDR", global = true)]
    pub namesrv_addr: Option<String>,
    /// Print JSON instead of the Java tool's text
    #[arg(long, global = true)]
    pub json: bool,
    /// Access key to sign every request with (needs --secretKey); without both, the
    /// accessKey/secretKey of $ROCKETMQ_HOME/conf/tools.yml (the Java mqadmin's file) are used
    #[arg(long = "accessKey", env = "ROCKETMQ_ACCESS_KEY", hide_env_values = true, global = true)]
    pub access_key: Option<String>,
    /// Secret key of --accessKey (prefer the environment variable: a command line is visible
    /// to every user of the machine)
    #[arg(long = "secretKey", env = "ROCKETMQ_SECRET_KEY", hide_env_values = true, global = true)]
    pub secret_key: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

/// `updateOrderConf -m` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderConfMethod {
    Put,
    Get,
    Delete,
}

/// The subcommands, named as in Java.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List cluster infos.
    #[command(name = "clusterList")]
    ClusterList {
        /// which cluster
        #[arg(short = 'c', long = "clusterName")]
        cluster_name: Option<String>,
    },
    /// Fetch all topic list from name server.
    #[command(name = "topicList")]
    TopicList {
        /// clusterModel: print the cluster of every topic
        #[arg(short = 'c', long = "clusterModel")]
        cluster_model: bool,
    },
    /// Examine topic route info.
    #[command(name = "topicRoute")]
    TopicRoute {
        /// topic name
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// Use list format to print data
        #[arg(short = 'l', long = "list")]
        list: bool,
    },
    /// Get cluster info for topic.
    #[command(name = "topicClusterList")]
    TopicClusterList {
        /// topic name
        #[arg(short = 't', long = "topic")]
        topic: String,
    },
    /// Get configs of name server.
    #[command(name = "getNamesrvConfig")]
    GetNamesrvConfig,
    /// Update configs of name server.
    #[command(name = "updateNamesrvConfig")]
    UpdateNamesrvConfig {
        /// config key
        #[arg(short = 'k', long = "key")]
        key: String,
        /// config value
        #[arg(short = 'v', long = "value")]
        value: String,
    },
    /// Create or update KV config.
    #[command(name = "updateKvConfig")]
    UpdateKvConfig {
        /// set the namespace
        #[arg(short = 's', long = "namespace")]
        namespace: String,
        /// set the key name
        #[arg(short = 'k', long = "key")]
        key: String,
        /// set the key value
        #[arg(short = 'v', long = "value")]
        value: String,
    },
    /// Delete KV config.
    #[command(name = "deleteKvConfig")]
    DeleteKvConfig {
        /// set the namespace
        #[arg(short = 's', long = "namespace")]
        namespace: String,
        /// set the key name
        #[arg(short = 'k', long = "key")]
        key: String,
    },
    /// get KV config.
    #[command(name = "getKvConfig")]
    GetKvConfig {
        /// set the namespace
        #[arg(short = 's', long = "namespace")]
        namespace: String,
        /// set the key name
        #[arg(short = 'k', long = "key")]
        key: String,
    },
    /// List the KV config of a namespace (GET_KVLIST_BY_NAMESPACE; not in the Java tool).
    #[command(name = "getKvListByNamespace")]
    GetKvListByNamespace {
        /// set the namespace
        #[arg(short = 's', long = "namespace")]
        namespace: String,
    },
    /// Wipe write perm of broker in all name server you defined in the -n param.
    #[command(name = "wipeWritePerm")]
    WipeWritePerm {
        /// broker name
        #[arg(short = 'b', long = "brokerName")]
        broker_name: String,
    },
    /// Add write perm of broker in all name server you defined in the -n param.
    #[command(name = "addWritePerm")]
    AddWritePerm {
        /// broker name
        #[arg(short = 'b', long = "brokerName")]
        broker_name: String,
    },
    /// Delete topic from NameServer (the broker part of the Java command is not done).
    #[command(name = "deleteTopic")]
    DeleteTopic {
        /// topic name
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// delete topic from which cluster
        #[arg(short = 'c', long = "clusterName")]
        cluster_name: String,
    },
    /// Create or update or delete order conf.
    #[command(name = "updateOrderConf")]
    UpdateOrderConf {
        /// topic name
        #[arg(short = 't', long = "topic")]
        topic: String,
        /// set order conf [eg. brokerName1:num;brokerName2:num]
        #[arg(short = 'v', long = "orderConf")]
        order_conf: Option<String>,
        /// option type
        #[arg(short = 'm', long = "method", value_enum)]
        method: OrderConfMethod,
    },
    /// Compare the cluster info and every topic route of all name servers in -n; exit 1 when
    /// they differ.
    #[command(name = "nsDiff")]
    NsDiff,
}

impl Command {
    /// The Java command name (`clusterList`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::ClusterList { .. } => "clusterList",
            Self::TopicList { .. } => "topicList",
            Self::TopicRoute { .. } => "topicRoute",
            Self::TopicClusterList { .. } => "topicClusterList",
            Self::GetNamesrvConfig => "getNamesrvConfig",
            Self::UpdateNamesrvConfig { .. } => "updateNamesrvConfig",
            Self::UpdateKvConfig { .. } => "updateKvConfig",
            Self::DeleteKvConfig { .. } => "deleteKvConfig",
            Self::GetKvConfig { .. } => "getKvConfig",
            Self::GetKvListByNamespace { .. } => "getKvListByNamespace",
            Self::WipeWritePerm { .. } => "wipeWritePerm",
            Self::AddWritePerm { .. } => "addWritePerm",
            Self::DeleteTopic { .. } => "deleteTopic",
            Self::UpdateOrderConf { .. } => "updateOrderConf",
            Self::NsDiff => "nsDiff",
        }
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Bad usage found after parsing (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Client(#[from] client::Error),
    /// Some of several calls failed; each is described.
    #[error("{0}")]
    Failed(String),
    #[error("cannot write output: {0}")]
    Io(#[from] std::io::Error),
}

impl AdminError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// What a successful command tells the process: 0, or 1 for `nsDiff` finding differences.
pub type Exit = u8;

/// Output sink and settings shared by the commands.
pub(crate) struct Ctx<'a> {
    pub client: client::Client,
    pub json: bool,
    pub out: &'a mut (dyn Write + Send),
}

impl Ctx<'_> {
    /// Writes `value` as pretty JSON and a newline.
    pub fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<(), AdminError> {
        let text =
            serde_json::to_string_pretty(value).map_err(|e| AdminError::Failed(e.to_string()))?;
        writeln!(self.out, "{text}")?;
        Ok(())
    }
}

/// Runs one parsed command line, writing its output to `out`.
pub async fn run(cli: Cli, out: &mut (dyn Write + Send)) -> Result<Exit, AdminError> {
    let addrs =
        cli.namesrv_addr.as_deref().map(str::trim).filter(|s| !s.is_empty()).ok_or_else(|| {
            AdminError::Usage(
                "no name server address: use -n 'host:port;host:port' or NAMESRV_ADDR".into(),
            )
        })?;
    let home = std::env::var_os("ROCKETMQ_HOME").map(std::path::PathBuf::from);
    let config = client::ClientConfig {
        credentials: credentials::resolve(
            cli.access_key.as_deref(),
            cli.secret_key.as_deref(),
            home.as_deref(),
        )?,
        ..client::ClientConfig::default()
    };
    let client =
        client::Client::with_config(addrs, config).map_err(|e| AdminError::Usage(e.to_string()))?;
    let mut ctx = Ctx { client, json: cli.json, out };
    let exit = cmd::run(&mut ctx, cli.command).await;
    ctx.client.close().await;
    exit
}
