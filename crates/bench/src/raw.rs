//! A lean route reader for the throughput phases: GET_ROUTEINFO_BY_TOPIC requests exactly as our
//! client builds them, encoded once per topic with the opaque spliced in per send, D requests in
//! flight on one connection per task, responses matched by opaque after reading only the frame
//! length and the header's `code` and `opaque`.
//!
//! Why: the full client (a task pair per connection, a oneshot, a timer and a full header decode
//! per request) costs the 2-core machine about as much CPU as a fast server does, so with it the
//! load generator, not the server, sets S1's ceiling. This reader keeps the same wire bytes and the
//! same closed loop at a fraction of the cost. `nsbench --reader client` runs the client instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use client::{Client, RouteOptions};
use remoting::RequestCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::load::{ReadResult, Readers};
use crate::stats::Recorder;

const PLACEHOLDER: i32 = 1_987_654_321;

/// Every topic's request frame, split around the opaque's digits.
pub struct Requests {
    /// (header before the opaque, header after it) per topic; no body.
    parts: Vec<(Bytes, Bytes)>,
    /// What the requests are signed with, if anything (the probe signs with it too).
    credentials: Option<client::Credentials>,
}

impl Requests {
    /// The GET_ROUTEINFO_BY_TOPIC request of `client` (language, version, ext fields) for each
    /// topic, signed with the client's credentials when it has some (the opaque is not signed,
    /// so one signature serves every request of a topic, as a replayed Java request would).
    pub fn new(client: &Client, topics: &[Arc<str>]) -> anyhow::Result<Self> {
        let mut parts = Vec::with_capacity(topics.len());
        let digits = PLACEHOLDER.to_string();
        for t in topics {
            let mut ext = remoting::ExtFields::new();
            ext.insert("topic", t.as_ref());
            let mut req = client
                .request(RequestCode::GetRouteinfoByTopic)
                .with_ext_fields(ext)
                .with_opaque(PLACEHOLDER);
            if let Some(credentials) = &client.config().credentials {
                credentials.sign(&mut req);
            }
            let frame = remoting::frame::encode_to_bytes(&req)?;
            let header = &frame[8..];
            let at = header
                .windows(digits.len())
                .position(|w| w == digits.as_bytes())
                .ok_or_else(|| anyhow::anyhow!("opaque not found in an encoded request"))?;
            parts.push((
                Bytes::copy_from_slice(&header[..at]),
                Bytes::copy_from_slice(&header[at + digits.len()..]),
            ));
        }
        Ok(Self { parts, credentials: client.config().credentials.clone() })
    }

    /// What the requests are signed with, if anything.
    pub fn credentials(&self) -> Option<&client::Credentials> {
        self.credentials.as_ref()
    }

    /// Appends the request for topic `i` with `opaque` to `out`.
    fn write(&self, i: usize, opaque: i32, out: &mut BytesMut) {
        let (head, tail) = &self.parts[i];
        let mut buf = itoa::Buffer::new();
        let d = buf.format(opaque).as_bytes();
        let header_len = head.len() + d.len() + tail.len();
        out.put_u32((4 + header_len) as u32);
        out.put_u32(header_len as u32);
        out.put_slice(head);
        out.put_slice(d);
        out.put_slice(tail);
    }

    pub fn len(&self) -> usize {
        self.parts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

/// An integer JSON field of a header (`"code":17`), without decoding the rest.
pub(crate) fn json_int(header: &[u8], key: &[u8]) -> Option<i32> {
    let at = header.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &header[at..];
    let (neg, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mut v: i64 = 0;
    let mut n = 0;
    for &c in digits.iter().take_while(|c| c.is_ascii_digit()).take(11) {
        v = v * 10 + i64::from(c - b'0');
        n += 1;
    }
    (n > 0).then_some(())?;
    i32::try_from(if neg { -v } else { v }).ok()
}

/// `(code, opaque)` of a response header (JSON or ROCKETMQ binary).
fn code_and_opaque(info: u32, header: &[u8]) -> Option<(i32, i32)> {
    if info >> 24 == 1 {
        let code = i16::from_be_bytes([*header.first()?, *header.get(1)?]);
        let b = header.get(5..9)?;
        return Some((i32::from(code), i32::from_be_bytes([b[0], b[1], b[2], b[3]])));
    }
    Some((json_int(header, b"\"code\":")?, json_int(header, b"\"opaque\":")?))
}

/// Runs `conns` connections to `addr` with `cfg.depth` requests in flight each, uniformly random
/// topics, for `cfg.warmup` + `cfg.measure` (closed loop; `rate_per_task` is ignored).
pub async fn run(
    addr: &str,
    conns: usize,
    requests: Arc<Requests>,
    cfg: &Readers,
    seed: u64,
) -> anyhow::Result<ReadResult> {
    let mut streams = Vec::with_capacity(conns);
    for _ in 0..conns {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        streams.push(s);
    }
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = measure_from + cfg.measure;
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let requests = requests.clone();
            let depth = cfg.depth.max(1);
            let stop = cfg.stop.clone();
            tokio::spawn(connection(
                s,
                requests,
                depth,
                measure_from,
                end,
                stop,
                seed ^ (i as u64 + 1).wrapping_mul(0x2545_F491),
            ))
        })
        .collect();
    let mut out = ReadResult::default();
    for t in tasks {
        out.all.merge(&t.await??);
    }
    out.elapsed = Instant::now().min(end).saturating_duration_since(measure_from);
    Ok(out)
}

const TIMEOUT: Duration = Duration::from_secs(3);

async fn connection(
    mut stream: TcpStream,
    requests: Arc<Requests>,
    depth: usize,
    measure_from: Instant,
    end: Instant,
    stop: Option<Arc<AtomicBool>>,
    seed: u64,
) -> anyhow::Result<Recorder> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut rec = Recorder::new();
    let mut inflight: Vec<(i32, Instant)> = Vec::with_capacity(depth);
    let mut next_opaque: i32 = 1;
    let mut out = BytesMut::with_capacity(depth * 256);
    let mut inbuf = BytesMut::with_capacity(64 * 1024);
    let stopped =
        |now: Instant| now >= end || stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
    let n = requests.len();
    let mut send = |out: &mut BytesMut, inflight: &mut Vec<(i32, Instant)>, now: Instant| {
        let opaque = next_opaque;
        next_opaque = next_opaque.wrapping_add(1).max(1);
        requests.write(rng.usize(..n), opaque, out);
        inflight.push((opaque, now));
    };
    let now = Instant::now();
    for _ in 0..depth {
        send(&mut out, &mut inflight, now);
    }
    stream.write_all(&out).await?;
    out.clear();
    while !inflight.is_empty() {
        let oldest = inflight.iter().map(|(_, t)| *t).min().unwrap_or_else(Instant::now);
        let read = tokio::time::timeout_at(oldest + TIMEOUT, stream.read_buf(&mut inbuf)).await;
        let now = Instant::now();
        match read {
            Ok(Ok(0)) => {
                for (_, sent) in inflight.drain(..) {
                    if sent >= measure_from {
                        rec.count_error("closed");
                    }
                }
                break;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => {
                // Everything in flight for 3 s is a timeout; replace it (late answers are ignored).
                let expired: Vec<_> = inflight
                    .iter()
                    .filter(|(_, t)| now.duration_since(*t) >= TIMEOUT)
                    .copied()
                    .collect();
                inflight.retain(|(_, t)| now.duration_since(*t) < TIMEOUT);
                for (_, sent) in expired {
                    if sent >= measure_from {
                        rec.count_error("timeout");
                    }
                    if !stopped(now) {
                        send(&mut out, &mut inflight, now);
                    }
                }
            }
        }
        while let Some(frame) = next_frame(&mut inbuf) {
            let body_len = frame.body_len();
            let parsed = code_and_opaque(frame.info, frame.header(&inbuf));
            inbuf.advance(frame.len);
            let Some((code, opaque)) = parsed else { continue };
            let Some(pos) = inflight.iter().position(|(o, _)| *o == opaque) else { continue };
            let (_, sent) = inflight.swap_remove(pos);
            if sent >= measure_from && sent < end {
                let latency = now.duration_since(sent);
                if code == 0 {
                    rec.ok(latency, body_len);
                } else {
                    let err = client::Error::Server { addr: String::new(), code, remark: None };
                    rec.error(&err, latency);
                }
            }
            if !stopped(now) {
                send(&mut out, &mut inflight, now);
            }
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
    }
    Ok(rec)
}

/// Checks that `addr` answers `topic` like the client expects (used once before a raw phase).
pub async fn probe(
    addr: &str,
    topic: &str,
    credentials: Option<&client::Credentials>,
) -> anyhow::Result<usize> {
    // Patient: a server may still be working off an earlier phase's backlog.
    let config = client::ClientConfig {
        request_timeout: Duration::from_secs(30),
        credentials: credentials.cloned(),
        ..client::ClientConfig::default()
    };
    let c = Client::with_config(addr, config)?;
    let (_, body) = c.get_route_body(topic, RouteOptions::default()).await?;
    c.close().await;
    Ok(body.len())
}

/// The position of the complete frame at the head of a read buffer.
#[derive(Debug, Clone, Copy)]
pub struct FrameAt {
    /// The header-info int (serialize type and header length).
    pub info: u32,
    /// The whole frame, length prefix included.
    pub len: usize,
}

impl FrameAt {
    /// The header bytes (clipped to the frame).
    pub fn header<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let header_len = (self.info & 0x00FF_FFFF) as usize;
        buf.get(8..(8 + header_len).min(self.len)).unwrap_or(&[])
    }

    /// The body length.
    pub fn body_len(&self) -> usize {
        self.len.saturating_sub(8 + (self.info & 0x00FF_FFFF) as usize)
    }
}

/// The complete frame at the head of `buf`, if one has arrived (the caller advances past
/// `len`); otherwise room for the rest of it is reserved.
pub fn next_frame(buf: &mut BytesMut) -> Option<FrameAt> {
    if buf.len() < 8 {
        return None;
    }
    let len = 4 + u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if buf.len() < len {
        buf.reserve(len - buf.len());
        return None;
    }
    Some(FrameAt { info: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]), len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spliced_requests_decode_like_the_clients() {
        let client = Client::new("127.0.0.1:9876").expect("client");
        let topics: Vec<Arc<str>> = vec![Arc::from("TopicA"), Arc::from("b")];
        let reqs = Requests::new(&client, &topics).expect("requests");
        let mut out = BytesMut::new();
        reqs.write(0, 4711, &mut out);
        reqs.write(1, -5, &mut out);
        let mut codec = remoting::RemotingCodec::default();
        let a =
            tokio_util::codec::Decoder::decode(&mut codec, &mut out).expect("frame").expect("one");
        let b =
            tokio_util::codec::Decoder::decode(&mut codec, &mut out).expect("frame").expect("two");
        assert_eq!((a.code, a.opaque, a.ext("topic")), (105, 4711, Some("TopicA")));
        assert_eq!((b.opaque, b.ext("topic")), (-5, Some("b")));
        assert_eq!(a.version, client.config().version);
    }

    #[test]
    fn next_frame_waits_for_a_whole_frame_then_locates_its_parts() {
        let req = remoting::RemotingCommand::request(remoting::RequestCode::GetRouteinfoByTopic)
            .with_opaque(5)
            .with_body(bytes::Bytes::from_static(b"body!"));
        let frame = remoting::frame::encode_to_bytes(&req).expect("encode");
        let mut buf = BytesMut::from(&frame[..frame.len() - 1]);
        assert!(next_frame(&mut buf).is_none(), "one byte missing");
        buf.extend_from_slice(&frame[frame.len() - 1..]);
        buf.extend_from_slice(b"next");
        let at = next_frame(&mut buf).expect("whole frame");
        assert_eq!((at.len, at.body_len()), (frame.len(), 5));
        assert_eq!(code_and_opaque(at.info, at.header(&buf)), Some((105, 5)));
        buf.advance(at.len);
        assert_eq!(&buf[..], b"next");
    }

    #[test]
    fn code_and_opaque_come_from_json_and_binary_headers() {
        let resp = remoting::RemotingCommand::response(
            remoting::ResponseCode::TopicNotExist,
            Some("x".into()),
        )
        .with_opaque(99);
        let frame = remoting::frame::encode_to_bytes(&resp).expect("encode");
        let info = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        assert_eq!(code_and_opaque(info, &frame[8..]), Some((17, 99)));
        let mut bin = vec![0u8, 17, 0, 1, 0xDF, 0, 0, 0, 99];
        bin.extend_from_slice(&[0; 8]);
        assert_eq!(code_and_opaque(1 << 24, &bin), Some((17, 99)));
    }

    #[tokio::test]
    async fn raw_readers_count_answers_from_the_ceiling() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let server = tokio::spawn(crate::ceiling::serve(
            listener,
            crate::ceiling::Answer::new(Bytes::from_static(b"abc")).expect("answer"),
        ));
        let client = Client::new(&addr).expect("client");
        let topics: Vec<Arc<str>> = (0..10).map(|i| Arc::from(format!("t{i}"))).collect();
        let reqs = Arc::new(Requests::new(&client, &topics).expect("requests"));
        let cfg = Readers {
            depth: 4,
            warmup: Duration::from_millis(20),
            measure: Duration::from_millis(200),
            rate_per_task: None,
            stop: None,
        };
        let r = run(&addr, 2, reqs, &cfg, 1).await.expect("run");
        let s = r.all.summary(r.elapsed);
        assert!(s.ok > 10, "{s:?}");
        assert_eq!(s.error_count(), 0);
        assert!((s.avg_body_bytes - 3.0).abs() < 1e-9);
        server.abort();
    }
}
