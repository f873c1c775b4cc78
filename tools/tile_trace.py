#!/usr/bin/env python3
"""Tiles an Azure LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens)
into one hour of fleetsim's csv trace format at a higher rate.

  tools/tile_trace.py AZURE.csv OUT.csv RATE_PER_S [SEED]

The trace's own span is stretched to an hour and laid down round(RATE * 3600
/ rows) times, each copy shifted by a uniform random offset and wrapped
around the hour, so the lengths and the burstiness within a copy are the
trace's while the copies' sum runs at about RATE. Deterministic in SEED
(default 1). Used by tools/bench.sh for the 1,000-GPU disaggregated fleet.
"""
import datetime
import random
import sys


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    src, dst, rate = sys.argv[1], sys.argv[2], float(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    hour = 3600.0
    rows = []
    with open(src) as f:
        header = next(f).strip()
        if header != "TIMESTAMP,ContextTokens,GeneratedTokens":
            sys.exit(f"{src}:1: not an Azure 2023 trace header: {header}")
        for n, line in enumerate(f, start=2):
            try:
                ts, p, o = line.strip().split(",")
                rows.append((datetime.datetime.fromisoformat(ts[:26]), int(p), int(o)))
            except ValueError as e:
                sys.exit(f"{src}:{n}: {e}")
    if len(rows) < 2:
        sys.exit(f"{src}: fewer than two rows")
    t0 = rows[0][0]
    base = [((t - t0).total_seconds(), p, o) for t, p, o in rows]
    span = max(t for t, _, _ in base) or 1.0
    copies = max(1, round(rate * hour / len(base)))
    rng = random.Random(seed)
    out = []
    for _ in range(copies):
        shift = rng.uniform(0, hour)
        out.extend(((t * hour / span + shift) % hour, p, o) for t, p, o in base)
    out.sort()
    tmp = dst + ".tmp"
    with open(tmp, "w") as f:
        f.write("arrival_s,prompt_tokens,output_tokens\n")
        f.writelines(f"{t:.6f},{p},{o}\n" for t, p, o in out)
    import os
    os.replace(tmp, dst)
    print(f"{dst}: {copies} copies, {len(out)} requests in {hour:.0f} s")


if __name__ == "__main__":
    main()
