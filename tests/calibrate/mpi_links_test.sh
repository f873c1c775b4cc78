#!/usr/bin/env bash
# calibrate_mpi_test: `mpirun -np 2 fleetsim calibrate --backend cpu` on
# loopback measures the link between the two ranks (host-staged and
# direct), fits it, checks a ring all-reduce across the ranks, and records
# in the profile's topology section what it measured (calibrate/rank_links.h).
# Usage: mpi_links_test.sh BUILD_DIR
# Fails, never skips, when mpirun is missing or fleetsim was built without
# MPI: a release build is expected to have it.
set -u

build=${1:?usage: mpi_links_test.sh BUILD_DIR}
fleetsim="$build/fleetsim"
fail() {
  echo "calibrate_mpi_test: FAIL: $*" >&2
  exit 1
}
[ -x "$fleetsim" ] || fail "$fleetsim is not built"
mpirun=$(command -v mpirun) || fail "mpirun not found (install Debian's openmpi-bin and libopenmpi-dev, and rebuild fleetsim with MPI)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fleetsim_calibrate_mpi_XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# Two ranks of one machine talking over TCP on loopback, as two nodes would
# over their network (no shared-memory transport); as root in a container.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,tcp
export OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_orte_tmpdir_base="$tmp"
export PMIX_MCA_gds=hash
export OMPI_MCA_pml=ob1

timeout 240 "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$fleetsim" calibrate --backend cpu --model tiny \
  --out "$tmp/p.json" >"$tmp/log" 2>&1 || {
  cat "$tmp/log" >&2
  grep -q "built without MPI" "$tmp/log" && fail "fleetsim was built without MPI (FLEETSIM_MPI off or MPI not found)"
  fail "mpirun -np 2 fleetsim calibrate failed"
}
grep -q "links between 2 ranks" "$tmp/log" || { cat "$tmp/log" >&2; fail "rank 0 did not report the links between ranks"; }
[ "$(grep -c '^calibrated ' "$tmp/log")" = 1 ] || { cat "$tmp/log" >&2; fail "expected one calibration (rank 0's)"; }
python3 - "$tmp/p.json" <<'PY' || fail "the profile's links between ranks are wrong"
import json, sys
p = json.load(open(sys.argv[1]))
links = {l["kind"]: l for l in p["links"] if l["kind"].startswith("rank_")}
assert set(links) == {"rank_staged", "rank_direct"}, links.keys()
for kind, l in links.items():
    assert (l["src"], l["dst"]) == ("rank0", "rank1"), l
    assert l["gbps"] > 0 and l["alpha_ns"] >= 0, l
    assert len(l["points"]) == 5, l["points"]
ring = [c for c in p["collective_checks"] if c["collective"] == "ring_all_reduce_ranks"]
assert len(ring) == 1 and ring[0]["ranks"] == 2, ring
r = ring[0]
assert r["measured_ns"] > 0 and 0 < r["predicted_ns"] <= r["predicted_with_reduce_ns"], r
t = p["topology"]
assert t["ranks"] == 2, t
assert any("between nodes, host-staged" in m for m in t["measured"]), t
assert any("between nodes, device to device" in m for m in t["measured"]), t
print(f"ring across 2 ranks: measured {r['measured_ns'] / 1e6:.2f} ms, predicted {r['predicted_ns'] / 1e6:.2f} ms "
      f"({r['predicted_with_reduce_ns'] / 1e6:.2f} ms with the adds); staged {links['rank_staged']['gbps']:.2f} GB/s, "
      f"direct {links['rank_direct']['gbps']:.2f} GB/s")
PY
# Without mpirun the profile says the links between nodes are datasheet figures.
"$fleetsim" calibrate --backend cpu --model tiny --out "$tmp/one.json" --quiet >"$tmp/one.log" 2>&1 || {
  cat "$tmp/one.log" >&2
  fail "fleetsim calibrate (one process) failed"
}
python3 - "$tmp/one.json" <<'PY' || fail "a one-process profile's topology is wrong"
import json, sys
p = json.load(open(sys.argv[1]))
t = p["topology"]
assert t["ranks"] == 1, t
assert any(d.startswith("between nodes") for d in t["datasheet"]), t
assert not any(l["kind"].startswith("rank_") for l in p["links"])
PY
echo "calibrate_mpi_test: OK"
