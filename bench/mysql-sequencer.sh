#!/usr/bin/env bash
# The MySQL outbox sequencer's statements, old and new forms, on a quiet server: an outbox of
# 100,000 events (the schema's table and index), half of them numbered, and the 5,000 oldest
# unnumbered ones read and numbered as the sequencer does, each form ROUNDS times in turn, each
# time rolled back. Prints each form's median time (the server's own, from SHOW PROFILES).
#
# Usage: bench/mysql-sequencer.sh [ROUNDS]   (default 15; MariaDB's seq_ engine makes the rows)
# BENCH_MYSQL_HOST (default 127.0.0.1; user root, no password): the script drops and creates
# the database coupond_seq_bench there, and drops it at the end.
set -euo pipefail
rounds=${1:-15}
host=${BENCH_MYSQL_HOST:-127.0.0.1}
db=coupond_seq_bench
my() { mysql -h "$host" -uroot "$@"; }
my -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
trap 'my -e "DROP DATABASE IF EXISTS $db"' EXIT
my "$db" <<'SQL'
CREATE TABLE outbox (
    id   BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind VARCHAR(255) NOT NULL,
    at   BIGINT       NOT NULL,
    body LONGTEXT     NOT NULL,
    seq  BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX outbox_by_seq ON outbox (seq, id);
INSERT INTO outbox (kind, at, body) SELECT 'coupon.claimed', seq, REPEAT('x', 200) FROM seq_1_to_100000;
UPDATE outbox SET seq = id WHERE id <= 50000;
SQL
ids_json=$(seq -s, 50001 55000)
forms=(
  "locking read|SELECT id FROM outbox WHERE seq = 0 ORDER BY id LIMIT 5000 FOR UPDATE SKIP LOCKED"
  "plain read|SELECT id FROM outbox WHERE seq = 0 ORDER BY id LIMIT 5000"
  "update by a JSON list|UPDATE JSON_TABLE('[$ids_json]', '\$[*]' COLUMNS (v BIGINT PATH '\$')) AS l STRAIGHT_JOIN outbox o ON o.id = l.v SET o.seq = o.id + 100000"
  "update by a range|UPDATE outbox FORCE INDEX (PRIMARY) SET seq = id + 100000 WHERE id BETWEEN 50001 AND 55000 AND seq = 0"
)
{
  # As coupond's sessions are (see crates/store-mysql/src/store.rs).
  echo "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"
  echo "SET profiling = 1; SET profiling_history_size = 100;"
  # The server keeps the last 100 statements' profiles: read them after each round.
  for _ in $(seq 1 "$rounds"); do
    for f in "${forms[@]}"; do echo "BEGIN; ${f#*|}; ROLLBACK;"; done
    echo "SHOW PROFILES;"
  done
} | my -N "$db" |
  awk -F'\t' '$3 !~ /^(BEGIN|ROLLBACK|SET)/ && $2 ~ /^[0-9.]+$/ && !seen[$1]++ { print $2 "\t" $3 }' >"${TMPDIR:-/tmp}/seq-bench.$$"
for f in "${forms[@]}"; do
  name=${f%%|*}
  q=${f#*|}
  # SHOW PROFILES cuts long statements: those are matched on their first 40 characters.
  awk -F'\t' -v q="$q" '(length(q) < 200 ? $2 == q : index($2, substr(q, 1, 40)) == 1) { print $1 }' \
    "${TMPDIR:-/tmp}/seq-bench.$$" | sort -n |
    awk -v n="$name" '{ v[NR] = $1 } END { printf "%-24s median %.2f ms of %d (5,000 events)\n", n, v[int((NR + 1) / 2)] * 1000, NR }'
done
rm -f "${TMPDIR:-/tmp}/seq-bench.$$"
