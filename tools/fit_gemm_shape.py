#!/usr/bin/env python3
"""Fits the roofline's shape-dependent GEMM time to measured GEMMs.

Usage:
  tools/fit_gemm_shape.py --gpu H100-SXM --train A.csv B.csv ... --held-out C.csv D.csv
  tools/fit_gemm_shape.py --gpu H200 --train H.json --held-out-n 2048 14336

Each CSV is a Vidur compute profile (microsoft/vidur, data/profiling/compute/
<gpu>/<model>/mlp.csv): one row per (num_tokens, num_tensor_parallel_workers)
with the median time of the four GEMMs of a layer on one tensor-parallel
worker (attn_pre_proj, attn_post_proj, mlp_up_proj, mlp_down_proj), in ms,
and the model's dimensions. For a GEMM of M tokens, N outputs and K inputs
per worker (16-bit operands) the model is (model/roofline.h):
A .json file is what `fleetsim calibrate gemm --json` writes (the
calibration harness's median time per M x N x K shape, cache flushed before
each run); its shapes are split by --held-out-n (the shapes with that N or
K are held out) rather than by file.

  compute = 2 M N K / (peak x ce x MN / (MN + half))
  memory  = 2 (N K + M (N + K)) / (bandwidth x me)
  time    = max(compute, memory) + overlap x min(compute, memory) + kernel

The five parameters (ce, me, overlap, kernel in us, half in output elements)
are fitted by Nelder-Mead on the squared log error over the training files,
and the errors are reported per file and tp for the training and held-out
files. Peak and bandwidth are the catalogue's (model/hardware/<gpu>.json).
Standard library only; deterministic.
"""
import argparse
import csv
import json
import math
import os
import sys

from nelder_mead import nelder_mead

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_rows(path):
    """(m, n, k, tp, measured ns) for every GEMM of every row."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            h, g = int(r["n_head"]), int(r["n_kv_head"])
            d, e = int(r["n_embd"]), int(r["n_expanded_embd"])
            tp, m = int(r["num_tensor_parallel_workers"]), int(r["num_tokens"])
            gated = r.get("use_gated_mlp", "True") == "True"
            hd = d // h
            shapes = {
                "attn_pre_proj": ((h + 2 * g) * hd // tp, d),
                "attn_post_proj": (d, h * hd // tp),
                "mlp_up_proj": ((2 if gated else 1) * e // tp, d),
                "mlp_down_proj": (d, e // tp),
            }
            for op, (n, k) in shapes.items():
                out.append((m, n, k, tp, float(r["time_stats.%s.median" % op]) * 1e6))
    return out


def read_json(path):
    """(m, n, k, tp, measured ns) for every shape of a calibrate gemm JSON; tp
    is not in the file: 0."""
    with open(path) as f:
        doc = json.load(f)
    return [(int(r["m"]), int(r["n"]), int(r["k"]), 0, float(r["median_ns"])) for r in doc["results"]]


def read_any(path):
    return read_json(path) if path.endswith(".json") else read_rows(path)


def predict(p, row, peak, bw):
    ce, me, overlap, kernel_us, half = p
    m, n, k = row[0], row[1], row[2]
    compute = 2.0 * m * n * k / (peak * ce * (m * n) / (m * n + half))
    memory = 2.0 * (n * k + m * (n + k)) / (bw * me)
    return max(compute, memory) + overlap * min(compute, memory) + kernel_us * 1e3


def loss(p, rows, peak, bw):
    ce, me, overlap, kernel_us, half = p
    if not (0.05 < ce <= 1 and 0.05 < me <= 1 and 0 <= overlap <= 1 and 0 <= kernel_us <= 50 and 0 <= half <= 1e8):
        return 1e9
    return sum(math.log(predict(p, r, peak, bw) / r[4]) ** 2 for r in rows) / len(rows)




def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def report(name, rows, p, peak, bw):
    errs = [predict(p, r, peak, bw) / r[4] - 1 for r in rows]
    line = "  %-58s median |err| %5.1f%%  p90 %5.1f%%  bias %+5.1f%%  by tp:" % (
        name, 100 * median([abs(e) for e in errs]), 100 * sorted(abs(e) for e in errs)[int(0.9 * len(errs))],
        100 * median(errs))
    for tp in sorted({r[3] for r in rows}):
        sel = [e for e, r in zip(errs, rows) if r[3] == tp]
        line += " %d: %.1f%% (%+.1f%%)" % (tp, 100 * median([abs(e) for e in sel]), 100 * median(sel))
    print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", required=True, help="hardware catalogue name, e.g. H100-SXM")
    ap.add_argument("--train", nargs="+", required=True)
    ap.add_argument("--held-out", nargs="*", default=[])
    ap.add_argument("--held-out-n", nargs="*", type=int, default=[],
                    help="JSON input: hold out the shapes whose N or K is one of these")
    args = ap.parse_args()
    with open(os.path.join(ROOT, "model", "hardware", args.gpu + ".json")) as f:
        gpu = json.load(f)
    peak = gpu["bf16_tflops"] * 1e3  # FLOP per ns
    bw = gpu["mem_bandwidth_gbps"]   # bytes per ns
    train = [r for path in args.train for r in read_any(path)]
    held = {}
    if args.held_out_n:
        # Shapes whose N or K is one of these go to the held-out set.
        keep = []
        for r in train:
            (held.setdefault("shapes with N or K in %s" % args.held_out_n, []) if (r[1] in args.held_out_n or r[2] in args.held_out_n) else keep).append(r)
        train = keep
    # Every 4th GEMM keeps the fit quick; the same for every run.
    sample = train[::4]
    f = lambda p: loss(p, sample, peak, bw)
    p = nelder_mead(f, [0.8, 0.85, 0.5, 3.0, 1e5], [0.1, 0.1, 0.2, 1.0, 5e4], 800)
    p = nelder_mead(f, p, [0.05, 0.05, 0.1, 0.5, 2e4], 800)
    print("%s: compute_efficiency %.4f  memory_efficiency %.4f  overlap %.4f  kernel_us %.3f  "
          "half_output_elements %.0f" % (args.gpu, p[0], p[1], p[2], p[3], p[4]))
    print("fitted (train):")
    if held:
        report("train shapes", train, p, peak, bw)
    else:
        for path in args.train:
            report(os.path.relpath(path), read_any(path), p, peak, bw)
    if args.held_out or held:
        print("held out:")
        for path in args.held_out:
            report(os.path.relpath(path), read_any(path), p, peak, bw)
        for name, rows in held.items():
            report(name, rows, p, peak, bw)
    gs = gpu.get("gemm_shape")
    if gs:
        cur = [gs["compute_efficiency"], gs["memory_efficiency"], gs["overlap"], gs["kernel_us"],
               gs["half_output_elements"]]
        print("the catalogue's gemm_shape for %s today, same shapes:" % args.gpu)
        for path in args.train + args.held_out:
            report(os.path.relpath(path), read_any(path), cur, peak, bw)
    print("constant efficiencies (0.80 compute, 0.85 memory, 2 us launch), same files:")
    base = [0.8, 0.85, 0.0, 2.0, 0.0]
    for path in args.train + args.held_out:
        report(os.path.relpath(path), read_any(path), base, peak, bw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
