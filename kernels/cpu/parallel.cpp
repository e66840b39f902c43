// ember::set_num_threads: the one knob for CPU parallelism, forwarded to OpenMP.
#include "kernels/base/parallel.h"

#include <omp.h>

namespace ember {

void set_num_threads(int n) { omp_set_num_threads(n < 1 ? 1 : n); }
int get_num_threads() { return omp_get_max_threads(); }

}  // namespace ember
