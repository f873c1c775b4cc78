// Importer for the Vidur project's published profiles (microsoft/vidur,
// data/profiling/): converts its CSVs into a fleetsim Profile
// (model/profile.h).
//
// Compute CSV (e.g. compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv): one row
// per (num_tokens, num_tensor_parallel_workers), with
// time_stats.<op>.{min,max,mean,median,std} in MILLISECONDS for the ops emb,
// input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
// post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add, and
// the model's dimensions (n_head, n_kv_head, n_embd, n_expanded_embd,
// use_gated_mlp). The median is used, two ways:
//   - per-layer curves of the model measured (the "profile" source):
//       gemm        = attn_pre_proj + attn_post_proj + mlp_up_proj + mlp_down_proj
//       elementwise = input_layernorm + post_attention_layernorm + attn_rope
//                     + mlp_act + 2 x add   (the "add" timer is one residual
//                     add; a layer has two)
//       embedding   = emb
//   - fitted curves (the "fitted" source, any model on the same GPU), with
//     calibrate/fit.h, under "<op>.fp16" (Vidur times fp16): every GEMM as
//     (m = num_tokens, n·k), elementwise ops as (tokens, width); the shapes
//     one of tp workers runs, as Vidur's reference layer builds them
//     (vidur/profiling/mlp/mlp_impl.py: ColumnParallelLinear splits n,
//     RowParallelLinear splits k), with head_dim = n_embd / n_head:
//       attn_pre_proj   n = (n_head + 2 n_kv_head) head_dim / tp, k = n_embd
//       attn_post_proj  n = n_embd, k = n_head head_dim / tp
//       mlp_up_proj     n = 2 n_expanded_embd / tp (gate and up fused; without
//                       a gated MLP n_expanded_embd / tp), k = n_embd
//       mlp_down_proj   n = n_embd, k = n_expanded_embd / tp
//       input_layernorm, post_attention_layernorm -> rms_norm, width n_embd
//       add -> residual_add, width n_embd; emb -> embedding, width n_embd
//       attn_rope -> rope, width (n_head + n_kv_head) head_dim / tp
//       mlp_act -> silu_mul, width n_expanded_embd / tp (gelu without a
//                  gated MLP)
//
// Attention CSV (Vidur's attention.csv, vidur/profiling/attention/main.py;
// optional): rows of time_stats.attn_prefill.median or
// time_stats.attn_decode.median (ms; the other is empty), n_embd, n_q_head,
// n_kv_head, num_tensor_parallel_workers, batch_size, prefill_chunk_size,
// kv_cache_size, is_prefill (True/False). A prefill row is one chunk of c =
// prefill_chunk_size tokens after p = kv_cache_size cached ones; a decode row
// is batch_size sequences of kv_cache_size cached tokens, one new token each.
// Fitted as (the shapes of fleetsim's BatchShape):
//   attention_prefill  size = batch_size (c p + c (c+1) / 2) query-key
//                      pairs, scale = n_q_head head_dim / tp
//   attention_decode   size = batch_size (kv_cache_size + 1) KV tokens,
//                      count = batch_size sequences, scale = n_kv_head
//                      head_dim / tp (fit.h's per-count term)
// and marked used as measured: Vidur timed a production kernel (FlashInfer
// in sarathi-serve), not fleetsim's own. time_stats.attn_kv_cache_save (the
// KV write) is not imported. Without the file attention stays roofline.
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
  // Catalogue to check the dimensions and the device against (and infer
  // `model` from). Null: no check, and `model` is required.
  const Catalog* catalog = nullptr;
  // Hardware catalogue name of the GPU the CSVs were measured on
  // ("H100-SXM"). Required: a profile is only used on its device, so a
  // wrong name silently times another GPU. VidurDeviceFromPath infers it
  // from Vidur's file naming.
  std::string device;
  std::string date;  // recorded in the profile, free text
  // Vidur attention CSV (see above). Empty: none, attention stays roofline.
  std::string attention_csv;
};

// Converts the CSVs into *out. Errors name file:line (or file:1 for a
// missing column). Any number of network files, each all_reduce or
// send_recv, decided by its rows' "collective" column.
Status ImportVidur(const std::string& compute_csv_path, const std::vector<std::string>& network_csv_paths,
                   const ImportOptions& options, Profile* out);

// The catalogue GPU a Vidur compute CSV was measured on, from the device
// tag in its path: Vidur keeps compute profiles under
// data/profiling/compute/<tag>/ (copies are named compute_<tag>_...). Tags,
// as whole path words (split at '/', '_' and '.'): h100 -> H100-SXM (a DGX
// H100), a100 -> A100-80G (Vidur profiled the A100 80GB), a40 -> A40. Fails
// when no tag or several different ones are found, or the GPU is not in
// `catalog`; the message says to pass the device by name.
Status VidurDeviceFromPath(const std::string& compute_csv_path, const Catalog& catalog, std::string* device);

// One row of a Vidur compute CSV: the model's dimensions, the grid point,
// and each operator's median in ns.
struct VidurComputeRow {
  int line = 0;  // 1-based line of the file
  int64_t tokens = 0;
  int tp = 0;
  // n_head, n_kv_head, n_embd, n_expanded_embd, use_gated_mlp
  int64_t heads = 0, kv_heads = 0, hidden = 0, intermediate = 0;
  bool gated_mlp = true;
  double emb_ns = 0, input_norm_ns = 0, pre_proj_ns = 0, rope_ns = 0, post_proj_ns = 0, post_norm_ns = 0,
         up_proj_ns = 0, act_ns = 0, down_proj_ns = 0, add_ns = 0;
};

// Reads every row. Errors name file:line; the dimensions must be the same
// on every row (one model per file) and divide by tp as Vidur requires.
Status ReadVidurCompute(const std::string& path, std::vector<VidurComputeRow>* rows);

// One operator timed in a row, at the shape one tp worker ran it.
struct VidurOpTime {
  std::string op;      // fit name: "gemm", "rms_norm", "residual_add", "rope", "silu_mul", "gelu", "embedding"
  std::string column;  // Vidur's timer: "attn_pre_proj", "add", ...
  double size = 0;     // tokens (the GEMM's m)
  double scale = 0;    // n·k for a GEMM, the width for the others
  double ns = 0;       // the row's median
  int per_layer = 0;   // times per layer: 1, 2 for add, 0 for emb (once per iteration)
  bool gemm = false;   // a GEMM (else elementwise)
};

// The ten operators of a row, in Vidur's column order (see the header
// comment for the shapes).
std::vector<VidurOpTime> VidurOpTimes(const VidurComputeRow& row);

// Fits every operator of `rows` (calibrate/fit.h, default options) into
// fits["<op>.<dtype>"]; each distinct (op, scale) is a group for the
// cross-validation. The same fits ImportVidur writes, with dtype "fp16".
Status FitVidurCompute(const std::vector<VidurComputeRow>& rows, const std::string& dtype,
                       std::map<std::string, FittedCurve>* fits);

}  // namespace fleetsim
