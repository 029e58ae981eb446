#!/usr/bin/env bash
# Can one aggregator keep up with a 256-CPU qualification? Feeds the real
# aggregation (SeriesRecorder per thread and the union) and the real trace
# join (WakeTracker, Joiner, StageRecorder) with simulated threads, one per
# CPU, and their five kernel events per wake-up; prints the CPU cost per
# sample of each part and the headroom on one core
# (crates/rtscope-core/benches/scale.rs says what is and is not included).
#
#   bench/trace-scale.sh [CPUS] [RATE_HZ] [SECONDS]     (default 256 10000 2)
#
# Writes the output to stdout; docs/trace.md ("Scale") quotes a run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p rtscope-core --bench scale -- "${1:-256}" "${2:-10000}" "${3:-2}" 2>/dev/null
