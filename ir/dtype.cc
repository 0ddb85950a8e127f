#include "ir/dtype.h"

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<DataType> DataType::Parse(const std::string& name) {
  if (name == "float32") return Float32();
  if (name == "float16") return Float16();
  if (name == "float64") return Float64();
  if (name == "bfloat16") return BFloat16();
  if (name == "int8") return Int8();
  if (name == "int32") return Int32();
  if (name == "int64") return Int64();
  if (name == "uint8") return UInt8();
  if (name == "bool") return Bool();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name,
                   "' (expected float32, float16, bfloat16, float64, int8, int32, int64, "
                   "uint8 or bool)"));
}

std::string DataType::ToString() const {
  switch (code_) {
    case Code::kInt: return absl::StrCat("int", bits_);
    case Code::kUInt: return absl::StrCat("uint", bits_);
    case Code::kFloat: return absl::StrCat("float", bits_);
    case Code::kBFloat: return absl::StrCat("bfloat", bits_);
    case Code::kBool: return "bool";
  }
  return "invalid";
}

}  // namespace tessera
