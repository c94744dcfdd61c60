// `tern run`: load a method, set its inputs (.npy, random or ones), execute, report outputs.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "runtime/executor/method.h"
#include "runtime/extension/module.h"
#include "tools/cli/commands.h"
#include "tools/cli/half.h"
#include "tools/cli/npy.h"

namespace tern::cli {
namespace {

constexpr uint64_t kValuesShown = 8;

std::string input_label(size_t index, const char* name) {
  std::string label = "input " + std::to_string(index);
  if (name != nullptr && name[0] != '\0') label += std::string(" (") + name + ")";
  return label;
}

// Reads a scalar method input from a rank-0 (or one-element) .npy array.
EValue scalar_from_npy(EValue::Tag tag, const NpyArray& array, const std::string& label) {
  if (array.numel() != 1) {
    throw std::runtime_error(label + ": expected a scalar (one element), found shape " +
                             shape_string(Span<const int64_t>(array.shape.data(), array.shape.size())));
  }
  const std::string text = element_string(array.dtype, array.data.data(), 0);
  switch (tag) {
    case EValue::Tag::Int: return EValue::from_int(std::stoll(text));
    case EValue::Tag::Double: return EValue::from_double(std::stod(text));
    case EValue::Tag::Bool: return EValue::from_bool(text == "true" || (text != "0" && text != "false"));
    default: break;
  }
  throw std::runtime_error(label + ": unsupported input kind " + std::string(to_string(tag)));
}

/// Prints (when `print`) and writes (when `output_dir` is not empty) the method's outputs.
void report_outputs(Method& method, const std::string& output_dir, bool print) {
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) throw std::runtime_error("cannot create " + output_dir + ": " + ec.message());
  }
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    clear_error_message();
    Result<const EValue*> value = method.output_value(i);
    if (!value.ok()) throw_if_error(value.error(), "cannot read output " + std::to_string(i));
    const EValue& v = **value;
    NpyArray array;
    std::string line = "output " + std::to_string(i) + ": ";
    if (v.is_tensor()) {
      const TensorView& t = v.to_tensor();
      if (t.name != nullptr && t.name[0] != '\0') line = "output " + std::to_string(i) + " (" + t.name + "): ";
      const uint64_t numel = t.numel();
      line += std::string(to_string(t.dtype)) + " " + shape_string(t.shape()) + " = [";
      const uint64_t shown = numel < kValuesShown ? numel : kValuesShown;
      for (uint64_t k = 0; k < shown; ++k) {
        if (k) line += ", ";
        line += element_string(t.dtype, static_cast<const uint8_t*>(t.data), k);
      }
      if (numel > shown) line += ", ... (" + std::to_string(numel) + " values)";
      line += "]";
      array.dtype = t.dtype;
      array.shape.assign(t.sizes, t.sizes + t.rank);
      uint64_t nbytes = 0;
      if (!dtype_nbytes(t.dtype, numel, &nbytes) || nbytes > t.nbytes) {
        throw std::runtime_error("output " + std::to_string(i) + ": byte size does not match its shape");
      }
      const uint8_t* data = static_cast<const uint8_t*>(t.data);
      if (nbytes > 0) array.data.assign(data, data + nbytes);
    } else if (v.is_int()) {
      line += "int " + std::to_string(v.to_int());
      array.dtype = DType::I64;
      const int64_t x = v.to_int();
      array.data.resize(8);
      std::memcpy(array.data.data(), &x, 8);
    } else if (v.is_double()) {
      line += "double " + std::to_string(v.to_double());
      array.dtype = DType::F32;
      const float x = static_cast<float>(v.to_double());
      array.data.resize(4);
      std::memcpy(array.data.data(), &x, 4);
    } else if (v.is_bool()) {
      line += std::string("bool ") + (v.to_bool() ? "true" : "false");
      array.dtype = DType::Bool;
      array.data = {static_cast<uint8_t>(v.to_bool() ? 1 : 0)};
    } else {
      line += to_string(v.tag);
    }
    if (print) std::printf("%s\n", line.c_str());
    if (!output_dir.empty() && (v.is_tensor() || v.is_int() || v.is_double() || v.is_bool())) {
      const std::string path = (std::filesystem::path(output_dir) /
                                ("output_" + std::to_string(i) + ".npy")).string();
      write_npy(path, array);
    }
  }
}

}  // namespace

int cmd_run(const RunOptions& options) {
  Module module;
  std::string method_name;
  Method& method = load_chosen_method(module, options.model, options.method, &method_name);
  MethodMeta meta = method.meta();
  const size_t num_inputs = meta.num_inputs();

  // One set of --input files for every run, or (with --repeat N) N sets, one per run.
  const bool per_run = options.repeat > 1 && num_inputs > 0 &&
                       options.inputs.size() == num_inputs * options.repeat;
  if (!options.inputs.empty() && options.inputs.size() != num_inputs && !per_run) {
    throw std::runtime_error(
        "method '" + method_name + "' takes " + std::to_string(num_inputs) + " inputs, " +
        std::to_string(options.inputs.size()) + " --input files given" +
        (options.repeat > 1 ? " (with --repeat " + std::to_string(options.repeat) + ": " +
                                  std::to_string(num_inputs) + " or " +
                                  std::to_string(num_inputs * options.repeat) + ")"
                            : ""));
  }
  if (options.inputs.empty() && !options.random && !options.ones && num_inputs > 0) {
    throw std::runtime_error("method '" + method_name + "' takes " + std::to_string(num_inputs) +
                             " inputs: give --input FILE.npy for each, or --random or --ones");
  }

  // Input bytes must stay alive until execute() returns (caller-bound inputs point at them).
  std::vector<NpyArray> input_arrays(num_inputs);
  std::vector<TensorView> views(num_inputs);
  std::mt19937_64 rng(options.seed);
  auto set_inputs = [&](size_t first) {
    for (size_t i = 0; i < num_inputs; ++i) {
      Result<EValue::Tag> tag = meta.input_tag(i);
      if (!tag.ok()) throw_if_error(tag.error(), "cannot read input " + std::to_string(i));
      if (*tag != EValue::Tag::Tensor) {
        const std::string label = input_label(i, nullptr);
        EValue value;
        if (!options.inputs.empty()) {
          value = scalar_from_npy(*tag, read_npy(options.inputs[first + i]), label + " from " + options.inputs[first + i]);
        } else if (*tag == EValue::Tag::Int) {
          value = EValue::from_int(1);
        } else if (*tag == EValue::Tag::Double) {
          value = EValue::from_double(1.0);
        } else if (*tag == EValue::Tag::Bool) {
          value = EValue::from_bool(true);
        } else {
          throw std::runtime_error(label + ": unsupported input kind " + std::string(to_string(*tag)));
        }
        clear_error_message();
        throw_if_error(method.set_input(i, value), "cannot set " + label);
        continue;
      }
      Result<TensorInfo> info = meta.input_tensor_info(i);
      if (!info.ok()) throw_if_error(info.error(), "cannot read input " + std::to_string(i));
      const std::string label = input_label(i, info->name);
      NpyArray& array = input_arrays[i];
      const std::string expected = std::string(to_string(info->dtype)) + " " + shape_string(info->sizes);
      if (!options.inputs.empty()) {
        array = read_npy(options.inputs[first + i]);
        const std::string found = std::string(to_string(array.dtype)) + " " +
            shape_string(Span<const int64_t>(array.shape.data(), array.shape.size()));
        // A dynamic input may be any size within its bounds: set_input checks those.
        if (found != expected && info->dim_symbols.empty()) {
          throw std::runtime_error(label + " from " + options.inputs[first + i] + ": expected " + expected +
                                   ", found " + found);
        }
      } else {
        array.dtype = info->dtype;
        array.shape.assign(info->sizes.begin(), info->sizes.end());
        array.data = generated_input(info->dtype, array.numel(), options.ones, rng, label);
      }
      TensorView& view = views[i];
      view.dtype = array.dtype;
      view.rank = static_cast<uint32_t>(array.shape.size());
      view.sizes = array.shape.data();
      // set_input refuses null data even for empty tensors; point at something valid.
      static uint8_t empty_byte = 0;
      view.data = array.data.empty() ? &empty_byte : array.data.data();
      view.nbytes = array.data.size();
      view.name = info->name;
      clear_error_message();
      throw_if_error(method.set_input(i, view), "cannot set " + label);
    }
  };
  set_inputs(0);

  double ms = 0;
  for (uint32_t run = 0; run < options.repeat; ++run) {
    if (per_run && run > 0) set_inputs(run * num_inputs);
    clear_error_message();
    const auto start = std::chrono::steady_clock::now();
    const Error status = method.execute();
    const auto end = std::chrono::steady_clock::now();
    throw_if_error(status, "execution of method '" + method_name + "' failed" +
                               (options.repeat > 1 ? " (run " + std::to_string(run) + ")" : ""));
    ms = std::chrono::duration<double, std::milli>(end - start).count();
    std::string dir = options.output_dir;
    if (!dir.empty() && options.repeat > 1) {
      dir = (std::filesystem::path(dir) / ("run_" + std::to_string(run))).string();
    }
    const bool last = run + 1 == options.repeat;
    if (last) {
      std::printf("method '%s': %zu inputs, %zu outputs%s\n", method_name.c_str(), num_inputs,
                  method.num_outputs(),
                  options.repeat > 1 ? (", run " + std::to_string(run) + " of " +
                                        std::to_string(options.repeat)).c_str()
                                     : "");
    }
    report_outputs(method, dir, last);
  }
  for (size_t i = 0; i < method.num_delegate_calls(); ++i) {
    Result<DelegatePath> path = method.delegate_path(i);
    if (path.ok()) {
      std::printf("delegate call %zu: %s\n", i,
                  *path == DelegatePath::Backend ? "backend" : "portable fallback");
    }
  }
  std::printf("execute: %.3f ms\n", ms);
  return 0;
}

}  // namespace tern::cli
