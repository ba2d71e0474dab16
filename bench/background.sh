#!/usr/bin/env bash
# Claims while the single SQLite writer also serves background work (issue 11, item 6).
# Starts a release `coupond serve` on a fresh SQLite database, then RUNS times:
#   1. quiet: `loadtest --scenario custom` (USERS claims of a fresh template, CONC connections);
#   2. busy: the same, while a merchant's 1,000,000-code batch is being generated and a
#      200,000-user bulk issuance runs (both started just before, over HTTP).
# Prints each run's claim latency line, and the medians of p50 and p99 for both phases.
#
# Usage: bench/background.sh [RUNS] [USERS] [CONC]
set -euo pipefail
runs=${1:-3}
users=${2:-6000}
conc=${3:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/coupond"
[ -x "$bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p coupond
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
url="http://127.0.0.1:$port"
export COUPOND_DATABASE_URL="sqlite://$work/bench.db" COUPOND_LOG_LEVEL=warn
# The claim load comes from one address with a service key: no rate limit applies.
"$bin" serve --listen "127.0.0.1:$port" >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

platform=$("$bin" keys create --role platform --label bench 2>/dev/null)
merchant=$(curl -fsS -X POST "$url/v1/merchants" -H "Authorization: Bearer $platform" \
  -H 'Content-Type: application/json' -d '{"name": "Bench", "short_name": "Bench", "cities": [1]}' | jq .id)
mkey=$("$bin" keys create --role merchant --merchant "$merchant" --label bench 2>/dev/null)

# A published template with a batch of a million single-use codes being generated.
start_codes() {
  local now end t
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  end=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
  t=$(curl -fsS -X POST "$url/v1/templates" -H "Authorization: Bearer $mkey" -H 'Content-Type: application/json' \
    -d "{\"title\": \"Codes\", \"value\": {\"kind\": \"amount_off\", \"amount\": 100}, \"cities\": [1],
         \"total_stock\": 1000000, \"claim_window\": {\"start\": \"$now\", \"end\": \"$end\"},
         \"validity\": {\"type\": \"relative\", \"days\": 30}}" | jq .id)
  curl -fsS -X POST "$url/v1/templates/$t/publish" -H "Authorization: Bearer $mkey" >/dev/null
  curl -fsS -X POST "$url/v1/templates/$t/codes" -H "Authorization: Bearer $mkey" \
    -H 'Content-Type: application/json' -d '{"count": 1000000, "prefix": "BG", "length": 10}' | jq .id
}

claims() {
  "$bin" loadtest --url "$url" --scenario custom --users "$users" --stock "$users" --concurrency "$conc" 2>/dev/null |
    tee -a "$work/$1.txt" | grep -E '^latency'
}

for i in $(seq 1 "$runs"); do
  echo "-- run $i, quiet"
  claims quiet
  echo "-- run $i, while generating 1,000,000 codes and issuing to 200,000 users"
  batch=$(start_codes)
  "$bin" loadtest --url "$url" --scenario issuance --users 200000 >"$work/issuance$i.txt" 2>&1 &
  issuing=$!
  sleep 1 # both are under way: the upload is parsed, the first chunks are committed
  claims busy
  curl -fsS "$url/v1/code-batches/$batch" -H "Authorization: Bearer $mkey" | jq -c '{generated, count}'
  wait $issuing || { cat "$work/issuance$i.txt"; exit 1; }
  grep -E '^(issued|audit)' "$work/issuance$i.txt" || true
  # Let the code batch finish before the next quiet phase.
  while [ "$(curl -fsS "$url/v1/code-batches/$batch" -H "Authorization: Bearer $mkey" | jq -r .status)" != done ]; do sleep 1; done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for phase in quiet busy; do
  p50=$(awk '/^latency/ {print $3}' "$work/$phase.txt" | median)
  p99=$(awk '/^latency/ {print $9}' "$work/$phase.txt" | median)
  echo "== $phase: median claim p50 $p50 ms, p99 $p99 ms over $runs runs ($(nproc) cores)"
done
"$bin" audit
