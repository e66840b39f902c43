// The .npy reader against files NumPy wrote (tests/nn/data/make_npy_fixtures.py),
// the writer by reading its files back and by their exact header bytes, and
// hostile files: each raises its documented error (docs/errors.md).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ember.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/nn/data in the source tree (see tests/nn/meson.build)"
#endif

using namespace ember;
using serialize::load_npy;
using serialize::parse_npy;
using serialize::save_npy;

namespace {
const std::string kData = EMBER_TEST_DATA_DIR;

std::string npy_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string v1(const std::string& dict, const std::string& data) {
  std::string h = dict + "\n";
  std::string s("\x93NUMPY\x01\x00", 8);
  s += static_cast<char>(h.size() & 0xff);
  s += static_cast<char>(h.size() >> 8);
  return s + h + data;
}
}  // namespace

TEST_CASE("npy: files written by NumPy", "[nn][npy]") {
  Tensor a = load_npy(kData + "/npy_f4_2x3.npy");
  CHECK(a.dtype() == kFloat32);
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.to_vector<float>() == std::vector<float>{0.5f, -1, 2, 3.25f, -0.125f, 1e-3f});
  Tensor f = load_npy(kData + "/npy_f8_fortran.npy");  // Fortran order: values still row-major here
  CHECK(f.dtype() == kFloat64);
  CHECK(f.shape() == Shape{2, 3});
  CHECK(f.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
  Tensor s = load_npy(kData + "/npy_i8_scalar.npy");
  CHECK(s.dim() == 0);
  CHECK(s.item<int64_t>() == 42);
  Tensor b = load_npy(kData + "/npy_b1_4.npy");
  CHECK(b.dtype() == kBool);
  CHECK(b.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 1});
  Tensor h = load_npy(kData + "/npy_f2_3.npy");
  CHECK(h.dtype() == kFloat16);
  CHECK(h.to(kFloat32).to_vector<float>() == std::vector<float>{1, -2.5f, 65504});
  Tensor i = load_npy(kData + "/npy_i4_v2.npy");
  CHECK(i.dtype() == kInt32);
  CHECK(i.to(kInt64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  Tensor e = load_npy(kData + "/npy_u1_empty.npy");
  CHECK(e.dtype() == kUInt8);
  CHECK(e.shape() == Shape{0, 3});
}

TEST_CASE("npy: save then load gives the same tensor and NumPy's header", "[nn][npy]") {
  std::string path = (std::filesystem::temp_directory_path() / ("ember_npy_" + std::to_string(::getpid()) + ".npy")).string();
  for (DType d : {kFloat32, kFloat64, kFloat16, kInt8, kUInt8, kInt32, kInt64, kBool}) {
    Tensor t = arange(0, 12, 1, TensorOptions(kFloat32)).reshape({3, 4}).to(d);
    save_npy(path, t.t());  // a non-contiguous view is written in row-major order of its shape
    Tensor back = load_npy(path);
    CHECK(back.dtype() == d);
    CHECK(back.shape() == Shape{4, 3});
    CHECK(back.to(kFloat64).to_vector<double>() == t.t().contiguous().to(kFloat64).to_vector<double>());
  }
  save_npy(path, ones({2, 3}, kBFloat16));
  CHECK(load_npy(path).dtype() == kFloat32);
  save_npy(path, full({}, 7, kInt64));
  CHECK(load_npy(path).item<int64_t>() == 7);
  // Byte for byte what NumPy writes for the same array.
  save_npy(path, tensor(std::vector<float>{0.5f, -1, 2, 3.25f, -0.125f, 1e-3f}, {2, 3}));
  std::ifstream a(path, std::ios::binary), b(kData + "/npy_f4_2x3.npy", std::ios::binary);
  std::string sa((std::istreambuf_iterator<char>(a)), {}), sb((std::istreambuf_iterator<char>(b)), {});
  CHECK(sa == sb);
  std::filesystem::remove(path);
}

TEST_CASE("npy: hostile files raise FormatError before allocating", "[nn][npy][errors]") {
  CHECK(npy_error("not numpy") == "x.npy: not an .npy file (bad magic)");
  CHECK(npy_error(std::string("\x93NUMPY\x01\x00\xff\x00{", 11)) == "x.npy: file ends inside the header");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(8, '\0'))) ==
        "x.npy: shape [2, 3] of <f4 needs 24 bytes of data but the file has 8");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")) ==
        "x.npy: shape [4294967296, 4294967296] has more elements than int64 can count");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, ), }", "")) ==
        "x.npy: header has a dimension too large");
  CHECK(npy_error(v1("{'descr': '<f4', 'shape': (2, ), }", "")) == "x.npy: header lacks descr, fortran_order or shape");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (), }", "")) ==
        "x.npy: malformed header: fortran_order is not True or False");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, ), }", "")) ==
        "x.npy: malformed header: expected a dimension");
  CHECK(npy_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, ), 'extra': 1}", "")) ==
        "x.npy: malformed header: unknown key 'extra'");
  CHECK(npy_error(v1("{'descr': '>f4', 'fortran_order': False, 'shape': (), }", "")) ==
        "x.npy: big-endian arrays ('>f4') are not supported");
  CHECK(npy_error(v1("{'descr': '<c8', 'fortran_order': False, 'shape': (), }", "")) ==
        "x.npy: NumPy type '<c8' is not supported");
  CHECK(npy_error(std::string("\x93NUMPY\x04\x00\x00\x00", 10)) == "x.npy: .npy format version 4 is not supported");
  CHECK_THROWS_AS(load_npy("/nonexistent.npy"), FormatError);
  // Every prefix of a valid file is refused cleanly.
  std::ifstream in(kData + "/npy_f4_2x3.npy", std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)), {});
  for (size_t n = 0; n < good.size(); ++n) CHECK_THROWS_AS(parse_npy(good.substr(0, n), "x.npy"), FormatError);
}
