// A number that is not a tensor: the `2` in `a * 2`, the value of `full`, the
// result of `item()`. It remembers whether it was written as a bool, an integer or
// a floating literal, because PyTorch's type promotion depends on that.
#pragma once

#include "kernels/base/export.h"

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/base/scalar.h"

EMBER_API_BEGIN

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : kind_(Kind::Int), i_(0), d_(0) {}
  template <class T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Bool), i_(v), d_(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)), d_(static_cast<double>(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), i_(0), d_(static_cast<double>(v)) {}
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else return static_cast<T>(to_double());
  }

  // The dtype a tensor holding this value gets: bool, int64 or float64 (as a
  // "wrapped number" it then yields to tensor operands in promotion).
  DType dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::Int64 : DType::Float64;
  }
  std::string str() const;

 private:
  Kind kind_;
  int64_t i_;
  double d_;
};

}  // namespace ember

EMBER_API_END
