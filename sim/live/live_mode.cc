#include "sim/live/live_mode.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

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
  int total = 0;
  for (const PoolPlan& p : run.pools()) total += p.spec->total_replicas();
  for (const PoolPlan& p : run.pools()) {
    const std::string where = file + ": " + p.spec->path + ": live mode: ";
    if (const std::string why = LiveUnsupported(*p.model); !why.empty())
      return Status::Invalid(where + "model " + p.model->name + ": " + why);
    if (p.shard.tp != 1 || p.shard.pp != 1 || p.shard.ep != 1 || p.shard.dp != 1)
      return Status::Invalid(where + "tp, pp, ep and dp must be 1 (sharded replicas do not run live yet)");
    if (p.spec->speculative) return Status::Invalid(where + "speculative decoding does not run live yet");
    if (p.spec->role != PoolSpec::Role::kBoth)
      return Status::Invalid(where + "disaggregated prefill and decode pools do not run live yet");
  }
  int index = 0;
  for (size_t pi = 0; pi < run.pools().size(); ++pi) {
    const PoolPlan& p = run.pools()[pi];
    const int64_t kv_token_bytes = p.model->KvBytesPerToken();
    const int64_t bs = p.spec->block_size;
    // Enough blocks for every running sequence at its longest; on the CPU
    // also within cpu_kv_bytes.
    int64_t blocks = p.memory.kv_blocks;
    const int64_t seqs = std::max<int64_t>(1, p.step.seqs);
    blocks = std::min<int64_t>(blocks, seqs * ((p.max_model_len + bs - 1) / bs) + 1);
    if (options_.backend == "cpu")
      blocks = std::min<int64_t>(blocks, std::max<int64_t>(1, options_.cpu_kv_bytes / std::max<int64_t>(1, kv_token_bytes * bs)));
    blocks = std::min<int64_t>(blocks, int64_t{INT32_MAX} / std::max<int64_t>(1, bs));
    for (int r = 0; r < p.spec->total_replicas(); ++r, ++index) {
      const std::string name = p.spec->name + "/" + std::to_string(r);
      kernels::BackendOptions bo;
      bo.cuda_device = index % devices;
      std::unique_ptr<kernels::Backend> backend;
      FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend(options_.backend, bo, &backend).WithPrefix("live: "));
      LiveModelOptions mo;
      mo.block_size = bs;
      mo.kv_blocks = blocks;
      mo.max_tokens = std::clamp<int64_t>(p.step.tokens, 1, 16384);
      mo.max_seqs = std::clamp<int64_t>(p.step.seqs, 1, 4096);
      mo.seed = options_.seed + static_cast<uint64_t>(index);
      std::unique_ptr<LiveModel> model;
      FLEETSIM_RETURN_IF_ERROR(
          LiveModel::Create(*p.model, *backend, mo, &model).WithPrefix(file + ": " + p.spec->path + ": "));
      ReplicaLiveStats st;
      st.name = name;
      st.device = backend->device().name + (options_.backend == "cuda" ? " #" + std::to_string(bo.cuda_device) : "");
      st.kv_blocks = blocks;
      st.weight_gib = static_cast<double>(model->weight_bytes()) / (1024.0 * 1024.0 * 1024.0);
      info_.push_back(st);
      perf_.push_back(&run.perf(pi));
      model->set_time_ops(per_op());
      // CPU: a core per replica, core 0 left to the driving thread, when
      // there are enough; else the scheduler places them.
      const int cpu = options_.backend == "cpu" && total < cores ? (index + 1) % cores : -1;
      // Threads that have a core each wait by spinning.
      const bool spin = total < cores;
      workers_.push_back(
          std::make_unique<ReplicaWorker>(std::move(backend), std::move(model), clock_, cpu, spin, name));
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
    warnings_.push_back(std::to_string(total) + " CPU replicas and the driving thread share " + std::to_string(cores) +
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
