// Group 2 of the per-store features (docs/reference/metaschedule.md §6.2): for every buffer a store
// reads or writes, the elements it touches under each loop level, the stride of the innermost
// loop that moves it, and the kind and distance of its reuse.
//
// Regions are computed with the arithmetic analyzer's constant bounds: walking the loops from
// the innermost outward, each loop variable in turn is rebound from the point 0 to its full
// range, and the bound of every index gives the box the buffer covers under that loop (the
// outer loop variables held at 0). For affine indices this is the exact hull; fused loops
// (floordiv / floormod) get the box of the aligned case.
#include <algorithm>
#include <limits>
#include <string>

#include "cost_model/features_internal.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"

namespace tessera {
namespace features_internal {
namespace {

enum class ReuseType { kLoopMultipleRead = 0, kSerialMultipleReadWrite = 1, kNoReuse = 2 };

// Everything known about one buffer of the store.
struct BufferInfo {
  Buffer buffer;
  std::vector<const Access*> accesses;
  bool read = false;
  bool write = false;
  int64_t elem_bytes = 1;
  std::vector<int64_t> shape;    // -1 where not constant
  std::vector<int64_t> strides;  // elements per step of each dimension
  std::vector<char> uses_loop;   // per loop: some index uses its variable
  std::vector<std::vector<int64_t>> extents;  // [level][dim]
  std::vector<int64_t> numel;                 // [level]
  // Exported values.
  double bytes = 0, unique_bytes = 0, lines = 0, unique_lines = 0;
  ReuseType reuse = ReuseType::kNoReuse;
  double reuse_dis_iter = 0, reuse_dis_bytes = 0, reuse_ct = 0;
  double innermost_stride = 0;
};

std::vector<int64_t> ConstShape(const Buffer& buffer) {
  std::vector<int64_t> shape;
  for (const Expr& e : buffer.shape()) {
    const int64_t* v = AsConstInt(e);
    shape.push_back(v ? *v : -1);
  }
  return shape;
}

// Declared strides where constant, else compact row-major ones.
std::vector<int64_t> Strides(const Buffer& buffer, const std::vector<int64_t>& shape) {
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> strides(nd, 1);
  for (int d = nd - 2; d >= 0; --d) strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  const std::vector<Expr>& declared = buffer->strides;
  if (static_cast<int>(declared.size()) == nd) {
    for (int d = 0; d < nd; ++d) {
      if (const int64_t* v = AsConstInt(declared[d])) strides[d] = *v;
    }
  }
  return strides;
}

// Coefficient of each loop variable in `index` (0 where absent). Non-linear uses (fused
// loops under floordiv / floormod) count as coefficient 1.
std::vector<int64_t> LoopCoefficients(const Expr& index, const std::vector<Var>& loop_vars) {
  std::vector<int64_t> coeffs(loop_vars.size(), 0);
  std::optional<arith::LinearEquation> eq = arith::DetectLinearEquation(index, loop_vars);
  for (size_t i = 0; i < loop_vars.size(); ++i) {
    const VarNode* var = loop_vars[i].get();
    if (eq) {
      if (const int64_t* c = AsConstInt(eq->coeffs[i])) {
        coeffs[i] = *c;
        continue;
      }
    }
    coeffs[i] = UsesVar(index, [var](const VarNode* v) { return v == var; }) ? 1 : 0;
  }
  return coeffs;
}

// Fills extents/numel of every buffer for every loop level (see the file comment).
void ComputeBoxes(const std::vector<LoopInfo>& loops, arith::Analyzer* analyzer,
                  std::vector<BufferInfo>* buffers) {
  const int n = static_cast<int>(loops.size());
  for (BufferInfo& b : *buffers) {
    b.extents.assign(n + 1, {});
    b.numel.assign(n + 1, 1);
  }
  for (int level = n; level >= 0; --level) {
    if (level < n) {
      analyzer->Bind(loops[level].loop->loop_var, Range{Expr(0), Expr(loops[level].extent)});
    }
    for (BufferInfo& b : *buffers) {
      const int nd = static_cast<int>(b.shape.size());
      std::vector<int64_t> lo(nd, arith::ConstIntBound::kPosInf);
      std::vector<int64_t> hi(nd, arith::ConstIntBound::kNegInf);
      for (const Access* a : b.accesses) {
        for (int d = 0; d < nd; ++d) {
          arith::ConstIntBound bound = analyzer->ConstIntBound(a->indices[d]);
          lo[d] = std::min(lo[d], bound.min);
          hi[d] = std::max(hi[d], bound.max);
        }
      }
      std::vector<int64_t>& ext = b.extents[level];
      ext.resize(nd);
      int64_t numel = 1;
      for (int d = 0; d < nd; ++d) {
        const bool bounded = lo[d] != arith::ConstIntBound::kNegInf &&
                             hi[d] != arith::ConstIntBound::kPosInf && hi[d] >= lo[d];
        int64_t e = bounded ? hi[d] - lo[d] + 1 : std::numeric_limits<int64_t>::max();
        if (b.shape[d] > 0) e = std::min(e, b.shape[d]);
        ext[d] = std::max<int64_t>(e, 1);
        numel = arith::BoundMul(numel, ext[d]);
      }
      b.numel[level] = numel;
    }
  }
  for (const LoopInfo& loop : loops) analyzer->Bind(loop.loop->loop_var, Range{Expr(0), Expr(1)});
}

void ComputeStrideAndLines(const std::vector<LoopInfo>& loops, double prod,
                           const std::vector<std::vector<std::vector<int64_t>>>& coeffs,
                           BufferInfo* b) {
  const int n = static_cast<int>(loops.size());
  int64_t min_stride = 0;
  double prod_non_strided = 1;
  for (int i = n - 1; i >= 0; --i) {
    int64_t stride = std::numeric_limits<int64_t>::max();
    for (const std::vector<std::vector<int64_t>>& access : coeffs) {
      for (int d = static_cast<int>(access.size()) - 1; d >= 0; --d) {
        if (access[d][i] != 0) {
          stride = std::min(stride, std::abs(access[d][i]) * b->strides[d]);
          break;
        }
      }
    }
    if (stride != std::numeric_limits<int64_t>::max()) {
      min_stride = stride;
      if (i == n - 1) b->innermost_stride = static_cast<double>(stride);
      break;
    }
    prod_non_strided *= static_cast<double>(loops[i].extent);
  }
  const double eb = static_cast<double>(b->elem_bytes);
  b->bytes = eb * prod;
  b->unique_bytes = static_cast<double>(b->numel[0]) * eb;
  b->lines = std::max(1.0, prod / prod_non_strided *
                               std::min(1.0, static_cast<double>(min_stride) * eb / kCacheLineBytes));
  double continuous_bytes = 1;
  const std::vector<int64_t>& whole = b->extents[0];
  for (int d = static_cast<int>(whole.size()) - 1; d >= 0; --d) {
    if (b->shape[d] > 0 && whole[d] == b->shape[d]) {
      continuous_bytes = static_cast<double>(whole[d]) * eb;
      break;
    }
  }
  b->unique_lines = std::max(1.0, b->unique_bytes / std::min(kCacheLineBytes, continuous_bytes));
}

void ComputeReuse(const std::vector<LoopInfo>& loops, const std::vector<double>& touched_bytes,
                  double elem_bytes_sum, const TouchedLists& touched, BufferInfo* b) {
  const int n = static_cast<int>(loops.size());
  double inner_prod = 1;  // extents of the loops inside loop i
  for (int i = n - 1; i >= 0; --i) {
    const double extent = static_cast<double>(loops[i].extent);
    if (!b->uses_loop[i]) {
      b->reuse = ReuseType::kLoopMultipleRead;
      b->reuse_ct = extent;
      b->reuse_dis_iter = inner_prod;
      b->reuse_dis_bytes = i + 1 < n ? touched_bytes[i + 1] : elem_bytes_sum;
      return;
    }
    auto it = touched.find({loops[i].loop, b->buffer.get()});
    if (it != touched.end() && it->second.size() >= 2) {
      const std::vector<int64_t>& list = it->second;
      b->reuse = ReuseType::kSerialMultipleReadWrite;
      b->reuse_ct = static_cast<double>(list.size() - 1);
      b->reuse_dis_iter = static_cast<double>(*std::min_element(list.begin(), list.end())) / extent;
      b->reuse_dis_bytes = touched_bytes[i] / extent;
      return;
    }
    inner_prod *= extent;
  }
}

void Export(const BufferInfo& b, float* out) {
  out[0] = b.read && !b.write ? 1.0f : 0.0f;
  out[1] = b.write && !b.read ? 1.0f : 0.0f;
  out[2] = b.read && b.write ? 1.0f : 0.0f;
  out[3] = Slog(b.bytes);
  out[4] = Slog(b.unique_bytes);
  out[5] = Slog(b.lines);
  out[6] = Slog(b.unique_lines);
  out[7] = b.reuse == ReuseType::kLoopMultipleRead ? 1.0f : 0.0f;
  out[8] = b.reuse == ReuseType::kSerialMultipleReadWrite ? 1.0f : 0.0f;
  out[9] = b.reuse == ReuseType::kNoReuse ? 1.0f : 0.0f;
  out[10] = Slog(b.reuse_dis_iter);
  out[11] = Slog(b.reuse_dis_bytes);
  out[12] = Slog(b.reuse_ct);
  const double r = b.reuse_ct > 0 ? b.reuse_ct : 0.5;
  out[13] = Slog(b.bytes / r);
  out[14] = Slog(b.unique_bytes / r);
  out[15] = Slog(b.lines / r);
  out[16] = Slog(b.unique_lines / r);
  out[17] = Slog(b.innermost_stride);
}

}  // namespace

AccessFeatures ComputeAccessFeatures(const std::vector<Access>& accesses,
                                     const std::vector<LoopInfo>& loops, double prod,
                                     arith::Analyzer* analyzer, TouchedLists* touched) {
  const int n = static_cast<int>(loops.size());
  std::vector<Var> loop_vars;
  loop_vars.reserve(n);
  for (const LoopInfo& loop : loops) loop_vars.push_back(loop.loop->loop_var);

  // Group the accesses by buffer, in order of first appearance.
  std::vector<BufferInfo> buffers;
  for (const Access& a : accesses) {
    auto it = std::find_if(buffers.begin(), buffers.end(),
                           [&](const BufferInfo& b) { return b.buffer.same_as(a.buffer); });
    if (it == buffers.end()) {
      BufferInfo info;
      info.buffer = a.buffer;
      info.elem_bytes = a.buffer.dtype().bytes();
      info.shape = ConstShape(a.buffer);
      info.strides = Strides(a.buffer, info.shape);
      info.uses_loop.assign(n, 0);
      buffers.push_back(std::move(info));
      it = buffers.end() - 1;
    }
    it->accesses.push_back(&a);
    (a.is_write ? it->write : it->read) = true;
  }

  ComputeBoxes(loops, analyzer, &buffers);

  AccessFeatures result;
  result.touched_bytes.assign(n + 1, 0);
  double elem_bytes_sum = 0;
  for (const BufferInfo& b : buffers) {
    elem_bytes_sum += static_cast<double>(b.elem_bytes);
    for (int level = 0; level <= n; ++level) {
      result.touched_bytes[level] +=
          static_cast<double>(b.numel[level]) * static_cast<double>(b.elem_bytes);
    }
    for (int i = 0; i < n; ++i) {
      (*touched)[{loops[i].loop, b.buffer.get()}].push_back(b.numel[i]);
    }
  }

  for (BufferInfo& b : buffers) {
    // coeffs[access][dim][loop]
    std::vector<std::vector<std::vector<int64_t>>> coeffs;
    for (const Access* a : b.accesses) {
      coeffs.emplace_back();
      for (const Expr& index : a->indices) {
        coeffs.back().push_back(LoopCoefficients(index, loop_vars));
        for (int i = 0; i < n; ++i) b.uses_loop[i] |= coeffs.back().back()[i] != 0;
      }
    }
    ComputeStrideAndLines(loops, prod, coeffs, &b);
    ComputeReuse(loops, result.touched_bytes, elem_bytes_sum, *touched, &b);
  }

  std::vector<const BufferInfo*> order;
  for (const BufferInfo& b : buffers) order.push_back(&b);
  std::sort(order.begin(), order.end(), [](const BufferInfo* x, const BufferInfo* y) {
    if (x->lines != y->lines) return x->lines > y->lines;
    if (x->bytes != y->bytes) return x->bytes > y->bytes;
    return x->buffer.name() < y->buffer.name();
  });
  result.values.assign(kGroup2, 0.0f);
  for (int slot = 0; slot < kBuffersPerStore && slot < static_cast<int>(order.size()); ++slot) {
    Export(*order[slot], result.values.data() + slot * kPerBuffer);
  }
  for (BufferInfo& b : buffers) result.boxes.push_back({b.buffer, std::move(b.extents)});
  return result;
}

}  // namespace features_internal
}  // namespace tessera
