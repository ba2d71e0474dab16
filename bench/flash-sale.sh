#!/usr/bin/env bash
# Reproduces the README's flash-sale figures: for each backend and claim mode, starts a release
# `coupond serve` on a fresh database, measures the HTTP ceiling (GET /healthz), runs the
# flash-sale scenario RUNS times (one template, stock 100,000, 200,000 distinct users, 512
# connections), and prints every run, how long the outbox consumers took to catch up after it
# (needs sqlite3, psql or mysql), and the median claims per second.
#
# Usage: bench/flash-sale.sh [sqlite|postgres|mysql] [batched|single] [RUNS]
# PostgreSQL: set BENCH_POSTGRES_URL (a database this script may fill), e.g.
#   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/coupond_bench
# MariaDB / MySQL: set BENCH_MYSQL_HOST (default 127.0.0.1; user root, no password): the
#   script drops and creates the database coupond_bench there.
set -euo pipefail
backend=${1:-sqlite}
mode=${2:-batched}
runs=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/coupond"
[ -x "$bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p coupond
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
case "$backend" in
  sqlite) db="sqlite://$work/bench.db" ;;
  postgres)
    db=${BENCH_POSTGRES_URL:?set BENCH_POSTGRES_URL}
    psql "$db" -q -c 'DROP SCHEMA public CASCADE; CREATE SCHEMA public;' >/dev/null
    ;;
  mysql)
    myhost=${BENCH_MYSQL_HOST:-127.0.0.1}
    mysql -h "$myhost" -uroot -e 'DROP DATABASE IF EXISTS coupond_bench; CREATE DATABASE coupond_bench'
    db="mysql://root@$myhost:3306/coupond_bench"
    ;;
  *) echo "backend: sqlite, postgres or mysql" >&2; exit 2 ;;
esac
export COUPOND_DATABASE_URL="$db" COUPOND_CLAIM_MODE="$mode" COUPOND_LOG_LEVEL=warn
"$bin" serve --listen "127.0.0.1:$port" >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

echo "== $backend, claim_mode=$mode, $(nproc) cores"
"$bin" loadtest --url "http://127.0.0.1:$port" --scenario ceiling | tee "$work/ceiling.txt"
# Events the slowest outbox consumer (inbox, reminders, webhooks, cache) has not handled yet.
backlog_sql="SELECT COUNT(*) FROM outbox WHERE id > (SELECT COALESCE(MIN(event_id), 0) FROM sink_progress)"
backlog() {
  case "$backend" in
    sqlite) sqlite3 "$work/bench.db" "$backlog_sql" ;;
    postgres) psql "$db" -Atq -c "$backlog_sql" ;;
    # Positions are the sequencer's numbers (`seq`), kept as the position's txid.
    mysql) mysql -h "$myhost" -uroot -N coupond_bench -e "SELECT COUNT(*) FROM outbox
             WHERE seq IS NULL OR seq > (SELECT COALESCE(MIN(txid), 0) FROM sink_progress)" ;;
  esac
}
# Polls the backlog until it is empty: how long the consumers took after the run's last answer.
drain() {
  local start left
  start=$(date +%s.%N)
  left=$(backlog)
  echo "outbox backlog at the end of the run: $left events"
  while [ "$(backlog)" != 0 ]; do
    if [ "$(echo "$(date +%s.%N) - $start > 300" | bc)" = 1 ]; then
      echo "outbox consumers still behind after 300 s: $(backlog) events"; return
    fi
    sleep 0.1
  done
  printf 'outbox consumers caught up %.1f s after the run\n' "$(echo "$(date +%s.%N) - $start" | bc)"
}
rates=()
claims=()
for i in $(seq 1 "$runs"); do
  echo "-- run $i"
  "$bin" loadtest --url "http://127.0.0.1:$port" --scenario flash-sale 2>/dev/null | tee "$work/run$i.txt"
  rates+=("$(awk '/^requests/ {print $7}' "$work/run$i.txt" | tr -d '/s')")
  claims+=("$(awk '/^issued/ {print $8}' "$work/run$i.txt")")
  drain
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "== median over $runs runs: $(median "${claims[@]}") claims/s until sold out; $(median "${rates[@]}") requests/s overall"
