//! What the documentation says about one configuration key: [`KeyInfo`], built by a key table
//! (the nameserver's `config_struct!`) from each key's `///` text and its `#[key(...)]` markers.
//!
//! A key with no marker is documented as this server's own key (no Java equivalent) that takes
//! effect at the next start: the safe claims. Markers, written above the field after its `///`
//! lines, add what is known:
//!
//! - `java = "NamesrvConfig"` (or any Java class): the same key exists in that Java class;
//!   `system_property`: Java reads it as a JVM `-D` system property.
//! - `dynamic`: an UPDATE_NAMESRV_CONFIG (318) changes the running server at once, because the
//!   code reads the key from `SharedConfig::load()` each time it needs it.
//! - `no_effect`: accepted and printed for compatibility, but nothing here reads it.
//! - `refused`: the update request refuses it (the nameserver sets it itself for the keys of
//!   its default black list).
//! - `default_doc = "..."`: the default as documented, for defaults that depend on the
//!   environment (the computed default would differ between machines).

/// Where a key comes from in the Java NameServer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JavaOrigin {
    /// A key of this server only.
    None,
    /// A field of this Java configuration class (e.g. `NamesrvConfig`), set from the `-c` file.
    Class(&'static str),
    /// A JVM system property (`-Dkey=value`), which this server reads from the `-c` file.
    SystemProperty,
}

/// A key's default as the documentation shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultValue {
    /// No value by default.
    Unset,
    /// This text (shown as code).
    Value(String),
    /// Described in words (Markdown), for defaults that depend on the environment.
    Described(&'static str),
}

/// One configuration key as the documentation describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key's name in the `-c` file, `-p`, 318 and 319 (Java's spelling).
    pub key: &'static str,
    /// The value type as an operator reads it (`int`, `boolean`, `string`, …).
    pub value_type: &'static str,
    /// The default.
    pub default: DefaultValue,
    /// The `///` text of the key, lines joined with `\n`, leading space of each line removed.
    pub doc: String,
    /// Where the key comes from in Java.
    pub java: JavaOrigin,
    /// True when an UPDATE_NAMESRV_CONFIG (318) takes effect without a restart.
    pub dynamic: bool,
    /// True when nothing in this server reads the key (kept for compatibility).
    pub no_effect: bool,
    /// True when the update request (UPDATE_NAMESRV_CONFIG) refuses the key.
    pub refused: bool,
    /// The accepted values when narrower than the type, e.g. `0 to 65535`.
    pub valid: Option<String>,
}

impl KeyInfo {
    /// A key of this server only that takes effect at the next start; markers refine it.
    /// `default` is the default's text form (`None`: unset); `doc_lines` the `///` lines.
    pub fn new(
        key: &'static str,
        value_type: &'static str,
        default: Option<String>,
        doc_lines: &[&str],
    ) -> Self {
        let doc = doc_lines
            .iter()
            .map(|line| line.strip_prefix(' ').unwrap_or(line))
            .collect::<Vec<_>>()
            .join("\n");
        KeyInfo {
            key,
            value_type,
            default: default.map_or(DefaultValue::Unset, DefaultValue::Value),
            doc,
            java: JavaOrigin::None,
            dynamic: false,
            no_effect: false,
            refused: false,
            valid: None,
        }
    }

    /// Marker `java = "Class"`: the key is a field of that Java configuration class.
    pub fn java(mut self, class: &'static str) -> Self {
        self.java = JavaOrigin::Class(class);
        self
    }

    /// Marker `system_property`: Java reads the key as a JVM `-D` system property.
    pub fn system_property(mut self) -> Self {
        self.java = JavaOrigin::SystemProperty;
        self
    }

    /// Marker `dynamic`: UPDATE_NAMESRV_CONFIG changes the running server at once.
    pub fn dynamic(mut self) -> Self {
        self.dynamic = true;
        self
    }

    /// Marker `no_effect`: accepted for compatibility, read by nothing.
    pub fn no_effect(mut self) -> Self {
        self.no_effect = true;
        self
    }

    /// Marker `refused`: the update request refuses the key.
    pub fn refused(mut self) -> Self {
        self.refused = true;
        self
    }

    /// The accepted values when narrower than the type (the table's range check).
    pub fn valid(mut self, text: String) -> Self {
        self.valid = Some(text);
        self
    }

    /// Where the key comes from in Java, in a word: the class, `-D`, or `none`.
    pub fn java_source(&self) -> &'static str {
        match self.java {
            JavaOrigin::None => "none",
            JavaOrigin::Class(class) => class,
            JavaOrigin::SystemProperty => "`-D`",
        }
    }

    /// What an update does to the running server, as the reference's column says it.
    pub fn run_time_change(&self) -> &'static str {
        match (self.refused, self.no_effect, self.dynamic) {
            (true, true, _) => "refused (unused)",
            (true, false, _) => "refused",
            (false, true, _) => "none (unused)",
            (false, false, true) => "at once",
            (false, false, false) => "next start",
        }
    }

    /// The Java equivalent as the reference shows it, e.g. `` `NamesrvConfig.listenPort` ``.
    pub fn java_equivalent(&self) -> String {
        match self.java {
            JavaOrigin::None => "none".to_owned(),
            JavaOrigin::Class(class) => format!("`{class}.{}`", self.key),
            JavaOrigin::SystemProperty => format!("`-D{}`", self.key),
        }
    }

    /// Marker `default_doc = "..."`: the documented default, for environment-dependent ones.
    pub fn default_doc(mut self, text: &'static str) -> Self {
        self.default = DefaultValue::Described(text);
        self
    }
}
