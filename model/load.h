// Loading a model: a path ending in .onnx is a model; loading one imports it
// (frontend/onnx_import.h), fuses it (frontend/fuse_ops.h) and extracts its tasks
// (frontend/task_extraction.h). Used by `tasks`, `tune`, `compile`, `exec --check` and `report`.
#ifndef TESSERA_MODEL_LOAD_H_
#define TESSERA_MODEL_LOAD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/fuse_ops.h"
#include "frontend/model_graph.h"
#include "frontend/task_extraction.h"

namespace tessera {

// Whether a WORKLOAD argument names a model file (it ends in .onnx).
bool IsModelPath(const std::string& spec);

struct LoadedModel {
  std::string path;
  Graph graph;
  FusedGraph fused;
  std::vector<ExtractedTask> tasks;
  double total_flops = 0;  // of one inference: sum over tasks of weight x flops
};

using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Errors as ImportOnnxFile and FuseGraph, naming the file. `input_shapes` replace the shapes
// of those graph inputs (OnnxImportOptions::input_shapes). With `fuse`, the graph is moved
// channels-last and, with `winograd`, its wide 3x3 convolutions are rewritten as Winograd GEMMs
// (frontend/winograd.h; the results differ by rounding) before fusion.
absl::StatusOr<LoadedModel> LoadModel(const std::string& path, bool fuse = true,
                                      const InputShapes& input_shapes = {}, bool winograd = true);
// LoadModel of a model's bytes (a serialized ModelProto, as a server receives it); `label`
// stands for the path in `path` and in errors.
absl::StatusOr<LoadedModel> LoadModelBytes(const std::string& bytes, const std::string& label,
                                           bool fuse = true, const InputShapes& input_shapes = {},
                                           bool winograd = true);

// Parses --input-shape values "NAME=D0,D1,..." (a rank-0 input: "NAME="). kInvalidArgument
// naming the malformed value or a repeated name.
absl::StatusOr<InputShapes> ParseInputShapes(const std::vector<std::string>& specs);

}  // namespace tessera

#endif  // TESSERA_MODEL_LOAD_H_
