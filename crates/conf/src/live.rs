//! [`Live`]: a server's running configuration, which GET_*_CONFIG prints and UPDATE_*_CONFIG
//! replaces, persisted before it is published.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::{ArcSwap, Guard};
use thiserror::Error;

use crate::persist;
use crate::properties::{self, PropertiesError};
use crate::table::{ConfigError, Rules};

/// Why an UPDATE_*_CONFIG was refused. `Display` is the response remark.
#[derive(Debug, Error)]
pub enum ConfigUpdateError {
    /// The body is not properties text. Maps to SYSTEM_ERROR.
    #[error("string2Properties error")]
    Parse(#[source] PropertiesError),
    /// A key of the body is in the black list. Maps to NO_PERMISSION.
    #[error("Can not update config in black list.")]
    NoPermission {
        /// The first black-listed key found.
        key: String,
    },
    /// A value is invalid; nothing was applied. Maps to SYSTEM_ERROR (Java ignores the value
    /// silently and answers SUCCESS).
    #[error("{0}")]
    InvalidValue(ConfigError),
    /// A key or value holds a line break or another control character (Java persists it
    /// unescaped, so an escaped `\n` in a value writes a new key into the `-c` file). Maps to
    /// SYSTEM_ERROR; nothing was applied.
    #[error("config key {key}: a key or value may not contain a line break or another control character")]
    ControlCharacter {
        /// The key (clipped, control characters escaped).
        key: String,
    },
    /// The file that would be written does not read back as the configuration being stored,
    /// or would change a black-listed key. Maps to SYSTEM_ERROR; nothing was written.
    #[error("config update refused: the stored file would not read back as written (key {key})")]
    ReadBack {
        /// The first key that differs.
        key: String,
    },
    /// The new configuration could not be written to `configStorePath`; nothing was applied.
    /// Maps to SYSTEM_ERROR (Java logs the error and answers SUCCESS).
    #[error("cannot persist config to {}: {source}", path.display())]
    Persist {
        /// `configStorePath`.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The live configuration: lock-free reads of an immutable snapshot, updates that swap in a new
/// snapshot at once. The black list is fixed at construction, like Java.
///
/// The API is synchronous and [`Live::apply_update`] does blocking file I/O: async code calls it
/// from `spawn_blocking`. [`Live::load`] never blocks.
#[derive(Debug)]
pub struct Live<T> {
    current: ArcSwap<T>,
    black_list: BTreeSet<String>,
    /// Serializes updates (read-modify-persist-publish) so the file and memory agree.
    update_lock: Mutex<()>,
}

impl<T: Rules> Live<T> {
    /// Wraps the start-up configuration; computes the black list from it.
    pub fn new(config: T) -> Self {
        let black_list = config.update_black_list();
        Self { current: ArcSwap::from_pointee(config), black_list, update_lock: Mutex::new(()) }
    }

    /// The current snapshot; cheap, never blocks. Re-load per request to see updates; don't
    /// hold the guard across an `.await`.
    pub fn load(&self) -> Guard<Arc<T>> {
        self.current.load()
    }

    /// The current snapshot as an owned `Arc` (to keep across `.await`s).
    pub fn snapshot(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// The keys an update refuses (fixed at construction).
    pub fn black_list(&self) -> &BTreeSet<String> {
        &self.black_list
    }

    /// Every set key as `key=value\n`, sorted, secrets included (what is persisted).
    pub fn to_properties_text(&self) -> String {
        crate::table::properties_text(&**self.load())
    }

    /// The GET_*_CONFIG body: every set key as `key=value\n`, sorted, secrets redacted.
    pub fn to_public_properties_text(&self) -> String {
        crate::table::public_properties_text(&**self.load())
    }

    /// UPDATE_*_CONFIG. An empty body changes nothing. Otherwise the body is read as properties
    /// text (failure: [`ConfigUpdateError::Parse`]); any black-listed key refuses the whole
    /// update ([`ConfigUpdateError::NoPermission`]); typed keys are converted and keys already
    /// in the extra map replaced, other keys are dropped (Java `mergeIfExist`); the result is
    /// validated — unlike Java, a bad value refuses the whole update
    /// ([`ConfigUpdateError::InvalidValue`]) — then written to `configStorePath` (sorted
    /// `key=value`, previous content kept in `<path>.bak`, atomic) and only then published, so
    /// a failed write ([`ConfigUpdateError::Persist`]) changes nothing either.
    /// Blocking (file I/O). Java: `Configuration#update`
    pub fn apply_update(&self, body: &[u8]) -> Result<(), ConfigUpdateError> {
        if body.is_empty() {
            return Ok(());
        }
        let entries = properties::parse_bytes(body).map_err(ConfigUpdateError::Parse)?;
        if let Some((key, _)) = entries.iter().find(|(key, _)| self.black_list.contains(key)) {
            return Err(ConfigUpdateError::NoPermission { key: key.clone() });
        }
        if let Some((key, _)) =
            entries.iter().find(|(k, v)| k.chars().chain(v.chars()).any(char::is_control))
        {
            return Err(ConfigUpdateError::ControlCharacter { key: printable(key) });
        }

        let _guard = self.update_lock.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = T::clone(&self.current.load());
        for (key, value) in entries {
            if value == crate::table::REDACTED && crate::table::is_secret_key(&key) {
                // A GET_*_CONFIG listing sent back unchanged: keep the secret it hid.
                continue;
            }
            let known = next.set_value(&key, &value).map_err(ConfigUpdateError::InvalidValue)?;
            if known {
                continue;
            }
            if let Some(slot) = next.extra_mut().get_mut(&key) {
                *slot = value;
            } else {
                tracing::info!(key = %key, "config update: unknown key dropped");
            }
        }
        next.check().map_err(ConfigUpdateError::InvalidValue)?;
        next.check_update(&self.current.load()).map_err(ConfigUpdateError::InvalidValue)?;

        let path = next.store_path();
        let text = crate::table::store_text(&next);
        self.check_read_back(&text, &next)?;
        persist::write_atomically(&path, text.as_bytes())
            .map_err(|source| ConfigUpdateError::Persist { path, source })?;
        self.current.store(Arc::new(next));
        tracing::info!("config updated and persisted");
        Ok(())
    }

    /// The black list holds against what the written file will read back as at the next start,
    /// not only against the keys of the body: the text must parse back into exactly the
    /// entries of `next`, and leave every black-listed key as it is now.
    fn check_read_back(&self, text: &str, next: &T) -> Result<(), ConfigUpdateError> {
        let expected = crate::table::sorted_entries(next);
        let back = properties::parse(text).map_err(ConfigUpdateError::Parse)?;
        let running = crate::table::sorted_entries(&**self.current.load());
        let mut seen = std::collections::BTreeMap::new();
        for (key, value) in &back {
            let differs = expected.get(key) != Some(value) || seen.insert(key, value).is_some();
            let black = self.black_list.contains(key) && running.get(key) != Some(value);
            if differs || black {
                return Err(ConfigUpdateError::ReadBack { key: printable(key) });
            }
        }
        if let Some(key) = expected.keys().find(|k| !seen.contains_key(k)) {
            return Err(ConfigUpdateError::ReadBack { key: printable(key) });
        }
        Ok(())
    }
}

/// A key for a remark or a log line: at most 64 chars, control characters escaped.
fn printable(key: &str) -> String {
    let mut out: String = key.chars().take(64).flat_map(char::escape_debug).collect();
    if key.chars().nth(64).is_some() {
        out.push('…');
    }
    out
}
