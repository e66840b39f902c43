// ProcessGroup's checks and queueing, Work, and the default group.
#include "dist/process_group.h"

#include <sstream>

#include "dist/collective.h"
#include "dist/comm_thread.h"
#include "dist/mpi_backend.h"
#include "ember_config.h"
#include "tensor/ops.h"
#if EMBER_HAVE_NCCL
#include "dist/nccl_backend.h"
#endif

namespace ember::dist {

const char* backend_name(Backend b) { return b == Backend::MPI ? "mpi" : "nccl"; }

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

// ---- Work ----

void Work::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool Work::is_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

// ---- ProcessGroup ----

ProcessGroup::ProcessGroup(Backend backend, int rank, int size, std::unique_ptr<CommThread> thread)
    : backend_(backend), rank_(rank), size_(size), thread_(std::move(thread)) {}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::release_thread() { thread_.reset(); }

void ProcessGroup::set_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) throw ValueError("set_timeout: the timeout must be positive");
  thread_->set_timeout(timeout);
}

std::chrono::milliseconds ProcessGroup::timeout() const { return thread_->timeout(); }

uint64_t ProcessGroup::collectives_started() const { return thread_->started(); }

namespace {

void check_tensor(const Tensor& t, const char* collective) {
  if (!t.defined()) throw ValueError(std::string(collective) + ": the tensor is undefined");
  if (!t.is_contiguous()) throw ValueError(std::string(collective) + ": the tensor must be contiguous");
}

Signature signature_of(CollectiveKind kind, const Tensor& t, int32_t arg, int64_t tag) {
  Signature s;
  s.kind = static_cast<int32_t>(kind);
  if (t.defined()) {
    s.dtype = static_cast<int32_t>(t.dtype());
    s.numel = t.numel();
  }
  s.arg = arg;
  s.tag = tag;
  return s;
}

}  // namespace

WorkPtr ProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op, int64_t tag) {
  check_tensor(tensor, "all_reduce");
  check_device(tensor, "all_reduce");
  if (op == ReduceOp::Avg && !is_floating(tensor.dtype()))
    throw DTypeError(std::string("all_reduce: avg needs a floating-point tensor but got ") +
                     dtype_name(tensor.dtype()));
  Collective c;
  c.sig = signature_of(CollectiveKind::AllReduce, tensor, static_cast<int32_t>(op), tag);
  c.tensor = tensor;
  return thread_->submit(std::move(c));
}

WorkPtr ProcessGroup::broadcast_async(const Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  check_device(tensor, "broadcast");
  if (root < 0 || root >= size_)
    throw ValueError("broadcast: root " + std::to_string(root) + " is not a rank of a group of size " +
                     std::to_string(size_));
  Collective c;
  c.sig = signature_of(CollectiveKind::Broadcast, tensor, root, 0);
  c.tensor = tensor;
  return thread_->submit(std::move(c));
}

WorkPtr ProcessGroup::all_gather_async(const Tensor& output, const Tensor& input) {
  check_tensor(input, "all_gather");
  check_tensor(output, "all_gather");
  check_device(input, "all_gather");
  check_device(output, "all_gather");
  Shape expected{size_};
  expected.insert(expected.end(), input.shape().begin(), input.shape().end());
  if (output.shape() != expected)
    throw ShapeError("all_gather: the output must have shape " + shape_str(expected) + " but has shape " +
                     shape_str(output.shape()));
  if (output.dtype() != input.dtype())
    throw DTypeError(std::string("all_gather: the output has dtype ") + dtype_name(output.dtype()) +
                     " but the input has dtype " + dtype_name(input.dtype()));
  if (output.device() != input.device())
    throw DeviceError("expected device " + input.device().str() + " but got device " + output.device().str());
  Collective c;
  c.sig = signature_of(CollectiveKind::AllGather, input, 0, 0);
  c.tensor = output;
  c.input = input;
  return thread_->submit(std::move(c));
}

Tensor ProcessGroup::all_gather(const Tensor& input) {
  Shape shape{size_};
  shape.insert(shape.end(), input.shape().begin(), input.shape().end());
  check_tensor(input, "all_gather");
  Tensor out = empty(shape, {input.dtype(), input.device()});
  all_gather_async(out, input)->wait();
  return out;
}

WorkPtr ProcessGroup::barrier_async() {
  Collective c;
  c.sig = signature_of(CollectiveKind::Barrier, Tensor(), 0, 0);
  return thread_->submit(std::move(c));
}

// ---- the default group ----

namespace {
std::unique_ptr<ProcessGroup> g_default;
std::mutex g_default_mu;
}  // namespace

void init_process_group(Backend backend, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(g_default_mu);
  if (g_default) throw DistError("init_process_group: the default process group is already initialized");
  if (timeout.count() <= 0) throw ValueError("init_process_group: the timeout must be positive");
  switch (backend) {
    case Backend::MPI:
      g_default = MpiProcessGroup::create(timeout);
      break;
    case Backend::NCCL:
#if EMBER_HAVE_NCCL
      g_default = NcclProcessGroup::create(timeout);
      break;
#else
      throw DistError("init_process_group: Ember was built without NCCL; use the mpi backend for CPU tensors");
#endif
  }
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  return g_default != nullptr;
}

void destroy_process_group() {
  std::unique_ptr<ProcessGroup> group;
  {
    std::lock_guard<std::mutex> lock(g_default_mu);
    group = std::move(g_default);
  }
  group.reset();
}

ProcessGroup& default_group() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  if (!g_default)
    throw DistError("the default process group is not initialized: call dist::init_process_group first");
  return *g_default;
}

int get_rank() { return default_group().rank(); }
int get_world_size() { return default_group().size(); }

}  // namespace ember::dist
