#include "ir/analysis.h"

#include <unordered_set>

#include "ir/functor.h"

namespace tessera {

std::vector<ArgInfo> ArgInfosOf(const PrimFunc& f) {
  std::vector<ArgInfo> infos;
  for (const Buffer& param : f.params()) {
    ArgInfo info;
    info.dtype = param.dtype();
    for (const Expr& extent : param.shape()) {
      const int64_t* v = AsConstInt(extent);
      info.shape.push_back(v ? *v : -1);
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

std::vector<int> WrittenParamIndices(const PrimFunc& func) {
  std::unordered_set<const BufferNode*> written;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) written.insert(store->buffer.get());
  });
  std::vector<int> indices;
  for (size_t i = 0; i < func.params().size(); ++i) {
    if (written.count(func.params()[i].get())) indices.push_back(static_cast<int>(i));
  }
  return indices;
}

}  // namespace tessera
