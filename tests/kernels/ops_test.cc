// The CPU reference ops (the yardstick of every other backend) against
// hand-computed values, properties that a wrong implementation breaks
// (RoPE at position 0 is the identity; causal masking; GQA head sharing;
// paged equals contiguous), and naive double-precision loops; plus the
// argument validation every backend shares.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "tests/kernels/ops_testutil.h"

namespace fleetsim::kernels {
namespace {

using testing::CompareTensors;
using testing::DecodeProblem;
using testing::HostMatrix;
using testing::OpTolerance;
using testing::PrefillProblem;
using testing::Values;

const DType kAllDTypes[] = {DType::kFp32, DType::kFp16, DType::kBf16};

std::unique_ptr<Backend> Cpu() {
  std::unique_ptr<Backend> cpu;
  FLEETSIM_CHECK(MakeBackend("cpu", &cpu).ok());
  return cpu;
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- RMSNorm ------------------------------------------------------------------

TEST(CpuRmsNorm, NormalisesAKnownVector) {
  // x = (1, 2, 3, 4): mean square 30/4 = 7.5, so out = x·w / sqrt(7.5 + eps).
  HostMatrix x(DType::kFp32, 1, 4, 4), w(DType::kFp32, 1, 4, 4), out(DType::kFp32, 1, 4, 4);
  for (int i = 0; i < 4; ++i) x.Set(0, i, static_cast<float>(i + 1));
  w.Set(0, 0, 1.0f);
  w.Set(0, 1, 2.0f);
  w.Set(0, 2, 0.5f);
  w.Set(0, 3, -1.0f);
  RmsNormArgs a;
  a.rows = 1;
  a.hidden = 4;
  a.eps = 0.5f;
  a.x_stride = a.out_stride = 4;
  std::unique_ptr<Backend> cpu = Cpu();
  ASSERT_TRUE(testing::RunRmsNorm(*cpu, a, x, w, &out).ok());
  const double inv = 1.0 / std::sqrt(8.0);  // 7.5 + 0.5
  EXPECT_NEAR(out.Get(0, 0), 1.0 * inv, 1e-6);
  EXPECT_NEAR(out.Get(0, 1), 4.0 * inv, 1e-6);
  EXPECT_NEAR(out.Get(0, 2), 1.5 * inv, 1e-6);
  EXPECT_NEAR(out.Get(0, 3), -4.0 * inv, 1e-6);
}

TEST(CpuRmsNorm, MatchesNaiveLoopInEveryDtypeWithStrides) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    const int64_t rows = 5, hidden = 67;
    HostMatrix x(t, rows, hidden, hidden + 3), w(t, 1, hidden, hidden), out(t, rows, hidden, hidden + 1);
    Rng rng = Rng::ForStream(3, 0, "rms_norm_test");
    x.FillRandom(rng);
    w.FillRandom(rng);
    RmsNormArgs a;
    a.rows = rows;
    a.hidden = hidden;
    a.eps = 1e-6f;
    a.dtype = t;
    a.x_stride = x.ld;
    a.out_stride = out.ld;
    ASSERT_TRUE(testing::RunRmsNorm(*cpu, a, x, w, &out).ok());
    std::vector<double> ref;
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < hidden; ++i) ss += static_cast<double>(x.Get(r, i)) * x.Get(r, i);
      const double inv = 1.0 / std::sqrt(ss / hidden + 1e-6);
      for (int64_t i = 0; i < hidden; ++i) ref.push_back(x.Get(r, i) * inv * w.Get(0, i));
    }
    EXPECT_EQ(CompareTensors(out, ref, OpTolerance(t), std::string("rms_norm ") + std::string(DTypeName(t))), 0);
  }
}

TEST(CpuRmsNorm, WorksInPlace) {
  HostMatrix x(DType::kFp32, 2, 3, 3), w(DType::kFp32, 1, 3, 3);
  x.Fill(2.0f);
  w.Fill(1.0f);
  RmsNormArgs a;
  a.rows = 2;
  a.hidden = 3;
  a.eps = 0.0f;
  a.x_stride = a.out_stride = 3;
  a.x = a.out = x.bytes.data();
  a.weight = w.bytes.data();
  std::unique_ptr<Backend> cpu = Cpu();
  ASSERT_TRUE(cpu->RmsNorm(a).ok());
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(x.GetFlat(i), 1.0f);  // 2 / rms(2) = 1
}

// ---- SiLU-gated activation ----------------------------------------------------

TEST(CpuSiluMul, KnownValues) {
  HostMatrix gate(DType::kFp32, 1, 3, 3), up(DType::kFp32, 1, 3, 3), out(DType::kFp32, 1, 3, 3);
  gate.Set(0, 0, 0.0f);
  gate.Set(0, 1, 1.0f);
  gate.Set(0, 2, -2.0f);
  up.Fill(2.0f);
  SiluMulArgs a;
  a.rows = 1;
  a.width = 3;
  a.gate_stride = a.up_stride = a.out_stride = 3;
  std::unique_ptr<Backend> cpu = Cpu();
  ASSERT_TRUE(testing::RunSiluMul(*cpu, a, gate, up, &out).ok());
  EXPECT_FLOAT_EQ(out.Get(0, 0), 0.0f);
  EXPECT_NEAR(out.Get(0, 1), 2.0 / (1.0 + std::exp(-1.0)), 1e-6);   // 1.4621...
  EXPECT_NEAR(out.Get(0, 2), 2.0 * -2.0 / (1.0 + std::exp(2.0)), 1e-6);  // -0.4768...
}

TEST(CpuSiluMul, MatchesNaiveLoopInEveryDtypeWithStrides) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    const int64_t rows = 4, width = 45;
    // gate and up as the two halves of one fused row, as the MLP stores them.
    HostMatrix gate(t, rows, width, 2 * width), up(t, rows, width, width + 5), out(t, rows, width, width + 2);
    Rng rng = Rng::ForStream(4, 0, "silu_mul_test");
    gate.FillRandom(rng);
    up.FillRandom(rng);
    SiluMulArgs a;
    a.rows = rows;
    a.width = width;
    a.dtype = t;
    a.gate_stride = gate.ld;
    a.up_stride = up.ld;
    a.out_stride = out.ld;
    ASSERT_TRUE(testing::RunSiluMul(*cpu, a, gate, up, &out).ok());
    std::vector<double> ref;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < width; ++i) {
        const double g = gate.Get(r, i);
        ref.push_back(g / (1.0 + std::exp(-g)) * up.Get(r, i));
      }
    }
    EXPECT_EQ(CompareTensors(out, ref, OpTolerance(t), std::string("silu_mul ") + std::string(DTypeName(t))), 0);
  }
}

// ---- Residual add ---------------------------------------------------------------

TEST(CpuResidualAdd, AddsAndRoundsOnce) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    HostMatrix x(t, 3, 10, 12), y(t, 3, 10, 10), out(t, 3, 10, 11);
    Rng rng = Rng::ForStream(5, 0, "residual_add_test");
    x.FillRandom(rng);
    y.FillRandom(rng);
    ResidualAddArgs a;
    a.rows = 3;
    a.width = 10;
    a.dtype = t;
    a.a_stride = x.ld;
    a.b_stride = y.ld;
    a.out_stride = out.ld;
    ASSERT_TRUE(testing::RunResidualAdd(*cpu, a, x, y, &out).ok());
    std::vector<double> ref;
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t i = 0; i < 10; ++i) ref.push_back(static_cast<double>(x.Get(r, i)) + y.Get(r, i));
    }
    // The sum of two stored values rounded once: within half an ulp.
    EXPECT_EQ(CompareTensors(out, ref, OpTolerance(t), "residual_add"), 0) << DTypeName(t);
  }
}

TEST(CpuResidualAdd, WorksInPlace) {
  HostMatrix x(DType::kBf16, 1, 4, 4), y(DType::kBf16, 1, 4, 4);
  x.Fill(1.0f);
  y.Fill(0.5f);
  ResidualAddArgs a;
  a.rows = 1;
  a.width = 4;
  a.dtype = DType::kBf16;
  a.a_stride = a.b_stride = a.out_stride = 4;
  a.a = a.out = x.bytes.data();
  a.b = y.bytes.data();
  std::unique_ptr<Backend> cpu = Cpu();
  ASSERT_TRUE(cpu->ResidualAdd(a).ok());
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(x.GetFlat(i), 1.5f);
}

// ---- Embedding --------------------------------------------------------------------

TEST(CpuEmbedding, CopiesRowsBitForBitAndZeroesOutOfRangeIds) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    HostMatrix table(t, 5, 6, 6), out(t, 4, 6, 8);
    Rng rng = Rng::ForStream(6, 0, "embedding_test");
    table.FillRandom(rng);
    EmbeddingArgs a;
    a.num_tokens = 4;
    a.vocab_size = 5;
    a.hidden = 6;
    a.dtype = t;
    a.out_stride = out.ld;
    const std::vector<int32_t> ids = {3, 0, 7, 3};  // 7 is outside the vocabulary
    ASSERT_TRUE(testing::RunEmbedding(*cpu, a, ids, table, &out).ok());
    std::vector<double> ref;
    for (int32_t id : ids) {
      for (int64_t i = 0; i < 6; ++i) ref.push_back(id < 5 ? table.Get(id, i) : 0.0);
    }
    EXPECT_EQ(CompareTensors(out, ref, {0, 0}, "embedding"), 0) << DTypeName(t);
  }
}

// ---- RoPE -------------------------------------------------------------------------

RopeArgs RopeShape(DType t, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride) {
  RopeArgs a;
  a.num_tokens = tokens;
  a.num_heads = heads;
  a.head_dim = head_dim;
  a.dtype = t;
  a.x_stride = stride;
  return a;
}

TEST(CpuRope, PositionZeroIsTheIdentity) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    HostMatrix x(t, 3, 2 * 8, 2 * 8 + 2);
    Rng rng = Rng::ForStream(7, 0, "rope_test");
    x.FillRandom(rng);
    HostMatrix y = x;
    ASSERT_TRUE(testing::RunRope(*cpu, RopeShape(t, 3, 2, 8, x.ld), {0, 0, 0}, &y).ok());
    EXPECT_EQ(std::memcmp(x.bytes.data(), y.bytes.data(), x.size_bytes()), 0) << DTypeName(t);
  }
}

TEST(CpuRope, RotatesPairsByPositionTimesFrequency) {
  // head_dim 4, theta 100: pair 0 turns by p, pair 1 by p / 10.
  HostMatrix x(DType::kFp32, 1, 4, 4);
  x.Set(0, 0, 1.0f);  // pair 0 = (x0, x2) = (1, 0)
  x.Set(0, 2, 0.0f);
  x.Set(0, 1, 0.0f);  // pair 1 = (x1, x3) = (0, 2)
  x.Set(0, 3, 2.0f);
  RopeArgs a = RopeShape(DType::kFp32, 1, 1, 4, 4);
  a.theta = 100.0;
  std::unique_ptr<Backend> cpu = Cpu();
  ASSERT_TRUE(testing::RunRope(*cpu, a, {3}, &x).ok());
  EXPECT_NEAR(x.Get(0, 0), std::cos(3.0), 1e-6);
  EXPECT_NEAR(x.Get(0, 2), std::sin(3.0), 1e-6);
  EXPECT_NEAR(x.Get(0, 1), -2.0 * std::sin(0.3), 1e-6);
  EXPECT_NEAR(x.Get(0, 3), 2.0 * std::cos(0.3), 1e-6);
}

TEST(CpuRope, ScoresDependOnlyOnRelativePosition) {
  // The point of RoPE: <rope(q, m), rope(k, n)> is a function of m − n.
  const int64_t d = 16;
  HostMatrix q(DType::kFp32, 1, d, d), k(DType::kFp32, 1, d, d);
  Rng rng = Rng::ForStream(8, 0, "rope_test");
  q.FillRandom(rng);
  k.FillRandom(rng);
  std::unique_ptr<Backend> cpu = Cpu();
  auto score = [&](int32_t m, int32_t n) {
    HostMatrix qr = q, kr = k;
    EXPECT_TRUE(testing::RunRope(*cpu, RopeShape(DType::kFp32, 1, 1, d, d), {m}, &qr).ok());
    EXPECT_TRUE(testing::RunRope(*cpu, RopeShape(DType::kFp32, 1, 1, d, d), {n}, &kr).ok());
    double dot = 0;
    for (int64_t i = 0; i < d; ++i) dot += static_cast<double>(qr.Get(0, i)) * kr.Get(0, i);
    return dot;
  };
  EXPECT_NEAR(score(5, 2), score(103, 100), 1e-4);
  EXPECT_NEAR(score(0, 7), score(20, 27), 1e-4);
  EXPECT_GT(std::fabs(score(5, 2) - score(5, 4)), 1e-3);  // and it does depend on it
}

TEST(CpuRope, MatchesNaiveLoopInEveryDtype) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    const int64_t tokens = 4, heads = 3, hd = 10;
    HostMatrix x(t, tokens, heads * hd, heads * hd + 4);
    Rng rng = Rng::ForStream(9, 0, "rope_test");
    x.FillRandom(rng);
    HostMatrix y = x;
    const std::vector<int32_t> pos = {0, 1, 77, 40000};
    RopeArgs a = RopeShape(t, tokens, heads, hd, x.ld);
    a.theta = 500000.0;
    ASSERT_TRUE(testing::RunRope(*cpu, a, pos, &y).ok());
    std::vector<double> ref(static_cast<size_t>(tokens * heads * hd));
    for (int64_t tk = 0; tk < tokens; ++tk) {
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < hd / 2; ++i) {
          const double ang = pos[tk] * std::pow(500000.0, -2.0 * i / hd);
          const double x1 = x.Get(tk, h * hd + i), x2 = x.Get(tk, h * hd + i + hd / 2);
          ref[tk * heads * hd + h * hd + i] = x1 * std::cos(ang) - x2 * std::sin(ang);
          ref[tk * heads * hd + h * hd + i + hd / 2] = x2 * std::cos(ang) + x1 * std::sin(ang);
        }
      }
    }
    EXPECT_EQ(CompareTensors(y, ref, OpTolerance(t), "rope"), 0) << DTypeName(t);
  }
}

// ---- Attention prefill ---------------------------------------------------------------

TEST(CpuAttentionPrefill, OneKeyGivesItsValue) {
  // A one-token sequence attends only to itself: softmax of one score is 1.
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    PrefillProblem p(t, {1}, 4, 2, 8, 0, 10);
    HostMatrix out = p.out;
    ASSERT_TRUE(p.Run(*cpu, &out).ok());
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(out.Get(0, h * 8 + d), p.v.Get(0, (h / 2) * 8 + d)) << DTypeName(t);
    }
  }
}

TEST(CpuAttentionPrefill, EqualScoresAverageTheValues) {
  // Zero queries give every key the same score: out = mean of V so far.
  PrefillProblem p(DType::kFp32, {3}, 1, 1, 4, 0, 11);
  p.q.Fill(0.0f);
  std::unique_ptr<Backend> cpu = Cpu();
  HostMatrix out = p.out;
  ASSERT_TRUE(p.Run(*cpu, &out).ok());
  for (int64_t tk = 0; tk < 3; ++tk) {
    for (int64_t d = 0; d < 4; ++d) {
      double mean = 0;
      for (int64_t j = 0; j <= tk; ++j) mean += p.v.Get(j, d);
      EXPECT_NEAR(out.Get(tk, d), mean / (tk + 1), 1e-6);
    }
  }
}

TEST(CpuAttentionPrefill, FutureKeysDoNotChangeEarlierOutputs) {
  std::unique_ptr<Backend> cpu = Cpu();
  PrefillProblem p(DType::kFp32, {6}, 2, 1, 8, 1, 12);
  HostMatrix before = p.out;
  ASSERT_TRUE(p.Run(*cpu, &before).ok());
  // Change key and value of token 4: rows 0..3 must not move, row 4 must.
  PrefillProblem changed = p;
  for (int64_t d = 0; d < 8; ++d) {
    changed.k.Set(4, d, 3.0f);
    changed.v.Set(4, d, -5.0f);
  }
  HostMatrix after = p.out;
  ASSERT_TRUE(changed.Run(*cpu, &after).ok());
  for (int64_t tk = 0; tk < 4; ++tk) {
    for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(before.Get(tk, c), after.Get(tk, c)) << "token " << tk;
  }
  EXPECT_NE(before.Get(4, 0), after.Get(4, 0));
}

TEST(CpuAttentionPrefill, SequencesInABatchDoNotSeeEachOther) {
  // Sequence 1 computed alone equals sequence 1 computed packed after sequence 0.
  std::unique_ptr<Backend> cpu = Cpu();
  PrefillProblem packed(DType::kFp32, {3, 4}, 2, 2, 4, 0, 13);
  HostMatrix out_packed = packed.out;
  ASSERT_TRUE(packed.Run(*cpu, &out_packed).ok());
  PrefillProblem alone(DType::kFp32, {4}, 2, 2, 4, 0, 14);
  for (int64_t tk = 0; tk < 4; ++tk) {
    for (int64_t c = 0; c < 8; ++c) {
      alone.q.Set(tk, c, packed.q.Get(3 + tk, c));
      alone.k.Set(tk, c, packed.k.Get(3 + tk, c));
      alone.v.Set(tk, c, packed.v.Get(3 + tk, c));
    }
  }
  HostMatrix out_alone = alone.out;
  ASSERT_TRUE(alone.Run(*cpu, &out_alone).ok());
  for (int64_t tk = 0; tk < 4; ++tk) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out_alone.Get(tk, c), out_packed.Get(3 + tk, c));
  }
}

TEST(CpuAttentionPrefill, GroupedQueryHeadsShareTheirKvHead) {
  // GQA with 4 query heads on 2 K/V heads equals MHA with each K/V head
  // duplicated for its group of 2.
  std::unique_ptr<Backend> cpu = Cpu();
  PrefillProblem gqa(DType::kFp32, {5}, 4, 2, 8, 0, 15);
  PrefillProblem mha(DType::kFp32, {5}, 4, 4, 8, 0, 16);
  mha.q = gqa.q;
  for (int64_t tk = 0; tk < 5; ++tk) {
    for (int64_t h = 0; h < 4; ++h) {
      for (int64_t d = 0; d < 8; ++d) {
        mha.k.Set(tk, h * 8 + d, gqa.k.Get(tk, (h / 2) * 8 + d));
        mha.v.Set(tk, h * 8 + d, gqa.v.Get(tk, (h / 2) * 8 + d));
      }
    }
  }
  HostMatrix out_gqa = gqa.out, out_mha = mha.out;
  ASSERT_TRUE(gqa.Run(*cpu, &out_gqa).ok());
  ASSERT_TRUE(mha.Run(*cpu, &out_mha).ok());
  for (int64_t tk = 0; tk < 5; ++tk) {
    for (int64_t c = 0; c < 32; ++c) EXPECT_EQ(out_gqa.Get(tk, c), out_mha.Get(tk, c));
  }
}

TEST(CpuAttentionPrefill, MatchesNaiveLoopInEveryDtype) {
  std::unique_ptr<Backend> cpu = Cpu();
  uint64_t seed = 20;
  for (DType t : kAllDTypes) {
    for (const auto& lens : {std::vector<int32_t>{1, 7, 0, 12}, std::vector<int32_t>{33}}) {
      PrefillProblem p(t, lens, 6, 2, 16, 3, seed++);
      HostMatrix out = p.out;
      ASSERT_TRUE(p.Run(*cpu, &out).ok()) << p.Describe();
      EXPECT_EQ(CompareTensors(out, testing::NaiveAttentionPrefill(p.args, p.seq_starts, p.q, p.k, p.v),
                               OpTolerance(t), p.Describe()),
                0);
    }
  }
}

TEST(CpuAttentionPrefill, LargeScoresDoNotOverflow) {
  // Scores of ~±1e4: without subtracting the max, exp overflows to inf/NaN.
  PrefillProblem p(DType::kFp32, {4}, 1, 1, 4, 0, 30);
  for (int64_t tk = 0; tk < 4; ++tk) {
    for (int64_t d = 0; d < 4; ++d) {
      p.q.Set(tk, d, 100.0f);
      p.k.Set(tk, d, tk == 2 ? 100.0f : -100.0f);
    }
  }
  std::unique_ptr<Backend> cpu = Cpu();
  HostMatrix out = p.out;
  ASSERT_TRUE(p.Run(*cpu, &out).ok());
  // Rows 2 and 3 put all the weight on key 2; rows 0 and 1 spread it evenly
  // over equal scores.
  for (int64_t d = 0; d < 4; ++d) {
    EXPECT_NEAR(out.Get(2, d), p.v.Get(2, d), 1e-6);
    EXPECT_NEAR(out.Get(3, d), p.v.Get(2, d), 1e-6);
    EXPECT_NEAR(out.Get(1, d), (p.v.Get(0, d) + p.v.Get(1, d)) / 2, 1e-6);
  }
}

// ---- Attention decode ------------------------------------------------------------------

TEST(CpuAttentionDecode, PagedEqualsContiguousForAShuffledBlockTable) {
  std::unique_ptr<Backend> cpu = Cpu();
  for (DType t : kAllDTypes) {
    DecodeProblem shuffled(t, {5, 16, 1, 23}, 4, 1, 8, 4, true, 40);
    // The same tokens laid out contiguously: block j of each sequence in
    // order, so the identity-order table addresses them.
    DecodeProblem contiguous(t, {5, 16, 1, 23}, 4, 1, 8, 4, false, 41);
    contiguous.q = shuffled.q;
    for (int64_t s = 0; s < 4; ++s) {
      for (int64_t tk = 0; tk < shuffled.context_lens[s]; ++tk) {
        for (int64_t c = 0; c < 8; ++c) {
          contiguous.k_cache.Set(contiguous.Slot(s, tk), c, shuffled.k_cache.Get(shuffled.Slot(s, tk), c));
          contiguous.v_cache.Set(contiguous.Slot(s, tk), c, shuffled.v_cache.Get(shuffled.Slot(s, tk), c));
        }
      }
    }
    ASSERT_NE(shuffled.block_tables, contiguous.block_tables);  // the shuffle did something
    HostMatrix a = shuffled.out, b = contiguous.out;
    ASSERT_TRUE(shuffled.Run(*cpu, &a).ok());
    ASSERT_TRUE(contiguous.Run(*cpu, &b).ok());
    EXPECT_EQ(std::memcmp(a.bytes.data(), b.bytes.data(), a.size_bytes()), 0) << DTypeName(t);
  }
}

TEST(CpuAttentionDecode, EqualsTheLastRowOfPrefill) {
  // Decoding token T over a cache holding tokens 0..T is prefill's row T.
  std::unique_ptr<Backend> cpu = Cpu();
  const int64_t n = 11, heads = 4, kv_heads = 2, hd = 8;
  PrefillProblem pre(DType::kFp32, {static_cast<int32_t>(n)}, heads, kv_heads, hd, 0, 50);
  HostMatrix pre_out = pre.out;
  ASSERT_TRUE(pre.Run(*cpu, &pre_out).ok());
  DecodeProblem dec(DType::kFp32, {static_cast<int32_t>(n)}, heads, kv_heads, hd, 3, true, 51);
  for (int64_t c = 0; c < heads * hd; ++c) dec.q.Set(0, c, pre.q.Get(n - 1, c));
  for (int64_t tk = 0; tk < n; ++tk) {
    for (int64_t c = 0; c < kv_heads * hd; ++c) {
      dec.k_cache.Set(dec.Slot(0, tk), c, pre.k.Get(tk, c));
      dec.v_cache.Set(dec.Slot(0, tk), c, pre.v.Get(tk, c));
    }
  }
  HostMatrix dec_out = dec.out;
  ASSERT_TRUE(dec.Run(*cpu, &dec_out).ok());
  for (int64_t c = 0; c < heads * hd; ++c) EXPECT_EQ(dec_out.Get(0, c), pre_out.Get(n - 1, c));
}

TEST(CpuAttentionDecode, MatchesNaiveLoopInEveryDtype) {
  std::unique_ptr<Backend> cpu = Cpu();
  uint64_t seed = 60;
  for (DType t : kAllDTypes) {
    DecodeProblem p(t, {1, 9, 32, 0, 17}, 8, 2, 16, 8, true, seed++);
    HostMatrix out = p.out;
    ASSERT_TRUE(p.Run(*cpu, &out).ok()) << p.Describe();
    EXPECT_EQ(CompareTensors(out,
                             testing::NaiveAttentionDecode(p.args, p.q, p.k_cache, p.v_cache, p.block_tables,
                                                           p.context_lens),
                             OpTolerance(t), p.Describe()),
              0);
  }
}

TEST(CpuAttentionDecode, EmptyContextGivesZeros) {
  DecodeProblem p(DType::kFp32, {0, 2}, 2, 2, 4, 2, false, 70);
  std::unique_ptr<Backend> cpu = Cpu();
  HostMatrix out = p.out;
  ASSERT_TRUE(p.Run(*cpu, &out).ok());
  for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(out.Get(0, c), 0.0f);
}

// ---- Peer copies --------------------------------------------------------------------------

TEST(CpuBackend, CopyPeerMovesBytesBetweenTwoCpuBackends) {
  std::unique_ptr<Backend> src = Cpu(), dst = Cpu();
  DeviceBuffer a, b;
  ASSERT_TRUE(src->AllocateBuffer(64, &a).ok());
  ASSERT_TRUE(dst->AllocateBuffer(64, &b).ok());
  std::vector<unsigned char> in(64), out(64, 0);
  for (int i = 0; i < 64; ++i) in[i] = static_cast<unsigned char>(i * 7);
  ASSERT_TRUE(src->CopyToDevice(a.data(), in.data(), 64).ok());
  ASSERT_TRUE(src->CopyPeer(*dst, b.data(), a.data(), 64).ok());
  ASSERT_TRUE(dst->CopyToHost(out.data(), b.data(), 64).ok());
  EXPECT_EQ(in, out);
}

// ---- Validation ---------------------------------------------------------------------------

TEST(ValidateOpArgs, NamesTheBadField) {
  {
    RmsNormArgs a;
    a.rows = 2;
    a.hidden = 4;
    a.x_stride = 3;
    a.out_stride = 4;
    const Status s = ValidateRmsNormArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "rms_norm: x_stride=3")) << s.message();
  }
  {
    SiluMulArgs a;
    a.rows = 1;
    a.width = 4;
    a.gate_stride = a.up_stride = a.out_stride = 4;
    static float buf[8];
    a.gate = a.out = buf;  // in place
    a.up = buf + 4;
    a.out_stride = 4;
    EXPECT_TRUE(ValidateSiluMulArgs(a).ok());
    a.gate_stride = 8;
    const Status s = ValidateSiluMulArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "strides differ")) << s.message();
  }
  {
    RopeArgs a = RopeShape(DType::kFp32, 1, 2, 7, 14);
    const Status s = ValidateRopeArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "head_dim=7 is odd")) << s.message();
  }
  {
    AttentionPrefillArgs a;
    a.num_seqs = 1;
    a.num_tokens = 1;
    a.num_heads = 6;
    a.num_kv_heads = 4;
    a.head_dim = 8;
    a.q_stride = a.out_stride = 48;
    a.k_stride = a.v_stride = 32;
    const Status s = ValidateAttentionPrefillArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "num_kv_heads=4 does not divide num_heads=6")) << s.message();
  }
  {
    AttentionDecodeArgs a;
    a.num_seqs = 1;
    a.num_heads = a.num_kv_heads = 1;
    a.head_dim = 4;
    a.block_size = 0;
    const Status s = ValidateAttentionDecodeArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "attention_decode: block_size=0")) << s.message();
  }
  {
    EmbeddingArgs a;
    a.num_tokens = 2;
    a.vocab_size = 10;
    a.hidden = 4;
    a.out_stride = 4;
    const Status s = ValidateEmbeddingArgs(a);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(Contains(s.message(), "embedding: token_ids is null")) << s.message();
  }
}

TEST(ValidateOpArgs, CpuOpsReturnTheValidationError) {
  std::unique_ptr<Backend> cpu = Cpu();
  ResidualAddArgs a;
  a.rows = 1;
  a.width = 5;
  a.a_stride = a.b_stride = 5;
  a.out_stride = 2;
  const Status s = cpu->ResidualAdd(a);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "residual_add: out_stride=2 is less than width=5")) << s.message();
}

}  // namespace
}  // namespace fleetsim::kernels
