//! The `kvConfigPath` file format: Java's exact JSON shape,
//! `{"configTable":{"NS":{"key":"value"}}}`, so the file moves freely between Java and us.

use std::collections::BTreeMap;

use remoting::fastjson;
use serde_json::Value;

/// Namespaces → keys → values.
pub(super) type Table = BTreeMap<String, BTreeMap<String, String>>;

fn push_json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    fastjson::escape_legacy_into(out, s);
    out.push(b'"');
}

/// The file content for `table`: compact, fastjson escaping, sorted keys.
/// Java: `KVConfigSerializeWrapper#toJson`
pub(super) fn to_json(table: &Table) -> String {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"configTable\":{");
    for (i, (namespace, entries)) in table.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json_string(&mut out, namespace);
        out.extend_from_slice(b":{");
        for (j, (key, value)) in entries.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            push_json_string(&mut out, key);
            out.push(b':');
            push_json_string(&mut out, value);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
    // Only whole UTF-8 strings and ASCII were pushed.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A JSON scalar as Java's `HashMap<String,String>` value would hold it.
fn scalar_text(v: &Value) -> Option<Result<String, String>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(Ok(s.clone())),
        Value::Number(n) => Some(Ok(n.to_string())),
        Value::Bool(b) => Some(Ok(b.to_string())),
        Value::Array(_) | Value::Object(_) => {
            Some(Err("a value is an array or object, expected a string".to_owned()))
        }
    }
}

/// Reads a `kvConfigPath` file: empty or `null` is an empty table; fastjson's leniency
/// (single quotes, unquoted keys, trailing commas); null values skipped, numbers and booleans
/// kept as their text. `Err` says what is malformed. Java: `KVConfigManager#load`
pub(super) fn parse_file(bytes: &[u8]) -> Result<Table, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Table::new());
    }
    let root = fastjson::parse_lenient(bytes).map_err(|e| e.to_string())?;
    let root = match root {
        Value::Null => return Ok(Table::new()),
        Value::Object(map) => map,
        _ => return Err("top level is not a JSON object".to_owned()),
    };
    let config_table = match root.get("configTable") {
        None | Some(Value::Null) => return Ok(Table::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("\"configTable\" is not an object".to_owned()),
    };
    let mut table = Table::new();
    for (namespace, entries) in config_table {
        let entries = match entries {
            Value::Null => continue,
            Value::Object(map) => map,
            _ => return Err(format!("namespace {namespace:?} is not an object")),
        };
        let ns = table.entry(namespace.clone()).or_default();
        for (key, value) in entries {
            if let Some(text) = scalar_text(value) {
                ns.insert(key.clone(), text.map_err(|e| format!("{namespace:?}/{key:?}: {e}"))?);
            }
        }
    }
    Ok(table)
}
