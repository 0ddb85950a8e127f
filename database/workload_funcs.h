// The functions of a SQL database's workloads, parsed from their stored IR JSON once and kept
// by workload id: both SQL databases (SQLite, PostgreSQL) need a workload's function on every
// lookup and every read of its records, and parsing it each time would dominate those reads.
// A workload row never changes once committed, so an entry never goes stale.
//
// Not thread-safe: the owning database's mutex guards it.
#ifndef TESSERA_DATABASE_WORKLOAD_FUNCS_H_
#define TESSERA_DATABASE_WORKLOAD_FUNCS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

class WorkloadFuncs {
 public:
  // `database_name` names the database in errors (a file path, or a URL without its password).
  explicit WorkloadFuncs(std::string database_name) : name_(std::move(database_name)) {}

  // The function of workload `id`, parsed from `func_json` the first time it is asked for.
  // kDataLoss naming the database and the workload when the JSON does not parse.
  absl::StatusOr<PrimFunc> Load(int64_t id, const std::string& func_json);
  // Keeps `func` as workload `id`'s: a workload this process inserted, once committed (a
  // rolled-back id may be given to another workload).
  void Add(int64_t id, const PrimFunc& func) { funcs_.emplace(id, func); }

 private:
  const std::string name_;
  std::map<int64_t, PrimFunc> funcs_;
};

}  // namespace tessera

#endif  // TESSERA_DATABASE_WORKLOAD_FUNCS_H_
