// safetensors: fixtures written by PyTorch (make_safetensors_fixture.py) load with
// the right names, order, dtypes, shapes and values; Ember's writer reproduces them
// byte for byte; saving is atomic; and every malformed or hostile file raises the
// FormatError documented in docs/errors.md, asserted by exact text.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <map>
#include <fstream>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ember.h"
#include "nn/models/network.h"
#include "nn/serialize/safetensors.h"

#ifndef EMBER_TEST_DATA_DIR
#error "EMBER_TEST_DATA_DIR must name tests/nn/data in the source tree (see tests/nn/meson.build)"
#endif

using namespace ember;
using namespace ember::serialize;
using Catch::Matchers::Message;
namespace fs = std::filesystem;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

namespace {

const std::string kData = EMBER_TEST_DATA_DIR;

// A fresh folder per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("ember_test_safetensors." + std::to_string(::getpid()) + "." + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  // Everything in the folder, to show that no temporary file was left behind.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

// A safetensors file from a header written by hand and the data after it.
std::string st_file(const std::string& header, const std::string& data = "") { return le64(header.size()) + header + data; }

// Lowers a resource limit for one scope, so that the OS refuses a write or an open
// the way a full disk or an exhausted descriptor table would.
struct LimitGuard {
  int resource;
  rlimit saved{};
  LimitGuard(int r, rlim_t soft) : resource(r) {
    REQUIRE(getrlimit(resource, &saved) == 0);
    rlimit lowered = saved;
    lowered.rlim_cur = soft;
    REQUIRE(setrlimit(resource, &lowered) == 0);
  }
  ~LimitGuard() { setrlimit(resource, &saved); }
};

// The FormatError message `fn` raises when every file descriptor is taken. Nothing
// else runs inside the limit: sanitizer runtimes need descriptors of their own.
template <class Fn>
std::string format_error_without_descriptors(Fn fn) {
  std::exception_ptr raised;
  {
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    LimitGuard limit(RLIMIT_NOFILE, static_cast<rlim_t>(lowest_free));
    try {
      fn();
    } catch (...) {
      raised = std::current_exception();
    }
  }
  try {
    if (raised) std::rethrow_exception(raised);
  } catch (const FormatError& e) {
    return e.what();
  } catch (...) {
    return "another exception";
  }
  return "no exception";
}

std::vector<double> as_doubles(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }

// Compares every tensor of a loaded file with PyTorch's reference for it.
void check_against_reference(const std::string& file) {
  std::ifstream in(kData + "/safetensors_reference.json");
  REQUIRE(in.good());
  const nlohmann::json all = nlohmann::json::parse(in);
  const nlohmann::json& ref = all.at(file);

  const NamedTensors loaded = load_safetensors(kData + "/" + file);
  const std::vector<std::string> order = ref.at("order");
  REQUIRE(loaded.size() == order.size());
  for (size_t i = 0; i < loaded.size(); ++i) {
    const auto& [name, t] = loaded[i];
    INFO(file << ": " << name);
    REQUIRE(name == order[i]);
    const nlohmann::json& r = ref.at("tensors").at(name);
    REQUIRE(std::string(r.at("dtype")) == (std::map<DType, std::string>{
        {kFloat32, "F32"}, {kFloat64, "F64"}, {kFloat16, "F16"}, {kBFloat16, "BF16"}, {kInt8, "I8"},
        {kUInt8, "U8"}, {kInt32, "I32"}, {kInt64, "I64"}, {kBool, "BOOL"}}.at(t.dtype())));
    REQUIRE(t.shape() == r.at("shape").get<Shape>());
    REQUIRE(t.device() == kCPU);
    REQUIRE(t.is_contiguous());
    const std::vector<double> v = as_doubles(t);
    double sum = 0, abs_sum = 0;
    for (double x : v) sum += x, abs_sum += std::abs(x);
    // Sums are taken in another order than torch's, so allow rounding; the first
    // values are exact (every stored type converts to double exactly).
    const double tol = 1e-12 * std::max(1.0, r.at("abs_sum").get<double>());
    CHECK(sum == Approx(r.at("sum").get<double>()).margin(tol));
    CHECK(abs_sum == Approx(r.at("abs_sum").get<double>()).margin(tol));
    const std::vector<double> first = r.at("first");
    for (size_t k = 0; k < first.size(); ++k) CHECK(v[k] == first[k]);
  }
  REQUIRE(read_safetensors_metadata(kData + "/" + file) == ref.at("metadata").get<std::map<std::string, std::string>>());
}

}  // namespace

TEST_CASE("safetensors: the seed network's state_dict written by PyTorch loads in file order", "[safetensors]") {
  check_against_reference("safetensors_seed_net.safetensors");
  const NamedTensors net = load_safetensors(kData + "/safetensors_seed_net.safetensors");
  REQUIRE(net[0].first == "conv1.weight");
  REQUIRE(net[0].second.shape() == Shape{6, 1, 5, 5});
  REQUIRE(net[4].first == "fc1.weight");
  REQUIRE(net[4].second.shape() == Shape{120, 192});
  int64_t params = 0;
  for (const auto& [name, t] : net) params += t.numel();
  REQUIRE(params == 32998);
}

TEST_CASE("safetensors: PyTorch's state_dict of the seed network loads into nn::Network", "[safetensors][nn]") {
  // The file was written from torch's Network (tests/nn/make_safetensors_fixture.py);
  // the same parameter names make a strict load succeed and take every value.
  const NamedTensors file = load_safetensors(kData + "/safetensors_seed_net.safetensors");
  ember::nn::Network net;
  net.load_state_dict(file);  // strict: raises on any missing, unexpected or mis-shaped key
  std::map<std::string, Tensor> by_name(file.begin(), file.end());
  for (const auto& [name, p] : net.named_parameters()) {
    INFO(name);
    REQUIRE(by_name.count(name) == 1);
    REQUIRE(p.to_vector<float>() == by_name[name].to_vector<float>());
  }
  // And back: Ember's state_dict saved and reloaded keeps names and values.
  TempDir dir;  // a folder of this process's own: two runs of the suite at once share no file
  const std::string path = dir / "seed_net_roundtrip.safetensors";
  save_safetensors(net.state_dict(), path);
  ember::nn::Network again;
  again.load_state_dict(load_safetensors(path));
  Tensor x = ember::rand({2, 1, 28, 28});
  REQUIRE((net(x) - again(x)).abs().max().item<float>() == 0.0f);
}

TEST_CASE("safetensors: every dtype, a 0-dim and an empty tensor written by PyTorch", "[safetensors]") {
  check_against_reference("safetensors_dtypes.safetensors");
  const NamedTensors t = load_safetensors(kData + "/safetensors_dtypes.safetensors");
  // Integers beyond float precision come through exactly.
  REQUIRE(t[2].first == "i64");
  REQUIRE(t[2].second.to_vector<int64_t>() ==
          std::vector<int64_t>{-(int64_t(1) << 40), 7, 0, (int64_t(1) << 33) + 1, -1, 123456789});
  REQUIRE(t[3].first == "mask");
  REQUIRE(t[3].second.to_vector<bool>() == std::vector<bool>{true, false, false, true, true});
  REQUIRE(t[8].first == "scalar");
  REQUIRE(t[8].second.dim() == 0);
  REQUIRE(t[9].first == "empty");
  REQUIRE(t[9].second.shape() == Shape{0, 3});
}

TEST_CASE("safetensors: Ember's writer reproduces PyTorch's files byte for byte", "[safetensors]") {
  TempDir dir;
  for (const std::string file : {"safetensors_seed_net.safetensors", "safetensors_dtypes.safetensors"}) {
    INFO(file);
    const std::string src = kData + "/" + file;
    save_safetensors(load_safetensors(src), dir / file, read_safetensors_metadata(src));
    REQUIRE(read_bytes(dir / file) == read_bytes(src));
  }
}

TEST_CASE("safetensors: round trip of views, devices' copies, order and metadata", "[safetensors]") {
  TempDir dir;
  Tensor base = arange(0, 24, 1, kFloat32).reshape({2, 3, 4});
  NamedTensors in = {
      {"z.transposed", base.transpose(0, 2)},                // non-contiguous
      {"a.slice", base.select(0, 1).slice(1, 1, 3)},         // storage offset and strides
      {"half", base.to(kFloat16).flatten()},
      {"bf", (base / 7).to(kBFloat16)},
      {"f64", base.to(kFloat64) / 3},
      {"i8", (base - 12).to(kInt8)},
      {"u8", base.to(kUInt8)},
      {"i32", (base * -1000).to(kInt32)},
      {"i64", base.to(kInt64) * (int64_t(1) << 40)},
      {"b", base > 10},
      {"scalar", scalar_tensor(4.5)},
      {"empty", zeros({3, 0, 2}, kInt64)},
  };
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "ünïcode ✓"}};
  save_safetensors(in, dir / "m.safetensors", meta);
  REQUIRE(dir.listing() == std::vector<std::string>{"m.safetensors"});

  const NamedTensors out = load_safetensors(dir / "m.safetensors");
  REQUIRE(out.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO(in[i].first);
    REQUIRE(out[i].first == in[i].first);
    REQUIRE(out[i].second.dtype() == in[i].second.dtype());
    REQUIRE(out[i].second.shape() == in[i].second.shape());
    REQUIRE(out[i].second.is_contiguous());
    REQUIRE(as_doubles(out[i].second) == as_doubles(in[i].second));
  }
  REQUIRE(read_safetensors_metadata(dir / "m.safetensors") == meta);

  // Without metadata there is no "__metadata__" entry, and nothing at all round-trips too.
  save_safetensors({}, dir / "none.safetensors");
  REQUIRE(read_bytes(dir / "none.safetensors") == st_file("{}      "));
  REQUIRE(load_safetensors(dir / "none.safetensors").empty());
  REQUIRE(read_safetensors_metadata(dir / "none.safetensors").empty());
}

TEST_CASE("safetensors: the header is padded so the data starts 8-byte aligned", "[safetensors]") {
  TempDir dir;
  for (const std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    save_safetensors({{name, ones({2})}}, dir / "p.safetensors");
    const std::string bytes = read_bytes(dir / "p.safetensors");
    const uint64_t n = static_cast<unsigned char>(bytes[0]);  // headers this small fit in the low byte
    REQUIRE(n % 8 == 0);
    REQUIRE(bytes.size() == 8 + n + 8);
    REQUIRE(load_safetensors(dir / "p.safetensors")[0].first == name);
  }
}

TEST_CASE("safetensors: saving replaces the target whole or leaves it untouched", "[safetensors][errors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  save_safetensors({{"w", ones({3})}}, path);
  const std::string before = read_bytes(path);

  // Bad arguments are refused before any file is touched.
  EXPECT_ERROR(save_safetensors({{"", ones({1})}}, path), ValueError, "save_safetensors: tensor names must be non-empty");
  EXPECT_ERROR(save_safetensors({{"__metadata__", ones({1})}}, path), ValueError,
               "save_safetensors: the name '__metadata__' is reserved for metadata");
  EXPECT_ERROR(save_safetensors({{"w", ones({1})}, {"v", ones({1})}, {"w", ones({2})}}, path), ValueError,
               "save_safetensors: duplicate tensor name 'w'");
  EXPECT_ERROR(save_safetensors({{"w", Tensor()}}, path), ValueError, "save_safetensors: tensor 'w' is undefined");
  EXPECT_ERROR(save_safetensors({{"m", zeros({2}, kMeta)}}, path), DeviceError,
               "save_safetensors: tensor 'm' is on device meta and holds no data");
  EXPECT_ERROR(save_safetensors({{"bad\xff", ones({1})}}, path), ValueError,
               "save_safetensors: tensor names and metadata must be valid UTF-8");
  EXPECT_ERROR(save_safetensors({{"w", ones({1})}}, path, {{"k", "\xc3"}}), ValueError,
               "save_safetensors: tensor names and metadata must be valid UTF-8");
  REQUIRE(read_bytes(path) == before);

  // A folder that does not exist: the temporary file cannot be created.
  const std::string missing = dir / "no/such/dir/w.safetensors";
  EXPECT_ERROR(save_safetensors({{"w", ones({1})}}, missing), FormatError,
               missing + ": cannot create a temporary file beside it: No such file or directory");

  // The rename fails (a folder sits at the target): the temporary file is removed.
  fs::create_directory(dir / "taken");
  EXPECT_ERROR(save_safetensors({{"w", ones({1})}}, dir / "taken"), FormatError,
               dir / "taken" + ": cannot rename the temporary file into place: Is a directory");
  REQUIRE(dir.listing() == std::vector<std::string>{"taken", "w.safetensors"});

  // The disk fills up mid-write (a file-size limit stands in for it): the error
  // names the target, the old file survives and the temporary file is gone.
  {
    std::signal(SIGXFSZ, SIG_IGN);  // report EFBIG from write() instead of killing the process
    LimitGuard limit(RLIMIT_FSIZE, 1000);
    EXPECT_ERROR(save_safetensors({{"big", zeros({1000})}}, path), FormatError, path + ": write failed: File too large");
  }
  REQUIRE(read_bytes(path) == before);
  REQUIRE(dir.listing() == std::vector<std::string>{"taken", "w.safetensors"});

  // No file descriptor left: the temporary file cannot be opened, nor the file to load.
  REQUIRE(format_error_without_descriptors([&] { save_safetensors({{"w", ones({1})}}, path); }) ==
          path + ": cannot create a temporary file beside it: Too many open files");
  REQUIRE(format_error_without_descriptors([&] { load_safetensors(path); }) ==
          path + ": cannot open for reading: Too many open files");
  REQUIRE(read_bytes(path) == before);

  // A successful save replaces the old file.
  save_safetensors({{"w", full({5}, 2.0)}}, path);
  REQUIRE(load_safetensors(path)[0].second.shape() == Shape{5});
  REQUIRE(dir.listing() == std::vector<std::string>{"taken", "w.safetensors"});
}

TEST_CASE("safetensors: files that cannot be read or whose length field lies", "[safetensors][errors]") {
  TempDir dir;
  const std::string p = dir / "x.safetensors";
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": cannot open for reading: No such file or directory");
  EXPECT_ERROR(load_safetensors(dir.path.string()), FormatError, dir.path.string() + ": not a regular file");

  write_bytes(p, "abc");
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": file holds 3 bytes, too few for the 8-byte header length");
  write_bytes(p, le64(123456789012) + "{}");
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": header length 123456789012 exceeds the 100000000-byte limit");
  write_bytes(p, le64(~uint64_t(0)) + "{}");
  EXPECT_ERROR(load_safetensors(p), FormatError,
               p + ": header length 18446744073709551615 exceeds the 100000000-byte limit");
  write_bytes(p, le64(20) + "{}        ");
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": header length 20 exceeds the 10 bytes after the length field");
  EXPECT_ERROR(read_safetensors_metadata(p), FormatError,
               p + ": header length 20 exceeds the 10 bytes after the length field");
}

TEST_CASE("safetensors: malformed headers", "[safetensors][errors]") {
  TempDir dir;
  const std::string p = dir / "h.safetensors";
  auto load_header = [&](const std::string& header, const std::string& data = "") {
    write_bytes(p, st_file(header, data));
    return load_safetensors(p);
  };
  const std::string w4 = R"("w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";

  EXPECT_ERROR(load_header(R"({"w":)"), FormatError, p + ": header is not valid JSON (error near byte 6)");
  EXPECT_ERROR(load_header(R"({"w":{}} x)"), FormatError, p + ": header is not valid JSON (error near byte 10)");
  EXPECT_ERROR(load_header("{\"\xff\":1}"), FormatError, p + ": header is not valid JSON (error near byte 3)");
  // A NUL byte ends nlohmann's input: without a check of its own, what follows it went unread
  // (found by the checkpoint test that changes every byte of a file).
  EXPECT_ERROR(load_header(std::string("{}\0\0\0 junk", 10)), FormatError,
               p + ": header is not valid JSON (error near byte 3)");
  EXPECT_ERROR(load_header(std::string("{} \0", 4)), FormatError, p + ": header is not valid JSON (error near byte 4)");
  // Found by fuzzing (tests/fuzz, safetensors): a number beyond double's range let
  // nlohmann's out_of_range exception escape the reader.
  EXPECT_ERROR(load_header(R"({"m":{"dtype":"BOOL","shape":[3e444],"data_offsets":[0,3]}})"), FormatError,
               p + ": header has a number too large for a double");
  EXPECT_ERROR(load_header(std::string(65, '[') + std::string(65, ']')), FormatError,
               p + ": header nests deeper than 64 levels");
  EXPECT_ERROR(load_header("[]"), FormatError, p + ": header is not a JSON object");
  EXPECT_ERROR(load_header("{" + w4 + "," + w4 + "}", "abcd"), FormatError, p + ": duplicate key 'w' in the header");
  EXPECT_ERROR(load_header(R"({"w":{"dtype":"F32","dtype":"F32"}})"), FormatError,
               p + ": duplicate key 'dtype' in the header");
  EXPECT_ERROR(load_header(R"({"__metadata__":5})"), FormatError,
               p + ": __metadata__ is not an object mapping strings to strings");
  EXPECT_ERROR(load_header(R"({"__metadata__":{"a":"b","k":1}})"), FormatError,
               p + ": __metadata__ is not an object mapping strings to strings");
  EXPECT_ERROR(load_header(R"({"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})"), FormatError,
               p + ": empty tensor name in the header");
  EXPECT_ERROR(load_header(R"({"w":[1]})"), FormatError, p + ": tensor 'w': entry is not a JSON object");
  EXPECT_ERROR(load_header(R"({"w":{"dtype":"F32","shape":[1]}})"), FormatError,
               p + ": tensor 'w': missing field 'data_offsets'");
  EXPECT_ERROR(load_header(R"({"w":{"shape":[1],"data_offsets":[0,4]}})"), FormatError,
               p + ": tensor 'w': missing field 'dtype'");
}

TEST_CASE("safetensors: bad dtypes, shapes and offsets", "[safetensors][errors]") {
  TempDir dir;
  const std::string p = dir / "t.safetensors";
  auto entry = [&](const std::string& dtype, const std::string& shape, const std::string& offsets,
                   const std::string& data) {
    write_bytes(p, st_file(R"({"w":{"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}",
                           data));
    return load_safetensors(p);
  };
  const std::string w = p + ": tensor 'w': ";
  const std::string d8(8, '\0');

  EXPECT_ERROR(entry("1", "[2]", "[0,8]", d8), FormatError, w + "dtype is not a string");
  EXPECT_ERROR(entry(R"("I16")", "[4]", "[0,8]", d8), FormatError,
               w + "unsupported dtype 'I16' (Ember reads F32, F64, F16, BF16, I8, U8, I32, I64, BOOL)");
  EXPECT_ERROR(entry(R"("f32")", "[2]", "[0,8]", d8), FormatError,
               w + "unsupported dtype 'f32' (Ember reads F32, F64, F16, BF16, I8, U8, I32, I64, BOOL)");
  for (const std::string shape : {"2", "[-2]", "[2.0]", R"(["2"])", "[[2]]", "[null]", "[18446744073709551616]"})
    EXPECT_ERROR(entry(R"("F32")", shape, "[0,8]", d8), FormatError, w + "shape must be an array of non-negative integers");
  EXPECT_ERROR(entry(R"("U8")", "[1,1,1,1,1,1,1,1,1,1,1,1,1]", "[0,1]", "x"), FormatError,
               w + "shape has 13 dimensions, more than the 12 Ember supports");
  EXPECT_ERROR(entry(R"("F32")", "[4294967296,4294967296]", "[0,8]", d8), FormatError,
               w + "shape [4294967296, 4294967296] overflows 64-bit sizes");
  EXPECT_ERROR(entry(R"("U8")", "[18446744073709551615]", "[0,8]", d8), FormatError,
               w + "shape [18446744073709551615] overflows 64-bit sizes");
  // Zero elements, but strides of 2^62 * 2^62 would still overflow.
  EXPECT_ERROR(entry(R"("U8")", "[0,4611686018427387904,4611686018427387904]", "[0,0]", ""), FormatError,
               w + "shape [0, 4611686018427387904, 4611686018427387904] overflows 64-bit sizes");
  for (const std::string offsets : {"8", "[0]", "[0,4,8]", "[-1,7]", "[0,8.0]", R"(["0",8])", "[0,18446744073709551616]"})
    EXPECT_ERROR(entry(R"("F32")", "[2]", offsets, d8), FormatError,
                 w + "data_offsets must be an array of two non-negative integers");
  EXPECT_ERROR(entry(R"("F32")", "[2]", "[8,0]", d8), FormatError, w + "data_offsets [8, 0] begin after they end");
  EXPECT_ERROR(entry(R"("F32")", "[4]", "[0,16]", d8), FormatError,
               w + "data_offsets [0, 16] reach past the end of the 8-byte data buffer");
  EXPECT_ERROR(entry(R"("F32")", "[2]", "[0,18446744073709551615]", d8), FormatError,
               w + "data_offsets [0, 18446744073709551615] reach past the end of the 8-byte data buffer");
  EXPECT_ERROR(entry(R"("F32")", "[3]", "[0,8]", d8), FormatError,
               w + "data_offsets [0, 8] hold 8 bytes but shape [3] of dtype F32 needs 12");
  EXPECT_ERROR(entry(R"("BOOL")", "[4]", "[0,4]", std::string("\1\2\0\1", 4)), FormatError,
               w + "BOOL element 1 holds byte 2 (expected 0 or 1)");
  // The same bytes are fine as U8; "-0" is a valid size.
  REQUIRE(entry(R"("U8")", "[4]", "[-0,4]", std::string("\1\2\0\1", 4))[0].second.to_vector<uint8_t>() ==
          std::vector<uint8_t>{1, 2, 0, 1});
}

TEST_CASE("safetensors: byte ranges must tile the data buffer", "[safetensors][errors]") {
  TempDir dir;
  const std::string p = dir / "r.safetensors";
  auto two = [&](const std::string& a, const std::string& b, size_t data) {
    write_bytes(p, st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a +
                               R"(},"b":{"dtype":"F32","shape":[2],"data_offsets":)" + b + "}}",
                           std::string(data, '\0')));
    return load_safetensors(p);
  };
  EXPECT_ERROR(two("[0,8]", "[4,12]", 12), FormatError, p + ": tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  EXPECT_ERROR(two("[0,8]", "[0,8]", 8), FormatError, p + ": tensors 'a' [0, 8] and 'b' [0, 8] overlap");
  EXPECT_ERROR(two("[0,8]", "[12,20]", 20), FormatError, p + ": bytes [8, 12) of the data buffer belong to no tensor");
  EXPECT_ERROR(two("[4,12]", "[12,20]", 20), FormatError, p + ": bytes [0, 4) of the data buffer belong to no tensor");
  EXPECT_ERROR(two("[0,8]", "[8,16]", 19), FormatError, p + ": bytes [16, 19) of the data buffer belong to no tensor");
  // Listed out of order in the header is fine: the file order is the offsets' order.
  const NamedTensors ok = two("[8,16]", "[0,8]", 16);
  REQUIRE(ok[0].first == "b");
  REQUIRE(ok[1].first == "a");

  // A zero-byte tensor inside another's range overlaps it, as the reference reader says too.
  write_bytes(p, st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                         std::string(8, '\0')));
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": tensors 'a' [0, 8] and 'e' [4, 4] overlap");
  // Bytes with no header entries at all.
  write_bytes(p, st_file("{}", "xyz"));
  EXPECT_ERROR(load_safetensors(p), FormatError, p + ": bytes [0, 3) of the data buffer belong to no tensor");
}

TEST_CASE("safetensors: truncated and corrupted files raise FormatError, never crash", "[safetensors][errors]") {
  TempDir dir;
  const std::string p = dir / "c.safetensors";
  const std::string good = read_bytes(kData + "/safetensors_dtypes.safetensors");
  // Every proper prefix is missing data, so every one must be refused.
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(p, good.substr(0, n));
    REQUIRE_THROWS_AS(load_safetensors(p), FormatError);
  }
  // Random byte changes either still describe a valid file or raise FormatError;
  // under the sanitizers this also shows that no read leaves its buffer.
  std::mt19937 rng(12345);
  int refused = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    write_bytes(p, bad);
    try {
      load_safetensors(p);
    } catch (const FormatError&) {
      ++refused;
    }
  }
  REQUIRE(refused > 0);
}
