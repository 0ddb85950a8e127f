// SplitPrepack: the packing of layout-free weights cut out of a function (ir/prepack.h).
#include "ir/prepack.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/functor.h"

namespace tessera {
namespace {

using BufferSet = std::unordered_set<Buffer, BufferIdentityHash, BufferIdentityEqual>;

// What one top-level nest of the root block does.
struct Nest {
  Stmt stmt;
  std::vector<const BlockNode*> blocks;
  BufferSet loads;
  BufferSet stores;
  bool packs = false;  // its blocks are annotated kLayoutRewritePreproc
};

absl::StatusOr<Nest> Describe(const Stmt& stmt) {
  Nest nest;
  nest.stmt = stmt;
  PostOrderVisitStmts(stmt, [&](const Stmt& s) {
    if (const auto* block = s.as<BlockNode>()) nest.blocks.push_back(block);
    if (const auto* store = s.as<BufferStoreNode>()) nest.stores.insert(store->buffer);
  });
  PostOrderVisitExprs(stmt, [&](const Expr& e) {
    if (const auto* load = e.as<BufferLoadNode>()) nest.loads.insert(load->buffer);
  });
  const BlockNode* marked = nullptr;
  const BlockNode* unmarked = nullptr;
  for (const BlockNode* block : nest.blocks) {
    (block->annotations.count(kLayoutRewritePreproc) ? marked : unmarked) = block;
  }
  if (marked != nullptr && unmarked != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("prepack: block ", marked->name,
                     " packs layout-free weights but shares its loop nest with ", "block ",
                     unmarked->name, " (a packing nest must sit directly under the root)"));
  }
  nest.packs = marked != nullptr;
  return nest;
}

// The root block of `f` with another body and allocations, as the root of a function.
Stmt RootWith(const PrimFunc& f, const std::vector<Stmt>& stmts, std::vector<Buffer> allocs) {
  std::shared_ptr<BlockNode> root = f.root_block().CopyNode();
  root->body = stmts.size() == 1 ? stmts[0] : SeqStmt(stmts);
  root->alloc_buffers = std::move(allocs);
  const auto* realize = f.body().as<BlockRealizeNode>();
  return BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*root));
}

void AppendPacked(const std::vector<Buffer>& packed, std::vector<Buffer>* params,
                  std::vector<PrepackArg>* args) {
  for (int p = 0; p < static_cast<int>(packed.size()); ++p) {
    params->push_back(packed[p]);
    args->push_back({true, p});
  }
}

}  // namespace

std::vector<int> LayoutFreeParamIndices(const PrimFunc& f) {
  std::vector<int> indices;
  auto it = f.attrs().find(kLayoutFreeBuffers);
  if (it == f.attrs().end()) return indices;
  const auto* list = std::get_if<std::vector<int64_t>>(&it->second);
  if (list == nullptr) return indices;
  for (int64_t i : *list) {
    if (i >= 0 && i < static_cast<int64_t>(f.params().size()))
      indices.push_back(static_cast<int>(i));
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

bool IsLayoutFreeParam(const PrimFunc& f, const Buffer& buffer) {
  for (int i : LayoutFreeParamIndices(f)) {
    if (f.params()[i].same_as(buffer)) return true;
  }
  return false;
}

absl::StatusOr<std::optional<PrepackSplit>> SplitPrepack(const PrimFunc& f) {
  if (!f.defined() || f.body().as<BlockRealizeNode>() == nullptr) return std::nullopt;
  const Block root = f.root_block();
  std::vector<Stmt> top;
  if (const auto* seq = root->body.as<SeqStmtNode>()) {
    top = seq->seq;
  } else {
    top = {root->body};
  }
  std::vector<Nest> nests;
  bool any_packs = false;
  for (const Stmt& stmt : top) {
    absl::StatusOr<Nest> nest = Describe(stmt);
    if (!nest.ok()) return nest.status();
    any_packs |= nest->packs;
    nests.push_back(*std::move(nest));
  }
  if (!any_packs) return std::nullopt;

  BufferSet params(f.params().begin(), f.params().end());
  BufferSet written_by_packing, read_by_packing, read_by_kernel, used_by_kernel;
  std::vector<Stmt> packing, kernel;
  for (const Nest& nest : nests) {
    if (!nest.packs) {
      read_by_kernel.insert(nest.loads.begin(), nest.loads.end());
      used_by_kernel.insert(nest.loads.begin(), nest.loads.end());
      used_by_kernel.insert(nest.stores.begin(), nest.stores.end());
      kernel.push_back(nest.stmt);
      continue;
    }
    read_by_packing.insert(nest.loads.begin(), nest.loads.end());
    const std::string& block = nest.blocks.front()->name;
    for (const Buffer& buffer : nest.loads) {
      // A nest may read what it writes itself: a sum over a weight (ShiftInt8Product's).
      if (written_by_packing.count(buffer) || nest.stores.count(buffer) ||
          IsLayoutFreeParam(f, buffer)) {
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("prepack: block ", block, " reads ", buffer.name(),
                       ", which is neither a layout-free parameter nor packed before it"));
    }
    for (const Buffer& buffer : nest.stores) {
      if (params.count(buffer)) {
        return absl::InvalidArgumentError(
            absl::StrCat("prepack: block ", block, " writes the parameter ", buffer.name()));
      }
      written_by_packing.insert(buffer);
    }
    packing.push_back(nest.stmt);
  }

  PrepackSplit split;
  std::vector<Buffer> packing_allocs, kernel_allocs;
  for (const Buffer& buffer : root->alloc_buffers) {
    if (!written_by_packing.count(buffer)) {
      kernel_allocs.push_back(buffer);
    } else if (read_by_kernel.count(buffer)) {
      split.packed.push_back(buffer);
    } else {
      packing_allocs.push_back(buffer);
    }
  }
  std::vector<Buffer> prepack_params, prepacked_params;
  bool placed = false;
  for (int i = 0; i < static_cast<int>(f.params().size()); ++i) {
    const Buffer& param = f.params()[i];
    const bool packing_reads = read_by_packing.count(param) > 0;
    if (packing_reads) {
      prepack_params.push_back(param);
      split.prepack_args.push_back({false, i});
    }
    const bool kernel_uses = used_by_kernel.count(param) > 0;
    // The packed buffers take the place of the first weight the kernel no longer reads (a
    // parameter nothing uses stays with the kernel), so the kernel's arguments keep their order.
    if (kernel_uses || !packing_reads) {
      prepacked_params.push_back(param);
      split.prepacked_args.push_back({false, i});
    } else if (!placed) {
      placed = true;
      AppendPacked(split.packed, &prepacked_params, &split.prepacked_args);
    }
  }
  AppendPacked(split.packed, &prepack_params, &split.prepack_args);
  if (!placed) AppendPacked(split.packed, &prepacked_params, &split.prepacked_args);
  // The halves take no layout-free parameters of their own: their indices are the whole's.
  Annotations attrs = f.attrs();
  attrs.erase(kLayoutFreeBuffers);
  split.prepack = PrimFunc::Make(f.name() + "_prepack", prepack_params,
                                 RootWith(f, packing, packing_allocs), attrs);
  if (kernel.empty()) kernel.push_back(Evaluate(Expr(0)));
  split.prepacked = PrimFunc::Make(f.name() + "_prepacked", prepacked_params,
                                   RootWith(f, kernel, kernel_allocs), attrs);
  return split;
}

}  // namespace tessera
