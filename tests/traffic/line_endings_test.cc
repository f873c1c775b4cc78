// Every text input read by sim/traffic accepts a UTF-8 byte order mark at
// the start and CRLF line endings, with the same result as plain LF text:
// each trace format, the length CSV and ServeGen's dataset JSON.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/traffic/azure_trace.h"
#include "sim/traffic/burstgpt_trace.h"
#include "sim/traffic/csv_trace.h"
#include "sim/traffic/length_table.h"
#include "sim/traffic/mooncake_trace.h"
#include "sim/traffic/servegen_dataset.h"
#include "sim/traffic/servegen_trace.h"
#include "sim/traffic/splitwise_trace.h"
#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::Drain;
using testing_traffic::StreamOf;

constexpr char kBom[] = "\xEF\xBB\xBF";

std::string Crlf(const std::string& lf) {
  std::string out;
  for (char c : lf) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

using Opener = std::function<Status(std::string text, std::unique_ptr<RequestSource>*)>;

template <typename Reader>
Opener Plain() {
  return [](std::string text, std::unique_ptr<RequestSource>* out) {
    return Reader::FromStream("t", StreamOf(text), out);
  };
}

struct Format {
  const char* name;
  Opener open;
  std::string text;  // LF, with a final newline
  size_t rows;
};

std::vector<Format> Formats() {
  return {
      {"azure", Plain<AzureTraceReader>(),
       "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n"
       "2023-11-16 18:17:04.0319600,3180,8\n",
       2},
      {"mooncake", Plain<MooncakeTraceReader>(),
       "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n"
       "{\"timestamp\": 1500, \"input_length\": 20, \"output_length\": 6}\n",
       2},
      {"csv", Plain<CsvTraceReader>(), "arrival_s,prompt_tokens,output_tokens,model\n0,5,6,m\n0.5,7,8,\n", 2},
      {"burstgpt", Plain<BurstGptTraceReader>(),
       "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
       "5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,230,1317,API log\n",
       2},
      {"splitwise", Plain<SplitwiseTraceReader>(),
       "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,374,44\n4.314579,396,109\n", 2},
      {"servegen", Plain<ServeGenTraceSource>(), "0,0.01,1,Gamma,0.5,1\n600,0.005,1,Weibull,0.5,1\n", 9},
  };
}

std::vector<Request> Read(const Format& f, const std::string& text) {
  std::unique_ptr<RequestSource> src;
  Status s = f.open(text, &src);
  EXPECT_TRUE(s.ok()) << f.name << ": " << s.message();
  if (!s.ok()) return {};
  std::vector<Request> rows = Drain(*src);
  EXPECT_TRUE(src->status().ok()) << f.name << ": " << src->status().message();
  return rows;
}

void ExpectSame(const std::vector<Request>& a, const std::vector<Request>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival) << what << " row " << i;
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens) << what << " row " << i;
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens) << what << " row " << i;
    EXPECT_EQ(a[i].model, b[i].model) << what << " row " << i;
    EXPECT_EQ(a[i].prefix_blocks, b[i].prefix_blocks) << what << " row " << i;
  }
}

TEST(LineEndings, EveryTraceFormatAcceptsBomAndCrlf) {
  for (const Format& f : Formats()) {
    SCOPED_TRACE(f.name);
    const std::vector<Request> base = Read(f, f.text);
    ASSERT_EQ(base.size(), f.rows);
    ExpectSame(base, Read(f, kBom + f.text), std::string(f.name) + " BOM");
    ExpectSame(base, Read(f, Crlf(f.text)), std::string(f.name) + " CRLF");
    ExpectSame(base, Read(f, kBom + Crlf(f.text)), std::string(f.name) + " BOM+CRLF");
    // Without the final line ending, too.
    std::string crlf = Crlf(f.text);
    crlf.resize(crlf.size() - 2);
    ExpectSame(base, Read(f, kBom + crlf), std::string(f.name) + " BOM+CRLF, no final newline");
  }
}

TEST(LineEndings, LengthCsvAcceptsBomAndCrlf) {
  const std::string lf = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n11,22,33,0.5\n3,4,7,0.75\n";
  for (const std::string& text : {lf, kBom + lf, Crlf(lf), kBom + Crlf(lf)}) {
    std::unique_ptr<LengthTable> t;
    Status s = LengthTable::FromStream("l.csv", StreamOf(text), &t);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(t->rows().size(), 2u);
    EXPECT_EQ(t->rows()[1].prompt_tokens, 3);
    EXPECT_EQ(t->rows()[1].output_tokens, 4);
  }
}

TEST(LineEndings, ServeGenDatasetAcceptsBomAndCrlf) {
  const std::string lf = "{\n  \"0\": {\n    \"input_tokens\": \"{5: 1.0}\",\n    \"output_tokens\": \"{6: 1.0}\"\n  }\n}\n";
  for (const std::string& text : {lf, kBom + lf, Crlf(lf), kBom + Crlf(lf)}) {
    std::unique_ptr<ServeGenDataset> d;
    Status s = ServeGenDataset::FromText("d.json", text, &d);
    ASSERT_TRUE(s.ok()) << s.message();
    Rng rng(1);
    int32_t p = 0, o = 0;
    d->Sample(d->Find(0), rng, &p, &o);
    EXPECT_EQ(p, 5);
    EXPECT_EQ(o, 6);
  }
}

}  // namespace
}  // namespace fleetsim
