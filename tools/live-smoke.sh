#!/usr/bin/env bash
# The live-mode smoke test on a GPU machine: build, calibrate on the quick
# grid, then run Llama-3.1-8B shapes on one GPU for 60 s of the Azure
# conversation trace, scaled to what the GPU carries, and diff it against
# the simulation. Everything goes into OUTDIR: build.log, profile.json and
# its report, scale.txt (how the load was chosen), live/ (fleetsim live's
# folder: summary.json, live.json, diff.json, diff.md, ...).
#
#   tools/live-smoke.sh OUTDIR
#
# Sized for a GPU machine's short lease: the whole script in about 5 minutes
# on an H100/H200 (the build dominates). Overrides, for trying the script
# elsewhere: FLEETSIM_SMOKE_BACKEND (cuda), _MODEL (Llama-3.1-8B), _DEVICE
# (H200: the hardware catalogue's name of the GPU), _SECONDS (60),
# _BUILD (build-smoke), _JOBS (nproc), _BIN (a fleetsim already built: no
# build step), _TP (1: the replica's tensor-parallel degree; with 2 or more
# it spans that many GPUs, its all-reduces a ring over peer copies, priced
# by the ring the calibration times across every GPU it sees).
set -euo pipefail

out=${1:?usage: tools/live-smoke.sh OUTDIR}
backend=${FLEETSIM_SMOKE_BACKEND:-cuda}
model=${FLEETSIM_SMOKE_MODEL:-Llama-3.1-8B}
device=${FLEETSIM_SMOKE_DEVICE:-H200}
seconds=${FLEETSIM_SMOKE_SECONDS:-60}
build=${FLEETSIM_SMOKE_BUILD:-build-smoke}
jobs=${FLEETSIM_SMOKE_JOBS:-$(nproc)}
tp=${FLEETSIM_SMOKE_TP:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
step() { echo "[$(( $(date +%s) - start )) s] $*"; }

bin=${FLEETSIM_SMOKE_BIN:-}
if [ -z "$bin" ]; then
  step "build ($build, -j$jobs)"
  cmake -S "$root" -B "$root/$build" -DCMAKE_BUILD_TYPE=Release -DFLEETSIM_TESTS=OFF -DFLEETSIM_BENCH=OFF \
    >"$out/build.log" 2>&1
  targets="fleetsim"
  [ "$backend" = cuda ] && targets="fleetsim fleetsim_cuda"
  # shellcheck disable=SC2086
  cmake --build "$root/$build" -j "$jobs" --target $targets >>"$out/build.log" 2>&1
  bin="$root/$build/fleetsim"
fi
if [ "$backend" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >"$out/gpu.txt" 2>&1 || true
fi

step "calibrate $model on $backend at tp $tp (quick grid, attention as measured)"
"$bin" calibrate --backend "$backend" --model "$model" --device "$device" --tp "$tp" --grid quick --measured-attention \
  --reps 5 --warmup 1 --out "$out/profile.json" --report "$out/profile-report" --quiet

# The scenario: one replica of the model on the device (tp of them), the Azure
# conversation trace's first `seconds` (of trace time once scaled).
scenario="$out/scenario.json"
write_scenario() {  # $1: rate_scale
  cat >"$scenario" <<JSON
{
  "name": "live-smoke-$model",
  "description": "tools/live-smoke.sh: $model on $tp x $device, the Azure conversation trace scaled by $1",
  "seed": 1,
  "model": "$model",
  "fleet": { "pools": [ { "name": "gpu", "gpu": "$device", "replicas": 1, "tp": $tp, "engine": "fleetsim_live" } ] },
  "traffic": {
    "trace": { "format": "azure", "path": "$root/scenarios/traces/azure_conv_2023.csv", "rate_scale": $1 },
    "max_arrival_s": $seconds
  },
  "perf": { "profile": "$out/profile.json" },
  "slo": { "ttft_ms": 2000, "tpot_ms": 100 }
}
JSON
}

# Scaled to the GPU's capacity: the largest rate_scale (doubling from 1)
# whose simulated busy fraction stays below 70%: loaded, not overloaded.
step "scale the trace to the GPU (simulated)"
scale=1
: >"$out/scale.txt"
for s in 1 2 4 8 16 32 64; do
  write_scenario "$s"
  "$bin" run "$scenario" --out "$out/scale-$s" --quiet
  busy=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['routing']['busy_fraction_mean'] or 0)" \
    "$out/scale-$s/summary.json")
  echo "rate_scale $s: simulated busy fraction $busy" >>"$out/scale.txt"
  if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.7 else 1)" "$busy"; then scale=$s; else break; fi
done
rm -rf "$out"/scale-*
echo "chosen rate_scale $scale" >>"$out/scale.txt"
write_scenario "$scale"

step "live: $seconds s at rate_scale $scale"
"$bin" live "$scenario" --backend "$backend" --out "$out/live"
step "done: $out/live/diff.md"
