#!/usr/bin/env bash
# How `rtscope report` scales with the number of series.
#
#   bench/report-scale.sh [SERIES...]        (default: 100 400 3000)
#
# Makes one real short run (`rtscope cyclic --no-rt -t 2 -l 2000`), then
# synthesises from it a result document with N thread series (copies of the
# real thread series, each with its latencies shifted by a different amount so
# that every series is distinct) plus the real `all` series, and times
# `rtscope report` on it (wall seconds and peak RSS from /usr/bin/time -v).
# Target: 3000 series in under 5 s with a release build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 400 3000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$rtscope" cyclic --no-rt -q -t 2 -i 200us -l 2000 --json "$work/small.json" >/dev/null

synth() { # N OUT
  python3 - "$work/small.json" "$1" "$2" <<'PY'
import json, sys, copy
src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(src))
threads = [s for s in d["series"] if s["label"] != "all"]
alls = [s for s in d["series"] if s["label"] == "all"]
series = []
for i in range(n):
    s = copy.deepcopy(threads[i % len(threads)])
    shift = (i * 37) % 5000          # ns, so that series differ
    s["label"] = f"thread {i}"
    s["attributes"]["thread"] = i
    s["histogram"]["buckets"] = [[b[0] + shift, b[1]] for b in s["histogram"]["buckets"]]
    st = s["stats"]
    for k in ("min_ns", "max_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns", "p99_999_ns"):
        st[k] += shift
    st["mean_ns"] += shift
    for p in s["timeline"]["points"]:
        p["min_ns"] += shift; p["max_ns"] += shift; p["mean_ns"] += shift
    for sp in s["spikes"]:
        sp["latency_ns"] += shift
    series.append(s)
d["series"] = series + alls
json.dump(d, open(out, "w"))
PY
}

printf '%8s %10s %10s %12s\n' series json_MB wall_s max_rss_MB
for n in "${sizes[@]}"; do
  synth "$n" "$work/big-$n.json"
  mb=$(du -m "$work/big-$n.json" | cut -f1)
  /usr/bin/time -v -o "$work/time.txt" "$rtscope" report "$work/big-$n.json" -o "$work/r.html" >/dev/null
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$work/time.txt")
  printf '%8s %10s %10s %12s\n' "$n" "$mb" "$wall" "$rss"
done
