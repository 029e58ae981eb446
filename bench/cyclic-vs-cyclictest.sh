#!/usr/bin/env bash
# CPU time per sample: rtscope cyclic next to cyclictest with the same settings.
#
#   bench/cyclic-vs-cyclictest.sh [THREADS] [PERIOD_US] [SECONDS] [ROUNDS]
#
# Both tools run SCHED_FIFO 95, one thread per CPU of 0..THREADS-1, memory
# locked, the same number of loops. CPU time (user + system, from the shell's
# `time`) is divided by the number of samples taken. Needs root and cyclictest
# (Debian: apt-get install rt-tests). Prints one row per run and the medians.
set -euo pipefail
threads=${1:-2}
period_us=${2:-100}
seconds=${3:-5}
rounds=${4:-3}
loops=$(( seconds * 1000000 / period_us ))
samples=$(( loops * threads ))
cpus="0-$(( threads - 1 ))"
here=$(cd "$(dirname "$0")/.." && pwd)
rtscope=${RTSCOPE:-$here/target/release/rtscope}
[ -x "$rtscope" ] || (cd "$here" && cargo build --release -q)
command -v cyclictest >/dev/null || { echo "cyclictest not found (apt-get install rt-tests)" >&2; exit 1; }

cpu_seconds() { # runs "$@", prints user+sys seconds
  local TIMEFORMAT='%U %S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  awk '{printf "%.4f", $1 + $2}' <<<"$t"
}

echo "# $threads threads x $(( 1000000 / period_us )) Hz x ${seconds}s = $samples samples per run, $rounds rounds"
printf '%-10s %5s %12s %14s\n' tool round cpu_s ns_per_sample
declare -a rt ct
for r in $(seq 1 "$rounds"); do
  a=$(cpu_seconds cyclictest -m -q -p 95 -t "$threads" -a "$cpus" -i "$period_us" -d 0 -l "$loops")
  b=$(cpu_seconds "$rtscope" cyclic -q -p 95 -t "$threads" -a "$cpus" -i "${period_us}us" -l "$loops")
  ct+=("$(awk -v c="$a" -v n="$samples" 'BEGIN{printf "%.0f", c*1e9/n}')")
  rt+=("$(awk -v c="$b" -v n="$samples" 'BEGIN{printf "%.0f", c*1e9/n}')")
  printf '%-10s %5s %12s %14s\n' cyclictest "$r" "$a" "${ct[-1]}"
  printf '%-10s %5s %12s %14s\n' rtscope "$r" "$b" "${rt[-1]}"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
echo "median ns of CPU per sample: cyclictest $(median "${ct[@]}"), rtscope $(median "${rt[@]}")"
