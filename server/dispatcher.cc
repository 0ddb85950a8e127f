#include "server/dispatcher.h"

#include "worker/host.h"

namespace tessera {

std::optional<std::string> Dispatcher::TargetFor(const std::string& wanted) const {
  return FirstTargetDescribed(wanted, VerifiedTargets());
}

std::unique_ptr<Dispatcher> NewDispatcher(JobStore* store, DispatcherOptions options) {
  if (store->shared() != nullptr) return NewSharedDispatcher(store, options);
  return NewLocalDispatcher(store, options);
}

}  // namespace tessera
