// What libember.so exports. The library is compiled with hidden visibility, so a
// symbol is visible to programs that link it only when it is declared between
// EMBER_API_BEGIN and EMBER_API_END (every installed header wraps its declarations
// in them) or carries EMBER_API. Kernels, the dispatch machinery and the libraries
// Ember uses inside (nlohmann_json) stay private: smaller tables, faster loading,
// and no clash with the host application's own copies of those libraries.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_API __attribute__((visibility("default")))
#define EMBER_API_BEGIN _Pragma("GCC visibility push(default)")
#define EMBER_API_END _Pragma("GCC visibility pop")
#else
#define EMBER_API
#define EMBER_API_BEGIN
#define EMBER_API_END
#endif
