// Helpers shared by the database tests: small real workloads, real traces (a Schedule run on
// the workload), records built from them, and a temporary directory per test.
#ifndef TESSERA_TESTS_DATABASE_DATABASE_TESTING_H_
#define TESSERA_TESTS_DATABASE_DATABASE_TESTING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "database/database.h"
#include "ir/function.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace testing {

// GMM (batch 1) at n x n x n, float32, as the workload library builds it.
PrimFunc SmallGmm(int64_t n);
// The same computation written with other names for the function, buffers and loops (the
// block is still "C"): structurally equal to SmallGmm(n).
PrimFunc RenamedGmm(int64_t n);

// A real trace, scheduled on SmallGmm(n): SamplePerfectTile of loop `loop` (1..3: i, j, k)
// with the decision {n / inner, inner}, then a Split by the sampled factors. Distinct
// (loop, inner) pairs give distinct traces.
std::string TileTrace(int64_t n, int loop, int64_t inner);

// A successful record of `workload` on `target` (args, provenance and timestamp filled).
TuningRecord MakeRecord(const Workload& workload, const std::string& target,
                        const std::string& trace_json, std::vector<double> run_secs);
// A record whose candidate failed with `error`.
TuningRecord MakeFailedRecord(const Workload& workload, const std::string& target,
                              const std::string& trace_json, const std::string& error);

// Canonical target strings.
std::string CpuTarget();
std::string Sm80Target();
std::string Sm90Target();

// Every field except id (workload_id included).
void ExpectSameRecord(const TuningRecord& a, const TuningRecord& b);

// The schema 2 -> 3 migration of a backend: commits a record through `open`, lets
// `downgrade_to_schema_two` remove the stage-time columns and the version row 3 (as a schema 2
// database is), then checks that `open` migrates it in place: the old record reads 0 for every
// stage and new records keep theirs.
void ExpectSchemaTwoMigratesInPlace(const std::function<std::unique_ptr<Database>()>& open,
                                    const std::function<void()>& downgrade_to_schema_two);

// The schema 3 -> 4 migration of a backend: commits a record through `open`, lets
// `downgrade_to_schema_three` remove the retimes column and the version row 4, then checks that
// `open` migrates it in place: the old record is a measurement of its own (retimes -1), and a
// new re-measurement keeps its link.
void ExpectSchemaThreeMigratesInPlace(const std::function<std::unique_ptr<Database>()>& open,
                                      const std::function<void()>& downgrade_to_schema_three);

// A fresh directory, removed with its contents when it goes out of scope (kept when the test
// failed).
using TempDir = ScopedTempDir;

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_DATABASE_DATABASE_TESTING_H_
