//! The distributed queue under faults: a consumer crashes after claiming items, and no item
//! is delivered twice.

use super::*;

/// Items the producer puts.
const QUEUE_ITEMS: usize = 200;
/// Items the second crashing consumer claims before it crashes.
const CRASHER_CLAIMS: usize = 5;
/// Live consumers.
const LIVE_CONSUMERS: usize = 3;

fn payload(data: &[u8]) -> String {
    String::from_utf8(data.to_vec()).expect("utf-8 payload")
}

/// Scenario: a producer puts 200 distinct items. Consumer X (behind a proxy) takes the head
/// item but the proxy cuts its connection right after the claiming delete reached the server,
/// so the delete is applied and X never learns it; X then crashes (proxy isolated, client
/// dropped without closing). Consumer Y (behind a proxy) claims items concurrently with three
/// live consumers (a session each), and after 5 claims crashes the same way, before
/// "processing" them. The live consumers take until the queue is empty.
///
/// The queue claims an item by deleting its node, so a claimed item leaves the queue with the
/// claim: the crashed consumers' items are gone with them (at-most-once delivery), nobody
/// else gets them, and the queue has no way to hand them out again.
///
/// Pass criteria: no item is delivered twice to the live consumers; the items the crashed
/// consumers claimed (X's lost-reply head item, Y's 5) and the live consumers' items are
/// disjoint and together exactly the 200 put; the queue is empty at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_consumer_crashes_after_claiming_no_item_delivered_twice() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/queue";
    let direct = connect_with(
        builder().session_timeout(RECIPE_SESSION),
        &server.connect_string(),
    )
    .await;
    let producer = Queue::new(&direct, path);
    let all: BTreeSet<String> = (0..QUEUE_ITEMS).map(|i| format!("item-{i:04}")).collect();
    let puts: Vec<_> = all.iter().map(|item| producer.put(item.clone())).collect();
    for put in futures_util::future::join_all(puts).await {
        put.expect("put");
    }
    assert_eq!(producer.len().await.expect("len"), QUEUE_ITEMS);

    // X: the reply of its claiming delete is lost, then it crashes.
    let mut crashed_claimed: BTreeSet<String> = BTreeSet::new();
    let mut names = direct.get_children(path).await.expect("children").to_vec();
    zk_recipes::sequential::sort_by_sequence(&mut names);
    let head = format!("{path}/{}", names[0]);
    let (head_data, _) = direct.get_data(&head).await.expect("head item");
    let x = proxied(&server, RECIPE_SESSION).await;
    let armed = x.proxy.cut_after_request(OpCode::DELETE);
    let taken = within("X's take", WITHIN, Queue::new(&x.client, path).try_take()).await;
    assert_eq!(
        taken,
        Err(RecipeError::Zk(Error::ConnectionLoss)),
        "X never learns its claim"
    );
    assert!(armed.has_fired(), "the delete reached the server");
    x.proxy.isolate();
    drop(x);
    assert!(
        direct.exists(&head).await.expect("exists").is_none(),
        "X's delete was applied: the head item is claimed by the crashed consumer"
    );
    crashed_claimed.insert(payload(&head_data));

    // Y claims items while the live consumers take; then it crashes.
    let y = proxied(&server, RECIPE_SESSION).await;
    let (first_claimed, first_claimed_rx) = tokio::sync::oneshot::channel();
    let crasher = tokio::spawn(async move {
        let queue = Queue::new(&y.client, path);
        let mut claimed = Vec::new();
        let mut first_claimed = Some(first_claimed);
        while claimed.len() < CRASHER_CLAIMS {
            let Some(item) = queue.try_take().await.expect("Y's take") else {
                break;
            };
            claimed.push(payload(&item.data));
            if let Some(tx) = first_claimed.take() {
                let _ = tx.send(());
            }
        }
        // The crash: the session is cut off and the process forgets everything it held.
        y.proxy.isolate();
        drop(queue);
        drop(y);
        claimed
    });
    within("Y's first claim", WITHIN, first_claimed_rx)
        .await
        .expect("Y claimed an item");
    let mut live_clients = Vec::new();
    for _ in 0..LIVE_CONSUMERS {
        live_clients.push(
            connect_with(
                builder().session_timeout(RECIPE_SESSION),
                &server.connect_string(),
            )
            .await,
        );
    }
    let live: Vec<JoinHandle<Vec<String>>> = live_clients
        .iter()
        .map(|client| {
            let queue = Queue::new(client, path);
            tokio::spawn(async move {
                let mut taken = Vec::new();
                // No producer is left: an empty queue stays empty.
                while let Some(item) = queue.try_take().await.expect("live take") {
                    taken.push(payload(&item.data));
                }
                taken
            })
        })
        .collect();
    let y_claimed = within("Y crashes", WITHIN, crasher)
        .await
        .expect("Y did not panic");
    assert_eq!(y_claimed.len(), CRASHER_CLAIMS, "Y claimed its items");
    crashed_claimed.extend(y_claimed);
    let mut live_taken: Vec<String> = Vec::new();
    for (i, consumer) in live.into_iter().enumerate() {
        let taken = within("a live consumer drains the queue", WITHIN, consumer)
            .await
            .expect("consumer did not panic");
        eprintln!("queue: live consumer {i} took {} items", taken.len());
        live_taken.extend(taken);
    }

    let live_set: BTreeSet<String> = live_taken.iter().cloned().collect();
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = live_taken.iter().filter(|i| !seen.insert(*i)).collect();
    assert!(
        twice.is_empty(),
        "delivered twice to live consumers: {twice:?}"
    );
    assert_eq!(crashed_claimed.len(), 1 + CRASHER_CLAIMS);
    let both: Vec<&String> = live_set.intersection(&crashed_claimed).collect();
    assert!(
        both.is_empty(),
        "claimed by a crashed consumer and delivered to a live one: {both:?}"
    );
    let union: BTreeSet<String> = live_set.union(&crashed_claimed).cloned().collect();
    assert_eq!(union, all, "live-taken ∪ crashed-claimed = every item put");
    assert_eq!(producer.len().await.expect("len"), 0, "the queue is empty");
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}
