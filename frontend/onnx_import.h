// The ONNX importer: reads a serialized ModelProto (Debian's libonnx-dev messages) into a
// Graph (frontend/model_graph.h) whose operators are compute-DSL functions. Static shapes
// only: every graph input needs fixed dimensions (from the file or OnnxImportOptions), and every
// intermediate shape is inferred
// here from the operators' semantics (value_info in the file is not needed). Initializers
// become constants of the graph; nodes whose inputs are all constant (the Shape arithmetic
// exporters emit, weight transforms) are evaluated at import with the interpreter, so only
// data-dependent work remains. Supported operators and opsets: docs/models.md.
//
// Errors are absl::Status values, never crashes: kInvalidArgument for a file that is not an
// ONNX model or is truncated, a dynamic dimension, an opset outside [kMinOnnxOpset,
// kMaxOnnxOpset], malformed nodes; kUnimplemented for an operator, attribute or data type
// outside the supported set. Messages about a node name it and its op type:
//   "node 'conv1' (Conv): unsupported attribute auto_pad=SAME_UPPER".
#ifndef TESSERA_FRONTEND_ONNX_IMPORT_H_
#define TESSERA_FRONTEND_ONNX_IMPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"

namespace tessera {

inline constexpr int kMinOnnxOpset = 11;
inline constexpr int kMaxOnnxOpset = 21;

struct OnnxImportOptions {
  // Shapes of graph inputs by name, replacing the file's: fixes dynamic dimensions (a batch
  // exported as "N"). kInvalidArgument for a name that is not an input, a rank that differs
  // from the declared one, or an extent that contradicts a fixed declared dimension.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Reads and imports the model file at `path` (errors name the file).
absl::StatusOr<Graph> ImportOnnxFile(const std::string& path,
                                     const OnnxImportOptions& options = {});
// Imports a serialized ModelProto; `label` names it in errors.
absl::StatusOr<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& label,
                                      const OnnxImportOptions& options = {});

// The operator types the importer knows, sorted.
std::vector<std::string> SupportedOnnxOperators();

}  // namespace tessera

#endif  // TESSERA_FRONTEND_ONNX_IMPORT_H_
