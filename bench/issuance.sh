#!/usr/bin/env bash
# Reproduces the README's bulk issuance figure: starts a release `coupond serve` on a fresh
# SQLite database and runs `coupond loadtest --scenario issuance` (100,000 users uploaded as a
# file, followed to the end, audited) RUNS times against it.
#
# Usage: bench/issuance.sh [RUNS]
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/coupond"
[ -x "$bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p coupond
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
export COUPOND_DATABASE_URL="sqlite://$work/bench.db" COUPOND_LOG_LEVEL=warn
"$bin" serve --listen "127.0.0.1:$port" >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 1 "$runs"); do
  echo "-- run $i"
  "$bin" loadtest --url "http://127.0.0.1:$port" --scenario issuance 2>/dev/null
done
