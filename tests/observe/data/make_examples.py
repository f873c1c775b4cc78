#!/usr/bin/env python3
"""Writes the example files of tests/observe/data (see README.md there).

Every file describes the same five requests (one of them failed) as each
client would have saved them, in that client's own layout, so the readers'
tests can check one set of expected values. Run from this folder:
    python3 make_examples.py
Standard library only; the output is deterministic.
"""
import json

# (start offset s, prompt tokens, output tokens, TTFT s, gaps between chunks s)
# None for a failed request (the server dropped the connection).
REQUESTS = [
    (0.000, 128, 4, 0.050, [0.010, 0.011, 0.012]),
    (0.250, 256, 3, 0.060, [0.012, 0.013]),
    (0.500, 64, 5, 0.040, [0.009, 0.010, 0.011, 0.010]),
    (0.750, 512, None, None, None),
    (1.000, 200, 2, 0.055, [0.020]),
]
OK = [r for r in REQUESTS if r[2] is not None]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
DISCONNECT = ("Traceback (most recent call last):\n  File \"endpoint_request_func.py\", line 250, in "
              "async_request_openai_completions\naiohttp.client_exceptions.ServerDisconnectedError: "
              "Server disconnected\n")


def latency(r):
    return r[3] + sum(r[4])


def percentile(values, p):  # numpy's default (linear)
    v = sorted(values)
    pos = p / 100 * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def mean(values):
    return sum(values) / len(values)


TTFTS = [r[3] for r in OK]
TPOTS = [(latency(r) - r[3]) / (r[2] - 1) for r in OK if r[2] > 1]
ITLS = [g for r in OK for g in r[4]]
E2ES = [latency(r) for r in OK]
DURATION = max(r[0] + latency(r) for r in OK)


def vllm(detailed):
    """vllm/benchmarks/serve.py main_async(): result_json as json.dump writes it."""
    base = 8123.456789  # time.perf_counter() when the first request was sent
    res = {
        "date": "20250612-101500", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": MODEL, "tokenizer_id": MODEL, "num_prompts": 5,
    }
    if detailed:
        res.update({"request_rate": 4.0, "burstiness": 1.0, "max_concurrency": None})
    else:
        res.update({"request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8})
    res.update({
        "duration": DURATION, "completed": len(OK), "failed": 1,
        "total_input_tokens": sum(r[1] for r in OK), "total_output_tokens": sum(r[2] for r in OK),
        "request_throughput": len(OK) / DURATION, "request_goodput": None,
        "output_throughput": sum(r[2] for r in OK) / DURATION,
        "total_token_throughput": sum(r[1] + r[2] for r in OK) / DURATION,
        "input_lens": [r[1] for r in REQUESTS],
        "output_lens": [r[2] or 0 for r in REQUESTS],
        "ttfts": [r[3] or 0.0 for r in REQUESTS],
        "itls": [r[4] or [] for r in REQUESTS],
        "latencies": [latency(r) if r[2] else 0.0 for r in REQUESTS],
        "start_times": [base + r[0] for r in REQUESTS],
        "queue_times": [0.0 for r in REQUESTS],
        "generated_texts": [" The" * r[2] if r[2] else "" for r in REQUESTS],
        "errors": ["" if r[2] else DISCONNECT for r in REQUESTS],
        "max_output_tokens_per_s": 14.0, "max_concurrent_requests": 1, "rtfx": 0.0,
    })
    for name, values in (("ttft", TTFTS), ("tpot", TPOTS), ("itl", ITLS)):
        res[f"mean_{name}_ms"] = mean(values) * 1000
        res[f"median_{name}_ms"] = percentile(values, 50) * 1000
        res[f"std_{name}_ms"] = 0.0
        res[f"p99_{name}_ms"] = percentile(values, 99) * 1000
    if not detailed:  # the fields --save-detailed keeps
        for field in ["input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"]:
            del res[field]
    return json.dumps(res)


def aiperf():
    """AIPerf's MetricRecordInfo.model_dump_json(), one a line, in completion order."""
    epoch = 1759813207532900363
    lines = []
    order = sorted(range(len(REQUESTS)), key=lambda i: REQUESTS[i][0] + (latency(REQUESTS[i]) if REQUESTS[i][2] else 0.003))
    for i in order:
        r = REQUESTS[i]
        start = epoch + round(r[0] * 1e9)
        meta = {"session_num": i, "x_request_id": f"7609a2e7-aa53-4ab1-98f4-f35ecafefd2{i}",
                "x_correlation_id": f"32ee4f33-cfca-4cfc-988f-79b45408b90{i}",
                "conversation_id": f"77aa5b0e-b305-423f-88d5-c00da189259{i}", "turn_index": 0,
                "request_start_ns": start}
        if r[2] is None:
            meta.update({"request_ack_ns": None, "request_end_ns": start + 3000000, "worker_id": "worker_359d423a",
                         "record_processor_id": "record_processor_1fa47cd7", "benchmark_phase": "profiling",
                         "was_cancelled": False, "cancellation_time_ns": None})
            rec = {"metadata": meta, "metrics": {"error_isl": {"value": r[1], "unit": "tokens"}},
                   "error": {"code": 502, "type": "Bad Gateway", "message": "Server disconnected"}}
        else:
            lat = latency(r)
            meta.update({"request_ack_ns": start + 2000000, "request_end_ns": start + round(lat * 1e9),
                         "worker_id": "worker_359d423a", "record_processor_id": "record_processor_1fa47cd7",
                         "benchmark_phase": "profiling", "was_cancelled": False, "cancellation_time_ns": None})
            tpot = (lat - r[3]) / (r[2] - 1)
            metrics = {
                "input_sequence_length": {"value": r[1], "unit": "tokens"},
                "time_to_first_token": {"value": r[3] * 1e3, "unit": "ms"},
                "request_latency": {"value": lat * 1e3, "unit": "ms"},
                "output_token_count": {"value": r[2], "unit": "tokens"},
                "time_to_second_token": {"value": r[4][0] * 1e3, "unit": "ms"},
                "inter_chunk_latency": {"value": [g * 1e3 for g in r[4]], "unit": "ms"},
                "output_sequence_length": {"value": r[2], "unit": "tokens"},
                "inter_token_latency": {"value": tpot * 1e3, "unit": "ms"},
                "output_token_throughput_per_user": {"value": 1 / tpot, "unit": "tokens/sec/user"},
            }
            rec = {"metadata": meta, "metrics": metrics, "error": None}
        lines.append(json.dumps(rec, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def stats(unit, values, scale):
    v = [x * scale for x in values]
    out = {"unit": unit, "avg": mean(v)}
    for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        out[f"p{p}"] = percentile(v, p)
    out.update({"min": min(v), "max": max(v), "std": 0.0})
    return out


def aiperf_summary():
    """AIPerf's JsonExportData.model_dump_json(indent=2, exclude_unset=True)."""
    doc = {
        "request_throughput": {"unit": "requests/sec", "avg": len(OK) / DURATION},
        "request_latency": stats("ms", E2ES, 1e3),
        "request_count": {"unit": "requests", "avg": len(OK)},
        "time_to_first_token": stats("ms", TTFTS, 1e3),
        "inter_token_latency": stats("ms", TPOTS, 1e3),
        "output_token_throughput": {"unit": "tokens/sec", "avg": sum(r[2] for r in OK) / DURATION},
        "inter_chunk_latency": stats("ms", ITLS, 1e3),
        "benchmark_duration": {"unit": "sec", "avg": DURATION},
        "error_request_count": {"unit": "requests", "avg": 1},
        "input_config": {
            "endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True, "url": "localhost:8000"},
            "loadgen": {"concurrency": 2, "request_count": 5},
            "cli_command": f"aiperf profile --model {MODEL} --url localhost:8000 --endpoint-type chat "
                           "--streaming --concurrency 2 --request-count 5",
        },
        "was_cancelled": False,
        "error_summary": [{"error_details": {"code": 502, "type": "Bad Gateway", "message": "Server disconnected"},
                           "count": 1}],
        "start_time": "2025-10-07T05:00:07.532900",
        "end_time": "2025-10-07T05:00:08.628900",
    }
    return json.dumps(doc, indent=2)


def genai_perf():
    """perf_analyzer's ProfileDataExporter (rapidjson Writer: compact), OpenAI chat, no usage."""
    epoch = 1749157168182700400
    reqs = []
    for i, r in enumerate(REQUESTS):
        start = epoch + round(r[0] * 1e9)
        payload = json.dumps({"messages": [{"role": "user", "content": "word " * (r[1] - 1)}], "model": MODEL,
                              "stream": True, "max_tokens": 8}, separators=(",", ":"))

        def chunk(delta):
            return "data: " + json.dumps({"id": f"chatcmpl-{i}", "object": "chat.completion.chunk",
                                          "created": 1749157168, "model": MODEL,
                                          "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                                         separators=(",", ":")) + "\n\n"
        if r[2] is None:
            stamps, outputs = [], []
        else:
            t = start + round(r[3] * 1e9)
            stamps = [t - 1000000]  # the role chunk, before the first token
            outputs = [{"response": chunk({"role": "assistant"})}]
            for k in range(r[2]):
                if k > 0:
                    t += round(r[4][k - 1] * 1e9)
                stamps.append(t)
                outputs.append({"response": chunk({"content": " The"})})
            stamps.append(t + 500000)
            outputs.append({"response": "data: [DONE]\n\n"})
        reqs.append({"timestamp": start, "request_inputs": {"payload": payload},
                     "response_timestamps": stamps, "response_outputs": outputs})
    doc = {"experiments": [{"experiment": {"mode": "request_rate", "value": 4.0}, "requests": reqs,
                            "window_boundaries": [epoch, epoch + round(DURATION * 1e9)]}],
           "version": "0.0.0", "service_kind": "openai", "endpoint": "v1/chat/completions"}
    return json.dumps(doc, separators=(",", ":"))


def genai_perf_summary():
    """GenAI-Perf's JsonExporter: json.dumps(stats + input_config, indent=2)."""
    doc = {
        "request_throughput": {"unit": "requests/sec", "avg": len(OK) / DURATION},
        "request_latency": stats("ms", E2ES, 1e3),
        "time_to_first_token": stats("ms", TTFTS, 1e3),
        "inter_token_latency": stats("ms", TPOTS, 1e3),
        "output_token_throughput": {"unit": "tokens/sec", "avg": sum(r[2] for r in OK) / DURATION},
        "output_sequence_length": stats("tokens", [r[2] for r in OK], 1),
        "input_sequence_length": stats("tokens", [r[1] for r in OK], 1),
        "input_config": {"model_names": [MODEL], "endpoint": {"type": "chat", "streaming": True},
                         "perf_analyzer": {"stimulus": {"request_rate": 4.0}}},
    }
    return json.dumps(doc, indent=2)


def distribution(values):
    v = sorted(values)
    return {"mean": mean(v), "median": percentile(v, 50), "mode": v[0], "variance": 0.0, "std_dev": 0.0,
            "min": v[0], "max": v[-1], "count": len(v), "total_sum": sum(v),
            "percentiles": {k: percentile(v, p) for k, p in
                            (("p001", 0.1), ("p01", 1), ("p05", 5), ("p10", 10), ("p25", 25), ("p50", 50),
                             ("p75", 75), ("p90", 90), ("p95", 95), ("p99", 99), ("p999", 99.9))},
            "pdf": None}


def status_distribution(values):
    empty = {"mean": 0.0, "median": 0.0, "mode": 0.0, "variance": 0.0, "std_dev": 0.0, "min": 0.0, "max": 0.0,
             "count": 0, "total_sum": 0.0, "percentiles": {k: 0.0 for k in (
                 "p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999")}, "pdf": None}
    return {"successful": distribution(values), "incomplete": empty, "errored": empty,
            "total": distribution(values)}


def guidellm_request(i, r, epoch):
    """GenerativeRequestStats.model_dump() (0.4 to 0.7), computed fields included."""
    start = epoch + r[0]
    ok = r[2] is not None
    lat = latency(r) if ok else None
    end = start + (lat if ok else 0.003)
    timings = {"targeted_start": start, "queued": start - 0.0005, "dequeued": start - 0.0003,
               "scheduled_at": start - 0.0002, "resolve_start": start - 0.0001, "request_start": start,
               "first_request_iteration": start + (r[3] if ok else 0), "first_token_iteration":
               start + r[3] if ok else None, "last_token_iteration": end if ok else None,
               "last_request_iteration": end if ok else None, "request_iterations": r[2] if ok else 0,
               "token_iterations": r[2] if ok else 0, "request_end": end, "resolve_end": end + 0.0001,
               "finalized": end + 0.0002}
    out = {
        "type_": "generative_request_stats", "request_id": f"73054dd1-486f-4894-a861-075750b8245{i}",
        "response_id": f"chatcmpl-{i}" if ok else None, "request_args": None, "output": None,
        "info": {"request_id": f"73054dd1-486f-4894-a861-075750b8245{i}", "conversation_id": None, "turn_index": 0,
                 "status": "completed" if ok else "errored", "scheduler_node_id": -1, "scheduler_process_id": 0,
                 "scheduler_start_time": epoch - 0.1, "timings": timings,
                 "error": None if ok else "Server disconnected", "traceback": None},
        "input_metrics": {"text_tokens": r[1], "text_words": r[1], "text_characters": 5 * r[1]},
        "output_metrics": {"text_tokens": r[2] if ok else None, "text_words": r[2] if ok else None,
                           "text_characters": 4 * r[2] if ok else None},
        "request_start_time": start, "request_end_time": end, "request_latency": lat if ok else end - start,
        "prompt_tokens": r[1], "output_tokens": r[2] if ok else None,
        "total_tokens": r[1] + (r[2] or 0),
        "time_to_first_token_ms": r[3] * 1e3 if ok else None,
        "time_per_output_token_ms": lat * 1e3 / r[2] if ok else None,
        "inter_token_latency_ms": (lat - r[3]) * 1e3 / (r[2] - 1) if ok and r[2] > 1 else None,
        "tokens_per_second": (r[1] + r[2]) / lat if ok else None,
        "output_tokens_per_second": r[2] / lat if ok else None,
        "output_tokens_per_iteration": 1.0 if ok else None, "iter_tokens_per_iteration": 1.0 if ok else None,
    }
    return out


def guidellm():
    """GenerativeBenchmarksReport.model_dump() through json.dumps (0.6): a synchronous and a
    constant-rate benchmark, each with the same five requests. Fields fleetsim does not read are
    abbreviated (scheduler_state, constraints, environment)."""
    benchmarks = []
    for index, strategy, epoch in ((0, {"type_": "synchronous", "worker_count": None, "max_concurrency": None},
                                    1749157168.1827004),
                                   (1, {"type_": "constant", "worker_count": None, "max_concurrency": None,
                                        "rate": 4.0, "rampup_duration": 0.0}, 1749157200.0)):
        reqs = [guidellm_request(i, r, epoch) for i, r in enumerate(REQUESTS)]
        benchmarks.append({
            "type_": "generative_benchmark", "id_": f"97ece514-8717-412f-9dba-2b42bcd9866{index}",
            "run_id": "93e36b31-b454-471d-ba62-6b2671585485", "run_index": index,
            "config": {"id_": f"97ece514-8717-412f-9dba-2b42bcd9866{index}",
                       "run_id": "93e36b31-b454-471d-ba62-6b2671585485", "run_index": index,
                       "strategy": strategy, "constraints": {"max_requests": {"max_num": 5}},
                       "sample_requests": None,
                       "warmup": {"percent": None, "value": None, "mode": "prefer_duration"},
                       "cooldown": {"percent": None, "value": None, "mode": "prefer_duration"},
                       "prefer_response_metrics": True,
                       "profile": {"type_": "sweep", "sweep_size": 2},
                       "requests": {"data": ["prompt_tokens=256,output_tokens=128"]},
                       "backend": {"type_": "openai_http", "target": "http://localhost:8000", "model": MODEL},
                       "environment": {"type_": "non_distributed"}},
            "scheduler_state": {"node_id": 0, "num_processes": 1, "start_time": epoch - 0.2,
                                "created_requests": 5, "processed_requests": 5, "successful_requests": 4,
                                "errored_requests": 1, "cancelled_requests": 0},
            "scheduler_metrics": {"start_time": epoch - 0.2, "request_start_time": epoch,
                                  "measure_start_time": epoch, "measure_end_time": epoch + DURATION,
                                  "request_end_time": epoch + DURATION, "end_time": epoch + DURATION + 0.01,
                                  "requests_made": {"successful": 4, "errored": 1, "incomplete": 0, "total": 5}},
            "metrics": {
                "request_totals": {"successful": 4, "errored": 1, "incomplete": 0, "total": 5},
                "requests_per_second": status_distribution([len(OK) / DURATION]),
                "request_concurrency": status_distribution([1.0]),
                "request_latency": status_distribution(E2ES),
                "prompt_token_count": status_distribution([r[1] for r in OK]),
                "output_token_count": status_distribution([r[2] for r in OK]),
                "time_to_first_token_ms": status_distribution([x * 1e3 for x in TTFTS]),
                "time_per_output_token_ms": status_distribution([latency(r) * 1e3 / r[2] for r in OK]),
                "inter_token_latency_ms": status_distribution([x * 1e3 for x in TPOTS]),
                "output_tokens_per_second": status_distribution([sum(r[2] for r in OK) / DURATION]),
            },
            "requests": {"successful": [q for q, r in zip(reqs, REQUESTS) if r[2] is not None],
                         "incomplete": [],
                         "errored": [q for q, r in zip(reqs, REQUESTS) if r[2] is None],
                         "total": None},
            "start_time": epoch, "end_time": epoch + DURATION, "duration": DURATION,
            "warmup_duration": 0.0, "cooldown_duration": 0.0,
        })
    report = {"metadata": {"version": 1, "guidellm_version": "0.6.0", "python_version": "3.12.3",
                           "platform": "Linux-6.8.0-x86_64-with-glibc2.39"},
              "args": {"target": "http://localhost:8000", "backend": "openai_http", "model": MODEL,
                       "profile": "sweep", "rate": 2, "data": ["prompt_tokens=256,output_tokens=128"],
                       "outputs": ["json"], "sample_requests": None},
              "benchmarks": benchmarks}
    return json.dumps(report)


def guidellm_v03_sampled():
    """GenerativeBenchmarksReport of 0.3 through json.dumps, saved with --output-sampling 2:
    request_totals counts 46 successful requests, requests.successful keeps 2."""
    epoch = 1749157168.1827004
    reqs = []
    for i, r in enumerate(OK[:2]):
        start = epoch + r[0]
        lat = latency(r)
        reqs.append({"type_": "generative_text_response", "request_id": f"73054dd1-486f-4894-a861-07575{i}",
                     "request_type": "text_completions",
                     "scheduler_info": {"requested": True, "completed": True, "errored": False, "canceled": False,
                                        "request_start": start, "request_end": start + lat, "process_id": 0},
                     "prompt": "such a sacrifice", "output": " The" * r[2], "prompt_tokens": r[1],
                     "output_tokens": r[2], "start_time": start, "end_time": start + lat,
                     "first_token_time": start + r[3], "last_token_time": start + lat, "request_latency": lat,
                     "time_to_first_token_ms": r[3] * 1e3,
                     "time_per_output_token_ms": lat * 1e3 / r[2],
                     "inter_token_latency_ms": (lat - r[3]) * 1e3 / (r[2] - 1),
                     "tokens_per_second": (r[1] + r[2]) / lat, "output_tokens_per_second": r[2] / lat})
    bench = {"type_": "generative_benchmark", "id_": "97ece514-8717-412f-9dba-2b42bcd9866f",
             "run_id": "93e36b31-b454-471d-ba62-6b2671585485",
             "args": {"profile": {"type_": "concurrent", "streams": [8]}, "strategy_index": 0,
                      "strategy": {"type_": "concurrent", "streams": 8}, "max_number": None, "max_duration": 30.0},
             "run_stats": {"start_time": epoch - 0.1, "end_time": epoch + 30.0,
                           "requests_made": {"successful": 46, "errored": 0, "incomplete": 1, "total": 47}},
             "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                        "backend_target": "http://localhost:8000", "backend_model": MODEL},
             "request_loader": {"type_": "generative_request_loader", "data": "prompt_tokens=256,output_tokens=128"},
             "extras": {},
             "metrics": {"time_to_first_token_ms": status_distribution([x * 1e3 for x in TTFTS]),
                         "inter_token_latency_ms": status_distribution([x * 1e3 for x in TPOTS]),
                         "request_latency": status_distribution(E2ES)},
             "start_time": epoch, "end_time": epoch + 29.997201442718506,
             "request_totals": {"successful": 46, "errored": 0, "incomplete": 1, "total": 47},
             "request_samples": {"successful": 2, "errored": 0, "incomplete": 1, "total": None},
             "requests": {"successful": reqs, "errored": [], "incomplete": [], "total": None},
             "duration": 29.997201442718506}
    return json.dumps({"benchmarks": [bench]})


def csv():
    rows = ["start_s,input_tokens,output_tokens,ttft_s,e2e_s,itl_s"]
    for r in REQUESTS:
        if r[2] is None:
            rows.append(f"{r[0]:.3f},{r[1]},0,,,")
        else:
            rows.append(f"{r[0]:.3f},{r[1]},{r[2]},{r[3]:.3f},{latency(r):.3f},{';'.join(f'{g:.3f}' for g in r[4])}")
    return "\n".join(rows) + "\n"


FILES = {
    "vllm_detailed.json": vllm(True),
    "vllm_summary.json": vllm(False),
    "aiperf/profile_export.jsonl": aiperf(),
    "aiperf/profile_export_aiperf.json": aiperf_summary(),
    "genai_perf/profile_export.json": genai_perf(),
    "genai_perf/profile_export_genai_perf.json": genai_perf_summary(),
    "guidellm/benchmarks.json": guidellm(),
    "guidellm/benchmarks_v03_sampled.json": guidellm_v03_sampled(),
    "requests.csv": csv(),
}

if __name__ == "__main__":
    for name, text in FILES.items():
        with open(name, "w") as f:
            f.write(text)
