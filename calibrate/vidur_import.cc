#include "calibrate/vidur_import.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "base/file.h"

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

const char* const kComputeOps[] = {"emb",           "input_layernorm", "attn_pre_proj", "attn_rope",
                                   "attn_post_proj", "post_attention_layernorm", "mlp_up_proj", "mlp_act",
                                   "mlp_down_proj", "add"};
enum Op { kEmb, kInputNorm, kPreProj, kRope, kPostProj, kPostNorm, kUpProj, kAct, kDownProj, kAdd, kNumOps };

Status ImportCompute(const std::string& path, const ImportOptions& options, Profile* p, int* repeats) {
  Csv csv;
  FLEETSIM_RETURN_IF_ERROR(ReadCsv(path, &csv));
  int op_col[kNumOps];
  for (int i = 0; i < kNumOps; ++i)
    FLEETSIM_RETURN_IF_ERROR(Column(csv, std::string("time_stats.") + kComputeOps[i] + ".median", &op_col[i]));
  int tokens_col = 0, tp_col = 0;
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "num_tokens", &tokens_col));
  FLEETSIM_RETURN_IF_ERROR(Column(csv, "num_tensor_parallel_workers", &tp_col));
  const char* const kDims[] = {"n_embd", "n_head", "n_kv_head", "n_expanded_embd"};
  int dim_col[4];
  for (int i = 0; i < 4; ++i) FLEETSIM_RETURN_IF_ERROR(Column(csv, kDims[i], &dim_col[i]));
  if (csv.rows.empty()) return Status::Invalid(path + ": no data rows");

  // Model dimensions: the same on every row.
  int64_t dims[4] = {0, 0, 0, 0};
  std::map<int, Accumulator> gemm, elementwise, embedding;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    for (int i = 0; i < 4; ++i) {
      int64_t d = 0;
      FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, dim_col[i], &d));
      if (r == 0) dims[i] = d;
      if (d != dims[i])
        return Status::Invalid(Where(csv, r) + kDims[i] + ": " + std::to_string(d) + " differs from the first row's " +
                               std::to_string(dims[i]) + " (one model per file)");
    }
    double ms[kNumOps];
    for (int i = 0; i < kNumOps; ++i) FLEETSIM_RETURN_IF_ERROR(Number(csv, r, op_col[i], &ms[i]));
    int64_t tokens = 0, tp = 0;
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, tokens_col, &tokens));
    FLEETSIM_RETURN_IF_ERROR(Integer(csv, r, tp_col, &tp));
    if (tp > 1024) return Status::Invalid(Where(csv, r) + "num_tensor_parallel_workers: implausible " + std::to_string(tp));
    const int t = static_cast<int>(tp);
    const double x = static_cast<double>(tokens);
    gemm[t].Add(x, (ms[kPreProj] + ms[kPostProj] + ms[kUpProj] + ms[kDownProj]) * kNsPerMs);
    elementwise[t].Add(x, (ms[kInputNorm] + ms[kPostNorm] + ms[kRope] + ms[kAct] + 2 * ms[kAdd]) * kNsPerMs);
    embedding[t].Add(x, ms[kEmb] * kNsPerMs);
  }

  // Which model: named, checked against the catalogue, or inferred from it.
  auto matches = [&](const ModelSpec& m) {
    return m.hidden == dims[0] && m.heads == dims[1] && m.kv_heads == dims[2] && m.intermediate == dims[3];
  };
  const std::string shape = "n_embd " + std::to_string(dims[0]) + ", n_head " + std::to_string(dims[1]) +
                            ", n_kv_head " + std::to_string(dims[2]) + ", n_expanded_embd " + std::to_string(dims[3]);
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
  for (const auto& [tp, acc] : gemm) {
    p->gemm[tp] = acc.Curve();
    *repeats += acc.repeats();
  }
  for (const auto& [tp, acc] : elementwise) p->elementwise[tp] = acc.Curve();
  for (const auto& [tp, acc] : embedding) p->embedding[tp] = acc.Curve();
  p->notes.push_back("compute: " + path.substr(path.find_last_of('/') + 1) + " (" + shape +
                     "), medians; gemm = attn_pre_proj + attn_post_proj + mlp_up_proj + mlp_down_proj; "
                     "elementwise = input_layernorm + post_attention_layernorm + attn_rope + mlp_act + 2 x add "
                     "(assumed: Vidur's add timer is one residual add, and a layer has two); embedding = emb");
  p->notes.push_back("no attention in the source: attention_prefill and attention_decode stay roofline");
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

Status ImportVidur(const std::string& compute_csv_path, const std::vector<std::string>& network_csv_paths,
                   const ImportOptions& options, Profile* out) {
  Profile p;
  p.device = options.device;
  p.date = options.date;
  p.source = "Vidur (microsoft/vidur, data/profiling/, MIT licence), converted by fleetsim calibrate import-vidur";
  int repeats = 0;
  FLEETSIM_RETURN_IF_ERROR(ImportCompute(compute_csv_path, options, &p, &repeats));
  for (const std::string& path : network_csv_paths) FLEETSIM_RETURN_IF_ERROR(ImportNetwork(path, &p, &repeats));
  if (repeats > 0)
    p.notes.push_back(std::to_string(repeats) + " repeated grid points in the source were averaged");
  p.notes.push_back("times are medians of the source's repetitions, converted from ms to ns");
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace fleetsim
