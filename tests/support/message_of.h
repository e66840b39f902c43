// message_of<E>(f): runs f and returns the message of the E it throws, or
// "(no error)", so a test asserts an error's exact text in one CHECK.
#pragma once

#include <functional>
#include <string>

template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}
