#include "tests/testing/scripted_measurer.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <vector>

#include "ir/functor.h"

namespace tessera {
namespace testing {
namespace {

// The toy machine of ModelledLatency, one visit of the program.
class ToyMachine : public IRVisitor {
 public:
  double nanoseconds = 0;

 protected:
  void VisitStmt_(const ForNode* op) override {
    loops_.push_back(op);
    IRVisitor::VisitStmt_(op);
    loops_.pop_back();
  }

  // Block iteration variables stand for the loop variables of their bindings.
  void VisitStmt_(const BlockRealizeNode* op) override {
    const BlockNode* block = op->block.get();
    for (size_t i = 0; i < block->iter_vars.size() && i < op->iter_values.size(); ++i) {
      loop_vars_of_[block->iter_vars[i].var.get()] = LoopVarsIn(op->iter_values[i]);
    }
    IRVisitor::VisitStmt_(op);
  }

  void VisitStmt_(const BufferStoreNode* op) override {
    double trips = 1;
    double workers = 1;
    for (const ForNode* loop : loops_) {
      const IntImmNode* extent = loop->extent.as<IntImmNode>();
      const double n = extent ? static_cast<double>(extent->value) : 1;
      trips *= n;
      if (loop->for_kind == ForKind::kParallel) workers *= n;
    }
    workers = std::min(workers, 8.0);
    double lanes = 1;
    double unroll = 1;
    const VarNode* innermost = nullptr;
    if (!loops_.empty()) {
      const ForNode* inner = loops_.back();
      innermost = inner->loop_var.get();
      const IntImmNode* extent = inner->extent.as<IntImmNode>();
      if (inner->for_kind == ForKind::kVectorized && extent) {
        lanes = std::min<double>(static_cast<double>(extent->value), 16);
      }
      if (inner->for_kind == ForKind::kUnrolled) unroll = 0.75;
    }
    double operations = 1;  // the store
    int strided = Strided(op->indices, innermost) ? 1 : 0;
    PostOrderVisitExprs(op->value, [&](const Expr& e) {
      if (const BufferLoadNode* load = e.as<BufferLoadNode>()) {
        ++operations;
        if (Strided(load->indices, innermost)) ++strided;
      } else if (e.as<BinaryNode>() != nullptr) {
        ++operations;
      }
    });
    nanoseconds += trips * operations * unroll * (1 + 0.5 * strided) / (lanes * workers);
    IRVisitor::VisitStmt_(op);
  }

 private:
  // The loop variables `e` depends on, through the bindings of block iteration variables.
  std::set<const VarNode*> LoopVarsIn(const Expr& e) const {
    std::set<const VarNode*> vars;
    PostOrderVisitExprs(e, [&](const Expr& sub) {
      const VarNode* var = sub.as<VarNode>();
      if (var == nullptr) return;
      auto it = loop_vars_of_.find(var);
      if (it == loop_vars_of_.end()) {
        vars.insert(var);
      } else {
        vars.insert(it->second.begin(), it->second.end());
      }
    });
    return vars;
  }

  // Whether an access moves along a dimension other than its last one when `innermost` does.
  bool Strided(const std::vector<Expr>& indices, const VarNode* innermost) const {
    if (innermost == nullptr || indices.empty()) return false;
    if (LoopVarsIn(indices.back()).count(innermost)) return false;
    for (size_t i = 0; i + 1 < indices.size(); ++i) {
      if (LoopVarsIn(indices[i]).count(innermost)) return true;
    }
    return false;
  }

  std::vector<const ForNode*> loops_;
  std::unordered_map<const VarNode*, std::set<const VarNode*>> loop_vars_of_;
};

}  // namespace

double ModelledLatency(const PrimFunc& program) {
  ToyMachine machine;
  machine.VisitStmt(program.body());
  return 1e-6 + machine.nanoseconds * 1e-9;
}

}  // namespace testing
}  // namespace tessera
