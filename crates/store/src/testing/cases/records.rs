//! Stored records: a row written by a newer version (fields this one does not know) is read
//! and served normally; a row that breaks an invariant is reported, not served.

use serde_json::{json, Value};

use super::*;
use crate::records::{ActivityRecord, TemplateRecord};
use crate::SpecOf;

/// `record` as JSON with a field no version so far writes, at the top and nested.
fn with_future_fields(record: &impl serde::Serialize, nested: &str) -> Value {
    let mut v = serde_json::to_value(record).unwrap();
    v["loyalty_tier"] = json!({"min": "gold", "since": 3});
    v[nested]["rounding"] = json!("half_even");
    v
}

pub async fn stored_records_tolerate_new_fields_and_reject_broken_ones(s: Arc<dyn Store>) {
    let m = s
        .insert_merchant(&merchant("M", &[1, 2]), t0())
        .await
        .unwrap();
    let id = spec_standalone(&s, &m).await;
    let t = s.template(id).await.unwrap();
    let a = s
        .insert_activity(&activity(0, 24, 48, 96), t0())
        .await
        .unwrap();

    // Version 1 is exactly the JSON earlier versions wrote (the request type's), so they read
    // what this one writes and the other way round.
    let json = |v: Result<Value, serde_json::Error>| v.unwrap();
    // The refund policy came later: at its default (`return`) the record leaves it out, so a
    // template that does not use it is stored exactly as before.
    let mut request = json(serde_json::to_value(&t.spec));
    let policy = request.as_object_mut().unwrap().remove("refund_policy");
    assert_eq!(policy, Some(Value::from("return")));
    assert_eq!(
        json(serde_json::to_value(TemplateRecord::from_spec(&t.spec))),
        request
    );
    // Likewise approval (at its default, `none`).
    let mut request = json(serde_json::to_value(&a.spec));
    let approval = request.as_object_mut().unwrap().remove("approval");
    assert_eq!(approval, Some(Value::from("none")));
    // The record also says `funded_by` where the split is all or nothing, for readers of the
    // version before the split.
    let mut record = json(serde_json::to_value(ActivityRecord::from_spec(&a.spec)));
    let old = record.as_object_mut().unwrap().remove("funded_by");
    assert_eq!(old, Some(Value::from("platform")));
    assert_eq!(record, request);

    let newer = with_future_fields(&TemplateRecord::from_spec(&t.spec), "value");
    let raw = s.inspect();
    raw.put_raw_spec(SpecOf::Template(id), &newer.to_string())
        .await
        .unwrap();
    assert_eq!(s.template(id).await.unwrap(), t, "read as before");
    let listed = s.list_templates(&tq(t0())).await.unwrap();
    assert_eq!(listed, vec![t.clone()], "listed as before");
    let newer = with_future_fields(&ActivityRecord::from_spec(&a.spec), "run");
    raw.put_raw_spec(SpecOf::Activity(a.id), &newer.to_string())
        .await
        .unwrap();
    assert_eq!(s.activity(a.id).await.unwrap(), a);

    // No stock: what the claim path relies on is broken, so the row is reported.
    let mut broken = serde_json::to_value(TemplateRecord::from_spec(&t.spec)).unwrap();
    broken["total_stock"] = json!(0);
    raw.put_raw_spec(SpecOf::Template(id), &broken.to_string())
        .await
        .unwrap();
    match s.template(id).await {
        Err(StoreError::Corrupt(what)) => {
            assert!(what.starts_with(&format!("template {id}: ")), "{what}");
            assert!(what.contains("total_stock"), "{what}");
        }
        other => panic!("a broken row must be reported, got {other:?}"),
    }
    raw.put_raw_spec(SpecOf::Activity(a.id), r#"{"title": 7}"#)
        .await
        .unwrap();
    assert!(matches!(
        s.activity(a.id).await,
        Err(StoreError::Corrupt(what)) if what.starts_with(&format!("activity {}: ", a.id))
    ));
}
