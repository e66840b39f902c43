// The .npy reader and writer. The header is a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with
// spaces to a multiple of 64 bytes and ended by a newline; the parser below
// accepts exactly the three keys NumPy writes, in any order.
#include "nn/serialize/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kernels/base/error.h"
#include "nn/serialize/atomic_file.h"
#include "tensor/ops.h"

namespace ember::serialize {

namespace {

[[noreturn]] void bad(const std::string& name, const std::string& what) { throw FormatError(name + ": " + what); }

const char kMagic[] = "\x93NUMPY";

// A cursor over the header dict.
struct Header {
  const std::string& s;
  const std::string& name;
  size_t i = 0;

  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(name, std::string("malformed header: expected '") + c + "' at byte " + std::to_string(i));
  }
  std::string str() {
    skip();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) bad(name, "malformed header: expected a string");
    char q = s[i++];
    size_t end = s.find(q, i);
    if (end == std::string::npos) bad(name, "malformed header: unterminated string");
    std::string v = s.substr(i, end - i);
    i = end + 1;
    return v;
  }
  int64_t integer() {
    skip();
    size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == start) bad(name, "malformed header: expected a dimension");
    if (i - start > 18) bad(name, "header has a dimension too large");
    int64_t v = std::stoll(s.substr(start, i - start));
    if (i < s.size() && s[i] == 'L') ++i;  // Python 2's long suffix
    return v;
  }
};

DType dtype_of(const std::string& descr, const std::string& name) {
  if (descr.size() < 2) bad(name, "malformed header: descr '" + descr + "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  bool one_byte = code == "i1" || code == "u1" || code == "b1";
  if (order == '>' && !one_byte)
    throw NotImplementedError(name + ": big-endian arrays ('" + descr + "') are not supported");
  if (order != '<' && order != '|' && order != '=' && order != '>') bad(name, "malformed header: descr '" + descr + "'");
  if (code == "f4") return kFloat32;
  if (code == "f8") return kFloat64;
  if (code == "f2") return kFloat16;
  if (code == "i1") return kInt8;
  if (code == "u1") return kUInt8;
  if (code == "i4") return kInt32;
  if (code == "i8") return kInt64;
  if (code == "b1") return kBool;
  throw NotImplementedError(name + ": NumPy type '" + descr + "' is not supported");
}

const char* descr_of(DType d) {
  switch (d) {
    case kFloat32: return "<f4";
    case kFloat64: return "<f8";
    case kFloat16: return "<f2";
    case kInt8: return "|i1";
    case kUInt8: return "|u1";
    case kInt32: return "<i4";
    case kInt64: return "<i8";
    case kBool: return "|b1";
    case kBFloat16: return "<f4";  // written as float32 (see save_npy)
  }
  return "";
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) bad(name, "not an .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(name, "file ends inside the header");
    header_len = 0;
    for (int k = 3; k >= 0; --k) header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + k]);
    header_start = 12;
  } else {
    throw NotImplementedError(name + ": .npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > bytes.size() - header_start) bad(name, "file ends inside the header");
  std::string text = bytes.substr(header_start, header_len);
  Header h{text, name};
  std::string descr;
  bool fortran = false, seen_descr = false, seen_shape = false, seen_order = false;
  Shape shape;
  h.expect('{');
  while (!h.eat('}')) {
    std::string key = h.str();
    h.expect(':');
    if (key == "descr") {
      descr = h.str();
      seen_descr = true;
    } else if (key == "fortran_order") {
      h.skip();
      if (text.compare(h.i, 4, "True") == 0) fortran = true, h.i += 4;
      else if (text.compare(h.i, 5, "False") == 0) fortran = false, h.i += 5;
      else bad(name, "malformed header: fortran_order is not True or False");
      seen_order = true;
    } else if (key == "shape") {
      h.expect('(');
      while (!h.eat(')')) {
        shape.push_back(h.integer());
        if (!h.eat(',')) {
          h.expect(')');
          break;
        }
      }
      seen_shape = true;
    } else {
      bad(name, "malformed header: unknown key '" + key + "'");
    }
    if (!h.eat(',')) {
      h.expect('}');
      break;
    }
  }
  if (!seen_descr || !seen_shape || !seen_order) bad(name, "header lacks descr, fortran_order or shape");
  DType dtype = dtype_of(descr, name);
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d != 0 && numel > (uint64_t{1} << 62) / static_cast<uint64_t>(d))
      bad(name, "shape " + shape_str(shape) + " has more elements than int64 can count");
    numel *= static_cast<uint64_t>(d);
  }
  if (numel > (uint64_t{1} << 62) / dtype_size(dtype))
    bad(name, "shape " + shape_str(shape) + " has more elements than int64 can count");
  uint64_t nbytes = numel * dtype_size(dtype);
  uint64_t have = bytes.size() - header_start - header_len;
  if (have != nbytes)
    bad(name, "shape " + shape_str(shape) + " of " + descr + " needs " + std::to_string(nbytes) + " bytes of data but the file has " +
                  std::to_string(have));
  Shape stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  Tensor t = empty(stored, dtype);
  if (nbytes) std::memcpy(t.data_ptr(), bytes.data() + header_start + header_len, nbytes);
  if (dtype == kBool) {
    auto* p = static_cast<unsigned char*>(t.data_ptr());
    for (uint64_t k = 0; k < numel; ++k) p[k] = p[k] != 0;
  }
  if (fortran) {
    Shape perm;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) perm.push_back(d);
    t = t.permute(perm).contiguous();
  }
  return t;
}

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path + ": cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), path);
}

void save_npy(const std::string& path, const Tensor& t) {
  Tensor c = t.cpu();
  if (c.dtype() == kBFloat16) c = c.to(kFloat32);
  c = c.contiguous();
  std::string dict = std::string("{'descr': '") + descr_of(c.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : c.shape()) dict += std::to_string(d) + ", ";
  if (c.dim() > 0) dict.resize(dict.size() - (c.dim() == 1 ? 1 : 2));  // (3,) for one dim, (3, 4) for more
  dict += "), }";
  // Pad with spaces so that magic + length + header is a multiple of 64, then '\n'.
  bool v2 = dict.size() + 11 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string head(kMagic, 6);
  head += static_cast<char>(v2 ? 2 : 1);
  head += '\0';
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (size_t k = 0; k < (v2 ? 4u : 2u); ++k) head += static_cast<char>((len >> (8 * k)) & 0xff);
  AtomicFile out(path);
  out.write(head.data(), head.size());
  out.write(dict.data(), dict.size());
  if (c.nbytes()) out.write(c.data_ptr(), c.nbytes());
  out.commit();
}

}  // namespace ember::serialize
