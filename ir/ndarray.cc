#include "ir/ndarray.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"

namespace tessera {
namespace {

uint16_t FloatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) {  // inf / nan
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  }
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rem = mantissa & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rem = mantissa & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into exponent: ok
  return static_cast<uint16_t>(sign | half);
}

float HalfBitsToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t x;
  if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ff;
      x = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    x = sign | 0x7f800000 | (mantissa << 13);
  } else {
    x = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

float BFloatBitsToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace

uint16_t FloatToBFloatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

NDArray NDArray::Empty(DataType dtype, std::vector<int64_t> shape) {
  NDArray a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.size_ = 1;
  for (int64_t d : a.shape_) {
    TESSERA_CHECK_GE(d, 0) << "negative extent";
    a.size_ *= d;
  }
  size_t bytes = static_cast<size_t>(std::max<int64_t>(a.nbytes(), 1));
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  TESSERA_CHECK(p != nullptr) << "out of memory allocating " << rounded << " bytes";
  std::memset(p, 0, rounded);
  a.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  a.data_ = p;
  return a;
}

NDArray NDArray::View(DataType dtype, std::vector<int64_t> shape, void* data) {
  NDArray a;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.size_ = 1;
  for (int64_t d : a.shape_) a.size_ *= d;
  a.data_ = data;
  return a;
}

double NDArray::GetFlat(int64_t i) const {
  const char* p = static_cast<const char*>(data_);
  switch (dtype_.code()) {
    case DataType::Code::kFloat:
      if (dtype_.bits() == 32) return reinterpret_cast<const float*>(p)[i];
      if (dtype_.bits() == 64) return reinterpret_cast<const double*>(p)[i];
      return HalfBitsToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    case DataType::Code::kBFloat:
      return BFloatBitsToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    case DataType::Code::kInt:
      switch (dtype_.bits()) {
        case 8: return reinterpret_cast<const int8_t*>(p)[i];
        case 16: return reinterpret_cast<const int16_t*>(p)[i];
        case 32: return reinterpret_cast<const int32_t*>(p)[i];
        default: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
      }
    case DataType::Code::kUInt:
      switch (dtype_.bits()) {
        case 8: return reinterpret_cast<const uint8_t*>(p)[i];
        case 16: return reinterpret_cast<const uint16_t*>(p)[i];
        case 32: return reinterpret_cast<const uint32_t*>(p)[i];
        default: return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
      }
    case DataType::Code::kBool: return reinterpret_cast<const uint8_t*>(p)[i] != 0;
  }
  return 0;
}

void NDArray::SetFlat(int64_t i, double v) {
  char* p = static_cast<char*>(data_);
  switch (dtype_.code()) {
    case DataType::Code::kFloat:
      if (dtype_.bits() == 32) {
        reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      } else if (dtype_.bits() == 64) {
        reinterpret_cast<double*>(p)[i] = v;
      } else {
        reinterpret_cast<uint16_t*>(p)[i] = FloatToHalfBits(static_cast<float>(v));
      }
      return;
    case DataType::Code::kBFloat:
      reinterpret_cast<uint16_t*>(p)[i] = FloatToBFloatBits(static_cast<float>(v));
      return;
    case DataType::Code::kInt: {
      int64_t x = static_cast<int64_t>(v);
      switch (dtype_.bits()) {
        case 8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(x); return;
        case 16: reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(x); return;
        case 32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(x); return;
        default: reinterpret_cast<int64_t*>(p)[i] = x; return;
      }
    }
    case DataType::Code::kUInt: {
      uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(v));
      switch (dtype_.bits()) {
        case 8: reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(x); return;
        case 16: reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(x); return;
        case 32: reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(x); return;
        default: reinterpret_cast<uint64_t*>(p)[i] = x; return;
      }
    }
    case DataType::Code::kBool: reinterpret_cast<uint8_t*>(p)[i] = v != 0; return;
  }
}

void NDArray::FillRandom(Random* rng) {
  for (int64_t i = 0; i < size_; ++i) {
    if (dtype_.is_float()) {
      SetFlat(i, rng->UniformReal() * 2.0 - 1.0);
    } else if (dtype_.is_bool()) {
      SetFlat(i, static_cast<double>(rng->UniformInt(0, 2)));
    } else {
      int64_t bound = dtype_.bits() == 8 ? 4 : 16;
      int64_t lo = dtype_.is_uint() ? 0 : -bound;
      SetFlat(i, static_cast<double>(rng->UniformInt(lo, bound + 1)));
    }
  }
}

void NDArray::CopyFrom(const NDArray& other) {
  TESSERA_CHECK(other.dtype_ == dtype_ && other.size_ == size_) << "CopyFrom mismatch";
  std::memcpy(data_, other.data_, static_cast<size_t>(nbytes()));
}

NDArray NDArray::Clone() const {
  NDArray copy = Empty(dtype_, shape_);
  copy.CopyFrom(*this);
  return copy;
}

std::string NDArray::ShapeString() const { return absl::StrCat("[", absl::StrJoin(shape_, ", "), "]"); }

double RoundToDType(DataType dtype, double value) {
  if (dtype.code() == DataType::Code::kFloat && dtype.bits() == 32) {
    return static_cast<float>(value);
  }
  if (dtype.code() == DataType::Code::kFloat && dtype.bits() == 16) {
    return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(value)));
  }
  if (dtype.code() == DataType::Code::kBFloat) {
    return BFloatBitsToFloat(FloatToBFloatBits(static_cast<float>(value)));
  }
  return value;
}

void DefaultTolerance(DataType dtype, double* rtol, double* atol) {
  if (dtype.code() == DataType::Code::kBFloat) {
    *rtol = 2e-2;
    *atol = 2e-2;
  } else if (dtype.is_float() && dtype.bits() == 16) {
    *rtol = 1e-2;
    *atol = 1e-2;
  } else if (dtype.is_float()) {
    *rtol = 1e-4;
    *atol = 1e-4;
  } else {
    *rtol = 0;
    *atol = 0;
  }
}

absl::StatusOr<Comparison> Compare(const NDArray& actual, const NDArray& expected, double rtol,
                                   double atol) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot compare ", actual.dtype().ToString(), actual.ShapeString(), " with ",
        expected.dtype().ToString(), expected.ShapeString()));
  }
  double default_rtol, default_atol;
  DefaultTolerance(expected.dtype(), &default_rtol, &default_atol);
  if (rtol < 0) rtol = default_rtol;
  if (atol < 0) atol = default_atol;
  Comparison result;
  for (int64_t i = 0; i < expected.size(); ++i) {
    double a = actual.GetFlat(i);
    double e = expected.GetFlat(i);
    double err = std::fabs(a - e);
    if (std::isnan(a) != std::isnan(e)) err = INFINITY;
    if (std::isnan(a) && std::isnan(e)) err = 0;
    result.max_abs_error = std::max(result.max_abs_error, err);
    if (std::fabs(e) > 0) result.max_rel_error = std::max(result.max_rel_error, err / std::fabs(e));
    if (!(err <= atol + rtol * std::fabs(e))) {
      if (result.mismatches == 0) result.first_mismatch = i;
      ++result.mismatches;
    }
  }
  return result;
}

}  // namespace tessera
