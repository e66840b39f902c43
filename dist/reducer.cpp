// The reducer (see reducer.h).
#include "dist/reducer.h"

#include <unordered_set>

#include "tensor/graph.h"
#include "tensor/ops.h"

namespace ember::dist {

Reducer::Reducer(nn::NamedTensors params, ProcessGroup& group, size_t bucket_bytes, bool find_unused_parameters)
    : params_(std::move(params)), group_(group), find_unused_(find_unused_parameters) {
  const size_t n = params_.size();
  bucket_of_.assign(n, 0);
  slot_of_.assign(n, 0);
  ready_.assign(n, false);
  // Reverse order: backward produces the last layers' gradients first.
  size_t bytes = 0;
  for (size_t k = n; k-- > 0;) {
    const Tensor& p = params_[k].second;
    const bool new_bucket = buckets_.empty() || bytes >= bucket_bytes ||
                            params_[buckets_.back().params.front()].second.dtype() != p.dtype() ||
                            params_[buckets_.back().params.front()].second.device() != p.device();
    if (new_bucket) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& b = buckets_.back();
    bucket_of_[k] = buckets_.size() - 1;
    slot_of_[k] = b.params.size();
    b.offsets.push_back(b.params.empty() ? 0 : b.offsets.back() + params_[b.params.back()].second.numel());
    b.params.push_back(k);
    bytes += p.nbytes();
  }
  for (Bucket& b : buckets_) {
    const Tensor& last = params_[b.params.back()].second;
    const int64_t total = b.offsets.back() + last.numel();
    b.flat = zeros({total}, {last.dtype(), last.device()});
  }
}

void Reducer::install_hooks() {
  std::weak_ptr<Reducer> weak = shared_from_this();
  for (size_t k = 0; k < params_.size(); ++k)
    params_[k].second.register_post_accumulate_grad_hook([weak, k](const Tensor&) {
      if (auto self = weak.lock()) self->mark_ready(k);
    });
}

void Reducer::check_previous_iteration() {
  if (!expecting_ || arrived_ == 0) return;  // no backward ran since the last forward: nothing in flight
  for (size_t b = 0; b < next_bucket_; ++b) buckets_[b].work->wait();
  std::string missing;
  int listed = 0;
  for (size_t k = 0; k < params_.size(); ++k)
    if (!ready_[k] && listed++ < 5) missing += (missing.empty() ? "" : ", ") + params_[k].first;
  expecting_ = false;
  throw DistError(
      "DistributedDataParallel: the last backward produced no gradient for " + missing +
      "; construct DistributedDataParallel with find_unused_parameters = true when some parameters do not take "
      "part in the loss");
}

void Reducer::prepare_for_backward(const Tensor& output, bool sync) {
  check_previous_iteration();
  expecting_ = sync;
  next_bucket_ = 0;
  arrived_ = 0;
  ready_.assign(params_.size(), false);
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
  }
  if (!sync || !find_unused_) return;
  // Which parameters can the output's graph reach? The others get no gradient
  // this iteration and are marked ready now (they contribute zeros).
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  if (output.defined() && output.grad_fn()) stack.push_back(output.grad_fn().get());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (node->leaf) reached.insert(node->leaf.get());
    for (const Edge& e : node->next)
      if (e.valid()) stack.push_back(e.fn.get());
  }
  for (size_t k = 0; k < params_.size(); ++k)
    if (!reached.count(params_[k].second.impl_ptr().get())) mark_ready(k);
}

void Reducer::mark_ready(size_t k) {
  if (!expecting_ || ready_[k]) return;
  ready_[k] = true;
  ++arrived_;
  Bucket& b = buckets_[bucket_of_[k]];
  const Tensor& p = params_[k].second;
  Tensor slice = b.flat.narrow(0, b.offsets[slot_of_[k]], p.numel());
  const Tensor& g = p.grad();
  if (g.defined())
    slice.copy_(g.reshape({p.numel()}));
  else
    slice.zero_();
  if (--b.pending == 0) launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& b = buckets_[next_bucket_];
    b.work = group_.all_reduce_async(b.flat, ReduceOp::Avg, static_cast<int64_t>(next_bucket_));
    ++next_bucket_;
  }
  if (next_bucket_ == buckets_.size()) finish();
}

void Reducer::finish() {
  expecting_ = false;
  for (Bucket& b : buckets_) b.work->wait();
  NoGradGuard no_grad;
  for (Bucket& b : buckets_)
    for (size_t i = 0; i < b.params.size(); ++i) {
      Tensor& p = params_[b.params[i]].second;
      Tensor avg = b.flat.narrow(0, b.offsets[i], p.numel()).view(p.shape());
      if (p.grad().defined())
        p.mutable_grad().copy_(avg);
      else
        p.set_grad(avg.clone());
    }
}

}  // namespace ember::dist
