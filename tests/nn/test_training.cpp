// End to end: the seed network learns FashionMNIST. A short run (the first 10000
// training images, batches of 100, Adam lr 0.01, 2 epochs) must lower the loss and
// classify 1000 test images far better than chance; the same run twice with the
// same seeds gives bit-identical parameters. Skipped with a warning when the Debian
// fashion-mnist files are not installed.
#include <cmath>
#include <filesystem>
#include <map>

#include <catch2/catch.hpp>

#include "ember.h"
#include "nn/data/dataloader.h"
#include "nn/data/fashion_mnist.h"
#include "nn/nn.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Subset {
  Tensor images, labels;
};

// The first n images of a split (contiguous copies, as DataLoader wants), read once.
const Subset* fashion_mnist(bool train, int64_t n) {
  static std::map<std::pair<bool, int64_t>, Subset> cache;
  const std::string root = data::FashionMNIST::kDefaultRoot;
  if (!std::filesystem::exists(root + "/train-labels-idx1-ubyte.gz")) return nullptr;
  auto key = std::make_pair(train, n);
  if (!cache.count(key)) {
    data::FashionMNIST ds(root, train);
    cache[key] = {ds.images().narrow(0, 0, n).contiguous(), ds.labels().narrow(0, 0, n).contiguous()};
  }
  return &cache.at(key);
}

struct RunResult {
  std::vector<double> batch_losses;  // in order, every epoch
  std::shared_ptr<nn::Network> net;
};

RunResult train(const Subset& train_set, int64_t epochs, uint64_t seed, int num_workers = 0) {
  manual_seed(seed);
  RunResult r;
  r.net = std::make_shared<nn::Network>();
  nn::optim::Adam opt(r.net->parameters(), 0.01);
  data::DataLoader loader(train_set.images, train_set.labels,
                          {.batch_size = 100, .shuffle = true, .seed = seed, .num_workers = num_workers});
  r.net->train();
  for (int64_t e = 0; e < epochs; ++e)
    for (data::Batch& b : loader.epoch(e)) {
      opt.zero_grad();
      Tensor loss = F::cross_entropy((*r.net)(b.inputs), b.targets);
      loss.backward();
      opt.step();
      r.batch_losses.push_back(loss.item<double>());
    }
  return r;
}

double accuracy(nn::Network& net, const Subset& test_set) {
  NoGradGuard no_grad;
  net.eval();
  const Tensor predicted = net(test_set.images).argmax(1);
  const int64_t correct = (predicted == test_set.labels).sum().item<int64_t>();
  return static_cast<double>(correct) / static_cast<double>(test_set.labels.numel());
}

double mean(const std::vector<double>& v, size_t begin, size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += v[i];
  return s / static_cast<double>(end - begin);
}

}  // namespace

TEST_CASE("the seed network learns FashionMNIST: loss falls, accuracy far above chance", "[nn][training]") {
  const Subset* train_set = fashion_mnist(true, 10000);
  const Subset* test_set = fashion_mnist(false, 1000);
  if (!train_set || !test_set) {
    WARN("skipped: FashionMNIST is not installed at " << data::FashionMNIST::kDefaultRoot
                                                       << " (Debian package fashion-mnist)");
    return;
  }
  const RunResult r = train(*train_set, 2, 1234);
  REQUIRE(r.batch_losses.size() == 200);
  // Before any training the logits are near zero: the loss is about ln 10 = 2.30.
  const double first = r.batch_losses.front();
  CHECK(first == Approx(std::log(10.0)).margin(0.15));
  // Measured when this test was written (seeds 0..5, and torch 1.13 on the same
  // setup): last-epoch mean 0.55 to 0.63 (torch 0.58 to 0.63), test accuracy 0.76
  // to 0.80 (torch 0.77 to 0.80). The bars leave room for the seed's luck.
  const double last_epoch = mean(r.batch_losses, 100, 200);
  INFO("first batch loss " << first << ", last epoch mean " << last_epoch);
  CHECK(last_epoch < 0.4 * first);
  for (double l : r.batch_losses) CHECK(std::isfinite(l));
  const double acc = accuracy(*r.net, *test_set);
  INFO("test accuracy on 1000 images: " << acc);
  CHECK(acc > 0.70);
}

TEST_CASE("training twice with the same seeds gives bit-identical parameters", "[nn][training]") {
  const Subset* train_set = fashion_mnist(true, 600);
  if (!train_set) {
    WARN("skipped: FashionMNIST is not installed at " << data::FashionMNIST::kDefaultRoot);
    return;
  }
  const RunResult a = train(*train_set, 1, 77);
  const RunResult b = train(*train_set, 1, 77, /*num_workers=*/2);  // workers change nothing
  CHECK(a.batch_losses == b.batch_losses);
  const nn::StateDict sa = a.net->state_dict(), sb = b.net->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    INFO(sa[i].first);
    CHECK(sa[i].second.to_vector<float>() == sb[i].second.to_vector<float>());
  }
  // Another seed: another model.
  const RunResult c = train(*train_set, 1, 78);
  CHECK(c.net->state_dict()[0].second.to_vector<float>() != sa[0].second.to_vector<float>());
}
