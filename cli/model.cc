#include "cli/model.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "frontend/onnx_import.h"

namespace tessera {
namespace cli {

bool IsModelPath(const std::string& spec) { return absl::EndsWith(spec, ".onnx"); }

absl::StatusOr<LoadedModel> LoadModel(const std::string& path, bool fuse) {
  LoadedModel m;
  m.path = path;
  TESSERA_ASSIGN_OR_RETURN(m.graph, ImportOnnxFile(path));
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph, {fuse});
  if (!fused.ok()) {
    return absl::Status(fused.status().code(), absl::StrCat(path, ": ", fused.status().message()));
  }
  m.fused = std::move(*fused);
  m.tasks = ExtractTasks(m.fused);
  for (const ExtractedTask& t : m.tasks) m.total_flops += t.weight * t.flops;
  return m;
}

}  // namespace cli
}  // namespace tessera
