// Reads a Hugging Face config.json (model/hf_config.h). Field names follow
// transformers' configuration classes (LlamaConfig, MistralConfig,
// Qwen2Config, MixtralConfig, DeepseekV3Config); defaults are theirs where a
// config may leave a key out (num_key_value_heads = num_attention_heads,
// head_dim = hidden_size / num_attention_heads, tie_word_embeddings false).
#include "model/hf_config.h"

#include <algorithm>
#include <array>
#include <set>

#include "base/file.h"
#include "model/object_reader.h"

namespace fleetsim {
namespace {

using model_json::Bound;
using model_json::json;
using model_json::ObjectReader;

enum class Family { kLlama, kMistral, kQwen2, kQwen3, kQwen3Moe, kMixtral, kDeepseekV3, kGptOss };

struct Architecture {
  std::string_view architecture;  // config.json's architectures[0]
  std::string_view model_type;
  Family family;
};

constexpr std::array<Architecture, 9> kArchitectures = {{
    {"LlamaForCausalLM", "llama", Family::kLlama},
    {"MistralForCausalLM", "mistral", Family::kMistral},
    {"Qwen2ForCausalLM", "qwen2", Family::kQwen2},
    {"Qwen3ForCausalLM", "qwen3", Family::kQwen3},
    {"Qwen3MoeForCausalLM", "qwen3_moe", Family::kQwen3Moe},
    {"MixtralForCausalLM", "mixtral", Family::kMixtral},
    {"DeepseekV3ForCausalLM", "deepseek_v3", Family::kDeepseekV3},
    // Kimi K2 (moonshotai/Kimi-K2-Instruct): DeepSeek-V3's architecture
    // and modelling code under its own model_type.
    {"DeepseekV3ForCausalLM", "kimi_k2", Family::kDeepseekV3},
    {"GptOssForCausalLM", "gpt_oss", Family::kGptOss},
}};

// Keys every family may carry that change nothing fleetsim models (token
// ids, initialisation, norm epsilon, rotary parameters, training-only
// settings), or that are read below.
constexpr std::string_view kCommonKeys[] = {
    "architectures", "model_type", "transformers_version", "_name_or_path", "auto_map", "bos_token_id",
    "eos_token_id", "pad_token_id", "hidden_act", "initializer_range", "rms_norm_eps", "rope_theta",
    "rope_scaling", "rope_parameters", "use_cache", "attention_dropout", "pretraining_tp", "attention_bias",
    "mlp_bias", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings", "torch_dtype", "dtype",
    "quantization_config", "sliding_window", "layer_types", "attention_chunk_size", "sliding_window_pattern",
    "interleaved_sliding_window", "use_sliding_window", "max_window_layers", "use_mrope"};
constexpr std::string_view kMixtralKeys[] = {"num_local_experts", "num_experts_per_tok", "router_aux_loss_coef",
                                             "output_router_logits", "router_jitter_noise"};
constexpr std::string_view kQwen3MoeKeys[] = {"num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                              "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob",
                                              "router_aux_loss_coef", "output_router_logits"};
constexpr std::string_view kGptOssKeys[] = {"num_local_experts", "num_experts_per_tok", "experts_per_token",
                                            "router_aux_loss_coef", "output_router_logits", "swiglu_limit",
                                            "initial_context_length"};
constexpr std::string_view kDeepseekKeys[] = {
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
    "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "num_nextn_predict_layers", "n_group", "topk_group", "topk_method", "routed_scaling_factor", "scoring_func",
    "norm_topk_prob", "aux_loss_alpha", "seq_aux", "ep_size"};

std::string KnownArchitectures() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures)
    if (std::find(names.begin(), names.end(), a.architecture) == names.end()) names.emplace_back(a.architecture);
  return JoinNames(names);
}

std::string KnownModelTypes() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.emplace_back(a.model_type);
  return JoinNames(names);
}

// Which architecture the config describes: architectures[0], else
// model_type; when both are present they must agree.
Status ReadArchitecture(const ObjectReader& r, const Architecture** out) {
  const Architecture* by_arch = nullptr;
  const Architecture* by_type = nullptr;
  if (r.Has("architectures")) {
    const json& a = r.object()["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      return r.Error("architectures", "expected a non-empty array of names");
    const std::string name = a[0].get<std::string>();
    for (const Architecture& k : kArchitectures)
      if (k.architecture == name && !by_arch) by_arch = &k;
    if (!by_arch)
      return r.Error("architectures", "unknown architecture \"" + name + "\" (known: " + KnownArchitectures() + ")");
  }
  if (r.Has("model_type")) {
    std::string type;
    FLEETSIM_RETURN_IF_ERROR(r.String("model_type", &type));
    for (const Architecture& k : kArchitectures)
      if (k.model_type == type) by_type = &k;
    if (!by_type) return r.Error("model_type", "unknown model_type \"" + type + "\" (known: " + KnownModelTypes() + ")");
    if (by_arch && by_arch->family != by_type->family)
      return r.Error("model_type", "\"" + type + "\" does not match architecture " +
                                       std::string(by_arch->architecture) + " (expected \"" +
                                       std::string(by_arch->model_type) + "\")");
  }
  if (!by_arch && !by_type)
    return r.Error("architectures", "missing: neither architectures nor model_type is set (known: " +
                                        KnownArchitectures() + ")");
  *out = by_arch ? by_arch : by_type;
  return Status::Ok();
}

// torch_dtype (or `dtype`, as transformers >= 4.56 writes it) as the dtype
// vLLM serves in: float32 checkpoints are served in bf16 (vLLM's
// --dtype auto).
Status ReadTorchDtype(const ObjectReader& r, HfModel* out, DType* dtype) {
  const char* key = r.Has("torch_dtype") ? "torch_dtype" : r.Has("dtype") ? "dtype" : nullptr;
  if (!key) {
    *dtype = DType::kBf16;
    out->warnings.push_back(r.Path("torch_dtype") + ": absent; served in bf16");
    return Status::Ok();
  }
  std::string name;
  FLEETSIM_RETURN_IF_ERROR(r.String(key, &name));
  if (name == "bfloat16" || name == "float32") {
    *dtype = DType::kBf16;
  } else if (name == "float16") {
    *dtype = DType::kFp16;
  } else {
    return r.Error(key, "unknown dtype \"" + name + "\" (known: bfloat16, float16, float32)");
  }
  return Status::Ok();
}

// An integer key that may be absent or null: `fallback` then.
Status OptionalInt(const ObjectReader& r, std::string_view key, Bound bound, int fallback, int* out) {
  if (!r.Has(key) || r.IsNull(key)) {
    *out = fallback;
    return Status::Ok();
  }
  return r.Int(key, bound, out);
}

// Group-wise quantisation metadata: `bits`-bit weights in groups of
// `group_size` (-1: one group per output channel, whose scales are
// negligible), each with a 16-bit scale and, when `zero_point`, a
// `bits`-bit zero point.
Status ReadGroups(const ObjectReader& q, int bits, int64_t group_size, bool zero_point, ModelSpec* m) {
  if (bits == 4) {
    m->weight_dtype = DType::kInt4;
  } else if (bits == 8) {
    m->weight_dtype = DType::kInt8;
  } else {
    return q.Error("bits", "expected 4 or 8, got " + std::to_string(bits));
  }
  if (group_size > 0) {
    m->quant_group_size = group_size;
    m->quant_group_bytes = 2.0 + (zero_point ? bits / 8.0 : 0.0);
  }
  return Status::Ok();
}

Status ReadGroupSize(const ObjectReader& q, std::string_view key, int64_t* out) {
  if (q.Has(key) && q.object()[std::string(key)].is_number_integer() &&
      q.object()[std::string(key)].get<int64_t>() == -1) {
    *out = -1;
    return Status::Ok();
  }
  int64_t g = 0;
  FLEETSIM_RETURN_IF_ERROR(q.Int64(key, Bound::kPositive, 1 << 20, &g));
  *out = g;
  return Status::Ok();
}

// compressed-tensors (llm-compressor; RedHatAI's and neuralmagic's FP8 and
// W4A16 checkpoints): every config group must quantise weights the same way.
Status ReadCompressedTensors(const ObjectReader& q, ModelSpec* m) {
  ObjectReader groups;
  FLEETSIM_RETURN_IF_ERROR(q.Object("config_groups", &groups));
  if (groups.object().empty()) return q.Error("config_groups", "expected at least one group");
  bool first = true;
  for (auto it = groups.object().begin(); it != groups.object().end(); ++it) {
    ObjectReader g;
    FLEETSIM_RETURN_IF_ERROR(groups.Object(it.key(), &g));
    ObjectReader w;
    FLEETSIM_RETURN_IF_ERROR(g.Object("weights", &w));
    int bits = 0;
    std::string type, strategy;
    FLEETSIM_RETURN_IF_ERROR(w.Int("num_bits", Bound::kPositive, &bits));
    FLEETSIM_RETURN_IF_ERROR(w.String("type", &type));
    FLEETSIM_RETURN_IF_ERROR(w.String("strategy", &strategy));
    ModelSpec one = *m;
    if (type == "float") {
      if (bits != 8) return w.Error("num_bits", "expected 8 for float weights, got " + std::to_string(bits));
      one.weight_dtype = DType::kFp8;
      // Priced at the bf16 peak (gemm_dtype unset), as the zoo's RedHatAI
      // FP8 entries are, though their activations are FP8 too: at the FP8
      // peak the held-out H200 runs of Llama-3.1-70B-FP8 go from 5% too slow
      // to 30% too fast in TTFT, and no FP8 GEMM has been measured here
      // (the H200's gemm_shape is a bf16 cuBLAS fit). model/README.md.
    } else if (type == "int") {
      int64_t group = -1;
      if (strategy == "group") FLEETSIM_RETURN_IF_ERROR(ReadGroupSize(w, "group_size", &group));
      bool symmetric = true;
      if (w.Has("symmetric")) FLEETSIM_RETURN_IF_ERROR(w.Bool("symmetric", &symmetric));
      FLEETSIM_RETURN_IF_ERROR(ReadGroups(w, bits, group, !symmetric, &one));
    } else {
      return w.Error("type", "unknown weight type \"" + type + "\" (known: float, int)");
    }
    if (!first && (one.weight_dtype != m->weight_dtype || one.quant_group_size != m->quant_group_size))
      return groups.Error(it.key(), "quantises weights differently from the first group (not modelled)");
    *m = one;
    first = false;
  }
  return Status::Ok();
}

Status ReadQuantization(const ObjectReader& r, HfModel* out) {
  ModelSpec& m = out->spec;
  ObjectReader q;
  FLEETSIM_RETURN_IF_ERROR(r.Object("quantization_config", &q));
  std::string method;
  FLEETSIM_RETURN_IF_ERROR(q.String("quant_method", &method));
  m.embedding_dtype = m.compute_dtype;  // embedding and lm_head stay unquantised
  if (method == "fp8") {
    // vLLM's fp8 method quantises the activations too (dynamically unless
    // activation_scheme says static) and multiplies on FP8 tensor cores.
    m.weight_dtype = DType::kFp8;
    m.gemm_dtype = DType::kFp8;
    if (q.Has("weight_block_size") && !q.IsNull("weight_block_size")) {
      // One fp32 scale per block (DeepSeek-V3: 128 x 128).
      const json& b = q.object()["weight_block_size"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
          b[0].get<int64_t>() < 1 || b[1].get<int64_t>() < 1 || b[0].get<int64_t>() > 65536 ||
          b[1].get<int64_t>() > 65536)
        return q.Error("weight_block_size", "expected [rows, columns], two positive integers");
      m.quant_group_size = b[0].get<int64_t>() * b[1].get<int64_t>();
      m.quant_group_bytes = 4;
    }
  } else if (method == "awq" || method == "gptq") {
    int bits = 0;
    int64_t group = 0;
    FLEETSIM_RETURN_IF_ERROR(q.Int("bits", Bound::kPositive, &bits));
    FLEETSIM_RETURN_IF_ERROR(ReadGroupSize(q, "group_size", &group));
    // AWQ stores zero points unless zero_point is false; GPTQ's checkpoint
    // format stores qzeros whether or not it is symmetric.
    bool zero_point = true;
    if (method == "awq" && q.Has("zero_point")) FLEETSIM_RETURN_IF_ERROR(q.Bool("zero_point", &zero_point));
    FLEETSIM_RETURN_IF_ERROR(ReadGroups(q, bits, group, zero_point, &m));
  } else if (method == "compressed-tensors") {
    FLEETSIM_RETURN_IF_ERROR(ReadCompressedTensors(q, &m));
  } else if (method == "modelopt") {
    // NVIDIA ModelOpt checkpoints (nvidia/*-FP8, nvidia/*-FP4): quant_algo
    // FP8 (per-tensor scales, W8A8) or NVFP4 (fp4 e2m1 values with one e4m3
    // scale byte per group_size, 16; activations quantised to FP4 too, so
    // the products run at the FP4 peak where the GPU has one);
    // kv_cache_quant_algo FP8 stores the KV cache in fp8.
    std::string algo;
    FLEETSIM_RETURN_IF_ERROR(q.String("quant_algo", &algo));
    if (algo == "FP8") {
      m.weight_dtype = DType::kFp8;
      m.gemm_dtype = DType::kFp8;
    } else if (algo == "NVFP4") {
      int64_t group = 16;
      if (q.Has("group_size")) FLEETSIM_RETURN_IF_ERROR(q.Int64("group_size", Bound::kPositive, 65536, &group));
      m.weight_dtype = DType::kFp4;
      m.gemm_dtype = DType::kFp4;
      m.quant_group_size = group;
      m.quant_group_bytes = 1;
    } else {
      return q.Error("quant_algo", "unknown ModelOpt algorithm \"" + algo + "\" (known: FP8, NVFP4)");
    }
    if (q.Has("kv_cache_quant_algo") && !q.IsNull("kv_cache_quant_algo")) {
      std::string kv;
      FLEETSIM_RETURN_IF_ERROR(q.String("kv_cache_quant_algo", &kv));
      if (kv != "FP8") return q.Error("kv_cache_quant_algo", "unknown KV cache algorithm \"" + kv + "\" (known: FP8)");
      m.kv_dtype = DType::kFp8;
    }
  } else if (method == "mxfp4") {
    // gpt-oss: the routed experts in MXFP4 (OCP microscaling: fp4 e2m1
    // values, one e8m0 scale byte per 32), attention, router, embedding and
    // lm_head left in the checkpoint's dtype (modules_to_not_convert).
    if (!m.is_moe()) return q.Error("quant_method", "mxfp4 is read for the routed experts of an MoE model only");
    m.embedding_dtype.reset();
    m.expert_weight_dtype = DType::kFp4;
    m.expert_quant_group_size = 32;
    m.expert_quant_group_bytes = 1;
  } else {
    return q.Error("quant_method",
                   "unknown quantisation method \"" + method + "\" (known: awq, compressed-tensors, fp8, gptq, modelopt, mxfp4)");
  }
  return Status::Ok();
}

// Keys that change what a replica costs in ways fleetsim does not model:
// refused rather than priced wrongly.
Status RefuseUnmodelled(const ObjectReader& r, Family family) {
  // gpt-oss's interleaved sliding and full layers are read (ReadGptOss).
  if (family == Family::kGptOss) return Status::Ok();
  bool window_used = r.Has("sliding_window") && !r.IsNull("sliding_window");
  if (family == Family::kQwen2 || family == Family::kQwen3 || family == Family::kQwen3Moe) {
    // Qwen2 and Qwen3 configs carry a window that applies only with use_sliding_window.
    bool use = false;
    if (r.Has("use_sliding_window")) FLEETSIM_RETURN_IF_ERROR(r.Bool("use_sliding_window", &use));
    window_used = window_used && use;
  }
  if (window_used)
    return r.Error("sliding_window",
                   "sliding-window attention is not modelled (its KV cache and attention cost differ); "
                   "use a config with sliding_window null");
  if (r.Has("layer_types") && !r.IsNull("layer_types")) {
    const json& types = r.object()["layer_types"];
    if (!types.is_array()) return r.Error("layer_types", "expected an array");
    for (const json& t : types)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        return r.Error("layer_types", "layers with different attention (" + DescribeJson(t) +
                                          ") are not modelled; only full_attention");
  }
  for (const char* key : {"attention_chunk_size", "sliding_window_pattern", "interleaved_sliding_window"}) {
    if (r.Has(key) && !r.IsNull(key))
      return r.Error(key, "layer-wise different attention is not modelled");
  }
  if (family == Family::kDeepseekV3 && r.Has("moe_layer_freq")) {
    int freq = 0;
    FLEETSIM_RETURN_IF_ERROR(r.Int("moe_layer_freq", Bound::kPositive, &freq));
    if (freq != 1) return r.Error("moe_layer_freq", "MoE on every " + std::to_string(freq) + "th layer is not modelled; expected 1");
  }
  return Status::Ok();
}

void WarnUnknownKeys(const ObjectReader& r, Family family, HfModel* out) {
  std::set<std::string_view> known(std::begin(kCommonKeys), std::end(kCommonKeys));
  if (family == Family::kMixtral) known.insert(std::begin(kMixtralKeys), std::end(kMixtralKeys));
  if (family == Family::kDeepseekV3) known.insert(std::begin(kDeepseekKeys), std::end(kDeepseekKeys));
  if (family == Family::kQwen3Moe) known.insert(std::begin(kQwen3MoeKeys), std::end(kQwen3MoeKeys));
  if (family == Family::kGptOss) known.insert(std::begin(kGptOssKeys), std::end(kGptOssKeys));
  for (auto it = r.object().begin(); it != r.object().end(); ++it)
    if (known.count(it.key()) == 0) out->warnings.push_back(r.Path(it.key()) + ": not read by fleetsim; ignored");
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    bool set = false;
    if (r.Has(bias) && r.Bool(bias, &set).ok() && set)
      out->warnings.push_back(std::string(bias) + ": biases are not counted in the weights (under a per mille)");
  }
}

// Qwen3-MoE (Qwen3MoeForCausalLM): every layer sparse, experts of
// moe_intermediate_size columns; intermediate_size is the dense MLP that
// decoder_sparse_step > 1 or mlp_only_layers would put between them, which
// fleetsim refuses rather than prices wrongly.
Status ReadQwen3Moe(const ObjectReader& r, ModelSpec* m) {
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_experts", Bound::kPositive, &m->experts));
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_experts_per_tok", Bound::kPositive, &m->experts_top_k));
  FLEETSIM_RETURN_IF_ERROR(r.Int("moe_intermediate_size", Bound::kPositive, &m->intermediate));
  if (r.Has("decoder_sparse_step")) {
    int step = 1;
    FLEETSIM_RETURN_IF_ERROR(r.Int("decoder_sparse_step", Bound::kPositive, &step));
    if (step != 1)
      return r.Error("decoder_sparse_step", "MoE on every " + std::to_string(step) + "th layer is not modelled; expected 1");
  }
  if (r.Has("mlp_only_layers") && !r.IsNull("mlp_only_layers")) {
    const json& layers = r.object()["mlp_only_layers"];
    if (!layers.is_array()) return r.Error("mlp_only_layers", "expected an array");
    if (!layers.empty()) return r.Error("mlp_only_layers", "dense layers among the MoE layers are not modelled; expected []");
  }
  return Status::Ok();
}

// gpt-oss (GptOssForCausalLM): 128 (120b) or 32 (20b) experts of
// intermediate_size, layer_types alternating sliding_attention (a window
// of sliding_window tokens) and full_attention, attention sinks on every
// layer (the modelling code's per-head sinks parameter).
Status ReadGptOss(const ObjectReader& r, ModelSpec* m) {
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_local_experts", Bound::kPositive, &m->experts));
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_experts_per_tok", Bound::kPositive, &m->experts_top_k));
  m->attention_sinks = true;
  if (!r.Has("layer_types") || r.IsNull("layer_types")) return Status::Ok();
  const json& types = r.object()["layer_types"];
  if (!types.is_array() || types.size() != static_cast<size_t>(m->layers))
    return r.Error("layer_types", "expected an array of num_hidden_layers (" + std::to_string(m->layers) + ") names");
  for (const json& t : types) {
    const std::string name = t.is_string() ? t.get<std::string>() : "";
    if (name == "sliding_attention") {
      ++m->sliding_layers;
    } else if (name != "full_attention") {
      return r.Error("layer_types", "unknown layer type " + DescribeJson(t) + " (known: full_attention, sliding_attention)");
    }
  }
  if (m->sliding_layers == m->layers)
    return r.Error("layer_types", "every layer slides: a model of sliding-window layers alone is not modelled");
  if (m->sliding_layers > 0) FLEETSIM_RETURN_IF_ERROR(r.Int("sliding_window", Bound::kPositive, &m->sliding_window));
  return Status::Ok();
}

Status ReadDeepseek(const ObjectReader& r, ModelSpec* m) {
  ModelSpec::Mla mla;
  FLEETSIM_RETURN_IF_ERROR(OptionalInt(r, "q_lora_rank", Bound::kNonNegative, 0, &mla.q_lora_rank));
  FLEETSIM_RETURN_IF_ERROR(r.Int("kv_lora_rank", Bound::kPositive, &mla.kv_lora_rank));
  FLEETSIM_RETURN_IF_ERROR(r.Int("qk_nope_head_dim", Bound::kPositive, &mla.qk_nope_head_dim));
  FLEETSIM_RETURN_IF_ERROR(r.Int("qk_rope_head_dim", Bound::kPositive, &mla.qk_rope_head_dim));
  FLEETSIM_RETURN_IF_ERROR(r.Int("v_head_dim", Bound::kPositive, &mla.v_head_dim));
  m->mla = mla;
  m->head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  m->dense_intermediate = m->intermediate;
  FLEETSIM_RETURN_IF_ERROR(r.Int("moe_intermediate_size", Bound::kPositive, &m->intermediate));
  FLEETSIM_RETURN_IF_ERROR(r.Int("n_routed_experts", Bound::kPositive, &m->experts));
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_experts_per_tok", Bound::kPositive, &m->experts_top_k));
  FLEETSIM_RETURN_IF_ERROR(OptionalInt(r, "n_shared_experts", Bound::kNonNegative, 0, &m->shared_experts));
  FLEETSIM_RETURN_IF_ERROR(r.Int("first_k_dense_replace", Bound::kNonNegative, &m->dense_layers));
  if (m->dense_layers > m->layers)
    return r.Error("first_k_dense_replace", "expected at most num_hidden_layers (" + std::to_string(m->layers) + ")");
  // Multi-token prediction: loaded for speculative.method "mtp" only.
  FLEETSIM_RETURN_IF_ERROR(OptionalInt(r, "num_nextn_predict_layers", Bound::kNonNegative, 0, &m->mtp_layers));
  if (m->mtp_layers > m->layers)
    return r.Error("num_nextn_predict_layers", "expected at most num_hidden_layers (" + std::to_string(m->layers) + ")");
  return Status::Ok();
}

}  // namespace

std::vector<std::string> HfArchitectures() {
  std::vector<std::string> names;
  for (const Architecture& a : kArchitectures) names.emplace_back(a.architecture);
  return names;
}

Status ParseHfConfig(std::string_view json_text, const std::string& origin, HfModel* out) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(model_json::ParseDocument(json_text, origin, &doc));
  ObjectReader r(doc, origin, "");
  const Architecture* arch = nullptr;
  FLEETSIM_RETURN_IF_ERROR(ReadArchitecture(r, &arch));
  FLEETSIM_RETURN_IF_ERROR(RefuseUnmodelled(r, arch->family));
  HfModel hf;
  ModelSpec& m = hf.spec;
  m.name = origin;
  m.source = "Hugging Face config.json " + origin + " (" + std::string(arch->architecture) + ")";
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_hidden_layers", Bound::kPositive, &m.layers));
  FLEETSIM_RETURN_IF_ERROR(r.Int("hidden_size", Bound::kPositive, &m.hidden));
  FLEETSIM_RETURN_IF_ERROR(r.Int("num_attention_heads", Bound::kPositive, &m.heads));
  FLEETSIM_RETURN_IF_ERROR(OptionalInt(r, "num_key_value_heads", Bound::kPositive, m.heads, &m.kv_heads));
  if (m.heads % m.kv_heads != 0)
    return r.Error("num_key_value_heads", "expected a divisor of num_attention_heads (" + std::to_string(m.heads) + ")");
  if ((!r.Has("head_dim") || r.IsNull("head_dim")) && m.hidden % m.heads != 0)
    return r.Error("head_dim", "missing, and hidden_size is not a multiple of num_attention_heads");
  FLEETSIM_RETURN_IF_ERROR(OptionalInt(r, "head_dim", Bound::kPositive, m.hidden / m.heads, &m.head_dim));
  FLEETSIM_RETURN_IF_ERROR(r.Int("intermediate_size", Bound::kPositive, &m.intermediate));
  FLEETSIM_RETURN_IF_ERROR(r.Int("vocab_size", Bound::kPositive, &m.vocab));
  FLEETSIM_RETURN_IF_ERROR(r.Int("max_position_embeddings", Bound::kPositive, &m.max_model_len));
  if (r.Has("tie_word_embeddings")) FLEETSIM_RETURN_IF_ERROR(r.Bool("tie_word_embeddings", &m.tied_embeddings));
  DType dtype = DType::kBf16;
  FLEETSIM_RETURN_IF_ERROR(ReadTorchDtype(r, &hf, &dtype));
  m.weight_dtype = m.kv_dtype = m.compute_dtype = dtype;
  if (arch->family == Family::kMixtral) {
    FLEETSIM_RETURN_IF_ERROR(r.Int("num_local_experts", Bound::kPositive, &m.experts));
    FLEETSIM_RETURN_IF_ERROR(r.Int("num_experts_per_tok", Bound::kPositive, &m.experts_top_k));
  }
  if (arch->family == Family::kDeepseekV3) FLEETSIM_RETURN_IF_ERROR(ReadDeepseek(r, &m));
  if (arch->family == Family::kQwen3Moe) FLEETSIM_RETURN_IF_ERROR(ReadQwen3Moe(r, &m));
  if (arch->family == Family::kGptOss) FLEETSIM_RETURN_IF_ERROR(ReadGptOss(r, &m));
  // Qwen3 normalises each head's queries and keys (q_norm, k_norm).
  if (arch->family == Family::kQwen3 || arch->family == Family::kQwen3Moe) m.qk_norm = true;
  if (m.is_moe() && m.experts_top_k > m.experts)
    return r.Error("num_experts_per_tok", "expected at most the " + std::to_string(m.experts) + " experts");
  if (r.Has("quantization_config")) FLEETSIM_RETURN_IF_ERROR(ReadQuantization(r, &hf));
  WarnUnknownKeys(r, arch->family, &hf);
  *out = std::move(hf);
  return Status::Ok();
}

Status LoadHfConfigFile(const std::string& path, HfModel* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "model config", &text));
  return ParseHfConfig(text, path, out);
}

}  // namespace fleetsim
