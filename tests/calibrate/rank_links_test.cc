// Links between ranks (calibrate/rank_links.h) with ranks as threads of one
// process over an in-memory transport, on the CPU backend: what MPI ranks on
// two nodes do, minus MPI (tests/calibrate/mpi_links_test.sh runs the real
// thing with mpirun).
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "calibrate/rank_links.h"
#include "kernels/backend.h"

namespace fleetsim::calibrate {
namespace {

// Mailboxes per (from, to): Send copies the bytes in and returns (as an
// eager MPI send of a small message does), Recv waits for them.
class Mailboxes {
 public:
  explicit Mailboxes(int ranks) : ranks_(ranks) {}
  void Put(int from, int to, const void* buf, size_t bytes) {
    std::vector<unsigned char> m(bytes);
    if (bytes) std::memcpy(m.data(), buf, bytes);
    std::lock_guard<std::mutex> lock(mu_);
    box_[{from, to}].push_back(std::move(m));
    cv_.notify_all();
  }
  Status Take(int from, int to, void* buf, size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& q = box_[{from, to}];
    cv_.wait(lock, [&] { return !q.empty(); });
    std::vector<unsigned char> m = std::move(q.front());
    q.pop_front();
    if (m.size() != bytes) return Status::Invalid("message of " + std::to_string(m.size()) + " bytes, wanted " +
                                                  std::to_string(bytes));
    if (bytes) std::memcpy(buf, m.data(), bytes);
    return Status::Ok();
  }
  void Barrier() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t gen = generation_;
    if (++waiting_ == ranks_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

 private:
  const int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, std::deque<std::vector<unsigned char>>> box_;
  int waiting_ = 0;
  int64_t generation_ = 0;
};

class ThreadTransport final : public RankTransport {
 public:
  ThreadTransport(Mailboxes& m, int rank, int size, bool device) : m_(m), rank_(rank), size_(size), device_(device) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_memory(const kernels::Backend&) const override { return device_; }
  Status Send(int to, const void* buf, size_t bytes) override {
    m_.Put(rank_, to, buf, bytes);
    return Status::Ok();
  }
  Status Recv(int from, void* buf, size_t bytes) override { return m_.Take(from, rank_, buf, bytes); }
  Status SendRecv(int to, const void* send, int from, void* recv, size_t bytes) override {
    m_.Put(rank_, to, send, bytes);
    return m_.Take(from, rank_, recv, bytes);
  }
  Status Barrier() override {
    m_.Barrier();
    return Status::Ok();
  }
  std::string description() const override { return "threads"; }

 private:
  Mailboxes& m_;
  const int rank_, size_;
  const bool device_;
};

RankLinkOptions Quick() {
  RankLinkOptions o;
  o.sizes_bytes = {4096, 65536, 1048576};
  o.timing = {/*warmup=*/1, /*repetitions=*/3, /*flush_cache=*/false};
  o.ring_bytes = 1 << 20;
  return o;
}

// Runs MeasureRankLinks on `ranks` threads; each rank's result and status.
void RunRanks(int ranks, bool device, const RankLinkOptions& o, std::vector<RankLinks>* out,
              std::vector<Status>* status) {
  Mailboxes m(ranks);
  out->assign(static_cast<size_t>(ranks), RankLinks{});
  status->assign(static_cast<size_t>(ranks), Status::Ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<kernels::Backend> dev;
      Status s = kernels::MakeBackend("cpu", &dev);
      ThreadTransport t(m, r, ranks, device);
      if (s.ok()) s = MeasureRankLinks(*dev, t, o, &(*out)[static_cast<size_t>(r)]);
      (*status)[static_cast<size_t>(r)] = s;
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(RankLinks, TwoRanksMeasureBothPathsAndAnExactRing) {
  std::vector<RankLinks> res;
  std::vector<Status> st;
  RunRanks(2, /*device=*/true, Quick(), &res, &st);
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.message();
  const RankLinks& r = res[0];
  EXPECT_EQ(r.ranks, 2);
  EXPECT_TRUE(r.direct);
  ASSERT_EQ(r.links.size(), 2u) << "one pair, staged then direct";
  EXPECT_EQ(r.links[0].kind, "rank_staged");
  EXPECT_EQ(r.links[1].kind, "rank_direct");
  for (const LinkMeasurement& l : r.links) {
    EXPECT_EQ(l.src, "rank0");
    EXPECT_EQ(l.dst, "rank1");
    ASSERT_EQ(l.points.size(), 3u);
    EXPECT_GT(l.fit.gbps, 0);
    EXPECT_GE(l.fit.alpha_ns, 0);
  }
  EXPECT_EQ(r.ring_path, "rank_direct");
  EXPECT_EQ(r.ring.ranks, 2);
  EXPECT_EQ(r.ring.bytes, 1 << 20);
  EXPECT_EQ(r.ring.max_abs_error, 0) << "every partial sum is exact";
  EXPECT_GT(r.ring.measured_ns, 0);
  EXPECT_GT(r.ring.predicted_ns, 0);
  EXPECT_GT(r.ring_local_ns, 0);
}

TEST(RankLinks, ThreeRanksMeasureEveryRingLinkStagedWithoutDeviceMemory) {
  std::vector<RankLinks> res;
  std::vector<Status> st;
  RunRanks(3, /*device=*/false, Quick(), &res, &st);
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.message();
  const RankLinks& r = res[0];
  EXPECT_FALSE(r.direct);
  ASSERT_EQ(r.links.size(), 3u) << "0->1, 1->2, 2->0";
  const char* pairs[3][2] = {{"rank0", "rank1"}, {"rank1", "rank2"}, {"rank2", "rank0"}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.links[i].kind, "rank_staged");
    EXPECT_EQ(r.links[i].src, pairs[i][0]);
    EXPECT_EQ(r.links[i].dst, pairs[i][1]);
    ASSERT_EQ(r.links[i].points.size(), 3u) << "gathered from the link's first rank";
    EXPECT_GT(r.links[i].fit.gbps, 0);
  }
  EXPECT_EQ(r.ring_path, "rank_staged");
  EXPECT_EQ(r.ring.ranks, 3);
  // A multiple of 3 fp32 elements covering 1 MiB.
  EXPECT_EQ(static_cast<int64_t>(r.ring.bytes) % 12, 0);
  EXPECT_GE(r.ring.bytes, 1 << 20);
  EXPECT_EQ(r.ring.max_abs_error, 0);
  // Rank 0 gathers; the others know only what was agreed.
  EXPECT_TRUE(res[2].links.empty());
  EXPECT_EQ(res[2].ranks, 3);
  EXPECT_FALSE(res[2].direct);
}

TEST(RankLinks, OneRankOrBadOptionsAreRefused) {
  std::vector<RankLinks> res;
  std::vector<Status> st;
  RunRanks(1, true, Quick(), &res, &st);
  ASSERT_FALSE(st[0].ok());
  EXPECT_NE(st[0].message().find("at least 2 ranks"), std::string::npos) << st[0].message();
  RankLinkOptions bad = Quick();
  bad.sizes_bytes = {4096, 4096};
  RunRanks(2, true, bad, &res, &st);
  for (const Status& s : st) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("2 distinct"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace fleetsim::calibrate
