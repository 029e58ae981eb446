#!/usr/bin/env bash
# Peak memory of `rtscope import cyclictest` on large inputs.
#
#   bench/import-rss.sh [HIST_MB] [JSON_MB]      (default: 220 145)
#
# Generates a cyclictest -h histogram text of about HIST_MB MB (16 threads,
# one row per 1 us bin, counts in the first few hundred bins and zeros beyond,
# as cyclictest writes them, with # Total/Min/Avg/Max/Overflows lines) and a
# cyclictest --json file of about JSON_MB MB (16 threads, every bin non-zero:
# the worst case for a JSON tree), then imports each under /usr/bin/time -v
# and prints wall seconds and peak RSS. Target: <= 100 MB importing a 220 MB
# histogram text. Also checks that /dev/zero is refused at once.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
hist_mb=${1:-220}
json_mb=${2:-145}
work=${WORK:-$(mktemp -d)}
[ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT

python3 - "$work/hist.txt" "$hist_mb" <<'PY'
import sys, random
out, mb = sys.argv[1], float(sys.argv[2])
threads = 16
line_len = 7 + 7 * threads
rows = int(mb * 1e6 / line_len)
random.seed(1)
tot = [0] * threads
zero = "\t".join(["000000"] * threads) + "\n"
with open(out, "w") as f:
    f.write("# /dev/cpu_dma_latency set to 0us\n# Histogram\n")
    for b in range(rows):
        if b < 400:
            cs = [random.randint(0, 900000 // (1 + b)) for _ in range(threads)]
            for j, c in enumerate(cs):
                tot[j] += c
            f.write(f"{b:06d} " + "\t".join(f"{c:06d}" for c in cs) + "\n")
        else:
            f.write(f"{b:06d} " + zero)
    f.write("# Total: " + " ".join(f"{t:09d}" for t in tot) + "\n")
    f.write("# Min Latencies: " + " ".join("00000" for _ in tot) + "\n")
    f.write("# Avg Latencies: " + " ".join("00010" for _ in tot) + "\n")
    f.write("# Max Latencies: " + " ".join("00399" for _ in tot) + "\n")
    f.write("# Histogram Overflows: " + " ".join("00000" for _ in tot) + "\n")
PY

python3 - "$work/ct.json" "$json_mb" <<'PY'
import sys
out, mb = sys.argv[1], float(sys.argv[2])
threads = 16
bins = int(mb * 1e6 / threads / 15)
with open(out, "w") as f:
    f.write('{"file_version": 1, "cmdline:": "cyclictest -h %d -t %d", "rt_test_version:": "2.40",\n' % (bins, threads))
    f.write('"num_threads": %d, "thread": {\n' % threads)
    for t in range(threads):
        f.write('"%d": {"histogram": {' % t)
        f.write(", ".join('"%d": %d' % (b, 1 + (b * 7 + t) % 97) for b in range(bins)))
        cycles = sum(1 + (b * 7 + t) % 97 for b in range(bins))
        f.write('}, "cycles": %d, "min": 0, "max": %d, "avg": 10.0, "cpu": %d, "node": 0}%s\n'
                % (cycles, bins - 1, t, "," if t + 1 < threads else ""))
    f.write("}}\n")
PY

measure() { # LABEL INPUT_KIND INPUT
  # Bounded, so that an unbounded reader (an old build on /dev/zero) cannot
  # take the machine's memory: 6 GiB of address space, 60 s.
  ( ulimit -v 6291456; exec /usr/bin/time -v -o "$work/time.txt" timeout 60 "$rtscope" import cyclictest "$2" "$3" -o "$work/out.json" >/dev/null 2>"$work/err.txt" ) || true
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$work/time.txt")
  code=$(awk -F': ' '/Exit status/{print $2}' "$work/time.txt")
  printf '%-22s %8s %8s %12s %5s  %s\n' "$1" "$(du -m "$3" 2>/dev/null | cut -f1)" "$wall" "$rss" "$code" "$(head -c 100 "$work/err.txt")"
}
printf '%-22s %8s %8s %12s %5s  %s\n' input MB wall_s max_rss_MB exit stderr
measure "histogram text" --histogram "$work/hist.txt"
measure "cyclictest --json" --json "$work/ct.json"
measure "/dev/zero (histogram)" --histogram /dev/zero
