#!/usr/bin/env bash
# What watching a run live costs in CPU: the same cyclic run (one thread,
# 1 ms period) plain, with --stream to a file, with --listen scraped by curl
# at 10 Hz, and with --live in a tmux pane (5 redraws a second).
#
#   bench/live-overhead.sh [SECONDS] [ROUNDS]
#
# CPU time is rtscope's own (utime + stime of every thread, from
# /proc/PID/stat, read just before the run ends), as a percentage of one CPU
# over the run; the measurement thread's wake-ups are in every mode, so the
# cost of a view is its difference from `plain`. Runs --no-rt (no root
# needed); needs curl and tmux. Prints one row per run and the medians.
set -euo pipefail
seconds=${1:-20}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q -p rtscope)
for t in curl tmux; do
  command -v $t >/dev/null || { echo "$t not found" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'tmux -S "$tmp/tmux" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
hz=$(getconf CLK_TCK)
port=$(( 20000 + RANDOM % 20000 ))
base=(cyclic --no-rt -t 1 -i 1ms -D "${seconds}s" -q)

# CPU seconds (utime + stime) of PID, read now.
cpu_of() { awk -v hz="$hz" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

# Waits until PID has run SECONDS - 0.5 s, prints its CPU % of one CPU.
sample() {
  local pid=$1
  sleep "$(awk -v s="$seconds" 'BEGIN{print s - 0.5}')"
  awk -v c="$(cpu_of "$pid")" -v s="$seconds" 'BEGIN{printf "%.2f", 100 * c / (s - 0.5)}'
}

run_mode() { # mode -> prints CPU %
  case $1 in
    plain)  "$rtscope" "${base[@]}" >/dev/null & pid=$!; sample $pid; wait $pid ;;
    stream) "$rtscope" "${base[@]}" --stream "$tmp/s.jsonl" --stream-every 100ms >/dev/null & pid=$!
            sample $pid; wait $pid ;;
    listen) "$rtscope" "${base[@]}" --listen "127.0.0.1:$port" >/dev/null & pid=$!
            ( while kill -0 $pid 2>/dev/null; do curl -s -o /dev/null "http://127.0.0.1:$port/metrics" || true; sleep 0.1; done ) &
            scraper=$!
            sample $pid; wait $pid; wait $scraper 2>/dev/null || true ;;
    live)   tmux -S "$tmp/tmux" new-session -d -x 120 -y 40 \
              "$rtscope ${base[*]} --live > /dev/null 2>&1; sleep 2"
            # The pane's stdout must stay the terminal: find the process instead.
            sleep 0.3
            pid=$(pgrep -n -f "^$rtscope cyclic --no-rt -t 1 -i 1ms -D ${seconds}s -q --live")
            sample $pid
            while kill -0 $pid 2>/dev/null; do sleep 0.2; done
            tmux -S "$tmp/tmux" kill-server 2>/dev/null || true ;;
  esac
}

echo "# cyclic, 1 thread, 1 ms period, ${seconds}s per run, $rounds rounds; CPU % of one CPU"
printf '%-8s %5s %8s\n' mode round cpu_pct
declare -A all
for r in $(seq 1 "$rounds"); do
  for m in plain stream listen live; do
    c=$(run_mode $m)
    all[$m]+="$c "
    printf '%-8s %5s %8s\n' "$m" "$r" "$c"
  done
done
echo "# medians"
for m in plain stream listen live; do
  med=$(tr ' ' '\n' <<<"${all[$m]}" | grep -v '^$' | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  printf '%-8s %8s\n' "$m" "$med"
done
