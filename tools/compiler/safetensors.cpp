// safetensors reader and writer: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// tensor bytes; offsets are relative to the first byte after the header.
#include "tools/compiler/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/compiler/value_bytes.h"

namespace tern::compiler {

namespace {

using nlohmann::json;

struct DTypeName {
  const char* name;
  DType dtype;
};

// NF4 has no safetensors name: it is written as its packed bytes (U8).
constexpr DTypeName kDTypeNames[] = {
    {"F32", DType::F32},         {"F16", DType::F16},         {"BF16", DType::BF16},
    {"I64", DType::I64},         {"I32", DType::I32},         {"I16", DType::I16},
    {"I8", DType::I8},           {"U8", DType::U8},           {"BOOL", DType::Bool},
    {"F8_E4M3", DType::FP8E4M3}, {"F8_E5M2", DType::FP8E5M2},
};

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error("safetensors: " + msg); }

DType parse_dtype(const std::string& tensor, const std::string& name) {
  for (const DTypeName& d : kDTypeNames) {
    if (name == d.name) return d.dtype;
  }
  fail("tensor '" + tensor + "': unsupported dtype \"" + name +
       "\" (supported: F32 F16 BF16 I64 I32 I16 I8 U8 BOOL F8_E4M3 F8_E5M2)");
}

const char* dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.dtype == dtype) return d.name;
  }
  return nullptr;
}

struct Entry {
  std::string name;
  uint64_t begin = 0;
  uint64_t end = 0;
  SafeTensor tensor;
};

}  // namespace

namespace {

/// Bytes of one element of `dtype` for the alignment a borrowed tensor needs (1 for the packed
/// and byte types).
size_t element_alignment(DType dtype) { return std::max<size_t>(bits_per_element(dtype) / 8, 1); }

/// parse_safetensors over `size` bytes at `base` (a vector's or a mapped file's). With an
/// `owner` (the mapping), naturally aligned tensors borrow their bytes from base.
std::map<std::string, SafeTensor> parse_bytes(const uint8_t* base, size_t size,
                                              const std::shared_ptr<const void>& owner) {
  struct Bytes {
    const uint8_t* p;
    size_t n;
    size_t size() const { return n; }
    const uint8_t* data() const { return p; }
    uint8_t operator[](size_t i) const { return p[i]; }
  } bytes{base, size};
  if (bytes.size() < 8) {
    fail("file is " + std::to_string(bytes.size()) +
         " bytes, too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | bytes[static_cast<size_t>(i)];
  const uint64_t available = bytes.size() - 8;
  if (header_len > available) {
    fail("header length " + std::to_string(header_len) + " exceeds the " +
         std::to_string(available) + " bytes after the length field");
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes.data()) + 8;
  json header;
  try {
    header = json::parse(header_begin, header_begin + header_len);
  } catch (const json::exception& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");

  const uint64_t data_size = available - header_len;
  const uint8_t* data = bytes.data() + 8 + header_len;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) fail("__metadata__ is not an object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string()) fail("__metadata__." + m.key() + " is not a string");
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!e.is_object()) fail(where + ": entry is not an object");
    for (auto k = e.begin(); k != e.end(); ++k) {
      if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets") {
        fail(where + ": unknown key \"" + k.key() + "\"");
      }
    }
    if (!e.contains("dtype") || !e["dtype"].is_string()) fail(where + ": missing string \"dtype\"");
    if (!e.contains("shape") || !e["shape"].is_array()) fail(where + ": missing array \"shape\"");
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2) {
      fail(where + ": \"data_offsets\" must be an array [begin, end]");
    }
    Entry entry;
    entry.name = name;
    entry.tensor.dtype = parse_dtype(name, e["dtype"].get<std::string>());
    for (const json& s : e["shape"]) {
      if (!s.is_number_unsigned() || s.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        fail(where + ": shape entry " + s.dump() + " is not a non-negative integer");
      }
      entry.tensor.shape.push_back(static_cast<int64_t>(s.get<uint64_t>()));
    }
    for (const json& o : e["data_offsets"]) {
      if (!o.is_number_unsigned()) {
        fail(where + ": data offset " + o.dump() + " is not a non-negative integer");
      }
    }
    entry.begin = e["data_offsets"][0].get<uint64_t>();
    entry.end = e["data_offsets"][1].get<uint64_t>();
    if (entry.begin > entry.end) {
      fail(where + ": data_offsets [" + std::to_string(entry.begin) + ", " +
           std::to_string(entry.end) + "] has begin after end");
    }
    if (entry.end > data_size) {
      fail(where + ": data_offsets [" + std::to_string(entry.begin) + ", " +
           std::to_string(entry.end) + "] past the end of the " + std::to_string(data_size) +
           "-byte data area");
    }
    uint64_t expected = 0;
    if (!shape_nbytes(entry.tensor.dtype, entry.tensor.shape, &expected)) {
      fail(where + ": byte size of shape " + shape_string(entry.tensor.shape) + " overflows");
    }
    if (entry.end - entry.begin != expected) {
      fail(where + ": " + e["dtype"].get<std::string>() + " " + shape_string(entry.tensor.shape) +
           " needs " + std::to_string(expected) + " bytes, data_offsets give " +
           std::to_string(entry.end - entry.begin));
    }
    entries.push_back(std::move(entry));
  }

  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].begin < entries[i - 1].end) {
      fail("tensors '" + entries[i - 1].name + "' [" + std::to_string(entries[i - 1].begin) + ", " +
           std::to_string(entries[i - 1].end) + ") and '" + entries[i].name + "' [" +
           std::to_string(entries[i].begin) + ", " + std::to_string(entries[i].end) + ") overlap");
    }
  }

  std::map<std::string, SafeTensor> out;
  for (Entry& e : entries) {
    const uint8_t* at = data + e.begin;
    const size_t n = static_cast<size_t>(e.end - e.begin);
    const bool aligned = reinterpret_cast<uintptr_t>(at) % element_alignment(e.tensor.dtype) == 0;
    e.tensor.data = owner != nullptr && aligned && n > 0
                        ? ConstantBytes::borrow(owner, at, n)
                        : ConstantBytes(std::vector<uint8_t>(at, at + n));
    out.emplace(e.name, std::move(e.tensor));
  }
  return out;
}

}  // namespace

std::map<std::string, SafeTensor> parse_safetensors(const std::vector<uint8_t>& bytes) {
  return parse_bytes(bytes.data(), bytes.size(), nullptr);
}

std::map<std::string, SafeTensor> read_safetensors(const std::string& path) {
  // Mapped, not read into a buffer: the tensors borrow their bytes from the mapping (a read
  // buffer doubled a large model's weights while parsing; copies out of the mapping held them
  // all in anonymous memory).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open safetensors file");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (size > 0 && map == MAP_FAILED) throw std::runtime_error(path + ": cannot map the file");
  // The mapping lives as long as a tensor borrows from it.
  std::shared_ptr<const void> mapping(size > 0 ? map : nullptr, [size](const void* p) {
    if (p != nullptr) ::munmap(const_cast<void*>(p), size);
  });
  try {
    return parse_bytes(static_cast<const uint8_t*>(map), size, mapping);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::vector<uint8_t> write_safetensors(const std::map<std::string, SafeTensor>& tensors) {
  // By decreasing element size (stable): each tensor's bytes start at a multiple of its element
  // size, so read_safetensors borrows them all from the mapped file.
  std::vector<const std::pair<const std::string, SafeTensor>*> order;
  for (const auto& kv : tensors) order.push_back(&kv);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return element_alignment(a->second.dtype) > element_alignment(b->second.dtype);
  });
  json header = json::object();
  uint64_t offset = 0;
  for (const auto* named : order) {
    const auto& kv = *named;
    const SafeTensor& t = kv.second;
    uint64_t nbytes = 0;
    if (!shape_nbytes(t.dtype, t.shape, &nbytes)) {
      throw std::invalid_argument("write_safetensors: tensor '" + kv.first + "': shape " +
                                  shape_string(t.shape) + " is negative or overflows");
    }
    if (nbytes != t.data.size()) {
      throw std::invalid_argument("write_safetensors: tensor '" + kv.first +
                                  "': " + to_string(t.dtype) + " " + shape_string(t.shape) +
                                  " needs " + std::to_string(nbytes) + " bytes, has " +
                                  std::to_string(t.data.size()));
    }
    json entry;
    if (t.dtype == DType::NF4) {
      // Packed NF4 is stored as raw bytes; the graph JSON carries the logical dtype and shape.
      entry["dtype"] = "U8";
      entry["shape"] = json::array({nbytes});
    } else {
      entry["dtype"] = dtype_name(t.dtype);
      entry["shape"] = t.shape;
    }
    entry["data_offsets"] = json::array({offset, offset + nbytes});
    header[kv.first] = entry;
    offset += nbytes;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';  // keep the data 8-byte aligned, as the format does
  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto* kv : order) out.insert(out.end(), kv->second.data.begin(), kv->second.data.end());
  return out;
}

}  // namespace tern::compiler
