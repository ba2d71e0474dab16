//! The load test's printed summary: throughput, latency percentiles, answers by code.

use super::Tally;

/// Prints what `tally` measured for `total` requests under `title`.
pub(super) fn report(title: &str, total: usize, tally: &Tally) {
    let elapsed = tally.answers.get("_elapsed_us").copied().unwrap_or(1) as f64 / 1e6;
    let mut lat = tally.latencies.clone();
    lat.sort_unstable();
    let pct = |p: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1;
        lat[i] as f64 / 1000.0
    };
    println!("{title}");
    println!(
        "requests     {total} in {elapsed:.2} s = {:.0}/s",
        total as f64 / elapsed
    );
    println!(
        "latency      p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        lat.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    let answers: Vec<String> = tally
        .answers
        .iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    println!("answers      {}", answers.join(" | "));
    if !tally.issued.is_empty() {
        let secs = tally.last_created_us.max(1) as f64 / 1e6;
        println!(
            "issued       {} coupons in {secs:.2} s = {:.0} claims/s",
            tally.issued.len(),
            tally.issued.len() as f64 / secs
        );
    }
    if tally.transport_errors > 0 {
        println!("no answer    {}", tally.transport_errors);
    }
    if tally.retries > 0 {
        println!(
            "retried      {} attempts (same Idempotency-Key)",
            tally.retries
        );
        let after: Vec<String> = tally
            .retried_after
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        println!("retried after  {}", after.join(" | "));
    }
}
