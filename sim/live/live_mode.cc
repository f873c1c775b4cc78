#include "sim/live/live_mode.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "model/shard_dims.h"

namespace fleetsim::live {

LiveMode::~LiveMode() {
  Finish();
  server_.reset();
  workers_.clear();
}

Status LiveMode::Prepare(const ScenarioRun& run) {
  const ScenarioSpec& spec = run.spec();
  const std::string& file = spec.file;
  int devices = 1;
  FLEETSIM_RETURN_IF_ERROR(kernels::DeviceCount(options_.backend, &devices).WithPrefix("live: "));
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Threads that run steps: a replica's ranks each.
  int total = 0;
  for (const PoolPlan& p : run.pools()) total += p.spec->total_replicas() * std::max(1, p.shard.tp);
  for (const PoolPlan& p : run.pools()) {
    const std::string where = file + ": " + p.spec->path + ": live mode: ";
    if (const std::string why = LiveUnsupported(*p.model); !why.empty())
      return Status::Invalid(where + "model " + p.model->name + ": " + why);
    if (p.shard.pp != 1 || p.shard.ep != 1 || p.shard.dp != 1)
      return Status::Invalid(where + "pp, ep and dp must be 1 (only tensor parallel runs live yet)");
    // The CPU backend stands for as many devices as asked (a backend per
    // rank, on the host's cores).
    if (options_.backend != "cpu" && p.shard.tp > devices)
      return Status::Invalid(where + "tp " + std::to_string(p.shard.tp) + " needs as many devices, and the " +
                             options_.backend + " backend has " + std::to_string(devices));
    if (p.spec->speculative) return Status::Invalid(where + "speculative decoding does not run live yet");
    if (p.spec->role != PoolSpec::Role::kBoth)
      return Status::Invalid(where + "disaggregated prefill and decode pools do not run live yet");
  }
  // Ranks take the devices (CUDA) and cores (CPU) in turn.
  int index = 0, next_core = 0, next_device = 0;
  for (size_t pi = 0; pi < run.pools().size(); ++pi) {
    const PoolPlan& p = run.pools()[pi];
    const int64_t kv_token_bytes = p.model->KvBytesPerToken();
    const int64_t bs = p.spec->block_size;
    int64_t blocks = p.memory.kv_blocks;
    const int tp = std::max(1, p.shard.tp);
    if (options_.backend == "cuda" && tp > 1) {
      // The memory plan gives each GPU 1/tp of the embedding, as vLLM's
      // vocabulary-parallel embedding has; live ranks hold all of it (a
      // lookup, not sharded): its other (tp-1)/tp comes out of the cache.
      const ShardDims d = LocalDims(*p.model, p.shard);
      const double extra = static_cast<double>(tp - 1) / tp * p.model->vocab * p.model->hidden *
                           DTypeBytes(p.model->weight_dtype);
      const double block = static_cast<double>(kv_token_bytes) * d.kv_heads / std::max(1, p.model->kv_heads) * bs;
      blocks -= static_cast<int64_t>(std::ceil(extra / std::max(1.0, block)));
      if (blocks < 1)
        return Status::Invalid(file + ": " + p.spec->path + ": live mode: the embedding, held whole by each of the " +
                               std::to_string(tp) + " ranks, leaves no room for the KV cache");
    }
    // Enough blocks for every running sequence at its longest; on the CPU
    // also within cpu_kv_bytes.
    const int64_t seqs = std::max<int64_t>(1, p.step.seqs);
    blocks = std::min<int64_t>(blocks, seqs * ((p.max_model_len + bs - 1) / bs) + 1);
    if (options_.backend == "cpu")
      blocks = std::min<int64_t>(blocks, std::max<int64_t>(1, options_.cpu_kv_bytes / std::max<int64_t>(1, kv_token_bytes * bs)));
    blocks = std::min<int64_t>(blocks, int64_t{INT32_MAX} / std::max<int64_t>(1, bs));
    for (int r = 0; r < p.spec->total_replicas(); ++r, ++index) {
      const std::string name = p.spec->name + "/" + std::to_string(r);
      // Rank k of the replica's tp: the next device in turn (CUDA), or a
      // CPU backend of its own.
      std::vector<WorkerRank> ranks(static_cast<size_t>(tp));
      std::vector<kernels::Backend*> backends;
      std::string device_names;
      for (int k = 0; k < tp; ++k) {
        kernels::BackendOptions bo;
        bo.cuda_device = next_device++ % devices;
        FLEETSIM_RETURN_IF_ERROR(
            kernels::MakeBackend(options_.backend, bo, &ranks[static_cast<size_t>(k)].backend).WithPrefix("live: "));
        backends.push_back(ranks[static_cast<size_t>(k)].backend.get());
        if (options_.backend == "cuda") device_names += (k ? "," : " #") + std::to_string(bo.cuda_device);
      }
      std::unique_ptr<TpGroup> group;
      if (tp > 1) group = std::make_unique<TpGroup>(backends);
      LiveModelOptions mo;
      mo.block_size = bs;
      mo.kv_blocks = blocks;
      mo.max_tokens = std::clamp<int64_t>(p.step.tokens, 1, 16384);
      mo.max_seqs = std::clamp<int64_t>(p.step.seqs, 1, 4096);
      mo.seed = options_.seed + static_cast<uint64_t>(index);
      mo.group = group.get();
      int64_t weight_bytes = 0;
      for (int k = 0; k < tp; ++k) {
        WorkerRank& wr = ranks[static_cast<size_t>(k)];
        mo.rank = k;
        FLEETSIM_RETURN_IF_ERROR(
            LiveModel::Create(*p.model, *wr.backend, mo, &wr.model).WithPrefix(file + ": " + p.spec->path + ": "));
        wr.model->set_time_ops(per_op());
        weight_bytes = std::max(weight_bytes, wr.model->weight_bytes());
        // CPU: a core per rank, core 0 left to the driving thread, when
        // there are enough; else the scheduler places them.
        wr.cpu = options_.backend == "cpu" && total < cores ? (next_core++ + 1) % cores : -1;
      }
      ReplicaLiveStats st;
      st.name = name;
      st.device = backends.front()->device().name + device_names;
      st.tp = tp;
      st.kv_blocks = blocks;
      st.weight_gib = static_cast<double>(weight_bytes) / (1024.0 * 1024.0 * 1024.0);  // per rank
      info_.push_back(st);
      perf_.push_back(&run.perf(pi));
      // Threads that have a core each wait by spinning.
      const bool spin = total < cores;
      workers_.push_back(std::make_unique<ReplicaWorker>(std::move(ranks), std::move(group), clock_, spin, name));
    }
  }
  clock_.set_spin_while_busy(total < cores);
  if (options_.serve) {
    // The models served: the scenario's default first, then each pool's.
    std::vector<std::string> models;
    auto add = [&](const std::string& m) {
      if (!m.empty() && std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    };
    add(!spec.model.empty() ? spec.model : run.pools().front().model->name);
    for (const PoolPlan& p : run.pools()) add(p.model->name);
    FLEETSIM_RETURN_IF_ERROR(CompletionServer::Open(
        *options_.serve, models,
        [this](Request r) {
          // I/O thread: the request arrives on the driving thread, now.
          clock_.PostExternal([this, r = std::move(r)]() mutable {
            if (!arrive_) return;
            r.arrival = sim_->now();  // as arrive_ stamps it
            served_.push_back(r);
            arrive_(std::move(r));
          });
        },
        &server_).WithPrefix("live: "));
    clock_.set_open(true);
  }
  if (options_.backend == "cpu" && total >= cores)
    warnings_.push_back(std::to_string(total) + " CPU replica ranks and the driving thread share " + std::to_string(cores) +
                        " cores: they slow each other down, which the simulation (a device per replica) does not "
                        "model; give each replica a core of its own (replicas < cores) for a meaningful diff");
  return Status::Ok();
}

void LiveMode::Start(Simulation& sim) {
  // The clock starts at the first Advance, once the fleet is built (what
  // the server accepted before then arrives at time 0).
  sim_ = &sim;
  served_.clear();
}

std::unique_ptr<Executor> LiveMode::MakeExecutor(int replica, Executor::Done done) {
  FLEETSIM_CHECK(replica >= 0 && static_cast<size_t>(replica) < workers_.size());
  const size_t r = static_cast<size_t>(replica);
  LiveExecutor::Tokens tokens;
  if (server_) tokens = [this](const std::vector<std::pair<uint64_t, int32_t>>& t) { server_->OnTokens(t); };
  return std::make_unique<LiveExecutor>(*workers_[r], clock_, *perf_[r], std::move(done), std::move(tokens));
}

void LiveMode::AttachArrivals(std::function<void(Request&&)> arrive) { arrive_ = std::move(arrive); }

void LiveMode::OnRequestEnded(const RequestRecord& rec) {
  if (server_) server_->OnFinished(rec);
}

void LiveMode::Advance(Simulation& sim, SimTime until) {
  clock_.RunUntil(sim, until, 100 * 1000 * 1000);  // a tenth of a second at a time
}

Status LiveMode::status() {
  for (auto& w : workers_) {
    Status s = w->status();
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void LiveMode::Finish() {
  // The run is over: no more arrivals; the responses of the requests it
  // ended are written, then the connections close.
  if (server_) server_->Close();
  clock_.set_open(false);
  clock_.Clear();
  arrive_ = nullptr;
  sim_ = nullptr;
}

std::vector<ReplicaLiveStats> LiveMode::Stats() {
  std::vector<ReplicaLiveStats> out = info_;
  for (size_t i = 0; i < out.size() && i < workers_.size(); ++i) out[i].worker = workers_[i]->stats();
  return out;
}

std::string LiveMode::Describe() const {
  std::string d = options_.backend + " backend";
  if (!info_.empty()) d += ", " + info_.front().device;
  return d;
}

}  // namespace fleetsim::live
