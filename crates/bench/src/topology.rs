//! The simulated cluster: N clusters × M brokers × T topics per cluster (every broker of a cluster
//! serves all of that cluster's topics, like Java's `GetRouteInfoBenchmark`, but with distinct
//! broker names and addresses), and the broker side of registration: a pre-encoded
//! REGISTER_BROKER body whose DataVersion is spliced in per send, so a churning broker costs the
//! load generator a copy and a CRC, not a JSON encoding of its whole table.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};
use client::{BrokerIdentity, Client, ClientConfig, RegisterBroker};
use remoting::body::{
    self, DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigAndMappingSerializeWrapper,
};
use remoting::RemotingCommand;

/// The shape of the simulated cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shape {
    pub clusters: usize,
    pub brokers_per_cluster: usize,
    pub topics_per_cluster: usize,
}

/// Topic names and broker identities of a [`Shape`], deterministic for a seed.
#[derive(Debug, Clone)]
pub struct Topology {
    pub shape: Shape,
    /// All topics; cluster `c` owns `topics[c*T .. (c+1)*T]`.
    pub topics: Arc<Vec<Arc<str>>>,
}

impl Topology {
    /// Topic names are 32 random letters plus the index (as in Java's benchmark), from `seed`.
    pub fn new(shape: Shape, seed: u64) -> Self {
        let n = shape.clusters * shape.topics_per_cluster;
        let topics = random_names(seed, n, "");
        Self { shape, topics: Arc::new(topics) }
    }

    /// The topics of cluster `c`.
    pub fn cluster_topics(&self, c: usize) -> &[Arc<str>] {
        let t = self.shape.topics_per_cluster;
        &self.topics[c * t..(c + 1) * t]
    }

    /// Every cluster's registration body (cluster `c`'s at index `c`), encoded once.
    pub fn bodies(&self) -> Vec<Arc<RegistrationBody>> {
        (0..self.shape.clusters)
            .map(|c| Arc::new(RegistrationBody::new(self.cluster_topics(c))))
            .collect()
    }

    /// Broker `i` of cluster `c`: `bench-c{c}` / `broker-c{c}-{i}` at `127.0.{c+1}.{i+1}:10911`
    /// (strings only; nothing connects to them).
    pub fn broker(&self, c: usize, i: usize) -> BrokerIdentity {
        broker_identity(
            &format!("bench-c{c}"),
            &format!("broker-c{c}-{i}"),
            &format!("127.0.{}.{}:10911", c + 1, i + 1),
        )
    }

    /// Every broker, cluster by cluster, with its cluster index.
    pub fn brokers(&self) -> Vec<(usize, BrokerIdentity)> {
        (0..self.shape.clusters)
            .flat_map(|c| (0..self.shape.brokers_per_cluster).map(move |i| (c, i)))
            .map(|(c, i)| (c, self.broker(c, i)))
            .collect()
    }
}

/// `n` names of 32 random letters followed by `prefix` and the index.
pub fn random_names(seed: u64, n: usize, prefix: &str) -> Vec<Arc<str>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|i| {
            let mut s: String = (0..32).map(|_| rng.alphabetic()).collect();
            s.push_str(prefix);
            s.push_str(&i.to_string());
            Arc::from(s)
        })
        .collect()
}

/// A master identity as a Java 5.x broker sends it (`enableActingMaster=false`).
pub fn broker_identity(cluster: &str, name: &str, addr: &str) -> BrokerIdentity {
    BrokerIdentity::master(cluster, name, addr)
}

/// What a [`Registrar`] sends: a table encoded once, the DataVersion (and, for a table that
/// changes, registration `k`'s changes) put in per registration.
pub trait Table: Send + Sync + std::fmt::Debug {
    /// The body of the broker's `k`-th registration since its table was set (0 for the first;
    /// only registrations that bump the DataVersion count) with `version`, written into `buf`
    /// (reused from the previous registration), and its `bodyCrc32`. `holds` is `Some(j)` when
    /// `buf` holds this table's body of registration `j` as this method wrote it: then only
    /// what differs is written (the generator shares the machine with the server it measures;
    /// copying each 2 MB body whole was a tenth of its time under S7's churn).
    fn body(
        &self,
        version: &DataVersion,
        k: u64,
        buf: BytesMut,
        holds: Option<u64>,
    ) -> (Bytes, i32);
    /// Encoded size in bytes (without the DataVersion).
    fn encoded_len(&self) -> usize;
}

impl Table for RegistrationBody {
    fn body(
        &self,
        version: &DataVersion,
        _k: u64,
        buf: BytesMut,
        holds: Option<u64>,
    ) -> (Bytes, i32) {
        self.with_version_in(version, buf, holds.is_some())
    }

    fn encoded_len(&self) -> usize {
        self.len()
    }
}

/// A RegisterBrokerBody in its JSON form, split around its DataVersion.
#[derive(Debug, Clone)]
pub struct RegistrationBody {
    prefix: Bytes,
    suffix: Bytes,
    /// CRC32 states of `prefix` and `suffix`, so a body's checksum costs no pass over it.
    prefix_crc: crc32fast::Hasher,
    suffix_crc: crc32fast::Hasher,
    topics: usize,
}

/// DataVersion values that cannot occur elsewhere in a body, to find where it sits.
const MARK: DataVersion =
    DataVersion { counter: 918_273_645_546_372, state_version: 7, timestamp: 192_837_465_564_738 };

impl RegistrationBody {
    /// The body of a broker serving `topics` (8 read / 8 write queues, perm 6, like Java's
    /// benchmark), as `BrokerOuterAPI#registerBrokerAll` encodes it (uncompressed JSON).
    pub fn new(topics: &[Arc<str>]) -> Self {
        Self::with_queues(topics, 8)
    }

    /// [`RegistrationBody::new`] with `queues` read and write queues per topic.
    pub fn with_queues(topics: &[Arc<str>], queues: i32) -> Self {
        let table = topics
            .iter()
            .map(|t| {
                let cfg = TopicConfig {
                    read_queue_nums: queues,
                    write_queue_nums: queues,
                    perm: body::perm::READ | body::perm::WRITE,
                    ..TopicConfig::named(t.as_ref())
                };
                (t.to_string(), cfg)
            })
            .collect();
        let body = RegisterBrokerBody {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: MARK,
                topic_config_table: std::sync::Arc::new(table),
                ..Default::default()
            },
        };
        let json = body::to_legacy_json(&body);
        let mark = body::to_legacy_json(&MARK);
        let at =
            find(&json, &mark).expect("the DataVersion of an encoded RegisterBrokerBody is in it");
        let crc = |bytes: &[u8]| {
            let mut h = crc32fast::Hasher::new();
            h.update(bytes);
            h
        };
        Self {
            prefix: Bytes::copy_from_slice(&json[..at]),
            suffix: Bytes::copy_from_slice(&json[at + mark.len()..]),
            prefix_crc: crc(&json[..at]),
            suffix_crc: crc(&json[at + mark.len()..]),
            topics: topics.len(),
        }
    }

    /// The body with `version` in place, in a fresh buffer (tests; registrations reuse theirs).
    #[cfg(test)]
    pub fn with_version(&self, version: &DataVersion) -> Bytes {
        self.with_version_in(version, BytesMut::new(), false).0
    }

    /// The body with `version` in place, written into `buf` (a buffer reused from the previous
    /// registration is already mapped, a fresh 2 MB one faults in every page), and its
    /// `bodyCrc32` (combined from the parts' CRCs, as if computed over the body). With `holds`
    /// (`buf` holds this body already), only the version is written when its length is the
    /// same.
    pub fn with_version_in(
        &self,
        version: &DataVersion,
        mut buf: BytesMut,
        holds: bool,
    ) -> (Bytes, i32) {
        let dv = body::to_legacy_json(version);
        if !(holds && self.rewrite_version(&dv, &mut buf)) {
            self.write_with(&dv, &mut buf);
        }
        (buf.freeze(), self.body_crc32(&dv, &self.suffix_crc))
    }

    /// The `bodyCrc32` of this body's prefix, the version `dv` and a suffix whose CRC is
    /// `suffix` (this body's, or one patched from it), combined from the parts' CRCs.
    pub(crate) fn body_crc32(&self, dv: &[u8], suffix: &crc32fast::Hasher) -> i32 {
        let mut crc = self.prefix_crc.clone();
        let mut middle = crc32fast::Hasher::new();
        middle.update(dv);
        crc.combine(&middle);
        crc.combine(suffix);
        i32::try_from(crc.finalize() & 0x7FFF_FFFF).unwrap_or(0)
    }

    /// Writes the body with the version `dv` into `buf`, cleared first.
    pub(crate) fn write_with(&self, dv: &[u8], buf: &mut BytesMut) {
        buf.clear();
        // A new buffer gets slack for a version that grows by a few digits, so that a reused one
        // (cleared: its whole capacity free) is never reallocated for the next version.
        let need = self.prefix.len() + dv.len() + self.suffix.len();
        if buf.capacity() < need {
            buf.reserve(need + 64);
        }
        buf.put_slice(&self.prefix);
        buf.put_slice(dv);
        buf.put_slice(&self.suffix);
    }

    /// Writes the version `dv` over the one in `buf`, which must hold this body (with any
    /// version); false, `buf` untouched, when the two versions differ in length.
    pub(crate) fn rewrite_version(&self, dv: &[u8], buf: &mut BytesMut) -> bool {
        if buf.len() != self.prefix.len() + dv.len() + self.suffix.len() {
            return false;
        }
        buf[self.prefix.len()..self.prefix.len() + dv.len()].copy_from_slice(dv);
        true
    }

    /// The bytes before the DataVersion.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The bytes after the DataVersion (the topic table).
    pub fn suffix(&self) -> &[u8] {
        &self.suffix
    }

    /// Number of topics in the table.
    pub fn topics(&self) -> usize {
        self.topics
    }

    /// Encoded size in bytes (without the DataVersion).
    pub fn len(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// One simulated broker: its own client connection to one nameserver, its identity, its
/// pre-encoded table and its DataVersion.
pub struct Registrar {
    client: Client,
    header: RemotingCommand,
    body: Arc<dyn Table>,
    /// Registrations with a bumped DataVersion since `body` was set, the first not counted.
    changes: u64,
    sent: bool,
    version: DataVersion,
    timeout: Duration,
    /// The last body sent, reused for the next one once the client has dropped its copy, and
    /// the registration (`k`) it was.
    scratch: Option<(Bytes, u64)>,
}

impl Registrar {
    /// A broker `identity` serving `body`, registering with `addr` over its own connection
    /// (made on the first registration). `timeout` bounds one registration (Java: 24 s). With
    /// `credentials`, every request is signed (a broker with `innerClientAuthenticationCredentials`).
    pub fn new(
        addr: &str,
        identity: BrokerIdentity,
        body: Arc<dyn Table>,
        timeout: Duration,
        credentials: Option<client::Credentials>,
    ) -> anyhow::Result<Self> {
        let config =
            ClientConfig { request_timeout: timeout, credentials, ..ClientConfig::default() };
        let client = Client::with_config(addr, config)?;
        let empty =
            RegisterBroker { identity, body: RegisterBrokerBody::default(), compressed: false };
        let header = client.register_broker_command(&empty);
        let version = DataVersion { counter: 1, state_version: 0, timestamp: now_millis() };
        Ok(Self { client, header, body, changes: 0, sent: false, version, timeout, scratch: None })
    }

    /// Registers the table; with `bump`, first moves the DataVersion on (Java
    /// `DataVersion#nextVersion`) so the nameserver re-applies every topic. Returns the latency.
    pub async fn register(&mut self, bump: bool) -> Result<Duration, client::Error> {
        if bump {
            self.version.counter += 1;
            self.version.timestamp = now_millis().max(self.version.timestamp);
            if self.sent {
                self.changes += 1;
            }
        }
        self.sent = true;
        let (buf, holds) = match self.scratch.take() {
            Some((body, j)) => match body.try_into_mut() {
                Ok(buf) => (buf, Some(j)),
                Err(_) => (BytesMut::new(), None),
            },
            None => (BytesMut::new(), None),
        };
        let k = self.changes;
        let (body, crc) = if self.body.encoded_len() > 1 << 20 {
            // Copying a multi-MB body would hold this runtime worker (and the readers it runs)
            // for milliseconds: do it off the runtime.
            let (source, version) = (Arc::clone(&self.body), self.version);
            tokio::task::spawn_blocking(move || source.body(&version, k, buf, holds))
                .await
                .map_err(|e| client::Error::Encode(format!("body build failed: {e}")))?
        } else {
            self.body.body(&self.version, k, buf, holds)
        };
        let mut cmd = self.header.clone();
        if let Some(ext) = cmd.ext_fields.as_mut() {
            ext.insert("bodyCrc32", crc.to_string());
        }
        self.scratch = Some((body.clone(), k));
        cmd.body = Some(body);
        let start = Instant::now();
        self.client.send_register_broker_timeout(cmd, self.timeout).await?;
        Ok(start.elapsed())
    }

    /// Writes the next registration's body ahead (with the current version), so that the
    /// registration writes only its new version over it.
    pub async fn warm(&mut self) {
        if self.scratch.is_none() {
            let (source, version, k) = (Arc::clone(&self.body), self.version, self.changes);
            let built = tokio::task::spawn_blocking(move || {
                source.body(&version, k, BytesMut::new(), None).0
            });
            self.scratch = built.await.ok().map(|body| (body, k));
        }
    }

    /// Serves `body` from the next registration on (the broker's topic table changed); its
    /// changes count from there.
    pub fn set_body(&mut self, body: Arc<dyn Table>) {
        self.body = body;
        self.scratch = None;
        self.changes = 0;
    }

    /// Closes the broker's connection.
    pub async fn close(&self) {
        self.client.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spliced_body_decodes_with_the_new_version_and_every_topic() {
        let topics = random_names(1, 50, "t");
        let rb = RegistrationBody::new(&topics);
        let v = DataVersion { counter: 42, state_version: 0, timestamp: 1_700_000_000_000 };
        let bytes = rb.with_version(&v);
        let decoded: RegisterBrokerBody = body::from_json(&bytes).expect("valid JSON body");
        let w = decoded.topic_config_serialize_wrapper;
        assert_eq!(w.data_version, v);
        assert_eq!(w.topic_config_table.len(), 50);
        let cfg = &w.topic_config_table[topics[7].as_ref()];
        assert_eq!((cfg.read_queue_nums, cfg.write_queue_nums, cfg.perm), (8, 8, 6));
        assert_eq!(cfg.topic_name.as_deref(), Some(topics[7].as_ref()));
        let four = RegistrationBody::with_queues(&topics, 4).with_version(&v);
        let decoded: RegisterBrokerBody = body::from_json(&four).expect("valid JSON body");
        let cfg = &decoded.topic_config_serialize_wrapper.topic_config_table[topics[7].as_ref()];
        assert_eq!((cfg.read_queue_nums, cfg.write_queue_nums), (4, 4));
        assert_eq!(four.len(), bytes.len(), "the same size: the two S3 tables are comparable");
    }

    #[test]
    fn a_reused_buffer_gives_the_same_body_and_the_crc_of_the_whole() {
        let rb = RegistrationBody::new(&random_names(2, 20, "t"));
        let v = DataVersion { counter: 7, state_version: 1, timestamp: 1_700_000_000_123 };
        let (first, crc) = rb.with_version_in(&v, BytesMut::new(), false);
        assert_eq!(crc, body::body_crc32(&first));
        let ptr = first.as_ptr();
        let reused = first.try_into_mut().expect("sole owner");
        let v2 = DataVersion { counter: 123_456, ..v };
        let (second, crc2) = rb.with_version_in(&v2, reused, true);
        assert_eq!(second.as_ptr(), ptr, "same allocation");
        assert_eq!(second, rb.with_version(&v2));
        assert_eq!(crc2, body::body_crc32(&second));
        // A version of the same length is written over the one held; another length, whole.
        for v3 in [DataVersion { counter: 654_321, ..v }, DataVersion { counter: 1, ..v }] {
            let held = second.clone();
            let (third, crc3) = rb.with_version_in(&v3, BytesMut::from(&held[..]), true);
            assert_eq!((third.clone(), crc3), (rb.with_version(&v3), body::body_crc32(&third)));
        }
    }

    #[test]
    fn brokers_and_topics_are_distinct() {
        let t =
            Topology::new(Shape { clusters: 3, brokers_per_cluster: 4, topics_per_cluster: 10 }, 9);
        let brokers = t.brokers();
        assert_eq!(brokers.len(), 12);
        let names: std::collections::HashSet<_> =
            brokers.iter().map(|(_, b)| b.broker_name.clone()).collect();
        let addrs: std::collections::HashSet<_> =
            brokers.iter().map(|(_, b)| b.broker_addr.clone()).collect();
        assert_eq!((names.len(), addrs.len()), (12, 12));
        let topics: std::collections::HashSet<_> = t.topics.iter().cloned().collect();
        assert_eq!(topics.len(), 30);
        assert_eq!(t.cluster_topics(2).len(), 10);
        assert_eq!(Topology::new(t.shape, 9).topics, t.topics, "deterministic for a seed");
    }
}
