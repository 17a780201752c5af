//! The persistent node under faults: a create whose reply is lost (the proxy cuts the
//! connection right after the create reached the server) leaves exactly one node, ours, for
//! a plain and a protected sequential name.

use zk_recipes::persistent::PersistentNode;
use zk_testkit::client::{children, connect, mkdirs, start_server};

use super::*;

#[tokio::test]
async fn a_create_whose_reply_is_lost_leaves_exactly_one_node_that_is_ours() {
    let _serial = serial().await;
    let server = start_server().await;
    let observer = connect(&server.connect_string()).await;
    let cut = connect_proxied(server.addr(), builder()).await;
    mkdirs(&observer, "/pn-lost").await;
    for (name, sequential) in [("/pn-lost/plain", false), ("/pn-lost/seq-", true)] {
        let armed = cut.proxy.cut_after_request(OpCode::CREATE2);
        let mut node = PersistentNode::builder(&cut.client, name, "d").ephemeral();
        if sequential {
            node = node.sequential().protected();
        }
        let node = node.start();
        within("the cut after the create", WITHIN, armed.fired()).await;
        let path = node.wait_created(Some(WITHIN)).await.expect("created");
        let listed = children(&observer, "/pn-lost").await;
        assert_eq!(listed.len(), 1, "one node, not a duplicate: {listed:?}");
        assert_eq!(format!("/pn-lost/{}", listed[0]), path);
        let (_, stat) = observer.get_data(&path).await.expect("read");
        assert_eq!(stat.ephemeral_owner, cut.client.session_id());
        node.close().await.expect("close");
        assert!(children(&observer, "/pn-lost").await.is_empty());
    }
}
