//! fastjson's `PrettyFormat` text (`JSON.toJSONString(obj, true)`), which the Java `mqadmin
//! topicRoute` prints: tab indentation, beans break before every property, maps break only
//! before string keys (so `{0:"addr"` stays on the brace line), lists break before every item,
//! empty lists and maps are `[]` / `{}`, integer keys unquoted, null properties left out.
//!
//! Java: fastjson 1.2.83 JavaBeanSerializer / MapSerializer / ListSerializer with PrettyFormat

use remoting::body::{BrokerData, IntKeyMap, QueueData, TopicQueueMappingInfo, TopicRouteData};

/// A value as fastjson sees it while pretty-printing.
#[derive(Debug, Clone)]
pub enum Node {
    /// A Java bean: properties in name order; `None` values are left out.
    Bean(Vec<(&'static str, Option<Node>)>),
    /// A `Map`: entries in iteration order.
    Map(Vec<(Key, Node)>),
    List(Vec<Node>),
    Str(String),
    Int(i64),
    Bool(bool),
}

/// A map key: strings are quoted (and preceded by a line break), integers are not.
#[derive(Debug, Clone)]
pub enum Key {
    Str(String),
    Int(i64),
}

struct Writer {
    out: String,
    indent: usize,
}

impl Writer {
    fn println(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push('\t');
        }
    }

    fn string(&mut self, s: &str) {
        let mut buf = Vec::with_capacity(s.len() + 2);
        buf.push(b'"');
        remoting::fastjson::escape_legacy_into(&mut buf, s);
        buf.push(b'"');
        self.out.push_str(&String::from_utf8_lossy(&buf));
    }

    fn node(&mut self, node: &Node) {
        match node {
            Node::Str(s) => self.string(s),
            Node::Int(i) => self.out.push_str(&i.to_string()),
            Node::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Node::Bean(props) => {
                self.out.push('{');
                self.indent += 1;
                self.println();
                let mut first = true;
                for (name, value) in props {
                    let Some(value) = value else { continue };
                    if !first {
                        self.out.push(',');
                        self.println();
                    }
                    first = false;
                    self.string(name);
                    self.out.push(':');
                    self.node(value);
                }
                self.indent -= 1;
                self.println();
                self.out.push('}');
            }
            Node::Map(entries) => {
                self.out.push('{');
                self.indent += 1;
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    match key {
                        Key::Str(k) => {
                            self.println();
                            self.string(k);
                        }
                        Key::Int(k) => self.out.push_str(&k.to_string()),
                    }
                    self.out.push(':');
                    self.node(value);
                }
                self.indent -= 1;
                if !entries.is_empty() {
                    self.println();
                }
                self.out.push('}');
            }
            Node::List(items) if items.is_empty() => self.out.push_str("[]"),
            Node::List(items) => {
                self.out.push('[');
                self.indent += 1;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.println();
                    self.node(item);
                }
                self.indent -= 1;
                self.println();
                self.out.push(']');
            }
        }
    }
}

/// The pretty text of `node`.
pub fn to_string(node: &Node) -> String {
    let mut w = Writer { out: String::new(), indent: 0 };
    w.node(node);
    w.out
}

/// Java `String#hashCode` (over UTF-16 units).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// String-keyed map entries in the order a default JDK `HashMap` iterates them.
fn jdk_string_order<'a, V>(entries: impl Iterator<Item = (&'a String, V)>) -> Vec<(&'a String, V)> {
    let mut v: Vec<_> = entries.collect();
    let mut capacity = 16usize;
    while v.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    #[allow(clippy::cast_sign_loss)]
    let bucket = |k: &str| {
        let h = java_string_hash(k) as u32;
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    v.sort_by_key(|(k, _)| bucket(k));
    v
}

/// An id → address map in JDK `HashMap` order.
fn addr_map(m: &IntKeyMap<i64, String>) -> Node {
    Node::Map(
        m.jdk_hash_order().into_iter().map(|(k, v)| (Key::Int(*k), Node::Str(v.clone()))).collect(),
    )
}

fn broker_data(b: &BrokerData) -> Node {
    Node::Bean(vec![
        ("brokerAddrs", Some(addr_map(&b.broker_addrs))),
        ("brokerName", Some(Node::Str(b.broker_name.clone()))),
        ("cluster", Some(Node::Str(b.cluster.clone()))),
        ("enableActingMaster", Some(Node::Bool(b.enable_acting_master))),
        ("zoneName", b.zone_name.clone().map(Node::Str)),
    ])
}

fn queue_data(q: &QueueData) -> Node {
    Node::Bean(vec![
        ("brokerName", Some(Node::Str(q.broker_name.clone()))),
        ("perm", Some(Node::Int(q.perm.into()))),
        ("readQueueNums", Some(Node::Int(q.read_queue_nums.into()))),
        ("topicSysFlag", Some(Node::Int(q.topic_sys_flag.into()))),
        ("writeQueueNums", Some(Node::Int(q.write_queue_nums.into()))),
    ])
}

fn mapping_info(m: &TopicQueueMappingInfo) -> Node {
    let curr = m.curr_id_map.as_ref().map(|c| {
        let mut entries: Vec<_> = c.0.iter().collect();
        entries.sort_by_key(|(k, _)| **k);
        Node::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Key::Int((*k).into()), Node::Int((*v).into())))
                .collect(),
        )
    });
    Node::Bean(vec![
        ("bname", m.bname.clone().map(Node::Str)),
        ("currIdMap", curr),
        ("dirty", Some(Node::Bool(m.dirty))),
        ("epoch", Some(Node::Int(m.epoch))),
        ("scope", m.scope.clone().map(Node::Str)),
        ("topic", m.topic.clone().map(Node::Str)),
        ("totalQueues", Some(Node::Int(m.total_queues.into()))),
    ])
}

/// `TopicRouteData#toJson(true)` as the Java admin prints it.
pub fn route(r: &TopicRouteData) -> String {
    let filter = jdk_string_order(r.filter_server_table.iter())
        .into_iter()
        .map(|(k, v)| (Key::Str(k.clone()), Node::List(v.iter().cloned().map(Node::Str).collect())))
        .collect();
    let mapping = r.topic_queue_mapping_by_broker.as_ref().map(|m| {
        Node::Map(
            jdk_string_order(m.iter())
                .into_iter()
                .map(|(k, v)| (Key::Str(k.clone()), mapping_info(v)))
                .collect(),
        )
    });
    to_string(&Node::Bean(vec![
        ("brokerDatas", Some(Node::List(r.broker_datas.iter().map(broker_data).collect()))),
        ("filterServerTable", Some(Node::Map(filter))),
        ("orderTopicConf", r.order_topic_conf.clone().map(Node::Str)),
        ("queueDatas", Some(Node::List(r.queue_datas.iter().map(queue_data).collect()))),
        ("topicQueueMappingByBroker", mapping),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_prints_like_fastjson_pretty_format() {
        let r = TopicRouteData {
            broker_datas: vec![BrokerData {
                broker_addrs: [
                    (0, "127.0.0.1:10911".to_owned()),
                    (1, "127.0.0.1:10921".to_owned()),
                ]
                .into_iter()
                .collect(),
                broker_name: "broker-a".into(),
                cluster: "DefaultCluster".into(),
                ..Default::default()
            }],
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                perm: 6,
                read_queue_nums: 8,
                topic_sys_flag: 0,
                write_queue_nums: 8,
            }],
            ..Default::default()
        };
        let expected = "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{0:\"127.0.0.1:10911\",1:\"127.0.0.1:10921\"\n\t\t\t},\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"cluster\":\"DefaultCluster\",\n\t\t\t\"enableActingMaster\":false\n\t\t}\n\t],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n\t\t{\n\t\t\t\"brokerName\":\"broker-a\",\n\t\t\t\"perm\":6,\n\t\t\t\"readQueueNums\":8,\n\t\t\t\"topicSysFlag\":0,\n\t\t\t\"writeQueueNums\":8\n\t\t}\n\t]\n}";
        assert_eq!(route(&r), expected);
    }

    #[test]
    fn string_keyed_maps_break_before_each_key_and_empty_lists_stay_inline() {
        let node = Node::Map(vec![
            (Key::Str("a".into()), Node::List(vec![])),
            (Key::Str("b".into()), Node::List(vec![Node::Str("x\"y".into())])),
        ]);
        assert_eq!(to_string(&node), "{\n\t\"a\":[],\n\t\"b\":[\n\t\t\"x\\\"y\"\n\t]\n}");
    }

    #[test]
    fn java_string_hash_matches_jdk() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
    }
}
