// The dist suite's main: every rank starts the default process group (MPI backend)
// before Catch2 runs, and stops it after. Run under `mpirun -np 2`; every rank
// runs every test case in the same order, so their collectives pair up.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "dist/dist.h"
#include "kernels/base/parallel.h"

int main(int argc, char** argv) {
  ember::set_num_threads(1);  // two ranks share two cores
  ember::dist::init_process_group(ember::dist::Backend::MPI);
  const int rc = Catch::Session().run(argc, argv);
  ember::dist::destroy_process_group();
  return rc;
}
