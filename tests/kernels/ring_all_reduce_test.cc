// kernels::RingAllReduce on CPU backends standing for ranks (a thread
// each): the sum lands on every rank, bit for bit the same, for sizes that
// do not divide into the ranks' chunks, in fp32 and bf16; a rank that
// fails releases the others instead of hanging them.
#include "kernels/ring_all_reduce.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/half.h"

namespace fleetsim::kernels {
namespace {

struct Ranks {
  std::vector<std::unique_ptr<Backend>> owned;
  std::vector<Backend*> raw;
  explicit Ranks(int p) {
    for (int r = 0; r < p; ++r) {
      std::unique_ptr<Backend> b;
      EXPECT_TRUE(MakeBackend("cpu", &b).ok());
      raw.push_back(b.get());
      owned.push_back(std::move(b));
    }
  }
};

// Element i of rank r: small multiples of 1/8, so every sum is exact in
// fp32 and in bf16 (8 significant bits: values below 32 in steps of 1/8).
float Value(int r, int64_t i) { return static_cast<float>((r + 1) * (i % 5)) / 8.0f; }

void ExpectSums(int p, int64_t n, DType dtype) {
  Ranks ranks(p);
  RingAllReduce ring(ranks.raw);
  const size_t elem = DTypeSize(dtype);
  std::vector<DeviceBuffer> data(static_cast<size_t>(p));
  std::vector<Status> st(static_cast<size_t>(p));
  std::vector<std::vector<float>> got(static_cast<size_t>(p), std::vector<float>(static_cast<size_t>(n)));
  auto body = [&](int r) -> Status {
    Backend& me = *ranks.raw[static_cast<size_t>(r)];
    FLEETSIM_RETURN_IF_ERROR(me.AllocateBuffer(static_cast<size_t>(n) * elem, &data[static_cast<size_t>(r)]));
    std::vector<unsigned char> host(static_cast<size_t>(n) * elem);
    for (int64_t i = 0; i < n; ++i) {
      const float v = Value(r, i);
      if (dtype == DType::kFp32) {
        std::memcpy(host.data() + i * 4, &v, 4);
      } else {
        const uint16_t h = FloatToBf16(v);
        std::memcpy(host.data() + i * 2, &h, 2);
      }
    }
    FLEETSIM_RETURN_IF_ERROR(me.CopyToDevice(data[static_cast<size_t>(r)].data(), host.data(), host.size()));
    FLEETSIM_RETURN_IF_ERROR(ring.Attach(r, data[static_cast<size_t>(r)].data(), host.size()));
    if (!ring.Arrive()) return Status::Invalid("aborted");
    bool aborted = false;
    // Twice: the receive buffers alternate across calls too.
    for (int run = 0; run < 2; ++run) {
      FLEETSIM_RETURN_IF_ERROR(ring.Run(r, n, dtype, &aborted));
      if (aborted) return Status::Invalid("aborted");
    }
    FLEETSIM_RETURN_IF_ERROR(me.CopyToHost(host.data(), data[static_cast<size_t>(r)].data(), host.size()));
    for (int64_t i = 0; i < n; ++i) {
      float v = 0;
      if (dtype == DType::kFp32) {
        std::memcpy(&v, host.data() + i * 4, 4);
      } else {
        uint16_t h = 0;
        std::memcpy(&h, host.data() + i * 2, 2);
        v = Bf16ToFloat(h);
      }
      got[static_cast<size_t>(r)][static_cast<size_t>(i)] = v;
    }
    return Status::Ok();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) threads.emplace_back([&, r] { st[static_cast<size_t>(r)] = body(r); });
  for (std::thread& t : threads) t.join();
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.message();
  // Two all-reduces: the first sums (S), the second sums p copies of S.
  for (int r = 0; r < p; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int q = 0; q < p; ++q) want += Value(q, i);
      if (p > 1) want *= p;
      ASSERT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(i)], static_cast<float>(want))
          << "p " << p << " rank " << r << " element " << i;
    }
  }
}

TEST(RingAllReduce, SumsOnEveryRank) {
  for (int p : {1, 2, 3, 4}) ExpectSums(p, 1001, DType::kFp32);
}

TEST(RingAllReduce, SumsInBf16AndWhenChunksAreEmpty) {
  ExpectSums(3, 130, DType::kBf16);
  ExpectSums(4, 2, DType::kFp32);  // chunks of 1: ranks 2 and 3 have none
}

TEST(RingAllReduce, AFailingRankReleasesTheOthers) {
  Ranks ranks(3);
  RingAllReduce ring(ranks.raw);
  std::vector<DeviceBuffer> data(3);
  std::vector<Status> st(3);
  std::vector<int> aborted(3, 0);  // not vector<bool>: the threads write their own elements
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      Backend& me = *ranks.raw[static_cast<size_t>(r)];
      st[static_cast<size_t>(r)] = me.AllocateBuffer(64 * 4, &data[static_cast<size_t>(r)]);
      // Rank 2 attaches less than the others run with: its Run fails.
      const size_t bytes = r == 2 ? 16 : 64 * 4;
      if (st[static_cast<size_t>(r)].ok())
        st[static_cast<size_t>(r)] = ring.Attach(r, data[static_cast<size_t>(r)].data(), bytes);
      if (!ring.Arrive()) return;
      bool a = false;
      st[static_cast<size_t>(r)] = ring.Run(r, 64, DType::kFp32, &a);
      aborted[static_cast<size_t>(r)] = a ? 1 : 0;
      if (!st[static_cast<size_t>(r)].ok()) ring.Abort();  // the caller's part
    });
  }
  for (std::thread& t : threads) t.join();
  // Rank 1 (whose peer is rank 2) and rank 2 see the short buffer; every
  // rank returned, the rest as aborted.
  EXPECT_FALSE(st[2].ok());
  EXPECT_NE(st[2].message().find("more than the buffers attached"), std::string::npos) << st[2].message();
  int released = 0;
  for (int r = 0; r < 3; ++r) released += !st[static_cast<size_t>(r)].ok() || aborted[static_cast<size_t>(r)] != 0;
  EXPECT_EQ(released, 3);
  EXPECT_TRUE(ring.aborted());
}

// Released by the last arrival, a waiter passes even when a rank aborts
// before it wakes; after the abort every arrival fails at once.
TEST(RankBarrier, ReleasedWaitersPassAndLaterArrivalsFailAfterAnAbort) {
  for (int round = 0; round < 50; ++round) {
    RankBarrier b(3);
    std::vector<int> passed(3, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r) threads.emplace_back([&, r] { passed[static_cast<size_t>(r)] = b.ArriveAndWait() ? 1 : 0; });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(passed, (std::vector<int>{1, 1, 1}));
    std::thread last([&] {
      EXPECT_TRUE(b.ArriveAndWait());  // the third arrival below releases it
      b.Abort();
    });
    std::thread other([&] { EXPECT_TRUE(b.ArriveAndWait()); });
    EXPECT_TRUE(b.ArriveAndWait());
    last.join();
    other.join();
    EXPECT_FALSE(b.ArriveAndWait());
    EXPECT_TRUE(b.aborted());
  }
}

TEST(CopyPeer2D, CopiesAColumnBlockRowByRow) {
  Ranks ranks(2);
  DeviceBuffer src, dst;
  ASSERT_TRUE(ranks.raw[0]->AllocateBuffer(3 * 4, &src).ok());
  ASSERT_TRUE(ranks.raw[1]->AllocateBuffer(3 * 10, &dst).ok());
  const char in[] = "abcdefghijkl";
  ASSERT_TRUE(ranks.raw[0]->CopyToDevice(src.data(), in, 12).ok());
  std::vector<char> zero(30, '.');
  ASSERT_TRUE(ranks.raw[1]->CopyToDevice(dst.data(), zero.data(), 30).ok());
  // Rows of 3 of the 4-byte source rows, into columns 5..7 of 10-byte rows.
  ASSERT_TRUE(ranks.raw[0]->CopyPeer2D(*ranks.raw[1], static_cast<char*>(dst.data()) + 5, 10, src.data(), 4, 3, 3).ok());
  std::vector<char> out(30);
  ASSERT_TRUE(ranks.raw[1]->CopyToHost(out.data(), dst.data(), 30).ok());
  EXPECT_EQ(std::string(out.begin(), out.end()), ".....abc.......efg.......ijk..");
  const Status bad = ranks.raw[0]->CopyPeer2D(*ranks.raw[1], dst.data(), 2, src.data(), 4, 3, 1);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("do not fit pitches"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace fleetsim::kernels
