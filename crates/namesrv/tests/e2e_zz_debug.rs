mod common;
use common::{request, Broker, TestServer, decode};
use remoting::RequestCode;
#[tokio::test(start_paused = true)]
async fn paused_hb() {
    let server = TestServer::start().await;
    let b = Broker::new("C", "broker-a", "10.0.0.1:10911", 0);
    let mut bc = server.connect_raw().await;
    let f = bc.call(b.register(&["T","U"])).await;
    eprintln!("reg {:?}", decode(&f).code);
    let mut hb = b.request(RequestCode::BrokerHeartbeat, None);
    hb.set_oneway(true);
    bc.send(&hb).await;
    let t = tokio::time::Instant::now();
    bc.send(&request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    let r = bc.read_frame().await;
    eprintln!("after {:?}: {:?}", t.elapsed(), r.map(|f| decode(&f).code));
}
