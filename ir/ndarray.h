// A host tensor: dtype, shape and a 64-byte-aligned buffer of elements in row-major order.
// Used for arguments of the interpreter and of compiled kernels, and to compare results.
// float16/bfloat16 elements are stored in their 16-bit encodings; Get/Set convert.
#ifndef TESSERA_IR_NDARRAY_H_
#define TESSERA_IR_NDARRAY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "ir/dtype.h"

namespace tessera {

class NDArray {
 public:
  NDArray() = default;
  // Zero-filled array. Shapes must be non-negative.
  static NDArray Empty(DataType dtype, std::vector<int64_t> shape);
  // Wraps memory owned elsewhere (e.g. shared memory of a measurement); not freed here.
  static NDArray View(DataType dtype, std::vector<int64_t> shape, void* data);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }  // number of elements
  int64_t nbytes() const { return size_ * dtype_.bytes(); }
  void* data() { return data_; }
  const void* data() const { return data_; }

  // Element `flat_index` as a double / set from a double (rounded to the dtype: float16 and
  // bfloat16 round to nearest even, integers truncate toward zero and wrap, bool is != 0).
  double GetFlat(int64_t flat_index) const;
  void SetFlat(int64_t flat_index, double value);

  // Fills with values drawn from `rng`: floats uniform in [-1, 1), integers uniform in a
  // small range ([-4, 4] for int8, [-16, 16] otherwise), bools 0/1.
  void FillRandom(Random* rng);
  void CopyFrom(const NDArray& other);  // same dtype and size
  NDArray Clone() const;

  std::string ShapeString() const;  // "[64, 64]"

 private:
  DataType dtype_;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  std::shared_ptr<void> owner_;  // null for views
  void* data_ = nullptr;
};

// The bfloat16 encoding of `f`: rounded to nearest even, NaNs kept quiet.
uint16_t FloatToBFloatBits(float f);

// Rounds a value to what the dtype can hold (float16 / bfloat16 / float32 precision).
double RoundToDType(DataType dtype, double value);

struct Comparison {
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;       // elements outside tolerance
  int64_t first_mismatch = -1;  // flat index
  bool ok() const { return mismatches == 0; }
};

// Compares `actual` against `expected` element-wise with |a - e| <= atol + rtol * |e|.
// Tolerances default by dtype (see DefaultTolerance). kInvalidArgument on dtype/shape mismatch.
absl::StatusOr<Comparison> Compare(const NDArray& actual, const NDArray& expected,
                                   double rtol = -1, double atol = -1);
// Default (rtol, atol) for comparing results of one dtype computed in different orders.
void DefaultTolerance(DataType dtype, double* rtol, double* atol);

}  // namespace tessera

#endif  // TESSERA_IR_NDARRAY_H_
