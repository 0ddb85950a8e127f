// Helpers of the workload reference tests (workloads_{matmul,conv,norm}_test.cc): each workload
// at a small shape, run by the interpreter with random arguments, against an independent
// hand-written loop nest computing the operator's textbook definition.
#ifndef TESSERA_TESTS_FRONTEND_WORKLOADS_TESTING_H_
#define TESSERA_TESTS_FRONTEND_WORKLOADS_TESTING_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace tessera {
namespace workloads_testing {

using Shape = std::map<std::string, int64_t>;

// Row-major element access by multi-index.
inline int64_t Flat(const NDArray& a, std::initializer_list<int64_t> index) {
  int64_t flat = 0, d = 0;
  for (int64_t i : index) flat = flat * a.shape()[d++] + i;
  return flat;
}
inline double At(const NDArray& a, std::initializer_list<int64_t> index) {
  return a.GetFlat(Flat(a, index));
}

// Builds the workload, fills every parameter with random values (outputs too: init must
// overwrite them), runs the interpreter and returns the arguments.
inline std::vector<NDArray> RunWorkload(const std::string& name, const Shape& shape,
                                        const std::string& dtype = "float32",
                                        const std::string& acc = "") {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape, dtype, acc);
  EXPECT_TRUE(f.ok()) << name << ": " << f.status();
  if (!f.ok()) return {};
  std::vector<NDArray> args;
  Random rng(17);
  for (const Buffer& p : f->params()) {
    std::vector<int64_t> dims;
    for (const Expr& e : p.shape()) dims.push_back(*AsConstInt(e));
    args.push_back(NDArray::Empty(p.dtype(), dims));
    args.back().FillRandom(&rng);
  }
  std::vector<NDArray*> ptrs;
  for (NDArray& a : args) ptrs.push_back(&a);
  absl::Status s = Interpret(*f, ptrs);
  EXPECT_TRUE(s.ok()) << name << ": " << s;
  return args;
}

// `expected` is filled element by element by `fn(flat index, multi-index)`.
inline NDArray Expected(const NDArray& like,
                        const std::function<double(const std::vector<int64_t>&)>& fn) {
  NDArray out = NDArray::Empty(like.dtype(), like.shape());
  const int n = static_cast<int>(like.shape().size());
  std::vector<int64_t> index(n, 0);
  for (int64_t flat = 0; flat < like.size(); ++flat) {
    out.SetFlat(flat, fn(index));
    for (int d = n - 1; d >= 0; --d) {
      if (++index[d] < like.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

inline void ExpectClose(const NDArray& actual, const NDArray& expected, const std::string& what) {
  absl::StatusOr<Comparison> cmp = Compare(actual, expected);
  ASSERT_TRUE(cmp.ok()) << what << ": " << cmp.status();
  EXPECT_TRUE(cmp->ok()) << what << ": " << cmp->mismatches << " mismatches, first at "
                         << cmp->first_mismatch << ", max abs error " << cmp->max_abs_error;
}

}  // namespace workloads_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_FRONTEND_WORKLOADS_TESTING_H_
