#include "tuner/best_record.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/structural_hash.h"
#include "rules/default/default_rule.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"

namespace tessera {
namespace {

// Records within the margin are looked at among this many of the fastest.
constexpr int kNearBest = 16;

}  // namespace

absl::StatusOr<std::optional<std::string>> DefaultScheduleHash(const PrimFunc& func,
                                                               const Target& target) {
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<Schedule> sch, rule->Apply(func, target));
    if (sch) return std::optional<std::string>(StructuralHashHex(sch->func()));
  }
  return std::optional<std::string>();
}

absl::StatusOr<PrimFunc> ReplayRecord(const PrimFunc& func, const TuningRecord& record) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(record.trace_json));
  Schedule sch = Schedule::Create(func, 0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch.func();
}

std::optional<std::string> RecordHash(const PrimFunc& func, const TuningRecord& record) {
  absl::StatusOr<PrimFunc> replayed = ReplayRecord(func, record);
  if (!replayed.ok()) return std::nullopt;
  return StructuralHashHex(*replayed);
}

std::vector<TuningRecord> LatestRecordPerProgram(std::vector<TuningRecord> all,
                                                 bool verified_only) {
  // By timestamp, then commit order: a later record of the same trace replaces the earlier one.
  auto later = [](const TuningRecord& a, const TuningRecord& b) {
    return a.timestamp != b.timestamp ? a.timestamp > b.timestamp : a.id > b.id;
  };
  std::unordered_map<std::string, size_t> latest;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].ok() || (verified_only && !all[i].verified)) continue;
    auto [it, inserted] = latest.emplace(all[i].trace_json, i);
    if (!inserted && later(all[i], all[it->second])) it->second = i;
  }
  std::vector<TuningRecord> out;
  out.reserve(latest.size());
  for (const auto& [trace, i] : latest) out.push_back(std::move(all[i]));
  // Fastest first, ties older first, as Database::TopK orders them.
  std::sort(out.begin(), out.end(), [](const TuningRecord& a, const TuningRecord& b) {
    if (a.mean_secs() != b.mean_secs()) return a.mean_secs() < b.mean_secs();
    return a.id < b.id;
  });
  return out;
}

absl::StatusOr<std::vector<TuningRecord>> LatestRecordPerProgram(Database* db,
                                                                 const Workload& workload,
                                                                 const std::string& target,
                                                                 bool verified_only) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> all, db->AllRecords(workload, target));
  return LatestRecordPerProgram(std::move(all), verified_only);
}

absl::StatusOr<std::optional<ChosenRecord>> ChooseBestRecord(
    const PrimFunc& func, const Target& target, const std::vector<TuningRecord>& records,
    double margin) {
  if (records.empty()) return std::optional<ChosenRecord>();
  ChosenRecord fastest{records.front(), std::nullopt};
  // The default's record must be verified too when `verified_only`: `best` shows verified
  // records only. The tuning job asks for its check whatever its time (check_always).
  const double limit = fastest.record.mean_secs() * (1 + margin);
  std::optional<std::string> default_hash;
  bool default_hash_known = false;
  for (size_t i = 1; i < records.size() && static_cast<int>(i) < kNearBest; ++i) {
    const TuningRecord& record = records[i];
    if (record.mean_secs() > limit) break;
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

absl::StatusOr<std::optional<ChosenRecord>> BestRecordOrDefault(Database* db, const PrimFunc& func,
                                                                const Target& target,
                                                                bool verified_only, double margin) {
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload) return std::optional<ChosenRecord>();
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records,
                           LatestRecordPerProgram(db, *workload, target.ToString(), verified_only));
  return ChooseBestRecord(func, target, records, margin);
}

bool BestAndRunoff::changed_by_runoff() const {
  if (runoff_records == 0) return false;
  if (best.has_value() != before_runoff.has_value()) return true;
  return best.has_value() && best->record.trace_json != before_runoff->record.trace_json;
}

absl::StatusOr<BestAndRunoff> BestRecordAndRunoff(Database* db, const PrimFunc& func,
                                                  const Target& target, bool verified_only,
                                                  const std::optional<std::string>& runoff_job) {
  BestAndRunoff out;
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload) return out;
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> all,
                           db->AllRecords(*workload, target.ToString()));
  std::vector<TuningRecord> without;
  for (const TuningRecord& r : all) {
    if (r.is_retiming() && (!runoff_job || r.job_id == *runoff_job)) {
      ++out.runoff_records;
    } else {
      without.push_back(r);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      out.best,
      ChooseBestRecord(func, target, LatestRecordPerProgram(std::move(all), verified_only)));
  if (out.runoff_records == 0) {
    out.before_runoff = out.best;
  } else {
    TESSERA_ASSIGN_OR_RETURN(
        out.before_runoff,
        ChooseBestRecord(func, target, LatestRecordPerProgram(std::move(without), verified_only)));
  }
  return out;
}

absl::StatusOr<TopRecords> TopRecordsWithBest(Database* db, const PrimFunc& func,
                                              const Target& target, bool verified_only, int k) {
  TopRecords out;
  if (k <= 0) return absl::InvalidArgumentError(absl::StrCat("top-k: k = ", k, " < 1"));
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload) return out;
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> latest,
                           LatestRecordPerProgram(db, *workload, target.ToString(), verified_only));
  TESSERA_ASSIGN_OR_RETURN(out.best, ChooseBestRecord(func, target, latest));
  if (out.best) out.records.push_back(out.best->record);
  for (TuningRecord& r : latest) {
    if (static_cast<int>(out.records.size()) >= k) break;
    if (out.best && r.id == out.best->record.id) continue;
    out.records.push_back(std::move(r));
  }
  return out;
}

}  // namespace tessera
