#include "tuner/apply_best.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/annotations.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tuner/best_record.h"

namespace tessera {
namespace {

bool IsScheduled(const PrimFunc& func) { return func.attrs().count(attr::kScheduled) != 0; }

}  // namespace

absl::StatusOr<IRModule> ApplyBest(const IRModule& mod, const Target& target, Database* db,
                                   std::vector<ApplyBestEntry>* report) {
  IRModule out = mod;
  for (const auto& [name, func] : mod.functions()) {
    ApplyBestEntry entry;
    entry.function = name;
    if (IsScheduled(func)) {
      entry.note = "already scheduled";
    } else {
      TESSERA_ASSIGN_OR_RETURN(std::optional<ChosenRecord> chosen,
                               BestRecordOrDefault(db, func, target, /*verified_only=*/true));
      const TuningRecord* best = chosen ? &chosen->record : nullptr;
      if (!best) {
        TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
        entry.note =
            workload ? "no verified record for this target" : "workload not in the database";
      } else {
        absl::StatusOr<Trace> trace = Trace::FromJson(best->trace_json);
        if (!trace.ok()) {
          return absl::DataLossError(absl::StrCat("apply-best: record ", best->id, " of ", name,
                                                  ": ", trace.status().message()));
        }
        Schedule sch = Schedule::Create(func, 0);
        absl::Status replayed = trace->ApplyTo(&sch, /*remove_postproc=*/false);
        if (!replayed.ok()) {
          return absl::DataLossError(absl::StrCat("apply-best: record ", best->id, " of ", name,
                                                  " does not replay: ", replayed.message()));
        }
        PrimFunc scheduled = sch.func().WithName(name).WithAttr(attr::kScheduled, int64_t{1});
        out.Update(scheduled);
        entry.hit = true;
        entry.record_id = best->id;
        entry.record_secs = best->mean_secs();
      }
    }
    if (report) report->push_back(entry);
  }
  return out;
}

}  // namespace tessera
