// A header-only C++ wrapper over the runtime's C API (model/c_api.h; installed as
// <tessera/runtime.h>): RAII for the model, std::string names and std::vector shapes.
//
// Errors are exceptions (tessera::runtime::Error, carrying the C API's code and message), unlike
// the rest of Tessera's C++: this header compiles into the application, and absl::Status here
// would tie the application to our abseil version and build flags (abseil has no stable ABI);
// exceptions are the standard C++ way and, as in onnxruntime's C++ API, cross no library
// boundary: the C API below never throws.
#ifndef TESSERA_MODEL_RUNTIME_H_
#define TESSERA_MODEL_RUNTIME_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "c_api.h"

namespace tessera {
namespace runtime {

class Error : public std::runtime_error {
 public:
  Error(tessera_status code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  tessera_status code() const { return code_; }

 private:
  tessera_status code_;
};

struct TensorInfo {
  std::string name;
  tessera_dtype dtype = TESSERA_OTHER;
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

class Model {
 public:
  // Loads the directory written by `tessera compile`; num_threads 0: the cores other
  // processes leave (c_api.h). Throws Error (TESSERA_NOT_FOUND for a missing directory, ...).
  explicit Model(const std::string& dir, int num_threads = 0) {
    tessera_model_options options;
    tessera_model_options_init(&options);
    options.num_threads = num_threads;
    Check(tessera_model_load_with_options(dir.c_str(), &options, &model_));
    for (size_t i = 0; i < tessera_model_num_inputs(model_); ++i) {
      tessera_tensor_info info;
      Check(tessera_model_input_info(model_, i, &info));
      inputs_.push_back(ToInfo(info));
    }
    for (size_t i = 0; i < tessera_model_num_outputs(model_); ++i) {
      tessera_tensor_info info;
      Check(tessera_model_output_info(model_, i, &info));
      outputs_.push_back(ToInfo(info));
    }
  }
  ~Model() { tessera_model_free(model_); }
  Model(Model&& other) noexcept
      : model_(std::exchange(other.model_, nullptr)),
        inputs_(std::move(other.inputs_)),
        outputs_(std::move(other.outputs_)) {}
  Model& operator=(Model&& other) noexcept {
    std::swap(model_, other.model_);
    std::swap(inputs_, other.inputs_);
    std::swap(outputs_, other.outputs_);
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Model order, names as in the ONNX model.
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }

  // Runs once: inputs[i] and outputs[i] are contiguous buffers of inputs()[i].bytes and
  // outputs()[i].bytes bytes. Throws Error for a wrong number of buffers or a failed run.
  void Run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
    if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size()) {
      throw Error(TESSERA_INVALID_ARGUMENT,
                  "Run: " + std::to_string(inputs.size()) + " inputs and " +
                      std::to_string(outputs.size()) + " outputs for a model of " +
                      std::to_string(inputs_.size()) + " and " + std::to_string(outputs_.size()));
    }
    std::vector<size_t> in_bytes, out_bytes;
    for (const TensorInfo& t : inputs_) in_bytes.push_back(t.bytes);
    for (const TensorInfo& t : outputs_) out_bytes.push_back(t.bytes);
    Check(tessera_model_run(model_, inputs.data(), in_bytes.data(), outputs.data(),
                            out_bytes.data()));
  }

  // The same for float32 models held in vectors: returns the outputs, model order. Throws Error
  // for a model with another dtype or a vector of the wrong size.
  std::vector<std::vector<float>> Run(const std::vector<std::vector<float>>& inputs) {
    for (const std::vector<TensorInfo>* tensors : {&inputs_, &outputs_}) {
      for (const TensorInfo& t : *tensors) {
        if (t.dtype != TESSERA_FLOAT32) {
          throw Error(TESSERA_INVALID_ARGUMENT,
                      "Run: " + t.name + " is not float32; pass buffers to Run(inputs, outputs)");
        }
      }
    }
    std::vector<const void*> in;
    for (const std::vector<float>& v : inputs) in.push_back(v.data());
    std::vector<std::vector<float>> outputs;
    std::vector<void*> out;
    for (const TensorInfo& t : outputs_) outputs.emplace_back(t.bytes / sizeof(float));
    for (std::vector<float>& v : outputs) out.push_back(v.data());
    if (inputs.size() == inputs_.size()) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].size() * sizeof(float) != inputs_[i].bytes) {
          throw Error(TESSERA_INVALID_ARGUMENT,
                      "Run: input " + inputs_[i].name + " has " + std::to_string(inputs[i].size()) +
                          " floats, expects " + std::to_string(inputs_[i].bytes / sizeof(float)));
        }
      }
    }
    Run(in, out);
    return outputs;
  }

 private:
  static void Check(tessera_status status) {
    if (status != TESSERA_OK) throw Error(status, tessera_last_error());
  }
  static TensorInfo ToInfo(const tessera_tensor_info& info) {
    return {info.name, info.dtype, std::vector<int64_t>(info.shape, info.shape + info.rank),
            info.bytes};
  }

  tessera_model* model_ = nullptr;
  std::vector<TensorInfo> inputs_, outputs_;
};

}  // namespace runtime
}  // namespace tessera

#endif  // TESSERA_MODEL_RUNTIME_H_
