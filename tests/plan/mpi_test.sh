#!/usr/bin/env bash
# plan_mpi_test: `mpirun -np 2 fleetsim plan` writes the same bytes as one
# process (docs/plan.md: outputs are byte-identical for any -j and -np).
# Usage: mpi_test.sh BUILD_DIR SOURCE_DIR
# Fails, never skips, when mpirun is missing or fleetsim was built without
# MPI: a release build is expected to have the MPI scale-out.
set -u

build=${1:?usage: mpi_test.sh BUILD_DIR SOURCE_DIR}
source=${2:?usage: mpi_test.sh BUILD_DIR SOURCE_DIR}
fleetsim="$build/fleetsim"
plan="$source/tests/plan/data/small_plan.json"

fail() {
  echo "plan_mpi_test: FAIL: $*" >&2
  exit 1
}

[ -x "$fleetsim" ] || fail "$fleetsim is not built"
[ -f "$plan" ] || fail "$plan is missing"
mpirun=$(command -v mpirun) || fail "mpirun not found (install Debian's openmpi-bin and libopenmpi-dev, and rebuild fleetsim with MPI)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fleetsim_plan_mpi_XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# Open MPI in a container on a small machine, as root: allow root and more
# ranks than cores, keep to shared memory and loopback, no CMA (ptrace is
# often forbidden), no hwloc binding, and a private session folder.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_orte_tmpdir_base="$tmp"
export PMIX_MCA_gds=hash
export OMPI_MCA_pml=ob1

run_mpi() {
  timeout 240 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$@"
}

# 1. Under mpirun, with 2 ranks.
if ! run_mpi "$fleetsim" plan "$plan" --out "$tmp/mpi" -j 1 --quiet >"$tmp/mpi.log" 2>&1; then
  cat "$tmp/mpi.log" >&2
  grep -q "built without MPI" "$tmp/mpi.log" && fail "fleetsim was built without MPI (FLEETSIM_MPI off or MPI not found)"
  fail "mpirun -np 2 fleetsim plan failed"
fi
# 2. One process.
"$fleetsim" plan "$plan" --out "$tmp/j1" -j 1 --quiet >"$tmp/j1.log" 2>&1 || {
  cat "$tmp/j1.log" >&2
  fail "fleetsim plan -j 1 failed"
}
# 3. The same bytes, every file.
[ -f "$tmp/mpi/plan.json" ] || fail "mpirun wrote no plan.json"
[ -f "$tmp/mpi/chosen/summary.json" ] || fail "mpirun wrote no chosen/summary.json"
diff -r "$tmp/j1" "$tmp/mpi" >"$tmp/diff.log" 2>&1 || {
  head -50 "$tmp/diff.log" >&2
  fail "mpirun -np 2 outputs differ from -j 1"
}
# 4. It really ran as two ranks of one MPI job (not two plans racing for
# the folder): rank 0 says so when not quiet, and only rank 0 prints.
run_mpi "$fleetsim" plan "$plan" --out "$tmp/mpi2" -j 1 >"$tmp/mpi2.log" 2>&1 || {
  cat "$tmp/mpi2.log" >&2
  fail "mpirun -np 2 fleetsim plan (not quiet) failed"
}
grep -q "2 MPI ranks" "$tmp/mpi2.log" || {
  cat "$tmp/mpi2.log" >&2
  fail "the run did not report 2 MPI ranks"
}
[ "$(grep -c '^fleetsim plan ' "$tmp/mpi2.log")" = 1 ] || {
  cat "$tmp/mpi2.log" >&2
  fail "expected one summary (rank 0's)"
}
diff -r "$tmp/j1" "$tmp/mpi2" >/dev/null 2>&1 || fail "the second mpirun's outputs differ from -j 1"
echo "plan_mpi_test: OK: mpirun -np 2 and -j 1 wrote identical outputs"
