#!/usr/bin/env python3
"""Fits the roofline's prefill attention time as a function of its work.

Usage:
  tools/fit_attention_shape.py --gpu H200 --data ATTENTION.json [--held-out-heads 16]

ATTENTION.json holds measured attention kernels, one row per shape: kind
("prefill" rows are used), b (sequences), q_len (each a whole causal prompt,
kv_len = q_len), hq (query heads on the GPU), d (head_dim), median_ns
(tests/fidelity/data/README.md says how the bundled file was measured). For
W = query-key pairs x query heads and FLOPs = 4 x d x W, the model is
(model/roofline.h, AttentionShapeFit):

  time = kernel + FLOPs / (peak x e) x (1 + (half / W)^exponent)

The four parameters are fitted by Nelder-Mead on the squared log error over
the rows not held out (--held-out-heads: rows with that many query heads),
and the errors are printed for both, and for the constant roofline (0.60 of
peak, 2 us per kernel). Peak is the catalogue's (model/hardware/<gpu>.json).
Standard library only; deterministic.
"""
import argparse
import json
import math
import os
import statistics
import sys

from nelder_mead import nelder_mead

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pairs(r):
    c = r["q_len"]
    return r["b"] * c * (c + 1) / 2


def predict(p, r, peak):
    e, kernel_us, log_half, a = p
    w = pairs(r) * r["hq"]
    flops = 4 * r["d"] * w
    return kernel_us * 1e3 + flops / (peak * e) * (1 + (math.exp(log_half) / w) ** a)


def constant(r, peak):
    return 2e3 + 4 * r["d"] * pairs(r) * r["hq"] / (peak * 0.60)


def loss(p, rows, peak):
    e, kernel_us, log_half, a = p
    # e at most 0.8: the asymptote of unbounded work, beyond the measured
    # shapes; FlashAttention-3 reports at most about 75% of an H100's peak.
    if not (0.05 < e <= 0.8 and 0 <= kernel_us < 100 and 0 < log_half < 35 and 0.05 < a < 4):
        return 1e9
    return sum(math.log(predict(p, r, peak) / r["median_ns"]) ** 2 for r in rows) / len(rows)




def report(name, errs):
    if not errs:
        return
    print("  %-40s median |err| %5.1f%%  max %5.1f%%  bias %+5.1f%%  (%d shapes)" % (
        name, 100 * statistics.median(abs(e) for e in errs), 100 * max(abs(e) for e in errs),
        100 * statistics.median(errs), len(errs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--held-out-heads", type=int, nargs="*", default=[])
    args = ap.parse_args()
    with open(os.path.join(ROOT, "model", "hardware", args.gpu + ".json")) as f:
        peak = json.load(f)["bf16_tflops"] * 1e3
    with open(args.data) as f:
        rows = [r for r in json.load(f)["results"] if r["kind"] == "prefill"]
    train = [r for r in rows if r["hq"] not in args.held_out_heads]
    held = [r for r in rows if r["hq"] in args.held_out_heads]
    f = lambda p: loss(p, train, peak)
    best = None
    for e in (0.6, 0.75):
        for log_half in (14.0, 17.0, 20.0):
            for a in (0.3, 1.0):
                p = nelder_mead(f, [e, 8.0, log_half, a], [0.05, 2.0, 1.0, 0.2], 3000)
                if best is None or f(p) < f(best):
                    best = p
    e, kernel_us, log_half, a = best
    print("%s: prefill_compute_efficiency %.4f  prefill_kernel_us %.3f  prefill_half_work %.4g  "
          "prefill_work_exponent %.4f" % (args.gpu, e, kernel_us, math.exp(log_half), a))
    report("fitted", [predict(best, r, peak) / r["median_ns"] - 1 for r in train])
    report("held out (query heads %s)" % args.held_out_heads, [predict(best, r, peak) / r["median_ns"] - 1 for r in held])
    report("constant 0.60 of peak, all rows", [constant(r, peak) / r["median_ns"] - 1 for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
