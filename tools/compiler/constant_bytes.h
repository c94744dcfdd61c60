// ConstantBytes: the bytes of a constant tensor (or a state's initial value) in the compiler's
// graph IR. Values that hold the same weight — the methods of one program reading one
// parameter — share one buffer instead of a copy each (a 1.1B-parameter model's prefill and
// decode methods: 4.4 GB once, not twice); the few writers (quantization) get a private copy
// first (copy on write). The bytes are either owned (a vector) or borrowed from a mapping of
// the weights file that the ConstantBytes keeps alive (safetensors.h: a weight read from a
// mapped file is never copied into memory, so compiling a model does not hold its weights in
// anonymous memory — the kernel can drop and re-read the file's pages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

namespace tern::compiler {

class ConstantBytes {
 public:
  ConstantBytes() = default;
  ConstantBytes(std::vector<uint8_t> bytes)  // NOLINT: implicit, as the vector it replaces
      : owned_(std::make_shared<std::vector<uint8_t>>(std::move(bytes))) {}
  ConstantBytes(std::initializer_list<uint8_t> bytes)
      : owned_(std::make_shared<std::vector<uint8_t>>(bytes)) {}
  /// `size` bytes at `data`, borrowed: `owner` keeps them valid (e.g. a file mapping) for as
  /// long as any ConstantBytes refers to them; never written through.
  static ConstantBytes borrow(std::shared_ptr<const void> owner, const uint8_t* data,
                              size_t size) {
    ConstantBytes b;
    b.owner_ = std::move(owner);
    b.borrowed_ = data;
    b.borrowed_size_ = size;
    return b;
  }

  const uint8_t* data() const { return owned_ ? owned_->data() : borrowed_; }
  size_t size() const { return owned_ ? owned_->size() : borrowed_size_; }
  bool empty() const { return size() == 0; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  uint8_t operator[](size_t i) const { return data()[i]; }
  /// A copy of the bytes.
  std::vector<uint8_t> to_vector() const { return std::vector<uint8_t>(begin(), end()); }
  /// Whether the bytes are borrowed from a mapping rather than owned.
  bool borrowed() const { return !owned_ && owner_ != nullptr; }

  /// The bytes to change in place: copied first when another value shares them or when they
  /// are borrowed.
  std::vector<uint8_t>& mutable_vector() {
    if (!owned_) {
      owned_ = std::make_shared<std::vector<uint8_t>>(begin(), end());
      owner_.reset();
      borrowed_ = nullptr;
      borrowed_size_ = 0;
    } else if (owned_.use_count() > 1) {
      owned_ = std::make_shared<std::vector<uint8_t>>(*owned_);
    }
    return *owned_;
  }
  /// Whether two values hold the very same buffer (not just equal bytes).
  bool same_buffer(const ConstantBytes& other) const {
    return !empty() && data() == other.data() && size() == other.size();
  }

  friend bool operator==(const ConstantBytes& a, const ConstantBytes& b) {
    return a.same_buffer(b) ||
           (a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0));
  }
  friend bool operator!=(const ConstantBytes& a, const ConstantBytes& b) { return !(a == b); }

 private:
  std::shared_ptr<std::vector<uint8_t>> owned_;
  std::shared_ptr<const void> owner_;  // keeps borrowed_ valid
  const uint8_t* borrowed_ = nullptr;
  size_t borrowed_size_ = 0;
};

}  // namespace tern::compiler
