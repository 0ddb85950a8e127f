// Structural hash: the walker of ir/structural_internal.h run on (x, x) with a reducer that
// feeds a canonical stream of 64-bit words into a fixed mixing function.
//
// Stream: every word w updates the state h as h = Mix(h ^ Mix(w + kGolden)), where Mix is
// the SplitMix64 finalizer (Steele, Lea, Flood 2014). Words are: kind tags (the constants
// below, never enum values, so reordering an enum in ir/ does not move hashes), counts,
// integers as two's complement, doubles by IEEE-754 bit pattern (-0.0 -> 0.0, any NaN ->
// 0x7ff8000000000000), dtypes as (code tag << 8 | bits), and strings as their length followed
// by 8-byte little-endian chunks. Enum-like fields (loop kind, operator, iteration kind) enter
// as their printed names. Nothing depends on pointers, std::hash or the host's byte order.
#include "ir/structural_hash.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "ir/structural_internal.h"

namespace tessera {
namespace {

using structural_internal::PairResult;
using structural_internal::Walker;

static_assert(std::numeric_limits<double>::is_iec559, "doubles must be IEEE-754");

constexpr uint64_t kSeed = 0x7465737365726131ULL;  // "tessera1"
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// Stable tags. Append only; never renumber.
enum Tag : uint64_t {
  kTagNull = 1,
  kTagDefined = 2,
  kTagVarDef = 3,
  kTagVarRef = 4,
  kTagBufferDef = 5,
  kTagBufferRef = 6,
  kTagFunction = 7,
  kTagModule = 8,
  kTagIntImm = 0x10,
  kTagFloatImm = 0x11,
  kTagVar = 0x12,
  kTagBinary = 0x13,
  kTagNot = 0x14,
  kTagSelect = 0x15,
  kTagCast = 0x16,
  kTagBufferLoad = 0x17,
  kTagCall = 0x18,
  kTagBufferStore = 0x20,
  kTagSeq = 0x21,
  kTagIfThenElse = 0x22,
  kTagEvaluate = 0x23,
  kTagFor = 0x24,
  kTagBlock = 0x25,
  kTagBlockRealize = 0x26,
  kTagAllocate = 0x27,
};

uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t ExprTag(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm:
      return kTagIntImm;
    case ExprKind::kFloatImm:
      return kTagFloatImm;
    case ExprKind::kVar:
      return kTagVar;
    case ExprKind::kBinary:
      return kTagBinary;
    case ExprKind::kNot:
      return kTagNot;
    case ExprKind::kSelect:
      return kTagSelect;
    case ExprKind::kCast:
      return kTagCast;
    case ExprKind::kBufferLoad:
      return kTagBufferLoad;
    case ExprKind::kCall:
      return kTagCall;
  }
  return 0;
}

uint64_t StmtTag(StmtKind kind) {
  switch (kind) {
    case StmtKind::kBufferStore:
      return kTagBufferStore;
    case StmtKind::kSeq:
      return kTagSeq;
    case StmtKind::kIfThenElse:
      return kTagIfThenElse;
    case StmtKind::kEvaluate:
      return kTagEvaluate;
    case StmtKind::kFor:
      return kTagFor;
    case StmtKind::kBlock:
      return kTagBlock;
    case StmtKind::kBlockRealize:
      return kTagBlockRealize;
    case StmtKind::kAllocate:
      return kTagAllocate;
  }
  return 0;
}

uint64_t DTypeCodeTag(DataType::Code code) {
  switch (code) {
    case DataType::Code::kInt:
      return 1;
    case DataType::Code::kUInt:
      return 2;
    case DataType::Code::kFloat:
      return 3;
    case DataType::Code::kBFloat:
      return 4;
    case DataType::Code::kBool:
      return 5;
  }
  return 0;
}

class HashReducer {
 public:
  uint64_t value() const { return h_; }

  void Word(uint64_t w) { h_ = Mix(h_ ^ Mix(w + kGolden)); }

  void Push(const char*) {}
  void PushIndex(int64_t) {}
  void PushKey(const std::string&) {}
  void Pop() {}

  bool Defined(bool a, bool) {
    Word(a ? kTagDefined : kTagNull);
    return true;
  }
  bool ExprHead(const Expr& a, const Expr&) {
    Word(ExprTag(a.kind()));
    return true;
  }
  bool StmtHead(const Stmt& a, const Stmt&) {
    Word(StmtTag(a.kind()));
    return true;
  }
  bool Count(size_t a, size_t) {
    Word(static_cast<uint64_t>(a));
    return true;
  }
  bool Int(int64_t a, int64_t) {
    Word(static_cast<uint64_t>(a));
    return true;
  }
  bool Double(double a, double) {
    uint64_t bits;
    if (std::isnan(a)) {
      bits = 0x7ff8000000000000ULL;
    } else {
      if (a == 0) a = 0.0;  // -0.0 -> +0.0
      std::memcpy(&bits, &a, sizeof(bits));
    }
    Word(bits);
    return true;
  }
  bool Str(const std::string& a, const std::string&) {
    Word(a.size());
    for (size_t i = 0; i < a.size(); i += 8) {
      uint64_t chunk = 0;
      for (size_t j = 0; j < 8 && i + j < a.size(); ++j) {
        chunk |= static_cast<uint64_t>(static_cast<unsigned char>(a[i + j])) << (8 * j);
      }
      Word(chunk);
    }
    return true;
  }
  bool DType(DataType a, DataType) {
    Word(DTypeCodeTag(a.code()) << 8 | static_cast<uint64_t>(a.bits()));
    return true;
  }

  PairResult PairVar(const Var& a, const Var&, bool) {
    return Number(a.get(), &vars_, kTagVarDef, kTagVarRef);
  }
  PairResult PairBuffer(const Buffer& a, const Buffer&, bool) {
    return Number(a.get(), &buffers_, kTagBufferDef, kTagBufferRef);
  }

 private:
  template <typename Node>
  PairResult Number(const Node* node, std::unordered_map<const Node*, uint64_t>* numbers,
                    uint64_t def_tag, uint64_t ref_tag) {
    auto it = numbers->find(node);
    if (it != numbers->end()) {
      Word(ref_tag);
      Word(it->second);
      return PairResult::kPaired;
    }
    numbers->emplace(node, numbers->size());
    Word(def_tag);
    return PairResult::kNew;
  }

  uint64_t h_ = kSeed;
  std::unordered_map<const VarNode*, uint64_t> vars_;
  std::unordered_map<const BufferNode*, uint64_t> buffers_;
};

}  // namespace

uint64_t StructuralHash(const PrimFunc& f) {
  HashReducer reducer;
  reducer.Word(kTagFunction);
  if (!f.defined()) {
    reducer.Word(kTagNull);
    return reducer.value();
  }
  Walker<HashReducer>(&reducer).Func(*f.get(), *f.get());
  return reducer.value();
}

uint64_t StructuralHash(const Expr& e) {
  HashReducer reducer;
  Walker<HashReducer>(&reducer).E(e, e);
  return reducer.value();
}

uint64_t StructuralHash(const Stmt& s) {
  HashReducer reducer;
  Walker<HashReducer>(&reducer).S(s, s);
  return reducer.value();
}

uint64_t StructuralHash(const IRModule& m) {
  std::vector<uint64_t> hashes;
  for (const auto& [name, f] : m.functions()) hashes.push_back(StructuralHash(f));
  std::sort(hashes.begin(), hashes.end());
  HashReducer reducer;
  reducer.Word(kTagModule);
  reducer.Word(hashes.size());
  for (uint64_t h : hashes) reducer.Word(h);
  return reducer.value();
}

std::string StructuralHashHex(const PrimFunc& f) {
  return absl::StrFormat("%016x", StructuralHash(f));
}

}  // namespace tessera
