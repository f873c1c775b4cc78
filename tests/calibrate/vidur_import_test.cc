#include "calibrate/vidur_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fleetsim {
namespace {

const std::string kData = std::string(FLEETSIM_SOURCE_DIR) + "/tests/calibrate/data/";
const std::string kCompute = kData + "compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv";
const std::string kAllReduce = kData + "network_h100_dgx_all_reduce.csv";
const std::string kSendRecv = kData + "network_h100_dgx_send_recv.csv";

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
  ImportOptions o;
  o.model = "Llama-2-7B";
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
  ImportOptions o;
  o.model = "Llama-2-7B";
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
  ImportOptions o;
  o.model = "Llama-2-7B";
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
  ImportOptions o;
  o.model = "Llama-2-7B";
  Profile p;
  const Status s = ImportVidur(path, {}, o, &p);
  EXPECT_EQ(s.message(), path + ":1: missing column \"time_stats.emb.median\"");
}

}  // namespace
}  // namespace fleetsim
