//! What `/metrics` gives an operator to alert on (`deploy/prometheus/alerts.yml` reads it):
//! every family has its HELP and TYPE, and the figures read at scrape are there.

use serde_json::json;

use crate::support::*;

/// The family a sample line belongs to: its name without the histogram's suffixes.
fn family(sample: &str) -> &str {
    let name = sample.split(['{', ' ']).next().unwrap_or_default();
    ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_has_help_and_type_and_the_alerts_figures_are_there() {
    let app = TestApp::new().await;
    let t = crate::claims::live(&app, 1, 1, json!({"budget": 10_000})).await;
    let path = format!("/v1/templates/{t}/claims");
    for u in ["u-a1", "u-a2"] {
        app.post(&path, &app.service, json!({"user_id": u})).await;
    }
    let text = crate::flows::metrics_text(&app).await;
    let mut families = std::collections::BTreeSet::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        families.insert(family(line).to_owned());
    }
    for f in &families {
        let described = text.lines().any(|l| {
            l.strip_prefix("# HELP ")
                .is_some_and(|rest| rest.split(' ').next() == Some(f.as_str()))
        });
        let typed = text.lines().any(|l| {
            l.strip_prefix("# TYPE ")
                .is_some_and(|rest| rest.split(' ').next() == Some(f.as_str()))
        });
        assert!(
            described && typed,
            "{f}: HELP {described}, TYPE {typed}\n{text}"
        );
    }
    for wanted in [
        "coupond_database_up 1",
        "coupond_templates_claimable ",
        "coupond_templates_sold_out ",
        "coupond_templates_low_stock ",
        "coupond_locks_expiring_soon ",
        "coupond_budget_used_ratio_max ",
        "coupond_claims_total{outcome=\"sold_out\"}",
    ] {
        assert!(text.contains(wanted), "{wanted} in\n{text}");
    }
}
