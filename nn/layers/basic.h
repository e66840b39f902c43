// The small layers: activations, Flatten, pooling, Dropout and Sequential.
#pragma once

#include "kernels/base/export.h"

#include <initializer_list>
#include <optional>

#include "nn/module.h"
#include "tensor/generator.h"
#include "tensor/nn_ops.h"

EMBER_API_BEGIN

namespace ember::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return x.relu(); }
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  const int64_t start_dim, end_dim;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0},
                     Pair dilation = {1, 1}, bool ceil_mode = false);
  explicit MaxPool2d(int64_t kernel_size) : MaxPool2d(Pair{kernel_size, kernel_size}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const Pair kernel_size, stride, padding, dilation;
  const bool ceil_mode;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Pair kernel_size, std::optional<Pair> stride = std::nullopt, Pair padding = {0, 0},
                     bool ceil_mode = false, bool count_include_pad = true);
  explicit AvgPool2d(int64_t kernel_size) : AvgPool2d(Pair{kernel_size, kernel_size}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const Pair kernel_size, stride, padding;
  const bool ceil_mode, count_include_pad;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  const double p;

 private:
  Generator* gen_;
};

// Runs its children in order; children are named "0", "1", ... unless named.
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Sequential& add(std::shared_ptr<Module> module, std::string name = "");
  Tensor forward(const Tensor& x) override;
  size_t size() const { return named_children().size(); }
};

}  // namespace ember::nn

EMBER_API_END
