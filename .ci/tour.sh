#!/usr/bin/env bash
# Replays the API tour (every ```bash tour block of README.md, then of docs/TOUR.md, in order) against a fresh
# `coupond serve --demo`, exactly as a reader would paste it, then again after restarting the
# demo on the same database (a reader runs it twice). Fails on the first command that fails.
# Usage: .ci/tour.sh path/to/coupond
set -euo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cd "$work"
cat "$root/README.md" "$root/docs/TOUR.md" | awk '/^```bash tour$/{on=1; next} /^```$/{on=0} on' >"$work/tour.sh"
[ -s "$work/tour.sh" ] || { echo "tour: no tour blocks found in README.md and docs/TOUR.md" >&2; exit 1; }
blocks=$(cat "$root/README.md" "$root/docs/TOUR.md" | grep -c '^```bash tour$')

# The tour's email step sends to a local SMTP server (aiosmtpd, which .ci/run installs).
smtp_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m aiosmtpd -n -l "127.0.0.1:$smtp_port" -c aiosmtpd.handlers.Sink >"$work/smtp.log" 2>&1 &
smtp_pid=$!
trap 'kill "$smtp_pid" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$smtp_port") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/127.0.0.1/$smtp_port") 2>/dev/null || { cat "$work/smtp.log"; echo "tour: the SMTP server did not start" >&2; exit 1; }

round() {
  : >"$work/demo.out"
  COUPOND_EMAIL_SMTP_URL="smtp://127.0.0.1:$smtp_port?tls=none" \
    "$bin" serve --demo --listen 127.0.0.1:0 >"$work/demo.out" 2>"$work/demo.err" &
  server_pid=$!
  for _ in $(seq 1 200); do
    grep -q '^export USER_TOKEN=' "$work/demo.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/demo.err"; echo "tour (round $1): server exited" >&2; exit 1; }
    sleep 0.1
  done
  grep -q '^export USER_TOKEN=' "$work/demo.out" || { echo "tour (round $1): no demo credentials" >&2; exit 1; }

  # The tour blocks, concatenated in order.
  { grep '^export ' "$work/demo.out"; echo 'set -euo pipefail'; cat "$work/tour.sh"; } >"$work/run.sh"
  bash "$work/run.sh" >"$work/tour$1.out" 2>&1 || { cat "$work/tour$1.out"; echo "tour (round $1): a command failed" >&2; exit 1; }
  # The tour's non-failing checks print status codes: they must be the documented ones.
  grep -qx '404' "$work/tour$1.out" && grep -qx '403' "$work/tour$1.out" && grep -qx '401' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): unexpected status codes" >&2; exit 1; }
  grep -q '"code":"limit_reached"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the second claim was not refused" >&2; exit 1; }
  grep -q '"held":1,"per_user_limit":1,"can_claim":false' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the coupon centre does not show the claim" >&2; exit 1; }
  grep -q '"code":"order_ended"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the confirm after a cancel was not refused" >&2; exit 1; }
  grep -q '"code":"invalid_code"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the mistyped code was not refused" >&2; exit 1; }
  grep -q '"code":"value_out_of_bounds"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the refused template was not refused" >&2; exit 1; }
  grep -q '"code":"paused"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the claim of a paused template was not refused" >&2; exit 1; }
  grep -q 'You received a coupon: Welcome back' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the inbox shows no welcome coupon" >&2; exit 1; }
  grep -q '"channel":"email","kind":"coupon_claimed","address":"u1001@example.com","subject":"领取成功：Mailed: 30 off","status":"sent"' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; cat "$work/smtp.log"; echo "tour (round $1): the claim's email was not sent" >&2; exit 1; }
  grep -q '{"channel":"source:app-home","claimed":1,"used":0}' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): no source channel in the performance report" >&2; exit 1; }
  grep -q '"without_coupon":{"orders":[1-9][0-9]*,"gmv":[1-9]' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the order recorded without a coupon is not in the performance report" >&2; exit 1; }
  grep -q '{"title":"Last days","state":"sent","recipients":1,"queued":0}' "$work/tour$1.out" \
    && grep -q '{"kind":"campaign","title":"Last days"}' "$work/tour$1.out" \
    || { cat "$work/tour$1.out"; echo "tour (round $1): the campaign message did not reach the holder's inbox" >&2; exit 1; }
  [ -n "${TOUR_VERBOSE:-}" ] && cat "$work/tour$1.out"
  kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
}

# `serve --demo` on the same database the second time: new keys, the data of the first round.
round 1
round 2
echo "tour: the API tour (README, docs/TOUR.md) replayed twice on one demo database, $blocks blocks, all commands succeeded"
