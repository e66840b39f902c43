// Conversion between ONNX's TensorProto and Ember tensors, the one place that
// knows ONNX's element-type numbers and its storage fields (raw_data, the typed
// repeated fields, external data files). Every size is checked against the bytes
// present before anything is read or allocated.
#pragma once

#include <string>

#include "onnx/onnx_pb.h"
#include "tensor/tensor.h"

namespace ember::onnx {

// ONNX's TensorProto.DataType number -> Ember's dtype; NotImplementedError for a
// type Ember has no dtype for (strings, uint16, complex, ...), naming `what`.
DType dtype_from_onnx(int32_t elem_type, const std::string& what);
int32_t dtype_to_onnx(DType dtype);
const char* onnx_type_name(int32_t elem_type);

// The tensor a TensorProto holds, on the CPU. `where` prefixes FormatError
// messages (the model's path and the tensor's role); `folder` is where external
// data files live ("" forbids them).
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& where, const std::string& folder);

// Checks an external-data tensor's location: relative, inside `folder`, and
// allowed at all (`folder` is "" for a model read from memory).
void check_external_location(const ::onnx::TensorProto& proto, const std::string& where, const std::string& folder);

// A TensorProto holding `t` (any device; read to the host) in raw_data.
void tensor_to_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto* proto);

}  // namespace ember::onnx
