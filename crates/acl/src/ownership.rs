//! Broker ownership: which broker groups an account may act for.
//!
//! An account of the accounts file may list the `clusters` and `brokerNames` it may register,
//! heartbeat, unregister and be fenced for (patterns where `*` stands for any run of
//! characters). A request needing broker access that names a `clusterName` or a `brokerName` in
//! its ext fields is served only when every name it carries matches a pattern of the list for it
//! (a list not given leaves that name free). An account with neither list may act for any
//! broker; [`overlaps`] names the pairs of broker accounts that can so act for each other's
//! groups, for the start-up warning.
//!
//! Checked at admission from the request's ext fields, before any handler runs, so a refused
//! request changes no route table.

use remoting::RemotingCommand;

/// The ext field naming the cluster.
const CLUSTER_NAME: &str = "clusterName";
/// The ext field naming the broker group.
const BROKER_NAME: &str = "brokerName";
/// How much of a wire name a refusal's remark repeats.
const SHOWN: usize = 128;

/// A name pattern: `*` matches any run of characters (none included), everything else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern(String);

impl NamePattern {
    /// The pattern as written; an empty one is refused.
    pub fn new(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty name pattern".into());
        }
        Ok(NamePattern(text.to_owned()))
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        glob(self.0.as_bytes(), name.as_bytes())
    }

    /// Whether some name matches both patterns (so two accounts could both act for it).
    fn meets(&self, other: &NamePattern) -> bool {
        intersect(self.0.as_bytes(), other.0.as_bytes())
    }
}

/// `*`-only glob, iterative with one backtrack point: linear in practice, never exponential.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, n));
            p += 1;
        } else if p < pattern.len() && pattern[p] == name[n] {
            p += 1;
            n += 1;
        } else if let Some((sp, sn)) = star {
            p = sp + 1;
            n = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Whether two `*` patterns match a common name (patterns come from the accounts file: short;
/// memoised over positions, so quadratic at worst).
fn intersect(a: &[u8], b: &[u8]) -> bool {
    let mut seen = vec![vec![None; b.len() + 1]; a.len() + 1];
    meet(a, b, 0, 0, &mut seen)
}

fn meet(a: &[u8], b: &[u8], i: usize, j: usize, seen: &mut Vec<Vec<Option<bool>>>) -> bool {
    if let Some(known) = seen[i][j] {
        return known;
    }
    let result = match (a.get(i), b.get(j)) {
        (None, None) => true,
        (Some(b'*'), _) => {
            meet(a, b, i + 1, j, seen) || (j < b.len() && meet(a, b, i, j + 1, seen))
        }
        (_, Some(b'*')) => {
            meet(a, b, i, j + 1, seen) || (i < a.len() && meet(a, b, i + 1, j, seen))
        }
        (Some(x), Some(y)) => x == y && meet(a, b, i + 1, j + 1, seen),
        _ => false,
    };
    seen[i][j] = Some(result);
    result
}

/// The broker groups an account may act for; `None` lists mean any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    /// `clusters`: the clusters it may act in.
    pub clusters: Option<Vec<NamePattern>>,
    /// `brokerNames`: the broker groups it may act for.
    pub broker_names: Option<Vec<NamePattern>>,
}

/// A request outside the caller's ownership: the names it carried (clipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOwned {
    /// The request's `clusterName`, when it had one.
    pub cluster: Option<String>,
    /// The request's `brokerName`, when it had one.
    pub broker_name: Option<String>,
}

impl std::fmt::Display for NotOwned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.broker_name, &self.cluster) {
            (Some(name), Some(cluster)) => {
                write!(f, "broker group {name:?} of cluster {cluster:?}")
            }
            (Some(name), None) => write!(f, "broker group {name:?}"),
            (None, Some(cluster)) => write!(f, "cluster {cluster:?}"),
            (None, None) => f.write_str("this broker"),
        }
    }
}

impl Ownership {
    /// From the account's `clusters` and `brokerNames` lists.
    pub fn parse(
        clusters: Option<Vec<String>>,
        broker_names: Option<Vec<String>>,
    ) -> Result<Self, String> {
        let patterns = |list: Option<Vec<String>>, what: &str| {
            list.map(|items| {
                items
                    .iter()
                    .flat_map(|item| item.split(','))
                    .filter(|p| !p.trim().is_empty())
                    .map(|p| NamePattern::new(p).map_err(|e| format!("{what}: {e}")))
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|list| match list.is_empty() {
                        true => Err(format!("{what} lists no pattern")),
                        false => Ok(list),
                    })
            })
            .transpose()
        };
        Ok(Ownership {
            clusters: patterns(clusters, "clusters")?,
            broker_names: patterns(broker_names, "brokerNames")?,
        })
    }

    /// Whether the account may act for any broker (neither list given).
    pub fn is_unrestricted(&self) -> bool {
        self.clusters.is_none() && self.broker_names.is_none()
    }

    /// Whether `request` names only clusters and broker groups this account owns.
    pub fn permits(&self, request: &RemotingCommand) -> Result<(), NotOwned> {
        let cluster = request.ext(CLUSTER_NAME);
        let broker_name = request.ext(BROKER_NAME);
        let fits = |list: &Option<Vec<NamePattern>>, name: Option<&str>| match (list, name) {
            (Some(list), Some(name)) => list.iter().any(|p| p.matches(name)),
            _ => true,
        };
        if fits(&self.clusters, cluster) && fits(&self.broker_names, broker_name) {
            return Ok(());
        }
        let clip = |s: &str| s.chars().take(SHOWN).collect::<String>();
        Err(NotOwned { cluster: cluster.map(clip), broker_name: broker_name.map(clip) })
    }

    /// Whether some broker group (cluster and name) is owned by both.
    pub fn overlaps(&self, other: &Ownership) -> bool {
        let meets = |a: &Option<Vec<NamePattern>>, b: &Option<Vec<NamePattern>>| match (a, b) {
            (Some(a), Some(b)) => a.iter().any(|x| b.iter().any(|y| x.meets(y))),
            _ => true,
        };
        meets(&self.clusters, &other.clusters) && meets(&self.broker_names, &other.broker_names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::RequestCode;

    fn pattern(s: &str) -> NamePattern {
        NamePattern::new(s).expect("pattern")
    }

    fn own(clusters: Option<&[&str]>, names: Option<&[&str]>) -> Ownership {
        let list = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| s.to_string()).collect());
        Ownership::parse(list(clusters), list(names)).expect("ownership")
    }

    fn heartbeat(cluster: Option<&str>, name: Option<&str>) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::BrokerHeartbeat);
        let mut ext = remoting::ExtFields::default();
        if let Some(c) = cluster {
            ext.insert("clusterName", c);
        }
        if let Some(n) = name {
            ext.insert("brokerName", n);
        }
        cmd.ext_fields = Some(ext);
        cmd
    }

    #[test]
    fn patterns_match_with_stars_anywhere() {
        let cases = [
            ("bn-a", "bn-a", true),
            ("bn-a", "bn-ab", false),
            ("bn-*", "bn-", true),
            ("bn-*", "bn-victim", true),
            ("bn-*", "xbn-a", false),
            ("*-a", "bn-a", true),
            ("b*n*-a", "broker-n1-a", true),
            ("b*n*-a", "broker-n1-b", false),
            ("*", "", true),
            ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ];
        for (p, name, expected) in cases {
            assert_eq!(pattern(p).matches(name), expected, "{p} ~ {name}");
        }
        assert!(NamePattern::new("  ").is_err());
    }

    #[test]
    fn a_request_must_name_only_owned_groups() {
        let owner = own(Some(&["prod"]), Some(&["bn-a", "bn-a-*"]));
        assert!(owner.permits(&heartbeat(Some("prod"), Some("bn-a"))).is_ok());
        assert!(owner.permits(&heartbeat(Some("prod"), Some("bn-a-2"))).is_ok());
        assert!(owner.permits(&heartbeat(None, Some("bn-a"))).is_ok());
        let refused = owner.permits(&heartbeat(Some("prod"), Some("bn-victim"))).unwrap_err();
        assert_eq!(refused.to_string(), r#"broker group "bn-victim" of cluster "prod""#);
        assert!(owner.permits(&heartbeat(Some("test"), Some("bn-a"))).is_err());
        let long = "x".repeat(10_000);
        let refused = owner.permits(&heartbeat(None, Some(&long))).unwrap_err();
        assert_eq!(refused.broker_name.map(|n| n.len()), Some(SHOWN));
        assert!(Ownership::default().permits(&heartbeat(Some("any"), Some("any"))).is_ok());
        assert!(Ownership::default().is_unrestricted() && !owner.is_unrestricted());
    }

    #[test]
    fn overlaps_are_found_through_patterns_and_missing_lists() {
        let a = own(None, Some(&["bn-a*"]));
        let b = own(None, Some(&["bn-b*"]));
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&own(None, Some(&["*-a1"]))));
        assert!(a.overlaps(&Ownership::default()));
        assert!(own(Some(&["prod"]), None).overlaps(&a));
        assert!(!own(Some(&["prod"]), None).overlaps(&own(Some(&["test"]), None)));
    }
}
