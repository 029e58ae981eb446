#!/usr/bin/env bash
# What `--listen` costs the run it watches, and what the server change
# (hyper on a current-thread runtime instead of the hand-written
# one-connection-at-a-time loop) changed: the same cyclic run (one thread,
# 1 ms period) without a listener and with `--listen` scraped by curl 10 times
# a second, for each binary given, interleaved round by round.
#
#   bench/listen-overhead.sh [SECONDS] [ROUNDS]
#   RTSCOPE=after-binary RTSCOPE_BEFORE=before-binary bench/listen-overhead.sh 20 3
#
# Per run: CPU of the whole process (utime + stime of every thread from
# /proc/PID/stat, read just before the run ends) as % of one CPU; for
# --listen, the CPU of the server thread alone (`rtscope-http`, its
# schedstat run time in ns: no 10 ms ticks, and none of the measurement
# thread's noise); the run's
# own p99 and max latency (the `all` series of its --json document); for
# --listen, the median time curl took for a scrape of /metrics (with
# Prometheus's Accept header). Runs --no-rt (no root needed); needs curl and
# jq. Prints one row per run and the medians per binary and mode.
# Without RTSCOPE_BEFORE only the current binary is measured.
set -euo pipefail
seconds=${1:-20}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
after=${RTSCOPE:-$here/target/release/rtscope}
before=${RTSCOPE_BEFORE:-}
[ -x "$after" ] || (cd "$here" && cargo build --release -q -p rtscope)
for t in curl jq; do
  command -v $t >/dev/null || { echo "$t not found" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hz=$(getconf CLK_TCK)
port=$(( 20000 + RANDOM % 20000 ))
base=(cyclic --no-rt -t 1 -i 1ms -D "${seconds}s" -q)
accept='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

bins=(after)
[ -n "$before" ] && bins=(before after)
bin_of() { if [ "$1" = before ]; then echo "$before"; else echo "$after"; fi; }

cpu_of() { awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

# CPU % of one CPU that the thread named rtscope-http of PID used so far,
# over SECONDS - 0.5 s; "-" without one.
http_cpu_of() {
  local t
  for t in /proc/"$1"/task/*; do
    if [ "$(cat "$t/comm" 2>/dev/null)" = rtscope-http ]; then
      awk -v s="$seconds" '{printf "%.3f", 100 * $1 / 1e9 / (s - 0.5)}' "$t/schedstat"
      return
    fi
  done
  echo -
}

# run BIN MODE -> prints "cpu_pct p99_us max_us scrape_ms http_pct"
run() {
  local bin=$1 mode=$2 json="$tmp/run.json" pid scraper cpu scrape=- http=-
  rm -f "$json" "$tmp/scrapes"
  if [ "$mode" = plain ]; then
    "$bin" "${base[@]}" --json "$json" >/dev/null 2>>"$tmp/stderr" & pid=$!
  else
    port=$(( port + 1 ))
    "$bin" "${base[@]}" --json "$json" --listen "127.0.0.1:$port" >/dev/null 2>>"$tmp/stderr" & pid=$!
    ( while kill -0 $pid 2>/dev/null; do
        curl -s -o /dev/null -H "Accept: $accept" -w '%{time_total}\n' \
          "http://127.0.0.1:$port/metrics" >>"$tmp/scrapes" 2>/dev/null || true
        sleep 0.1
      done ) &
    scraper=$!
  fi
  sleep "$(awk -v s="$seconds" 'BEGIN{print s - 0.5}')"
  cpu=$(awk -v c="$(cpu_of "$pid")" -v s="$seconds" 'BEGIN{printf "%.2f", 100 * c / (s - 0.5)}')
  [ "$mode" = listen ] && http=$(http_cpu_of "$pid")
  wait $pid
  if [ "$mode" = listen ]; then
    wait "$scraper" 2>/dev/null || true
    # Median of the scrapes that got an answer (curl prints 0 for none).
    scrape=$(awk '$1 > 0 {print $1 * 1000}' "$tmp/scrapes" | sort -n |
      awk '{a[NR]=$1} END{if (NR) printf "%.2f", a[int((NR+1)/2)]; else print "-"}')
  fi
  jq -r --arg c "$cpu" --arg s "$scrape" --arg h "$http" \
    '.series[-1].stats | "\($c) \(.p99_ns/100|round/10) \(.max_ns/100|round/10) \($s) \($h)"' "$json"
}

echo "# cyclic, 1 thread, 1 ms period, --no-rt, ${seconds}s per run, $rounds rounds"
echo "# cpu: % of one CPU (whole process); p99, max: the run's latency, us; scrape: median curl time of /metrics, ms; http: % of one CPU (the server thread)"
printf '%-7s %-7s %5s %8s %9s %9s %9s %8s\n' binary mode round cpu_pct p99_us max_us scrape_ms http_pct
declare -A rows
for r in $(seq 1 "$rounds"); do
  for b in "${bins[@]}"; do
    for m in plain listen; do
      read -r c p x s h < <(run "$(bin_of "$b")" "$m")
      rows[$b.$m]+="$c $p $x $s $h;"
      printf '%-7s %-7s %5s %8s %9s %9s %9s %8s\n' "$b" "$m" "$r" "$c" "$p" "$x" "$s" "$h"
    done
  done
done
median() { tr ' ' '\n' | grep -v '^-\?$' | sort -n | awk '{a[NR]=$1} END{if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
echo "# medians"
printf '%-7s %-7s %8s %9s %9s %9s %8s\n' binary mode cpu_pct p99_us max_us scrape_ms http_pct
for b in "${bins[@]}"; do
  for m in plain listen; do
    col() { tr ';' '\n' <<<"${rows[$b.$m]}" | awk -v k="$1" 'NF {print $k}' | median; }
    printf '%-7s %-7s %8s %9s %9s %9s %8s\n' "$b" "$m" "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)"
  done
done
