//! `mqadmin`: the nameserver and controller commands of the Java RocketMQ admin tool, with the
//! same names, flags and text output, plus `--json` output and `nsDiff`. The binary only parses
//! (see [`java_args`]) and calls [`run`].
//!
//! Architecture invariant: commands talk to nameservers (`-n`) and controllers (`-a`) only,
//! never to brokers, except `getBrokerEpoch`, which like Java's asks each broker the name
//! servers list for its epoch cache (so the broker statistics columns of `clusterList` show what Java prints
//! when a broker cannot be reached, and `deleteTopic` does the nameserver part only).

mod cmd;
pub mod credentials;
pub mod pretty;

use std::io::Write;

use clap::{Parser, Subcommand, ValueEnum};

/// Command line of `mqadmin`.
#[derive(Debug, Parser)]
#[command(
    name = "mqadmin",
    version,
    about = "RocketMQ admin tool (nameserver and controller commands)"
)]
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

/// `-c`/`-b`/`-i` of `getSyncStateSet` and `getBrokerEpoch`: which broker groups, how often.
#[derive(Debug, clap::Args)]
pub struct Brokers {
    /// which cluster (its broker names come from the name servers of -n)
    #[arg(short = 'c', long = "clusterName")]
    pub cluster_name: Option<String>,
    /// which broker to fetch
    #[arg(short = 'b', long = "brokerName")]
    pub broker_name: Option<String>,
    /// the interval(second) of get info (repeat until interrupted)
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<u64>,
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
    /// Get controller cluster's metadata.
    #[command(name = "getControllerMetaData")]
    GetControllerMetaData {
        /// the address of controller
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
    },
    /// Fetch syncStateSet for target brokers.
    #[command(name = "getSyncStateSet")]
    GetSyncStateSet {
        /// the address of controller
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
        #[command(flatten)]
        which: Brokers,
    },
    /// Fetch broker epoch entries.
    #[command(name = "getBrokerEpoch")]
    GetBrokerEpoch {
        #[command(flatten)]
        which: Brokers,
    },
    /// Re-elect the specified broker as master.
    #[command(name = "electMaster")]
    ElectMaster {
        /// The address of controller
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
        /// The id of the broker which requires to become master
        #[arg(short = 'b', long = "brokerId")]
        broker_id: i64,
        /// The broker name of the replicas that require to be manipulated (Java: -bn)
        #[arg(long = "brokerName")]
        broker_name: String,
        /// the clusterName of broker
        #[arg(short = 'c', long = "clusterName")]
        cluster_name: String,
    },
    /// Clean metadata of broker on controller.
    #[command(name = "cleanBrokerMetadata")]
    CleanBrokerMetadata {
        /// The address of controller
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
        /// The brokerController id list which requires to clean metadata. eg: 1;2;3
        #[arg(short = 'b', long = "brokerControllerIdsToClean")]
        ids_to_clean: Option<String>,
        /// The broker name of the replicas that require to be manipulated (Java: -bn)
        #[arg(long = "brokerName")]
        broker_name: String,
        /// The clusterName of broker
        #[arg(short = 'c', long = "clusterName")]
        cluster_name: Option<String>,
        /// Whether clean up living brokers, default value is false
        #[arg(short = 'l', long = "cleanLivingBroker")]
        clean_living_broker: bool,
    },
    /// Get controller config.
    #[command(name = "getControllerConfig")]
    GetControllerConfig {
        /// Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
    },
    /// Update controller config.
    #[command(name = "updateControllerConfig")]
    UpdateControllerConfig {
        /// Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878
        #[arg(short = 'a', long = "controllerAddress")]
        controller_address: String,
        /// config key
        #[arg(short = 'k', long = "key")]
        key: String,
        /// config value
        #[arg(short = 'v', long = "value")]
        value: String,
    },
}

/// Java's two-letter short options (`-bn`), which clap cannot declare, as their long forms.
pub fn java_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.into_iter().map(|a| if a == "-bn" { "--brokerName".into() } else { a }).collect()
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
            Self::GetControllerMetaData { .. } => "getControllerMetaData",
            Self::GetSyncStateSet { .. } => "getSyncStateSet",
            Self::GetBrokerEpoch { .. } => "getBrokerEpoch",
            Self::ElectMaster { .. } => "electMaster",
            Self::CleanBrokerMetadata { .. } => "cleanBrokerMetadata",
            Self::GetControllerConfig { .. } => "getControllerConfig",
            Self::UpdateControllerConfig { .. } => "updateControllerConfig",
        }
    }

    /// The `-a` controller list of a controller command.
    fn controller_address(&self) -> Option<&str> {
        match self {
            Self::GetControllerMetaData { controller_address }
            | Self::GetSyncStateSet { controller_address, .. }
            | Self::ElectMaster { controller_address, .. }
            | Self::CleanBrokerMetadata { controller_address, .. }
            | Self::GetControllerConfig { controller_address }
            | Self::UpdateControllerConfig { controller_address, .. } => Some(controller_address),
            _ => None,
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
    /// The name servers of `-n`, or for a controller command the controllers of `-a`.
    pub client: client::Client,
    /// The name servers of `-n` when a controller command also gave them.
    pub namesrv: Option<client::Client>,
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
    let namesrv_addrs = cli.namesrv_addr.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let home = std::env::var_os("ROCKETMQ_HOME").map(std::path::PathBuf::from);
    let config = client::ClientConfig {
        credentials: credentials::resolve(
            cli.access_key.as_deref(),
            cli.secret_key.as_deref(),
            home.as_deref(),
        )?,
        ..client::ClientConfig::default()
    };
    let namesrv = namesrv_addrs
        .map(|addrs| client::Client::with_config(addrs, config.clone()))
        .transpose()
        .map_err(|e| AdminError::Usage(e.to_string()))?;
    let (client, namesrv) = match cli.command.controller_address() {
        Some(list) => {
            let controllers = client::Client::with_config(list.trim(), config)
                .map_err(|e| AdminError::Usage(e.to_string()))?;
            (controllers, namesrv)
        }
        None => {
            let namesrv = namesrv.ok_or_else(|| {
                AdminError::Usage(
                    "no name server address: use -n 'host:port;host:port' or NAMESRV_ADDR".into(),
                )
            })?;
            (namesrv, None)
        }
    };
    let mut ctx = Ctx { client, namesrv, json: cli.json, out };
    let exit = cmd::run(&mut ctx, cli.command).await;
    ctx.client.close().await;
    exit
}
