//! A decision of the replica tables as what a node answers: the response of a read, the
//! response and event of a proposal (`Node::propose`), and the election as a proposal. Shared by
//! the request handlers (`handler.rs`) and the elections the leader starts itself
//! (`failover.rs`), so that neither needs the other for it.

use remoting::headers::{CommandHeader, ElectMasterRequestHeader};
use remoting::{RemotingCommand, ResponseCode};

use crate::config::Config;
use crate::elect::BrokerLiveness;
use crate::node::{Decide, Proposed};
use crate::replicas::decide::MissingField;
use crate::replicas::{Decision, Replicas};

/// A decision as a response, and its event. A request missing a field Java dereferences is a
/// SYSTEM_ERROR with no event.
pub(crate) fn proposed<H: CommandHeader>(decision: Result<Decision<H>, MissingField>) -> Proposed {
    match decision {
        Ok(d) => Proposed {
            response: response_of(d.code, d.remark, d.header.as_ref(), d.body),
            event: d.event,
        },
        Err(missing) => Proposed {
            response: RemotingCommand::response(
                ResponseCode::SystemError,
                Some(missing.to_string()),
            ),
            event: None,
        },
    }
}

/// Java `RemotingCommand#createResponseCommandWithHeader` + the result's remark and body.
fn response_of<H: CommandHeader>(
    code: ResponseCode,
    remark: Option<String>,
    header: Option<&H>,
    body: Option<Vec<u8>>,
) -> RemotingCommand {
    let mut cmd = RemotingCommand::response(code, remark);
    if let Some(h) = header {
        cmd = cmd.with_header(h);
    }
    if let Some(b) = body {
        cmd = cmd.with_body(b);
    }
    cmd
}

pub(crate) fn read_response<H: CommandHeader>(d: Decision<H>) -> RemotingCommand {
    response_of(d.code, d.remark, d.header.as_ref(), d.body)
}

/// The election decision as a proposal (shared by 1002 and the leader's own elections).
pub(crate) fn elect_proposal(header: ElectMasterRequestHeader) -> Decide {
    Box::new(move |t: &Replicas, live: &dyn BrokerLiveness, config: &Config| {
        proposed(t.elect_master(&header, live, config.enable_elect_unclean_master))
    })
}
