#include "calibrate/mpi_transport.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdlib>

namespace fleetsim::calibrate {

namespace {

bool g_started = false;

// Messages in pieces of at most INT_MAX bytes (MPI counts are ints).
constexpr size_t kPiece = size_t{1} << 30;

class MpiTransport final : public RankTransport {
 public:
  MpiTransport() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    cuda_aware_ = MPIX_Query_cuda_support() == 1;
#endif
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    if (const size_t nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
    description_ = v + ", CUDA-aware: " + (cuda_aware_ ? "yes" : "no");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool device_memory(const kernels::Backend& backend) const override {
    return backend.name() == "cpu" || (backend.name() == "cuda" && cuda_aware_);
  }
  Status Send(int to, const void* buf, size_t bytes) override {
    const auto* p = static_cast<const unsigned char*>(buf);
    for (size_t off = 0; off < bytes || (bytes == 0 && off == 0); off += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, bytes - off));
      if (MPI_Send(p + off, n, MPI_BYTE, to, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return Status::Invalid("MPI_Send to rank " + std::to_string(to) + " failed");
      if (bytes == 0) break;
    }
    return Status::Ok();
  }
  Status Recv(int from, void* buf, size_t bytes) override {
    auto* p = static_cast<unsigned char*>(buf);
    for (size_t off = 0; off < bytes || (bytes == 0 && off == 0); off += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, bytes - off));
      if (MPI_Recv(p + off, n, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return Status::Invalid("MPI_Recv from rank " + std::to_string(from) + " failed");
      if (bytes == 0) break;
    }
    return Status::Ok();
  }
  Status SendRecv(int to, const void* send, int from, void* recv, size_t bytes) override {
    const auto* s = static_cast<const unsigned char*>(send);
    auto* r = static_cast<unsigned char*>(recv);
    for (size_t off = 0; off < bytes || (bytes == 0 && off == 0); off += kPiece) {
      const int n = static_cast<int>(std::min(kPiece, bytes - off));
      if (MPI_Sendrecv(s + off, n, MPI_BYTE, to, 1, r + off, n, MPI_BYTE, from, 1, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return Status::Invalid("MPI_Sendrecv with ranks " + std::to_string(to) + " and " + std::to_string(from) +
                                " failed");
      if (bytes == 0) break;
    }
    return Status::Ok();
  }
  Status Barrier() override {
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return Status::Invalid("MPI_Barrier failed");
    return Status::Ok();
  }
  std::string description() const override { return description_; }

 private:
  int rank_ = 0, size_ = 1;
  bool cuda_aware_ = false;
  std::string description_;
};

}  // namespace

std::unique_ptr<RankTransport> MakeMpiTransport(std::string* error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      *error = "MPI_Init_thread failed";
      return nullptr;
    }
    g_started = true;
  }
  return std::make_unique<MpiTransport>();
}

void FinishMpiTransport() {
  if (!g_started) return;
  MPI_Finalize();
  g_started = false;
}

void AbortMpiTransport(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace fleetsim::calibrate
