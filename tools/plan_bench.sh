#!/usr/bin/env bash
# The planner's speed target: scenarios/bench-plan-1000.json (1,000
# configurations of a 10,000-request scenario) with R = 1 (target < 60 s on
# a 2-core machine) and R = 5 (target < 5 minutes), with every core.
set -euo pipefail
build=${1:-build}
jobs=${JOBS:-$(nproc)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 - "$out" "$PWD" <<'PY'
import json, sys
out, root = sys.argv[1], sys.argv[2]
p = json.load(open(f"{root}/scenarios/bench-plan-1000.json"))
p["scenario"]["traffic"]["generator"]["lengths_csv"] = f"{root}/scenarios/traces/sharegpt_lengths.csv"
for r in (1, 5):
    p["replications"] = r
    json.dump(p, open(f"{out}/plan-r{r}.json", "w"))
PY
for r in 1 5; do
  start=$(date +%s.%N)
  "./$build/fleetsim" plan "$out/plan-r$r.json" --out "$out/r$r" -j "$jobs" --quiet
  end=$(date +%s.%N)
  python3 - "$out/r$r/plan.json" "$start" "$end" "$r" "$jobs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
r, jobs = int(sys.argv[4]), int(sys.argv[5])
c = d["counts"]
target = 60 if r == 1 else 300
print(f"bench-plan-1000, R = {r}, -j {jobs}: {c['families']} configurations, {c['simulations']} simulations of "
      f"10,000 requests in {wall:.1f} s ({c['simulations'] / wall:.1f} simulations/s; target < {target} s)")
PY
done
