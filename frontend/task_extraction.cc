#include "frontend/task_extraction.h"

#include "ir/flops.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"

namespace tessera {

std::vector<ExtractedTask> ExtractTasks(const FusedGraph& fused) {
  std::vector<ExtractedTask> tasks;
  for (size_t i = 0; i < fused.functions.size(); ++i) {
    const FusedFunction& f = fused.functions[i];
    const uint64_t hash = StructuralHash(f.func);
    ExtractedTask* found = nullptr;
    for (ExtractedTask& t : tasks) {
      if (t.structural_hash == hash && StructuralEqual(t.func, f.func)) {
        found = &t;
        break;
      }
    }
    if (found == nullptr) {
      ExtractedTask t;
      t.name = f.name;
      t.func = f.func;
      t.structural_hash = hash;
      t.flops = EstimateFlops(f.func);
      tasks.push_back(std::move(t));
      found = &tasks.back();
    }
    found->weight += 1;
    found->functions.push_back(static_cast<int>(i));
  }
  return tasks;
}

}  // namespace tessera
