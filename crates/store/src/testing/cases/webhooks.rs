//! Webhook endpoints: a ping is a delivery of its own, numbered per endpoint, refused to a
//! disabled endpoint; deleting an endpoint takes its deliveries and their attempts with it,
//! and their ids are never handed out again.

use super::*;
use crate::webhooks::PING;
use crate::{DeliveryAttempt, DeliveryState, DueSkip, NewWebhook};

pub async fn webhook_pings_and_deletes(s: Arc<dyn Store>) {
    let types = vec!["*".to_owned()];
    let new = NewWebhook {
        merchant_id: None,
        url: "http://93.184.216.34/a",
        secret: "s",
        event_types: &types,
    };
    let a = s.insert_webhook(&new, 10, t0()).await.unwrap();
    let b = s.insert_webhook(&new, 10, t0()).await.unwrap();
    let first = s.enqueue_ping(a.id, t0()).await.unwrap();
    let second = s.enqueue_ping(a.id, at(1)).await.unwrap();
    let other = s.enqueue_ping(b.id, at(1)).await.unwrap();
    assert_eq!(
        (first.event_id, second.event_id, other.event_id),
        (-1, -2, -1)
    );
    assert_eq!(
        (first.event_type.as_str(), first.state, first.next_at),
        (PING, DeliveryState::Pending, t0())
    );
    let body: serde_json::Value = serde_json::from_str(&first.payload).unwrap();
    assert_eq!(body["data"]["webhook_id"], a.id);
    let attempt = DeliveryAttempt {
        attempt: 1,
        at: at(1),
        status: Some(500),
        error: None,
    };
    s.record_attempt(first.id, &attempt, DeliveryState::Pending, at(2))
        .await
        .unwrap();
    let due = s
        .due_deliveries(at(1), 10, &DueSkip::default())
        .await
        .unwrap();
    assert_eq!(due.len(), 2, "the second ping of a, and b's");

    let gone = s.delete_webhook(a.id).await.unwrap();
    assert_eq!(gone.id, a.id);
    assert!(matches!(s.webhook(a.id).await, Err(StoreError::NotFound)));
    assert!(s.deliveries(a.id, None, 10).await.unwrap().is_empty());
    let due = s
        .due_deliveries(at(3), 10, &DueSkip::default())
        .await
        .unwrap();
    assert_eq!(due.iter().map(|d| d.id).collect::<Vec<_>>(), [other.id]);
    // An attempt that ends after its delivery went with the endpoint records nothing.
    s.record_attempt(second.id, &attempt, DeliveryState::Delivered, at(3))
        .await
        .unwrap();
    assert!(matches!(
        s.delete_webhook(a.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        s.enqueue_ping(a.id, at(3)).await,
        Err(StoreError::NotFound)
    ));

    s.disable_webhook(b.id, at(3)).await.unwrap();
    assert!(matches!(
        s.enqueue_ping(b.id, at(3)).await,
        Err(StoreError::Conflict(Conflict::Version))
    ));
    assert_eq!(s.list_webhooks(None).await.unwrap().len(), 1);

    // The newest endpoint and delivery, deleted, leave their ids unused for good.
    let c = s.insert_webhook(&new, 10, at(4)).await.unwrap();
    let ping = s.enqueue_ping(c.id, at(4)).await.unwrap();
    s.delete_webhook(c.id).await.unwrap();
    let d = s.insert_webhook(&new, 10, at(5)).await.unwrap();
    let again = s.enqueue_ping(d.id, at(5)).await.unwrap();
    assert!(d.id > c.id, "webhook {} after {}", d.id, c.id);
    assert!(
        again.id > ping.id,
        "delivery {} after {}",
        again.id,
        ping.id
    );
}
