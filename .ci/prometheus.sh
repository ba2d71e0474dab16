#!/usr/bin/env bash
# The alerts operators are given (deploy/prometheus/alerts.yml): checked with `promtool check
# rules`, evaluated against recorded series with `promtool test rules` (alerts_test.yml), then
# loaded by a real Prometheus scraping a `coupond serve --demo` once: the scrape is up, the
# database reads as up, every rule evaluates without error and none fires.
# Usage: .ci/prometheus.sh path/to/coupond
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
rules="$root/deploy/prometheus"
promtool check rules "$rules/alerts.yml"
(cd "$rules" && promtool test rules alerts_test.yml)

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
pport=$(free_port)
cd "$work"
"$bin" serve --demo --listen "127.0.0.1:$port" >demo.out 2>demo.err &
pids+=($!)
for _ in $(seq 1 200); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { cat demo.err; echo "prometheus: coupond did not start" >&2; exit 1; }
# Every metric an alert rule names is exported on the very first scrape, before anything has
# happened that would record it: an alert must tell "never happened" from "not exported".
first=$(curl -fsS "http://127.0.0.1:$port/metrics")
named=$(grep -oE 'coupond_[a-z_]+' "$rules/alerts.yml" | sort -u)
for m in $named; do
  grep -qE "^$m(\{| )" <<<"$first" || { echo "prometheus: $m (named by an alert) is not on the first scrape" >&2; exit 1; }
done
echo "prometheus: the first scrape has every metric the alerts name ($(wc -w <<<"$named"))"
cat >prometheus.yml <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$rules/alerts.yml"]
scrape_configs:
  - job_name: coupond
    static_configs: [{targets: ["127.0.0.1:$port"]}]
EOF
prometheus --config.file=prometheus.yml --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$pport" >prometheus.log 2>&1 &
pids+=($!)
query() {
  curl -fsS --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" 2>/dev/null \
    | jq -r '.data.result[0].value[1] // empty'
}
for _ in $(seq 1 120); do
  [ "$(query 'up{job="coupond"}')" = 1 ] && [ "$(query 'coupond_database_up{job="coupond"}')" = 1 ] && break
  sleep 0.5
done
[ "$(query 'up{job="coupond"}')" = 1 ] || { tail -20 prometheus.log; echo "prometheus: coupond was not scraped" >&2; exit 1; }
[ "$(query 'coupond_database_up{job="coupond"}')" = 1 ] || { echo "prometheus: coupond_database_up is not 1" >&2; exit 1; }
[ -n "$(query 'coupond_templates_claimable{job="coupond"}')" ] || { echo "prometheus: no coupond_templates_claimable" >&2; exit 1; }
# Every rule has been evaluated without error; none fires on a healthy demo.
for _ in $(seq 1 40); do
  rules_json=$(curl -fsS "http://127.0.0.1:$pport/api/v1/rules")
  evaluated=$(jq '[.data.groups[].rules[] | select(.health == "ok")] | length' <<<"$rules_json")
  [ "$evaluated" = 6 ] && break
  sleep 0.5
done
[ "$evaluated" = 6 ] || { jq . <<<"$rules_json"; echo "prometheus: $evaluated of 6 rules evaluated" >&2; exit 1; }
firing=$(curl -fsS "http://127.0.0.1:$pport/api/v1/alerts" | jq '.data.alerts | length')
[ "$firing" = 0 ] || { curl -fsS "http://127.0.0.1:$pport/api/v1/alerts" | jq .; echo "prometheus: alerts fire on a healthy demo" >&2; exit 1; }
echo "prometheus: rules checked and tested; a real Prometheus scraped coupond and evaluated all 6 rules, none firing"
