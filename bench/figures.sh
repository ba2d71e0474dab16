#!/usr/bin/env bash
# The performance report at scale (issue 36): an activity of 10 templates holding COUPONS
# coupons claimed over 30 days (a quarter from a listing, a quarter with a `source`, the rest
# direct), ORDERS of them used on confirmed orders (each with its lock and use in the log, one
# in 20 refunded), seeded with plain SQL into a fresh SQLite database; then the performance
# report of the activity over those 30 days asked RUNS times with curl, each answer's time
# printed, then the median. Every coupon is in the activity: the report reads all of them.
# ORDERS / 3 orders paid without a coupon are seeded too (the report's `without_coupon`).
# `serve`'s figures keeper counts the settled hours of the last 31 days of the platform and
# the activity in the background and keeps them (figure_hours); the script waits for it
# (printing how long it took), then asks: every answer reads the kept hours and counts only
# the open hour or two.
#
# Starts `coupond serve` (BIN, default target/release/coupond, else target/debug/coupond).
# Usage: bench/figures.sh [COUPONS] [ORDERS] [RUNS]
set -euo pipefail
coupons=${1:-1000000}
orders=${2:-300000}
runs=${3:-7}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/target/release/coupond}
[ -x "$bin" ] || bin="$root/target/debug/coupond"
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
url="http://127.0.0.1:$port"
db="$work/bench.db"
export COUPOND_DATABASE_URL="sqlite://$db" COUPOND_LOG_LEVEL=warn COUPOND_AUDIT_AT=off
pid=
start() {
  "$bin" serve --listen "127.0.0.1:$port" >>"$work/serve.out" 2>>"$work/serve.err" &
  pid=$!
  for _ in $(seq 1 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && return; sleep 0.1; done
  cat "$work/serve.err"; exit 1
}
stop() { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
trap 'stop; rm -rf "$work"' EXIT
echo "binary: $bin ($(nproc) cores)"
start
platform=$("$bin" keys create --role platform --label bench 2>/dev/null)
h() { echo "Authorization: Bearer $1"; }
json='Content-Type: application/json'
merchant=$(curl -fsS -X POST "$url/v1/merchants" -H "$(h "$platform")" -H "$json" \
  -d '{"name": "Bench", "short_name": "Bench", "cities": [1]}' | jq .id)
mkey=$("$bin" keys create --role merchant --merchant "$merchant" --label bench 2>/dev/null)
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
soon=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+60 days' +%Y-%m-%dT%H:%M:%SZ)
a=$(curl -fsS -X POST "$url/v1/activities" -H "$(h "$platform")" -H "$json" \
  -d "{\"title\": \"Bench\", \"cities\": [1], \"kind\": \"amount_off\", \"value_min\": 100,
       \"value_max\": 5000, \"funding\": {\"platform_bps\": 6000},
       \"enrollment\": {\"start\": \"$now\", \"end\": \"$soon\"},
       \"run\": {\"start\": \"$soon\", \"end\": \"$end\"}}" | jq .id)
for i in $(seq 1 10); do
  curl -fsS -X POST "$url/v1/templates" -H "$(h "$mkey")" -H "$json" \
    -d "{\"activity_id\": $a, \"title\": \"Bench $i\", \"value\": {\"kind\": \"amount_off\", \"amount\": 500},
         \"cities\": [1], \"total_stock\": $coupons, \"validity\": {\"type\": \"relative\", \"days\": 60}}" >/dev/null
done
listing=$(curl -fsS -X POST "$url/v1/listings" -H "$(h "$mkey")" -H "$json" \
  -d '{"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000}' | jq .id)
first=$(sqlite3 "$db" "SELECT MIN(id) FROM templates WHERE activity_id = $a")
stop

echo "seeding $coupons coupons and $orders orders in activity $a"
seed_start=$(date +%s)
# The period: the 30 days before now. Coupon i is claimed at t0 + i * span / coupons; the
# first ORDERS coupons are locked a minute and used an hour after their claim.
sqlite3 "$db" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
CREATE TEMP TABLE k AS SELECT (unixepoch() - 30 * 86400) * 1000000 AS t0, 30 * 86400 * 1000000 AS span;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $coupons - 1)
INSERT INTO coupons (id, template_id, user_id, status, claimed_at, valid_from, valid_until,
                     updated_at, order_id, discount, used_at, channel, source)
SELECT i + 1, $first + i % 10, 'seed-' || i,
       CASE WHEN i < $orders THEN 'used' ELSE 'unused' END,
       t0 + i * (span / $coupons), t0 + i * (span / $coupons), t0 + i * (span / $coupons) + 60 * 86400000000,
       t0 + i * (span / $coupons),
       CASE WHEN i < $orders THEN 'o-' || i END,
       CASE WHEN i < $orders THEN 500 END,
       CASE WHEN i < $orders THEN t0 + i * (span / $coupons) + 3600000000 END,
       CASE i % 4 WHEN 0 THEN 'listing:$listing' ELSE 'direct' END,
       CASE i % 4 WHEN 1 THEN 'app-home' END
FROM n, k;
INSERT INTO coupon_events (coupon_id, from_status, to_status, actor, at)
SELECT id, NULL, 'unused', 'user:' || user_id, claimed_at FROM coupons;
INSERT INTO coupon_events (coupon_id, from_status, to_status, order_id, actor, at)
SELECT id, 'unused', 'locked', order_id, 'service', used_at - 60000000 FROM coupons WHERE order_id IS NOT NULL;
INSERT INTO coupon_events (coupon_id, from_status, to_status, order_id, actor, at)
SELECT id, 'locked', 'used', order_id, 'service', used_at FROM coupons WHERE order_id IS NOT NULL;
INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer, created_at, ended_at,
                    subtotal, discount, currency)
SELECT order_id, user_id, 'confirmed', X'00', used_at, '{}', used_at - 60000000, used_at,
       10000 + (id % 50) * 1000, 500, 'CNY' FROM coupons WHERE order_id IS NOT NULL;
-- One order in 20 refunded a day after its use: its coupon back to unused.
INSERT INTO refunds (order_id, coupon_id, template_id, discount, used_at, to_status, actor, at)
SELECT order_id, id, template_id, 500, used_at, 'unused', 'service', used_at + 86400000000
  FROM coupons WHERE order_id IS NOT NULL AND id % 20 = 0;
UPDATE orders SET refunded_discount = 500, refunded_at = ended_at + 86400000000
 WHERE order_id IN (SELECT order_id FROM refunds);
INSERT INTO coupon_events (coupon_id, from_status, to_status, order_id, actor, at)
SELECT coupon_id, 'used', 'unused', order_id, 'service', at FROM refunds;
UPDATE coupons SET status = 'unused', order_id = NULL, discount = NULL, used_at = NULL
 WHERE id IN (SELECT coupon_id FROM refunds);
-- The activity ran through those 30 days: its windows move back to before them (as the API
-- would not set them in the past).
UPDATE activities SET
  enroll_start = (SELECT t0 FROM k) - 3 * 86400000000,
  enroll_end = (SELECT t0 FROM k) - 2 * 86400000000,
  run_start = (SELECT t0 FROM k) - 86400000000,
  spec = json_set(spec,
    '\$.enrollment.start', strftime('%Y-%m-%dT%H:%M:%SZ', (SELECT t0 FROM k) / 1000000 - 3 * 86400, 'unixepoch'),
    '\$.enrollment.end', strftime('%Y-%m-%dT%H:%M:%SZ', (SELECT t0 FROM k) / 1000000 - 2 * 86400, 'unixepoch'),
    '\$.run.start', strftime('%Y-%m-%dT%H:%M:%SZ', (SELECT t0 FROM k) / 1000000 - 86400, 'unixepoch'))
 WHERE id = $a;
-- Orders paid without a coupon, spread over the same 30 days.
WITH RECURSIVE p(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM p WHERE i < $orders / 3 - 1)
INSERT INTO orders (order_id, user_id, state, fingerprint, deadline, answer, created_at, ended_at,
                    subtotal, discount, currency, plain, merchant_id)
SELECT 'plain-' || i, 'seed-p-' || i, 'confirmed', X'01', t, '{}', t, t, 8000 + (i % 40) * 500, 0,
       'CNY', 1, $merchant
  FROM (SELECT i, t0 + i * (span / ($orders / 3)) AS t FROM p, k);
COMMIT;
ANALYZE;
SQL
echo "seeded in $(( $(date +%s) - seed_start )) s; $(du -h "$db" | cut -f1) on disk"
start
keeper_start=$(date +%s.%N)
until [ "$(sqlite3 "$db" "SELECT COUNT(*) FROM figure_spans WHERE scope = 'activity:$a'")" -ge 720 ]; do
  sleep 0.2
done
echo "the figures keeper kept 31 days of hours of the platform and the activity in $(echo "$(date +%s.%N) - $keeper_start" | bc) s (in the background)"
from=$(date -u -d '-30 days' +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u +%Y-%m-%dT%H:%M:%SZ)
path="/v1/reports/performance?activity_id=$a&from=$from&to=$to"
first=$(curl -fsS -o "$work/first.json" -w '%{time_total}' "$url$path" -H "$(h "$platform")")
echo "first answer: $first s"
jq -c '{templates, funnel: (.totals.funnel | {claimed, locked, used, refunded}), orders: .totals.orders,
          gmv: .totals.gmv, without_coupon: .totals.without_coupon, days: (.days | length),
          channels: [.channels[] | .channel]}' "$work/first.json"
for i in $(seq 1 "$runs"); do
  curl -fsS -o /dev/null -w '%{time_total}\n' "$url$path" -H "$(h "$platform")" | tee -a "$work/times.txt"
done
median=$(sort -n "$work/times.txt" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "== performance report of one activity over 30 days: median $median s over $runs runs ($(nproc) cores)"
