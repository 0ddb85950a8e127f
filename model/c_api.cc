// The C API of libtessera_runtime (model/c_api.h) over the executor: absl::Status becomes a
// tessera_status and a per-thread message, and nothing (not even std::bad_alloc) crosses the C
// boundary as an exception.
#include "model/c_api.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/executor.h"

struct tessera_model {
  std::unique_ptr<tessera::Executor> executor;
};

namespace {

using tessera::DataType;
using tessera::PlanValue;

thread_local std::string last_error;

tessera_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  // The header's codes are abseil's numbers; one the header does not name is still that number.
  return static_cast<tessera_status>(status.code());
}

tessera_status Fail(tessera_status code, const std::string& message) {
  last_error = message;
  return code;
}

tessera_dtype DtypeOf(DataType t) {
  if (t == DataType::Float32()) return TESSERA_FLOAT32;
  if (t == DataType::UInt8()) return TESSERA_UINT8;
  if (t == DataType::Int8()) return TESSERA_INT8;
  if (t == DataType::Int32()) return TESSERA_INT32;
  if (t == DataType::Int64()) return TESSERA_INT64;
  if (t == DataType::Bool()) return TESSERA_BOOL;
  if (t == DataType::Float16()) return TESSERA_FLOAT16;
  if (t == DataType::Float64()) return TESSERA_FLOAT64;
  if (t == DataType::BFloat16()) return TESSERA_BFLOAT16;
  return TESSERA_OTHER;
}

size_t BytesOf(const PlanValue& v) {
  int64_t n = v.dtype.bytes();
  for (int64_t d : v.shape) n *= d;
  return static_cast<size_t>(n);
}

using Tensors = std::vector<std::pair<std::string, PlanValue>>;

tessera_status Info(const char* what, const tessera_model* model,
                    const Tensors& (*pick)(const tessera_model*), size_t index,
                    tessera_tensor_info* info) {
  if (model == nullptr || info == nullptr) {
    return Fail(TESSERA_INVALID_ARGUMENT, absl::StrCat(what, ": model or info is NULL"));
  }
  const Tensors& tensors = pick(model);
  if (index >= tensors.size()) {
    return Fail(TESSERA_INVALID_ARGUMENT,
                absl::StrCat(what, ": index ", index, " out of range (", tensors.size(), ")"));
  }
  const auto& [name, v] = tensors[index];
  info->name = name.c_str();
  info->dtype = DtypeOf(v.dtype);
  info->rank = v.shape.size();
  info->shape = v.shape.data();
  info->bytes = BytesOf(v);
  return TESSERA_OK;
}

tessera_status IndexOf(const char* what, const Tensors& tensors, const char* name, size_t* index) {
  if (name == nullptr || index == nullptr) {
    return Fail(TESSERA_INVALID_ARGUMENT, absl::StrCat(what, ": name or index is NULL"));
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].first == name) {
      *index = i;
      return TESSERA_OK;
    }
    names.push_back(tensors[i].first);
  }
  return Fail(TESSERA_NOT_FOUND, absl::StrCat(what, ": the model has no ", name, " (it has ",
                                              absl::StrJoin(names, ", "), ")"));
}

const Tensors& Inputs(const tessera_model* m) { return m->executor->plan().inputs; }
const Tensors& Outputs(const tessera_model* m) { return m->executor->plan().outputs; }

}  // namespace

extern "C" {

const char* tessera_last_error(void) { return last_error.c_str(); }

const char* tessera_status_name(tessera_status status) {
  switch (status) {
    case TESSERA_OK:
      return "OK";
    case TESSERA_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case TESSERA_NOT_FOUND:
      return "NOT_FOUND";
    case TESSERA_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case TESSERA_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case TESSERA_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case TESSERA_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

void tessera_model_options_init(tessera_model_options* options) {
  if (options != nullptr) options->num_threads = 0;
}

tessera_status tessera_model_load(const char* dir, tessera_model** model) {
  return tessera_model_load_with_options(dir, nullptr, model);
}

tessera_status tessera_model_load_with_options(const char* dir,
                                               const tessera_model_options* options,
                                               tessera_model** model) {
  if (model == nullptr) return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_load: model is NULL");
  *model = nullptr;
  if (dir == nullptr) return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_load: dir is NULL");
  tessera::ExecutorOptions executor_options;
  if (options != nullptr) {
    if (options->num_threads < 0) {
      return Fail(TESSERA_INVALID_ARGUMENT, absl::StrCat("tessera_model_load: num_threads ",
                                                         options->num_threads, " is negative"));
    }
    executor_options.num_threads = options->num_threads;
  }
  try {
    absl::StatusOr<std::unique_ptr<tessera::Executor>> executor =
        tessera::Executor::Load(dir, executor_options);
    if (!executor.ok()) return Fail(executor.status());
    *model = new tessera_model{*std::move(executor)};
    return TESSERA_OK;
  } catch (const std::bad_alloc&) {
    return Fail(TESSERA_RESOURCE_EXHAUSTED, absl::StrCat(dir, ": out of memory"));
  }
}

void tessera_model_free(tessera_model* model) { delete model; }

size_t tessera_model_num_inputs(const tessera_model* model) {
  return model == nullptr ? 0 : Inputs(model).size();
}

size_t tessera_model_num_outputs(const tessera_model* model) {
  return model == nullptr ? 0 : Outputs(model).size();
}

tessera_status tessera_model_input_info(const tessera_model* model, size_t index,
                                        tessera_tensor_info* info) {
  return Info("tessera_model_input_info", model, &Inputs, index, info);
}

tessera_status tessera_model_output_info(const tessera_model* model, size_t index,
                                         tessera_tensor_info* info) {
  return Info("tessera_model_output_info", model, &Outputs, index, info);
}

tessera_status tessera_model_input_index(const tessera_model* model, const char* name,
                                         size_t* index) {
  if (model == nullptr) return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_input_index: NULL");
  return IndexOf("input", Inputs(model), name, index);
}

tessera_status tessera_model_output_index(const tessera_model* model, const char* name,
                                          size_t* index) {
  if (model == nullptr) return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_output_index: NULL");
  return IndexOf("output", Outputs(model), name, index);
}

tessera_status tessera_model_run(tessera_model* model, const void* const* inputs,
                                 const size_t* input_bytes, void* const* outputs,
                                 const size_t* output_bytes) {
  if (model == nullptr) return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_run: model is NULL");
  tessera::Executor& ex = *model->executor;
  const Tensors& ins = Inputs(model);
  const Tensors& outs = Outputs(model);
  // The arrays may be NULL only where there is nothing to pass.
  if ((!ins.empty() && (inputs == nullptr || input_bytes == nullptr)) ||
      (!outs.empty() && (outputs == nullptr || output_bytes == nullptr))) {
    return Fail(TESSERA_INVALID_ARGUMENT, "tessera_model_run: an argument is NULL");
  }
  // Every size first: a mistake anywhere must not leave a half-written run.
  for (const auto& [tensors, data, bytes, what] :
       {std::make_tuple(&ins, reinterpret_cast<const void* const*>(inputs), input_bytes, "input"),
        std::make_tuple(&outs, reinterpret_cast<const void* const*>(outputs), output_bytes,
                        "output")}) {
    for (size_t i = 0; i < tensors->size(); ++i) {
      const auto& [name, v] = (*tensors)[i];
      if (data[i] == nullptr) {
        return Fail(TESSERA_INVALID_ARGUMENT,
                    absl::StrCat("tessera_model_run: ", what, " ", name, ": buffer is NULL"));
      }
      if (bytes[i] != BytesOf(v)) {
        return Fail(TESSERA_INVALID_ARGUMENT,
                    absl::StrCat("tessera_model_run: ", what, " ", name, ": ", bytes[i],
                                 " bytes, expects ", BytesOf(v), " (", v.dtype.ToString(), " [",
                                 absl::StrJoin(v.shape, ", "), "])"));
      }
    }
  }
  try {
    for (size_t i = 0; i < ins.size(); ++i) {
      const PlanValue& v = ins[i].second;
      absl::Status s =
          ex.SetInput(static_cast<int>(i),
                      tessera::NDArray::View(v.dtype, v.shape, const_cast<void*>(inputs[i])));
      if (!s.ok()) return Fail(s);
    }
    absl::Status s = ex.Run();
    if (!s.ok()) return Fail(s);
    for (size_t i = 0; i < outs.size(); ++i) {
      std::memcpy(outputs[i], ex.OutputData(static_cast<int>(i)), output_bytes[i]);
    }
    return TESSERA_OK;
  } catch (const std::bad_alloc&) {
    return Fail(TESSERA_RESOURCE_EXHAUSTED, "tessera_model_run: out of memory");
  }
}

}  // extern "C"
