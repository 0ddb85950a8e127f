// Scalar data types of tensor programs.
#ifndef TESSERA_IR_DTYPE_H_
#define TESSERA_IR_DTYPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tessera {

class DataType {
 public:
  enum class Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBFloat = 3, kBool = 4 };

  constexpr DataType() : code_(Code::kInt), bits_(64) {}
  constexpr DataType(Code code, int bits) : code_(code), bits_(static_cast<uint8_t>(bits)) {}

  static constexpr DataType Float32() { return DataType(Code::kFloat, 32); }
  static constexpr DataType Float16() { return DataType(Code::kFloat, 16); }
  static constexpr DataType Float64() { return DataType(Code::kFloat, 64); }
  static constexpr DataType BFloat16() { return DataType(Code::kBFloat, 16); }
  static constexpr DataType Int8() { return DataType(Code::kInt, 8); }
  static constexpr DataType Int32() { return DataType(Code::kInt, 32); }
  static constexpr DataType Int64() { return DataType(Code::kInt, 64); }
  static constexpr DataType UInt8() { return DataType(Code::kUInt, 8); }
  static constexpr DataType Bool() { return DataType(Code::kBool, 1); }
  // The type of loop variables, iteration variables and indices.
  static constexpr DataType Index() { return Int64(); }

  // Parses "float32", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool",
  // "float64". kInvalidArgument otherwise.
  static absl::StatusOr<DataType> Parse(const std::string& name);

  Code code() const { return code_; }
  int bits() const { return bits_; }
  int bytes() const { return (bits_ + 7) / 8; }
  bool is_float() const { return code_ == Code::kFloat || code_ == Code::kBFloat; }
  bool is_int() const { return code_ == Code::kInt; }
  bool is_uint() const { return code_ == Code::kUInt; }
  bool is_integer() const { return code_ == Code::kInt || code_ == Code::kUInt; }
  bool is_bool() const { return code_ == Code::kBool; }

  std::string ToString() const;

  friend bool operator==(DataType a, DataType b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_;
  }
  friend bool operator!=(DataType a, DataType b) { return !(a == b); }

 private:
  Code code_;
  uint8_t bits_;
};

}  // namespace tessera

#endif  // TESSERA_IR_DTYPE_H_
