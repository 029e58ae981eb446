# A kernel-lab suite for a guest booted with CPU 1 isolated and tickless:
#
#   bench/kernel-lab/lab --kernel linux-image-rt-amd64 \
#       --append "isolcpus=1 nohz_full=1" \
#       --suite bench/kernel-lab/suite-nohz.sh --out lab/nohz
#
# Under nohz_full the sleep timers of a thread on CPU 1 are queued on a
# housekeeping CPU (CPU 0), whose interrupt fires them and wakes the thread:
# `cyclic --trace` must trace there too to split the samples into stages.
# This suite runs `cyclic -a 1 -D 3s -i 1ms --trace` and checks that at
# least 99 % of its samples were split.
#
# How it reports (sourced by the guest's init, like suite.sh): the run itself
# is `cyclic-nohz` (.out/.err/.rc/.json as lab_run writes them); the check is
# `nohz-split`, with
#   nohz-split.out  one line: "nohz-split: PASS|FAIL J of S samples split
#                   into stages (P %), nohz_full=LIST"
#   nohz-split.rc   0 when at least 99 % were split on a guest whose
#                   nohz_full holds CPU 1, 1 otherwise
#   nohz-split.err  the same line on a failure (bench/kernel-lab/verify
#                   prints a failed .rc with the end of its .err)
# The verdict of this suite alone: `test "$(cat lab/nohz/nohz-split.rc)" = 0`
# or `grep -q '^nohz-split: PASS' lab/nohz/nohz-split.out`.
# bench/kernel-lab/verify checks the default suite's files: on this suite's
# results alone most of its checks fail (no check.json, ...), but its loop
# over NAME.rc prints "ok cyclic-nohz exit 0" and "ok nohz-split exit 0" or
# "FAIL nohz-split exit 1: nohz-split: FAIL ...", so a guest that sources
# this file after suite.sh (same /out) is verified whole by it.
# Measured (TCG): Debian's 6.1 PREEMPT_RT 1861 of 1861 (2076-sample run
# before the fix: 1466, FAIL), 6.12.117 PREEMPT_RT 470 of 472 (before: 317
# of 502).

nohz=$(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)
lab_run cyclic-nohz 90 cyclic -a 1 -D 3s -i 1ms --trace --json cyclic-nohz.json
# The summary's line: "trace: J of S samples split into stages ...".
line=$(grep -m1 '^trace: [0-9]* of [0-9]* samples split' /out/cyclic-nohz.out)
joined=$(echo "$line" | awk '{print $2}')
samples=$(echo "$line" | awk '{print $4}')
verdict=FAIL
pct=0
if [ -n "$samples" ] && [ "$samples" -gt 0 ]; then
  pct=$(awk "BEGIN{printf \"%.1f\", 100 * $joined / $samples}")
  # Integers only: joined * 100 >= samples * 99.
  [ $((joined * 100)) -ge $((samples * 99)) ] && verdict=PASS
fi
# The check means nothing on a guest whose CPU 1 is not nohz_full.
case ",$nohz," in
  *,1,* | *,1-* | *,0-[1-9]*) ;;
  *) verdict=FAIL ;;
esac
msg="nohz-split: $verdict ${joined:-0} of ${samples:-0} samples split into stages ($pct %), nohz_full=${nohz:-none}"
echo "$msg" >/out/nohz-split.out
if [ "$verdict" = PASS ]; then
  echo 0 >/out/nohz-split.rc
  : >/out/nohz-split.err
else
  echo 1 >/out/nohz-split.rc
  { echo "$msg"; grep -m1 'not split' /out/cyclic-nohz.err; } >/out/nohz-split.err
fi
echo "@@LAB ran nohz-split $msg"
lab_checkpoint nohz-split
