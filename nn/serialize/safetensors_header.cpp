// Validation of a safetensors header. Every number is checked before it is used
// in arithmetic, and every byte range against the data buffer, so that a reader
// that trusts the result never reads outside the file or allocates from a lie.
#include "nn/serialize/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "kernels/base/strided.h"

namespace ember::serialize {
namespace {

using nlohmann::json;

struct DTypeCode {
  DType dtype;
  const char* code;
};
constexpr DTypeCode kCodes[] = {
    {DType::Float32, "F32"}, {DType::Float64, "F64"}, {DType::Float16, "F16"},
    {DType::BFloat16, "BF16"}, {DType::Int8, "I8"},   {DType::UInt8, "U8"},
    {DType::Int32, "I32"},   {DType::Int64, "I64"},   {DType::Bool, "BOOL"},
};

// Deep enough for any real header (it needs 3); the bound keeps hostile nesting from
// reaching code that recurses over the JSON tree.
constexpr int kMaxNesting = 64;

[[noreturn]] void bad(const std::string& path, const std::string& what) { throw FormatError(path + ": " + what); }

std::string offsets_str(uint64_t begin, uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  return s + "]";
}

std::string dims_str(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// A JSON integer >= 0 ("-0" included); floats such as 2.0 are not sizes.
bool as_size(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() == 0) {
    out = 0;
    return true;
  }
  return false;
}

// nlohmann::json keeps the last of two equal keys without a word, which would let a
// file name one tensor twice; the parse callback sees every key and refuses repeats.
json parse_json(const std::string& path, std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  int depth = 0;
  auto check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        [[fallthrough]];
      case json::parse_event_t::array_start:
        if (++depth > kMaxNesting) bad(path, "header nests deeper than " + std::to_string(kMaxNesting) + " levels");
        break;
      case json::parse_event_t::object_end:
        open_objects.pop_back();
        [[fallthrough]];
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!open_objects.back().insert(key).second) bad(path, "duplicate key '" + key + "' in the header");
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  // nlohmann's lexer takes a NUL byte for the end of its input, so "{...}\0junk"
  // would parse and the junk go unread; the JSON grammar has no place for one.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    bad(path, "header is not valid JSON (error near byte " + std::to_string(nul + 1) + ")");
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::parse_error& e) {
    // nlohmann's own text names its version and internals; the byte is what helps.
    bad(path, "header is not valid JSON (error near byte " + std::to_string(e.byte) + ")");
  } catch (const json::out_of_range&) {
    // Valid JSON syntax, but a number no double holds (3e444): found by fuzzing, when
    // nlohmann's own exception escaped the reader.
    bad(path, "header has a number too large for a double");
  }
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& m) {
  std::map<std::string, std::string> out;
  const char* what = "__metadata__ is not an object mapping strings to strings";
  if (!m.is_object()) bad(path, what);
  for (const auto& [key, value] : m.items()) {
    if (!value.is_string()) bad(path, what);
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const json& info, uint64_t data_size) {
  const std::string where = "tensor '" + name + "': ";
  if (!info.is_object()) bad(path, where + "entry is not a JSON object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!info.contains(field)) bad(path, where + "missing field '" + field + "'");

  TensorEntry e;
  e.name = name;
  const json& dtype = info["dtype"];
  if (!dtype.is_string()) bad(path, where + "dtype is not a string");
  const std::string& code = dtype.get_ref<const std::string&>();
  const std::optional<DType> dt = parse_safetensors_dtype(code);
  if (!dt) bad(path, where + "unsupported dtype '" + code + "' (Ember reads F32, F64, F16, BF16, I8, U8, I32, I64, BOOL)");
  e.dtype = *dt;

  const json& shape = info["shape"];
  std::vector<uint64_t> dims;
  if (!shape.is_array()) bad(path, where + "shape must be an array of non-negative integers");
  for (const json& d : shape) {
    uint64_t v = 0;
    if (!as_size(d, v)) bad(path, where + "shape must be an array of non-negative integers");
    dims.push_back(v);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    bad(path, where + "shape has " + std::to_string(dims.size()) + " dimensions, more than the " +
                  std::to_string(kMaxDims) + " Ember supports");
  // Bound the product of the dims with zeros counted as ones: it bounds the numel, the
  // byte count and every contiguous stride, so none of them can overflow int64 later.
  const uint64_t elem = dtype_size(e.dtype);
  uint64_t bound = elem, numel = 1;
  for (uint64_t d : dims) {
    if (__builtin_mul_overflow(bound, std::max<uint64_t>(d, 1), &bound) ||
        bound > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(path, where + "shape " + dims_str(dims) + " overflows 64-bit sizes");
    numel *= d;
  }
  const uint64_t nbytes = numel * elem;
  for (uint64_t d : dims) e.shape.push_back(static_cast<int64_t>(d));

  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !as_size(offsets[0], e.begin) || !as_size(offsets[1], e.end))
    bad(path, where + "data_offsets must be an array of two non-negative integers");
  const std::string range = "data_offsets " + offsets_str(e.begin, e.end);
  if (e.begin > e.end) bad(path, where + range + " begin after they end");
  if (e.end > data_size)
    bad(path, where + range + " reach past the end of the " + std::to_string(data_size) + "-byte data buffer");
  if (e.end - e.begin != nbytes)
    bad(path, where + range + " hold " + std::to_string(e.end - e.begin) + " bytes but shape " + dims_str(dims) +
                  " of dtype " + code + " needs " + std::to_string(nbytes));
  return e;
}

}  // namespace

const char* safetensors_dtype_code(DType dtype) {
  for (const DTypeCode& c : kCodes)
    if (c.dtype == dtype) return c.code;
  return "?";  // unreachable: kCodes lists every DType
}

std::optional<DType> parse_safetensors_dtype(std::string_view code) {
  for (const DTypeCode& c : kCodes)
    if (code == c.code) return c.dtype;
  return std::nullopt;
}

SafetensorsHeader parse_safetensors_header(const std::string& path, std::string_view text, uint64_t data_size) {
  const json j = parse_json(path, text);
  if (!j.is_object()) bad(path, "header is not a JSON object");

  SafetensorsHeader h;
  for (const auto& [name, info] : j.items()) {
    if (name == "__metadata__") {
      h.metadata = parse_metadata(path, info);
      continue;
    }
    if (name.empty()) bad(path, "empty tensor name in the header");
    h.tensors.push_back(parse_entry(path, name, info, data_size));
  }

  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  // The ranges must tile [0, data_size): each starts where the one before ended.
  // The reference implementation requires it too; it leaves no byte unaccounted for.
  uint64_t covered = 0;
  const TensorEntry* last = nullptr;  // the tensor whose range ends at `covered`
  for (const TensorEntry& e : h.tensors) {
    if (e.begin < covered)
      bad(path, "tensors '" + last->name + "' " + offsets_str(last->begin, last->end) + " and '" + e.name + "' " +
                    offsets_str(e.begin, e.end) + " overlap");
    if (e.begin > covered)
      bad(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                    ") of the data buffer belong to no tensor");
    last = &e;
    covered = e.end;
  }
  if (covered < data_size)
    bad(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                  ") of the data buffer belong to no tensor");
  return h;
}

}  // namespace ember::serialize
