// DistributedDataParallel (see ddp.h).
#include "dist/ddp.h"

#include <sstream>

#include "dist/reducer.h"
#include "tensor/graph.h"
#include "tensor/ops.h"
#include "tensor/tensor_from_values.h"

namespace ember::dist {
namespace {

// One line per parameter and buffer: what every rank must agree on.
std::vector<std::string> model_entries(const nn::Module& m, size_t bucket_bytes) {
  std::vector<std::string> out;
  for (const auto& [name, t] : m.named_parameters())
    out.push_back("parameter " + name + " " + dtype_name(t.dtype()) + " " + shape_str(t.shape()) +
                  (t.requires_grad() ? "" : " (frozen)"));
  for (const auto& [name, t] : m.named_buffers())
    out.push_back("buffer " + name + " " + dtype_name(t.dtype()) + " " + shape_str(t.shape()));
  out.push_back("bucket_cap " + std::to_string(bucket_bytes) + " bytes");
  return out;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

int64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

size_t bucket_bytes_of(const DDPOptions& o) {
  if (!(o.bucket_cap_mb > 0)) throw ValueError("DistributedDataParallel: bucket_cap_mb must be positive");
  return static_cast<size_t>(o.bucket_cap_mb * 1024 * 1024);
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, DDPOptions options)
    : nn::Module("DistributedDataParallel"),
      module_(std::move(module)),
      options_(options),
      group_(options.group ? *options.group : default_group()) {
  if (!module_) throw ValueError("DistributedDataParallel: the module is null");
  register_module("module", module_);
  check_same_model();
  // Make the replicas equal: rank 0's values everywhere.
  {
    NoGradGuard no_grad;
    std::vector<std::pair<Tensor, Tensor>> copies;  // (target, contiguous staging)
    std::vector<WorkPtr> works;
    for (auto& [name, t] : module_->state_dict()) {
      Tensor staging = t.is_contiguous() ? t : t.contiguous();
      works.push_back(group_.broadcast_async(staging, 0));
      copies.emplace_back(t, staging);
    }
    for (auto& w : works) w->wait();
    for (auto& [t, staging] : copies)
      if (!t.is_same(staging)) Tensor(t).copy_(staging);
  }
  nn::NamedTensors trainable;
  for (auto& [name, t] : module_->named_parameters())
    if (t.requires_grad()) trainable.emplace_back(name, t);
  reducer_ = std::make_shared<Reducer>(std::move(trainable), group_, bucket_bytes_of(options_),
                                       options_.find_unused_parameters);
  reducer_->install_hooks();
}

DistributedDataParallel::~DistributedDataParallel() = default;

// Every rank learns every rank's model description, so a mismatch raises the same
// DistError on all of them (no rank is left waiting in a later collective). Two
// steps: a fixed-size all_gather of (fingerprint, length), and only on a
// mismatch the descriptions themselves, padded to the longest.
void DistributedDataParallel::check_same_model() {
  const std::string mine = join_lines(model_entries(*module_, bucket_bytes_of(options_)));
  // Made on the host, gathered on the group's device (NCCL takes CUDA tensors only),
  // read back through copies.
  const Device dev = group_.collective_device();
  Tensor summary = tensor(std::vector<int64_t>{fnv1a(mine), static_cast<int64_t>(mine.size())});
  Tensor all = group_.all_gather(summary.to(dev));
  const auto v = all.to_vector<int64_t>();
  bool same = true;
  int64_t longest = 0;
  for (int r = 0; r < group_.size(); ++r) {
    same = same && v[2 * r] == v[0] && v[2 * r + 1] == v[1];
    longest = std::max(longest, v[2 * r + 1]);
  }
  if (same) return;
  Tensor text = zeros({longest}, {kUInt8});
  std::copy(mine.begin(), mine.end(), text.data_ptr<uint8_t>());
  Tensor texts = group_.all_gather(text.to(dev)).cpu();
  auto entries_of = [&](int r) {
    const uint8_t* p = texts.data_ptr<uint8_t>() + r * longest;
    return split_lines(std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(v[2 * r + 1])));
  };
  const auto first = entries_of(0);
  for (int r = 1; r < group_.size(); ++r) {
    const auto other = entries_of(r);
    if (other == first) continue;
    size_t i = 0;
    while (i < first.size() && i < other.size() && first[i] == other[i]) ++i;
    const std::string a = i < first.size() ? "'" + first[i] + "'" : "nothing";
    const std::string b = i < other.size() ? "'" + other[i] + "'" : "nothing";
    throw DistError("DistributedDataParallel: the ranks' models differ: entry " + std::to_string(i + 1) + " is " + a +
                    " on rank 0 but " + b + " on rank " + std::to_string(r));
  }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (options_.broadcast_buffers && group_.size() > 1) {
    NoGradGuard no_grad;
    std::vector<WorkPtr> works;
    for (auto& [name, b] : module_->named_buffers())
      if (b.is_contiguous()) works.push_back(group_.broadcast_async(b, 0));
    for (auto& w : works) w->wait();
  }
  Tensor out = (*module_)(input);
  const bool backward_follows = is_training() && grad_mode_enabled() && out.requires_grad();
  reducer_->prepare_for_backward(out, backward_follows && sync_);
  return out;
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : reducer_->buckets()) {
    out.emplace_back();
    for (size_t k : b.params) out.back().push_back(reducer_->params()[k].first);
  }
  return out;
}

}  // namespace ember::dist
