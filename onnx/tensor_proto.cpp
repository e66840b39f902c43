// TensorProto <-> Tensor. ONNX stores values either little-endian in raw_data,
// or in a typed repeated field whose element type is wider than the data type
// (int8, uint8, bool, float16 and bfloat16 values travel in int32_data), or in
// an external file named by external_data. All three are read here, with the
// element count checked against what is present before allocating.
#include "onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kernels/base/error.h"
#include "kernels/base/half.h"
#include "tensor/ops.h"

namespace ember::onnx {

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) { throw FormatError(where + ": " + what); }

// ONNX TensorProto.DataType values (onnx.proto).
enum OnnxType : int32_t {
  kOFloat = 1, kOUInt8 = 2, kOInt8 = 3, kOUInt16 = 4, kOInt16 = 5, kOInt32 = 6, kOInt64 = 7, kOString = 8,
  kOBool = 9, kOFloat16 = 10, kODouble = 11, kOUInt32 = 12, kOUInt64 = 13, kOComplex64 = 14, kOComplex128 = 15,
  kOBFloat16 = 16
};

// Copies the typed repeated field `src` (count values of type S) into the
// tensor's storage as type D.
template <class D, class Field>
void copy_field(const Field& src, Tensor& out) {
  D* dst = out.data_ptr<D>();
  for (int i = 0; i < src.size(); ++i) dst[i] = static_cast<D>(src.Get(i));
}

// Reads `length` bytes at `offset` of the external file `location` (relative to
// `folder`, never outside it) into `dst`.
Tensor read_external(const ::onnx::TensorProto& proto, const std::string& where, const std::string& folder,
                     const Shape& shape, DType dtype, size_t nbytes) {
  check_external_location(proto, where, folder);
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      bad(where, "external data '" + kv.key() + "' is not a number: '" + kv.value() + "'");
    }
  }
  namespace fs = std::filesystem;
  fs::path rel(location);
  if (offset < 0) bad(where, "external data offset " + std::to_string(offset) + " is negative");
  if (length >= 0 && static_cast<uint64_t>(length) != nbytes)
    bad(where, "external data length " + std::to_string(length) + " does not match the " + std::to_string(nbytes) +
                   " bytes the tensor needs");
  fs::path file = fs::path(folder) / rel;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) bad(where, "external data file '" + file.string() + "' is not a regular file");
  fs::path real_folder = fs::weakly_canonical(fs::path(folder), ec), real_file = fs::weakly_canonical(file, ec);
  auto rel_real = real_file.lexically_relative(real_folder);
  if (ec || rel_real.empty() || *rel_real.begin() == "..")
    bad(where, "external data location '" + location + "' leaves the model's folder");
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(where, "cannot open external data file '" + file.string() + "'");
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (static_cast<uint64_t>(offset) > size || size - static_cast<uint64_t>(offset) < nbytes)
    bad(where, "external data file '" + file.string() + "' has " + std::to_string(size) + " bytes, fewer than offset " +
                   std::to_string(offset) + " + " + std::to_string(nbytes));
  Tensor out = empty(shape, dtype);
  in.seekg(offset);
  in.read(static_cast<char*>(out.data_ptr()), static_cast<std::streamsize>(nbytes));
  if (!in) bad(where, "cannot read external data file '" + file.string() + "'");
  return out;
}

}  // namespace

void check_external_location(const ::onnx::TensorProto& proto, const std::string& where, const std::string& folder) {
  if (folder.empty()) bad(where, "external data is not allowed for a model read from memory");
  std::string location;
  for (const auto& kv : proto.external_data())
    if (kv.key() == "location") location = kv.value();
  std::filesystem::path rel(location);
  if (location.empty()) bad(where, "external data has no location");
  if (rel.is_absolute()) bad(where, "external data location '" + location + "' must be relative to the model");
  for (const auto& part : rel)
    if (part == "..") bad(where, "external data location '" + location + "' leaves the model's folder");
}

const char* onnx_type_name(int32_t t) {
  switch (t) {
    case kOFloat: return "float"; case kOUInt8: return "uint8"; case kOInt8: return "int8";
    case kOUInt16: return "uint16"; case kOInt16: return "int16"; case kOInt32: return "int32";
    case kOInt64: return "int64"; case kOString: return "string"; case kOBool: return "bool";
    case kOFloat16: return "float16"; case kODouble: return "double"; case kOUInt32: return "uint32";
    case kOUInt64: return "uint64"; case kOComplex64: return "complex64"; case kOComplex128: return "complex128";
    case kOBFloat16: return "bfloat16";
    default: return "unknown";
  }
}

DType dtype_from_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case kOFloat: return kFloat32; case kODouble: return kFloat64; case kOFloat16: return kFloat16;
    case kOBFloat16: return kBFloat16; case kOInt8: return kInt8; case kOUInt8: return kUInt8;
    case kOInt32: return kInt32; case kOInt64: return kInt64; case kOBool: return kBool;
    default:
      throw NotImplementedError(what + ": ONNX element type " + onnx_type_name(t) + " (" + std::to_string(t) +
                                ") is not supported");
  }
}

int32_t dtype_to_onnx(DType d) {
  switch (d) {
    case kFloat32: return kOFloat; case kFloat64: return kODouble; case kFloat16: return kOFloat16;
    case kBFloat16: return kOBFloat16; case kInt8: return kOInt8; case kUInt8: return kOUInt8;
    case kInt32: return kOInt32; case kInt64: return kOInt64; case kBool: return kOBool;
  }
  return 0;
}

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& where, const std::string& folder) {
  if (proto.has_segment()) throw NotImplementedError(where + ": segmented tensors are not supported");
  if (!proto.has_data_type() || proto.data_type() == 0) bad(where, "tensor has no element type");
  DType dtype = dtype_from_onnx(proto.data_type(), where);
  Shape shape;
  uint64_t numel = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) bad(where, "tensor has a negative dimension " + std::to_string(d));
    if (d != 0 && numel > (uint64_t{1} << 62) / static_cast<uint64_t>(d))
      bad(where, "tensor has more elements than int64 can count");
    numel *= static_cast<uint64_t>(d);
    shape.push_back(d);
  }
  const size_t esize = dtype_size(dtype);
  if (numel > (uint64_t{1} << 62) / esize) bad(where, "tensor has more elements than int64 can count");
  const uint64_t nbytes = numel * esize;
  auto expect_count = [&](int count, const char* field) {
    if (static_cast<uint64_t>(count) != numel)
      bad(where, std::string("tensor of shape ") + shape_str(shape) + " needs " + std::to_string(numel) +
                     " values but " + field + " holds " + std::to_string(count));
  };

  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL) {
    // The file's size is checked before allocating, inside read_external.
    return read_external(proto, where, folder, shape, dtype, nbytes);
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes)
      bad(where, "tensor of shape " + shape_str(shape) + " and type " + onnx_type_name(proto.data_type()) + " needs " +
                     std::to_string(nbytes) + " bytes of raw_data but has " + std::to_string(proto.raw_data().size()));
    Tensor out = empty(shape, dtype);
    if (nbytes) std::memcpy(out.data_ptr(), proto.raw_data().data(), nbytes);
    if (dtype == kBool) {  // any nonzero byte is true; Ember's bools are 0 or 1
      auto* p = static_cast<unsigned char*>(out.data_ptr());
      for (uint64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
    }
    return out;
  }
  switch (dtype) {
    case kFloat32: {
      expect_count(proto.float_data_size(), "float_data");
      Tensor out = empty(shape, dtype);
      copy_field<float>(proto.float_data(), out);
      return out;
    }
    case kFloat64: {
      expect_count(proto.double_data_size(), "double_data");
      Tensor out = empty(shape, dtype);
      copy_field<double>(proto.double_data(), out);
      return out;
    }
    case kInt64: {
      expect_count(proto.int64_data_size(), "int64_data");
      Tensor out = empty(shape, dtype);
      copy_field<int64_t>(proto.int64_data(), out);
      return out;
    }
    case kInt32: case kInt8: case kUInt8: case kBool: case kFloat16: case kBFloat16: {
      expect_count(proto.int32_data_size(), "int32_data");
      Tensor out = empty(shape, dtype);
      const auto& src = proto.int32_data();
      switch (dtype) {
        case kInt32: copy_field<int32_t>(src, out); break;
        case kInt8: copy_field<int8_t>(src, out); break;
        case kUInt8: copy_field<uint8_t>(src, out); break;
        case kBool: {
          auto* p = static_cast<unsigned char*>(out.data_ptr());
          for (int i = 0; i < src.size(); ++i) p[i] = src.Get(i) != 0;
          break;
        }
        default: {  // float16 and bfloat16 values are their 16 bits in an int32
          auto* p = static_cast<uint16_t*>(out.data_ptr());
          for (int i = 0; i < src.size(); ++i) p[i] = static_cast<uint16_t>(src.Get(i));
        }
      }
      return out;
    }
  }
  bad(where, "tensor has no data");
}

void tensor_to_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto* proto) {
  Tensor c = t.cpu().contiguous();
  proto->set_name(name);
  proto->set_data_type(dtype_to_onnx(c.dtype()));
  for (int64_t d : c.shape()) proto->add_dims(d);
  proto->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
}

}  // namespace ember::onnx
