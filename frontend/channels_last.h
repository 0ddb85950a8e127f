// A model's layout: runs its 2-D convolutions, pools and what lies between them on
// channels-last (NHWC) data, the layout in which the CPU kernels are fastest
// (docs/default-schedules.md: the tiled convolution and depthwise nests vectorize over
// channels), whatever layout the model was exported in.
//
// Every node with a channels-last form (GraphNode::channels_last) whose data comes in NHWC,
// and every convolution and pool, is rewritten to that form: its constant inputs are permuted
// once here (weights to [KH, KW, I, O], per-channel constants to [1, 1, 1, C]), so no kernel
// converts them. An NCHW activation feeding such a node is transposed once (a graph input, the
// model's first convolution), and an NHWC result read by a node without a channels-last form,
// by a view (Flatten, Reshape) or as a graph output is transposed back once; where that
// permutation keeps the order of the elements (a global pool's N x 1 x 1 x C result) the NCHW
// value is a view of the NHWC one and costs nothing. Values nothing reads any more (the NCHW
// weights) are dropped.
#ifndef TESSERA_FRONTEND_CHANNELS_LAST_H_
#define TESSERA_FRONTEND_CHANNELS_LAST_H_

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"

namespace tessera {

// The graph with its convolutions and pools on channels-last data, computing the same outputs
// from the same inputs (graph inputs and outputs keep their ids, names, shapes and order).
// kInvalidArgument when a node's channels-last form does not fit its inputs (a bug of the form).
absl::StatusOr<Graph> ConvertToChannelsLast(const Graph& graph);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_CHANNELS_LAST_H_
