#!/usr/bin/env bash
# What `cyclic --trace` costs: alternating untraced and traced runs of the
# same cyclic measurement (one thread, SCHED_FIFO 95, 1 ms period, pinned).
#
#   bench/trace-overhead.sh [CPU] [SECONDS] [ROUNDS] [EXTRA RTSCOPE ARGS...]
#
# Prints, per run: the latency p50/p99/p99.9/max of the thread, the CPU time
# rtscope used (user+system, all threads: the aggregator reads the trace
# buffers) and, for traced runs, the events read, lost events and the
# accuracy check; then the medians over the rounds of each mode. The kernel's
# own cost of recording the events shows up in the latency, not in
# rtscope's CPU time. Needs root and python3.
set -euo pipefail
cpu=${1:-$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)}
seconds=${2:-20}
rounds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
tmp=$(mktemp -d /tmp/trace-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "# CPU $cpu, ${seconds}s per run, $rounds rounds, alternating (untraced first); extra: $*"
for r in $(seq 1 "$rounds"); do
  for mode in plain trace; do
    flag=()
    [ "$mode" = trace ] && flag=(--trace)
    /usr/bin/time -f "%U %S" -o "$tmp/$mode-$r.time" \
      "$rtscope" cyclic -q -a "$cpu" -D "${seconds}s" "${flag[@]}" "$@" \
      --json "$tmp/$mode-$r.json" >/dev/null
  done
done
python3 - "$tmp" "$rounds" "$seconds" <<'PY'
import json, sys, statistics as st
tmp, rounds, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = {"plain": [], "trace": []}
print(f"{'round':>5} {'mode':>6} {'p50_us':>7} {'p99_us':>7} {'p99.9_us':>8} {'max_us':>8} {'cpu_%':>6} {'events':>8} {'lost':>5} {'accuracy':>22}")
for r in range(1, rounds + 1):
    for mode in ("plain", "trace"):
        d = json.load(open(f"{tmp}/{mode}-{r}.json"))
        s = next(x for x in d["series"] if x["label"] == "thread 0")["stats"]
        u, sy = map(float, open(f"{tmp}/{mode}-{r}.time").read().split()[-2:])
        cpu = (u + sy) / (d["duration_ns"] / 1e9) * 100
        t = d.get("trace") or {}
        acc = t.get("accuracy", {})
        accs = (f"{'pass' if acc.get('passed') else 'FAIL'} min {acc.get('min_ns', 0)/1000:.1f}us" if t else "-")
        row = (s["p50_ns"] / 1e3, s["p99_ns"] / 1e3, s["p99_9_ns"] / 1e3, s["max_ns"] / 1e3, cpu)
        rows[mode].append(row)
        print(f"{r:>5} {mode:>6} {row[0]:7.1f} {row[1]:7.1f} {row[2]:8.1f} {row[3]:8.1f} {row[4]:6.2f} "
              f"{t.get('events_read', '-'):>8} {(t.get('overruns', 0) + t.get('lost_pages', 0)) if t else '-':>5} {accs:>22}")
print("median over rounds:")
for mode in ("plain", "trace"):
    cols = list(zip(*rows[mode]))
    print(f"{'':>5} {mode:>6} " + " ".join(f"{st.median(c):7.2f}" for c in cols))
PY
