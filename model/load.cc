#include "model/load.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "frontend/channels_last.h"
#include "frontend/onnx_import.h"
#include "frontend/winograd.h"

namespace tessera {

bool IsModelPath(const std::string& spec) { return absl::EndsWith(spec, ".onnx"); }

namespace {

// Converts, fuses and extracts the tasks of `m`'s imported graph.
absl::StatusOr<LoadedModel> FinishLoad(LoadedModel m, bool fuse, bool winograd) {
  // The compiled model runs its convolutions channels-last, the wide 3x3 ones as Winograd
  // GEMMs; the unfused graph stays as the model states it (the reference of --check).
  if (fuse) {
    TESSERA_ASSIGN_OR_RETURN(m.graph, ConvertToChannelsLast(m.graph));
    if (winograd) {
      TESSERA_ASSIGN_OR_RETURN(m.graph, RewriteWinogradConvolutions(m.graph));
    }
  }
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph, {fuse});
  if (!fused.ok()) {
    return absl::Status(fused.status().code(),
                        absl::StrCat(m.path, ": ", fused.status().message()));
  }
  m.fused = std::move(*fused);
  m.tasks = ExtractTasks(m.fused);
  for (const ExtractedTask& t : m.tasks) m.total_flops += t.weight * t.flops;
  return m;
}

OnnxImportOptions ImportOptions(const InputShapes& input_shapes) {
  OnnxImportOptions options;
  options.input_shapes = input_shapes;
  return options;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModel(const std::string& path, bool fuse,
                                      const InputShapes& input_shapes, bool winograd) {
  LoadedModel m;
  m.path = path;
  TESSERA_ASSIGN_OR_RETURN(m.graph, ImportOnnxFile(path, ImportOptions(input_shapes)));
  return FinishLoad(std::move(m), fuse, winograd);
}

absl::StatusOr<LoadedModel> LoadModelBytes(const std::string& bytes, const std::string& label,
                                           bool fuse, const InputShapes& input_shapes,
                                           bool winograd) {
  LoadedModel m;
  m.path = label;
  TESSERA_ASSIGN_OR_RETURN(m.graph, ImportOnnxBytes(bytes, label, ImportOptions(input_shapes)));
  return FinishLoad(std::move(m), fuse, winograd);
}

absl::StatusOr<InputShapes> ParseInputShapes(const std::vector<std::string>& specs) {
  InputShapes shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    auto bad = [&]() {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-shape ", spec, ": expected NAME=D0,D1,... with positive extents"));
    };
    if (eq == std::string::npos || eq == 0) return bad();
    std::vector<int64_t> dims;
    for (absl::string_view part : absl::StrSplit(spec.substr(eq + 1), ',', absl::SkipEmpty())) {
      int64_t d;
      if (!absl::SimpleAtoi(part, &d) || d <= 0) return bad();
      dims.push_back(d);
    }
    if (!shapes.emplace(spec.substr(0, eq), dims).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input-shape: ", spec.substr(0, eq), " is given twice"));
    }
  }
  return shapes;
}

}  // namespace tessera
