//! Java properties text as the nameserver config calls carry it (`key=value` lines).

use std::collections::BTreeMap;

/// Parses `key=value` lines like `java.util.Properties#load` for the simple text a nameserver
/// writes: blank lines and `#`/`!` comments skipped, the key ends at the first `=` or `:`
/// (or blank), surrounding blanks trimmed from the key and leading blanks from the value.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':', ' ', '\t']).unwrap_or(line.len());
        let key = &line[..split];
        let mut rest = line[split..].trim_start_matches([' ', '\t']);
        if let Some(r) = rest.strip_prefix(['=', ':']) {
            rest = r.trim_start_matches([' ', '\t']);
        }
        out.insert(key.to_owned(), rest.to_owned());
    }
    out
}

/// `key=value\n` per entry, sorted by key (Java `MixAll#properties2String`).
pub fn to_string(props: &BTreeMap<String, String>) -> String {
    props.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nameserver_config_text() {
        let p = parse("# c\nlistenPort=9876\n\nrocketmqHome = /opt/rmq\nempty=\nkvConfigPath:/x\n");
        assert_eq!(p["listenPort"], "9876");
        assert_eq!(p["rocketmqHome"], "/opt/rmq");
        assert_eq!(p["empty"], "");
        assert_eq!(p["kvConfigPath"], "/x");
        assert_eq!(p.len(), 4);
    }

    #[test]
    fn writes_sorted_lines() {
        let props = [("b".to_owned(), "2".to_owned()), ("a".to_owned(), "1".to_owned())]
            .into_iter()
            .collect();
        assert_eq!(to_string(&props), "a=1\nb=2\n");
    }
}
