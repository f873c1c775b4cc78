#include "calibrate/vidur_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/model/builtin.h"
#include "model/profile_perf_model.h"

namespace fleetsim {
namespace {

const std::string kData = std::string(FLEETSIM_SOURCE_DIR) + "/tests/calibrate/data/";
const std::string kCompute = kData + "compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv";
const std::string kAllReduce = kData + "network_h100_dgx_all_reduce.csv";
const std::string kSendRecv = kData + "network_h100_dgx_send_recv.csv";
const std::string kAttention = kData + "vidur_attention_llama2-7b_handwritten.csv";

// Options naming the model and GPU of the bundled compute CSV.
ImportOptions Llama7bOnH100() {
  ImportOptions o;
  o.model = "Llama-2-7B";
  o.device = "H100-SXM";
  return o;
}

Catalog Builtin() {
  Catalog c;
  const Status s = Catalog::LoadBuiltin(&c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

TEST(VidurImport, ComputeRowIsMedianMillisecondsSummedPerKind) {
  const Catalog catalog = Builtin();
  ImportOptions o;
  o.catalog = &catalog;  // model inferred from the dimensions
  o.device = "H100-SXM";
  Profile p;
  const Status s = ImportVidur(kCompute, {}, o, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p.model, "Llama-2-7B");
  ASSERT_EQ(p.gemm.size(), 4u);  // tp 1, 2, 4, 8
  // Line 262, tp 1, 1 token: medians (ms) pre 0.038, post 0.016, up 0.064,
  // down 0.038; norms 0.004 + 0.004, rope 0.004, act 0.006, add 0.001;
  // emb 0.002.
  const ProfileCurve& g = p.gemm.at(1);
  ASSERT_EQ(g.x[0], 1);
  EXPECT_NEAR(g.ns[0], (0.038 + 0.016 + 0.064 + 0.038) * 1e6, 1e-2);
  EXPECT_NEAR(p.elementwise.at(1).ns[0], (0.004 + 0.004 + 0.004 + 0.006 + 2 * 0.001) * 1e6, 1e-2);
  EXPECT_NEAR(p.embedding.at(1).ns[0], 0.002 * 1e6, 1e-2);
  // Line 261, tp 1, 2 tokens.
  ASSERT_EQ(g.x[1], 2);
  EXPECT_NEAR(g.ns[1], (0.036 + 0.016 + 0.063 + 0.036) * 1e6, 1e-2);
  EXPECT_NEAR(p.elementwise.at(1).ns[1], (0.004 + 0.004 + 0.004 + 0.007 + 2 * 0.001) * 1e6, 1e-2);
  // 259 token counts per tp; repeated rows were averaged into one point.
  EXPECT_EQ(g.x.size(), 259u);
  EXPECT_EQ(g.x.back(), 4096);
}

TEST(VidurImport, SendRecvSplitByDevicesPerNode) {
  ImportOptions o = Llama7bOnH100();
  Profile p;
  const Status s = ImportVidur(kCompute, {kAllReduce, kSendRecv}, o, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  // Index 0: 2048 B, devices_per_node 1, median 0.017 ms; index 994: 2048 B,
  // devices_per_node 2, median 0.005 ms; index 995: 10240 B, 0.006 ms.
  ASSERT_FALSE(p.send_recv_inter_node.empty());
  ASSERT_FALSE(p.send_recv_intra_node.empty());
  EXPECT_EQ(p.send_recv_inter_node.x[0], 2048);
  EXPECT_NEAR(p.send_recv_inter_node.ns[0], 17000, 1e-2);
  EXPECT_NEAR(p.send_recv_intra_node.ns[0], 5000, 1e-2);
  EXPECT_NEAR(p.send_recv_intra_node.ns[1], 6000, 1e-2);
  // All-reduce: 2, 4 and 8 workers; first row 8 workers, 2048 B, 0.037 ms.
  ASSERT_EQ(p.all_reduce_intra_node.size(), 3u);
  EXPECT_NEAR(p.all_reduce_intra_node.at(8).ns[0], 37000, 1e-2);
}

TEST(VidurImport, ModelWithOtherDimensionsIsRefused) {
  const Catalog catalog = Builtin();
  ImportOptions o;
  o.catalog = &catalog;
  o.device = "H100-SXM";
  o.model = "Llama-3.1-8B";
  Profile p;
  const Status s = ImportVidur(kCompute, {}, o, &p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("are not those of Llama-3.1-8B"), std::string::npos) << s.message();
}

class Scratch {
 public:
  Scratch() : dir_(std::filesystem::temp_directory_path() / ("fleetsim_vidur_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

 private:
  std::filesystem::path dir_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(VidurImport, CorruptComputeRowNamesFileAndLine) {
  std::string text = ReadAll(kCompute);
  // Corrupt line 3's fourth field, time_stats.emb.median.
  const size_t line3 = text.find('\n', text.find('\n') + 1) + 1;
  size_t field = line3;
  for (int i = 0; i < 3; ++i) field = text.find(',', field) + 1;
  text.replace(field, text.find(',', field) - field, "abc");
  Scratch dir;
  const std::string path = dir.Write("compute.csv", text);
  ImportOptions o = Llama7bOnH100();
  Profile p;
  const Status s = ImportVidur(path, {}, o, &p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), path + ":3: time_stats.emb.median: expected a non-negative number, got \"abc\"")
      << s.message();
}

TEST(VidurImport, CorruptNetworkRowNamesFileAndLine) {
  Scratch dir;
  const std::string header =
      ",time_stats.send_recv.min,time_stats.send_recv.max,time_stats.send_recv.mean,time_stats.send_recv.median,"
      "time_stats.send_recv.std,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n";
  const std::string short_row = dir.Write("a.csv", header + "0,0.01,0.02,0.015,0.017,0.004,0,2,2048,send_recv,1,8\n"
                                                            "1,0.01,0.02\n");
  const std::string bad_dpn = dir.Write("b.csv", header + "0,0.01,0.02,0.015,0.017,0.004,0,2,2048,send_recv,4,8\n");
  const std::string bad_median = dir.Write("c.csv", header + "0,0.01,0.02,0.015,-1,0.004,0,2,2048,send_recv,1,8\n");
  ImportOptions o = Llama7bOnH100();
  Profile p;
  Status s = ImportVidur(kCompute, {short_row}, o, &p);
  EXPECT_EQ(s.message(), short_row + ":3: 3 fields, header has 12");
  s = ImportVidur(kCompute, {bad_dpn}, o, &p);
  EXPECT_EQ(s.message().rfind(bad_dpn + ":2: devices_per_node", 0), 0u) << s.message();
  s = ImportVidur(kCompute, {bad_median}, o, &p);
  EXPECT_EQ(s.message(), bad_median + ":2: time_stats.send_recv.median: expected a non-negative number, got \"-1\"");
}

TEST(VidurImport, MissingColumnIsNamed) {
  Scratch dir;
  const std::string path = dir.Write("x.csv", "a,b\n1,2\n");
  ImportOptions o = Llama7bOnH100();
  Profile p;
  const Status s = ImportVidur(path, {}, o, &p);
  EXPECT_EQ(s.message(), path + ":1: missing column \"time_stats.emb.median\"");
}

TEST(VidurImport, DeviceIsRequiredAndChecked) {
  const Catalog catalog = Builtin();
  ImportOptions o;
  o.model = "Llama-2-7B";
  Profile p;
  EXPECT_EQ(ImportVidur(kCompute, {}, o, &p).message(),
            "the device the CSVs were measured on must be named (a hardware catalogue name)");
  o.catalog = &catalog;
  o.device = "H100";
  const Status s = ImportVidur(kCompute, {}, o, &p);
  EXPECT_EQ(s.message().rfind("unknown device \"H100\" (known: A100-40G, A100-80G, ", 0), 0u) << s.message();
  o.device = "A100-80G";
  ASSERT_TRUE(ImportVidur(kCompute, {}, o, &p).ok());
  EXPECT_EQ(p.device, "A100-80G");  // as named: the importer does not second-guess it
}

TEST(VidurImport, DeviceFromVidurTagInThePath) {
  const Catalog catalog = Builtin();
  struct Case {
    std::string path, device;
  };
  const Case found[] = {
      {"data/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv", "H100-SXM"},
      {"/x/compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv", "H100-SXM"},
      {"data/profiling/compute/a100/codellama/CodeLlama-34b-Instruct-hf/mlp.csv", "A100-80G"},
      {"copies/compute_A100_Qwen_Qwen-72B_mlp.csv", "A100-80G"},  // case-insensitive
  };
  for (const Case& c : found) {
    std::string device;
    const Status s = VidurDeviceFromPath(c.path, catalog, &device);
    ASSERT_TRUE(s.ok()) << c.path << ": " << s.message();
    EXPECT_EQ(device, c.device) << c.path;
  }
  const Case refused[] = {
      {"data/profiling/compute/a40/microsoft/phi-2/mlp.csv",
       "Vidur's \"a40\" profiles were measured on an A40, which the hardware catalogue lacks; pass the GPU with "
       "--device NAME (known: "},
      {"mlp.csv", "no Vidur device tag (h100, a100, a40) in the file's path"},
      {"/x/h100x/mlp.csv", "no Vidur device tag"},  // a tag only as a whole word
      {"/x/h100/a100/mlp.csv", "several Vidur device tags in the path (a100, h100)"},
  };
  for (const Case& c : refused) {
    std::string device = "unchanged";
    const Status s = VidurDeviceFromPath(c.path, catalog, &device);
    ASSERT_FALSE(s.ok()) << c.path;
    EXPECT_EQ(s.message().rfind(c.path + ": " + c.device, 0), 0u) << s.message();
    EXPECT_NE(s.message().find("pass the GPU with --device NAME (known: A100-40G"), std::string::npos);
    EXPECT_EQ(device, "unchanged");
  }
}

TEST(VidurImport, GemmShapesFollowVidursReferenceLayer) {
  // Llama-2-7B at tp 2: 16 heads and 16 KV heads of 128 per worker.
  VidurComputeRow r{.tokens = 64, .tp = 2, .heads = 32, .kv_heads = 32, .hidden = 4096, .intermediate = 11008};
  std::map<std::string, double> scale;
  for (const VidurOpTime& t : VidurOpTimes(r)) {
    EXPECT_EQ(t.size, 64) << t.column;
    scale[t.column] = t.scale;
  }
  ASSERT_EQ(scale.size(), 10u);
  EXPECT_EQ(scale["attn_pre_proj"], (16.0 + 2 * 16) * 128 * 4096);  // n = q + k + v of this worker, k = hidden
  EXPECT_EQ(scale["attn_post_proj"], 4096.0 * 16 * 128);            // k = this worker's heads
  EXPECT_EQ(scale["mlp_up_proj"], 2.0 * 5504 * 4096);               // gate and up fused
  EXPECT_EQ(scale["mlp_down_proj"], 4096.0 * 5504);
  EXPECT_EQ(scale["attn_rope"], (16.0 + 16) * 128);
  EXPECT_EQ(scale["mlp_act"], 5504);
  EXPECT_EQ(scale["input_layernorm"], 4096);
  // Grouped-query attention without a gated MLP (GELU): CodeLlama-34B's
  // heads at tp 8, a hypothetical plain MLP.
  r = {.tokens = 64, .tp = 8, .heads = 64, .kv_heads = 8, .hidden = 8192, .intermediate = 22016, .gated_mlp = false};
  std::map<std::string, std::string> op;
  for (const VidurOpTime& t : VidurOpTimes(r)) {
    scale[t.column] = t.scale;
    op[t.column] = t.op;
  }
  EXPECT_EQ(scale["attn_pre_proj"], (8.0 + 2 * 1) * 128 * 8192);
  EXPECT_EQ(scale["mlp_up_proj"], 2752.0 * 8192);  // up alone
  EXPECT_EQ(op["mlp_act"], "gelu");
  EXPECT_EQ(op["mlp_up_proj"], "gemm");
}

TEST(VidurImport, WritesFittedCurvesOfEveryOperator) {
  ImportOptions o = Llama7bOnH100();
  Profile p;
  ASSERT_TRUE(ImportVidur(kCompute, {}, o, &p).ok());
  // Vidur times fp16. 1044 rows; four GEMMs and two norms per row.
  const std::map<std::string, int> samples = {{"gemm.fp16", 4 * 1044},     {"rms_norm.fp16", 2 * 1044},
                                              {"residual_add.fp16", 1044}, {"rope.fp16", 1044},
                                              {"silu_mul.fp16", 1044},     {"embedding.fp16", 1044}};
  ASSERT_EQ(p.fits.size(), samples.size());
  for (const auto& [key, n] : samples) {
    ASSERT_TRUE(p.fits.count(key)) << key;
    EXPECT_EQ(p.fits.at(key).samples, n) << key;
  }
  const FittedCurve& g = p.fits.at("gemm.fp16");
  EXPECT_EQ(g.size_var, "m");
  EXPECT_EQ(g.scale_var, "n*k");
  // 16 weights (4 GEMMs x 4 tps), 13 distinct n*k: the groups held out.
  EXPECT_EQ(g.cv_method, "leave-one-group-out over 13 groups");
  // rope and silu_mul widths change with tp: 4 groups each.
  EXPECT_EQ(p.fits.at("rope.fp16").cv_method, "leave-one-group-out over 4 groups");
  // The fit reproduces the file: line 262 (tp 1, 1 token), the layer's
  // GEMMs 0.156 ms; line 2 (tp 1, 4096 tokens), 2.209 ms.
  const double qkv = 4096.0 * 3 * 4096, o_proj = 4096.0 * 4096, up = 2 * 11008.0 * 4096, down = 11008.0 * 4096;
  const double at1 = g.Predict(1, qkv) + g.Predict(1, o_proj) + g.Predict(1, up) + g.Predict(1, down);
  const double at4096 = g.Predict(4096, qkv) + g.Predict(4096, o_proj) + g.Predict(4096, up) + g.Predict(4096, down);
  EXPECT_NEAR(at1 / ((0.038 + 0.016 + 0.064 + 0.038) * 1e6), 1, 0.2);
  EXPECT_NEAR(at4096 / ((0.584 + 0.193 + 0.987 + 0.441) * 1e6), 1, 0.1);
  // Cross-validated error is recorded; the transfer test bounds it.
  EXPECT_GT(g.cv_median_rel_error, 0);
  EXPECT_LT(g.cv_median_rel_error, 0.15);
}

TEST(VidurImport, ImportedFitsTimeAnotherModelOnTheSameGpu) {
  const Catalog catalog = Builtin();
  ImportOptions o;
  o.catalog = &catalog;
  o.device = "H100-SXM";
  Profile p;
  ASSERT_TRUE(ImportVidur(kCompute, {kAllReduce}, o, &p).ok());
  // Llama-3.1-8B (bf16) from a Llama-2-7B profile (fp16 fits): the other
  // 16-bit type stands in.
  const ModelSpec& m = *catalog.FindModel("Llama-3.1-8B");
  ShardPlan tp2;
  tp2.tp = 2;
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s =
      ProfilePerfModel::Create(p, "v.json", m, *catalog.FindGpu("H100-SXM"), tp2, model_test::BuiltinEngine("vllm"), {}, &pm);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<std::pair<std::string, std::string>> sources = pm->Sources();
  std::map<std::string, std::string> source(sources.begin(), sources.end());
  EXPECT_EQ(source["gemm"], "fitted:v.json");
  EXPECT_EQ(source["elementwise"], "fitted:v.json");
  EXPECT_EQ(source["all_reduce"], "profile:v.json");
  EXPECT_EQ(source["attention_prefill"], "roofline");
  EXPECT_EQ(source["attention_decode"], "roofline");
}

TEST(VidurImport, AttentionRowsAreFittedWithBatchAndContextApart) {
  ImportOptions o = Llama7bOnH100();
  o.attention_csv = kAttention;
  Profile p;
  const Status s = ImportVidur(kCompute, {}, o, &p);
  ASSERT_TRUE(s.ok()) << s.message();
  // The hand-written file follows, per unit of heads·head_dim (4096 at tp 1,
  // 2048 at tp 2): prefill 8 µs + 7e-6 ns per query-key pair; decode 6 µs +
  // 0.05 ns per sequence + 0.0006 ns per KV token (data/README.md).
  const FittedCurve& pre = p.fits.at("attention_prefill.fp16");
  const FittedCurve& dec = p.fits.at("attention_decode.fp16");
  EXPECT_EQ(pre.samples, 14);
  EXPECT_EQ(dec.samples, 14);
  EXPECT_EQ(pre.count_var, "");
  EXPECT_EQ(dec.count_var, "seqs");
  EXPECT_NEAR(pre.fixed_ns, 8000, 1e-3 * 8000);
  EXPECT_NEAR(dec.fixed_ns, 6000, 1e-3 * 6000);
  EXPECT_NEAR(dec.per_count, 0.05, 1e-3 * 0.05);
  // A chunk of 512 after 1536 cached tokens at tp 1: pairs 512·1536 + 512·513/2.
  const double pairs = 512.0 * 1536 + 512.0 * 513 / 2;
  EXPECT_NEAR(pre.Predict(pairs, 4096), 8000 + 4096 * 7e-6 * pairs, 1e-4 * 8000);
  // 128 sequences of 31 cached tokens and 1 of 4095: 4096 KV tokens each,
  // told apart.
  EXPECT_NEAR(dec.Predict(4096, 4096, 128), 6000 + 4096 * (0.05 * 128 + 0.0006 * 4096), 1);
  EXPECT_NEAR(dec.Predict(4096, 4096, 1), 6000 + 4096 * (0.05 + 0.0006 * 4096), 1);
  for (const char* kind : {"attention_prefill", "attention_decode"}) {
    ASSERT_TRUE(p.attention.count(kind)) << kind;
    EXPECT_TRUE(p.attention.at(kind).use_measured) << kind;
  }
  // The profile with attention round-trips through its JSON.
  std::string text;
  Profile back;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok() && LoadProfile(text, "v.json", &back).ok());
  EXPECT_TRUE(back == p);
}

TEST(VidurImport, BadAttentionRowsNameFileAndLine) {
  const std::string text = ReadAll(kAttention);
  Scratch dir;
  auto replace_in_line = [&](int line, const std::string& from, const std::string& to) {
    std::string t = text;
    size_t at = 0;
    for (int i = 1; i < line; ++i) at = t.find('\n', at) + 1;
    const size_t pos = t.find(from, at);
    EXPECT_LT(pos, t.find('\n', at));
    t.replace(pos, from.size(), to);
    return t;
  };
  ImportOptions o = Llama7bOnH100();
  Profile p;
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      // Line 2 is a prefill row of tp 1; line 9 the first decode row.
      {replace_in_line(2, ",4096,32,32,", ",5120,32,32,"),
       ":2: n_embd 5120 is not the compute file's 4096 (attention and compute of one model)"},
      {replace_in_line(2, ",True,", ",yes,"), ":2: is_prefill: expected True or False, got \"yes\""},
      {replace_in_line(9, ",0,63,False", ",8,63,False"), ":9: prefill_chunk_size 8 must be 0 in a decode row"},
      {replace_in_line(9, ",0.0063620864,", ",,"), ":9: time_stats.attn_decode.median: expected a non-negative number"},
      {replace_in_line(1, "attn_decode.median", "attn_decode.p50"),
       ":1: missing column \"time_stats.attn_decode.median\""},
  };
  int i = 0;
  for (const Case& c : cases) {
    o.attention_csv = dir.Write("a" + std::to_string(i++) + ".csv", c.text);
    const Status s = ImportVidur(kCompute, {}, o, &p);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_EQ(s.message().rfind(o.attention_csv + c.message, 0), 0u) << s.message();
  }
}

TEST(VidurImport, MissingGatedMlpColumnIsNamed) {
  std::string text = ReadAll(kCompute);
  const size_t at = text.find("use_gated_mlp");
  text.replace(at, 13, "gated");
  Scratch dir;
  const std::string path = dir.Write("c.csv", text);
  ImportOptions o = Llama7bOnH100();
  Profile p;
  EXPECT_EQ(ImportVidur(path, {}, o, &p).message(), path + ":1: missing column \"use_gated_mlp\"");
}

}  // namespace
}  // namespace fleetsim
