// A fresh folder under /tmp for a test's files, removed with its contents at scope exit.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

namespace test_support {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/ember-test-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
};

}  // namespace test_support
