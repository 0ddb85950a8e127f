#include "schedule/instruction.h"

namespace tessera {

InstValue InstValue::Int(int64_t v) {
  InstValue x;
  x.type_ = Type::kInt;
  x.int_ = v;
  return x;
}

InstValue InstValue::Float(double v) {
  InstValue x;
  x.type_ = Type::kFloat;
  x.float_ = v;
  return x;
}

InstValue InstValue::String(std::string v) {
  InstValue x;
  x.type_ = Type::kString;
  x.string_ = std::move(v);
  return x;
}

InstValue InstValue::RV(RVKind kind, int64_t id) {
  InstValue x;
  x.type_ = Type::kRV;
  x.rv_kind_ = kind;
  x.int_ = id;
  return x;
}

InstValue InstValue::Array(std::vector<InstValue> items) {
  InstValue x;
  x.type_ = Type::kArray;
  x.items_ = std::move(items);
  return x;
}

InstValue InstValue::IntArray(const std::vector<int64_t>& items) {
  std::vector<InstValue> values;
  values.reserve(items.size());
  for (int64_t v : items) values.push_back(Int(v));
  return Array(std::move(values));
}

std::vector<int64_t> InstValue::AsIntArray() const {
  std::vector<int64_t> out;
  if (type_ != Type::kArray) return out;
  for (const InstValue& item : items_) {
    if (!item.is_int()) return {};
    out.push_back(item.as_int());
  }
  return out;
}

bool operator==(const InstValue& a, const InstValue& b) {
  if (a.type_ != b.type_) return false;
  switch (a.type_) {
    case InstValue::Type::kNone: return true;
    case InstValue::Type::kInt: return a.int_ == b.int_;
    case InstValue::Type::kFloat: return a.float_ == b.float_;
    case InstValue::Type::kString: return a.string_ == b.string_;
    case InstValue::Type::kRV: return a.rv_kind_ == b.rv_kind_ && a.int_ == b.int_;
    case InstValue::Type::kArray: return a.items_ == b.items_;
  }
  return false;
}

}  // namespace tessera
