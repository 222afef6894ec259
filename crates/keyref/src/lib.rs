//! Configuration key documentation, kept true by tests: the [`KeyInfo`] a key table fills, the
//! book's generated key reference ([`render_reference`]), and the checks a binary's tests run
//! ([`ensure_file`] keeps a generated page current; [`assert_binary_keys_documented`] compares
//! the keys a binary's `-p` prints with the keys a book page documents, both directions).

mod check;
mod key;
mod render;

pub use check::{
    assert_binary_keys_documented, book_page, documented_keys, ensure_file, printed_keys,
};
pub use key::{DefaultValue, JavaOrigin, KeyInfo};
pub use render::{heading_id, render_reference, Reference};
