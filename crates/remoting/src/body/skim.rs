//! Skimming a REGISTER_BROKER body without decoding its topic table: where its `DataVersion`
//! sits and what it says, so a server can tell a re-registration whose every other byte equals
//! the broker's previous one (only the `DataVersion` moved, e.g. a stateVersion bump or a
//! version counter bumped by an update that changed nothing) from one that must be decoded.
//!
//! The scan walks the top-level object and the wrapper object entry by entry and skips every
//! other value by string-aware bracket matching; it does not validate what it skips. That is
//! sound for its use: a body is only treated as "unchanged" when every byte outside the
//! `DataVersion` value equals a previous body that decoded fully, and the new `DataVersion`
//! value decodes on its own, so the new body decodes to the previous result with the new
//! version.

use wide::u8x16;

use super::guide::{Guide, Run, Shape, RUN};
use super::register_digest::{Around, Trailing, Xxh3};
use super::table_digest::TableDigests;
use super::VersionFrame;
use super::{from_json, DataVersion};
use crate::version;

/// A skimmed body: its `DataVersion`, and the bytes before and after that value.
#[derive(Debug, PartialEq, Eq)]
pub struct Skimmed<'a> {
    pub data_version: DataVersion,
    pub before: &'a [u8],
    pub after: &'a [u8],
}

/// The top-level key of the wrapper in a ≥ V3_0_11 body.
const WRAPPER: &[u8] = b"topicConfigSerializeWrapper";
const DATA_VERSION: &[u8] = b"dataVersion";

/// Skims an uncompressed JSON REGISTER_BROKER body sent by a broker of `broker_version`.
/// `None` when the body is not of the plain expected shape: not an object, fastjson-only syntax
/// at the walked levels (single quotes, unquoted keys), a `$ref` anywhere, the wrapper or its
/// `dataVersion` missing or repeated or not objects, or a `DataVersion` that does not decode.
/// The caller then decodes the body fully, which gives the authoritative answer or error.
pub fn skim_register_body(bytes: &[u8], broker_version: i32) -> Option<Skimmed<'_>> {
    if broker_version < 0 || memchr::memmem::find(bytes, b"$ref").is_some() {
        return None;
    }
    let top = skip_ws(bytes, 0);
    let wrapper = if broker_version < version::V3_0_11 {
        // A bare TopicConfigSerializeWrapper.
        let end = skip_value(bytes, top)?;
        if skip_ws(bytes, end) != bytes.len() {
            return None;
        }
        top
    } else {
        let (wrapper, end) = only_entry(bytes, top, WRAPPER)?;
        if skip_ws(bytes, end) != bytes.len() {
            return None;
        }
        wrapper
    };
    let (start, _) = only_entry(bytes, wrapper, DATA_VERSION)?;
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let end = skip_value(bytes, start)?;
    let data_version = from_json(&bytes[start..end]).ok()?;
    Some(Skimmed { data_version, before: &bytes[..start], after: &bytes[end..] })
}

/// A body's topic table as sent, for applying a registration as its difference from the
/// broker's previous one: every entry's bytes, and the bytes outside the table and the
/// `DataVersion`.
#[derive(Debug, PartialEq, Eq)]
pub struct TopicTable<'a> {
    pub data_version: DataVersion,
    /// The `topicConfigTable` entries in body order: the key (between its quotes; never an
    /// escape) and the value (an object, not validated).
    pub entries: Vec<(&'a [u8], &'a [u8])>,
    /// Each entry's [`TableDigests::entry`] digests, in body order, when asked for
    /// ([`skim_and_digest`]; else empty).
    pub digests: Vec<(u64, u64)>,
    /// The entries in runs ([`Run::all`]'s), when digests were asked for (else empty): a run
    /// the guide took whole keeps its digest, the others are digested on the way.
    pub runs: Vec<Run>,
    /// The body digested around its `DataVersion` and its frame, when asked for
    /// ([`skim_and_digest`]) and the version comes before the table, as brokers write it.
    pub around: Option<(Around, VersionFrame)>,
    /// The body outside the `DataVersion` value and the `topicConfigTable` value, in order.
    pub outside: [&'a [u8]; 3],
    /// The `topicConfigTable` value.
    pub table: &'a [u8],
    /// The body before and after the `DataVersion` value (as [`Skimmed`]'s).
    pub before: &'a [u8],
    pub after: &'a [u8],
}

const TOPIC_CONFIG_TABLE: &[u8] = b"topicConfigTable";

/// Skims an uncompressed JSON REGISTER_BROKER body for its topic table, in one walk: `None`
/// for every shape [`skim_register_body`] refuses, and also when the wrapper has no single
/// `topicConfigTable` object, a topic key holds an escape or a value is not an object.
/// Entries are not decoded: a caller decodes those it needs with [`from_json`], as the full
/// decoder would.
pub fn skim_topic_table(bytes: &[u8], broker_version: i32) -> Option<TopicTable<'_>> {
    skim(bytes, broker_version, None)
}

/// [`skim_topic_table`] with each entry digested ([`TableDigests::entry`]) as soon as it is
/// skimmed, while its bytes are in the cache (a pass of their own read the 2 MB body from
/// memory again), into [`TopicTable::digests`]; guided by the `shapes` of the broker's
/// previous body ([`Guide`]): an entry that is, by digest, the one a shape describes is not
/// skimmed at all, nor digested when it is in a run that is, by digest, one of the previous
/// body's `runs`. Given shapes, the body's plain-text pass is skipped too (the entries taken
/// by shape were checked with the body they came from; the others, and the rest, are skimmed
/// as a body that is not plain). The whole body is digested around its `DataVersion` on the
/// way too, with `fields` (the request's header digest), into [`TopicTable::around`].
pub fn skim_and_digest<'a>(
    bytes: &'a [u8],
    broker_version: i32,
    shapes: &[Shape],
    runs: &[Run],
    fields: &Xxh3,
) -> Option<TopicTable<'a>> {
    skim(bytes, broker_version, Some((Guide::new(shapes, runs), fields)))
}

/// The skim; `digesting`: digest each entry, guided by these shapes, and the body with these
/// header fields.
fn skim<'a>(
    bytes: &'a [u8],
    broker_version: i32,
    digesting: Option<(Guide<'_>, &Xxh3)>,
) -> Option<TopicTable<'a>> {
    let (mut digesting, fields) = digesting.unzip();
    if broker_version < 0 {
        return None;
    }
    let guided = digesting.as_ref().is_some_and(|guide| !guide.is_empty());
    // A body without `\`, `'` or `$` (a broker's, as a rule) has no `$ref`, and its entries can
    // be skipped a block at a time.
    let plain = !guided && memchr::memchr3(b'\\', b'\'', b'$', bytes).is_none();
    if !plain && !guided && memchr::memmem::find(bytes, b"$ref").is_some() {
        return None;
    }
    let top = skip_ws(bytes, 0);
    let (walked, end) = if broker_version < version::V3_0_11 {
        walk_wrapper(bytes, top, plain, &mut digesting, fields)?
    } else {
        let mut found = None;
        let end = walk_object(bytes, top, plain, |name, value| {
            if name != WRAPPER {
                return skip_value(bytes, value);
            }
            if found.is_some() {
                return None;
            }
            let (walked, end) = walk_wrapper(bytes, value, plain, &mut digesting, fields)?;
            found = Some(walked);
            Some(end)
        })?;
        (found?, end)
    };
    if skip_ws(bytes, end) != bytes.len() {
        return None;
    }
    let Walked { dv, table, entries, digests, runs, trailing } = walked;
    let (dv, table) = (dv?, table?);
    // Guided, the entries skimmed were checked for `$ref` one by one; the rest is checked here.
    let has_ref = |part: &[u8]| memchr::memmem::find(part, b"$ref").is_some();
    if guided && (has_ref(&bytes[..table.start]) || has_ref(&bytes[table.end..])) {
        return None;
    }
    let data_version = from_json(&bytes[dv.clone()]).ok()?;
    let (before, after) = (&bytes[..dv.start], &bytes[dv.end..]);
    let table_bytes = &bytes[table.clone()];
    let (first, second) = if dv.start < table.start { (dv, table) } else { (table, dv) };
    let outside = [&bytes[..first.start], &bytes[first.end..second.start], &bytes[second.end..]];
    let table = table_bytes;
    // Finished only for a body the skim took.
    let around = trailing.and_then(|trailing| trailing.finish(bytes));
    Some(TopicTable { data_version, entries, digests, runs, around, outside, table, before, after })
}

/// Room for a body's topic-table entries: a broker's entry is ~190 bytes, so most tables fit
/// without a regrowth (whose copies were 2.5 % of the prepare thread under S7's 1 % churn).
pub fn entries_in(body: &[u8]) -> usize {
    body.len() / 160
}

/// What a walk of the wrapper found: the `DataVersion` and `topicConfigTable` values and the
/// table's entries.
struct Walked<'a> {
    dv: Option<std::ops::Range<usize>>,
    table: Option<std::ops::Range<usize>>,
    entries: Vec<(&'a [u8], &'a [u8])>,
    digests: Vec<(u64, u64)>,
    runs: Vec<Run>,
    /// The body digested behind the walk, from the table on (the version found before it).
    trailing: Option<Trailing>,
}

impl Walked<'_> {
    /// Adds the runs its entries now fill: the one the guide just `taken` whole (its first
    /// entry's index, and the run) as it is, when it is one of them; any other digested.
    fn close_runs(&mut self, body: &[u8], taken: Option<(usize, Run)>) {
        while (self.runs.len() + 1) * RUN <= self.entries.len() {
            let first = self.runs.len() * RUN;
            let run = match taken {
                Some((at, run)) if at == first => run,
                _ => Run::of(body, &self.entries[first..first + RUN]),
            };
            self.runs.push(run);
        }
    }
}

/// Walks the wrapper object at `at`: each of its two keys at most once, each an object.
/// `plain`: the body holds no `\`, `'` or `$` ([`skip_plain_object`] applies).
fn walk_wrapper<'a>(
    bytes: &'a [u8],
    at: usize,
    plain: bool,
    digesting: &mut Option<Guide<'_>>,
    fields: Option<&Xxh3>,
) -> Option<(Walked<'a>, usize)> {
    let mut walked = Walked {
        dv: None,
        table: None,
        entries: Vec::new(),
        digests: Vec::new(),
        runs: Vec::new(),
        trailing: None,
    };
    let end = walk_object(bytes, at, plain, |name, value| {
        if (name == DATA_VERSION || name == TOPIC_CONFIG_TABLE) && bytes.get(value) != Some(&b'{') {
            return None;
        }
        if name == DATA_VERSION {
            let end = skip_value(bytes, value)?;
            walked.dv.replace(value..end).is_none().then_some(end)
        } else if name == TOPIC_CONFIG_TABLE {
            let room = entries_in(bytes);
            walked.entries = Vec::with_capacity(room);
            walked.digests = Vec::with_capacity(if digesting.is_some() { room } else { 0 });
            walked.trailing =
                fields.zip(walked.dv.clone()).map(|(fields, dv)| Trailing::new(fields, bytes, dv));
            let end = walk_table(bytes, value, plain, digesting.as_mut(), &mut walked)?;
            walked.table.replace(value..end).is_none().then_some(end)
        } else {
            skip_value(bytes, value)
        }
    })?;
    Some((walked, end))
}

/// Walks the topic table at `at` (an object whose values are objects) into `walked`'s entries
/// (and digests, when `digesting`); the index after it. An entry the guide places is taken as
/// it is; any other is skimmed (and, guided, checked for a `$ref`).
fn walk_table<'a>(
    bytes: &'a [u8],
    at: usize,
    plain: bool,
    mut digesting: Option<&mut Guide<'_>>,
    walked: &mut Walked<'a>,
) -> Option<usize> {
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let guided = digesting.as_ref().is_some_and(|guide| !guide.is_empty());
    let mut i = skip_ws(bytes, at + 1);
    if bytes.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if let Some(trailing) = walked.trailing.as_mut() {
            trailing.follow(bytes, i);
        }
        let taken_at = walked.entries.len();
        let run = digesting
            .as_mut()
            .and_then(|guide| guide.take_run(bytes, i, &mut walked.entries, &mut walked.digests));
        // A run of the previous body's, else one of its entries, else the entry skimmed.
        let end = if let Some((end, _)) = run {
            end
        } else if let Some((key, value, digests, end)) =
            digesting.as_mut().and_then(|guide| guide.place(bytes, i))
        {
            walked.entries.push((key, value));
            walked.digests.push(digests);
            end
        } else {
            let (key, start) = key_at(bytes, i, plain)?;
            if bytes.get(start) != Some(&b'{') {
                return None;
            }
            let end =
                if plain { skip_plain_object(bytes, start) } else { skip_value(bytes, start) }?;
            let value = &bytes[start..end];
            if guided && memchr::memmem::find(&bytes[i..end], b"$ref").is_some() {
                return None;
            }
            if digesting.is_some() {
                walked.digests.push(TableDigests::entry(key, value));
            }
            walked.entries.push((key, value));
            end
        };
        if digesting.is_some() {
            walked.close_runs(bytes, run.map(|(_, run)| (taken_at, run)));
        }
        i = skip_ws(bytes, end);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Walks the object at `at`: `entry(key, value start)` for each entry, returning the index
/// after its value; the index after the object. `None` if a key holds an escape, the object
/// is malformed or `entry` says `None`. `plain`: the body holds no `\\` (no key to check).
fn walk_object<'a>(
    bytes: &'a [u8],
    at: usize,
    plain: bool,
    mut entry: impl FnMut(&'a [u8], usize) -> Option<usize>,
) -> Option<usize> {
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(bytes, at + 1);
    if bytes.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        let (key, value) = key_at(bytes, i, plain)?;
        i = skip_ws(bytes, entry(key, value)?);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The key of the object entry at `at` (between its quotes) and where its value starts; `None`
/// if it is not a string followed by `:`, or holds an escape (`plain`: the body has none).
fn key_at(bytes: &[u8], at: usize, plain: bool) -> Option<(&[u8], usize)> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let key_end = skip_string(bytes, at)?;
    let key = &bytes[at + 1..key_end - 1];
    if !plain && key.contains(&b'\\') {
        return None;
    }
    let colon = skip_ws(bytes, key_end);
    (bytes.get(colon) == Some(&b':')).then(|| (key, skip_ws(bytes, colon + 1)))
}

/// Walks the object at `at` (which must start there): the value start of its only entry named
/// `key` (an object), and the index after the object. `None` if the key is absent, repeated,
/// written with an escape or its value is not an object, or the object is malformed.
fn only_entry(bytes: &[u8], at: usize, key: &[u8]) -> Option<(usize, usize)> {
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut found = None;
    let mut i = skip_ws(bytes, at + 1);
    if bytes.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(bytes, i)?;
        let name = &bytes[i + 1..key_end - 1];
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        let value = skip_ws(bytes, i + 1);
        if name == key {
            if found.is_some() || bytes.get(value) != Some(&b'{') {
                return None;
            }
            found = Some(value);
        } else if name.contains(&b'\\') {
            // An escaped key might spell `key`; the fixed keys of these levels never need one.
            return None;
        }
        i = skip_ws(bytes, skip_value(bytes, value)?);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b'}') => return found.map(|v| (v, i + 1)),
            _ => return None,
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index after the string starting (with `"`) at `at`.
fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &bytes[i..])?;
        if bytes[i] == b'"' {
            return Some(i + 1);
        }
        i += 2; // the backslash and the escaped byte
        if i > bytes.len() {
            return None;
        }
    }
}

/// [`skip_value`] for an object in a body without `\` or `'`, 64 bytes at a time: the quotes,
/// openings and closings of a block as bit masks, the bytes inside strings by a prefix XOR of
/// the quotes (no escapes), then one step per bracket outside strings instead of one per byte.
/// The same answer as [`skip_value`] on such a body; a third of its time on a broker's body
/// (`examples/delta_cost.rs`).
fn skip_plain_object(bytes: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = 0u64; // all ones when the previous block ended inside a string
    let mut start = at;
    while start < bytes.len() {
        let (quotes, opens, closes) = match bytes.get(start..start + 64) {
            Some(block) => block_masks(block.try_into().expect("64 bytes")),
            None => {
                let mut block = [b' '; 64];
                block[..bytes.len() - start].copy_from_slice(&bytes[start..]);
                block_masks(&block)
            }
        };
        let inside = prefix_xor(quotes) ^ in_string;
        in_string = 0u64.wrapping_sub(inside >> 63);
        let mut brackets = (opens | closes) & !inside;
        while brackets != 0 {
            let bit = brackets.trailing_zeros();
            if opens >> bit & 1 == 1 {
                depth += 1;
            } else {
                depth -= 1;
                if depth == 0 {
                    return Some(start + bit as usize + 1);
                }
            }
            brackets &= brackets - 1;
        }
        start += 64;
    }
    None
}

/// A block's `"`, `{`/`[` and `}`/`]` bytes as bit masks (bit i for byte i), 16 bytes per
/// compare.
fn block_masks(block: &[u8; 64]) -> (u64, u64, u64) {
    let (quote, open, close) = (u8x16::splat(b'"'), u8x16::splat(b'{'), u8x16::splat(b'}'));
    let fold = u8x16::splat(0x20); // `[` → `{`, `]` → `}`; nothing else lands on either
    let (mut quotes, mut opens, mut closes) = (0u64, 0u64, 0u64);
    for (i, chunk) in block.chunks_exact(16).enumerate() {
        let bytes = u8x16::new(chunk.try_into().expect("16 bytes"));
        let folded = bytes | fold;
        let mask = |m: u8x16| u64::from(m.move_mask() as u16) << (16 * i);
        quotes |= mask(bytes.cmp_eq(quote));
        opens |= mask(folded.cmp_eq(open));
        closes |= mask(folded.cmp_eq(close));
    }
    (quotes, opens, closes)
}

/// Bit i set when an odd number of bits 0..=i of `x` are: the bytes from an opening quote up
/// to (not including) its closing one.
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The index after the value starting at `at`: a string, an object or array (brackets matched,
/// strings skipped), or a scalar up to the next delimiter. Not validated. Single quotes
/// (fastjson strings) give `None`, as does running off the end.
fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match *bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            // Strings are scanned inline: a topic config's are short, and a call per string
            // (memchr) cost more than the bytes (#25's profile: the skim was two thirds of a
            // registration applied as its difference).
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match *bytes.get(i)? {
                    b'"' => {
                        i += 1;
                        loop {
                            match *bytes.get(i)? {
                                b'"' => break,
                                b'\\' => i += 2,
                                _ => i += 1,
                            }
                        }
                        i += 1;
                    }
                    b'{' | b'[' => {
                        depth += 1;
                        i += 1;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    b'\'' => return None,
                    _ => i += 1,
                }
            }
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len() - at);
            let scalar = &bytes[at..at + len];
            (len > 0 && !scalar.contains(&b'\'') && !scalar.contains(&b'"')).then_some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{
        to_legacy_json, to_standard_json, RegisterBrokerBody, TopicConfig,
        TopicConfigAndMappingSerializeWrapper,
    };

    fn body(counter: i64, topics: &[&str]) -> RegisterBrokerBody {
        RegisterBrokerBody {
            filter_server_list: Some(vec!["f:1".into()]),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: DataVersion { counter, state_version: 3, timestamp: 77 },
                topic_config_table: topics
                    .iter()
                    .map(|t| (t.to_string(), TopicConfig::named(*t)))
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn the_data_version_is_read_and_everything_else_kept() {
        for encode in [to_legacy_json::<RegisterBrokerBody>, to_standard_json] {
            let a = encode(&body(1, &["A", "B\"}{"]));
            let b = encode(&body(2, &["A", "B\"}{"]));
            let (sa, sb) =
                (skim_register_body(&a, 500).unwrap(), skim_register_body(&b, 500).unwrap());
            assert_eq!(sa.data_version.counter, 1);
            assert_eq!(
                sb.data_version,
                DataVersion { counter: 2, state_version: 3, timestamp: 77 }
            );
            assert_eq!((sa.before, sa.after), (sb.before, sb.after));
            let dv = &a[sa.before.len()..a.len() - sa.after.len()];
            assert_eq!(from_json::<DataVersion>(dv).unwrap(), sa.data_version);
            let c = encode(&body(2, &["A", "C"]));
            let sc = skim_register_body(&c, 500).unwrap();
            assert_ne!((sc.before, sc.after), (sb.before, sb.after));
        }
    }

    /// The digest and the frame the skim computes on its way are those of a pass of their own
    /// (`digest_around_version`, `VersionFrame::new`), for a small body and for one many times
    /// the distance the digest trails the walk, in both JSON forms, and for old brokers' bare
    /// wrapper; a body whose version follows its table gets none.
    #[test]
    fn the_body_digested_on_the_way_is_the_body_digested_alone() {
        use crate::body::register_digest::digest_around_version;
        let mut fields = Xxh3::new();
        std::hash::Hasher::write(&mut fields, b"header fields");
        let many: Vec<String> = (0..2_000).map(|i| format!("topic-{i:05}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        for topics in [&["A", "C"][..], &many] {
            for legacy in [true, false] {
                let (full, wrapper) =
                    (body(5, topics), body(5, topics).topic_config_serialize_wrapper);
                let (full, bare) = if legacy {
                    (to_legacy_json(&full), to_legacy_json(&wrapper))
                } else {
                    (to_standard_json(&full), to_standard_json(&wrapper))
                };
                for (bytes, version) in [(&full, 500), (&bare, 36)] {
                    let table =
                        skim_and_digest(bytes, version, &[], &[], &fields).expect("skimmed");
                    let (around, frame) = table.around.clone().expect("digested on the way");
                    let alone = VersionFrame::new(table.before, table.after);
                    assert_eq!(frame, alone);
                    assert_eq!(Some(around), digest_around_version(&fields, bytes, alone));
                    // Guided by its own shapes and runs (every entry taken a run at a time but
                    // the last few): the same digest on the way.
                    let shapes: Vec<Shape> = (table.entries.iter().zip(&table.digests))
                        .map(|((key, value), &digests)| Shape::of(key, value, digests))
                        .collect();
                    let runs = Run::all(bytes, &table.entries);
                    assert!(runs.iter().all(|run| run.len > 0), "brokers write runs tight");
                    let guided = skim_and_digest(bytes, version, &shapes, &runs, &fields);
                    assert_eq!(guided.as_ref(), Some(&table));
                }
            }
        }
        let late = br#"{"topicConfigTable":{"A":{"topicName":"A"}},"dataVersion":{"counter":1}}"#;
        let table = skim_and_digest(late, 36, &[], &[], &fields).expect("skimmed");
        assert!(table.around.is_none(), "the version after the table");
    }

    #[test]
    fn the_topic_table_is_split_into_entries_and_the_rest_kept() {
        for encode in [to_legacy_json::<RegisterBrokerBody>, to_standard_json] {
            let a = encode(&body(1, &["A", "B\"}{", "C"]));
            let b = encode(&body(2, &["A", "C"]));
            assert!(skim_topic_table(&a, 500).is_none(), "an escaped key");
            let sb = skim_topic_table(&b, 500).expect("skimmed");
            assert_eq!(sb.data_version.counter, 2);
            let keys: Vec<_> = sb.entries.iter().map(|(k, _)| *k).collect();
            assert_eq!(keys, [b"A".as_slice(), b"C"]);
            for (key, value) in &sb.entries {
                let tc: TopicConfig = from_json(value).expect("an entry decodes on its own");
                assert_eq!(tc.topic_name.as_deref().map(str::as_bytes), Some(*key));
            }
            // Another version and other topics: the same bytes outside.
            let c = encode(&body(7, &["X"]));
            let sc = skim_topic_table(&c, 500).expect("skimmed");
            assert_eq!(sb.outside, sc.outside);
            // Outside: the keys and the rest, neither the table's entries nor the version.
            let rest = sb.outside.concat();
            assert!(memchr::memmem::find(&rest, b"\"topicConfigTable\":").is_some());
            assert!(memchr::memmem::find(&rest, b"f:1").is_some(), "the filter servers");
            assert!(memchr::memmem::find(&rest, b"\"A\"").is_none());
            assert!(memchr::memmem::find(&rest, b"\"counter\":2").is_none());
        }
        let empty = br#"{"topicConfigSerializeWrapper":{"topicConfigTable":{},"dataVersion":{"counter":1}}}"#;
        let se = skim_topic_table(empty, 500).expect("an empty table");
        assert!(se.entries.is_empty());
        assert_eq!(se.outside[2], b"}}");
        for bad in [
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1}}}"#.as_slice(),
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{},"topicConfigTable":{"A":1}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{},"topicConfigTable":{A:{}}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{},"topicConfigTable":{},"topicConfigTable":{}}}"#,
        ] {
            assert!(skim_topic_table(bad, 500).is_none(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_bare_wrapper_is_skimmed_for_old_brokers() {
        let text = br#" {"topicConfigTable":{"T":{"perm":6,"x":[1,{"a":"}"}]}},"dataVersion":{"counter":4,"timestamp":9}} "#;
        let s = skim_register_body(text, 36).unwrap();
        assert_eq!((s.data_version.counter, s.data_version.timestamp), (4, 9));
        assert!(s.before.ends_with(b"\"dataVersion\":"));
        assert_eq!(s.after, b"} ");
        // The same text from a newer broker has no wrapper.
        assert!(skim_register_body(text, 500).is_none());
    }

    #[test]
    fn anything_unusual_is_left_to_the_full_decoder() {
        let bodies: [&[u8]; 13] = [
            b"",
            b"[]",
            br#"{"topicConfigSerializeWrapper":{"topicConfigTable":{}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"dataVersion":{"counter":2}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"x"}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{}},"topicConfigSerializeWrapper":{"dataVersion":{}}}"#,
            br#"{"topic\u0043onfigSerializeWrapper":{"dataVersion":{}},"topicConfigSerializeWrapper":{"dataVersion":{}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{"$ref":"$"}}}"#,
            br#"{topicConfigSerializeWrapper:{"dataVersion":{}}}"#,
            br#"{"a":'x"',"topicConfigSerializeWrapper":{"dataVersion":{}}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{}}} x"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":null}}"#,
            br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1}"#,
        ];
        for b in bodies {
            assert!(skim_register_body(b, 500).is_none(), "{}", String::from_utf8_lossy(b));
        }
        assert!(skim_register_body(br#"{"topicConfigSerializeWrapper":{"dataVersion":{}}}"#, -1)
            .is_none());
        assert!(skim_register_body(br#"{"topicConfigSerializeWrapper":{"dataVersion":{}}}"#, 500)
            .is_some());
    }

    proptest::proptest! {
        /// The block skip gives the byte skip's answer on any text without `\\`, `'` or `$`:
        /// brackets inside strings, strings across block boundaries, nesting, text cut short.
        #[test]
        fn the_block_skip_agrees_with_the_byte_skip(
            parts in proptest::collection::vec(
                proptest::prop_oneof!["[{}\\[\\],:]", "\"[a-z{}\\[\\] ]{0,70}\"", "[a-z0-9 ]{0,90}"],
                0..40,
            ),
            cut in 0usize..4096,
        ) {
            let mut text = b"{".to_vec();
            for part in &parts {
                text.extend_from_slice(part.as_bytes());
            }
            text.truncate(cut.max(1).min(text.len()));
            proptest::prop_assert_eq!(skip_plain_object(&text, 0), skip_value(&text, 0));
            let padded = [b"  ".as_slice(), &text, b"}}}"].concat();
            proptest::prop_assert_eq!(skip_plain_object(&padded, 2), skip_value(&padded, 2));
        }
    }
}
