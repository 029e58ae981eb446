#!/usr/bin/env bash
# Offline test of the rtla referee's arithmetic (bench/kernel-lab/referee), in
# seconds: rtla timerlat top's summary (ns and us) against rtscope's stage
# series, within the bounds, a stage joined to the wrong event (outside), a
# guest without rtla and one where rtla cannot run (skipped, with the reason).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
fail() { echo "test-referee: $*" >&2; exit 1; }
# rtla DIR ROUND UNIT COUNT IRQ_AVG THREAD_AVG: a summary as rtla 6.1 prints it.
rtla() {
  printf '\033[2;37;40m                                     Timer Latency                                              \033[0;0;0m\n' >"$1/referee-rtla-$2.out"
  printf '  0 00:00:04   |          IRQ Timer Latency (%s)        |         Thread Timer Latency (%s)\n' "$3" "$3" >>"$1/referee-rtla-$2.out"
  printf '\033[2;30;47mCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\033[0;0;0m\n' >>"$1/referee-rtla-$2.out"
  printf '  1 #%-9d |    77808      6286 %9d   8626792 |   105749     30509 %9d   8877465\n' "$4" "$5" "$6" >>"$1/referee-rtla-$2.out"
  echo 0 >"$1/referee-rtla-$2.status"
}
# rtscope DIR ROUND COUNT TIMER_NS WAKEUP_NS SCHED_NS: the stage series.
rtscope() {
  jq -n --argjson n "$3" --argjson t "$4" --argjson w "$5" --argjson s "$6" '{series: [
    {label: "all", stats: {count: $n, mean_ns: 999999}},
    {label: "stage timer", stats: {count: $n, mean_ns: $t}},
    {label: "stage wakeup", stats: {count: $n, mean_ns: $w}},
    {label: "stage sched", stats: {count: ($n / 2), mean_ns: ($s * 2)}},
    {label: "stage return", stats: {count: $n, mean_ns: 500000}}]}' >"$1/referee-rtscope-$2.json"
}
# 1. Three rounds, one of them starved by the emulator's host: the median of
# the rounds' ratios, timer 240/200, 700/200, 220/200 us: 1.20x; thread
# (timer + wakeup 20 + sched 30: over half the samples at twice the mean)
# 290/250, 750/250, 270/250: 1.16x; rtla in ns, then us, then ns.
mkdir "$t/ok"
rtla "$t/ok" 1 ns 1000 200000 250000; rtscope "$t/ok" 1 1000 240000 20000 30000
rtla "$t/ok" 2 us 1000 200 250;       rtscope "$t/ok" 2 1000 700000 20000 30000
rtla "$t/ok" 3 ns 1000 200000 250000; rtscope "$t/ok" 3 1000 220000 20000 30000
line=$("$here/referee" "$t/ok") || fail "within bounds: exit $? ($line)"
[[ "$line" == "rtla referee ok: timer 1.20x (rounds 1.20x, 3.50x, 1.10x; rtscope's timer stage 386.7 us, rtla IRQ 200.0 us), thread 1.16x (rounds 1.16x, 3.00x, 1.08x; timer+wakeup+sched 436.7 us, rtla thread 250.0 us); median of 3 rounds, 3000 rtla / 3000 rtscope samples, bounds 0.5x-3x" ]] ||
  fail "within bounds: $line"
# 2. The timer stage joined to the previous period's event (1 ms more than
# rtla's IRQ average of 200 us): failed.
mkdir "$t/far"
rtla "$t/far" 1 ns 1000 200000 400000; rtscope "$t/far" 1 1000 1200000 50000 50000
rc=0; line=$("$here/referee" "$t/far") || rc=$?
[ "$rc" = 1 ] && [[ "$line" == "rtla referee FAILED: timer 6.00x"* ]] || fail "outside bounds: exit $rc ($line)"
# The bounds are options.
"$here/referee" "$t/far" --high 7 >/dev/null || fail "--high 7 still failed"
rc=0; "$here/referee" "$t/ok" --high 1.1 >/dev/null || rc=$?
[ "$rc" = 1 ] || fail "--high 1.1: exit $rc"
# 3. No rtla in the guest: skipped, the guest's reason printed.
mkdir "$t/none"; echo "no rtla in the guest (...)" >"$t/none/referee-skipped.txt"
rc=0; line=$("$here/referee" "$t/none") || rc=$?
[ "$rc" = 3 ] && [ "$line" = "rtla referee skipped: no rtla in the guest (...)" ] || fail "no rtla: exit $rc ($line)"
# 4. rtla that cannot run (no timerlat tracer): skipped with rtla's own words.
mkdir "$t/cannot"
: >"$t/cannot/referee-rtla-1.out"; echo 1 >"$t/cannot/referee-rtla-1.status"
echo "Could not enable timerlat tracer" >"$t/cannot/referee-rtla-1.err"
rtscope "$t/cannot" 1 1000 100000 20000 30000
rc=0; line=$("$here/referee" "$t/cannot") || rc=$?
[ "$rc" = 3 ] && [[ "$line" == *"rtla could not run here: rtla round 1: exit 1, no summary (Could not enable timerlat tracer)" ]] ||
  fail "rtla cannot run: exit $rc ($line)"
# 5. rtscope without its timer stage: failed, named.
mkdir "$t/nostage"; rtla "$t/nostage" 1 ns 1000 100000 200000; echo '{"series": []}' >"$t/nostage/referee-rtscope-1.json"
rc=0; line=$("$here/referee" "$t/nostage") || rc=$?
[ "$rc" = 1 ] && [[ "$line" == *"rtscope round 1: no timer stage"* ]] || fail "no stage: exit $rc ($line)"
# 6. No referee at all (a standard kernel): 4.
rc=0; "$here/referee" "$t" >/dev/null || rc=$?
[ "$rc" = 4 ] || fail "no referee: exit $rc"
echo "test-referee: ok"
