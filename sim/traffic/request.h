// Request: one inference request as the cluster sees it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/time.h"

namespace fleetsim {

struct Request {
  uint64_t id = 0;            // dense, in arrival order, assigned by the source
  SimTime arrival = 0;        // ns since the start of the run
  int32_t prompt_tokens = 0;  // > 0
  int32_t output_tokens = 0;  // > 0
  int32_t priority = 0;       // priority class; lower is more important
  int64_t session_id = -1;    // -1: none
  std::string model;          // empty: the scenario's default model
  // Prompt prefix blocks (Mooncake hash ids), chained: two requests share a
  // prefix exactly as long as their leading common ids. Empty: unknown.
  std::vector<uint64_t> prefix_blocks;
  int32_t prefix_block_tokens = 0;  // tokens per prefix block id (Mooncake: 512)
  // Set by a replica that cut the prompt (and if need be the output) to its
  // max_model_len (pools with over_max_model_len "truncate").
  bool truncated = false;
  // Times this request was sent again after a replica failed under it (0:
  // the client's first try). Arrivals are counted at the first try only.
  int32_t attempt = 0;
  // Counted already: it arrived while no replica of its model was ready and
  // waited in the cluster's activator queue (sim/cluster/cluster.h).
  bool arrival_reported = false;
  // Who sent it and from where (a trace column or the traffic mix; empty:
  // none, and the first client location).
  std::string tenant;
  std::string location;
  // Set by the front door (sim/cluster/gateway.h) before the cluster routes
  // it; -1 where that does not apply.
  int32_t tenant_id = -1;  // index among the scenario's tenants
  int32_t model_id = -1;   // index among the fleet's models (Cluster::ModelId)
  int32_t region = -1;     // the region it was sent to
  int32_t target = -1;     // a route target (Cluster::AddTarget): only its pools serve it
  uint8_t degraded = 0;    // why it was served degraded (a DegradeReason; 0: not)
  // Dropped by the replica if it is still waiting, not yet scheduled, at
  // this time (a class's queue timeout); kTimeNever: no limit.
  SimTime queue_deadline = kTimeNever;
  // Disaggregated serving (sim/cluster/cluster.h):
  //   on a prefill replica, disagg_output > 0 is the output the decode side
  //   will produce (the request runs there with output_tokens = 1);
  //   on a decode replica, kv_imported prompt tokens arrive in KV (moved
  //   from the prefill side, not computed again), streamed_first_token is
  //   when the client got its first token from the prefill side (-1: the
  //   decode side streams it), prefill_scheduled when the prefill side first
  //   scheduled it, and carried the tokens of prompt and output already
  //   produced there (1 when the first token was streamed: it is counted in
  //   prompt_tokens here and belongs to the output).
  int32_t disagg_output = 0;
  int32_t kv_imported = 0;
  int32_t carried = 0;
  SimTime streamed_first_token = -1;
  SimTime prefill_scheduled = -1;
  // Speculative decoding (sim/cluster/speculation.h): on a replica that
  // speculates, the output the client gets, output_tokens then being 1 +
  // the decode steps that emit it; 0 elsewhere.
  int32_t spec_output = 0;
};

}  // namespace fleetsim
