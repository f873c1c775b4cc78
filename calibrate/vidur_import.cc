#include "calibrate/vidur_import.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "base/file.h"
#include "calibrate/fit.h"

namespace fleetsim {
namespace {

// A CSV of plain fields (Vidur's files quote nothing), read whole.
struct Csv {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based file line of each row
};

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

Status ReadCsv(const std::string& path, Csv* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "Vidur CSV", &text));
  std::istringstream in(text);
  out->path = path;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      out->header = Split(line);
      continue;
    }
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> f = Split(line);
    if (f.size() != out->header.size())
      return Status::Invalid(path + ":" + std::to_string(n) + ": " + std::to_string(f.size()) + " fields, header has " +
                             std::to_string(out->header.size()));
    out->rows.push_back(std::move(f));
    out->lines.push_back(n);
  }
  if (n == 0) return Status::Invalid(path + ": empty file (expected a header line)");
  return Status::Ok();
}

Status Column(const Csv& csv, const std::string& name, int* index) {
  for (size_t i = 0; i < csv.header.size(); ++i) {
    if (csv.header[i] == name) {
      *index = static_cast<int>(i);
      return Status::Ok();
    }
  }
  return Status::Invalid(csv.path + ":1: missing column \"" + name + "\"");
}

std::string Where(const Csv& csv, size_t row) { return csv.path + ":" + std::to_string(csv.lines[row]) + ": "; }

Status Number(const Csv& csv, size_t row, int col, double* out) {
  const std::string& s = csv.rows[row][col];
  char* end = nullptr;
  errno = 0;
  const double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v) || v < 0)
    return Status::Invalid(Where(csv, row) + csv.header[col] + ": expected a non-negative number, got \"" + s + "\"");
  *out = v;
  return Status::Ok();
}

Status Integer(const Csv& csv, size_t row, int col, int64_t* out) {
  double v = 0;
  FLEETSIM_RETURN_IF_ERROR(Number(csv, row, col, &v));
  if (std::floor(v) != v || v < 1 || v > 1e15)
    return Status::Invalid(Where(csv, row) + csv.header[col] + ": expected a positive integer, got \"" +
                           csv.rows[row][col] + "\"");
  *out = static_cast<int64_t>(v);
  return Status::Ok();
}

// Sums of measurements at each grid point, averaged when a point repeats.
struct Accumulator {
  std::map<double, std::pair<double, int>> points;
  void Add(double x, double ns) {
    auto& p = points[x];
    p.first += ns;
    p.second += 1;
  }
  int repeats() const {
    int r = 0;
    for (const auto& [x, p] : points) r += p.second - 1;
    return r;
  }
  ProfileCurve Curve() const {
    ProfileCurve c;
    for (const auto& [x, p] : points) {
      c.x.push_back(x);
      // Milli-ns are far below any measurement's noise; rounding keeps the
      // JSON free of binary-to-decimal residue.
      c.ns.push_back(std::round(p.first / p.second * 1e3) / 1e3);
    }
    return c;
  }
};

constexpr double kNsPerMs = 1e6;

// Vidur's compute timers, in its column order, and where each lands in a
// VidurComputeRow.
struct ComputeColumn {
  const char* name;
  double VidurComputeRow::*ns;
};
constexpr ComputeColumn kComputeColumns[] = {
    {"emb", &VidurComputeRow::emb_ns},
    {"input_layernorm", &VidurComputeRow::input_norm_ns},
    {"attn_pre_proj", &VidurComputeRow::pre_proj_ns},
    {"attn_rope", &VidurComputeRow::rope_ns},
    {"attn_post_proj", &VidurComputeRow::post_proj_ns},
    {"post_attention_layernorm", &VidurComputeRow::post_norm_ns},
    {"mlp_up_proj", &VidurComputeRow::up_proj_ns},
    {"mlp_act", &VidurComputeRow::act_ns},
    {"mlp_down_proj", &VidurComputeRow::down_proj_ns},
    {"add", &VidurComputeRow::add_ns},
};

Status Boolean(const Csv& csv, size_t row, int col, bool* out) {
  const std::string& s = csv.rows[row][col];
  if (s != "True" && s != "False")
    return Status::Invalid(Where(csv, row) + csv.header[col] + ": expected True or False, got \"" + s + "\"");
  *out = s == "True";
  return Status::Ok();
}

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string Shape(const VidurComputeRow& r) {
  return "n_embd " + std::to_string(r.hidden) + ", n_head " + std::to_string(r.heads) + ", n_kv_head " +
         std::to_string(r.kv_heads) + ", n_expanded_embd " + std::to_string(r.intermediate);
}

// Per-layer curves of the model measured: the "profile" source.
void AddLayerCurves(const std::vector<VidurComputeRow>& rows, Profile* p, int* repeats) {
  std::map<int, Accumulator> gemm, elementwise, embedding;
  for (const VidurComputeRow& r : rows) {
    double g = 0, e = 0, m = 0;
    for (const VidurOpTime& t : VidurOpTimes(r)) {
      if (t.per_layer == 0) {
        m += t.ns;
      } else if (t.gemm) {
        g += t.per_layer * t.ns;
      } else {
        e += t.per_layer * t.ns;
      }
    }
    const double x = static_cast<double>(r.tokens);
    gemm[r.tp].Add(x, g);
    elementwise[r.tp].Add(x, e);
    embedding[r.tp].Add(x, m);
  }
  for (const auto& [tp, acc] : gemm) {
    p->gemm[tp] = acc.Curve();
    *repeats += acc.repeats();
  }
  for (const auto& [tp, acc] : elementwise) p->elementwise[tp] = acc.Curve();
  for (const auto& [tp, acc] : embedding) p->embedding[tp] = acc.Curve();
}

Status ImportCompute(const std::string& path, const ImportOptions& options, Profile* p, int* repeats,
                     VidurComputeRow* dims) {
  std::vector<VidurComputeRow> rows;
  FLEETSIM_RETURN_IF_ERROR(ReadVidurCompute(path, &rows));
  const VidurComputeRow& first = rows.front();
  *dims = first;

  // Which model: named, checked against the catalogue, or inferred from it.
  auto matches = [&](const ModelSpec& m) {
    return m.hidden == first.hidden && m.heads == first.heads && m.kv_heads == first.kv_heads &&
           m.intermediate == first.intermediate;
  };
  const std::string shape = Shape(first);
  std::string model = options.model;
  if (options.catalog) {
    if (model.empty()) {
      std::vector<std::string> found;
      for (const std::string& name : options.catalog->ModelNames())
        if (matches(*options.catalog->FindModel(name))) found.push_back(name);
      if (found.size() != 1)
        return Status::Invalid(path + ": cannot tell the model from its dimensions (" + shape + "): " +
                               (found.empty() ? std::string("no catalogue model matches")
                                              : "several match (" + JoinNames(found) + ")") +
                               "; name it with --model");
      model = found[0];
    } else {
      const ModelSpec* m = options.catalog->FindModel(model);
      if (!m)
        return Status::Invalid("unknown model \"" + model + "\" (known: " + JoinNames(options.catalog->ModelNames()) +
                               ")");
      if (!matches(*m))
        return Status::Invalid(path + ": dimensions (" + shape + ") are not those of " + model);
    }
  } else if (model.empty()) {
    return Status::Invalid(path + ": the model must be named (no catalogue to infer it from)");
  }
  p->model = model;
  AddLayerCurves(rows, p, repeats);
  FLEETSIM_RETURN_IF_ERROR(FitVidurCompute(rows, "fp16", &p->fits).WithPrefix(path + ": "));
  p->notes.push_back("compute: " + BaseName(path) + " (" + shape +
                     "), medians; gemm = attn_pre_proj + attn_post_proj + mlp_up_proj + mlp_down_proj; "
                     "elementwise = input_layernorm + post_attention_layernorm + attn_rope + mlp_act + 2 x add "
                     "(assumed: Vidur's add timer is one residual add, and a layer has two); embedding = emb");
  p->notes.push_back(
      "fits.*.fp16 (Vidur times fp16): every GEMM by (m = tokens, n*k), the shapes of one tp worker as Vidur's "
      "reference layer splits them (qkv n = (heads + 2 kv_heads) head_dim / tp, o k = heads head_dim / tp, "
      "gate+up n = 2 n_expanded_embd / tp, down k = n_expanded_embd / tp); both layernorms as rms_norm (assumed "
      "RMSNorm: the CSV does not say), add as residual_add, attn_rope as rope, mlp_act as " +
      std::string(first.gated_mlp ? "silu_mul" : "gelu") + ", emb as embedding, each by (tokens, width)");
  return Status::Ok();
}

// One row of a Vidur attention CSV.
struct AttentionRow {
  int64_t tp = 0, batch = 0, chunk = 0, cached = 0;
  bool prefill = false;
  double ns = 0;
};

Status ImportAttention(const std::string& path, const VidurComputeRow& dims, Profile* p) {
  Csv csv;
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, &csv));
  const char* const kInts[] = {"n_embd",     "n_q_head",           "n_kv_head",    "num_tensor_parallel_workers",
                               "batch_size", "prefill_chunk_size", "kv_cache_size"};
  int col[7];
  for (int i = 0; i < 7; ++i) FLEETSIM_RETURN_IF_ERROR(Column(csv, kInts[i], &col[i]));
  int prefill_col = 0;
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "is_prefill", &prefill_col));
  // A file profiled for one phase only (Vidur's --profile_only_prefill or
  // _decode) lacks the other's timer: looked up when a row needs it.
  int median_col[2] = {-1, -1};  // decode, prefill
  const char* const kMedian[2] = {"time_stats.attn_decode.median", "time_stats.attn_prefill.median"};
  if (csv.rows.empty()) return Status::Invalid(path + ": no data rows");
  const int64_t want[3] = {dims.hidden, dims.heads, dims.kv_heads};
  std::vector<AttentionRow> rows;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    // n_embd, n_q_head, n_kv_head may be 0 only where the compute file's
    // are (never), so Integer's positivity check suffices.
    int64_t v[7];
    for (int i = 0; i < 7; ++i) {
      if (i >= 5) {
        double d = 0;  // prefill_chunk_size and kv_cache_size may be 0
        FLEETSIM_RETURN_IF_ERROR(Number(csv, r, col[i], &d));
        if (std::floor(d) != d || d > 1e9)
          return Status::Invalid(Where(csv, r) + kInts[i] + ": expected a count, got \"" + csv.rows[r][col[i]] + "\"");
        v[i] = static_cast<int64_t>(d);
      } else {
        FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, col[i], &v[i]));
      }
    }
    for (int i = 0; i < 3; ++i) {
      if (v[i] != want[i])
        return Status::Invalid(Where(csv, r) + kInts[i] + " " + std::to_string(v[i]) + " is not the compute file's " +
                               std::to_string(want[i]) + " (attention and compute of one model)");
    }
    AttentionRow a;
    a.tp = v[3];
    a.batch = v[4];
    a.chunk = v[5];
    a.cached = v[6];
    FLEETSIM_RETURN_IF_ERROR(Boolean(csv, r, prefill_col, &a.prefill));
    if (a.tp > 1024 || a.batch > 1e6 || dims.heads % a.tp != 0 || dims.kv_heads % a.tp != 0)
      return Status::Invalid(Where(csv, r) + "num_tensor_parallel_workers " + std::to_string(a.tp) +
                             " does not divide n_q_head and n_kv_head (or batch_size is implausible)");
    if (a.prefill != (a.chunk > 0))
      return Status::Invalid(Where(csv, r) + "prefill_chunk_size " + std::to_string(a.chunk) +
                             (a.prefill ? " must be > 0 in a prefill row" : " must be 0 in a decode row"));
    int& mc = median_col[a.prefill ? 1 : 0];
    if (mc < 0) FLEETSIM_RETURN_IF_ERROR(Column(csv, kMedian[a.prefill ? 1 : 0], &mc));
    FLEETSIM_RETURN_IF_ERROR(Number(csv, r, mc, &a.ns));
    if (a.ns <= 0) return Status::Invalid(Where(csv, r) + csv.header[mc] + ": expected a time > 0");
    a.ns *= kNsPerMs;
    rows.push_back(a);
  }

  const double head_dim = static_cast<double>(dims.hidden / dims.heads);
  std::vector<calibrate::FitSample> prefill, decode;
  for (const AttentionRow& a : rows) {
    const double b = static_cast<double>(a.batch), c = static_cast<double>(a.chunk);
    const double cached = static_cast<double>(a.cached);
    const int group = static_cast<int>(a.tp);
    if (a.prefill) {
      const double pairs = b * (c * cached + c * (c + 1) / 2);
      prefill.push_back({pairs, static_cast<double>(dims.heads / a.tp) * head_dim, a.ns, group});
    } else {
      decode.push_back({b * (cached + 1), static_cast<double>(dims.kv_heads / a.tp) * head_dim, a.ns, group, b});
    }
  }
  // Each kind fitted, and marked as used as measured.
  auto fit = [&](const char* kind, const std::vector<calibrate::FitSample>& samples, const char* size_var,
                 const char* scale_var, const std::string& count_var) {
    if (samples.empty()) return Status::Ok();
    calibrate::FitOptions fo;
    fo.count_var = count_var;
    FittedCurve f;
    FLEETSIM_RETURN_IF_ERROR(
        calibrate::FitScaled(samples, fo, size_var, scale_var, &f).WithPrefix(path + ": " + kind + ": "));
    p->fits[std::string(kind) + ".fp16"] = std::move(f);
    AttentionDecision d;
    d.ceiling =
        "not judged against a roofline: Vidur timed a production kernel (FlashInfer, sarathi-serve's attention "
        "backend), used as measured";
    d.use_measured = true;
    p->attention[kind] = d;
    return Status::Ok();
  };
  FLEETSIM_RETURN_IF_ERROR(fit("attention_prefill", prefill, "pairs", "heads*head_dim", ""));
  FLEETSIM_RETURN_IF_ERROR(fit("attention_decode", decode, "kv_tokens", "kv_heads*head_dim", "seqs"));
  p->notes.push_back("attention: " + BaseName(path) + ", medians of attn_prefill (" + std::to_string(prefill.size()) +
                     " rows) and attn_decode (" + std::to_string(decode.size()) +
                     " rows), fitted; attn_kv_cache_save not imported");
  return Status::Ok();
}

Status ImportNetwork(const std::string& path, Profile* p, int* repeats) {
  Csv csv;
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, &csv));
  int coll_col = 0, size_col = 0, workers_col = 0, dpn_col = 0;
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "collective", &coll_col));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "size", &size_col));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "num_workers", &workers_col));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "devices_per_node", &dpn_col));
  std::map<int, Accumulator> all_reduce;
  Accumulator intra, inter;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    const std::string& coll = csv.rows[r][coll_col];
    if (coll != "all_reduce" && coll != "send_recv")
      return Status::Invalid(Where(csv, r) + "collective: expected all_reduce or send_recv, got \"" + coll + "\"");
    int median_col = 0;
    FLEETSIM_RETURN_IF_ERROR(Column(csv, "time_stats." + coll + ".median", &median_col));
    double ms = 0;
    int64_t bytes = 0, workers = 0, dpn = 0;
    FLEETSIM_RETURN_IF_ERROR(Number(csv, r, median_col, &ms));
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, size_col, &bytes));
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, workers_col, &workers));
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, dpn_col, &dpn));
    const double x = static_cast<double>(bytes);
    if (coll == "all_reduce") {
      if (dpn != workers)
        return Status::Invalid(Where(csv, r) + "devices_per_node " + std::to_string(dpn) + " != num_workers " +
                               std::to_string(workers) + ": only all-reduces within one node are imported");
      if (workers > 1024) return Status::Invalid(Where(csv, r) + "num_workers: implausible " + std::to_string(workers));
      all_reduce[static_cast<int>(workers)].Add(x, ms * kNsPerMs);
    } else if (dpn == 1) {
      inter.Add(x, ms * kNsPerMs);
    } else if (dpn == 2) {
      intra.Add(x, ms * kNsPerMs);
    } else {
      return Status::Invalid(Where(csv, r) + "devices_per_node: expected 1 (between nodes) or 2 (within a node) for "
                             "send_recv, got " + std::to_string(dpn));
    }
  }
  for (const auto& [w, acc] : all_reduce) {
    if (p->all_reduce_intra_node.count(w))
      return Status::Invalid(path + ": all_reduce over " + std::to_string(w) + " workers already given by another file");
    p->all_reduce_intra_node[w] = acc.Curve();
    *repeats += acc.repeats();
  }
  if (!intra.points.empty() || !inter.points.empty()) {
    if (!p->send_recv_intra_node.empty() || !p->send_recv_inter_node.empty())
      return Status::Invalid(path + ": send_recv already given by another file");
    if (!intra.points.empty()) p->send_recv_intra_node = intra.Curve();
    if (!inter.points.empty()) p->send_recv_inter_node = inter.Curve();
    *repeats += intra.repeats() + inter.repeats();
  }
  p->notes.push_back("network: " + path.substr(path.find_last_of('/') + 1) +
                     ", medians; all_reduce by num_workers within one node; send_recv devices_per_node 1 = "
                     "inter_node, 2 = intra_node (NVLink)");
  return Status::Ok();
}

}  // namespace

Status ReadVidurCompute(const std::string& path, std::vector<VidurComputeRow>* out) {
  Csv csv;
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, &csv));
  constexpr int kOps = static_cast<int>(std::size(kComputeColumns));
  int op_col[kOps];
  for (int i = 0; i < kOps; ++i)
    FLEETSIM_RETURN_IF_ERROR(Column(csv, std::string("time_stats.") + kComputeColumns[i].name + ".median", &op_col[i]));
  int tokens_col = 0, tp_col = 0, gated_col = 0;
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "num_tokens", &tokens_col));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "num_tensor_parallel_workers", &tp_col));
  const char* const kDims[] = {"n_embd", "n_head", "n_kv_head", "n_expanded_embd"};
  int dim_col[4];
  for (int i = 0; i < 4; ++i) FLEETSIM_RETURN_IF_ERROR(Column(csv, kDims[i], &dim_col[i]));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "use_gated_mlp", &gated_col));
  if (csv.rows.empty()) return Status::Invalid(path + ": no data rows");

  std::vector<VidurComputeRow> rows;
  int64_t first[4] = {0, 0, 0, 0};  // the model's dimensions: the same on every row
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    VidurComputeRow row;
    row.line = csv.lines[r];
    int64_t* const dims[] = {&row.hidden, &row.heads, &row.kv_heads, &row.intermediate};
    for (int i = 0; i < 4; ++i) {
      FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, dim_col[i], dims[i]));
      if (r == 0) first[i] = *dims[i];
      const int64_t want = first[i];
      if (*dims[i] != want)
        return Status::Invalid(Where(csv, r) + kDims[i] + ": " + std::to_string(*dims[i]) +
                               " differs from the first row's " + std::to_string(want) + " (one model per file)");
    }
    FLEETSIM_RETURN_IF_ERROR(Boolean(csv, r, gated_col, &row.gated_mlp));
    for (int i = 0; i < kOps; ++i) {
      double ms = 0;
      FLEETSIM_RETURN_IF_ERROR(Number(csv, r, op_col[i], &ms));
      row.*(kComputeColumns[i].ns) = ms * kNsPerMs;
    }
    int64_t tp = 0;
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, tokens_col, &row.tokens));
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, tp_col, &tp));
    if (tp > 1024)
      return Status::Invalid(Where(csv, r) + "num_tensor_parallel_workers: implausible " + std::to_string(tp));
    row.tp = static_cast<int>(tp);
    // Vidur's layer asserts these (mlp_impl.py): each worker holds whole
    // heads and an equal share of the MLP.
    if (row.hidden % row.heads != 0)
      return Status::Invalid(Where(csv, r) + "n_embd " + std::to_string(row.hidden) + " is not a multiple of n_head " +
                             std::to_string(row.heads));
    if (row.heads % tp != 0 || row.kv_heads % tp != 0 || row.intermediate % tp != 0)
      return Status::Invalid(Where(csv, r) + "num_tensor_parallel_workers " + std::to_string(tp) +
                             " does not divide n_head, n_kv_head and n_expanded_embd (" + Shape(row) + ")");
    rows.push_back(row);
  }
  *out = std::move(rows);
  return Status::Ok();
}

std::vector<VidurOpTime> VidurOpTimes(const VidurComputeRow& r) {
  const double tp = r.tp, m = static_cast<double>(r.tokens), hidden = static_cast<double>(r.hidden);
  const double head_dim = static_cast<double>(r.hidden / r.heads);
  const double heads = static_cast<double>(r.heads) / tp, kv_heads = static_cast<double>(r.kv_heads) / tp;
  const double inter = static_cast<double>(r.intermediate) / tp;
  const double up_n = (r.gated_mlp ? 2 : 1) * inter;
  const std::string act = r.gated_mlp ? "silu_mul" : "gelu";
  return {
      {"embedding", "emb", m, hidden, r.emb_ns, 0, false},
      {"rms_norm", "input_layernorm", m, hidden, r.input_norm_ns, 1, false},
      {"gemm", "attn_pre_proj", m, (heads + 2 * kv_heads) * head_dim * hidden, r.pre_proj_ns, 1, true},
      {"rope", "attn_rope", m, (heads + kv_heads) * head_dim, r.rope_ns, 1, false},
      {"gemm", "attn_post_proj", m, hidden * heads * head_dim, r.post_proj_ns, 1, true},
      {"rms_norm", "post_attention_layernorm", m, hidden, r.post_norm_ns, 1, false},
      {"gemm", "mlp_up_proj", m, up_n * hidden, r.up_proj_ns, 1, true},
      {act, "mlp_act", m, inter, r.act_ns, 1, false},
      {"gemm", "mlp_down_proj", m, hidden * inter, r.down_proj_ns, 1, true},
      {"residual_add", "add", m, hidden, r.add_ns, 2, false},
  };
}

Status FitVidurCompute(const std::vector<VidurComputeRow>& rows, const std::string& dtype,
                       std::map<std::string, FittedCurve>* fits) {
  struct Op {
    std::vector<calibrate::FitSample> samples;
    std::map<double, int> groups;  // scale -> group
  };
  std::map<std::string, Op> ops;
  for (const VidurComputeRow& r : rows) {
    for (const VidurOpTime& t : VidurOpTimes(r)) {
      // A zero median (a kernel below the timer's resolution) has no
      // relative error to fit; such points are left out.
      if (t.ns <= 0) continue;
      Op& op = ops[t.op];
      const int group = op.groups.emplace(t.scale, static_cast<int>(op.groups.size())).first->second;
      op.samples.push_back({t.size, t.scale, t.ns, group});
    }
  }
  for (const auto& [name, op] : ops) {
    FittedCurve f;
    const bool gemm = name == "gemm";
    FLEETSIM_RETURN_IF_ERROR(
        calibrate::FitScaled(op.samples, calibrate::FitOptions(), gemm ? "m" : "tokens", gemm ? "n*k" : "width", &f)
            .WithPrefix("fitting " + name + ": "));
    (*fits)[name + "." + dtype] = std::move(f);
  }
  return Status::Ok();
}

Status VidurDeviceFromPath(const std::string& path, const Catalog& catalog, std::string* device) {
  // Vidur's device folders, and the GPU each names.
  const std::pair<const char*, const char*> kTags[] = {{"h100", "H100-SXM"}, {"a100", "A100-80G"}, {"a40", "A40"}};
  std::set<std::string> found;
  std::string word;
  for (size_t i = 0; i <= path.size(); ++i) {
    const char c = i < path.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(path[i]))) : '/';
    if (c == '/' || c == '_' || c == '.') {
      for (const auto& [tag, gpu] : kTags)
        if (word == tag) found.insert(tag);
      word.clear();
    } else {
      word += c;
    }
  }
  const std::string pass = "; pass the GPU with --device NAME (known: " + JoinNames(catalog.GpuNames()) + ")";
  if (found.empty())
    return Status::Invalid(path + ": no Vidur device tag (h100, a100, a40) in the file's path to tell the GPU from" +
                           pass);
  if (found.size() > 1)
    return Status::Invalid(path + ": several Vidur device tags in the path (" +
                           JoinNames(std::vector<std::string>(found.begin(), found.end())) + ")" + pass);
  for (const auto& [tag, gpu] : kTags) {
    if (*found.begin() != tag) continue;
    if (catalog.FindGpu(gpu) == nullptr)
      return Status::Invalid(path + ": Vidur's \"" + tag + "\" profiles were measured on an " + gpu +
                             ", which the hardware catalogue lacks" + pass);
    *device = gpu;
  }
  return Status::Ok();
}

Status ImportVidur(const std::string& compute_csv_path, const std::vector<std::string>& network_csv_paths,
                   const ImportOptions& options, Profile* out) {
  if (options.device.empty())
    return Status::Invalid("the device the CSVs were measured on must be named (a hardware catalogue name)");
  if (options.catalog && options.catalog->FindGpu(options.device) == nullptr)
    return Status::Invalid("unknown device \"" + options.device +
                           "\" (known: " + JoinNames(options.catalog->GpuNames()) + ")");
  Profile p;
  p.device = options.device;
  p.date = options.date;
  p.source = "Vidur (microsoft/vidur, data/profiling/, MIT licence), converted by fleetsim calibrate import-vidur";
  int repeats = 0;
  VidurComputeRow dims;
  FLEETSIM_RETURN_IF_ERROR(ImportCompute(compute_csv_path, options, &p, &repeats, &dims));
  if (!options.attention_csv.empty()) {
    FLEETSIM_RETURN_IF_ERROR(ImportAttention(options.attention_csv, dims, &p));
  } else {
    p.notes.push_back("no attention in the source: attention_prefill and attention_decode stay roofline");
  }
  for (const std::string& path : network_csv_paths) FLEETSIM_RETURN_IF_ERROR(ImportNetwork(path, &p, &repeats));
  if (repeats > 0)
    p.notes.push_back(std::to_string(repeats) + " repeated grid points in the source were averaged");
  p.notes.push_back("times are medians of the source's repetitions, converted from ms to ns");
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace fleetsim
