// Whether this test binary is built with AddressSanitizer (scripts/sanitize
// address: clang at -O1, where the loop vectorizer does not run), for the few
// exhaustive kernel tests that trim their repetitions there. The normal build runs
// every repetition; the sanitizer run keeps the ones most likely to touch memory
// out of bounds.
#pragma once

#include <vector>

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// The thread counts of the GEMM tests that cross every cache block: 1, 2 and 3,
// or under the sanitizer only 3, whose uneven shares put block and tile edges in
// the most places (those tests took 315 of the ASan tensor suite's 409 seconds).
inline std::vector<int> cache_block_test_teams() { return kSanitized ? std::vector<int>{3} : std::vector<int>{1, 2, 3}; }
