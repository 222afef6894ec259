//! The nameserver as it runs: the crate above the core (`namesrv`), the network edge
//! (`transport`), access control (`acl`), the operations surface (`ops`) and the embedded
//! RocketMQ controller, wired together; and the two binaries' start-up (`mqnamesrv`,
//! `mqcontroller`: thin `main`s over [`boot`]).
//!
//! [`run`] serves a nameserver on bound listeners until a shutdown future completes; it is what
//! the binary runs and what the tests run (they bind `127.0.0.1:0` and pass the listeners in).

pub mod boot;
pub mod cli;
pub mod embedded;
mod huge_pages;
pub mod listen;
mod purge;
pub mod standalone;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use namesrv::config::ConfigError;
use namesrv::State;
use tokio_util::sync::CancellationToken;

pub use listen::Listeners;
pub use namesrv::Config;

/// How long an embedded controller may take to stop once the nameserver has.
const CONTROLLER_STOP_LIMIT: Duration = Duration::from_secs(10);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Kv(#[from] kv::KvError),
    #[error("TLS: {0}")]
    Tls(#[from] transport::TlsError),
    #[error(transparent)]
    Auth(#[from] acl::AccountsError),
}

impl From<namesrv::StateError> for RunError {
    fn from(e: namesrv::StateError) -> Self {
        match e {
            namesrv::StateError::Config(e) => RunError::Config(e),
            namesrv::StateError::Kv(e) => RunError::Kv(e),
        }
    }
}

/// A nameserver built and not yet serving: its state (KV store loaded, route snapshot
/// restored, TLS context and accounts read) and, with `enableControllerInNamesrv`, the
/// embedded controller's configuration.
pub struct Daemon {
    state: Arc<State>,
    tls: Arc<transport::TlsContext>,
    controller: Option<(::controller::Config, ::controller::Guard)>,
}

impl Daemon {
    /// Checks every key (the embedded controller's too) and builds the state: the TLS context
    /// (`tls.*`, the `tls.config.file` overrides), the access-control gate (when
    /// `authenticationEnabled`), the KV store and the restored route snapshot, so that the
    /// first client finds the routes already there. Blocking (file I/O). Opens no port.
    pub fn build(config: Config) -> Result<Daemon, RunError> {
        let controller = embedded::controller_config(&config)?;
        config.validate()?;
        let settings = tls_settings(&config);
        if settings.mode != transport::TlsMode::Disabled
            && !settings.test_mode
            && settings.client_auth != transport::ClientAuth::None
            && !settings.auth_client
        {
            tracing::warn!(
                "client certificates are asked for but not checked: tls.server.authClient is false (Java's default), so any certificate is accepted and none is an identity; set tls.server.authClient=true and tls.server.trustCertPath to check them"
            );
        }
        if config.http_tls_enable && settings.mode == transport::TlsMode::Disabled {
            return Err(RunError::Config(conf::table::invalid(
                "httpTlsEnable",
                "true",
                "needs tls.server.mode permissive or enforcing: the HTTP listener serves the \
                 remoting port's certificate",
            )));
        }
        let tls = Arc::new(transport::TlsContext::new(settings)?);
        let auth = acl::Auth::from_settings(&config.acl_settings())?.map(Arc::new);
        let controller = match controller {
            Some(c) => {
                let guard = embedded::guard(&c, &tls, auth.as_ref())?;
                Some((c, guard))
            }
            None => None,
        };
        let state = namesrv::build_state(config, auth)?;
        Ok(Daemon { state, tls, controller })
    }

    /// The server state (its tables, counters and budgets).
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Serves until `shutdown` completes: the remoting listener (`namesrv::server::serve`), the
    /// HTTP listener if given, the certificate and accounts file watchers and the embedded
    /// controller. On shutdown the controller is told to stop at once; the nameserver drains;
    /// then the watchers and the HTTP listener stop (so `/healthz` answers to the end) and the
    /// controller is given [`CONTROLLER_STOP_LIMIT`] to finish.
    pub async fn serve(self, listeners: impl Into<Listeners>, shutdown: impl Future<Output = ()>) {
        let Listeners { remoting, http, controller: controller_listener } = listeners.into();
        let (state, tls) = (self.state, self.tls);
        let stop_controller = CancellationToken::new();
        let slot = ops::EmbeddedController::default();
        let embedded = self.controller.map(|(config, guard)| {
            let stopped = stop_controller.clone().cancelled_owned();
            embedded::spawn(config, controller_listener, guard, slot.clone(), stopped)
        });
        let stopped = CancellationToken::new();
        let mut tasks = Vec::new();
        if let Some(auth) = &state.access.auth {
            tasks.push(acl::spawn_reloader(Arc::clone(auth), stopped.clone().cancelled_owned()));
        }
        if tls.mode() != transport::TlsMode::Disabled {
            let tls = Arc::clone(&tls);
            tasks.push(transport::spawn_reloader(tls, stopped.clone().cancelled_owned()));
        }
        if let Ok(addr) = remoting.local_addr() {
            state.set_remoting_addr(addr);
        }
        let http = http.map(|listener| {
            let stopped = stopped.clone().cancelled_owned();
            let ctx = ops::Context::new(Arc::clone(&state), Arc::clone(&tls)).with_controller(slot);
            tokio::spawn(ops::serve(listener, ctx, stopped))
        });
        let signal = stop_controller.clone();
        namesrv::server::serve(remoting, tls, state, async move {
            shutdown.await;
            signal.cancel();
        })
        .await;
        stop_controller.cancel();
        stopped.cancel();
        for task in tasks.into_iter().chain(http) {
            let _ = task.await;
        }
        if let Some(task) = embedded {
            let _ = tokio::time::timeout(CONTROLLER_STOP_LIMIT, task).await;
        }
    }
}

/// Serves the nameserver on `listeners` with `config` until `shutdown` completes; then stops
/// accepting, answers what connections already sent, stops background tasks (and an embedded
/// controller) and returns.
///
/// A plain `TcpListener` serves remoting only; [`Listeners`] with `http: Some(..)` also serves
/// the HTTP operations surface on that listener. The `httpListenPort` key is used only by
/// [`listen::bind`] (the binary): a test passing its own listeners never opens port 8080. With
/// `enableControllerInNamesrv` the embedded controller runs too, on `Listeners::controller` or
/// on the port its configuration names.
pub async fn run(
    listeners: impl Into<Listeners>,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let daemon = Daemon::build(config)?;
    daemon.serve(listeners, shutdown).await;
    Ok(())
}

/// The `tls.*` settings: the `-c` file's keys, overridden by the file named by `tls.config.file`
/// (Java: `TlsHelper#extractTlsConfigFromFile`) when it exists.
fn tls_settings(config: &Config) -> transport::TlsSettings {
    let lookup = |key: &str| config.get(key);
    let file = transport::TlsSettings::config_file_path(lookup);
    let overrides = read_properties(&file);
    transport::TlsSettings::from_layers(lookup, |key| overrides.get(key).cloned())
}

fn read_properties(path: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| conf::properties::parse_bytes(&bytes).ok())
        .map(|entries| entries.into_iter().collect())
        .unwrap_or_default()
}
