#!/usr/bin/env bash
# Calibration figures on the CPU backend (issue #4): wall time of
# `fleetsim calibrate` for the tiny zoo model, pinned to one core, and how
# well its fits predict shapes they did not see (pooled held-out error of
# every operator's cross-validation; target: median at most 5%).
# Usage: tools/calibrate_bench.sh [BUILD_DIR] [REPS]
set -euo pipefail
build=${1:-build}
reps=${2:-9}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cmd=("./$build/fleetsim" calibrate --backend cpu --model tiny --tp 1,2 --reps "$reps" --out "$out/tiny-cpu.json")
if command -v taskset >/dev/null; then cmd=(taskset -c 0 "${cmd[@]}"); fi
start=$(date +%s.%N)
"${cmd[@]}"
end=$(date +%s.%N)
python3 - "$start" "$end" "$reps" <<'PY'
import sys
start, end, reps = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
print(f"calibrate tiny on cpu (tp 1,2, quick grid, {reps} reps, one core): {end - start:.1f} s wall (target < 60 s)")
PY
