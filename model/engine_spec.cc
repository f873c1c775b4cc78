#include "model/engine_spec.h"

#include <algorithm>
#include <cstdlib>

namespace fleetsim {
namespace {

// An entry applies exactly when everything it names is the pool's.
bool Applies(const EngineTermEntry& e, const std::string& gpu, const std::string& model, int tp) {
  return (e.gpu.empty() || e.gpu == gpu) && (e.model.empty() || e.model == model) && (e.tp == 0 || e.tp == tp);
}

// How much an applicable entry names: a GPU outweighs a tp, a tp a model.
int Specificity(const EngineTermEntry& e) {
  return (e.gpu.empty() ? 0 : 4) + (e.tp == 0 ? 0 : 2) + (e.model.empty() ? 0 : 1);
}

}  // namespace

double* EngineSpec::Term(std::string_view term) {
  if (term == "step_cpu_us") return &cpu_overhead_fixed_us;
  if (term == "seq_cpu_us") return &cpu_overhead_per_seq_us;
  if (term == "prefill_token_cpu_us") return &cpu_per_prefill_token_us;
  if (term == "decode_token_cpu_us") return &cpu_per_decode_token_us;
  if (term == "tp_step_cpu_us") return &tp_step_cpu_us;
  if (term == "eager_launch_us") return &eager_launch_us;
  if (term == "custom_all_reduce_latency_us") return &custom_all_reduce_latency_us;
  if (term == "server_request_us") return &server_request_us;
  if (term == "server_prompt_token_us") return &server_prompt_token_us;
  if (term == "server_output_token_us") return &server_output_token_us;
  return nullptr;
}

int EngineSpec::GraphSize(int64_t tokens, bool decode_only) const {
  if (cuda_graphs == CudaGraphMode::kNone || cuda_graph_sizes.empty()) return 0;
  if (cuda_graphs == CudaGraphMode::kDecodeOnly && !decode_only) return 0;
  auto it = std::lower_bound(cuda_graph_sizes.begin(), cuda_graph_sizes.end(), tokens);
  return it == cuda_graph_sizes.end() ? 0 : *it;
}

std::vector<std::string> EngineSpec::TermsAt(std::string_view level) const {
  std::vector<std::string> out;
  for (const TermSource& s : sources)
    if (s.level == level) out.push_back(s.term);
  return out;
}

std::string EngineSpec::WeakestLevelOf(std::span<const std::string_view> terms) const {
  std::string weakest = "exact";
  for (const TermSource& s : sources) {
    if (terms.size() > 0 && std::find(terms.begin(), terms.end(), s.term) == terms.end()) continue;
    if (s.level == "estimate") return "estimate";
    if (s.level == "any_gpu") weakest = "any_gpu";
    if (s.level == "same_gpu" && weakest == "exact") weakest = "same_gpu";
  }
  return weakest;
}

namespace {

// The entry of `entries` that applies to the pool, in the fallback order,
// and its level; nullptr when none does.
const EngineTermEntry* PickEntry(const std::vector<EngineTermEntry>& entries, const std::string& gpu,
                                 const std::string& model, int tp, std::string* level) {
  const EngineTermEntry* best = nullptr;
  // 1. exact: names this GPU, and whatever else it names matches.
  for (const EngineTermEntry& e : entries) {
    if (e.gpu.empty() || !Applies(e, gpu, model, tp)) continue;
    if (!best || Specificity(e) > Specificity(*best)) best = &e;
  }
  if (best) *level = "exact";
  // 2. same_gpu: measured on this GPU for another model or tp.
  if (!best) {
    auto distance = [&](const EngineTermEntry& e) {
      return std::abs((e.tp == 0 ? tp : e.tp) - tp) * 2 + (e.model.empty() || e.model == model ? 0 : 1);
    };
    for (const EngineTermEntry& e : entries) {
      if (e.gpu != gpu) continue;
      if (!best || distance(e) < distance(*best)) best = &e;
    }
    if (best) *level = "same_gpu";
  }
  // 3. any_gpu: a generic entry, measured where the GPU does not matter
  // (the host's work: tokenising, the API server), else an estimate.
  if (!best) {
    for (const EngineTermEntry& e : entries) {
      if (!e.gpu.empty() || !Applies(e, gpu, model, tp)) continue;
      if (!best || Specificity(e) > Specificity(*best)) best = &e;
    }
    if (best) *level = "any_gpu";
  }
  if (best && best->estimate) *level = "estimate";
  return best;
}

}  // namespace

int KernelTermIndex(std::string_view name) {
  for (int i = 0; i < kNumKernelTerms; ++i)
    if (name == kKernelTerms[i].name) return i;
  return -1;
}

std::optional<double>* EngineSpec::KernelTerm(std::string_view term) {
  const int i = KernelTermIndex(term);
  return i < 0 ? nullptr : &kernel[static_cast<size_t>(i)];
}

bool EngineSpec::HasKernelTerms() const {
  for (const std::optional<double>& k : kernel)
    if (k) return true;
  return false;
}

Status ResolveEngine(const EngineProfile& profile, const std::string& gpu, const std::string& model, int tp,
                     EngineSpec* out) {
  EngineSpec s;
  s.name = profile.name;
  s.cuda_graphs = profile.cuda_graphs;
  s.cuda_graph_sizes = profile.cuda_graph_sizes;
  s.all_reduce = profile.all_reduce;
  s.async_scheduling = profile.async_scheduling;
  s.admit_after_next_step = profile.admit_after_next_step;
  for (const char* term : kEngineTerms) {
    auto it = profile.terms.find(term);
    if (it == profile.terms.end())
      return Status::Invalid(profile.origin + ": terms." + term + ": missing (every term needs an entry)");
    std::string level;
    const EngineTermEntry* best = PickEntry(it->second, gpu, model, tp, &level);
    if (!best) {
      bool generic = false;
      for (const EngineTermEntry& e : it->second) generic = generic || e.gpu.empty();
      return Status::Invalid(profile.origin + ": terms." + term + ": no entry for " + gpu +
                             (generic ? ", and its entries without \"gpu\" name another model or tp than " +
                                            model + " at tp " + std::to_string(tp)
                                      : ", and no generic entry (one without \"gpu\")"));
    }
    // A term this pool never applies is resolved (the value is kept) but
    // neither flagged nor warned about.
    if (std::string_view(term) == "custom_all_reduce_latency_us" &&
        (tp < 2 || profile.all_reduce != AllReduceAlgorithm::kVllmCustom))
      level = "unused";
    if (std::string_view(term) == "tp_step_cpu_us" && tp < 2) level = "unused";
    *s.Term(term) = best->value;
    s.sources.push_back({term, level, best->source});
  }
  // Kernel terms: only where the profile gives one that applies; the
  // others keep the GPU's figures.
  for (int i = 0; i < kNumKernelTerms; ++i) {
    auto it = profile.terms.find(kKernelTerms[i].name);
    if (it == profile.terms.end()) continue;
    std::string level;
    const EngineTermEntry* best = PickEntry(it->second, gpu, model, tp, &level);
    if (!best) continue;
    s.kernel[static_cast<size_t>(i)] = best->value;
    s.sources.push_back({kKernelTerms[i].name, level, best->source});
  }
  *out = std::move(s);
  return Status::Ok();
}

}  // namespace fleetsim
