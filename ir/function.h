// PrimFunc (one tensor program) and IRModule (named functions).
#ifndef TESSERA_IR_FUNCTION_H_
#define TESSERA_IR_FUNCTION_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/stmt.h"

namespace tessera {

// `params` are the argument buffers in calling order; `body` is the BlockRealize of the
// root block. Attributes: "global_symbol", "tessera.scheduled" (set once a schedule or a
// default rule has been applied), ...
struct PrimFuncNode {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
  Annotations attrs;
};

class PrimFunc {
 public:
  PrimFunc() = default;
  explicit PrimFunc(std::shared_ptr<const PrimFuncNode> node) : node_(std::move(node)) {}
  static PrimFunc Make(std::string name, std::vector<Buffer> params, Stmt body,
                       Annotations attrs = {});

  bool defined() const { return node_ != nullptr; }
  const PrimFuncNode* get() const { return node_.get(); }
  const PrimFuncNode* operator->() const { return node_.get(); }
  bool same_as(const PrimFunc& other) const { return node_ == other.node_; }

  const std::string& name() const { return node_->name; }
  const std::vector<Buffer>& params() const { return node_->params; }
  const Stmt& body() const { return node_->body; }
  const Annotations& attrs() const { return node_->attrs; }
  // The root block (body must be a BlockRealize).
  Block root_block() const;

  PrimFunc WithBody(Stmt body) const;
  PrimFunc WithName(std::string name) const;
  PrimFunc WithAttr(const std::string& key, AnnotationValue value) const;

 private:
  std::shared_ptr<const PrimFuncNode> node_;
};

// A set of functions by name (sorted, so iteration order is deterministic).
class IRModule {
 public:
  IRModule() = default;
  explicit IRModule(std::map<std::string, PrimFunc> functions) : functions_(std::move(functions)) {}
  // A module holding `func` under its own name.
  static IRModule FromFunction(const PrimFunc& func);

  const std::map<std::string, PrimFunc>& functions() const { return functions_; }
  bool empty() const { return functions_.empty(); }
  size_t size() const { return functions_.size(); }
  // kNotFound naming the missing function and the ones present.
  absl::StatusOr<PrimFunc> Lookup(const std::string& name) const;
  bool Contains(const std::string& name) const { return functions_.count(name) != 0; }
  // Adds or replaces.
  void Update(const PrimFunc& func);
  void Remove(const std::string& name) { functions_.erase(name); }

 private:
  std::map<std::string, PrimFunc> functions_;
};

}  // namespace tessera

#endif  // TESSERA_IR_FUNCTION_H_
