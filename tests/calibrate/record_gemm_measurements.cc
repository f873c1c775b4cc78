// Records tests/calibrate/data/cpu_gemm_measurements.csv: real GEMM timings
// on the "cpu" backend, the input of the fitter's recorded-data test
// (fit_test.cc, FitRecorded.*). Not part of the test run: the test reads the
// committed file, so its golden numbers do not move with the machine.
//
// Method (the calibrator's, calibrate/measure.h): operands filled with small
// exactly representable values; per shape one untimed warm-up, then five
// runs, each after Backend::FlushCache and timed with Backend::TimeOnce; the
// median is written. Shapes: m in {1, 2, ..., 256} against the (n, k)
// weights of a small transformer layer (hidden 256, intermediate 1024), in
// fp32 and bf16.
//
// Usage: record_gemm_measurements > cpu_gemm_measurements.csv
// (data/README.md says how the committed file was made).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim {
namespace {

constexpr int kRepetitions = 5;
constexpr int64_t kMaxM = 256;

struct Weight {
  int64_t n, k;  // B is k×n
};

// Fills `elements` values of `dtype` with multiples of 1/8 in [-0.5, 0.5]:
// exact in bf16, fp16 and fp32, never denormal.
std::vector<unsigned char> HostValues(size_t elements, kernels::DType dtype) {
  std::vector<unsigned char> bytes(elements * kernels::DTypeSize(dtype));
  for (size_t i = 0; i < elements; ++i) {
    const float v = static_cast<float>(static_cast<int>(i % 9) - 4) / 8.0f;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if (dtype == kernels::DType::kFp32) {
      std::memcpy(&bytes[i * 4], &bits, 4);
    } else {
      // bf16 is the upper half of the fp32 bits; these values are exact.
      const uint16_t half = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&bytes[i * 2], &half, 2);
    }
  }
  return bytes;
}

Status Fill(kernels::Backend& be, size_t elements, kernels::DType dtype, kernels::DeviceBuffer* buf) {
  const std::vector<unsigned char> host = HostValues(elements, dtype);
  FLEETSIM_RETURN_IF_ERROR(be.AllocateBuffer(host.size(), buf));
  return be.CopyToDevice(buf->data(), host.data(), host.size());
}

Status Run() {
  std::unique_ptr<kernels::Backend> be;
  FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend("cpu", &be));
  std::fprintf(stderr, "device: %s\n", be->device().ToString().c_str());
  // QKV (768×256 as n×k), output projection, fused gate+up, up alone, down,
  // and a square 512 layer.
  const std::vector<Weight> weights = {{768, 256}, {256, 256}, {2048, 256}, {1024, 256}, {256, 1024}, {512, 512}};
  const std::vector<int64_t> ms = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::printf("m,n,k,dtype,median_ns\n");
  for (kernels::DType dtype : {kernels::DType::kFp32, kernels::DType::kBf16}) {
    for (const Weight& w : weights) {
      kernels::DeviceBuffer a, b, c;
      FLEETSIM_RETURN_IF_ERROR(Fill(*be, static_cast<size_t>(kMaxM * w.k), dtype, &a));
      FLEETSIM_RETURN_IF_ERROR(Fill(*be, static_cast<size_t>(w.k * w.n), dtype, &b));
      FLEETSIM_RETURN_IF_ERROR(Fill(*be, static_cast<size_t>(kMaxM * w.n), dtype, &c));
      for (int64_t m : ms) {
        kernels::GemmArgs g;
        g.m = m;
        g.n = w.n;
        g.k = w.k;
        g.dtype = dtype;
        g.a = a.data();
        g.b = b.data();
        g.c = c.data();
        g.lda = w.k;
        g.ldb = w.n;
        g.ldc = w.n;
        auto body = [&]() { return be->Gemm(g); };
        FLEETSIM_RETURN_IF_ERROR(body());  // warm-up
        FLEETSIM_RETURN_IF_ERROR(be->Synchronize());
        std::vector<double> ns(kRepetitions);
        for (double& t : ns) {
          FLEETSIM_RETURN_IF_ERROR(be->FlushCache());
          FLEETSIM_RETURN_IF_ERROR(be->TimeOnce(body, &t));
        }
        std::sort(ns.begin(), ns.end());
        std::printf("%lld,%lld,%lld,%s,%.0f\n", static_cast<long long>(m), static_cast<long long>(w.n),
                    static_cast<long long>(w.k), std::string(kernels::DTypeName(dtype)).c_str(),
                    ns[kRepetitions / 2]);
        std::fflush(stdout);
      }
    }
  }
  return Status::Ok();
}

}  // namespace
}  // namespace fleetsim

int main() {
  const fleetsim::Status s = fleetsim::Run();
  if (!s.ok()) {
    std::fprintf(stderr, "record_gemm_measurements: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
