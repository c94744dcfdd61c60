#include "tools/cli/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>

#include "runtime/core/checked_math.h"

namespace tern {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kHeaderAlignment = 64;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::runtime_error(source + ": " + what);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Printable ASCII kept, anything else as \xNN.
std::string escaped(const uint8_t* bytes, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t c = bytes[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

struct DescrEntry {
  const char* descr;
  DType dtype;
};
const DescrEntry kDescrs[] = {
    {"<f4", DType::F32}, {"<f2", DType::F16}, {"<i8", DType::I64}, {"<i4", DType::I32},
    {"<i2", DType::I16}, {"|i1", DType::I8},  {"|u1", DType::U8},  {"|b1", DType::Bool},
};

// A parsed value of the header dictionary.
struct HeaderValue {
  enum class Kind { String, Bool, Tuple } kind = Kind::String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

// Parser of the Python dict literal in a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  std::map<std::string, HeaderValue> parse() {
    std::map<std::string, HeaderValue> dict;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (dict.count(key)) error("key " + quote(key) + " appears twice");
      dict[key] = parse_value();
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        error("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the dictionary");
    return dict;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  [[noreturn]] void error(const std::string& what) const {
    std::string found = pos_ < s_.size() ? quote(s_.substr(pos_, 20)) : "the end of the header";
    fail(source_, "malformed .npy header: " + what + " at offset " + std::to_string(pos_) +
                      ", found " + found + " (header: " + s_ + ")");
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') error("expected a quoted string");
    const size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) error("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  HeaderValue parse_value() {
    HeaderValue v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::Kind::String;
      v.text = parse_string();
    } else if (s_.compare(pos_, 4, "True") == 0) {
      v.kind = HeaderValue::Kind::Bool;
      v.flag = true;
      pos_ += 4;
    } else if (s_.compare(pos_, 5, "False") == 0) {
      v.kind = HeaderValue::Kind::Bool;
      v.flag = false;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = HeaderValue::Kind::Tuple;
      ++pos_;
      skip_ws();
      while (peek() != ')') {
        v.ints.push_back(parse_int());
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          skip_ws();
        } else if (peek() != ')') {
          error("expected ',' or ')' in the shape tuple");
        }
      }
      ++pos_;
    } else {
      error("expected a string, True, False or a tuple");
    }
    return v;
  }
  int64_t parse_int() {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (peek() < '0' || peek() > '9') error("expected an integer");
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (!checked_mul(value, 10, &value) ||
          !checked_add(value, static_cast<uint64_t>(peek() - '0'), &value) ||
          value > static_cast<uint64_t>(INT64_MAX)) {
        error("integer too large");
      }
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 long suffix
    return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  }

  const std::string& s_;
  const std::string& source_;
  size_t pos_ = 0;
};

DType dtype_from_descr(const std::string& descr, const std::string& source) {
  for (const DescrEntry& e : kDescrs) {
    if (descr == e.descr) return e.dtype;
  }
  // Equivalent spellings of the single-byte types.
  if (descr == "<i1" || descr == ">i1" || descr == "=i1") return DType::I8;
  if (descr == "<u1" || descr == ">u1" || descr == "=u1") return DType::U8;
  std::string hint;
  if (!descr.empty() && descr[0] == '>') hint = " (big-endian data is not supported)";
  if (descr == "<f8") hint = " (float64 is not supported; convert to float32)";
  fail(source, "unsupported .npy descr " + quote(descr) + hint +
                   ": expected one of '<f4', '<f2', '<i8', '<i4', '<i2', '|i1', '|u1', '|b1'");
}

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
    if (i + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

}  // namespace

uint64_t NpyArray::numel() const {
  uint64_t n = 1;
  for (int64_t s : shape) n *= static_cast<uint64_t>(s);
  return n;
}

std::string npy_descr(DType dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) return e.descr;
  }
  throw std::runtime_error(std::string("dtype ") + to_string(dtype) +
                           " has no .npy equivalent");
}

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source) {
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    fail(source, "not a .npy file: expected the magic \\x93NUMPY, found " +
                     (size < kMagicSize ? std::to_string(size) + " bytes"
                                        : quote(escaped(bytes, kMagicSize))));
  }
  const uint8_t major = bytes[6];
  const uint8_t minor = bytes[7];
  if (major < 1 || major > 3) {
    fail(source, "unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + ": expected 1.0, 2.0 or 3.0");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t preamble = kMagicSize + 2 + len_bytes;
  if (size < preamble) {
    fail(source, "truncated .npy preamble: expected " + std::to_string(preamble) +
                     " bytes, found " + std::to_string(size));
  }
  const uint64_t header_len = read_le(bytes + kMagicSize + 2, len_bytes);
  if (header_len > size - preamble) {
    fail(source, "truncated .npy header: header length says " + std::to_string(header_len) +
                     " bytes, only " + std::to_string(size - preamble) + " follow the preamble");
  }
  const std::string header(reinterpret_cast<const char*>(bytes + preamble),
                           static_cast<size_t>(header_len));
  std::map<std::string, HeaderValue> dict = HeaderParser(header, source).parse();
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!dict.count(key)) fail(source, std::string("malformed .npy header: missing key '") + key +
                                           "' (header: " + header + ")");
  }
  if (dict.size() != 3) {
    fail(source, "malformed .npy header: expected exactly the keys 'descr', 'fortran_order', "
                 "'shape', found " + std::to_string(dict.size()) + " keys (header: " + header + ")");
  }
  const HeaderValue& descr = dict["descr"];
  const HeaderValue& fortran = dict["fortran_order"];
  const HeaderValue& shape = dict["shape"];
  if (descr.kind != HeaderValue::Kind::String) {
    fail(source, "malformed .npy header: 'descr' must be a string (header: " + header + ")");
  }
  if (fortran.kind != HeaderValue::Kind::Bool) {
    fail(source, "malformed .npy header: 'fortran_order' must be True or False");
  }
  if (shape.kind != HeaderValue::Kind::Tuple) {
    fail(source, "malformed .npy header: 'shape' must be a tuple (header: " + header + ")");
  }
  NpyArray array;
  array.dtype = dtype_from_descr(descr.text, source);
  if (fortran.flag) {
    fail(source, "fortran_order True is not supported: expected a C-order array "
                 "(save with np.ascontiguousarray)");
  }
  uint64_t numel = 1;
  for (int64_t s : shape.ints) {
    if (s < 0) fail(source, "invalid .npy shape " + shape_to_string(shape.ints) + ": negative size");
    if (!checked_mul(numel, static_cast<uint64_t>(s), &numel)) {
      fail(source, "invalid .npy shape " + shape_to_string(shape.ints) + ": element count overflows");
    }
  }
  if (shape.ints.size() > 8) {
    fail(source, "unsupported .npy shape " + shape_to_string(shape.ints) +
                     ": rank " + std::to_string(shape.ints.size()) + " exceeds the maximum 8");
  }
  array.shape = shape.ints;
  uint64_t nbytes = 0;
  if (!dtype_nbytes(array.dtype, numel, &nbytes)) {
    fail(source, "invalid .npy shape " + shape_to_string(shape.ints) + ": byte size overflows");
  }
  const uint64_t data_offset = preamble + header_len;
  const uint64_t available = size - data_offset;
  if (available != nbytes) {
    fail(source, std::string(available < nbytes ? "truncated" : "oversized") +
                     " .npy data: shape " + shape_to_string(array.shape) + " of " +
                     quote(descr.text) + " needs " + std::to_string(nbytes) + " bytes, found " +
                     std::to_string(available));
  }
  array.data.assign(bytes + data_offset, bytes + size);
  return array;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading: " + std::string(std::strerror(errno)));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read failed");
  return parse_npy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> encode_npy(const NpyArray& array) {
  const std::string descr = npy_descr(array.dtype);
  uint64_t nbytes = 0;
  for (int64_t s : array.shape) {
    if (s < 0) throw std::runtime_error("cannot encode .npy: negative size in shape " +
                                        shape_to_string(array.shape));
  }
  if (!dtype_nbytes(array.dtype, array.numel(), &nbytes) || nbytes != array.data.size()) {
    throw std::runtime_error("cannot encode .npy: shape " + shape_to_string(array.shape) +
                             " of " + descr + " needs " + std::to_string(nbytes) +
                             " bytes, data has " + std::to_string(array.data.size()));
  }
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                       shape_to_string(array.shape) + ", }";
  uint8_t major = 1;
  size_t preamble = kMagicSize + 4;
  // Pad with spaces and a final newline so the data starts at a multiple of 64.
  size_t total = (preamble + header.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment *
                 kHeaderAlignment;
  if (total - preamble > 0xffff) {
    major = 2;
    preamble = kMagicSize + 6;
    total = (preamble + header.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment *
            kHeaderAlignment;
  }
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  std::vector<uint8_t> out(kMagic, kMagic + kMagicSize);
  out.push_back(major);
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& array) {
  const std::vector<uint8_t> bytes = encode_npy(array);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot open for writing: " + std::string(std::strerror(errno)));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail(path, "write failed");
}

}  // namespace tern
