// The cuda backend's BackendInterface: init parses the blob and allocates every device buffer
// and cuBLASLt plan; prepare uploads the weights and captures the nodes into a CUDA graph;
// execute copies the inputs in, replays the graph, copies the outputs out and waits once.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/runtime/cublaslt_api.h"
#include "backends/cuda/runtime/cuda_delegate.h"
#include "backends/cuda/runtime/device_allocator.h"
#include "backends/cuda/runtime/device_probe.h"
#include "backends/cuda/runtime/group_ends_check.h"
#include "backends/cuda/runtime/host_range_registry.h"
#include "backends/cuda/runtime/register_cuda_backend.h"
#include "runtime/core/log.h"

#ifndef TERN_CUDA_ARCHS
#define TERN_CUDA_ARCHS "?"
#endif

namespace tern {

namespace cuda {
namespace {

Error cuda_failed(Error error, const char* what, cudaError_t e) {
  return set_error_message(error, "cuda backend: %s: %s (%s)", what, cudaGetErrorString(e),
                           cudaGetErrorName(e));
}

void release(CudaDelegate* d) {
  if (d == nullptr) return;
  if (d->graph_exec != nullptr) cudaGraphExecDestroy(d->graph_exec);
  if (d->graph != nullptr) cudaGraphDestroy(d->graph);
  delete[] d->gemms;
  if (d->lt != nullptr) lt().cublasLtDestroy(d->lt);
  for (uint32_t i = 0; i < d->num_held; ++i) {
    host_range_registry().release(d->held_data[i], d->held_bytes[i]);
  }
  delete[] d->held_data;
  delete[] d->held_bytes;
  delete[] d->constant_ptrs;
  DeviceAllocator& a = device_allocator();
  const BlobHeader& h = d->plan.header;
  a.free(d->buffers.arena, h.arena_bytes);
  a.free(d->buffers.weights, d->weights_bytes);
  a.free(d->buffers.workspace, h.workspace_bytes);
  a.free(d->buffers.lt_workspace, kLtWorkspaceBytes);
  a.free(d->buffers.error_flag, sizeof(int));
  if (d->stream != nullptr) cudaStreamDestroy(d->stream);
  free_blob_plan(&d->plan);
  delete d;
}

bool is_half(uint32_t dtype) {
  return dtype == static_cast<uint32_t>(ValueDType::F16) ||
         dtype == static_cast<uint32_t>(ValueDType::BF16);
}

/// The dtype tern's argument for value `v` has: its own, or f32 for a 16-bit constant (an f32
/// weight of the program, converted at prepare).
uint32_t arg_dtype(const BlobValue& v) {
  return is_half(v.dtype) ? static_cast<uint32_t>(ValueDType::F32) : v.dtype;
}

/// Bytes of packed codes of quantized value `v` (NF4: two per byte; FP8: one).
uint64_t quant_code_bytes(const BlobValue& v) {
  const uint64_t n = value_numel(v);
  return v.dtype == static_cast<uint32_t>(ValueDType::Nf4) ? (n + 1) / 2 : n;
}

/// The first node reading quantized value `v` (the reader checked that every node reading it
/// describes the same buffer size; the first one's scheme lays the buffer out), or null.
const BlobNode* quant_reader(const BlobPlan& plan, uint32_t v) {
  for (uint32_t i = 0; i < plan.header.num_nodes; ++i) {
    const BlobNode& n = plan.nodes[i];
    const bool quant = n.op == static_cast<uint32_t>(NodeOp::QuantLinear) ||
                       n.op == static_cast<uint32_t>(NodeOp::QuantEmbedding);
    if (quant && n.inputs[n.op == static_cast<uint32_t>(NodeOp::QuantLinear) ? 1 : 0] == v) {
      return &n;
    }
  }
  return nullptr;
}

/// Uploads quantized constant `i` (argument `t`) into its QuantLayout buffer: the packed codes,
/// then the scheme tensors of `t`'s QuantView, which must be the scheme the blob was compiled
/// for (the program's own checks gave the tensors their lengths).
Error upload_quant_weight(CudaDelegate* d, uint32_t i, const TensorView& t) {
  const BlobValue& v = d->plan.values[i];
  const BlobNode* n = quant_reader(d->plan, i);
  QuantDecode q;
  quant::QuantLayout l;
  TERN_CHECK_OR_RETURN_ERROR(
      n != nullptr && make_quant_decode(n->params, v.dims[0], v.dims[1], n->fparams[0], &q, &l),
      InvalidState, "cuda backend: value %u: a quantized weight no quant node reads", i);
  const QuantView* view = t.quant;
  const int64_t* p = n->params;
  const int64_t format = p[kQFormat];
  bool ok = view != nullptr;
  if (ok && format == static_cast<int64_t>(quant::QuantFormat::Nf4)) {
    ok = view->scheme == QuantView::Scheme::NF4 && view->block_size == p[kQBlockSize] &&
         view->absmax != nullptr;
  } else if (ok && format == static_cast<int64_t>(quant::QuantFormat::Nf4DoubleQuant)) {
    ok = view->scheme == QuantView::Scheme::NF4DoubleQuant &&
         view->block_size == p[kQBlockSize] && view->dq_block_size == p[kQDqBlockSize] &&
         view->dq_offset == n->fparams[0] && view->dq_codes != nullptr &&
         view->dq_absmax2 != nullptr && view->dq_table != nullptr;
  } else if (ok) {
    const int64_t g = static_cast<int64_t>(view->granularity);
    ok = view->scheme == QuantView::Scheme::FP8 && g == p[kQGranularity] &&
         (g != static_cast<int64_t>(quant::QuantGranularity::Block2D) ||
          (view->block_rows == p[kQBlockRows] && view->block_cols == p[kQBlockCols])) &&
         view->scale != nullptr;
  }
  TERN_CHECK_OR_RETURN_ERROR(
      ok, InvalidArgument,
      "cuda backend: value %u (quantized weight '%s'): its quantization parameters are not "
      "those the blob was compiled for (format %lld, block size %lld, dq block size %lld, "
      "granularity %lld, tile %lldx%lld)",
      i, t.name ? t.name : "", static_cast<long long>(format),
      static_cast<long long>(p[kQBlockSize]), static_cast<long long>(p[kQDqBlockSize]),
      static_cast<long long>(p[kQGranularity]), static_cast<long long>(p[kQBlockRows]),
      static_cast<long long>(p[kQBlockCols]));
  uint8_t* dst = static_cast<uint8_t*>(value_ptr(*d, i));
  struct Section {
    uint64_t offset;
    const void* host;
    uint64_t bytes;
  };
  const uint64_t groups = l.table_word - l.absmax2_word;
  Section sections[4] = {{0, t.data, quant_code_bytes(v)}, {0, nullptr, 0}, {0, nullptr, 0},
                         {0, nullptr, 0}};
  if (format == static_cast<int64_t>(quant::QuantFormat::Nf4)) {
    sections[1] = {4 * l.scale_word, view->absmax, 4 * l.blocks};
  } else if (format == static_cast<int64_t>(quant::QuantFormat::Nf4DoubleQuant)) {
    sections[1] = {4 * l.scale_word, view->dq_codes, l.blocks};
    sections[2] = {4 * l.absmax2_word, view->dq_absmax2, 4 * groups};
    sections[3] = {4 * l.table_word, view->dq_table, 4 * 256};
  } else {
    sections[1] = {4 * l.scale_word, view->scale, 4 * l.blocks};
  }
  for (const Section& s : sections) {
    if (s.bytes == 0) continue;
    const cudaError_t e = cudaMemcpy(dst + s.offset, s.host, s.bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "weight upload", e);
  }
  return Error::Ok;
}

/// Whether the delegate reads its f32 weights in place from host memory (docs/jetson.md):
/// TERN_CUDA_ZERO_COPY=1 on an integrated GPU (Jetson) whose kernels may use a registered host
/// pointer as is, or TERN_CUDA_ZERO_COPY=force on any GPU that may (a discrete one then reads
/// them over its bus: slow, for tests). One log line says why not when it was asked for.
bool want_zero_copy(int device) {
  const char* mode = std::getenv("TERN_CUDA_ZERO_COPY");
  if (mode == nullptr || (std::strcmp(mode, "1") != 0 && std::strcmp(mode, "force") != 0)) {
    return false;
  }
  int integrated = 0, map_host = 0, host_pointer = 0;
  (void)cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, device);
  (void)cudaDeviceGetAttribute(&map_host, cudaDevAttrCanMapHostMemory, device);
  (void)cudaDeviceGetAttribute(&host_pointer, cudaDevAttrCanUseHostPointerForRegisteredMem, device);
  if (map_host == 0 || host_pointer == 0) {
    TERN_LOG(Info,
             "cuda backend: TERN_CUDA_ZERO_COPY=%s, but device %d cannot read registered host "
             "memory through its host address; weights are copied to device memory",
             mode, device);
    return false;
  }
  if (integrated == 0 && std::strcmp(mode, "force") != 0) {
    TERN_LOG(Info,
             "cuda backend: TERN_CUDA_ZERO_COPY=1, but device %d is a discrete GPU; weights are "
             "copied to device memory (TERN_CUDA_ZERO_COPY=force reads them over the bus)",
             device);
    return false;
  }
  return true;
}

/// The argument `arg` as a tensor matching value `v` (dtype, dims, bytes, data).
Error check_arg(const BlobValue& v, uint32_t index, Span<EValue*> args) {
  TERN_CHECK_OR_RETURN_ERROR(
      v.arg < args.size() && args[v.arg] != nullptr && args[v.arg]->is_tensor(), InvalidArgument,
      "cuda backend: value %u: argument %u is not a tensor (%zu arguments)", index, v.arg,
      args.size());
  const TensorView& t = args[v.arg]->to_tensor();
  TERN_CHECK_OR_RETURN_ERROR(static_cast<uint32_t>(t.dtype) == arg_dtype(v), InvalidArgument,
                             "cuda backend: argument %u is %s, the blob expects %s", v.arg,
                             to_string(t.dtype), to_string(static_cast<DType>(arg_dtype(v))));
  bool dims_ok = t.rank == v.rank && t.is_contiguous();
  for (uint32_t i = 0; dims_ok && i < v.rank; ++i) {
    dims_ok = t.sizes[i] == static_cast<int64_t>(v.dims[i]);
  }
  TERN_CHECK_OR_RETURN_ERROR(dims_ok, InvalidArgument,
                             "cuda backend: argument %u has another shape than the blob's "
                             "value %u (or is not contiguous)",
                             v.arg, index);
  const uint64_t bytes = is_quant_dtype(v.dtype) ? quant_code_bytes(v)
                                                 : value_numel(v) * value_dtype_bytes(arg_dtype(v));
  TERN_CHECK_OR_RETURN_ERROR(t.data != nullptr && t.nbytes >= bytes, InvalidArgument,
                             "cuda backend: argument %u has %llu bytes at %p, expected %llu", v.arg,
                             static_cast<unsigned long long>(t.nbytes), t.data,
                             static_cast<unsigned long long>(bytes));
  return Error::Ok;
}

class CudaBackend final : public BackendInterface {
 public:
  bool is_available() const override { return probe_device().available; }
  const char* unavailable_reason() const override { return probe_device().reason; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer blob,
                               Span<const CompileSpecView> specs) const override {
    (void)specs;
    TERN_RETURN_IF_ERROR(check_backend_option_keys(
        context.options, "cuda", {},
        "none; the device is the calling thread's current CUDA device"));
    const DeviceProbe& probe = probe_device();
    if (!probe.available) {
      return set_error_message(Error::BackendUnavailable, "cuda backend: %s", probe.reason);
    }
    CudaDelegate* d = new (std::nothrow) CudaDelegate();
    if (d == nullptr) {
      return set_error_message(Error::MemoryAllocationFailed, "cuda backend: delegate state");
    }
    const Error e = build(d, blob);
    blob.free();  // everything needed was copied
    if (e != Error::Ok) {
      release(d);
      return e;
    }
    return reinterpret_cast<DelegateHandle*>(d);
  }

  Error prepare(DelegateHandle* handle, Span<EValue*> args) const override {
    CudaDelegate* d = reinterpret_cast<CudaDelegate*>(handle);
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr, DelegateInvalidHandle, "cuda backend: null handle");
    const BlobHeader& h = d->plan.header;
    TERN_CHECK_OR_RETURN_ERROR(args.size() == h.num_args, InvalidArgument,
                               "cuda backend: %zu arguments, the blob expects %u", args.size(),
                               h.num_args);
    cudaError_t e = cudaSetDevice(d->device);
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "cudaSetDevice", e);
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind == static_cast<uint32_t>(ValueKind::Internal)) continue;
      TERN_RETURN_IF_ERROR(check_arg(v, i, args));
    }
    if (!d->prepared) TERN_RETURN_IF_ERROR(upload_weights(d, args));
    if (d->prepared) return Error::Ok;
    // cudaMemcpy from pageable memory may return before its DMA lands, and the delegate's
    // stream does not wait for the legacy stream: finish the uploads first.
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "weight upload", e);
    // Capture the nodes once; a device or driver that refuses capture runs them uncaptured.
    e = cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) {
      const Error enq = enqueue_nodes(*d);
      cudaGraph_t graph = nullptr;
      const cudaError_t end = cudaStreamEndCapture(d->stream, &graph);
      if (enq != Error::Ok) {
        if (graph != nullptr) cudaGraphDestroy(graph);
        return enq;
      }
      if (end == cudaSuccess && cudaGraphInstantiate(&d->graph_exec, graph, 0) == cudaSuccess) {
        d->graph = graph;
        // Upload now so the first execute is not slower than the others.
        (void)cudaGraphUpload(d->graph_exec, d->stream);
      } else {
        if (graph != nullptr) cudaGraphDestroy(graph);
        d->graph_exec = nullptr;
        (void)cudaGetLastError();
        TERN_LOG(Info, "cuda backend: CUDA graph capture failed; launching kernels directly");
      }
    } else {
      (void)cudaGetLastError();
    }
    e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "prepare", e);
    d->prepared = true;
    return Error::Ok;
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                Span<EValue*> args) const override {
    CudaDelegate* d = reinterpret_cast<CudaDelegate*>(handle);
    (void)context;
    TERN_CHECK_OR_RETURN_ERROR(d != nullptr && d->prepared, DelegateInvalidHandle,
                               "cuda backend: execute before prepare");
    const BlobHeader& h = d->plan.header;
    TERN_CHECK_OR_RETURN_ERROR(args.size() == h.num_args, InvalidArgument,
                               "cuda backend: %zu arguments, the blob expects %u", args.size(),
                               h.num_args);
    // The caller's thread may have another current device (no allocation, cheap).
    const cudaError_t set = cudaSetDevice(d->device);
    if (set != cudaSuccess)
      return cuda_failed(Error::DelegateExecutionFailed, "cudaSetDevice", set);
    // A grouped product's ends from the host are checked here, naming the bad end.
    if (d->has_grouped_nodes) TERN_RETURN_IF_ERROR(check_group_ends_args(d->plan, args));
    // Inputs in (their addresses may change between executions: caller-bound inputs).
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::ExternalInput)) continue;
      TERN_RETURN_IF_ERROR(check_arg(v, i, args));
      const cudaError_t e = cudaMemcpyAsync(value_ptr(*d, i), args[v.arg]->to_tensor().data,
                                            v.bytes, cudaMemcpyHostToDevice, d->stream);
      if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "input copy", e);
    }
    if (d->graph_exec != nullptr) {
      const cudaError_t e = cudaGraphLaunch(d->graph_exec, d->stream);
      if (e != cudaSuccess)
        return cuda_failed(Error::DelegateExecutionFailed, "cudaGraphLaunch", e);
    } else {
      TERN_RETURN_IF_ERROR(enqueue_nodes(*d));
    }
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::ExternalOutput)) continue;
      TERN_RETURN_IF_ERROR(check_arg(v, i, args));
      const cudaError_t e = cudaMemcpyAsync(args[v.arg]->to_tensor().data, value_ptr(*d, i),
                                            v.bytes, cudaMemcpyDeviceToHost, d->stream);
      if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "output copy", e);
    }
    if (d->uses_error_flag) {
      const cudaError_t e = cudaMemcpyAsync(&d->host_error_flag, d->buffers.error_flag, sizeof(int),
                                            cudaMemcpyDeviceToHost, d->stream);
      if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "flag copy", e);
    }
    const cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "execute", e);
    TERN_CHECK_OR_RETURN_ERROR((d->host_error_flag & kErrorIndex) == 0, InvalidArgument,
                               "cuda backend: an embedding or index_select index is out of "
                               "range");
    TERN_CHECK_OR_RETURN_ERROR(d->host_error_flag == 0, InvalidArgument,
                               "cuda backend: a grouped product's ends go backwards or past its "
                               "rows (each end must lie in [the previous end, the rows])");
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    release(reinterpret_cast<CudaDelegate*>(handle));
  }

  /// The allocations init and prepare made through device_allocator() (the f32 staging
  /// buffer of a 16-bit blob is freed before prepare returns).
  uint64_t device_memory_bytes(DelegateHandle* handle) const override {
    const CudaDelegate* d = reinterpret_cast<const CudaDelegate*>(handle);
    const BlobHeader& h = d->plan.header;
    uint64_t bytes = d->weights_bytes;
    if (d->buffers.arena != nullptr) bytes += h.arena_bytes;
    if (d->buffers.workspace != nullptr) bytes += h.workspace_bytes;
    if (d->buffers.lt_workspace != nullptr) bytes += kLtWorkspaceBytes;
    if (d->buffers.error_flag != nullptr) bytes += sizeof(int);
    return bytes;
  }

 private:
  /// Uploads the constants (prepare, once). f32 weights of a 16-bit blob go through a staging
  /// buffer (the largest one's f32 bytes, allocated here and freed before returning) and are
  /// converted on the device into the weights buffer.
  static Error upload_weights(CudaDelegate* d, Span<EValue*> args) {
    const BlobHeader& h = d->plan.header;
    if (d->zero_copy && d->constant_ptrs == nullptr) TERN_RETURN_IF_ERROR(place_constants(d, args));
    uint64_t staging_bytes = 0;
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind == static_cast<uint32_t>(ValueKind::Constant) && is_half(v.dtype)) {
        const uint64_t b = value_numel(v) * 4;
        staging_bytes = b > staging_bytes ? b : staging_bytes;
      }
    }
    DeviceAllocator& a = device_allocator();
    void* staging = nullptr;
    if (staging_bytes > 0) {
      TERN_RETURN_IF_ERROR(a.allocate(staging_bytes, "the f32 weight staging buffer", &staging));
    }
    Error result = Error::Ok;
    for (uint32_t i = 0; i < h.num_values && result == Error::Ok; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::Constant)) continue;
      const void* host = args[v.arg]->to_tensor().data;
      if (d->constant_ptrs != nullptr && d->constant_ptrs[i] == host) continue;  // in place
      if (is_quant_dtype(v.dtype)) {
        result = upload_quant_weight(d, i, args[v.arg]->to_tensor());
        continue;
      }
      cudaError_t e;
      if (is_half(v.dtype)) {
        e = cudaMemcpy(staging, host, value_numel(v) * 4, cudaMemcpyHostToDevice);
        // A copy from pageable memory may return before it lands, and the delegate's stream
        // does not wait for the legacy stream.
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e == cudaSuccess) {
          e = launch_cast(static_cast<int>(ValueDType::F32), static_cast<int>(v.dtype), staging,
                          value_ptr(*d, i), static_cast<int64_t>(value_numel(v)), d->stream);
        }
        // The staging buffer is reused by the next weight: wait for this conversion.
        if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
      } else {
        e = cudaMemcpy(value_ptr(*d, i), host, v.bytes, cudaMemcpyHostToDevice);
      }
      if (e != cudaSuccess) result = cuda_failed(Error::DelegateExecutionFailed, "weight upload", e);
    }
    a.free(staging, staging_bytes);
    return result;
  }

  /// Zero copy (prepare, once): every f32 constant whose host bytes are aligned like a device
  /// allocation (kDeviceAlignment) and can be pinned is read in place; the rest (quantized,
  /// 16-bit, misaligned, or refused by the driver) get a spot in a compact weights buffer,
  /// allocated here. Sets constant_ptrs for every constant and logs what went where.
  static Error place_constants(CudaDelegate* d, Span<EValue*> args) {
    const BlobHeader& h = d->plan.header;
    uint32_t constants = 0;
    for (uint32_t i = 0; i < h.num_values; ++i) {
      constants += d->plan.values[i].kind == static_cast<uint32_t>(ValueKind::Constant) ? 1 : 0;
    }
    constexpr uint64_t kInPlace = ~uint64_t{0};
    uint64_t* offsets = new (std::nothrow) uint64_t[h.num_values];
    d->constant_ptrs = new (std::nothrow) void*[h.num_values]();
    d->held_data = new (std::nothrow) const void*[constants + 1];
    d->held_bytes = new (std::nothrow) uint64_t[constants + 1];
    if (offsets == nullptr || d->constant_ptrs == nullptr || d->held_data == nullptr ||
        d->held_bytes == nullptr) {
      delete[] offsets;
      return set_error_message(Error::MemoryAllocationFailed,
                               "cuda backend: zero-copy tables for %u values", h.num_values);
    }
    uint64_t copied_bytes = 0, in_place_bytes = 0;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < h.num_values; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::Constant)) continue;
      const void* host = args[v.arg]->to_tensor().data;
      const bool eligible = !is_half(v.dtype) && !is_quant_dtype(v.dtype) &&
                            reinterpret_cast<uintptr_t>(host) % kDeviceAlignment == 0;
      if (eligible && host_range_registry().hold(host, v.bytes) == Error::Ok) {
        offsets[i] = kInPlace;
        d->constant_ptrs[i] = const_cast<void*>(host);
        d->held_data[d->num_held] = host;
        d->held_bytes[d->num_held++] = v.bytes;
        in_place_bytes += v.bytes;
        continue;
      }
      if (eligible && refused++ == 0) {
        TERN_LOG(Info, "cuda backend: a weight is copied after all: %s", last_error_message());
      }
      offsets[i] = copied_bytes;
      copied_bytes += (v.bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
    }
    Error result = Error::Ok;
    if (copied_bytes > 0) {
      void* p = nullptr;
      result = device_allocator().allocate(copied_bytes, "the weights copied to the device", &p);
      if (result == Error::Ok) {
        d->buffers.weights = static_cast<uint8_t*>(p);
        d->weights_bytes = copied_bytes;
      }
    }
    for (uint32_t i = 0; i < h.num_values && result == Error::Ok; ++i) {
      const BlobValue& v = d->plan.values[i];
      if (v.kind != static_cast<uint32_t>(ValueKind::Constant) || offsets[i] == kInPlace) continue;
      d->constant_ptrs[i] = d->buffers.weights + offsets[i];
    }
    delete[] offsets;
    if (result == Error::Ok) {
      TERN_LOG(Info,
               "cuda backend: zero-copy weights: %u constants (%llu bytes) read in place from "
               "host memory, %llu bytes copied to the device (quantized, 16-bit, not %llu-byte "
               "aligned, or not pinned)",
               d->num_held, static_cast<unsigned long long>(in_place_bytes),
               static_cast<unsigned long long>(copied_bytes),
               static_cast<unsigned long long>(kDeviceAlignment));
    }
    return result;
  }

  static Error build(CudaDelegate* d, const FreeableBuffer& blob) {
    TERN_RETURN_IF_ERROR(parse_blob(
        Span<const uint8_t>(static_cast<const uint8_t*>(blob.data()), blob.size()), &d->plan));
    const BlobHeader& h = d->plan.header;
    cudaError_t e = cudaGetDevice(&d->device);
    if (e != cudaSuccess) return cuda_failed(Error::BackendUnavailable, "cudaGetDevice", e);
    int major = 0, minor = 0;
    e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d->device);
    if (e == cudaSuccess) {
      e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d->device);
    }
    if (e != cudaSuccess) return cuda_failed(Error::BackendUnavailable, "compute capability", e);
    const uint32_t cc = static_cast<uint32_t>(major * 10 + minor);
    TERN_CHECK_OR_RETURN_ERROR(cc >= h.min_compute_capability, DelegateInvalidCompatibility,
                               "cuda backend: device compute capability %d.%d is below the "
                               "blob's %u.%u",
                               major, minor, h.min_compute_capability / 10,
                               h.min_compute_capability % 10);
    e = probe_kernel_image();
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return set_error_message(Error::DelegateInvalidCompatibility,
                               "cuda backend: this build has no kernels for compute capability "
                               "%d.%d (built for CUDA architectures %s): %s",
                               major, minor, TERN_CUDA_ARCHS, cudaGetErrorString(e));
    }
    for (uint32_t i = 0; i < h.num_nodes; ++i) {
      const uint32_t op = d->plan.nodes[i].op;
      if (op == static_cast<uint32_t>(NodeOp::Embedding) ||
          op == static_cast<uint32_t>(NodeOp::IndexSelect) ||
          op == static_cast<uint32_t>(NodeOp::QuantEmbedding) ||
          op == static_cast<uint32_t>(NodeOp::GroupedMatmul) ||
          op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        d->uses_error_flag = true;
      }
      if (op == static_cast<uint32_t>(NodeOp::GroupedMatmul) ||
          op == static_cast<uint32_t>(NodeOp::QuantGroupedLinear)) {
        d->has_grouped_nodes = true;
      }
    }
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cuda_failed(Error::DelegateExecutionFailed, "cudaStreamCreate", e);
    DeviceAllocator& a = device_allocator();
    void* p = nullptr;
    TERN_RETURN_IF_ERROR(a.allocate(h.arena_bytes, "the activation arena", &p));
    d->buffers.arena = static_cast<uint8_t*>(p);
    // With zero copy the weights buffer holds only what is copied after all: prepare sizes it.
    d->zero_copy = want_zero_copy(d->device);
    if (!d->zero_copy) {
      TERN_RETURN_IF_ERROR(a.allocate(h.weights_bytes, "the weights", &p));
      d->buffers.weights = static_cast<uint8_t*>(p);
      d->weights_bytes = h.weights_bytes;
    }
    TERN_RETURN_IF_ERROR(a.allocate(h.workspace_bytes, "the workspace", &p));
    d->buffers.workspace = static_cast<uint8_t*>(p);
    TERN_RETURN_IF_ERROR(a.allocate(kLtWorkspaceBytes, "the cuBLASLt workspace", &p));
    d->buffers.lt_workspace = p;
    if (d->uses_error_flag) {
      TERN_RETURN_IF_ERROR(a.allocate(sizeof(int), "the error flag", &p));
      d->buffers.error_flag = static_cast<int*>(p);
    }
    const cublasStatus_t s = lt().cublasLtCreate(&d->lt);
    if (s != CUBLAS_STATUS_SUCCESS) {
      d->lt = nullptr;
      return set_error_message(Error::DelegateExecutionFailed, "cuda backend: cublasLtCreate: %s",
                               GemmPlan::status_string(s));
    }
    d->gemms = new (std::nothrow) GemmPlan[2 * static_cast<size_t>(h.num_nodes)];
    TERN_CHECK_OR_RETURN_ERROR(d->gemms != nullptr, MemoryAllocationFailed,
                               "cuda backend: GEMM plans for %u nodes", h.num_nodes);
    return plan_gemms(*d);
  }
};

const CudaBackend& backend() {
  static const CudaBackend instance;
  return instance;
}

}  // namespace
}  // namespace cuda

Error register_cuda_backend() {
  Backend entry;
  entry.name = "cuda";
  entry.backend = &cuda::backend();
  return register_backend(entry);
}

const BackendInterface& cuda_backend_interface() { return cuda::backend(); }

uint64_t cuda_device_allocation_count() { return cuda::device_allocator().allocations(); }
uint64_t cuda_device_live_bytes() { return cuda::device_allocator().live_bytes(); }

const char* cuda_unavailable_reason() { return cuda::probe_device().reason; }

}  // namespace tern
