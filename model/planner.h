// Planning a fused model (the compile side of model/plan.h): which storage each value gets and
// where. Constants lie back to back in the weights blob; intermediates share one arena in which
// values whose lifetimes (first write .. last read, in calls) do not overlap share bytes (first
// fit over offsets, 64-byte aligned).
#ifndef TESSERA_MODEL_PLANNER_H_
#define TESSERA_MODEL_PLANNER_H_

#include <string>
#include <vector>

#include "frontend/fuse_ops.h"
#include "frontend/model_graph.h"
#include "frontend/task_extraction.h"
#include "model/plan.h"

namespace tessera {

// Plans `fused` (a fusion of `graph`); call i runs fused.functions[i]; `tasks` (from
// ExtractTasks(fused)) gives each call its task.
ModelPlan PlanModel(const Graph& graph, const FusedGraph& fused,
                    const std::vector<ExtractedTask>& tasks);

// The constants' bytes, at their storages' offsets (weights_bytes long).
std::string WeightsBlob(const Graph& graph, const ModelPlan& plan);

}  // namespace tessera

#endif  // TESSERA_MODEL_PLANNER_H_
