#include "sim/plan/batch_runner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace fleetsim {

void RunOnThreads(int threads, const std::vector<size_t>& indices, const std::function<SimOutcome(size_t)>& job,
                  const std::function<void(size_t)>& tick, std::vector<SimOutcome>* out) {
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  std::condition_variable cv;
  auto work = [&] {
    for (;;) {
      const size_t k = next.fetch_add(1);
      if (k >= indices.size()) break;
      (*out)[indices[k]] = job(indices[k]);
      if (done.fetch_add(1) + 1 == indices.size()) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(indices.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  if (n == 1) {
    // One thread: the caller works, ticking between jobs.
    auto last = std::chrono::steady_clock::now();
    for (size_t k = next.fetch_add(1); k < indices.size(); k = next.fetch_add(1)) {
      (*out)[indices[k]] = job(indices[k]);
      done.fetch_add(1);
      if (tick && std::chrono::steady_clock::now() - last > std::chrono::milliseconds(200)) {
        tick(done.load());
        last = std::chrono::steady_clock::now();
      }
    }
  } else {
    // The caller ticks while the pool works.
    pool.emplace_back(work);
    std::unique_lock<std::mutex> lock(mu);
    while (done.load() < indices.size()) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (tick) tick(done.load());
    }
  }
  for (std::thread& t : pool) t.join();
  if (tick) tick(done.load());
}

namespace {

class ThreadRunner final : public BatchRunner {
 public:
  explicit ThreadRunner(int threads) : threads_(threads) {}
  void Run(size_t n, const std::function<SimOutcome(size_t)>& job, const std::function<void(size_t)>& tick,
           std::vector<SimOutcome>* out) override {
    out->assign(n, SimOutcome());
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = i;
    RunOnThreads(threads_, all, job, tick, out);
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<BatchRunner> MakeThreadRunner(int threads) { return std::make_unique<ThreadRunner>(threads); }

bool LaunchedByMpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace fleetsim
