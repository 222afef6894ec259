//! A topic's entry in the route table: its queues, one [`QueueSpec`] per broker group, as a
//! list shared by every topic with the same queues ([`QueueList`]), and the route bodies it
//! encodes to.

use std::sync::{Arc, OnceLock};

use cowmap::InlineKey;
use parking_lot::Mutex;
use remoting::body::{QueueData, TopicConfig};

use super::cache::BodyCache;

/// Java `QueueData` without its broker name (stored beside it): 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct QueueSpec {
    pub perm: i32,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub topic_sys_flag: i32,
}

impl QueueSpec {
    /// Java: `RouteInfoManager#createAndUpdateQueueData` (the QueueData part), with `perm` given.
    pub(super) fn from_topic_config(tc: &TopicConfig, perm: i32) -> Self {
        Self {
            perm,
            read_queue_nums: tc.read_queue_nums,
            write_queue_nums: tc.write_queue_nums,
            topic_sys_flag: tc.topic_sys_flag,
        }
    }

    pub(super) fn from_queue_data(qd: &QueueData) -> Self {
        Self {
            perm: qd.perm,
            read_queue_nums: qd.read_queue_nums,
            write_queue_nums: qd.write_queue_nums,
            topic_sys_flag: qd.topic_sys_flag,
        }
    }

    pub(super) fn to_queue_data(self, broker_name: &str) -> QueueData {
        QueueData {
            broker_name: broker_name.to_owned(),
            perm: self.perm,
            read_queue_nums: self.read_queue_nums,
            topic_sys_flag: self.topic_sys_flag,
            write_queue_nums: self.write_queue_nums,
        }
    }
}

/// A topic's queues, one per broker group, sorted by broker name, with the route bodies they
/// encode to. Topics with equal lists share one (#25: a cluster's topics all have the same list;
/// 64 MB of 232 at 1M topics before), and so its bodies (a body names no topic).
pub(super) type QueueList = Arc<intern::Shared<(Arc<str>, QueueSpec), BodyCache>>;

/// The table's queue lists, shared by every snapshot; writers lock it, and the pruning of bodies.
pub(super) type Lists = Arc<Mutex<intern::Interner<(Arc<str>, QueueSpec), BodyCache>>>;

/// One topic's queues (never empty in the table). A change builds a new entry, but for an entry
/// no snapshot holds yet, which a registration's put changes in place (`RouteTable::set_queue`).
pub(super) struct TopicEntry {
    /// The topic: the table's key, kept here so that a leaf of the map holds one pointer.
    name: cowmap::InlineKey,
    pub queues: QueueList,
    /// The topic's own route bodies, for the reads whose body is not its list's (see
    /// `cache.rs`): made by the first such read, empty in a new entry.
    pub own: OnceLock<Box<BodyCache>>,
}

impl cowmap::Keyed for TopicEntry {
    fn key(&self) -> &str {
        self.name.as_str()
    }

    /// The name and the list: an entry is 72 bytes after its `Arc`'s two counts, so the list
    /// is often on the next line (every write and scan of the table reads both).
    fn prefetch_lines(&self) {
        mem_prefetch::prefetch_read_data::<_, 3>(self);
        mem_prefetch::prefetch_read_data::<_, 3>(&self.queues);
    }
}

impl TopicEntry {
    /// `name`'s entry of `queues` (sorted here, the first of a broker kept), its list shared
    /// through `lists`.
    pub(super) fn new(name: &str, mut queues: Vec<(Arc<str>, QueueSpec)>, lists: &Lists) -> Self {
        queues.sort_by(|a, b| a.0.cmp(&b.0));
        queues.dedup_by(|later, earlier| later.0 == earlier.0);
        let queues = lists.lock().share(&queues);
        Self { name: InlineKey::new(name), queues, own: OnceLock::new() }
    }

    pub(super) fn name(&self) -> &str {
        self.name.as_str()
    }

    pub(super) fn queue(&self, broker: &str) -> Option<&QueueSpec> {
        list_queue(&self.queues, broker)
    }

    /// `name`'s entry of a shared list.
    pub(super) fn of_list(name: &str, queues: QueueList) -> Self {
        Self { name: InlineKey::new(name), queues, own: OnceLock::new() }
    }

    /// The same queues without the topic's own bodies (a static-topic mapping changed).
    pub(super) fn refreshed(&self) -> Self {
        self.named(self.name())
    }

    /// The same queues, for `name`.
    pub(super) fn named(&self, name: &str) -> Self {
        Self::of_list(name, self.queues.clone())
    }
}

/// The last list [`LastList::with`] made, and from what: a registration's topics mostly share
/// one list, and so the list their puts make (#25).
#[derive(Clone, Default)]
pub(super) struct LastList(Option<ListStep>);

/// A list made from another by setting one broker's queue.
#[derive(Clone)]
struct ListStep {
    from: Option<QueueList>,
    broker: Arc<str>,
    spec: QueueSpec,
    to: QueueList,
}

impl LastList {
    /// `from` (`None`: no queues) with `broker`'s queue set to `spec`, shared through
    /// `lists`.
    pub(super) fn with(
        &mut self,
        lists: &Lists,
        from: Option<QueueList>,
        broker: &Arc<str>,
        spec: QueueSpec,
    ) -> QueueList {
        let same = |a: &Option<QueueList>| match (a, &from) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        if let Some(step) = self.0.as_ref().filter(|step| {
            step.spec == spec && Arc::ptr_eq(&step.broker, broker) && same(&step.from)
        }) {
            return step.to.clone();
        }
        let to = list_setting(lists, from.as_deref().map_or(&[][..], |l| &l[..]), broker, spec);
        self.0 = Some(ListStep { from, broker: broker.clone(), spec, to: to.clone() });
        to
    }
}

/// `list` with `broker`'s queue set to `spec` (added or replaced), shared through `lists`.
pub(super) fn list_setting(
    lists: &Lists,
    list: &[(Arc<str>, QueueSpec)],
    broker: &Arc<str>,
    spec: QueueSpec,
) -> QueueList {
    let mut queues: Vec<_> = list.iter().filter(|(b, _)| b != broker).cloned().collect();
    queues.push((broker.clone(), spec));
    queues.sort_by(|a, b| a.0.cmp(&b.0));
    lists.lock().share(&queues)
}

/// `broker`'s queue in a list.
pub(super) fn list_queue<'a>(list: &'a QueueList, broker: &str) -> Option<&'a QueueSpec> {
    list.binary_search_by(|(name, _)| (**name).cmp(broker)).ok().map(|i| &list[i].1)
}

/// The broker names whose queue differs between a topic's `old` and `new` entries (added,
/// removed or changed); both lists are sorted by name.
pub(super) fn changed_queues(old: Option<&TopicEntry>, new: Option<&TopicEntry>) -> Vec<Arc<str>> {
    let (old, new) =
        (old.map_or(&[][..], |e| &e.queues[..]), new.map_or(&[][..], |e| &e.queues[..]));
    let mut changed = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                if a.1 != b.1 {
                    changed.push(a.0.clone());
                }
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                changed.push(a.0.clone());
                i += 1;
            }
            (Some(a), None) => {
                changed.push(a.0.clone());
                i += 1;
            }
            (_, Some(b)) => {
                changed.push(b.0.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    changed
}
