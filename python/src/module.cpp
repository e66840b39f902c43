// ember._C: the extension module. Each part of the API is bound in its own file;
// this one only calls them in dependency order (errors first, so later parts can
// raise the translated classes).
#include "bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Ember's C++ core (the ember package wraps it)";
  using namespace ember::python;
  init_errors(m);
  init_tensor(m);
  init_tensor_ops(m);
  init_factories(m);
  init_nn(m);
  init_functional(m);
  init_optim(m);
  init_data(m);
  init_extras(m);
  init_dist(m);
}
