// Models on the command line (`tasks`, `tune`, `compile`, `exec`): a path ending in .onnx is a
// model; loading one imports it (frontend/onnx_import.h), fuses it (frontend/fuse_ops.h) and
// extracts its tasks (frontend/task_extraction.h).
#ifndef TESSERA_CLI_MODEL_H_
#define TESSERA_CLI_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/fuse_ops.h"
#include "frontend/model_graph.h"
#include "frontend/task_extraction.h"

namespace tessera {
namespace cli {

// Whether a WORKLOAD argument names a model file (it ends in .onnx).
bool IsModelPath(const std::string& spec);

struct LoadedModel {
  std::string path;
  Graph graph;
  FusedGraph fused;
  std::vector<ExtractedTask> tasks;
  double total_flops = 0;  // of one inference: sum over tasks of weight x flops
};

// Errors as ImportOnnxFile and FuseGraph, naming the file.
absl::StatusOr<LoadedModel> LoadModel(const std::string& path, bool fuse = true);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_MODEL_H_
