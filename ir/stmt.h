// Statements of the tensor IR, TensorIR-style: computation lives in blocks, loops surround
// blocks. Same ownership model as expressions (immutable nodes, value handles).
//
// A PrimFunc body is a BlockRealize of the root block (named "root", no iteration
// variables) whose body holds the loop nests. Each computation is a BlockRealize binding
// the block's iteration variables to expressions of the surrounding loop variables.
#ifndef TESSERA_IR_STMT_H_
#define TESSERA_IR_STMT_H_

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/expr.h"

namespace tessera {

// Values of block/loop annotations and function attributes.
using AnnotationValue = std::variant<int64_t, double, std::string, Expr, std::vector<int64_t>>;
// Sorted by key, so printing and hashing are deterministic.
using Annotations = std::map<std::string, AnnotationValue>;

// Half-open interval [min, min + extent).
struct Range {
  Expr min;
  Expr extent;
  static Range FromMinExtent(Expr min, Expr extent) { return Range{std::move(min), std::move(extent)}; }
};

enum class StmtKind : uint8_t {
  kBufferStore,
  kSeq,
  kIfThenElse,
  kEvaluate,
  kFor,
  kBlock,
  kBlockRealize,
  kAllocate,
};

struct StmtNode {
  explicit StmtNode(StmtKind kind) : kind(kind) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

// Nullable handle to an immutable statement node.
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  bool same_as(const Stmt& other) const { return node_ == other.node_; }
  const std::shared_ptr<const StmtNode>& node_ptr() const { return node_; }

  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

struct BufferStoreNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBufferStore;
  BufferStoreNode(Buffer buffer, Expr value, std::vector<Expr> indices)
      : StmtNode(kKind), buffer(std::move(buffer)), value(std::move(value)), indices(std::move(indices)) {}
  const Buffer buffer;
  const Expr value;
  const std::vector<Expr> indices;
};

struct SeqStmtNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeq;
  explicit SeqStmtNode(std::vector<Stmt> seq) : StmtNode(kKind), seq(std::move(seq)) {}
  const std::vector<Stmt> seq;
};

struct IfThenElseNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIfThenElse;
  IfThenElseNode(Expr condition, Stmt then_case, Stmt else_case)
      : StmtNode(kKind), condition(std::move(condition)), then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
  const Expr condition;
  const Stmt then_case;
  const Stmt else_case;  // May be undefined.
};

struct EvaluateNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kEvaluate;
  explicit EvaluateNode(Expr value) : StmtNode(kKind), value(std::move(value)) {}
  const Expr value;
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled, kThreadBinding };
// "serial", "parallel", "vectorized", "unroll", "thread_binding".
const char* ForKindName(ForKind kind);
bool ParseForKind(const std::string& name, ForKind* kind);

// for loop_var in range(extent): body. Loops start at 0. `thread_tag` ("blockIdx.x",
// "threadIdx.y", "vthread.x", ...) is set exactly when kind == kThreadBinding.
struct ForNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  ForNode(Var loop_var, Expr extent, ForKind for_kind, std::string thread_tag,
          Annotations annotations, Stmt body)
      : StmtNode(kKind), loop_var(std::move(loop_var)), extent(std::move(extent)),
        for_kind(for_kind), thread_tag(std::move(thread_tag)),
        annotations(std::move(annotations)), body(std::move(body)) {}
  const Var loop_var;
  const Expr extent;
  const ForKind for_kind;
  const std::string thread_tag;
  const Annotations annotations;
  const Stmt body;
};

enum class IterKind : uint8_t { kSpatial, kReduction };
// "S" / "R" as in block signatures.
const char* IterKindName(IterKind kind);

struct IterVar {
  Var var;
  Range dom;
  IterKind kind = IterKind::kSpatial;
};

// A rectangular region of a buffer, one Range per dimension.
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> region;
  // The whole buffer.
  static BufferRegion Full(const Buffer& buffer);
};

// A block: iteration variables with domains and kinds, the regions it reads and writes,
// an optional init statement (run before the first reduction step), its body, buffers it
// allocates, and annotations.
struct BlockNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBlock;
  BlockNode() : StmtNode(kKind) {}
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  Stmt init;  // May be undefined.
  Stmt body;
  std::vector<Buffer> alloc_buffers;
  Annotations annotations;
};

class Block : public Stmt {
 public:
  Block() = default;
  explicit Block(std::shared_ptr<const BlockNode> node) : Stmt(std::move(node)) {}
  const BlockNode* get() const { return static_cast<const BlockNode*>(Stmt::get()); }
  const BlockNode* operator->() const { return get(); }
  // A mutable copy of the node, for building a modified block.
  std::shared_ptr<BlockNode> CopyNode() const { return std::make_shared<BlockNode>(*get()); }
};

// Binds the block's iteration variables (iter_values[i] for iter_vars[i]) and guards the
// block's execution with `predicate` (true unless the loops over-cover the domain).
struct BlockRealizeNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kBlockRealize;
  BlockRealizeNode(std::vector<Expr> iter_values, Expr predicate, Block block)
      : StmtNode(kKind), iter_values(std::move(iter_values)), predicate(std::move(predicate)),
        block(std::move(block)) {}
  const std::vector<Expr> iter_values;
  const Expr predicate;
  const Block block;
};

// Lowered form only: allocates `buffer` for the duration of `body`.
struct AllocateNode final : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAllocate;
  AllocateNode(Buffer buffer, Stmt body) : StmtNode(kKind), buffer(std::move(buffer)), body(std::move(body)) {}
  const Buffer buffer;
  const Stmt body;
};

// ---- Construction ---------------------------------------------------------------------

Stmt BufferStore(Buffer buffer, Expr value, std::vector<Expr> indices);
// Flattens nested sequences; a single statement is returned as is.
Stmt SeqStmt(std::vector<Stmt> seq);
Stmt IfThenElse(Expr condition, Stmt then_case, Stmt else_case = Stmt());
Stmt Evaluate(Expr value);
Stmt For(Var loop_var, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "",
         Annotations annotations = {});
Block MakeBlock(const BlockNode& node);
Stmt BlockRealize(std::vector<Expr> iter_values, Expr predicate, Block block);
Stmt Allocate(Buffer buffer, Stmt body);

// The boolean constant true.
Expr True();
Expr False();

// Appends the conjuncts of `condition` (a && b && ..., nested ands flattened left to right) to
// `out`, dropping constant-true ones (and an undefined condition): a block predicate or guard
// split into its conditions.
void SplitConjuncts(const Expr& condition, std::vector<Expr>* out);
// c0 && c1 && ... (left-nested), the inverse of SplitConjuncts; undefined for no conditions.
Expr Conjunction(const std::vector<Expr>& conditions);

}  // namespace tessera

#endif  // TESSERA_IR_STMT_H_
