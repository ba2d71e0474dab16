//! Promotion codes: shared codes, batches, and redemption inside the claim batch.

use crate::Conflict;
use std::sync::Arc;

use coupond_domain::{CodeBatchDraft, CodeBatchSpec, SharedCode};

use super::{claimable, req};
use crate::testing::fixtures::at;
use crate::{ClaimOutcome, ClaimRequest, CodeClaim, Store, StoreError};

fn with_code(user: &str, code: &str, single_use: bool) -> ClaimRequest {
    ClaimRequest {
        code: Some(CodeClaim {
            code: code.to_owned(),
            single_use,
        }),
        ..req(user)
    }
}

fn spec(count: u32) -> CodeBatchSpec {
    CodeBatchSpec::try_from(CodeBatchDraft {
        count,
        prefix: "T".into(),
        length: 8,
    })
    .unwrap()
}

/// A shared code belongs to one template at a time; replacing and removing it works.
pub async fn shared_codes_are_unique(s: Arc<dyn Store>) {
    let a = claimable(&s, 10, 1).await;
    let b = claimable(&s, 10, 1).await;
    let code = SharedCode::parse("spring24").unwrap();
    s.set_shared_code(a.id, Some(&code)).await.unwrap();
    assert_eq!(
        s.shared_code(a.id).await.unwrap().as_deref(),
        Some("SPRING24")
    );
    assert!(matches!(
        s.set_shared_code(b.id, Some(&code)).await,
        Err(StoreError::Conflict(Conflict::Unique))
    ));
    assert_eq!(s.shared_code(b.id).await.unwrap(), None, "nothing written");
    let found = s.promo_code("SPRING24").await.unwrap();
    assert_eq!((found.template_id, found.batch_id), (a.id, None));
    let other = SharedCode::parse("SUMMER25").unwrap();
    s.set_shared_code(a.id, Some(&other)).await.unwrap();
    assert!(matches!(
        s.promo_code("SPRING24").await,
        Err(StoreError::NotFound)
    ));
    s.set_shared_code(b.id, Some(&code)).await.unwrap();
    s.set_shared_code(a.id, None).await.unwrap();
    assert_eq!(s.shared_code(a.id).await.unwrap(), None);
    let missing = coupond_domain::TemplateId::new(a.id.get() + 1000).unwrap();
    assert!(matches!(
        s.set_shared_code(missing, Some(&other)).await,
        Err(StoreError::NotFound)
    ));

    // Redeeming a shared code is a claim that records the code on the coupon.
    let out = s
        .claim_batch(b.id, &[with_code("u", "SPRING24", false)], at(15))
        .await
        .unwrap();
    let ClaimOutcome::Issued(c) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(c.code.as_deref(), Some("SPRING24"));
    assert_eq!(
        s.coupon(c.id).await.unwrap().code.as_deref(),
        Some("SPRING24")
    );
}

/// Batches fill to their count exactly: duplicates and codes past the count are skipped, and
/// the batch is finished when complete.
pub async fn code_batches_fill_exactly(s: Arc<dyn Store>) {
    let t = claimable(&s, 10, 1).await;
    let b = s.insert_code_batch(t.id, &spec(5), at(1)).await.unwrap();
    assert_eq!(
        (b.count, b.generated, b.finished_at, b.prefix.as_str()),
        (5, 0, None, "T")
    );
    let owner = crate::owner_key(t.merchant_id);
    assert_eq!(
        s.unfinished_code_batches().await.unwrap(),
        vec![crate::OpenJob { id: b.id, owner }]
    );
    assert_eq!(s.queued_codes(owner).await.unwrap(), 5);
    assert_eq!(s.queued_codes(owner + 1000).await.unwrap(), 0);
    let codes = |v: &[&str]| v.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>();
    let b1 = s
        .add_codes(b.id, &codes(&["TA", "TB", "TA"]), at(2))
        .await
        .unwrap();
    assert_eq!(
        (b1.generated, b1.finished_at),
        (2, None),
        "the repeat is skipped"
    );
    let b2 = s
        .add_codes(b.id, &codes(&["TB", "TC", "TD", "TE", "TF", "TG"]), at(3))
        .await
        .unwrap();
    assert_eq!(
        b2.generated, 4,
        "TB existed; TC..TE fill the three places left, TF and TG are not taken"
    );
    let b3 = s
        .add_codes(b.id, &codes(&["TH", "TI"]), at(4))
        .await
        .unwrap();
    assert_eq!((b3.generated, b3.finished_at), (5, Some(at(4))));
    assert_eq!(s.code_batch(b.id).await.unwrap(), b3);
    assert!(s.unfinished_code_batches().await.unwrap().is_empty());
    let all: Vec<String> = s
        .batch_codes(b.id, None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.code)
        .collect();
    assert_eq!(all, codes(&["TA", "TB", "TC", "TD", "TH"]));
    let page: Vec<String> = s
        .batch_codes(b.id, Some("TB"), 2)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.code)
        .collect();
    assert_eq!(page, codes(&["TC", "TD"]));
    let c = s.promo_code("TC").await.unwrap();
    assert_eq!((c.batch_id, c.redeemed_by.clone()), (Some(b.id), None));
    // A template's batches, by id, paged; another template's are not among them.
    let second = s.insert_code_batch(t.id, &spec(3), at(1)).await.unwrap();
    let other = claimable(&s, 10, 1).await;
    s.insert_code_batch(other.id, &spec(2), at(1))
        .await
        .unwrap();
    let page = |after, limit| crate::Page { after, limit };
    let mine = s.template_code_batches(t.id, page(None, 10)).await.unwrap();
    assert_eq!(mine, vec![b3, second.clone()]);
    let next = s
        .template_code_batches(t.id, page(Some(b.id), 1))
        .await
        .unwrap();
    assert_eq!(next, vec![second]);
}

/// A single-use code gives one coupon: its redeemer gets the same coupon again, anyone else
/// `CodeTaken`; a redemption refused for stock or limit leaves the code free.
pub async fn single_use_codes_give_one_coupon(s: Arc<dyn Store>) {
    let t = claimable(&s, 2, 1).await;
    let b = s.insert_code_batch(t.id, &spec(4), at(1)).await.unwrap();
    let list: Vec<String> = ["TK1", "TK2", "TK3", "TK4"].map(str::to_owned).to_vec();
    s.add_codes(b.id, &list, at(1)).await.unwrap();

    let out = s
        .claim_batch(t.id, &[with_code("a", "TK1", true)], at(15))
        .await
        .unwrap();
    let ClaimOutcome::Issued(first) = out[0].clone() else {
        panic!("{out:?}")
    };
    let again = s
        .claim_batch(
            t.id,
            &[with_code("a", "TK1", true), with_code("b", "TK1", true)],
            at(16),
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        vec![
            ClaimOutcome::Replayed(first.clone()),
            ClaimOutcome::CodeTaken
        ]
    );
    let used = s.promo_code("TK1").await.unwrap();
    assert_eq!(
        (
            used.redeemed_by.as_ref().map(|u| u.as_str()),
            used.coupon_id,
            used.redeemed_at
        ),
        (Some("a"), Some(first.id), Some(at(15)))
    );
    // Over the limit: refused, and the code stays free for someone else.
    let out = s
        .claim_batch(t.id, &[with_code("a", "TK2", true)], at(15))
        .await
        .unwrap();
    assert_eq!(out, vec![ClaimOutcome::LimitReached]);
    assert_eq!(s.promo_code("TK2").await.unwrap().redeemed_by, None);
    // Sold out: the same.
    s.claim_batch(t.id, &[req("x")], at(15)).await.unwrap();
    let out = s
        .claim_batch(t.id, &[with_code("c", "TK3", true)], at(15))
        .await
        .unwrap();
    assert_eq!(out, vec![ClaimOutcome::SoldOut]);
    assert_eq!(s.promo_code("TK3").await.unwrap().redeemed_by, None);
    // A code of another template is not this one's.
    let other = claimable(&s, 5, 1).await;
    let out = s
        .claim_batch(other.id, &[with_code("d", "TK4", true)], at(15))
        .await
        .unwrap();
    assert_eq!(out, vec![ClaimOutcome::CodeTaken]);
    // After the window, the redeemer still finds its coupon.
    let out = s
        .claim_batch(
            t.id,
            &[with_code("a", "TK1", true), with_code("e", "TK4", true)],
            at(25),
        )
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![ClaimOutcome::Replayed(first), ClaimOutcome::NotClaimable]
    );
    let audit = s.inspect().audit_template(t.id).await.unwrap();
    assert_eq!(audit.coupons, 2);

    // Twenty users racing for one code in separate batches: exactly one coupon.
    let t = claimable(&s, 100, 1).await;
    let b = s.insert_code_batch(t.id, &spec(1), at(1)).await.unwrap();
    s.add_codes(b.id, &["TRACE".to_owned()], at(1))
        .await
        .unwrap();
    let mut joins = vec![];
    for i in 0..20 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.claim_batch(t.id, &[with_code(&format!("r{i}"), "TRACE", true)], at(15))
                .await
                .unwrap()
        }));
    }
    let mut issued = 0;
    let mut taken = 0;
    for j in joins {
        match j.await.unwrap().pop().unwrap() {
            ClaimOutcome::Issued(_) => issued += 1,
            ClaimOutcome::CodeTaken => taken += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((issued, taken), (1, 19));
    assert_eq!(s.inspect().count_coupons(t.id).await.unwrap(), 1);
}
