// MpiRunner: a batch split over MPI ranks, round-robin by job index, each
// rank running its share on its own threads; the results are all-gathered
// so that every rank holds the whole batch and takes the same next round.
// Only the calling thread talks to MPI (MPI_THREAD_FUNNELED).
#include <mpi.h>

#include <cstring>

#include "sim/plan/batch_runner.h"

namespace fleetsim {
namespace {

bool g_started = false;

void Append(std::string* b, const void* p, size_t n) { b->append(static_cast<const char*>(p), n); }

class MpiRunner final : public BatchRunner {
 public:
  MpiRunner(int threads, int rank, int size) : threads_(threads), rank_(rank), size_(size) {}

  size_t LocalJobs(size_t n) const override {
    return n / static_cast<size_t>(size_) + (static_cast<size_t>(rank_) < n % static_cast<size_t>(size_) ? 1 : 0);
  }
  int rank() const override { return rank_; }
  bool AllAgree(bool ok) override {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all == 1;
  }
  int ranks() const override { return size_; }

  void Run(size_t n, const std::function<SimOutcome(size_t)>& job, const std::function<void(size_t)>& tick,
           std::vector<SimOutcome>* out) override {
    out->assign(n, SimOutcome());
    std::vector<size_t> mine;
    for (size_t i = static_cast<size_t>(rank_); i < n; i += static_cast<size_t>(size_)) mine.push_back(i);
    RunOnThreads(threads_, mine, job, tick, out);
    // Each outcome as: index, metrics, error length, error bytes.
    std::string local;
    for (size_t i : mine) {
      const SimOutcome& o = (*out)[i];
      const uint64_t idx = i, len = o.error.size();
      Append(&local, &idx, sizeof idx);
      Append(&local, o.metrics.data(), sizeof(double) * o.metrics.size());
      Append(&local, &len, sizeof len);
      Append(&local, o.error.data(), o.error.size());
    }
    const int mine_bytes = static_cast<int>(local.size());
    std::vector<int> sizes(size_), offsets(size_);
    MPI_Allgather(&mine_bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = total;
      total += sizes[r];
    }
    std::string all(static_cast<size_t>(total), '\0');
    MPI_Allgatherv(local.data(), mine_bytes, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
    size_t at = 0;
    while (at < all.size()) {
      uint64_t idx = 0, len = 0;
      std::memcpy(&idx, all.data() + at, sizeof idx);
      at += sizeof idx;
      SimOutcome o;
      std::memcpy(o.metrics.data(), all.data() + at, sizeof(double) * o.metrics.size());
      at += sizeof(double) * o.metrics.size();
      std::memcpy(&len, all.data() + at, sizeof len);
      at += sizeof len;
      o.error.assign(all.data() + at, len);
      at += len;
      (*out)[idx] = std::move(o);
    }
  }

 private:
  int threads_, rank_, size_;
};

}  // namespace

std::unique_ptr<BatchRunner> MakeMpiRunner(int threads, std::string* error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      *error = "MPI_Init_thread failed";
      return nullptr;
    }
    if (provided < MPI_THREAD_FUNNELED) {
      *error = "this MPI does not allow threads beside the one that calls it (MPI_THREAD_FUNNELED)";
      MPI_Finalize();
      return nullptr;
    }
    g_started = true;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::make_unique<MpiRunner>(threads, rank, size);
}

void FinishMpi() {
  if (!g_started) return;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  g_started = false;
}

}  // namespace fleetsim
