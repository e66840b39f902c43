// A short tour of Ember's tensor API; `scripts/demo` shows its first steps before
// it trains. Each step prints what it does and the result (docs/tensors.md explains them).
#include <iostream>

#include "ember.h"

using namespace ember;

int main() {
  set_num_threads(2);
  manual_seed(0);
  auto show = [](const char* what, const Tensor& t) { std::cout << "# " << what << "\n" << t << "\n\n"; };

  Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  show("a = tensor({{1, 2, 3}, {4, 5, 6}})", a);
  show("a.t()  (a view: same storage, swapped strides)", a.t());
  show("a * 10 + 1", a * 10 + 1);
  show("a + tensor({100, 200, 300})  (broadcast over rows)", a + tensor({100, 200, 300}));
  show("matmul(a, a.t())", matmul(a, a.t()));
  show("a.sum({1})", a.sum({1}));
  show("a.mean({0}, /*keepdim=*/true)", a.mean({0}, true));
  show("a.var()  (unbiased, like PyTorch)", a.var());
  auto [values, indices] = a.max(1);
  show("a.max(1) values", values);
  show("a.max(1) indices (int64)", indices);
  show("softmax(a, 1)", softmax(a, 1));
  show("arange(0, 1, 0.125)", arange(0, 1, 0.125));
  show("randn({2, 4}, kFloat16)  (seeded Philox)", randn({2, 4}, kFloat16));
  show("a.to(kInt32) / 2  (true division promotes to float32)", a.to(kInt32) / 2);
  show("where(a > 3, a, zeros({1}))", where(a > 3, a, zeros({1})));
  show("cat({a, a}, 1)", cat({a, a}, 1));

  Tensor big = rand({512, 512});
  show("a 512x512 product, summed", matmul(big, big).sum());

  try {
    Tensor m = zeros({2, 3}, kMeta);
    std::cout << "# meta tensors have a shape but no memory: " << m + 1 << "\n";
    (void)(m + a);
  } catch (const DeviceError& e) {
    std::cout << "# mixing devices raises ember::DeviceError: " << e.what() << "\n";
  }
  try {
    (void)matmul(a, a);
  } catch (const ShapeError& e) {
    std::cout << "# and shapes that do not fit raise ember::ShapeError: " << e.what() << "\n";
  }
  return 0;
}
