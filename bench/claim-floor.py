#!/usr/bin/env python3
"""How much of a claim is HTTP: one release server on a fresh SQLite database, driven by wrk
over the same connections for each of
  1. GET /healthz (the ceiling: a route that does no work),
  2. claims that fail validation (authentication, the JSON body, a 422 problem; no claim),
  3. real claims of one template, each for a new user (then `coupond audit`),
and prints each rate and its share of the same round's ceiling, and their medians over RUNS
rounds. Every answer of (2) must be a 422 and of (3) a 201, or the script fails.

It also reads the CPU time each phase cost, from /proc (the server, by thread name) and from
getrusage (wrk), and prints it per request in microseconds. With both cores busy in every
phase, claims reach a share S of the ceiling only if a claim's CPU (server and wrk) is at most
1/S times a /healthz request's, so the last line says how much server CPU a claim may cost for
50 % of the ceiling on this machine, against what it costs.

usage: bench/claim-floor.py [--runs 3] [--seconds 8] [--conns 512] [--threads N]
needs: wrk, and target/release/coupond (built if missing)
"""
import argparse, collections, json, os, re, resource, socket, statistics, subprocess, sys
import tempfile, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "bench", "claim-floor.lua")
BIN = os.path.join(ROOT, "target", "release", "coupond")


def cli(db, *args):
    r = subprocess.run([BIN, *args, "--database", db], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"coupond {' '.join(args)} failed: {(r.stdout + r.stderr)[-400:]}")
    return r.stdout


def call(base, method, path, body, token):
    r = urllib.request.Request(base + path, data=json.dumps(body).encode() if body else None,
                               method=method, headers={"Authorization": "Bearer " + token,
                                                       "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


TICK_US = 1e6 / os.sysconf("SC_CLK_TCK")


def threads(pid):
    """CPU time used so far by each thread of `pid`, in clock ticks, summed by thread name."""
    out = collections.Counter()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[re.sub(r"[-\d]+$", "", name)] += int(fields[11]) + int(fields[12])
    return out


def measured(a, pid, url, env=None, script=None):
    """wrk's rate, and the CPU microseconds per request wrk made, of the server (by thread
    name) and of wrk itself."""
    before, kids = threads(pid), resource.getrusage(resource.RUSAGE_CHILDREN)
    rate, n = wrk(a, url, env, script)
    after, kids2 = threads(pid), resource.getrusage(resource.RUSAGE_CHILDREN)
    server = {k: (after[k] - before[k]) * TICK_US / n for k in after}
    client = (kids2.ru_utime + kids2.ru_stime - kids.ru_utime - kids.ru_stime) * 1e6 / n
    return rate, server, client


def wrk(a, url, env=None, script=None):
    cmd = ["wrk", f"-t{a.threads}", f"-c{a.conns}", f"-d{a.seconds}s"]
    out = subprocess.run(cmd + (["-s", script] if script else []) + [url], capture_output=True,
                         text=True, env=dict(os.environ, **(env or {})), timeout=a.seconds + 60).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    total = re.search(r"(\d+) requests in", out)
    if not rate or not total:
        sys.exit("wrk printed no rate: " + out[-300:])
    answered = re.search(r"answered (\d+)", out)
    if script and answered and int(answered.group(1)) != int(total.group(1)):
        sys.exit(f"{env}: {answered.group(1)} of {total.group(1)} answers as expected:\n{out}")
    return float(rate.group(1)), int(total.group(1))


def round_(a, tmp, n):
    db = "sqlite://" + os.path.join(tmp, f"floor{n}.db")
    cli(db, "migrate")
    plat = cli(db, "keys", "create", "--role", "platform").split()[-1]
    svc = cli(db, "keys", "create", "--role", "service").split()[-1]
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(tmp, f"serve{n}.log"), "w")
    proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}", "--database", db],
                            env=dict(os.environ, COUPOND_LOG_LEVEL="warn"), stdout=log, stderr=log)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1); break
            except OSError:
                time.sleep(0.1)
        m = call(base, "POST", "/v1/merchants", {"name": "Floor", "short_name": "F", "cities": [1]}, plat)
        mkey = cli(db, "keys", "create", "--role", "merchant", "--merchant", str(m["id"])).split()[-1]
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        t = call(base, "POST", "/v1/templates", {
            "title": "floor", "value": {"kind": "amount_off", "amount": 100}, "cities": [1],
            "total_stock": 100_000_000, "per_user_limit": 1,
            "claim_window": {"start": iso(time.time() - 60), "end": iso(time.time() + 86400)},
            "validity": {"type": "relative", "days": 30}}, mkey)
        call(base, "POST", f"/v1/templates/{t['id']}/publish", None, mkey)
        env = {"WRK_TEMPLATE": str(t["id"]), "WRK_KEY": svc}
        ceiling = measured(a, proc.pid, base + "/healthz")
        invalid = measured(a, proc.pid, base, dict(env, WRK_INVALID="1"), LUA)
        claims = measured(a, proc.pid, base, env, LUA)
    finally:
        proc.terminate(); proc.wait(30)
    if subprocess.run([BIN, "audit", "--database", db], capture_output=True).returncode != 0:
        sys.exit("audit failed after the claims")
    print(f"round {n}: ceiling {ceiling[0]:,.0f}/s  invalid claims {invalid[0]:,.0f}/s "
          f"({invalid[0] / ceiling[0]:.1%})  claims {claims[0]:,.0f}/s "
          f"({claims[0] / ceiling[0]:.1%})", flush=True)
    for label, (_, server, client) in (("ceiling", ceiling), ("invalid", invalid),
                                       ("claims", claims)):
        split = "  ".join(f"{k} {v:.1f}" for k, v in sorted(server.items(), key=lambda x: -x[1])
                          if v >= 0.05)
        print(f"  {label:<8} CPU us/request: server {sum(server.values()):.1f} ({split})  "
              f"wrk {client:.1f}", flush=True)
    return ceiling, invalid, claims


def cpu(phase):
    """Server and wrk CPU microseconds per request of a phase."""
    return sum(phase[1].values()), phase[2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3); p.add_argument("--seconds", type=int, default=8)
    p.add_argument("--conns", type=int, default=512)
    p.add_argument("--threads", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)))
    a = p.parse_args()
    if not os.access(BIN, os.X_OK):
        subprocess.run(["cargo", "build", "--release", "-p", "coupond"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        rounds = [round_(a, tmp, n) for n in range(1, a.runs + 1)]
    med = [statistics.median(r[i][0] for r in rounds) for i in range(3)]
    share = [statistics.median(r[i][0] / r[0][0] for r in rounds) for i in (1, 2)]
    print(f"median: ceiling {med[0]:,.0f}/s  invalid claims {med[1]:,.0f}/s ({share[0]:.1%})  "
          f"claims {med[2]:,.0f}/s ({share[1]:.1%}); shares are medians of the rounds' shares")
    (hs, hw), (cs, cw) = ([statistics.median(cpu(r[i])[j] for r in rounds) for j in (0, 1)]
                          for i in (0, 2))
    print(f"median CPU per request: /healthz server {hs:.1f} us + wrk {hw:.1f} us; claim server "
          f"{cs:.1f} us + wrk {cw:.1f} us. For 50 % of the ceiling a claim may cost the server "
          f"at most 2 x ({hs:.1f} + {hw:.1f}) - {cw:.1f} = {2 * (hs + hw) - cw:.1f} us")


if __name__ == "__main__":
    main()
