//! The ceiling server: answers every request frame with one pre-encoded SUCCESS response (a
//! fixed body, the request's opaque spliced into the JSON header), decoding nothing but the
//! frame length and the opaque. Its throughput is the most this machine does for that exchange
//! with the same load generator, so a nameserver's figure over it is the share of the machine
//! left to the nameserver's own work.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use remoting::{RemotingCommand, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A response frame split around its opaque's digits.
#[derive(Debug, Clone)]
pub struct Answer {
    /// JSON header before the opaque digits.
    head: Bytes,
    /// JSON header after the opaque digits.
    tail: Bytes,
    body: Bytes,
}

const PLACEHOLDER: i32 = 1_987_654_321;

impl Answer {
    /// The SUCCESS response carrying `body`, encoded once by the remoting codec.
    pub fn new(body: Bytes) -> anyhow::Result<Self> {
        let cmd = RemotingCommand::response(ResponseCode::Success, None).with_opaque(PLACEHOLDER);
        let frame = remoting::frame::encode_to_bytes(&cmd)?;
        let header = &frame[8..];
        let digits = PLACEHOLDER.to_string();
        let at = header
            .windows(digits.len())
            .position(|w| w == digits.as_bytes())
            .ok_or_else(|| anyhow::anyhow!("opaque not found in the encoded header"))?;
        Ok(Self {
            head: Bytes::copy_from_slice(&header[..at]),
            tail: Bytes::copy_from_slice(&header[at + digits.len()..]),
            body,
        })
    }

    /// Appends the whole response frame for `opaque` to `out`.
    pub fn write(&self, opaque: i32, out: &mut BytesMut) {
        let mut buf = itoa::Buffer::new();
        let digits = buf.format(opaque).as_bytes();
        let header_len = self.head.len() + digits.len() + self.tail.len();
        let total = 4 + header_len + self.body.len();
        out.reserve(4 + total);
        out.put_u32(total as u32);
        out.put_u32(header_len as u32); // serialize type 0 = JSON in the high byte
        out.put_slice(&self.head);
        out.put_slice(digits);
        out.put_slice(&self.tail);
        out.put_slice(&self.body);
    }
}

/// The opaque of a request frame's header (JSON or ROCKETMQ binary), without decoding the rest.
pub fn request_opaque(header_info: u32, header: &[u8]) -> Option<i32> {
    if header_info >> 24 == 1 {
        // ROCKETMQ binary header: code u16, language u8, version u16, opaque i32.
        let b = header.get(5..9)?;
        return Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    }
    crate::raw::json_int(header, b"\"opaque\":")
}

/// Serves `answer` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, answer: Answer) -> anyhow::Result<()> {
    let answer = Arc::new(answer);
    loop {
        let (stream, _) = listener.accept().await?;
        let answer = answer.clone();
        tokio::spawn(async move {
            let _ = connection(stream, &answer).await;
        });
    }
}

/// Answers every complete frame in the read buffer, then writes all answers at once.
async fn connection(mut stream: TcpStream, answer: &Answer) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut inbuf = BytesMut::with_capacity(64 * 1024);
    let mut out = BytesMut::with_capacity(64 * 1024);
    loop {
        if stream.read_buf(&mut inbuf).await? == 0 {
            return Ok(());
        }
        while let Some(frame) = crate::raw::next_frame(&mut inbuf) {
            // Oneway requests (flag bit 1) get no answer; the generator sends none here.
            if let Some(opaque) = request_opaque(frame.info, frame.header(&inbuf)) {
                answer.write(opaque, &mut out);
            }
            inbuf.advance(frame.len);
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use remoting::RemotingCodec;
    use tokio_util::codec::Decoder;

    #[test]
    fn answers_decode_with_the_request_opaque_and_the_body() {
        let answer = Answer::new(Bytes::from_static(b"{\"brokerDatas\":[]}")).expect("answer");
        for opaque in [0, 7, -3, i32::MAX, i32::MIN] {
            let mut out = BytesMut::new();
            answer.write(opaque, &mut out);
            let cmd =
                RemotingCodec::default().decode(&mut out).expect("valid frame").expect("one frame");
            assert!(cmd.is_response());
            assert_eq!(cmd.code, 0);
            assert_eq!(cmd.opaque, opaque);
            assert_eq!(cmd.body_bytes(), b"{\"brokerDatas\":[]}");
        }
    }

    #[test]
    fn request_opaque_is_read_from_json_headers() {
        let req =
            RemotingCommand::request(remoting::RequestCode::GetRouteinfoByTopic).with_opaque(-42);
        let frame = remoting::frame::encode_to_bytes(&req).expect("encode");
        let info = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        assert_eq!(request_opaque(info, &frame[8..]), Some(-42));
        assert_eq!(request_opaque(0, b"{\"code\":105}"), None);
    }

    #[tokio::test]
    async fn ceiling_answers_a_pipelined_client() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let server =
            tokio::spawn(serve(listener, Answer::new(Bytes::from_static(b"xyz")).expect("answer")));
        let client = client::Client::new(&addr).expect("client");
        let calls = (0..50).map(|i| {
            let c = client.clone();
            async move { c.get_route_body(&format!("t{i}"), client::RouteOptions::default()).await }
        });
        let results = futures::stream::iter(calls).buffer_unordered(50).collect::<Vec<_>>().await;
        assert_eq!(results.len(), 50);
        for r in results {
            assert_eq!(r.expect("answered").1.as_ref(), b"xyz");
        }
        server.abort();
    }
}
