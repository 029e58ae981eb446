#!/usr/bin/env bash
# One-way IPC latency: `rtscope ipc` next to rt-tests' ptsematest, svsematest,
# pmqtest and sigwaittest, on the same machine, same placement and priorities.
#
#   bench/ipc-vs-rt-tests.sh [CPU] [INTERVAL_US] [LOOPS] [OTHER_CPU]
#
# rt-tests with `-a CPU -t 1 -p 95` put the receiver and the sender of the pair
# on CPU, both at priority 95 (the sender copies the receiver's settings; the
# priority is only lowered for the next pair), and the receiver sleeps
# INTERVAL_US between exchanges. rtscope runs the same one-way handoff with
# `--cpus CPU,CPU -p 95 --sender-priority 95 --period INTERVAL_US`.
# rt-tests report min / avg / max in whole microseconds (gettimeofday) and no
# median; rtscope reports ns, shown here in µs with one decimal.
# The "95/94" columns repeat rtscope with its default priorities (receiver one
# above the sender), so the receiver preempts the sender at once: with equal
# priorities on one CPU the receiver only runs when the sender blocks, and the
# figure includes whatever the sender does until then (for rtscope's periodic
# driver: entering clock_nanosleep, which arms a timer).
# A last table shows rtscope with the two sides on different CPUs (CPU and
# OTHER_CPU), which rt-tests cannot do for a pair.
# Needs root, rt-tests (apt-get install rt-tests) and python3.
set -euo pipefail
cpu=${1:-1}
interval=${2:-1000}
loops=${3:-10000}
other=${4:-0}
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
for t in ptsematest svsematest pmqtest sigwaittest; do
  command -v $t >/dev/null || { echo "$t not found (apt-get install rt-tests)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints "min avg max" (µs) from an rt-tests -q summary line.
rt_stats() {
  sed -n 's/.*Min *\([0-9]*\), Cur *[0-9]*, Avg *\([0-9]*\), Max *\([0-9]*\).*/\1 \2 \3/p' | tail -1
}
# Prints "min p50 mean max" (µs) of the latency series in an rtscope result.
rs_stats() {
  python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = [s for s in d["series"] if s["attributes"].get("measures") == "latency"][0]["stats"]
print(" ".join(f"{v/1000:.1f}" for v in (s["min_ns"], s["p50_ns"], s["mean_ns"], s["max_ns"])))
PY
}

echo "# one-way latency, $loops exchanges, interval ${interval}us, SCHED_FIFO 95/95"
echo "# same CPU: both sides on CPU $cpu (µs)"
printf '%-12s %-11s %6s %6s %6s | %-7s %6s %6s %6s %7s | %-7s %6s %7s\n' \
  rt-tests mechanism min avg max rtscope min p50 mean max rtscope p50 max
printf '%-12s %-11s %6s %6s %6s | %-7s %6s %6s %6s %7s | %-7s %6s %7s\n' \
  "(95/95)" "" "" "" "" "(95/95)" "" "" "" "" "(95/94)" "" ""
# Threads, then processes (rt-tests -f: svsematest and sigwaittest can fork).
for pair in "ptsematest mutex threads" "svsematest sysv-sem threads" "pmqtest posix-mq threads" \
            "sigwaittest signal threads" "svsematest sysv-sem processes" "sigwaittest signal processes"; do
  set -- $pair
  fork=""; [ "$3" = processes ] && fork="-f"
  read -r a_min a_avg a_max < <($1 $fork -q -a "$cpu" -t 1 -p 95 -i "$interval" -l "$loops" 2>&1 | rt_stats)
  "$rtscope" ipc -q --mech "$2" --pattern handoff --between "$3" --cpus "$cpu,$cpu" -p 95 --sender-priority 95 \
    --period "${interval}us" -l "$loops" --json "$tmp/$2.json" >/dev/null
  read -r b_min b_p50 b_mean b_max < <(rs_stats "$tmp/$2.json")
  "$rtscope" ipc -q --mech "$2" --pattern handoff --between "$3" --cpus "$cpu,$cpu" -p 95 \
    --period "${interval}us" -l "$loops" --json "$tmp/$2-d.json" >/dev/null
  read -r _ c_p50 _ c_max < <(rs_stats "$tmp/$2-d.json")
  printf '%-12s %-11s %6s %6s %6s | %-7s %6s %6s %6s %7s | %-7s %6s %7s\n' \
    "$1$fork" "$2" "$a_min" "$a_avg" "$a_max" rtscope "$b_min" "$b_p50" "$b_mean" "$b_max" \
    rtscope "$c_p50" "$c_max"
done

echo "# rtscope across CPUs: sender on CPU $other, receiver on CPU $cpu, receiver 95, sender 94 (µs)"
printf '%-11s %6s %6s %6s %7s\n' mechanism min p50 mean max
for m in mutex sysv-sem posix-mq signal; do
  "$rtscope" ipc -q --mech "$m" --pattern handoff --cpus "$other,$cpu" -p 95 \
    --period "${interval}us" -l "$loops" --json "$tmp/x-$m.json" >/dev/null
  read -r b_min b_p50 b_mean b_max < <(rs_stats "$tmp/x-$m.json")
  printf '%-11s %6s %6s %6s %7s\n' "$m" "$b_min" "$b_p50" "$b_mean" "$b_max"
done
