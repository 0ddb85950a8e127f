// Winograd convolutions (Lavin and Gray's F(4x4, 3x3)): a channels-last 3x3 convolution of
// stride 1 computed as 36 GEMMs on transformed tiles, with 36 multiplications per 4 x 4 output
// tile and channel pair where the direct convolution takes 144.
//
// A convolution is rewritten into three nodes:
//   - WinogradInput (injective): V[p, e, c] = sum over the 6 x 6 input window of tile p of
//     BT (x) BT [e, window] * x[window, c], the window zero-padded as the convolution pads;
//   - WinogradGemm (anchor): M[p, e, o] = sum_c V[p, e, c] * U[e, c, o], where the weights
//     U = G w G^T are transformed once here, at compile time (36 floats where the kernel has 9);
//   - WinogradOutput (anchor, so that the convolution's epilogues fuse into it): the 4 x 4 output
//     tile y[tile, o] = AT (x) AT [tile position, e] * M[p, e, o] (+ the bias).
// The transform matrices enter as small constants. The rewrite reassociates the sums: the
// results differ from the direct convolution's by rounding (docs/models.md "Winograd").
#ifndef TESSERA_FRONTEND_WINOGRAD_H_
#define TESSERA_FRONTEND_WINOGRAD_H_

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"

namespace tessera {

// Whether a channels-last convolution with this window, input [N, H, W, C] and weights
// [3, 3, C, O] is rewritten: float32, kernel 3 x 3, stride and dilation 1, one pixel of padding
// on every side, one group, H and W multiples of 4, at least kMinWinogradInputChannels input and
// kMinWinogradOutputChannels output channels and kMinWinogradTiles output tiles. Below those the
// four kernels cost more than the multiplications they save (docs/models.md "Winograd": the
// small bench CNN's 32 -> 32 channels and the U-Net's 96 -> 32 ran slower; the GEMM's
// 32 columns run below 150 GFLOP/s while the input transform costs as much as with 64).
inline constexpr int64_t kMinWinogradInputChannels = 32;
inline constexpr int64_t kMinWinogradOutputChannels = 64;
inline constexpr int64_t kMinWinogradTiles = 32;
bool WantsWinograd(const Conv2dWindow& window, const std::vector<int64_t>& input_nhwc,
                   const std::vector<int64_t>& weights_hwio, DataType dtype);

// The graph with every convolution that WantsWinograd (nodes with `conv2d` set and constant
// weights) rewritten as above, computing the same outputs up to rounding; other nodes, inputs
// and outputs unchanged.
absl::StatusOr<Graph> RewriteWinogradConvolutions(const Graph& graph);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_WINOGRAD_H_
