// A model users bring: a Hugging Face config.json read into a ModelSpec.
//
// Read: Llama (LlamaForCausalLM), Mistral, Qwen2, Mixtral and DeepSeek-V3
// (DeepseekV3ForCausalLM), with their quantization_config (fp8, awq, gptq,
// compressed-tensors). A key that would change what a replica costs but that
// fleetsim does not model (a sliding window in use, per-layer attention
// kinds, MoE on every other layer) is an error naming it, and so is an
// unknown architecture or quantisation method; any other key the reader does
// not know is ignored and reported in `warnings`. Every error names the file
// and the JSON key: "m/config.json: sliding_window: ...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model_spec.h"

namespace fleetsim {

struct HfModel {
  // Named by the origin (the config's path), which is what a scenario's
  // pools and requests call it.
  ModelSpec spec;
  // One line per key that was ignored, for the run's summary.
  std::vector<std::string> warnings;
};

// The architectures read, as config.json's `architectures` names them.
std::vector<std::string> HfArchitectures();

// `origin` names the document in errors and becomes the model's name.
Status ParseHfConfig(std::string_view json_text, const std::string& origin, HfModel* out);
Status LoadHfConfigFile(const std::string& path, HfModel* out);

}  // namespace fleetsim
