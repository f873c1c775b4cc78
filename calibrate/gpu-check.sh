#!/usr/bin/env bash
# calibrate/gpu-check.sh OUTDIR: the whole GPU check in one command, for a
# machine with a GPU, nvcc and CMake but no Debian -dev packages and no
# network.
#
#   make gpu-bundle                    # here: build-gpu/ (binaries + deps)
#   calibrate/gpu-check.sh OUTDIR      # there, from the repository root
#
# Steps (each runs even when an earlier one failed; the exit status is 0
# only if all passed):
#   gpu-info      nvidia-smi -L and the GPU's name, max clocks and driver
#   binaries      build-gpu/'s binaries and libfleetsim_cuda.so (the CUDA
#                 backend, which fleetsim loads from beside itself) if they
#                 load and match the sources, else a rebuild in
#                 build-gpu-local/ from build-gpu/deps alone
#   cuda-tests    kernels_test --gtest_filter='Cuda*'   -> OUTDIR/cuda_tests.txt
#   gemm-baseline a bare cuBLASLt loop on large bf16 GEMMs
#                                      -> OUTDIR/gemm_baseline.txt, .json
#   calibrate     fleetsim calibrate, Llama-3.1-8B TP1, quick grid, 240 s
#                                      -> OUTDIR/profile.json, OUTDIR/report
#   harness-gemm  the calibration harness on the baseline's shapes
#                                      -> OUTDIR/harness_gemm.json
#   compare       harness vs baseline per shape (pass: >= 95% of the
#                 baseline's throughput) and both against the vendor peak
# OUTDIR/summary.txt gets every step's status, seconds and exit code, and
# the comparison; OUTDIR/log.txt the output of the steps that have no file
# of their own.
#
# Environment: FORCE_REBUILD=1 rebuilds even when the bundle's binaries run;
# ALLOW_STALE=1 uses them even when the sources changed since the bundle;
# GPU_BUNDLE (default build-gpu) and GPU_LOCAL_BUILD (build-gpu-local) name
# the folders; PEAK_TFLOPS (989, the H100/H200 SXM dense bf16 datasheet
# figure) is the vendor peak; MIN_HARNESS_RATIO (0.95) the pass mark;
# COMPARE_WITH=awk skips python3; GPU_CHECK_ARCHIVE=FILE.tgz packs OUTDIR
# at the end (the device tool brings back at most 8 files).
#
#   calibrate/gpu-check.sh --stamp     prints the source stamp that
#                                      make gpu-bundle stores in the bundle
set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# A hash of the sources the bundled binaries are built from (paths and
# contents), so the check can tell a bundle made from other sources. Limited
# to what those targets compile, so editing another folder's tests or this
# script does not force a rebuild.
source_stamp() {
  (cd "$REPO" &&
    find CMakeLists.txt cmake base model kernels calibrate sim tools tests/CMakeLists.txt tests/kernels \
      -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cmake' \
      -o -name CMakeLists.txt -o -name '*.json' -o -name '*.map' \) -print 2>/dev/null |
    LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-16)
}

if [ "${1:-}" = "--stamp" ]; then
  source_stamp
  exit 0
fi
if [ $# -ne 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,38p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0
  exit 2
fi

mkdir -p "$1" || { echo "gpu-check: cannot create $1" >&2; exit 2; }
OUTDIR=$(cd "$1" && pwd)
cd "$REPO" || exit 2

BUNDLE=${GPU_BUNDLE:-build-gpu}
LOCAL=${GPU_LOCAL_BUILD:-build-gpu-local}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
MIN_RATIO=${MIN_HARNESS_RATIO:-0.95}
SHAPES=4096x4096x4096,8192x8192x8192,2048x14336x4096,4096x4096x14336
SUMMARY=$OUTDIR/summary.txt
LOG=$OUTDIR/log.txt
: >"$SUMMARY"
: >"$LOG"
FAILED=()
T_START=$(date +%s)

log() { printf '[%s +%4ss] %s\n' "$(date +%H:%M:%S)" "$(($(date +%s) - T_START))" "$*"; }
say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }

# record STEP RC SECONDS NOTE: one line of summary.txt per step.
record() {
  local status=ok
  if [ "$2" -ne 0 ]; then
    status=FAILED
    FAILED+=("$1")
  fi
  printf 'step=%-14s status=%-6s rc=%-3s seconds=%-4s %s\n' "$1" "$status" "$2" "$3" "$4" >>"$SUMMARY"
  log "$1: $status (rc=$2, ${3}s) $4"
}

# run_step NAME TIMEOUT_S OUTFILE CMD...: runs CMD under timeout with its
# output in OUTFILE (appended, under a header, when OUTFILE is the log), and
# shows the tail of that output when it fails. Sets STEP_RC, STEP_S and
# STEP_LAST (the last line of its output, for the summary).
run_step() {
  local name=$1 limit=$2 file=$3
  shift 3
  log "$name: $*"
  local t0 first=1
  t0=$(date +%s)
  if [ "$file" = "$LOG" ]; then
    printf '\n==== %s: %s\n' "$name" "$*" >>"$LOG"
    first=$(($(wc -l <"$LOG") + 1))
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$file" 2>&1
  fi
  STEP_RC=$?
  STEP_S=$(($(date +%s) - t0))
  STEP_LAST=$(tail -n +"$first" "$file" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-300)
  if [ "$STEP_RC" -eq 124 ] || [ "$STEP_RC" -eq 137 ]; then
    log "$name: stopped after ${limit}s (timeout)"
    STEP_LAST="timed out after ${limit}s; $STEP_LAST"
  fi
  if [ "$STEP_RC" -ne 0 ]; then
    log "$name: last lines of its output ($file):"
    tail -n +"$first" "$file" | tail -n 15 | sed 's/^/    | /'
  fi
}

# note_for "NOTE": NOTE, preceded by the step's last output line if it failed.
note_for() {
  if [ "$STEP_RC" -ne 0 ] && [ -n "$STEP_LAST" ]; then
    printf '%s; %s' "$STEP_LAST" "$1"
  else
    printf '%s' "$1"
  fi
}

say "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) in $REPO, output $OUTDIR"

# ---- (a) the GPU -------------------------------------------------------------
log "gpu-info"
t0=$(date +%s)
rc=0
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>&1 | tee -a "$SUMMARY"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv 2>&1 | tee -a "$SUMMARY"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  # nvidia-smi prints its complaints on stdout with rc 0 on some failures.
  grep -q '^GPU [0-9]' "$SUMMARY" || rc=1
else
  say "nvidia-smi: not found (no NVIDIA driver on this machine)"
  rc=1
fi
NVCC=$(command -v nvcc 2>/dev/null || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
{
  echo "nvcc: ${NVCC:-not found} $([ -n "$NVCC" ] && "$NVCC" --version 2>/dev/null | tail -n 1)"
  echo "libc: $(ldd --version 2>/dev/null | head -n 1)"
  echo "host: $(uname -srm), $(nproc) cores"
} | tee -a "$SUMMARY"
record gpu-info "$rc" $(($(date +%s) - t0)) "$([ $rc -eq 0 ] || echo 'no GPU visible to nvidia-smi; the GPU steps below will fail')"

# cuBLAS stays a shared library (cmake/GpuBundle.cmake): make the toolkit's
# copy findable whatever the binaries' RPATH says.
CUDA_LIB=""
if [ -n "$NVCC" ]; then
  CUDA_LIB=$(cd "$(dirname "$NVCC")/.." && pwd)/lib64
fi
if [ ! -e "$CUDA_LIB/libcublasLt.so.13" ]; then
  # No cuBLAS beside nvcc: Python's nvidia-cublas wheel has the same library.
  for d in /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib; do
    [ -e "$d/libcublasLt.so.13" ] && CUDA_LIB=$d && break
  done
fi
if [ -n "$CUDA_LIB" ] && [ -d "$CUDA_LIB" ]; then
  export LD_LIBRARY_PATH="$CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLAS from: $CUDA_LIB" >>"$SUMMARY"
fi

# ---- (b) binaries: the bundle's, or rebuilt here -------------------------------
FLEETSIM=$BUNDLE/fleetsim
KTEST=$BUNDLE/kernels_test
GEMMB=$BUNDLE/gemm_baseline

# Prints why the binaries (fleetsim, kernels_test, gemm_baseline at
# FLEETSIM/KTEST/GEMMB, and the CUDA module beside fleetsim) cannot be used,
# or nothing.
binaries_problem() {
  local b out module
  for b in "$FLEETSIM" "$KTEST" "$GEMMB"; do
    [ -x "$b" ] || { echo "$b is missing"; return; }
  done
  # fleetsim and kernels_test hold no CUDA code: they dlopen this on the
  # first use of the "cuda" backend (kernels/cuda_module.h).
  module=$(dirname "$FLEETSIM")/libfleetsim_cuda.so
  [ -f "$module" ] || { echo "$module is missing (the CUDA backend, loaded from beside fleetsim)"; return; }
  if command -v ldd >/dev/null 2>&1 && out=$(ldd "$module" 2>&1 | grep 'not found'); then
    echo "$module cannot be loaded: $(printf '%s' "$out" | head -n 2 | tr '\n' ' ')"
    return
  fi
  if ! out=$("$FLEETSIM" list 2>&1 >/dev/null); then
    echo "$FLEETSIM list failed: $(printf '%s' "$out" | head -n 2 | tr '\n' ' ')"
    return
  fi
  if ! out=$("$KTEST" --gtest_list_tests 2>&1 >/dev/null); then
    echo "$KTEST --gtest_list_tests failed: $(printf '%s' "$out" | head -n 2 | tr '\n' ' ')"
    return
  fi
  if ! out=$("$GEMMB" --help 2>&1 >/dev/null); then
    echo "$GEMMB --help failed: $(printf '%s' "$out" | head -n 2 | tr '\n' ' ')"
    return
  fi
}

t0=$(date +%s)
reason=""
if [ "${FORCE_REBUILD:-0}" = 1 ]; then
  reason="FORCE_REBUILD=1"
elif [ ! -f "$BUNDLE/SOURCE_STAMP" ]; then
  reason="$BUNDLE/SOURCE_STAMP is missing (make gpu-bundle writes it)"
elif [ "$(cat "$BUNDLE/SOURCE_STAMP")" != "$(source_stamp)" ] && [ "${ALLOW_STALE:-0}" != 1 ]; then
  reason="sources changed since make gpu-bundle (stamp $(cat "$BUNDLE/SOURCE_STAMP") != $(source_stamp); ALLOW_STALE=1 uses them anyway)"
else
  reason=$(binaries_problem)
fi

binaries_rc=0
if [ -z "$reason" ]; then
  note="prebuilt $BUNDLE/ binaries load and match the sources"
  if [ "$(cat "$BUNDLE/SOURCE_STAMP")" != "$(source_stamp)" ]; then
    note="prebuilt $BUNDLE/ binaries load but were built from OTHER sources (ALLOW_STALE=1)"
  fi
  [ -f "$BUNDLE/BUNDLE.txt" ] && sed -n '2,6p' "$BUNDLE/BUNDLE.txt" | sed 's/^/  bundle: /' >>"$SUMMARY"
else
  log "binaries: rebuilding in $LOCAL/ because: $reason"
  note="rebuild in $LOCAL/ because: $reason"
  case "$BUNDLE" in
    /*) deps=$BUNDLE/deps ;;
    *) deps=$REPO/$BUNDLE/deps ;;
  esac
  jobs=$(nproc 2>/dev/null || echo 16)
  generator="Unix Makefiles"
  command -v ninja >/dev/null 2>&1 && generator=Ninja
  if [ ! -f "$deps/cmake/Eigen3Config.cmake" ]; then
    log "binaries: $deps holds no dependency bundle: run make gpu-bundle where the Debian packages are, and carry $BUNDLE"
    note="$note; cannot: $deps holds no dependency bundle"
    binaries_rc=1
  elif [ -z "$NVCC" ]; then
    log "binaries: no nvcc on PATH or at /usr/local/cuda/bin: cannot rebuild the CUDA targets"
    note="$note; cannot: no nvcc"
    binaries_rc=1
  else
    # Plain -O2 (no -g): the same code as the bundle's RelWithDebInfo
    # binaries, whose debug info is stripped anyway, compiled faster.
    run_step configure 300 "$LOG" cmake -S "$REPO" -B "$LOCAL" -G "$generator" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 \
      -DFLEETSIM_CUDA=ON -DFLEETSIM_TESTS=ON -DFLEETSIM_BENCH=OFF \
      -DCMAKE_CUDA_COMPILER="$NVCC" -DFLEETSIM_DEPS_ROOT="$deps"
    binaries_rc=$STEP_RC
    if [ "$binaries_rc" -eq 0 ]; then
      grep 'fleetsim deps:' "$LOG" | tail -n 5 | sed 's/^-- /  /' >>"$SUMMARY"
      run_step build 600 "$LOG" cmake --build "$LOCAL" -j "$jobs" --target fleetsim fleetsim_cuda kernels_test gemm_baseline
      binaries_rc=$STEP_RC
    fi
    [ "$binaries_rc" -ne 0 ] && note="$note; the rebuild failed: $STEP_LAST (see log.txt)"
  fi
  if [ "$binaries_rc" -eq 0 ]; then
    FLEETSIM=$LOCAL/fleetsim
    KTEST=$LOCAL/tests/kernels/kernels_test
    GEMMB=$LOCAL/gemm_baseline
    problem=$(binaries_problem)
    note="$note; rebuilt"
    if [ -n "$problem" ]; then
      log "binaries: rebuilt, but $problem"
      note="$note; rebuilt, but $problem"
      binaries_rc=1
    fi
  elif [ -z "$(binaries_problem)" ]; then
    # No rebuild: the bundle's binaries still load, so the GPU steps can
    # run, on code that may differ from the sources (this step fails).
    log "binaries: falling back to $BUNDLE/'s binaries"
    note="$note; falling back to $BUNDLE/'s binaries"
  fi
fi
record binaries "$binaries_rc" $(($(date +%s) - t0)) "$note"

# ---- (c) CUDA tests ------------------------------------------------------------
run_step cuda-tests 180 "$OUTDIR/cuda_tests.txt" "$KTEST" --gtest_filter='Cuda*' --gtest_color=no
rc=$STEP_RC
note="output in cuda_tests.txt"
if [ "$rc" -eq 0 ]; then
  # On a GPU machine every Cuda* test must run: a skip means the binary saw
  # no device.
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$OUTDIR/cuda_tests.txt")
  skipped=${skipped:-0}
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$OUTDIR/cuda_tests.txt")
  note="${passed:-0} passed, $skipped skipped; output in cuda_tests.txt"
  if [ "$skipped" -gt 0 ] || [ -z "$passed" ]; then
    rc=1
    note="$note; skipped tests mean the test binary saw no CUDA device: $(grep -m 1 'no CUDA device' "$OUTDIR/cuda_tests.txt" | sed 's/^ *//')"
  fi
fi
record cuda-tests "$rc" "$STEP_S" "$note"

# ---- (d) the bare cuBLASLt baseline ----------------------------------------------
rm -f "$OUTDIR/gemm_baseline.json"
run_step gemm-baseline 120 "$OUTDIR/gemm_baseline.txt" "$GEMMB" --shapes "$SHAPES" --reps 20 \
  --peak-tflops "$PEAK_TFLOPS" --json "$OUTDIR/gemm_baseline.json"
record gemm-baseline "$STEP_RC" "$STEP_S" "$(note_for "output in gemm_baseline.txt, gemm_baseline.json")"

# ---- (e) calibration: Llama-3.1-8B, TP1, quick grid, within 4 minutes ---------------
rm -f "$OUTDIR/profile.json"
run_step calibrate 240 "$LOG" "$FLEETSIM" calibrate --backend cuda --model Llama-3.1-8B --tp 1 --grid quick \
  --out "$OUTDIR/profile.json" --report "$OUTDIR/report"
rc=$STEP_RC
note=$(note_for "profile.json, report; output in log.txt")
if [ "$rc" -eq 0 ] && [ ! -s "$OUTDIR/profile.json" ]; then
  rc=1
  note="exited 0 but wrote no profile.json"
fi
record calibrate "$rc" "$STEP_S" "$note"

# ---- (f) the harness on the baseline's shapes ----------------------------------------
rm -f "$OUTDIR/harness_gemm.json"
run_step harness-gemm 120 "$LOG" "$FLEETSIM" calibrate gemm --backend cuda --shapes "$SHAPES" --dtype bf16 \
  --reps 20 --json "$OUTDIR/harness_gemm.json"
record harness-gemm "$STEP_RC" "$STEP_S" "$(note_for "harness_gemm.json; output in log.txt")"

# ---- (g) harness vs baseline ---------------------------------------------------------
# Both files are searched for objects holding m, n, k and a median time
# (median_ns, median_us, median_ms or median_s, possibly nested; or a "shape"
# string MxNxK with python3), so the harness's JSON layout need not match the
# baseline's.
compare_python() {
  python3 - "$OUTDIR/gemm_baseline.json" "$OUTDIR/harness_gemm.json" "$PEAK_TFLOPS" "$MIN_RATIO" <<'PY'
import json, re, sys

UNITS = {"median_ns": 1e-3, "median_us": 1.0, "median_ms": 1e3, "median_s": 1e6}

def median_us(d):
    for key, scale in UNITS.items():
        if isinstance(d.get(key), (int, float)):
            return d[key] * scale
    for v in d.values():
        if isinstance(v, dict):
            got = median_us(v)
            if got is not None:
                return got
    return None

def shape_of(d):
    if all(isinstance(d.get(x), int) for x in "mnk"):
        return (d["m"], d["n"], d["k"])
    s = d.get("shape")
    if isinstance(s, str) and re.fullmatch(r"\d+x\d+x\d+", s):
        return tuple(int(x) for x in s.split("x"))
    return None

def shapes(node, out):
    if isinstance(node, dict):
        key = shape_of(node)
        if key is not None:
            us = median_us(node)
            if us is not None:
                out[key] = us
                return
        for v in node.values():
            shapes(v, out)
    elif isinstance(node, list):
        for v in node:
            shapes(v, out)

def load(path):
    try:
        with open(path) as f:
            found = {}
            shapes(json.load(f), found)
            return found, None
    except (OSError, ValueError) as e:
        return {}, str(e)

base, base_err = load(sys.argv[1])
harn, harn_err = load(sys.argv[2])
peak, min_ratio = float(sys.argv[3]), float(sys.argv[4])
for name, err in (("gemm_baseline.json", base_err), ("harness_gemm.json", harn_err)):
    if err:
        print(f"cannot read {name}: {err}")
ok = bool(base) and bool(harn)
print(f"{'shape':<20} {'baseline_us':>11} {'harness_us':>10} {'ratio':>6} {'base_TF':>8} {'base_peak':>9}"
      f" {'harn_TF':>8} {'harn_peak':>9}  verdict")
for key in sorted(set(base) | set(harn)):
    m, n, k = key
    label = f"{m}x{n}x{k}"
    if key not in base or key not in harn:
        ok = False
        print(f"{label:<20} missing from {'gemm_baseline.json' if key not in base else 'harness_gemm.json'}")
        continue
    flop = 2.0 * m * n * k
    b_tf, h_tf = flop / base[key] / 1e6, flop / harn[key] / 1e6
    ratio = base[key] / harn[key]  # harness throughput / baseline throughput
    verdict = "ok" if ratio >= min_ratio else f"BELOW {min_ratio:.2f}"
    ok = ok and ratio >= min_ratio
    print(f"{label:<20} {base[key]:>11.1f} {harn[key]:>10.1f} {ratio:>6.3f} {b_tf:>8.1f} {b_tf / peak:>9.3f}"
          f" {h_tf:>8.1f} {h_tf / peak:>9.3f}  {verdict}")
print(f"ratio = harness throughput / bare cuBLASLt throughput (pass >= {min_ratio}); peak = {peak:g} TFLOP/s")
sys.exit(0 if ok else 1)
PY
}

# The same without python3: pulls "m", "n", "k" and "median_*" numbers out in
# order and groups each complete set (records must not interleave).
compare_awk() {
  extract() {
    [ -f "$1" ] || return 0
    grep -oE '"(m|n|k|median_ns|median_us|median_ms|median_s)"[[:space:]]*:[[:space:]]*[-0-9.eE+]+' "$1" |
      tr -d '" ' | awk -F: '
        { v[$1] = $2; if ($1 ~ /^median_/) { med = $2; unit = $1 } }
        ("m" in v) && ("n" in v) && ("k" in v) && med != "" {
          s = (unit == "median_ns") ? 1e-3 : (unit == "median_ms") ? 1e3 : (unit == "median_s") ? 1e6 : 1
          printf "%sx%sx%s %.6f\n", v["m"], v["n"], v["k"], med * s
          delete v; med = ""
        }'
  }
  extract "$OUTDIR/gemm_baseline.json" >"$OUTDIR/.base.tmp"
  extract "$OUTDIR/harness_gemm.json" >"$OUTDIR/.harn.tmp"
  awk -v peak="$PEAK_TFLOPS" -v min="$MIN_RATIO" '
    FNR == NR { base[$1] = $2; next }
    { harn[$1] = $2 }
    END {
      ok = 1; nb = 0; nh = 0
      for (s in base) nb++
      for (s in harn) nh++
      if (nb == 0 || nh == 0) ok = 0
      printf "%-20s %11s %10s %6s %8s %9s %8s %9s  verdict\n", "shape", "baseline_us", "harness_us", "ratio",
             "base_TF", "base_peak", "harn_TF", "harn_peak"
      for (s in base) {
        if (!(s in harn)) { printf "%-20s missing from harness_gemm.json\n", s; ok = 0; continue }
        split(s, d, "x"); flop = 2 * d[1] * d[2] * d[3]
        btf = flop / base[s] / 1e6; htf = flop / harn[s] / 1e6; r = base[s] / harn[s]
        v = (r >= min) ? "ok" : sprintf("BELOW %.2f", min); if (r < min) ok = 0
        printf "%-20s %11.1f %10.1f %6.3f %8.1f %9.3f %8.1f %9.3f  %s\n", s, base[s], harn[s], r, btf, btf / peak,
               htf, htf / peak, v
      }
      for (s in harn) if (!(s in base)) { printf "%-20s missing from gemm_baseline.json\n", s; ok = 0 }
      printf "ratio = harness throughput / bare cuBLASLt throughput (pass >= %s); peak = %s TFLOP/s\n", min, peak
      exit ok ? 0 : 1
    }' "$OUTDIR/.base.tmp" "$OUTDIR/.harn.tmp"
  local rc=$?
  rm -f "$OUTDIR/.base.tmp" "$OUTDIR/.harn.tmp"
  return $rc
}

log "compare: harness vs bare cuBLASLt"
t0=$(date +%s)
{
  echo
  echo "GEMM, harness (fleetsim calibrate gemm) vs bare cuBLASLt (gemm_baseline), same shapes and method:"
} >>"$SUMMARY"
if [ ! -s "$OUTDIR/gemm_baseline.json" ] || [ ! -s "$OUTDIR/harness_gemm.json" ]; then
  echo "no comparison: $([ -s "$OUTDIR/gemm_baseline.json" ] || echo 'gemm_baseline.json missing ')$([ -s "$OUTDIR/harness_gemm.json" ] || echo 'harness_gemm.json missing')" |
    tee -a "$SUMMARY"
  rc=1
  tool="none"
elif [ "${COMPARE_WITH:-}" != awk ] && command -v python3 >/dev/null 2>&1; then
  compare_python 2>&1 | tee -a "$SUMMARY"
  rc=${PIPESTATUS[0]}
  tool="python3"
else
  compare_awk 2>&1 | tee -a "$SUMMARY"
  rc=${PIPESTATUS[0]}
  tool="awk"
fi
echo >>"$SUMMARY"
record compare "$rc" $(($(date +%s) - t0)) "with $tool"

# ---- verdict ---------------------------------------------------------------------
total=$(($(date +%s) - T_START))
if [ ${#FAILED[@]} -eq 0 ]; then
  say "overall: PASS in ${total}s"
  status=0
else
  say "overall: FAIL in ${total}s (failed: ${FAILED[*]})"
  status=1
fi
if [ -n "${GPU_CHECK_ARCHIVE:-}" ]; then
  tar -czf "$GPU_CHECK_ARCHIVE" -C "$(dirname "$OUTDIR")" "$(basename "$OUTDIR")" &&
    log "packed $OUTDIR into $GPU_CHECK_ARCHIVE"
fi
exit $status
