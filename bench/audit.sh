#!/usr/bin/env bash
# Claims while the self-audit runs on a large database (issue 34, point 8): the audit's checks
# only read, so the claim path should not wait on them.
# Starts `coupond serve` (BIN, default target/release/coupond, else target/debug/coupond) on a
# fresh SQLite database with the schedule off, seeds COUPONS coupons of one template with their
# log rows and per-user counters (plain SQL, as consistent as claims leave them: the audit finds
# nothing), then RUNS times:
#   1. quiet: `loadtest --scenario custom` (USERS claims of a fresh template, CONC connections);
#   2. busy: `POST /v1/audits`, and the same claims once the run has started; the phase counts
#      only if the run was still going when the claims ended.
# Prints each run's claim latency line, how long each audit took, and the medians of p50 and
# p99 for both phases.
#
# Usage: bench/audit.sh [COUPONS] [RUNS] [USERS] [CONC]
set -euo pipefail
coupons=${1:-1000000}
runs=${2:-3}
users=${3:-2000}
conc=${4:-16}
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
merchant=$(curl -fsS -X POST "$url/v1/merchants" -H "Authorization: Bearer $platform" \
  -H 'Content-Type: application/json' -d '{"name": "Bench", "short_name": "Bench", "cities": [1]}' | jq .id)
mkey=$("$bin" keys create --role merchant --merchant "$merchant" --label bench 2>/dev/null)
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
end=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
t=$(curl -fsS -X POST "$url/v1/templates" -H "Authorization: Bearer $mkey" -H 'Content-Type: application/json' \
  -d "{\"title\": \"Seeded\", \"value\": {\"kind\": \"amount_off\", \"amount\": 100}, \"cities\": [1],
       \"total_stock\": $coupons, \"claim_window\": {\"start\": \"$now\", \"end\": \"$end\"},
       \"validity\": {\"type\": \"relative\", \"days\": 30}}" | jq .id)
curl -fsS -X POST "$url/v1/templates/$t/publish" -H "Authorization: Bearer $mkey" >/dev/null
stop

echo "seeding $coupons coupons of template $t"
seed_start=$(date +%s)
sqlite3 "$db" <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $coupons)
INSERT INTO coupons (template_id, user_id, status, claimed_at, valid_from, valid_until, updated_at)
SELECT $t, 'seed-' || i, 'unused', unixepoch() * 1000000, unixepoch() * 1000000,
       (unixepoch() + 30 * 86400) * 1000000, unixepoch() * 1000000 FROM n;
INSERT INTO coupon_events (coupon_id, from_status, to_status, actor, at)
SELECT id, NULL, 'unused', 'system', claimed_at FROM coupons WHERE template_id = $t;
INSERT INTO holdings (template_id, user_id, n) SELECT $t, user_id, 1 FROM coupons WHERE template_id = $t;
UPDATE templates SET claimed = $coupons WHERE id = $t;
COMMIT;
SQL
echo "seeded in $(( $(date +%s) - seed_start )) s; $(du -h "$db" | cut -f1) on disk"
start

claims() {
  "$bin" loadtest --url "$url" --scenario custom --users "$users" --stock "$users" --concurrency "$conc" \
    >"$work/lt.out" 2>"$work/lt.err" || { tail -5 "$work/lt.out" "$work/lt.err" >&2; echo "claims failed" >&2; }
  grep -E "^latency" "$work/lt.out" | tee -a "$work/$1.txt"
}
state() { curl -fsS "$url/v1/audits?limit=1" -H "Authorization: Bearer $platform" | jq -r '.items[0].state'; }

for i in $(seq 1 "$runs"); do
  echo "-- run $i, quiet"
  claims quiet
  echo "-- run $i, while the audit runs"
  curl -fsS -X POST "$url/v1/audits" -H "Authorization: Bearer $platform" >/dev/null
  while [ "$(state)" = queued ]; do sleep 0.05; done
  line=$(claims busy.all); echo "$line"
  if [ "$(state)" = running ]; then echo "$line" >>"$work/busy.txt"; else echo "   (the audit ended before the claims: not counted)"; fi
  while [ "$(state)" = running ]; do sleep 0.5; done
  curl -fsS "$url/v1/audits?limit=1" -H "Authorization: Bearer $platform" |
    jq -r '.items[0] | "   audit #\(.id): \(.state), \(.violations) violations, started \(.started_at), finished \(.finished_at)"'
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for phase in quiet busy; do
  [ -s "$work/$phase.txt" ] || { echo "== $phase: no run counted"; continue; }
  p50=$(awk '/^latency/ {print $3}' "$work/$phase.txt" | median)
  p99=$(awk '/^latency/ {print $9}' "$work/$phase.txt" | median)
  echo "== $phase: median claim p50 $p50 ms, p99 $p99 ms over $(wc -l <"$work/$phase.txt") runs ($(nproc) cores)"
done
