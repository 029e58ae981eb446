# The console fallback under fire, on a real guest: emergency-level kernel
# messages (printed even at the transfer's quiet console level) every 20 ms
# while the results go out, some landing inside the chunk lines:
#
#   bench/kernel-lab/lab --kernel linux-image-6.12-rt-amd64 --console-results \
#       --suite bench/kernel-lab/suite-console-noise.sh --out lab/noise
#
# Every file must come back (lab.json: "results_lost": 0; the lab exits 1 and
# names each lost file otherwise); `grep -c 'lab noise' lab/noise/console.log`
# counts the messages.
lab_run check 60 check --json check.json
lab_run cyclic-trace 90 cyclic -D 3s -i 1ms --trace --json cyclic-trace.json
# Left running into the transfer (init sends the results after the suite).
(
  i=0
  while [ $i -lt 3000 ]; do
    echo "<0>lab noise $i: Disabling IRQ #4" >/dev/kmsg
    i=$((i + 1))
    sleep 0.02
  done
) &
