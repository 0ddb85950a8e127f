#include "ir/function.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"

namespace tessera {

PrimFunc PrimFunc::Make(std::string name, std::vector<Buffer> params, Stmt body,
                        Annotations attrs) {
  auto node = std::make_shared<PrimFuncNode>();
  node->name = std::move(name);
  node->params = std::move(params);
  node->body = std::move(body);
  node->attrs = std::move(attrs);
  return PrimFunc(std::move(node));
}

Block PrimFunc::root_block() const {
  const auto* realize = node_->body.as<BlockRealizeNode>();
  TESSERA_CHECK(realize != nullptr) << "function " << name() << " has no root block";
  return realize->block;
}

PrimFunc PrimFunc::WithBody(Stmt body) const {
  auto node = std::make_shared<PrimFuncNode>(*node_);
  node->body = std::move(body);
  return PrimFunc(std::move(node));
}

PrimFunc PrimFunc::WithName(std::string name) const {
  auto node = std::make_shared<PrimFuncNode>(*node_);
  node->name = std::move(name);
  return PrimFunc(std::move(node));
}

PrimFunc PrimFunc::WithAttr(const std::string& key, AnnotationValue value) const {
  auto node = std::make_shared<PrimFuncNode>(*node_);
  node->attrs[key] = std::move(value);
  return PrimFunc(std::move(node));
}

IRModule IRModule::FromFunction(const PrimFunc& func) {
  IRModule mod;
  mod.Update(func);
  return mod;
}

absl::StatusOr<PrimFunc> IRModule::Lookup(const std::string& name) const {
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [n, f] : functions_) names.push_back(n);
  return absl::NotFoundError(absl::StrCat("no function '", name, "' in module (has: ",
                                          absl::StrJoin(names, ", "), ")"));
}

void IRModule::Update(const PrimFunc& func) { functions_[func.name()] = func; }

}  // namespace tessera
