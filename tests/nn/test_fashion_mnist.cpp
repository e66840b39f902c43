// FashionMNIST: the real Debian files when they are installed (skipped with a
// warning otherwise), and small fake datasets written here for the conversion,
// the file lookup and every consistency check between the images and labels files.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember.h"
#include "nn/data/fashion_mnist.h"

using namespace ember;
using ember::data::FashionMNIST;
using Catch::Matchers::Message;
using Bytes = std::vector<uint8_t>;

#define EXPECT_ERROR(expr, Type, text) REQUIRE_THROWS_MATCHES(expr, Type, Message(text))

#include "support/temp_dir.h"

using test_support::TempDir;

namespace {

// An IDX file (magic 00 00 <type> <rank>, big-endian dims, payload), gzipped when asked.
void write_idx(const std::string& path, uint8_t type, const std::vector<uint32_t>& dims, const Bytes& payload,
               bool gzipped = true) {
  Bytes b = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(d >> shift));
  b.insert(b.end(), payload.begin(), payload.end());
  if (gzipped) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    REQUIRE(out.good());
  }
}

// n images whose pixel p of image i is (i * 51 + p) % 256, and labels i % 10.
void write_fake(const std::string& dir, const std::string& split, uint32_t n_images, uint32_t n_labels,
                bool gzipped = true) {
  Bytes pixels(n_images * 28 * 28), labels(n_labels);
  for (size_t i = 0; i < n_images; ++i)
    for (size_t p = 0; p < 28 * 28; ++p) pixels[i * 28 * 28 + p] = static_cast<uint8_t>((i * 51 + p) % 256);
  for (size_t i = 0; i < n_labels; ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const std::string gz = gzipped ? ".gz" : "";
  write_idx(dir + "/" + split + "-images-idx3-ubyte" + gz, 0x08, {n_images, 28, 28}, pixels, gzipped);
  write_idx(dir + "/" + split + "-labels-idx1-ubyte" + gz, 0x08, {n_labels}, labels, gzipped);
}

}  // namespace

TEST_CASE("FashionMNIST from the Debian files", "[data][fashion_mnist]") {
  const std::string root = FashionMNIST::kDefaultRoot;
  if (!std::filesystem::exists(root + "/train-labels-idx1-ubyte.gz")) {
    WARN("skipped: FashionMNIST is not installed at " << root << " (Debian package fashion-mnist)");
    return;
  }
  for (bool train : {true, false}) {
    FashionMNIST ds(root, train);
    const int64_t n = train ? 60000 : 10000;
    REQUIRE(ds.size() == n);
    REQUIRE(ds.images().dtype() == kFloat32);
    REQUIRE(ds.images().shape() == Shape{n, 1, 28, 28});
    REQUIRE(ds.labels().dtype() == kInt64);
    REQUIRE(ds.labels().shape() == Shape{n});
    REQUIRE(ds.images().min().item<float>() == 0.0f);
    REQUIRE(ds.images().max().item<float>() == 1.0f);
    // The classes are balanced: 6000 (train) or 1000 (test) of each.
    std::vector<int64_t> count(10, 0);
    for (int64_t l : ds.labels().to_vector<int64_t>()) {
      REQUIRE(l >= 0);
      REQUIRE(l <= 9);
      ++count[l];
    }
    REQUIRE(count == std::vector<int64_t>(10, n / 10));
    // Read from the files with Python's gzip module when this test was written:
    // gzip.open('train-labels-idx1-ubyte.gz').read()[8:13] == bytes([9, 0, 0, 3, 0])
    // and t10k's [9, 2, 1, 1, 6]; the first training image's pixels sum to 76247.
    const std::vector<int64_t> first = ds.labels().narrow(0, 0, 5).to_vector<int64_t>();
    REQUIRE(first == (train ? std::vector<int64_t>{9, 0, 0, 3, 0} : std::vector<int64_t>{9, 2, 1, 1, 6}));
    if (train) {
      REQUIRE(ds.labels()[0].item<int64_t>() == 9);  // Ankle boot
      REQUIRE(FashionMNIST::class_names()[9] == "Ankle boot");
      REQUIRE(ds.images()[0].to(kFloat64).sum().item<double>() == Approx(76247.0 / 255).epsilon(1e-6));
    }
  }
}

TEST_CASE("FashionMNIST scales pixels to [0, 1] and finds plain or gzipped files", "[data][fashion_mnist]") {
  TempDir dir;
  write_fake(dir.path, "train", 3, 3);
  write_fake(dir.path, "t10k", 2, 2, /*gzipped=*/false);
  FashionMNIST train(dir.path);
  REQUIRE(train.size() == 3);
  REQUIRE(train.images().shape() == Shape{3, 1, 28, 28});
  const std::vector<float> px = train.images().to_vector<float>();
  for (size_t i = 0; i < 3; ++i)
    for (size_t p = 0; p < 28 * 28; p += 97)
      REQUIRE(px[i * 784 + p] == static_cast<float>((i * 51 + p) % 256) / 255.0f);
  REQUIRE(px[0] == 0.0f);
  REQUIRE(px[255] == 1.0f);
  REQUIRE(px[784 + 0] == 0.2f);  // 51 / 255
  REQUIRE(train.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2});

  FashionMNIST test(dir.path, /*train=*/false);
  REQUIRE(test.size() == 2);
  REQUIRE(test.labels().dtype() == kInt64);

  REQUIRE(FashionMNIST::class_names() == std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                                  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"});
}

TEST_CASE("FashionMNIST files that do not make one dataset", "[data][fashion_mnist][errors]") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte.gz"), labels = dir.file("train-labels-idx1-ubyte.gz");
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError, images + ": cannot open: No such file or directory");

  write_fake(dir.path, "train", 4, 3);
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError, images + " holds 4 images but " + labels + " holds 3 labels");

  write_fake(dir.path, "train", 2, 2);
  write_idx(images, 0x08, {2, 28, 27}, Bytes(2 * 28 * 27));
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError,
               images + ": expected uint8 images of shape [N, 28, 28] but the file holds uint8 [2, 28, 27]");
  write_idx(images, 0x0d, {1, 28, 28}, Bytes(4 * 28 * 28));
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError,
               images + ": expected uint8 images of shape [N, 28, 28] but the file holds float32 [1, 28, 28]");

  write_fake(dir.path, "train", 2, 2);
  write_idx(labels, 0x08, {2, 1}, {1, 2});
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError,
               labels + ": expected uint8 labels of shape [N] but the file holds uint8 [2, 1]");
  write_idx(labels, 0x0c, {2}, Bytes(8));
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError,
               labels + ": expected uint8 labels of shape [N] but the file holds int32 [2]");
  write_idx(labels, 0x08, {2}, {3, 10});
  EXPECT_ERROR(FashionMNIST(dir.path), FormatError, labels + ": label 10 at index 1 is outside the classes 0..9");
}
