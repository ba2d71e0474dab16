#!/usr/bin/env bash
# Compares quote speed between two builds on this machine: for each round, each binary serves a
# fresh SQLite database and `coupond loadtest --scenario quote` runs 1,000 quotes one at a time
# and 10,000 at 16 connections against it; the second binary runs again with `--conditions`
# (every template with a 5-test tree, a third with exclusions). Prints one line per run.
#
# Usage: bench/quote-ab.sh BEFORE_BIN AFTER_BIN [ROUNDS]
set -euo pipefail
before=$(realpath "$1")
after=$(realpath "$2")
rounds=${3:-3}

run() {
  local bin=$1 label=$2
  shift 2
  local work port pid
  work=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  export COUPOND_DATABASE_URL="sqlite://$work/bench.db" COUPOND_LOG_LEVEL=warn
  "$bin" serve --listen "127.0.0.1:$port" >"$work/serve.out" 2>"$work/serve.err" &
  pid=$!
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  local url="http://127.0.0.1:$port"
  local one many
  one=$("$bin" loadtest --url "$url" --scenario quote --users 1000 --concurrency 1 "$@" 2>&1 | grep latency)
  many=$("$bin" loadtest --url "$url" --scenario quote --users 10000 --concurrency 16 "$@" 2>&1 | grep requests)
  echo "$label | one at a time: $one | 16 connections: $many"
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}

for r in $(seq 1 "$rounds"); do
  echo "-- round $r"
  run "$before" before
  run "$after" after
  run "$after" "after --conditions" --conditions
done
