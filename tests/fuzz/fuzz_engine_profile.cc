// libFuzzer target: an engine profile (fleet.pools[].engine names a user's
// file) must answer any input with a Status, and what it accepts must
// resolve for any pool to finite, non-negative terms or to an error that
// says which term has no entry.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/catalog.h"
#include "model/engine_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::EngineProfile p;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fleetsim::Status s = fleetsim::ParseEngineProfile(text, "fuzz.json", &p);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();  // every error says what is wrong
    return 0;
  }
  for (const char* gpu : {"H100-SXM", "A100-80G", "cpu-host"}) {
    for (int tp : {1, 2, 8}) {
      fleetsim::EngineSpec e;
      fleetsim::Status r = fleetsim::ResolveEngine(p, gpu, "Llama-3.1-8B", tp, &e);
      if (!r.ok()) {
        if (r.message().find("terms.") == std::string::npos) __builtin_trap();
        continue;
      }
      for (double v : {e.cpu_overhead_fixed_us, e.cpu_overhead_per_seq_us, e.cpu_per_prefill_token_us,
                       e.cpu_per_decode_token_us, e.tp_step_cpu_us, e.eager_launch_us, e.custom_all_reduce_latency_us,
                       e.server_request_us, e.server_prompt_token_us, e.server_output_token_us})
        if (!std::isfinite(v) || v < 0 || v > 1e6) __builtin_trap();
      for (int64_t tokens : {int64_t{1}, int64_t{100}, int64_t{1} << 40}) (void)e.GraphSize(tokens, true);
    }
  }
  return 0;
}
