//! The RocketMQ remoting protocol, byte-compatible with the Java implementation: frame codec,
//! `RemotingCommand` with JSON and ROCKETMQ binary headers, request/response codes, typed
//! nameserver headers and the JSON bodies. No sockets, no server state.

pub mod body;
pub mod code;
pub mod command;
pub mod fastjson;
pub mod frame;
pub mod header;
pub mod headers;
pub mod signature;
pub mod text;

pub use code::{version, LanguageCode, RequestCode, ResponseCode};
pub use command::{ExtFields, RemotingCommand, SerializeType, FLAG_ONEWAY, FLAG_RESPONSE};
pub use frame::{FrameError, RemotingCodec};
