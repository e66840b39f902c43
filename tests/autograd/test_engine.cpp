// The engine's behaviour: accumulation, retain_graph, grad mode, detach, names,
// hooks, version checks and its documented errors (by exact text).
#include <variant>

#include <catch2/catch.hpp>

#include "ember.h"

using namespace ember;
using Catch::Matchers::Message;

TEST_CASE("gradients accumulate into leaves across uses and calls", "[autograd]") {
  Tensor x = tensor({1.f, 2.f, 3.f}).requires_grad_();
  Tensor y = (x * x + x).sum();  // dy/dx = 2x + 1
  y.backward();
  REQUIRE(x.grad().to_vector<float>() == std::vector<float>{3, 5, 7});
  (x * 2).sum().backward();  // adds 2
  REQUIRE(x.grad().to_vector<float>() == std::vector<float>{5, 7, 9});
  REQUIRE(x.is_leaf());
  REQUIRE_FALSE(y.is_leaf());
}

TEST_CASE("two leaves fed the same gradient do not share memory", "[autograd]") {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_();
  (a + b).sum().backward();
  a.mutable_grad().mul_(10);
  REQUIRE(b.grad().to_vector<float>() == std::vector<float>{1, 1});
}

TEST_CASE("backward with an explicit gradient and its shape check", "[autograd]") {
  Tensor x = tensor({1.f, 2.f}).requires_grad_();
  Tensor y = x * 3;
  y.backward(tensor({1.f, 10.f}));
  REQUIRE(x.grad().to_vector<float>() == std::vector<float>{3, 30});
  Tensor z = x * 3;
  REQUIRE_THROWS_MATCHES(z.backward(), Error, Message("grad can be implicitly created only for scalar outputs"));
  REQUIRE_THROWS_MATCHES(z.backward(ones({3})), ShapeError,
                         Message("Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2]."));
}

TEST_CASE("retain_graph allows a second backward; without it the second one raises", "[autograd]") {
  Tensor x = tensor({2.f}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  REQUIRE(x.grad().item<float>() == 8.0f);
  REQUIRE_THROWS_MATCHES(
      y.backward(), Error,
      Message("Trying to backward through the graph a second time (or directly access saved tensors after they have "
              "already been freed). Saved intermediate values of the graph are freed when you call .backward(). "
              "Specify retain_graph=true if you need to backward through the graph a second time."));
}

TEST_CASE("NoGradGuard, detach and requires_grad rules", "[autograd]") {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard guard;
    Tensor y = x * 2;
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.grad_fn() == nullptr);
  }
  REQUIRE((x * 2).requires_grad());
  Tensor d = (x * 2).detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.is_leaf());
  REQUIRE_THROWS_MATCHES(ones({2}).sum().backward(), Error,
                         Message("element 0 of tensors does not require grad and does not have a grad_fn"));
  REQUIRE_THROWS_MATCHES(zeros({2}, kInt64).requires_grad_(), DTypeError,
                         Message("only Tensors of floating point dtype can require gradients, got int64"));
  Tensor nonleaf = x * 2;
  REQUIRE_THROWS_MATCHES(nonleaf.requires_grad_(false), ValueError,
                         Message("you can only change requires_grad flags of leaf variables. If you want to use a "
                                 "computed variable in a subgraph that doesn't require differentiation use "
                                 "var_no_grad = var.detach()."));
}

TEST_CASE("grad_fn has PyTorch's readable names", "[autograd]") {
  Tensor x = ones({2, 2}).requires_grad_();
  REQUIRE(std::string((x + 1).grad_fn()->name()) == "AddBackward0");
  REQUIRE(std::string(matmul(x, x).grad_fn()->name()) == "MatmulBackward0");
  REQUIRE(std::string(x.sum().grad_fn()->name()) == "SumBackward0");
  REQUIRE(std::string(x.t().grad_fn()->name()) == "PermuteBackward0");
  REQUIRE(std::string(x.relu().grad_fn()->name()) == "ReluBackward0");
}

TEST_CASE("post-accumulate hooks fire once the leaf's gradient is complete", "[autograd]") {
  Tensor w = ones({3}).requires_grad_();
  std::vector<float> seen;
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    ++calls;
    seen = leaf.grad().to_vector<float>();
  });
  // w is used twice: the hook must run once, after both contributions are summed.
  ((w * 2).sum() + (w * 3).sum()).backward();
  REQUIRE(calls == 1);
  REQUIRE(seen == std::vector<float>{5, 5, 5});
}

TEST_CASE("a tensor saved for backward and modified in place raises", "[autograd]") {
  Tensor x = ones({3}).requires_grad_();
  Tensor y = x * 2;
  Tensor z = y * y;  // saves y
  y.add_(1);
  REQUIRE_THROWS_MATCHES(z.sum().backward(), Error,
                         Message("one of the variables needed for gradient computation has been modified by an "
                                 "inplace operation: [float32 [3]], which is needed by MulBackward0, is at version 1; "
                                 "expected version 0 instead."));
}

TEST_CASE("in-place ops on leaves that require grad and on their views are refused", "[autograd]") {
  Tensor x = ones({3}).requires_grad_();
  REQUIRE_THROWS_MATCHES(x.add_(1), Error,
                         Message("a leaf Variable that requires grad is being used in an in-place operation."));
  REQUIRE_THROWS_MATCHES(x.fill_(2), Error,
                         Message("a leaf Variable that requires grad is being used in an in-place operation."));
  Tensor v = (x * 1).slice(0, 0, 2);
  REQUIRE_THROWS_MATCHES(v.mul_(2), NotImplementedError,
                         Message("in-place operation on a view of a tensor that requires grad is not supported; "
                                 "clone the view first"));
  {
    NoGradGuard guard;  // optimizers update leaves like this
    x.add_(1);
  }
  REQUIRE(x.to_vector<float>() == std::vector<float>{2, 2, 2});
  Tensor out = empty({3});
  REQUIRE_THROWS_MATCHES(binary_out(BinaryOp::add, out, x, x), Error,
                         Message("add(): functions with out=... arguments don't support automatic differentiation, "
                                 "but one of the arguments requires grad."));
  REQUIRE_THROWS_MATCHES(x.as_strided({2}, {1}), NotImplementedError,
                         Message("as_strided: differentiating through as_strided is not supported; use it on a "
                                 "detached tensor or under NoGradGuard"));
}

TEST_CASE("retain_grad keeps a non-leaf gradient", "[autograd]") {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 3;
  y.retain_grad();
  (y * y).sum().backward();
  REQUIRE(y.grad().to_vector<float>() == std::vector<float>{6, 6});
  REQUIRE(x.grad().to_vector<float>() == std::vector<float>{18, 18});
}

TEST_CASE("mixed dtypes: gradients come back in each input's dtype", "[autograd]") {
  Tensor h = ones({2}, kFloat16).requires_grad_();
  Tensor f = full({2}, 3.0f).requires_grad_();
  (h * f).sum().backward();
  REQUIRE(h.grad().dtype() == kFloat16);
  REQUIRE(h.grad().to(kFloat32).to_vector<float>() == std::vector<float>{3, 3});
  REQUIRE(f.grad().dtype() == kFloat32);
}

TEST_CASE("a deep chain runs without recursion limits", "[autograd]") {
  Tensor x = ones({1}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = y * 1.0;
  y.sum().backward();
  REQUIRE(x.grad().item<float>() == 1.0f);
}

// A rule that asks for a tensor its front-end did not save (an op row and its rule
// that disagree) is told so by name; attributes read as the wrong struct throw too.
TEST_CASE("saved tensors and attributes are read by name and type", "[autograd][errors]") {
  Tensor x = tensor(std::vector<double>{1.0, 2.0}).requires_grad_();
  const Tensor y = x.exp();
  const auto& node = *y.grad_fn();
  CHECK(node.saved_tensor("y").to_vector<double>() == y.detach().to_vector<double>());
  REQUIRE_THROWS_MATCHES(node.saved_tensor("x"), Error, Message("internal error: ExpBackward0 has no saved tensor 'x'"));
  const Tensor s = x.sum({0}, true);
  CHECK(s.grad_fn()->attrs_as<ReduceAttrs>().dims == std::vector<int64_t>{0});
  CHECK(s.grad_fn()->attrs_as<ReduceAttrs>().keepdim);
  CHECK_THROWS_AS(s.grad_fn()->attrs_as<Conv2dAttrs>(), std::bad_variant_access);
}
