// FashionMNIST: read both IDX files, check that they describe one dataset, convert.
#include "nn/data/fashion_mnist.h"

#include <sys/stat.h>

#include "nn/data/idx.h"
#include "tensor/checks.h"
#include "tensor/ops.h"

namespace ember::data {
namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kClasses = 10;

// The gzipped name when it exists, else the plain one (people gunzip downloads).
std::string locate(const std::string& root, const std::string& stem) {
  const std::string base = root + "/" + stem;
  struct stat st;
  if (::stat((base + ".gz").c_str(), &st) == 0 || ::stat(base.c_str(), &st) != 0) return base + ".gz";
  return base;
}

std::string describe(const Tensor& t) { return msg(t.dtype(), " ", shape_str(t.shape())); }

}  // namespace

FashionMNIST::FashionMNIST(const std::string& root, bool train) {
  const std::string split = train ? "train" : "t10k";
  const std::string images_path = locate(root, split + "-images-idx3-ubyte");
  const std::string labels_path = locate(root, split + "-labels-idx1-ubyte");

  const Tensor images = read_idx(images_path);
  if (images.dtype() != kUInt8 || images.dim() != 3 || images.size(1) != kSide || images.size(2) != kSide)
    throw FormatError(msg(images_path, ": expected uint8 images of shape [N, 28, 28] but the file holds ",
                          describe(images)));
  const Tensor labels = read_idx(labels_path);
  if (labels.dtype() != kUInt8 || labels.dim() != 1)
    throw FormatError(msg(labels_path, ": expected uint8 labels of shape [N] but the file holds ", describe(labels)));
  if (images.size(0) != labels.size(0))
    throw FormatError(msg(images_path, " holds ", images.size(0), " images but ", labels_path, " holds ",
                          labels.size(0), " labels"));
  // A label past the last class would index out of bounds in a loss later on.
  const auto* l = labels.data_ptr<uint8_t>();
  for (int64_t i = 0; i < labels.size(0); ++i)
    if (l[i] >= kClasses)
      throw FormatError(msg(labels_path, ": label ", int(l[i]), " at index ", i, " is outside the classes 0..9"));

  images_ = images.to(kFloat32).div_(255).view({images.size(0), 1, kSide, kSide});
  labels_ = labels.to(kInt64);
}

const std::vector<std::string>& FashionMNIST::class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace ember::data
