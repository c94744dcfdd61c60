// ConstantBytes: the bytes of a constant tensor (or a state's initial value) in the compiler's
// graph IR. Values that hold the same weight — the methods of one program reading one
// parameter — share one buffer instead of a copy each (a 1.1B-parameter model's prefill and
// decode methods: 4.4 GB once, not twice); the few writers (quantization) get a private copy
// first (copy on write). Reads look like a const std::vector<uint8_t>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tern::compiler {

class ConstantBytes {
 public:
  ConstantBytes() = default;
  ConstantBytes(std::vector<uint8_t> bytes)  // NOLINT: implicit, as the vector it replaces
      : p_(std::make_shared<std::vector<uint8_t>>(std::move(bytes))) {}
  ConstantBytes(std::initializer_list<uint8_t> bytes)
      : p_(std::make_shared<std::vector<uint8_t>>(bytes)) {}
  /// Another holder of `shared`'s bytes (no copy).
  static ConstantBytes share(const std::shared_ptr<std::vector<uint8_t>>& shared) {
    ConstantBytes b;
    b.p_ = shared;
    return b;
  }

  const std::vector<uint8_t>& vector() const { return p_ ? *p_ : empty_vector(); }
  operator const std::vector<uint8_t>&() const { return vector(); }  // NOLINT: implicit
  size_t size() const { return vector().size(); }
  bool empty() const { return vector().empty(); }
  const uint8_t* data() const { return vector().data(); }
  std::vector<uint8_t>::const_iterator begin() const { return vector().begin(); }
  std::vector<uint8_t>::const_iterator end() const { return vector().end(); }
  uint8_t operator[](size_t i) const { return vector()[i]; }

  /// The bytes to change in place: copied first when another value shares them.
  std::vector<uint8_t>& mutable_vector() {
    if (!p_) {
      p_ = std::make_shared<std::vector<uint8_t>>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<std::vector<uint8_t>>(*p_);
    }
    return *p_;
  }
  /// Whether two values hold the very same buffer (not just equal bytes).
  bool same_buffer(const ConstantBytes& other) const { return p_ && p_ == other.p_; }

  friend bool operator==(const ConstantBytes& a, const ConstantBytes& b) {
    return a.same_buffer(b) || a.vector() == b.vector();
  }
  friend bool operator!=(const ConstantBytes& a, const ConstantBytes& b) { return !(a == b); }
  friend bool operator==(const ConstantBytes& a, const std::vector<uint8_t>& b) {
    return a.vector() == b;
  }
  friend bool operator==(const std::vector<uint8_t>& a, const ConstantBytes& b) {
    return a == b.vector();
  }

 private:
  static const std::vector<uint8_t>& empty_vector() {
    static const std::vector<uint8_t> empty;
    return empty;
  }
  std::shared_ptr<std::vector<uint8_t>> p_;
};

}  // namespace tern::compiler
