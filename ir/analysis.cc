#include "ir/analysis.h"

#include <unordered_set>

#include "ir/functor.h"

namespace tessera {

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
