// gemm_baseline: a bare cuBLASLt loop, the yardstick for the calibration
// harness's GEMM timings.
//
//   gemm_baseline [--shapes MxNxK,...] [--reps N] [--warmup N]
//                 [--peak-tflops T] [--device I] [--json FILE]
//
// Why: `fleetsim calibrate` times GEMMs through the kernel Backend
// (kernels/cuda/gemm.cu, cuBLAS) inside its harness (calibrate/measure.h).
// If that stack added overhead, every profile would be pessimistic. This
// program runs the same products with nothing around them, so the ratio
// harness time / baseline time says what the harness costs (the acceptance
// bar is 95%), and the fraction of the vendor's peak says how close the
// library itself gets.
//
// Method, the harness's own (calibrate/measure.h, CudaBackend::TimeOnce and
// FlushCache): per shape, fill the operands with deterministic small values
// (exact in bf16: no NaN, no denormals), validate sampled entries of C
// against a double-precision dot product, run `warmup` untimed products,
// then `reps` timed ones, each preceded by a cudaMemsetAsync of twice the L2
// and a stream synchronize (operands come from HBM, as a serving engine's
// weights do), and timed alone between two CUDA events. The figure is the
// median; min and max are printed beside it.
//
// Layout: row-major C (M×N) = A (M×K) · B (K×N), no transposes. cuBLASLt is
// column-major; a row-major matrix is byte for byte the column-major matrix
// of its transpose, so we compute Cᵀ (N×M) = Bᵀ (N×K) · Aᵀ (K×M): pass B's
// buffer as the first operand with ld = N, A's as the second with ld = K,
// and C with ld = N. bf16 storage, fp32 compute and scale (alpha 1, beta 0),
// the algorithm picked by cuBLASLt's heuristic given a 32 MiB workspace.
//
// Output: one line per shape,
//   shape=MxNxK median_us=… tflops=… peak_fraction=… (min_us=… max_us=… algo_workspace_bytes=…)
// and, with --json, the same figures plus the device and tool versions.
// Exit codes: 0 all shapes ran and validated; 1 a CUDA or cuBLASLt error,
// no device, or a validation failure; 2 bad arguments.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/status.h"

namespace fleetsim {
namespace {

// ---- Error plumbing -----------------------------------------------------------

Status CudaError(cudaError_t e, const char* call, int line) {
  std::string msg = std::string("tools/gemm_baseline.cu:") + std::to_string(line) + ": " + call +
                    " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    msg += "; hint: this machine has no usable NVIDIA GPU or driver";
  } else if (e == cudaErrorMemoryAllocation) {
    msg += "; hint: the shape needs more device memory than is free";
  }
  return Status::Invalid(std::move(msg));
}

Status LtError(cublasStatus_t e, const char* call, int line) {
  return Status::Invalid(std::string("tools/gemm_baseline.cu:") + std::to_string(line) + ": " + call +
                         " failed: " + cublasLtGetStatusName(e) + " (" + cublasLtGetStatusString(e) + ")");
}

#define BASELINE_CUDA(call)                                         \
  do {                                                              \
    const cudaError_t _e = (call);                                  \
    if (_e != cudaSuccess) return CudaError(_e, #call, __LINE__);   \
  } while (0)

#define BASELINE_LT(call)                                                     \
  do {                                                                        \
    const cublasStatus_t _e = (call);                                         \
    if (_e != CUBLAS_STATUS_SUCCESS) return LtError(_e, #call, __LINE__);     \
  } while (0)

// ---- Options ----------------------------------------------------------------

struct Shape {
  int64_t m = 0, n = 0, k = 0;
};

struct Options {
  // The large bf16 GEMMs of one Llama-3.1-8B layer at 2048-4096 tokens
  // (QKV-sized square, MLP up/gate N = 14336, MLP down K = 14336) and the
  // square 8192³ the vendor-peak comparisons use.
  std::vector<Shape> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 14336, 4096}, {4096, 4096, 14336}};
  int reps = 20;             // timed products per shape, >= 1
  int warmup = 3;            // untimed products per shape first (heuristic caches, clocks ramping), >= 0
  double peak_tflops = 989;  // vendor dense bf16 peak, TFLOP/s (H100/H200 SXM datasheet)
  int device = 0;            // CUDA device ordinal
  std::string json_path;     // empty: no JSON file
};

// 4096x4096x4096 -> Shape. Each dimension in [1, 2^31).
Status ParseShape(const std::string& text, Shape* out) {
  int64_t dims[3] = {0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? text.find('x', pos) : text.size();
    if (end == std::string::npos) break;
    const std::string part = text.substr(pos, end - pos);
    char* tail = nullptr;
    errno = 0;
    const long long v = std::strtoll(part.c_str(), &tail, 10);
    if (part.empty() || *tail != '\0' || errno != 0 || v < 1 || v > 2147483647LL) {
      return Status::Invalid("--shapes: \"" + text + "\": each of M, N, K must be an integer in [1, 2^31)");
    }
    dims[i] = v;
    pos = end + 1;
  }
  if (dims[2] == 0) return Status::Invalid("--shapes: \"" + text + "\": expected MxNxK, e.g. 4096x4096x4096");
  *out = Shape{dims[0], dims[1], dims[2]};
  return Status::Ok();
}

Status ParseInt(const char* flag, const std::string& text, int lo, int* out) {
  char* tail = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &tail, 10);
  if (text.empty() || *tail != '\0' || errno != 0 || v < lo || v > 1000000) {
    return Status::Invalid(std::string(flag) + ": \"" + text + "\" is not an integer in [" + std::to_string(lo) +
                           ", 1000000]");
  }
  *out = static_cast<int>(v);
  return Status::Ok();
}

const char kUsage[] =
    "usage: gemm_baseline [--shapes MxNxK,...] [--reps N] [--warmup N] [--peak-tflops T]\n"
    "                     [--device I] [--json FILE]\n"
    "Times row-major bf16 C = A*B with a bare cuBLASLt loop (fp32 compute, heuristic\n"
    "algorithm, 32 MiB workspace, L2 flushed before each timed product).\n"
    "Defaults: --shapes 4096x4096x4096,8192x8192x8192,2048x14336x4096,4096x4096x14336\n"
    "          --reps 20 --warmup 3 --peak-tflops 989 --device 0\n";

Status ParseArgs(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      *help = true;
      return Status::Ok();
    }
    if (i + 1 >= argc) return Status::Invalid(flag + ": missing value (or unknown flag)");
    const std::string value = argv[++i];
    if (flag == "--shapes") {
      o->shapes.clear();
      size_t pos = 0;
      while (pos <= value.size()) {
        const size_t end = std::min(value.find(',', pos), value.size());
        Shape s;
        FLEETSIM_RETURN_IF_ERROR(ParseShape(value.substr(pos, end - pos), &s));
        o->shapes.push_back(s);
        pos = end + 1;
      }
    } else if (flag == "--reps") {
      FLEETSIM_RETURN_IF_ERROR(ParseInt("--reps", value, 1, &o->reps));
    } else if (flag == "--warmup") {
      FLEETSIM_RETURN_IF_ERROR(ParseInt("--warmup", value, 0, &o->warmup));
    } else if (flag == "--device") {
      FLEETSIM_RETURN_IF_ERROR(ParseInt("--device", value, 0, &o->device));
    } else if (flag == "--peak-tflops") {
      char* tail = nullptr;
      o->peak_tflops = std::strtod(value.c_str(), &tail);
      if (value.empty() || *tail != '\0' || !(o->peak_tflops > 0) || !std::isfinite(o->peak_tflops)) {
        return Status::Invalid("--peak-tflops: \"" + value + "\" is not a positive number");
      }
    } else if (flag == "--json") {
      o->json_path = value;
    } else {
      return Status::Invalid("unknown flag \"" + flag +
                             "\" (known: --shapes, --reps, --warmup, --peak-tflops, --device, --json, --help)");
    }
  }
  return Status::Ok();
}

// ---- Operands -----------------------------------------------------------------

// Element i of operand `salt`: (h mod 256 - 128) / 256 for a hash h of
// (salt, i). Multiples of 2^-8 in [-0.5, 0.5): exact in bf16 (8 significant
// bits), so host and device agree bit for bit without converting.
__host__ __device__ inline float OperandValue(uint32_t salt, uint64_t i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) ^ (salt * 0x9e3779b9u);
  h ^= h >> 15;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  return static_cast<float>(static_cast<int>(h & 0xffu) - 128) * (1.0f / 256.0f);
}

__global__ void FillOperand(__nv_bfloat16* p, uint64_t count, uint32_t salt) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    p[i] = __float2bfloat16(OperandValue(salt, i));
  }
}

constexpr uint32_t kSaltA = 1, kSaltB = 2;

float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- One shape ------------------------------------------------------------------

struct Result {
  Shape shape;
  double median_us = 0, min_us = 0, max_us = 0;
  double tflops = 0, peak_fraction = 0;
  size_t algo_workspace_bytes = 0;
  double max_abs_error = 0;  // over the validated samples
};

// Device state shared by every shape: one handle, stream, events, workspace
// and flush buffer for the whole run, as the backend keeps them.
struct Rig {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = size_t{32} << 20;
  void* flush = nullptr;
  size_t flush_bytes = 0;
  int flush_value = 0;
};

// Device buffers and cuBLASLt descriptors of one shape, released on scope
// exit whatever path leaves it.
struct ShapeState {
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~ShapeState() {
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
    if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
    if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
    cudaFree(c);
    cudaFree(b);
    cudaFree(a);
  }
};

Status Fill(cudaStream_t stream, __nv_bfloat16* p, uint64_t count, uint32_t salt) {
  FillOperand<<<1024, 256, 0, stream>>>(p, count, salt);
  BASELINE_CUDA(cudaGetLastError());
  return Status::Ok();
}

// Compares sampled entries of the row-major M×N result with a double dot
// product of the same (exact) operand values: catches a swapped layout or a
// wrong leading dimension, which the timings alone would not.
Status Validate(const Rig& rig, const ShapeState& st, const Shape& s, double* max_abs_error) {
  BASELINE_CUDA(cudaStreamSynchronize(rig.stream));
  const int64_t rows[] = {0, s.m / 3, s.m / 2 + 1, s.m - 1};
  const int64_t cols[] = {0, s.n / 5 + 3, s.n - 2 >= 0 ? s.n - 2 : 0, s.n - 1};
  *max_abs_error = 0;
  for (int64_t i : rows) {
    for (int64_t j : cols) {
      if (i < 0 || i >= s.m || j < 0 || j >= s.n) continue;
      double ref = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        ref += static_cast<double>(OperandValue(kSaltA, static_cast<uint64_t>(i * s.k + k))) *
               static_cast<double>(OperandValue(kSaltB, static_cast<uint64_t>(k * s.n + j)));
      }
      uint16_t bits = 0;
      BASELINE_CUDA(cudaMemcpy(&bits, st.c + (i * s.n + j), sizeof bits, cudaMemcpyDeviceToHost));
      const double got = Bf16ToFloat(bits);
      // bf16 output rounding (2^-8 relative, with margin) plus fp32
      // accumulation over K terms of at most 1/4 in magnitude.
      const double tol = 1e-2 * std::fabs(ref) + 1e-2 * std::sqrt(static_cast<double>(s.k));
      const double err = std::fabs(got - ref);
      *max_abs_error = std::max(*max_abs_error, err);
      if (!(err <= tol)) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "shape %lldx%lldx%lld: C[%lld][%lld] = %.6g, expected %.6g (tolerance %.3g): the "
                      "product is wrong, timings would be meaningless",
                      static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                      static_cast<long long>(i), static_cast<long long>(j), got, ref, tol);
        return Status::Invalid(buf);
      }
    }
  }
  return Status::Ok();
}

Status RunShape(Rig& rig, const Options& o, const Shape& s, Result* r) {
  r->shape = s;
  ShapeState st;
  const size_t elem = sizeof(__nv_bfloat16);
  BASELINE_CUDA(cudaMalloc(&st.a, static_cast<size_t>(s.m * s.k) * elem));
  BASELINE_CUDA(cudaMalloc(&st.b, static_cast<size_t>(s.k * s.n) * elem));
  BASELINE_CUDA(cudaMalloc(&st.c, static_cast<size_t>(s.m * s.n) * elem));
  FLEETSIM_RETURN_IF_ERROR(Fill(rig.stream, st.a, static_cast<uint64_t>(s.m * s.k), kSaltA));
  FLEETSIM_RETURN_IF_ERROR(Fill(rig.stream, st.b, static_cast<uint64_t>(s.k * s.n), kSaltB));
  BASELINE_CUDA(cudaMemsetAsync(st.c, 0, static_cast<size_t>(s.m * s.n) * elem, rig.stream));

  // Column-major view (see the file comment): D (N×M) = B' (N×K) · A' (K×M).
  BASELINE_LT(cublasLtMatmulDescCreate(&st.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t no_trans = CUBLAS_OP_N;
  BASELINE_LT(cublasLtMatmulDescSetAttribute(st.op, CUBLASLT_MATMUL_DESC_TRANSA, &no_trans, sizeof no_trans));
  BASELINE_LT(cublasLtMatmulDescSetAttribute(st.op, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
  BASELINE_LT(cublasLtMatrixLayoutCreate(&st.la, CUDA_R_16BF, static_cast<uint64_t>(s.n),
                                         static_cast<uint64_t>(s.k), s.n));
  BASELINE_LT(cublasLtMatrixLayoutCreate(&st.lb, CUDA_R_16BF, static_cast<uint64_t>(s.k),
                                         static_cast<uint64_t>(s.m), s.k));
  BASELINE_LT(cublasLtMatrixLayoutCreate(&st.lc, CUDA_R_16BF, static_cast<uint64_t>(s.n),
                                         static_cast<uint64_t>(s.m), s.n));
  BASELINE_LT(cublasLtMatmulPreferenceCreate(&st.pref));
  BASELINE_LT(cublasLtMatmulPreferenceSetAttribute(st.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &rig.workspace_bytes, sizeof rig.workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  BASELINE_LT(cublasLtMatmulAlgoGetHeuristic(rig.lt, st.op, st.la, st.lb, st.lc, st.lc, st.pref, 1, &heuristic,
                                             &found));
  if (found < 1 || heuristic.state != CUBLAS_STATUS_SUCCESS) {
    return Status::Invalid("cublasLtMatmulAlgoGetHeuristic found no algorithm for " + std::to_string(s.m) + "x" +
                           std::to_string(s.n) + "x" + std::to_string(s.k));
  }
  r->algo_workspace_bytes = heuristic.workspaceSize;

  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&]() -> Status {
    BASELINE_LT(cublasLtMatmul(rig.lt, st.op, &alpha, st.b, st.la, st.a, st.lb, &beta, st.c, st.lc, st.c, st.lc,
                               &heuristic.algo, rig.workspace, rig.workspace_bytes, rig.stream));
    return Status::Ok();
  };

  FLEETSIM_RETURN_IF_ERROR(matmul());
  FLEETSIM_RETURN_IF_ERROR(Validate(rig, st, s, &r->max_abs_error));
  for (int i = 0; i < o.warmup; ++i) FLEETSIM_RETURN_IF_ERROR(matmul());
  BASELINE_CUDA(cudaStreamSynchronize(rig.stream));

  std::vector<double> us;
  us.reserve(static_cast<size_t>(o.reps));
  for (int rep = 0; rep < o.reps; ++rep) {
    // A new byte value each time, so no layer of the memory system can
    // treat the flush as a no-op.
    rig.flush_value = (rig.flush_value + 1) & 0xff;
    BASELINE_CUDA(cudaMemsetAsync(rig.flush, rig.flush_value, rig.flush_bytes, rig.stream));
    BASELINE_CUDA(cudaStreamSynchronize(rig.stream));
    BASELINE_CUDA(cudaEventRecord(rig.start, rig.stream));
    const Status s_mm = matmul();
    BASELINE_CUDA(cudaEventRecord(rig.stop, rig.stream));
    BASELINE_CUDA(cudaEventSynchronize(rig.stop));
    FLEETSIM_RETURN_IF_ERROR(s_mm);
    float ms = 0;
    BASELINE_CUDA(cudaEventElapsedTime(&ms, rig.start, rig.stop));
    us.push_back(static_cast<double>(ms) * 1e3);
  }
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  r->median_us = n % 2 == 1 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
  r->min_us = us.front();
  r->max_us = us.back();
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  r->tflops = flops / (r->median_us * 1e-6) / 1e12;
  r->peak_fraction = r->tflops / o.peak_tflops;
  return Status::Ok();
}

// ---- Whole run ------------------------------------------------------------------

struct DeviceReport {
  std::string name;
  int sm_count = 0, sm_clock_khz = 0, memory_clock_khz = 0, l2_bytes = 0;
  std::string software;
};

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

Status WriteJson(const std::string& path, const Options& o, const DeviceReport& d,
                 const std::vector<Result>& results) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::Invalid("--json: cannot write \"" + path + "\": " + std::strerror(errno));
  std::fprintf(f, "{\n  \"tool\": \"gemm_baseline\",\n  \"method\": \"%s\",\n",
               "cublasLtMatmul bf16 in/out, fp32 compute, heuristic algo, 32 MiB workspace; per shape: "
               "warmup, then each timed product alone between CUDA events after a 2x L2 memset flush; median");
  std::fprintf(f, "  \"device\": {\"name\": \"%s\", \"sm_count\": %d, \"sm_clock_max_khz\": %d, "
                  "\"memory_clock_khz\": %d, \"l2_bytes\": %d},\n",
               JsonEscape(d.name).c_str(), d.sm_count, d.sm_clock_khz, d.memory_clock_khz, d.l2_bytes);
  std::fprintf(f, "  \"software\": \"%s\",\n", JsonEscape(d.software).c_str());
  std::fprintf(f, "  \"dtype\": \"bf16\",\n  \"reps\": %d,\n  \"warmup\": %d,\n  \"peak_tflops\": %.6g,\n",
               o.reps, o.warmup, o.peak_tflops);
  std::fprintf(f, "  \"shapes\": [\n");
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::fprintf(f,
                 "    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"median_us\": %.3f, \"min_us\": %.3f, "
                 "\"max_us\": %.3f, \"tflops\": %.3f, \"peak_fraction\": %.4f, \"algo_workspace_bytes\": %zu, "
                 "\"validation_max_abs_error\": %.4g}%s\n",
                 static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n),
                 static_cast<long long>(r.shape.k), r.median_us, r.min_us, r.max_us, r.tflops, r.peak_fraction,
                 r.algo_workspace_bytes, r.max_abs_error, i + 1 < results.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) return Status::Invalid("--json: error writing \"" + path + "\"");
  return Status::Ok();
}

std::string VersionString(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

Status Setup(const Options& o, Rig* rig, DeviceReport* d) {
  int count = 0;
  BASELINE_CUDA(cudaGetDeviceCount(&count));
  if (o.device >= count) {
    return Status::Invalid("--device " + std::to_string(o.device) + ": the runtime sees " + std::to_string(count) +
                           " device(s)");
  }
  BASELINE_CUDA(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  BASELINE_CUDA(cudaGetDeviceProperties(&prop, o.device));
  d->name = prop.name;
  d->sm_count = prop.multiProcessorCount;
  d->l2_bytes = prop.l2CacheSize;
  // CUDA 13 removed the clock fields from cudaDeviceProp; attributes remain.
  BASELINE_CUDA(cudaDeviceGetAttribute(&d->sm_clock_khz, cudaDevAttrClockRate, o.device));
  BASELINE_CUDA(cudaDeviceGetAttribute(&d->memory_clock_khz, cudaDevAttrMemoryClockRate, o.device));
  int runtime = 0, driver = 0;
  BASELINE_CUDA(cudaRuntimeGetVersion(&runtime));
  BASELINE_CUDA(cudaDriverGetVersion(&driver));
  const size_t lt = cublasLtGetVersion();  // major·10000 + minor·100 + patch
  d->software = "CUDA runtime " + VersionString(runtime) + ", driver " + VersionString(driver) + ", cuBLASLt " +
                std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100);

  BASELINE_CUDA(cudaStreamCreateWithFlags(&rig->stream, cudaStreamNonBlocking));
  BASELINE_CUDA(cudaEventCreate(&rig->start));
  BASELINE_CUDA(cudaEventCreate(&rig->stop));
  BASELINE_LT(cublasLtCreate(&rig->lt));
  BASELINE_CUDA(cudaMalloc(&rig->workspace, rig->workspace_bytes));
  rig->flush_bytes = 2 * static_cast<size_t>(d->l2_bytes > 0 ? d->l2_bytes : 64 << 20);
  BASELINE_CUDA(cudaMalloc(&rig->flush, rig->flush_bytes));
  return Status::Ok();
}

void Teardown(Rig* rig) {
  if (rig->stream != nullptr) cudaStreamSynchronize(rig->stream);
  cudaFree(rig->flush);
  cudaFree(rig->workspace);
  if (rig->lt != nullptr) cublasLtDestroy(rig->lt);
  if (rig->stop != nullptr) cudaEventDestroy(rig->stop);
  if (rig->start != nullptr) cudaEventDestroy(rig->start);
  if (rig->stream != nullptr) cudaStreamDestroy(rig->stream);
}

int Main(int argc, char** argv) {
  Options o;
  bool help = false;
  const Status parsed = ParseArgs(argc, argv, &o, &help);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "gemm_baseline: %s\n%s", parsed.message().c_str(), kUsage);
    return 2;
  }

  Rig rig;
  DeviceReport device;
  Status s = Setup(o, &rig, &device);
  if (!s.ok()) {
    std::fprintf(stderr, "gemm_baseline: %s\n", s.message().c_str());
    Teardown(&rig);
    return 1;
  }
  std::printf("device: %s, %d SMs, max SM clock %d MHz, memory clock %d MHz, L2 %d MiB; %s\n",
              device.name.c_str(), device.sm_count, device.sm_clock_khz / 1000, device.memory_clock_khz / 1000,
              device.l2_bytes >> 20, device.software.c_str());
  std::printf("method: bf16 in/out, fp32 compute, heuristic algo, 32 MiB workspace, %d warm-up + %d timed, "
              "2x L2 flush before each; peak %.0f TFLOP/s\n",
              o.warmup, o.reps, o.peak_tflops);
  std::fflush(stdout);

  std::vector<Result> results;
  int failures = 0;
  for (const Shape& shape : o.shapes) {
    Result r;
    s = RunShape(rig, o, shape, &r);
    if (!s.ok()) {
      // One shape's failure (out of memory, say) must not hide the others.
      std::fprintf(stderr, "gemm_baseline: %s\n", s.message().c_str());
      std::printf("shape=%lldx%lldx%lld error\n", static_cast<long long>(shape.m),
                  static_cast<long long>(shape.n), static_cast<long long>(shape.k));
      ++failures;
      // A sticky error leaves the context unusable: stop there.
      if (cudaDeviceSynchronize() != cudaSuccess) break;
      continue;
    }
    std::printf("shape=%lldx%lldx%lld median_us=%.1f tflops=%.1f peak_fraction=%.3f (min_us=%.1f max_us=%.1f "
                "algo_workspace_bytes=%zu)\n",
                static_cast<long long>(shape.m), static_cast<long long>(shape.n), static_cast<long long>(shape.k),
                r.median_us, r.tflops, r.peak_fraction, r.min_us, r.max_us, r.algo_workspace_bytes);
    std::fflush(stdout);
    results.push_back(r);
  }
  Teardown(&rig);

  if (!o.json_path.empty()) {
    s = WriteJson(o.json_path, o, device, results);
    if (!s.ok()) {
      std::fprintf(stderr, "gemm_baseline: %s\n", s.message().c_str());
      return 1;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fleetsim

int main(int argc, char** argv) { return fleetsim::Main(argc, argv); }
