// Task extraction: the distinct functions of a fused graph, deduplicated by structural hash
// (and structural equality, so a hash collision never merges two workloads), each with its
// weight (how many times the model calls it) and floating-point work. These are the tasks a
// tuning job tunes; the job's objective is the model's latency, sum of weight x task latency.
#ifndef TESSERA_FRONTEND_TASK_EXTRACTION_H_
#define TESSERA_FRONTEND_TASK_EXTRACTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/fuse_ops.h"

namespace tessera {

struct ExtractedTask {
  std::string name;  // the name of its first function: "fused_conv_add_relu_0"
  PrimFunc func;     // that function, renamed to `name`
  uint64_t structural_hash = 0;
  int weight = 0;              // number of functions of the model that are this task
  double flops = 0;            // of one call (ir/flops.h)
  std::vector<int> functions;  // indices into FusedGraph::functions
};

// Tasks in order of first occurrence.
std::vector<ExtractedTask> ExtractTasks(const FusedGraph& fused);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_TASK_EXTRACTION_H_
