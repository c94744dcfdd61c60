// Backend load options (MethodLoadOptions::backend_options) copied so that the caller's strings
// need not outlive the load: Module, the C API and the CLI keep theirs in one of these.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "runtime/backend/backend_option.h"
#include "runtime/core/span.h"

namespace tern {

class OwnedBackendOptions {
 public:
  /// Appends a copy of one option (none of the strings null).
  void add(const char* backend, const char* key, const char* value) {
    strings_.push_back({backend, key, value});
    records_.clear();
  }
  /// The copies as records, valid until the next add() or until this object moves or dies.
  Span<const BackendOption> span() {
    if (records_.size() != strings_.size()) {
      records_.clear();
      for (const auto& s : strings_) records_.push_back({s[0].c_str(), s[1].c_str(), s[2].c_str()});
    }
    return Span<const BackendOption>(records_.data(), records_.size());
  }

 private:
  std::vector<std::array<std::string, 3>> strings_;  // backend, key, value
  std::vector<BackendOption> records_;
};

}  // namespace tern
