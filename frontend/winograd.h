// Winograd convolutions (Lavin and Gray's F(4x4, 3x3)): a channels-last 3x3 convolution of
// stride 1 computed as 36 GEMMs on transformed tiles, with 36 multiplications per 4 x 4 output
// tile and channel pair where the direct convolution takes 144.
//
// A convolution is rewritten into four nodes, each an anchor and so a kernel of its own:
//   - WinogradPad: the input zero-padded as the convolution pads it, and up to whole tiles, so
//     that the transform reads its windows unconditionally (inputs above kFoldPaddingBytes are
//     read in place instead, the padding a factor 0 on clamped loads);
//   - WinogradInput: V[e, p, c] = the 6 x 6
//     window of tile p transformed, BT (x) BT [e, window] * x[window, c], one expression per
//     point e with only its nonzero coefficients;
//   - WinogradGemm: M[e, p, o] = sum_c V[e, p, c] * U[e, c, o], where the weights
//     U = G w G^T are transformed once here, at compile time (36 floats where the kernel has 9);
//   - WinogradOutput (the convolution's epilogues fuse into it): the 4 x 4 output
//     tile y[tile, o] = AT (x) AT [tile position, e] * M[e, p, o] (+ the bias), cropped to H x W.
// The transforms select their point (`select(e == 0, .., select(e == 1, ..))`), which the CPU
// default unrolls and code generation expands (codegen/unroll_selects.h). The rewrite
// reassociates the sums: the results differ from the direct convolution's by rounding
// (docs/models.md "Winograd convolutions").
#ifndef TESSERA_FRONTEND_WINOGRAD_H_
#define TESSERA_FRONTEND_WINOGRAD_H_

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"

namespace tessera {

// Whether a channels-last convolution with this window, input [N, H, W, C] and weights
// [3, 3, C, O] is rewritten: float32, kernel 3 x 3, stride and dilation 1, one pixel of padding
// on every side, one group, at least kMinWinogradInputChannels input and
// kMinWinogradOutputChannels output channels and kMinWinogradTiles output tiles of 4 x 4 (a
// height or width that 4 does not divide takes a last tile cropped). Below those the four
// kernels cost more than the multiplications they save (docs/models.md "Winograd convolutions":
// with 4 tiles, a 7 x 7 image, U = 36 x C x O floats streams from memory for a GEMM of 4 rows;
// the input transform of 3 channels would cost more than the 3-deep GEMM saves).
inline constexpr int64_t kMinWinogradInputChannels = 32;
inline constexpr int64_t kMinWinogradOutputChannels = 32;
inline constexpr int64_t kMinWinogradTiles = 16;
// Inputs larger than this are read by the input transform in place, without a WinogradPad
// copy: the copy would stream them through memory twice (the U-Net's 128 x 128 x 96 input: a
// 238 us copy, the transform 768 us in place against 720 on the copy); below, the transform's
// index clamps cost more than the copy (ResNet-18's transforms and pads 662-718 us in all, in
// place 1.26-1.32 ms).
inline constexpr int64_t kFoldPaddingBytes = 2 << 20;
bool WantsWinograd(const Conv2dWindow& window, const std::vector<int64_t>& input_nhwc,
                   const std::vector<int64_t>& weights_hwio, DataType dtype);

// The graph with every convolution that WantsWinograd (nodes with `conv2d` set and constant
// weights) rewritten as above, computing the same outputs up to rounding; other nodes, inputs
// and outputs unchanged. Inputs of more than `fold_padding_bytes` are read in place.
absl::StatusOr<Graph> RewriteWinogradConvolutions(const Graph& graph,
                                                  int64_t fold_padding_bytes = kFoldPaddingBytes);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_WINOGRAD_H_
