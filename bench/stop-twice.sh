#!/usr/bin/env bash
# A stop delivered twice, as GNU timeout delivers it (to the process, then
# to its process group), must lose no run. Runs the cyclictest front end
# under `timeout -s SIG 2` N times (default 100) and counts the runs whose
# "# Max Latencies" line (the results) did not come; then the same with
# `rtscope cyclic --json` and counts missing or unreadable documents.
#
#   bench/stop-twice.sh [N] [SIG]      (default: 100 INT; needs root for -p95)
set -u
n=${1:-100}
sig=${2:-INT}
bin=${RTSCOPE:-target/debug/rtscope}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lost_ct=0 lost_json=0
for i in $(seq "$n"); do
  got=$(timeout -s "$sig" 2 "$bin" cyclictest -i100 -qmu -h 3500 -p95 -t2 -a0-1 --no-rtscope-json 2>/dev/null |
    grep -c '^# Max Latencies')
  [ "$got" = 1 ] || lost_ct=$((lost_ct + 1))
  rm -f "$tmp/r.json"
  timeout -s "$sig" 2 "$bin" cyclic -i 200us -t 2 -q --json "$tmp/r.json" >/dev/null 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['end_reason'] == 'interrupted'" \
    "$tmp/r.json" 2>/dev/null || lost_json=$((lost_json + 1))
done
echo "stop-twice ($sig, $n tries each): cyclictest front end lost $lost_ct, cyclic --json lost $lost_json"
