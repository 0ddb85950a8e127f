#include "schedule/state.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "ir/functor.h"

namespace tessera {
namespace {

// Depth-first search for the first statement satisfying `match`, recording ancestors.
bool FindPath(const Stmt& stmt, const std::function<bool(const Stmt&)>& match, StmtPath* path) {
  path->push_back(stmt);
  if (match(stmt)) return true;
  bool found = false;
  switch (stmt.kind()) {
    case StmtKind::kSeq:
      for (const Stmt& s : stmt.as<SeqStmtNode>()->seq) {
        if ((found = FindPath(s, match, path))) break;
      }
      break;
    case StmtKind::kIfThenElse: {
      const auto* op = stmt.as<IfThenElseNode>();
      found = FindPath(op->then_case, match, path) ||
              (op->else_case.defined() && FindPath(op->else_case, match, path));
      break;
    }
    case StmtKind::kFor: found = FindPath(stmt.as<ForNode>()->body, match, path); break;
    case StmtKind::kBlock: {
      const auto* op = stmt.as<BlockNode>();
      found = (op->init.defined() && FindPath(op->init, match, path)) ||
              FindPath(op->body, match, path);
      break;
    }
    case StmtKind::kBlockRealize:
      found = FindPath(stmt.as<BlockRealizeNode>()->block, match, path);
      break;
    case StmtKind::kAllocate: found = FindPath(stmt.as<AllocateNode>()->body, match, path); break;
    default: break;
  }
  if (!found) path->pop_back();
  return found;
}

class Replacer : public IRMutator {
 public:
  Replacer(const Stmt& old_stmt, const Stmt& new_stmt) : old_(old_stmt), new_(new_stmt) {}
  Stmt VisitStmt(const Stmt& s) override {
    if (s.same_as(old_)) return new_;
    return IRMutator::VisitStmt(s);
  }

 protected:
  Stmt VisitStmt_(const SeqStmtNode* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Stmt> seq;
    for (const Stmt& s : op->seq) {
      Stmt r = VisitStmt(s);
      if (!r.same_as(s)) changed = true;
      if (r.defined()) seq.push_back(r);
    }
    if (!changed) return self;
    return SeqStmt(std::move(seq));
  }
  // Expressions never contain statements: skip them.
  Expr VisitExpr(const Expr& e) override { return e; }

 private:
  Stmt old_;
  Stmt new_;
};

}  // namespace

absl::StatusOr<StmtPath> FindBlockPath(const PrimFunc& func, const std::string& name) {
  StmtPath path;
  bool found = FindPath(
      func.body(),
      [&](const Stmt& s) {
        const auto* realize = s.as<BlockRealizeNode>();
        return realize != nullptr && realize->block->name == name;
      },
      &path);
  if (!found) {
    return absl::NotFoundError(absl::StrCat("no block named '", name, "' in function ", func.name()));
  }
  return path;
}

absl::StatusOr<StmtPath> FindLoopPath(const PrimFunc& func, const Var& loop_var) {
  StmtPath path;
  bool found = FindPath(
      func.body(),
      [&](const Stmt& s) {
        const auto* loop = s.as<ForNode>();
        return loop != nullptr && loop->loop_var.same_as(loop_var);
      },
      &path);
  if (!found) {
    return absl::NotFoundError(absl::StrCat("loop ", loop_var.name(), " no longer exists"));
  }
  return path;
}

std::vector<Stmt> LoopsOnPath(const StmtPath& path) {
  std::vector<Stmt> loops;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (path[i].kind() == StmtKind::kBlock) loops.clear();
    if (path[i].kind() == StmtKind::kFor) loops.push_back(path[i]);
  }
  return loops;
}

Stmt EnclosingBlockRealize(const StmtPath& path) {
  for (size_t i = path.size() - 1; i-- > 0;) {
    if (path[i].kind() == StmtKind::kBlockRealize) return path[i];
  }
  return Stmt();
}

std::vector<Stmt> ChildBlockRealizes(const Stmt& stmt) {
  std::vector<Stmt> out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kBlockRealize: out.push_back(s); return;
      case StmtKind::kSeq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) walk(c);
        return;
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        walk(op->then_case);
        if (op->else_case.defined()) walk(op->else_case);
        return;
      }
      case StmtKind::kFor: walk(s.as<ForNode>()->body); return;
      case StmtKind::kAllocate: walk(s.as<AllocateNode>()->body); return;
      case StmtKind::kBlock: {
        const auto* op = s.as<BlockNode>();
        if (op->init.defined()) walk(op->init);
        walk(op->body);
        return;
      }
      default: return;
    }
  };
  if (const auto* realize = stmt.as<BlockRealizeNode>()) {
    walk(realize->block->body);
  } else if (const auto* block = stmt.as<BlockNode>()) {
    walk(block->body);
  } else {
    walk(stmt);
  }
  return out;
}

std::vector<std::string> AllBlockNames(const PrimFunc& func) {
  std::vector<std::string> names;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    for (const Stmt& child : ChildBlockRealizes(s)) {
      names.push_back(child.as<BlockRealizeNode>()->block->name);
      walk(child);
    }
  };
  names.push_back(func.root_block()->name);
  walk(func.body());
  return names;
}

PrimFunc ReplaceStmt(const PrimFunc& func, const Stmt& old_stmt, const Stmt& new_stmt) {
  Replacer replacer(old_stmt, new_stmt);
  return func.WithBody(replacer.VisitStmt(func.body()));
}

std::string UniqueName(const PrimFunc& func, const std::string& base, NameScope scope) {
  std::set<std::string> used;
  if (scope != NameScope::kBuffers) {
    std::vector<std::string> blocks = AllBlockNames(func);
    used.insert(blocks.begin(), blocks.end());
  }
  if (scope != NameScope::kBlocks) {
    for (const Buffer& b : func.params()) used.insert(b.name());
    PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
      if (const auto* block = s.as<BlockNode>()) {
        for (const Buffer& b : block->alloc_buffers) used.insert(b.name());
      }
    });
  }
  if (!used.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = absl::StrCat(base, "_", i);
    if (!used.count(candidate)) return candidate;
  }
}

std::string UniqueBlockName(const PrimFunc& func, const std::string& base) {
  return UniqueName(func, base, NameScope::kBlocks);
}

}  // namespace tessera
