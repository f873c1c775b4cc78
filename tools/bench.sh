#!/usr/bin/env bash
# Runs scenarios/bench-1m.json (then bench-fleet-week.json and
# diurnal-autoscale.json) on one core and
# prints the figures the spine is held to: wall time, simulated requests per
# wall second, events per second and peak RSS (targets: < 10 s, < 1 GB).
set -euo pipefail
build=${1:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Runs a bundled scenario on one core into $out/<name> and prints its
# figures under `title`, with `target` the wall-time target in seconds; any
# further arguments go to fleetsim run (--set KEY=VALUE), into $out/<name>-k.
bench() {
  local name=$1 title=$2 target=$3 file="scenarios/$1.json"
  shift 3
  # A scenario written here rather than bundled: its path.
  if [[ $name == */* ]]; then file=$name; name=$(basename "$name" .json); fi
  local dir="$out/$name-$#"
  local cmd=("./$build/fleetsim" run "$file" --out "$dir" --quiet "$@")
  if command -v taskset >/dev/null; then cmd=(taskset -c 0 "${cmd[@]}"); fi
  "${cmd[@]}"
  python3 - "$dir" "$title" "$target" <<'PY'
import json, sys
d, title, target = sys.argv[1], sys.argv[2], sys.argv[3]
run = json.load(open(f"{d}/run.json"))
s = json.load(open(f"{d}/summary.json"))
print(title)
print(f"  wall time           {run['wall_s']:.2f} s   (target < {target} s)")
print(f"  simulated requests  {run['requests_per_wall_s']:,.0f} per wall second")
print(f"  events              {run['events']:,} at {run['events_per_s']:,.0f} per second")
print(f"  peak RSS            {run['peak_rss_mb']:.0f} MB   (target < 1024 MB)")
print(f"  simulated           {s['sim']['simulated_s']:.0f} s, {s['throughput']['requests_per_s']:.1f} req/s served, "
      f"TTFT p99 {s['latency_ms']['ttft']['p99']:.0f} ms, TPOT p99 {s['latency_ms']['tpot']['p99']:.1f} ms")
if 'autoscaling' in s:
    a, c = s['autoscaling'], s['cost']
    print(f"  autoscaling         {a['scale_ups']} scale-ups, {a['scale_downs']} scale-downs, {a['replicas_min']}-{a['replicas_max']} "
          f"replicas, {c['gpu_hours']:.1f} GPU-hours, ${c['total_usd']:.2f}, idle share {c['idle_share']:.3f}, "
          f"SLO attainment {s['slo']['attainment']:.4f}")
if 'transfer' in s:
    t = s['transfer']
    busiest = max((v['busy_fraction'], k) for k, v in s.get('links', {}).items()) if s.get('links') else (0, '-')
    print(f"  KV transfers        {t['count']:,}, {t['bytes'] / 1e12:.1f} TB, latency p50 {t['latency_ms']['p50']:.2f} ms, "
          f"p99 {t['latency_ms']['p99']:.2f} ms; busiest link {busiest[1]} at {busiest[0]:.3f}")
if 'failures' in s:
    f = s['failures']
    print(f"  failures            {f['events']} failure events, {f['requests_failed']} requests failed, "
          f"{f['requests_retried']} retried, availability {s['availability']['requests']:.6f} of requests, "
          f"{s['availability']['capacity']:.6f} of capacity")
PY
}

bench bench-1m "bench-1m (1,000,000 requests, 64 x Llama-3.1-8B on H100, one core)" 10
# The same with llm-d's weighted scorers, which read scraped metrics every
# 50 ms and score every replica per request (target: within 1.5x of the
# round robin's wall time above).
bench bench-1m "bench-1m with weighted_scorers (llm-d endpoint picker)" 15 --set fleet.router=weighted_scorers
# A week of a 1,000-replica fleet at low load (0.02 req/s per replica) with
# GPUs failing at Llama 3's rate: the decode spans' case, where nearly every
# iteration decodes one sequence alone (sim/cluster/replica.h).
bench bench-fleet-week "bench-fleet-week (604,800 s at 20 req/s, 1,000 x Llama-3.1-8B on H100, one core)" 60
# A 1,000-GPU disaggregated fleet: Llama-3.1-70B on H100, 100 TP4 prefill
# replicas handing each prompt's KV over the network to 150 TP4 decode
# replicas, for an hour of the Azure conversation trace tiled to 500 req/s
# (tools/tile_trace.py: 1.8M requests, every one a KV transfer of 4 flows).
python3 tools/tile_trace.py scenarios/traces/azure_conv_2023.csv "$out/azure-conv-500.csv" 500 >/dev/null
cat > "$out/bench-disagg-1000.json" <<'JSON'
{
  "name": "bench-disagg-1000",
  "description": "Speed benchmark: 1,000 H100 GPUs serving Llama-3.1-70B disaggregated (100 TP4 prefill, 150 TP4 decode replicas), an hour of the Azure conversation trace tiled to 500 req/s.",
  "seed": 1,
  "model": "Llama-3.1-70B",
  "fleet": {
    "router": "least_outstanding",
    "disaggregation": { "decode_pick": "least_outstanding" },
    "pools": [
      { "name": "prefill", "gpu": "H100-SXM", "replicas": 100, "tp": 4, "role": "prefill" },
      { "name": "decode", "gpu": "H100-SXM", "replicas": 150, "tp": 4, "role": "decode" }
    ]
  },
  "traffic": { "trace": { "format": "csv", "path": "azure-conv-500.csv" } },
  "slo": { "ttft_ms": 2000, "tpot_ms": 100 }
}
JSON
bench "$out/bench-disagg-1000.json" "bench-disagg-1000 (3,600 s at 500 req/s, 1,000 H100: 100 TP4 prefill + 150 TP4 decode x Llama-3.1-70B, one core)" 60
# A simulated day of 2M requests on a pool a Kubernetes HPA scales between 2
# and 12 replicas (docs/autoscaling.md).
bench diurnal-autoscale "diurnal-autoscale (86,400 s, 1,998,893 requests, HPA over 2-12 x Llama-3.1-8B on H100, one core)" 10

# The same traffic with a profile-based PerfModel against the roofline: the
# shipped Vidur profile is Llama-2-7B on H100, so both runs of this pair
# serve Llama-2-7B (requests beyond its 4096-token context are rejected
# alike). Target: profile wall time within 1.5x of the roofline's.
python3 - "$out" "$PWD" <<'PY'
import json, sys
out, root = sys.argv[1], sys.argv[2]
s = json.load(open(f"{root}/scenarios/bench-1m.json"))
s["model"] = "Llama-2-7B"
s["traffic"]["generator"]["lengths_csv"] = f"{root}/scenarios/traces/sharegpt_lengths.csv"
json.dump(s, open(f"{out}/roofline.json", "w"))
s["perf"] = {"profile": f"{root}/scenarios/profiles/vidur-h100-llama2-7b.json"}
json.dump(s, open(f"{out}/profile.json", "w"))
PY
for variant in roofline profile; do
  cmd=("./$build/fleetsim" run "$out/$variant.json" --out "$out/$variant" --quiet)
  if command -v taskset >/dev/null; then cmd=(taskset -c 0 "${cmd[@]}"); fi
  "${cmd[@]}"
done
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/roofline/run.json"))["wall_s"]
p = json.load(open(f"{d}/profile/run.json"))["wall_s"]
src = json.load(open(f"{d}/profile/summary.json"))["perf_sources"]
print("bench-1m traffic on Llama-2-7B / H100: roofline vs the Vidur profile")
print(f"  roofline            {r:.2f} s")
print(f"  profile             {p:.2f} s   ({p / r:.2f}x; target <= 1.5x; gemm from {src['gemm']})")
PY
