#!/usr/bin/env python3
"""Derives one day's aggregate arrival-rate profile from ServeGen's m-large
language clients.

Usage:
  tools/derive_servegen_day.py SRC_DIR [--day typical|N] [--scale F] [--out FILE] [--measure-cv]

SRC_DIR holds ServeGen's per-client traces (alibaba/ServeGen,
data/language/m-large/chunk-N-trace.csv: 162 clients, headerless rows
`window_start_s,rate,cv,arrival_dist,p1,p2`, 600 s windows over 14 days,
rate in requests per second). The script sums every client's arrivals per
window over one day (144 windows) and writes them as ONE client in the same
format, so fleetsim's ServeGen reader (sim/traffic/servegen_trace.h)
replays it:

  window_start_s,rate,1,Gamma,1,1/rate

window_start_s counts from the chosen day's start (0, 600, ..., 85800).
Counting: the reader turns a row into ceil(rate x 600) arrivals, a product
within 1e-9 (relative) of an integer counting as that integer (the
published rates are counts / 600). Each client's window count is taken by
that same rule (a row with an empty arrival_dist or rate 0 has none), the
counts are summed, and the aggregate rate is written as sum / 600 (Python's
shortest round-trip repr), so the reader finds exactly the summed count in
every window. A window no client uses would be written `start,0,0,,0,0`
(none in the published data).

Arrivals inside a window: Gamma with shape p1 = 1, i.e. Poisson (cv 1;
p2 = 1 / rate is the matching scale, which the reader ignores as it rescales
the gaps to fill the window). The superposition of many independent
clients' arrivals tends to a Poisson process (Palm-Khintchine). Measured
(--measure-cv: each client's arrivals drawn as the reader draws them, seed
1, the merged stream's gaps per window): on the chosen day (day 6) the
aggregate's inter-arrival cv is 1.06 to 1.94 across the 144 windows, median
1.23, while the rate-weighted mean of the clients' own cvs is 1.8 to 11;
a few bursty clients holding up to ~40 % of a window's requests keep it
slightly above 1. Poisson is therefore a mild understatement of the
burstiness within a window; the rate profile, which is what this file is
for, is exact.

Day (--day): `typical` (the default) picks the day whose hourly shape
(each hour's mean rate / the day's mean) correlates best with the median
shape of the other 13 days. The aggregate's shape varies a lot from day to
day (a few large clients dominate and burst); day 0, the first full day, is
the busiest (24.1 M requests) and has no night trough, while day 6
(trace seconds 518400..604800) correlates best (0.71; day 0: 0.66) and
shows the usual diurnal shape: a night trough, a morning rise and a
daytime plateau. The table is printed to stderr. `--day N` takes day N.

Scale (--scale F, default 1): each window's summed count is multiplied by F
and rounded, keeping the day 24 h long. Note that a scenario's
traffic.trace.rate_scale cannot do this: it divides arrival times (0.1
stretches the day to 10 days), it does not thin arrivals. For a day of at
most 2 M requests use --scale 0.1083 (the script prints the factor) and
another --out.

Prints the day's totals to stdout. Standard library only; deterministic.
"""
import argparse
import csv
import glob
import math
import os
import random
import re
import statistics
import sys

WINDOW_S = 600
DAY_WINDOWS = 144
DAY_S = WINDOW_S * DAY_WINDOWS


def window_count(rate):
    """Arrivals the fleetsim reader makes of `rate` over a 600 s window."""
    exact = rate * WINDOW_S
    nearest = round(exact)
    if abs(exact - nearest) <= 1e-9 * max(1.0, exact):
        return int(nearest)
    return math.ceil(exact)


def read_clients(src):
    files = glob.glob(os.path.join(src, "chunk-*-trace.csv"))
    if not files:
        sys.exit(f"{src}: no chunk-N-trace.csv files")

    def key(f):
        return int(re.search(r"chunk-(\d+)-trace\.csv$", f).group(1))

    clients = []
    for f in sorted(files, key=key):
        rows = []
        with open(f, newline="") as fh:
            for line_no, r in enumerate(csv.reader(fh), 1):
                if not r:
                    continue
                if len(r) != 6:
                    sys.exit(f"{f}:{line_no}: expected 6 columns, got {len(r)}")
                start = int(float(r[0]))
                if start % WINDOW_S:
                    sys.exit(f"{f}:{line_no}: window start {r[0]} is not a multiple of {WINDOW_S}")
                rate = float(r[1])
                dist = r[3]
                rows.append((start, rate, float(r[2]), dist, float(r[4])))
        clients.append((os.path.basename(f), rows))
    return clients


def counts_per_window(clients):
    total = {}
    for _, rows in clients:
        for start, rate, _, dist, _ in rows:
            n = window_count(rate) if dist and rate > 0 else 0
            total[start] = total.get(start, 0) + n
    return total


def corr(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return num / den if den else 0.0


def typical_day(total, days):
    shapes = []
    for d in range(days):
        hours = [sum(total.get(d * DAY_S + h * 3600 + k * WINDOW_S, 0) for k in range(6)) for h in range(24)]
        mean = statistics.fmean(hours)
        shapes.append([x / mean if mean else 0.0 for x in hours])
    best, best_r = 0, -2.0
    print("day  requests  corr-with-median-of-other-days", file=sys.stderr)
    for d in range(days):
        ref = [statistics.median(shapes[e][h] for e in range(days) if e != d) for h in range(24)]
        r = corr(shapes[d], ref)
        n = sum(total.get(d * DAY_S + i * WINDOW_S, 0) for i in range(DAY_WINDOWS))
        print(f"{d:3d} {n:10d}  {r:6.3f}", file=sys.stderr)
        if r > best_r:
            best, best_r = d, r
    return best


def measure_cv(clients, day, seed=1):
    """The merged stream's inter-arrival cv per window, each client's
    arrivals drawn as the fleetsim reader draws them (n + 1 gaps of
    Gamma/Weibull(shape p1), rescaled to fill the window, n kept)."""
    rng = random.Random(seed)
    out = []
    for i in range(DAY_WINDOWS):
        start = day * DAY_S + i * WINDOW_S
        times = []
        for _, rows in clients:
            for s, rate, _, dist, p1 in rows:
                if s != start or not dist or rate <= 0:
                    continue
                n = window_count(rate)
                if dist == "Gamma":
                    g = [rng.gammavariate(p1, 1.0) for _ in range(n + 1)]
                else:
                    g = [rng.weibullvariate(1.0, p1) for _ in range(n + 1)]
                scale = WINDOW_S / sum(g) if sum(g) > 0 else 0.0
                t = 0.0
                for x in g[:n]:
                    t += x * scale
                    times.append(t)
        times.sort()
        gaps = [b - a for a, b in zip(times, times[1:])]
        if len(gaps) > 1 and statistics.fmean(gaps) > 0:
            out.append(statistics.pstdev(gaps) / statistics.fmean(gaps))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", help="folder of ServeGen chunk-N-trace.csv files (data/language/m-large)")
    ap.add_argument("--day", default="typical", help="`typical` (default) or a day number (0 = trace seconds 0..86400)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply each window's count by this (rounded)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "scenarios", "traces", "servegen-m-large-day.csv"))
    ap.add_argument("--measure-cv", action="store_true", help="also report the aggregate's inter-arrival cv")
    args = ap.parse_args()

    clients = read_clients(args.src)
    total = counts_per_window(clients)
    last = max(total)
    days = (last + WINDOW_S) // DAY_S
    day = typical_day(total, days) if args.day == "typical" else int(args.day)
    if not 0 <= day < days:
        sys.exit(f"--day {day}: the trace has {days} full days")

    if not args.scale > 0:
        sys.exit("--scale: expected a number > 0")
    counts = [round(total.get(day * DAY_S + i * WINDOW_S, 0) * args.scale) for i in range(DAY_WINDOWS)]
    with open(args.out, "w", newline="") as fh:
        for i, n in enumerate(counts):
            start = i * WINDOW_S
            if n == 0:
                fh.write(f"{start},0,0,,0,0\n")
            else:
                rate = n / WINDOW_S
                fh.write(f"{start},{rate!r},1,Gamma,1,{1 / rate!r}\n")

    rates = [n / WINDOW_S for n in counts]
    peak = max(range(DAY_WINDOWS), key=lambda i: rates[i])
    trough = min(range(DAY_WINDOWS), key=lambda i: rates[i])
    req = sum(counts)
    print(f"clients: {len(clients)}; day {day} (trace seconds {day * DAY_S}..{(day + 1) * DAY_S})")
    print(f"wrote {args.out}: {DAY_WINDOWS} windows of {WINDOW_S} s")
    print(f"requests in the day: {req} (mean {req / DAY_S:.2f} req/s)")
    print(f"peak: {rates[peak]:.2f} req/s (window at {peak * WINDOW_S} s); "
          f"trough: {rates[trough]:.2f} req/s (window at {trough * WINDOW_S} s)")
    unscaled = sum(total.get(day * DAY_S + i * WINDOW_S, 0) for i in range(DAY_WINDOWS))
    print(f"--scale for at most 2,000,000 requests in the day: {math.floor(2_000_000 / unscaled * 1e4) / 1e4:.4f}")
    if args.measure_cv:
        cvs = measure_cv(clients, day)
        print(f"aggregate inter-arrival cv over {len(cvs)} windows: min {min(cvs):.2f}, "
              f"median {statistics.median(cvs):.2f}, max {max(cvs):.2f}")


if __name__ == "__main__":
    main()
