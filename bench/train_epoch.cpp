// The training pass and test accuracy shared by the train and cuda_train suites
// (see train_epoch.h for why they are shared).
#include "bench/train_epoch.h"

#include <algorithm>

#include "nn/amp/autocast.h"
#include "nn/amp/grad_scaler.h"

namespace ember::bench {

double train_pass(nn::Network& net, nn::optim::Optimizer& opt, const data::DataLoader& loader,
                  const Device& device, int64_t epoch, int max_batches, std::optional<DType> amp) {
  double loss_sum = 0;
  int batches = 0;
  // Loss scaling for float16 only, as train_fashion_mnist: bfloat16 has float32's range.
  nn::amp::GradScaler scaler(nn::amp::GradScalerOptions{.enabled = amp == kFloat16});
  for (data::Batch& batch : loader.epoch(epoch)) {
    if (max_batches > 0 && batches >= max_batches) break;
    Tensor x = batch.inputs, y = batch.targets;
    if (device.is_cuda()) x = x.to(device), y = y.to(device);
    Tensor loss;
    {
      std::optional<nn::amp::AutocastGuard> autocast;
      if (amp) autocast.emplace(device.type(), *amp);
      loss = nn::functional::cross_entropy(net(x), y);
    }
    opt.zero_grad();
    scaler.scale(loss).backward();  // without float16 the scaler passes everything through
    scaler.step(opt);
    scaler.update();
    loss_sum += loss.item<double>();
    ++batches;
  }
  return batches ? loss_sum / batches : 0;
}

double test_accuracy(nn::Network& net, const data::FashionMNIST& test_set) {
  NoGradGuard no_grad;
  net.eval();
  int64_t correct = 0;
  for (int64_t start = 0; start < test_set.size(); start += 1000) {
    const int64_t len = std::min<int64_t>(1000, test_set.size() - start);
    Tensor logits = net(test_set.images().narrow(0, start, len));
    correct += (logits.argmax(1) == test_set.labels().narrow(0, start, len)).sum().item<int64_t>();
  }
  net.train();
  return double(correct) / double(test_set.size());
}

}  // namespace ember::bench
