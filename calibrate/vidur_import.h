// Importer for the Vidur project's published profiles (microsoft/vidur,
// data/profiling/): converts its CSVs into a fleetsim Profile
// (model/profile.h).
//
// Compute CSV (e.g. compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv): one row
// per (num_tokens, num_tensor_parallel_workers), with
// time_stats.<op>.{min,max,mean,median,std} in MILLISECONDS for the ops emb,
// input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
// post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add, and
// the model's dimensions (n_head, n_kv_head, n_embd, n_expanded_embd, ...).
// The median is used:
//   gemm        = attn_pre_proj + attn_post_proj + mlp_up_proj + mlp_down_proj
//   elementwise = input_layernorm + post_attention_layernorm + attn_rope
//                 + mlp_act + 2 x add   (the "add" timer is one residual add;
//                 a layer has two)
//   embedding   = emb
// The file has no attention: attention stays with the roofline.
//
// Network CSVs (network_*_all_reduce.csv, network_*_send_recv.csv; a
// leading unnamed index column): rows of time_stats.<collective>.median
// (ms), num_workers, size (bytes), collective, devices_per_node.
// all_reduce rows go to collectives.all_reduce.intra_node[num_workers];
// send_recv rows with devices_per_node 1 cross nodes (inter_node), 2 stay on
// NVLink (intra_node). Repeated grid points (the files measure some twice)
// are averaged.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/catalog.h"
#include "model/profile.h"

namespace fleetsim {

struct ImportOptions {
  // Model the compute CSV was measured for, as named in the model zoo
  // ("Llama-2-7B"). Empty: inferred from the CSV's dimensions (n_embd,
  // n_head, n_kv_head, n_expanded_embd) when exactly one catalogue model
  // matches them.
  std::string model;
  // Catalogue to check the dimensions against (and infer `model` from).
  // Null: no check, and `model` is required.
  const Catalog* catalog = nullptr;
  std::string device = "H100-SXM";  // hardware catalogue name the CSVs were measured on
  std::string date;                 // recorded in the profile, free text
};

// Converts the CSVs into *out. Errors name file:line (or the file for
// missing columns). Any number of network files, each all_reduce or
// send_recv, decided by its rows' "collective" column.
Status ImportVidur(const std::string& compute_csv_path, const std::vector<std::string>& network_csv_paths,
                   const ImportOptions& options, Profile* out);

}  // namespace fleetsim
