//! The real driver against a scripted server that breaks the protocol: the connection is
//! dropped and the session re-established on a new one.

use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use jute::{
    ConnectRequest, ConnectResponse, Encode, ErrorCode, FrameCodec, GetDataResponse, ReplyHeader,
    RequestHeader, Stat, decode_exact,
};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;
use zk_proto::{Client, Error};

/// Accepts one connection and completes the handshake, returning the client's request.
async fn accept(listener: &TcpListener) -> (Framed<TcpStream, FrameCodec>, ConnectRequest) {
    let (stream, _) = listener.accept().await.expect("accept");
    let mut framed = Framed::new(stream, FrameCodec::new());
    let frame = framed.next().await.expect("a frame").expect("valid frame");
    let request: ConnectRequest = decode_exact(frame).expect("ConnectRequest");
    let response = ConnectResponse {
        protocol_version: 0,
        time_out: 10_000,
        session_id: 0x77,
        passwd: Some(Bytes::from_static(&[3; 16])),
        read_only: Some(false),
    };
    framed.send(response).await.expect("send");
    (framed, request)
}

async fn next_request(framed: &mut Framed<TcpStream, FrameCodec>) -> RequestHeader {
    let frame = framed.next().await.expect("a frame").expect("valid frame");
    decode_exact(frame.slice(..8)).expect("header")
}

fn reply(xid: i32) -> impl Encode {
    (
        ReplyHeader {
            xid,
            zxid: 5,
            err: ErrorCode::OK,
        },
        GetDataResponse {
            data: Some(Bytes::from_static(b"ok")),
            stat: Stat::default(),
        },
    )
}

#[tokio::test]
async fn a_reply_for_the_wrong_xid_drops_the_connection_and_the_session_resumes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(async move {
        let (mut first, request) = accept(&listener).await;
        assert_eq!(request.session_id, 0);
        let header = next_request(&mut first).await;
        first.send(reply(header.xid + 1000)).await.expect("send");
        let (mut second, request) = accept(&listener).await;
        assert_eq!(request.session_id, 0x77, "the session is resumed");
        assert_eq!(request.passwd.as_deref(), Some(&[3u8; 16][..]));
        let header = next_request(&mut second).await;
        second.send(reply(header.xid)).await.expect("send");
        // Keep the connection open until the client is done.
        let _ = second.next().await;
    });
    let client = Client::builder()
        .request_timeout(Some(Duration::from_secs(10)))
        .connect(&addr.to_string())
        .await
        .expect("connect");
    assert_eq!(client.get_data("/a").await, Err(Error::ConnectionLoss));
    let (data, _) = client
        .get_data("/a")
        .await
        .expect("answered on the new connection");
    assert_eq!(&data[..], b"ok");
    assert_eq!(client.session_id(), 0x77);
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server script finished")
        .expect("the server script passed");
}
