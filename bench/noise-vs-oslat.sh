#!/usr/bin/env bash
# OS noise: rtscope noise next to oslat (rt-tests), same CPU, same duration,
# same priority, alternating runs.
#
#   bench/noise-vs-oslat.sh [CPU] [SECONDS] [ROUNDS]
#
# Both run one SCHED_FIFO 95 busy loop on CPU (default: the last online CPU)
# reading the TSC, oslat's main thread on CPU 0. Prints each run's maximum
# single iteration and iteration count, then, for every round, the 1 µs
# buckets of both tools side by side (oslat's layout: bucket N holds
# iterations of [N-1, N) µs; the last one holds longer ones too).
# Needs root, python3 and oslat (Debian: apt-get install rt-tests).
set -euo pipefail
cpu=${1:-$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)}
seconds=${2:-10}
rounds=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
command -v oslat >/dev/null || { echo "oslat not found (apt-get install rt-tests)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/noise-vs-oslat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "# CPU $cpu, ${seconds}s per run, $rounds rounds, SCHED_FIFO 95, alternating (oslat first)"
for r in $(seq 1 "$rounds"); do
  oslat -q -c "$cpu" -C 0 -f 95 -D "$seconds" --json="$tmp/oslat-$r.json" >/dev/null
  "$rtscope" noise -q -a "$cpu" -p 95 -D "${seconds}s" --json "$tmp/rtscope-$r.json" >/dev/null
done
python3 - "$tmp" "$rounds" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'round':>5} {'tool':>8} {'max_us':>10} {'iterations':>12} {'ns/iter':>8} {'>=2us':>8}")
pairs = []
for r in range(1, rounds + 1):
    o = json.load(open(f"{tmp}/oslat-{r}.json"))["thread"]["0"]
    ob = [o["histogram"].get(str(i), 0) for i in range(1, 33)]
    s = json.load(open(f"{tmp}/rtscope-{r}.json"))["series"][0]
    a = s["attributes"]
    rb = a["oslat_buckets_us"]
    on = sum(ob)
    # oslat reports max as floor(us)+1 (its bucket label); rtscope in ns.
    print(f"{r:>5} {'oslat':>8} {o['max']:>10} {on:>12} {o['duration']*1e9/on:>8.1f} {sum(ob[1:]):>8}")
    print(f"{r:>5} {'rtscope':>8} {s['stats']['max_ns']/1000:>10.1f} {a['iterations']:>12} {a['duration_ns']/a['iterations']:>8.1f} {sum(rb[1:]):>8}")
    pairs.append((ob, rb))
print()
print("bucket (us)  " + "  ".join(f"oslat#{r:<2} rtscope#{r:<2}" for r in range(1, rounds + 1)))
for i in range(32):
    print(f"{i + 1:>3}{'+' if i == 31 else ' '}         " + "  ".join(f"{ob[i]:>8} {rb[i]:>11}" for ob, rb in pairs))
PY
