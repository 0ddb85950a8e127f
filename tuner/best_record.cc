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
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> top,
                           db->TopK(*workload, target.ToString(), kNearBest, verified_only));
  if (top.empty()) return std::optional<ChosenRecord>();
  ChosenRecord fastest{top.front(), std::nullopt};
  const double limit = top.front().mean_secs() * (1 + margin);
  if (top.size() == 1 || top[1].mean_secs() > limit) return std::optional<ChosenRecord>(fastest);
  TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> default_hash,
                           DefaultScheduleHash(func, target));
  if (!default_hash) return std::optional<ChosenRecord>(fastest);
  for (size_t i = 0; i < top.size() && top[i].mean_secs() <= limit; ++i) {
    if (RecordHash(func, top[i]) != default_hash) continue;
    if (i == 0) return std::optional<ChosenRecord>(fastest);
    return std::optional<ChosenRecord>(ChosenRecord{top[i], top.front()});
  }
  return std::optional<ChosenRecord>(fastest);
}

}  // namespace tessera
