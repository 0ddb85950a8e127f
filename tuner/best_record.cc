#include "tuner/best_record.h"

#include <string>
#include <vector>

#include "base/status_macros.h"
#include "ir/structural_hash.h"
#include "rules/default/default_rule.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"

namespace tessera {
namespace {

// Records within the margin are looked at among this many of the fastest.
constexpr int kNearBest = 16;

// The structural hash of `func` under the first default rule that applies; nullopt if none does.
absl::StatusOr<std::optional<std::string>> DefaultScheduleHash(const PrimFunc& func,
                                                               const Target& target) {
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<Schedule> sch, rule->Apply(func, target));
    if (sch) return std::optional<std::string>(StructuralHashHex(sch->func()));
  }
  return std::optional<std::string>();
}

// The hash of `func` scheduled by `record`'s trace; nullopt when it does not replay (such a
// record is never the default's).
std::optional<std::string> RecordHash(const PrimFunc& func, const TuningRecord& record) {
  absl::StatusOr<Trace> trace = Trace::FromJson(record.trace_json);
  if (!trace.ok()) return std::nullopt;
  Schedule sch = Schedule::Create(func, 0);
  if (!trace->ApplyTo(&sch, /*remove_postproc=*/false).ok()) return std::nullopt;
  return StructuralHashHex(sch.func());
}

}  // namespace

absl::StatusOr<std::optional<ChosenRecord>> BestRecordOrDefault(Database* db, const PrimFunc& func,
                                                                const Target& target,
                                                                bool verified_only, double margin) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload) return std::optional<ChosenRecord>();
  const std::string target_key = target.ToString();
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> top,
                           db->TopK(*workload, target_key, /*k=*/1, verified_only));
  if (top.empty()) return std::optional<ChosenRecord>();
  ChosenRecord fastest{top.front(), std::nullopt};
  // The default's record must be verified too when `verified_only`: `best` shows verified
  // records only. It is whenever the default was the fastest of its task's first batch, the
  // case where tuning finds nothing clearly faster.
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> near,
                           db->TopK(*workload, target_key, kNearBest, verified_only));
  const double limit = top.front().mean_secs() * (1 + margin);
  std::optional<std::string> default_hash;
  bool default_hash_known = false;
  for (const TuningRecord& record : near) {
    if (record.mean_secs() > limit) break;
    if (!record.ok() || record.id == fastest.record.id) continue;
    if (!default_hash_known) {
      TESSERA_ASSIGN_OR_RETURN(default_hash, DefaultScheduleHash(func, target));
      default_hash_known = true;
      if (!default_hash) break;
      if (RecordHash(func, fastest.record) == default_hash) break;  // the fastest is the default
    }
    if (RecordHash(func, record) == default_hash) {
      return std::optional<ChosenRecord>(ChosenRecord{record, fastest.record});
    }
  }
  return std::optional<ChosenRecord>(fastest);
}

}  // namespace tessera
