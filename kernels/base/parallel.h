// Thread control shared by the CPU kernels. Ember uses OpenMP; set_num_threads
// changes how many threads every later kernel uses.
#pragma once

#include <cstdint>

namespace ember {

void set_num_threads(int n);
int get_num_threads();

// Below this many elements of work a kernel runs on one thread: waking the team
// costs more than the loop.
inline constexpr int64_t kParallelGrain = 32768;

}  // namespace ember
