// The in-memory database (database.h: NewMemoryDatabase): the same semantics as the SQLite
// one without a file, for tests and ablations. Thread-safe (one mutex).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/database.h"
#include "database/record_json.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"

namespace tessera {
namespace {

class MemoryDatabase final : public Database {
 public:
  absl::StatusOr<Workload> CommitWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string hash = StructuralHashHex(func);
    if (const Workload* found = FindLocked(func, hash)) return *found;
    Workload w{static_cast<int64_t>(workloads_.size()) + 1, hash, func};
    workloads_.push_back(w);
    by_hash_.emplace(hash, w.id);
    return w;
  }

  absl::StatusOr<std::optional<Workload>> FindWorkload(const PrimFunc& func) override {
    std::lock_guard<std::mutex> lock(mu_);
    const Workload* found = FindLocked(func, StructuralHashHex(func));
    if (found == nullptr) return std::optional<Workload>();
    return std::optional<Workload>(*found);
  }

  absl::StatusOr<std::vector<Workload>> AllWorkloads() override {
    std::lock_guard<std::mutex> lock(mu_);
    return workloads_;
  }

  absl::StatusOr<int64_t> CommitRecord(const TuningRecord& record) override {
    TESSERA_RETURN_IF_ERROR(ValidateRecord(record));
    std::lock_guard<std::mutex> lock(mu_);
    if (record.workload_id < 1 || record.workload_id > static_cast<int64_t>(workloads_.size())) {
      return absl::NotFoundError(
          absl::StrCat("commit record: unknown workload id ", record.workload_id));
    }
    TuningRecord stored = record;
    stored.id = static_cast<int64_t>(records_.size()) + 1;
    records_.push_back(stored);
    return stored.id;
  }

  absl::Status SetVerified(int64_t record_id, bool verified) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (record_id < 1 || record_id > static_cast<int64_t>(records_.size())) {
      return absl::NotFoundError(absl::StrCat("set verified: unknown record id ", record_id));
    }
    records_[record_id - 1].verified = verified;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<TuningRecord>> TopK(const Workload& workload,
                                                 const std::string& target, int k,
                                                 bool verified_only) override {
    if (k < 0) return absl::InvalidArgumentError(absl::StrCat("top-k: k = ", k, " < 0"));
    std::vector<TuningRecord> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const TuningRecord& r : records_) {
        if (r.workload_id == workload.id && r.target == target && r.ok() &&
            (r.verified || !verified_only)) {
          out.push_back(r);
        }
      }
    }
    // records_ is in commit order, so a stable sort keeps older records first on ties.
    std::stable_sort(out.begin(), out.end(), [](const TuningRecord& a, const TuningRecord& b) {
      return a.mean_secs() < b.mean_secs();
    });
    if (out.size() > static_cast<size_t>(k)) out.resize(k);
    return out;
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords(const Workload& workload,
                                                       const std::string& target) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<TuningRecord> out;
    for (const TuningRecord& r : records_) {
      if (r.workload_id == workload.id && r.target == target) out.push_back(r);
    }
    return out;
  }

  absl::StatusOr<std::vector<TuningRecord>> AllRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

  absl::StatusOr<std::vector<TuningRecord>> RecordsAfter(int64_t after_id, int limit) override {
    if (limit < 0)
      return absl::InvalidArgumentError(absl::StrCat("records: limit ", limit, " < 0"));
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<TuningRecord> out;
    for (size_t i = static_cast<size_t>(std::max<int64_t>(after_id, 0));
         i < records_.size() && static_cast<int>(out.size()) < limit; ++i) {
      out.push_back(records_[i]);
    }
    return out;
  }

  absl::StatusOr<int64_t> NumRecords() override {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(records_.size());
  }

 private:
  // The stored workload structurally equal to `func` (whose hash is `hash`), or nullptr.
  const Workload* FindLocked(const PrimFunc& func, const std::string& hash) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto [begin, end] = by_hash_.equal_range(hash);
    for (auto it = begin; it != end; ++it) {
      const Workload& w = workloads_[it->second - 1];
      if (StructuralEqual(w.func, func)) return &w;
    }
    return nullptr;
  }

  std::mutex mu_;
  std::vector<Workload> workloads_ ABSL_GUARDED_BY(mu_);  // id = index + 1
  // hash -> workload id (collisions allowed)
  std::multimap<std::string, int64_t> by_hash_ ABSL_GUARDED_BY(mu_);
  std::vector<TuningRecord> records_ ABSL_GUARDED_BY(mu_);  // id = index + 1, commit order
};

}  // namespace

std::unique_ptr<Database> NewMemoryDatabase() { return std::make_unique<MemoryDatabase>(); }

}  // namespace tessera
