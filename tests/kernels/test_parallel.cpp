// set_num_threads is process-wide: a setting made on one thread decides the team
// size of kernels started on any other (docs/embedding.md, "Threads"). The team is
// observed inside the loop every elementwise kernel runs on (cpu::strided_for), by
// recording which OpenMP thread numbers took part.
#include <omp.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kernels/base/parallel.h"
#include "kernels/cpu/loop.h"

using namespace ember;

namespace {

// How many distinct OpenMP threads strided_for used for 1M elements, run on the calling thread.
int team_of_elementwise_loop() {
  std::vector<float> data(1 << 20);
  StridedLoop L;
  L.ndim = 1;
  L.numel = L.sizes[0] = int64_t(data.size());
  L.strides[0][0] = sizeof(float);
  L.data[0] = reinterpret_cast<char*>(data.data());
  std::mutex m;
  std::set<int> seen;
  cpu::strided_for<1>(L, [&](char* const*, const int64_t*, int64_t) {
    std::lock_guard<std::mutex> lock(m);
    seen.insert(omp_get_thread_num());
  });
  return int(seen.size());
}

struct RestoreThreads {
  int saved = get_num_threads();
  ~RestoreThreads() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("set_num_threads on one thread sets the team of kernels on another", "[parallel]") {
  RestoreThreads restore;
  for (int n : {1, 3}) {
    set_num_threads(n);
    int seen_get = 0, seen_team = 0;
    std::thread worker([&] {
      seen_get = get_num_threads();
      seen_team = team_of_elementwise_loop();
    });
    worker.join();
    CHECK(seen_get == n);
    CHECK(seen_team == n);
  }
}

TEST_CASE("set_num_threads from a second thread reaches the main thread", "[parallel]") {
  RestoreThreads restore;
  std::thread([] { set_num_threads(3); }).join();
  CHECK(get_num_threads() == 3);
  CHECK(team_of_elementwise_loop() == 3);
  std::thread([] { set_num_threads(0); }).join();  // below 1 means 1
  CHECK(get_num_threads() == 1);
  CHECK(team_of_elementwise_loop() == 1);
}
