#include "tuner/runoff.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "tuner/best_record.h"

namespace tessera {
namespace {

// The default's record is looked for among this many of the fastest programs: one slower than
// that lost by far more than any runoff would change.
constexpr size_t kDefaultSearched = 64;
// A tuned schedule that loses its runoff leaves the next fastest as the best, which may have
// been lucky too: it runs off against the default in turn, this many rounds at most.
constexpr int kMaxRounds = 3;

// Times from two machines are not compared: a runoff measured across workers is timed again,
// this many times at most.
constexpr int kMaxMeasureAttempts = 3;

// The worker that timed `o` (the batch's when the outcome does not say).
const std::string& OutcomeWorker(const MeasuredBatch& batch, const MeasureOutcome& o) {
  return o.provenance.has_value() ? o.provenance->worker_id : batch.provenance.worker_id;
}

// A worker other than the first outcome's that timed some of `batch`; empty if there is none.
std::string OtherWorker(const MeasuredBatch& batch) {
  if (batch.outcomes.empty()) return "";
  const std::string& first = OutcomeWorker(batch, batch.outcomes[0]);
  for (const MeasureOutcome& o : batch.outcomes) {
    if (OutcomeWorker(batch, o) != first) return OutcomeWorker(batch, o);
  }
  return "";
}

// The order of the runoff's runs: each program three times, alternately, neither always first.
constexpr bool kRunIsDefault[] = {true, false, false, true, true, false};

// A record of `old`'s program timed by the runoff's runs of it: the run whose mean is the
// median of the three. One run (one child process) can be slow throughout, or carry one slow
// repeat: GEMM and depthwise defaults were timed at 2-12x their time that way in jobs
// (docs/tuning.md), and a mean over all runs would keep the outlier.
TuningRecord RunoffRecord(const TuningRecord& old, std::vector<const MeasureOutcome*> runs,
                          const Provenance& provenance, const std::optional<std::string>& job_id) {
  std::sort(runs.begin(), runs.end(), [](const MeasureOutcome* a, const MeasureOutcome* b) {
    return *a->mean_secs() < *b->mean_secs();
  });
  const MeasureOutcome& median = *runs[runs.size() / 2];
  TuningRecord r;
  r.workload_id = old.workload_id;
  r.target = old.target;
  r.trace_json = old.trace_json;
  r.run_secs = median.run_secs;
  r.args = old.args;
  r.timestamp =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.provenance = median.provenance.value_or(provenance);
  r.verified = old.verified;  // the same program passed its check when the job measured it
  r.job_id = job_id.value_or(old.job_id);
  r.retimes = old.id;  // a re-measurement, not a trial: it says which record it times again
  for (const MeasureOutcome* run : runs) {
    r.stage_secs.build += run->build_secs;
    r.stage_secs.run += run->run_wall_secs;
  }
  return r;
}

// Times `fastest` and `def` side by side, commits both programs' new records and says whether
// the best record is the tuned schedule afterwards.
absl::StatusOr<Runoff> RunOffRound(Database* db, const PrimFunc& func, const Target& target,
                                   bool verified_only, const TuningRecord& fastest,
                                   const TuningRecord& def, Measurer* measurer,
                                   const std::optional<std::string>& job_id) {
  TESSERA_ASSIGN_OR_RETURN(PrimFunc default_func, ReplayRecord(func, def));
  TESSERA_ASSIGN_OR_RETURN(PrimFunc fastest_func, ReplayRecord(func, fastest));
  MeasureRequest request;
  request.target = target;
  request.workload = func;
  for (bool is_default : kRunIsDefault) {
    request.candidates.push_back(is_default ? default_func : fastest_func);
  }
  request.verify = false;  // both passed their checks when the job measured them
  request.measure_fully = true;
  request.same_machine = true;
  MeasuredBatch measured;
  for (int attempt = 1;; ++attempt) {
    TESSERA_ASSIGN_OR_RETURN(measured, measurer->Measure(request));
    for (const MeasureOutcome& o : measured.outcomes) {
      if (!o.ok()) {
        return absl::UnavailableError(absl::StrCat("runoff of record ", fastest.id,
                                                   " against the default schedule's record ",
                                                   def.id, ": ", o.error_msg));
      }
    }
    const std::string other_worker = OtherWorker(measured);
    if (other_worker.empty()) break;
    // A lease that expired half reported goes to another worker: times from two machines
    // compare nothing, so the batch is timed again, whole.
    if (attempt == kMaxMeasureAttempts) {
      return absl::UnavailableError(absl::StrCat(
          "runoff of record ", fastest.id, " against the default schedule's record ", def.id,
          ": timed on two workers (", OutcomeWorker(measured, measured.outcomes[0]), " and ",
          other_worker, ") in each of ", kMaxMeasureAttempts, " attempts"));
    }
  }
  Runoff runoff;
  runoff.fastest_id = fastest.id;
  runoff.default_id = def.id;
  runoff.fastest_secs_before = fastest.mean_secs();
  runoff.default_secs_before = def.mean_secs();
  std::vector<const MeasureOutcome*> default_runs, fastest_runs;
  for (size_t i = 0; i < measured.outcomes.size(); ++i) {
    (kRunIsDefault[i] ? default_runs : fastest_runs).push_back(&measured.outcomes[i]);
  }
  const TuningRecord default_record = RunoffRecord(def, default_runs, measured.provenance, job_id);
  const TuningRecord fastest_record =
      RunoffRecord(fastest, fastest_runs, measured.provenance, job_id);
  runoff.default_secs = default_record.mean_secs();
  runoff.fastest_secs = fastest_record.mean_secs();
  TESSERA_ASSIGN_OR_RETURN(runoff.default_new_id, db->CommitRecord(default_record));
  TESSERA_ASSIGN_OR_RETURN(runoff.fastest_new_id, db->CommitRecord(fastest_record));
  TESSERA_ASSIGN_OR_RETURN(std::optional<ChosenRecord> best,
                           BestRecordOrDefault(db, func, target, verified_only));
  runoff.tuned_kept = best && best->record.trace_json == fastest.trace_json;
  runoff.best_id = best ? best->record.id : -1;
  return runoff;
}

}  // namespace

const char* BestAfter(const Runoff& round) {
  if (round.tuned_kept) return "tuned";
  return round.best_id == round.default_new_id ? "default" : "other";
}

std::string RunoffVerdict(const Runoff& round) {
  if (round.tuned_kept) return "the tuned schedule stays the best";
  if (round.best_id != round.default_new_id) {
    return absl::StrCat("record ", round.best_id, " is the best now");
  }
  return round.fastest_secs < round.default_secs
             ? "the tuned schedule won by less than the timings' noise (3%); the default is the "
               "best"
             : "the tuned schedule was not faster; the default is the best";
}

absl::StatusOr<std::vector<Runoff>> RunOff(Database* db, const PrimFunc& func, const Target& target,
                                           bool verified_only, Measurer* measurer,
                                           const std::optional<std::string>& job_id) {
  std::vector<Runoff> rounds;
  TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> workload, db->FindWorkload(func));
  if (!workload) return rounds;
  TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> default_hash,
                           DefaultScheduleHash(func, target));
  if (!default_hash) return rounds;
  std::set<int64_t> confirmed;  // records a round committed
  for (int round = 0; round < kMaxRounds; ++round) {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<TuningRecord> records,
        LatestRecordPerProgram(db, *workload, target.ToString(), verified_only));
    // Done when the fastest is the default or was timed beside it already.
    if (records.size() < 2 || confirmed.count(records[0].id) ||
        RecordHash(func, records[0]) == default_hash) {
      break;
    }
    const TuningRecord& fastest = records[0];
    const TuningRecord* def = nullptr;
    for (size_t i = 1; i < std::min(records.size(), kDefaultSearched); ++i) {
      if (RecordHash(func, records[i]) == default_hash) {
        def = &records[i];
        break;
      }
    }
    if (def == nullptr) break;
    TESSERA_ASSIGN_OR_RETURN(Runoff runoff, RunOffRound(db, func, target, verified_only, fastest,
                                                        *def, measurer, job_id));
    confirmed.insert(runoff.fastest_new_id);
    rounds.push_back(runoff);
  }
  return rounds;
}

}  // namespace tessera
