// FashionMNIST: Zalando's 28x28 grey clothing images in ten classes, read from the
// four IDX files (gzipped or not) that Debian and the original release ship.
// Images come out as torchvision's ToTensor gives them: float32 in [0, 1].
#pragma once

#include "kernels/base/export.h"

#include <string>
#include <vector>

#include "tensor/tensor.h"

EMBER_API_BEGIN

namespace ember::data {

class FashionMNIST {
 public:
  // Where Debian's fashion-mnist package puts the files.
  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";

  // Reads train-{images,labels} (train) or t10k-{images,labels} from `root`, as
  // `<name>-idx3-ubyte.gz` (or the same without .gz). FormatError when a file is
  // missing or damaged, holds the wrong shape, a label outside 0..9, or when the
  // image and label counts differ.
  explicit FashionMNIST(const std::string& root = kDefaultRoot, bool train = true);

  int64_t size() const { return labels_.size(0); }
  // float32 [N, 1, 28, 28], pixel / 255.
  const Tensor& images() const { return images_; }
  // int64 [N], class indices into class_names().
  const Tensor& labels() const { return labels_; }
  // "T-shirt/top", "Trouser", ..., "Ankle boot", in label order.
  static const std::vector<std::string>& class_names();

 private:
  Tensor images_;
  Tensor labels_;
};

}  // namespace ember::data

EMBER_API_END
