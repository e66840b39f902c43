// A program built outside the Ember tree against the installed headers and
// library, found through pkg-config: what an embedder does.
#include <ember.h>

#include <cstdio>

int main() {
  using namespace ember;
  Tensor a = tensor({{1, 2}, {3, 4}});
  const float total = matmul(a, a).sum().item<float>();  // [[7, 10], [15, 22]]
  if (total != 54.0f) {
    std::fprintf(stderr, "expected 54, got %f\n", total);
    return 1;
  }
  std::printf("embedded Ember %s works: %s\n", EMBER_VERSION, a.str().c_str());
  return 0;
}
