#!/usr/bin/env bash
# Property-based API fuzzing with schemathesis: for each role (platform, merchant, service,
# user) it generates requests from /openapi.json against a fresh `coupond serve --demo`, then
# stops the server and runs `coupond audit` on what the requests left behind.
#
# Checks: no 5xx, status codes, content types and bodies as documented, and schema-invalid
# requests refused. Not checked: "every schema-valid request is accepted"; JSON Schema cannot
# say the rules that span fields (a window's end after its start, value_min <= value_max) or
# the state a request needs (an activity still enrolling), so those refusals are correct.
#
# Usage: .ci/fuzz.sh path/to/coupond [examples per operation, default 25]
# FUZZ_SEED fixes the generator seed (CI uses a fixed one so a failure reproduces).
set -euo pipefail
bin=$(realpath "$1")
examples=${2:-25}
root=$(cd "$(dirname "$0")/.." && pwd)
st="$root/.venv/bin/schemathesis"
[ -x "$st" ] || { echo "fuzz: schemathesis is not installed in .venv" >&2; exit 1; }
work=$(mktemp -d)
server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=
}
trap 'stop_server; rm -rf "$work"' EXIT

cd "$work"
"$bin" serve --demo --listen 127.0.0.1:0 >demo.out 2>demo.err &
server_pid=$!
for _ in $(seq 1 200); do
  grep -q '^export USER_TOKEN=' demo.out 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat demo.err; echo "fuzz: server exited" >&2; exit 1; }
  sleep 0.1
done
# shellcheck disable=SC1091
source <(grep '^export ' demo.out)
[ -n "${USER_TOKEN:-}" ] || { echo "fuzz: no demo credentials" >&2; exit 1; }

failed=0
for role in platform merchant service user; do
  case $role in
    platform) token=$PLATFORM_KEY ;;
    merchant) token=$MERCHANT1_KEY ;;
    service) token=$SERVICE_KEY ;;
    user) token=$USER_TOKEN ;;
  esac
  echo "fuzz: as $role"
  if ! "$st" run "$COUPOND/openapi.json" \
      --header "Authorization: Bearer $token" \
      --exclude-checks positive_data_acceptance \
      --max-examples "$examples" --seed "${FUZZ_SEED:-20261121}" \
      --no-color >"st-$role.log" 2>&1; then
    cat "st-$role.log"
    echo "fuzz: schemathesis found failures as $role" >&2
    failed=1
  else
    sed -n "/^Test cases:/,/^Seed:/p;/^Warnings:/,/^$/p" "st-$role.log"
  fi
done
grep -i 'panicked' demo.err && { echo "fuzz: the server panicked" >&2; failed=1; }
stop_server
[ "$failed" = 0 ] || exit 1

echo "fuzz: auditing the database the requests left behind"
"$bin" audit
