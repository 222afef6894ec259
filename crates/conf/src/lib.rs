//! Java-style server configuration shared by the nameserver and the controller: properties text
//! ([`properties`]), typed key tables with Java names and defaults ([`config_struct!`],
//! [`table`]), the running configuration that GET/UPDATE_*_CONFIG read and replace ([`Live`]),
//! crash-safe whole-file writes ([`persist`]), the files a configuration names watched for
//! changes ([`watch`]) and the server binaries' command line ([`cli`]).

pub mod cli;
pub mod live;
pub mod persist;
pub mod properties;
pub mod table;
pub mod watch;

pub use keyref::{DefaultValue, JavaOrigin, KeyInfo};
pub use live::{ConfigUpdateError, Live};
pub use table::{ConfigError, Keys, Rules, Value};
