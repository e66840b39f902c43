// The thread contract of docs/embedding.md, checked: an eval-mode model (float32
// and int8) run from many threads at once gives each thread the serial result bit
// for bit; grad mode and autocast are per thread; set_num_threads may change from
// one thread while others run inference. These cases (tag [threads]) are also what
// scripts/sanitize thread runs under ThreadSanitizer.
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "ember.h"

using namespace ember;

namespace {

constexpr int kThreads = 6;

std::shared_ptr<nn::Network> seed_network() {
  auto net = std::make_shared<nn::Network>();
  net->load_state_dict(serialize::load_safetensors(std::string(EMBER_TEST_DATA_DIR) + "/safetensors_seed_net.safetensors"));
  net->eval();
  return net;
}

// Runs body(t) on kThreads threads released together, and joins them.
template <class Body>
void run_together(Body body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      body(t);
    });
  for (auto& th : threads) th.join();
}

// Each thread its own batch (sizes 1..kThreads), so threads differ in shapes too.
std::vector<Tensor> thread_inputs() {
  std::vector<Tensor> xs;
  Generator gen(99);
  for (int t = 0; t < kThreads; ++t) xs.push_back(rand({t + 1, 1, 28, 28}, {}, &gen));
  return xs;
}

void check_concurrent_matches_serial(nn::Module& model) {
  const std::vector<Tensor> xs = thread_inputs();
  std::vector<std::vector<float>> serial;
  {
    NoGradGuard no_grad;
    for (const Tensor& x : xs) serial.push_back(model.forward(x).to_vector<float>());
  }
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<std::vector<float>> got(kThreads);
    run_together([&](int t) {
      NoGradGuard no_grad;
      for (int call = 0; call < 3; ++call) got[size_t(t)] = model.forward(xs[size_t(t)]).to_vector<float>();
    });
    for (int t = 0; t < kThreads; ++t) CHECK(got[size_t(t)] == serial[size_t(t)]);
  }
}

}  // namespace

TEST_CASE("an eval-mode float32 network runs from many threads at once", "[threads]") {
  auto net = seed_network();
  check_concurrent_matches_serial(*net);
}

TEST_CASE("an int8 network's first calls run from many threads at once", "[threads]") {
  // Fresh quantized model: the first concurrent calls also pack the weights.
  auto q = quant::quantize_dynamic(seed_network());
  check_concurrent_matches_serial(*q);
}

TEST_CASE("grad mode and autocast are per thread", "[threads]") {
  auto w = randn({4, 4}).requires_grad_(true);
  std::atomic<bool> other_recorded{false}, other_autocast{true};
  NoGradGuard no_grad;                                 // this thread: no recording
  nn::amp::AutocastGuard autocast(DeviceType::CPU);  // this thread: autocast on
  std::thread([&] {
    other_recorded = matmul(w, w).requires_grad();
    other_autocast = autocast::is_enabled(DeviceType::CPU);
  }).join();
  CHECK(other_recorded);        // the other thread records: grad mode is its own
  CHECK_FALSE(other_autocast);  // and its autocast is off
  CHECK_FALSE(matmul(w, w).requires_grad());
  CHECK(autocast::is_enabled(DeviceType::CPU));
}

TEST_CASE("set_num_threads while other threads run inference", "[threads]") {
  auto net = seed_network();
  const std::vector<Tensor> xs = thread_inputs();
  std::vector<std::vector<float>> serial;
  NoGradGuard no_grad;
  for (const Tensor& x : xs) serial.push_back(net->forward(x).to_vector<float>());
  const int saved = get_num_threads();
  std::vector<std::vector<float>> got(kThreads);
  run_together([&](int t) {
    NoGradGuard no_grad_here;
    if (t == 0) {
      for (int n : {1, 2, 3, 1, 2}) set_num_threads(n);
    } else {
      got[size_t(t)] = net->forward(xs[size_t(t)]).to_vector<float>();
    }
  });
  set_num_threads(saved);
  // The seed network's kernels give the same bits for every team size.
  for (int t = 1; t < kThreads; ++t) CHECK(got[size_t(t)] == serial[size_t(t)]);
}
