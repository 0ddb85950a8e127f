#include "cli/common.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "frontend/workload_spec.h"
#include "ir/parser.h"
#include "ir/serialize.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

absl::StatusOr<PrimFunc> LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<PrimFunc> func =
      EndsWith(path, ".json") ? LoadPrimFuncJson(text.str()) : ParseFunc(text.str());
  if (!func.ok()) {
    return absl::Status(func.status().code(), absl::StrCat(path, ": ", func.status().message()));
  }
  return func;
}

}  // namespace

void FunctionSource::AddOptions(CLI::App* app) {
  app->add_option("workload", workload,
                  "Workload name (see `tessera workloads`), optionally with its shape "
                  "(GMM:M=64,N=64,K=64), or a file holding a function (.ir text or .json)")
      ->required();
  app->add_option("--shape", shape, "Shape parameters of the workload, e.g. M=64,N=32,K=16");
  app->add_option("--dtype", dtype, "Data type of the workload (default: its first dtype)");
  app->add_option("--acc", acc,
                  "What a float16 or bfloat16 product or convolution sums in: float32 (its "
                  "result then float32; default: the dtype itself); tf32: a float32 product's "
                  "operands rounded to TF32, as tensor cores multiply them");
}

absl::StatusOr<PrimFunc> FunctionSource::Load(std::string* label) const {
  if (IsRegularFile(workload)) {
    if (!shape.empty() || !dtype.empty() || !acc.empty()) {
      return absl::InvalidArgumentError(
          "--shape, --dtype and --acc apply to workloads, not to files");
    }
    *label = workload;
    return LoadFile(workload);
  }
  // NAME:K=V,... carries its shape inline (the form job commands take).
  TESSERA_ASSIGN_OR_RETURN(SpecFunction loaded, LoadWorkloadSpec(workload, shape, dtype, acc));
  *label = loaded.label;
  return loaded.func;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read trace file ", path));
  std::stringstream text;
  text << in.rdbuf();
  // What `default`, `schedule`, `best` and `records` print with --json: the trace under "trace".
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const bool wrapped = j.is_object() && j.contains("trace");
  absl::StatusOr<Trace> trace = Trace::FromJson(wrapped ? j["trace"].dump() : text.str());
  if (!trace.ok()) {
    return absl::Status(trace.status().code(), absl::StrCat(path, ": ", trace.status().message()));
  }
  return trace;
}

absl::StatusOr<Schedule> Replay(const PrimFunc& func, const Trace& trace, const std::string& path,
                                int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  absl::Status applied = trace.ApplyTo(&sch, /*remove_postproc=*/false);
  if (!applied.ok()) {
    return absl::Status(applied.code(), absl::StrCat(path, ": ", applied.message()));
  }
  return sch;
}

int ReportError(const absl::Status& status) {
  std::fprintf(stderr, "tessera: error: %s\n", std::string(status.message()).c_str());
  return 1;
}

absl::Status WithFlagName(const absl::Status& status) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"max_trials_per_task: ", "--trials-per-task: "},
      {"max_trials: ", "--trials: "},
      {"trials_per_iter: ", "--trials-per-iter: "},
      {"strategy: ", "--strategy: "},
      {"cost_model: ", "--cost-model: "},
      {"task_scheduler: ", "--task-scheduler: "},
      {"rule_params: ", "--rule-params: "},
  };
  const std::string message(status.message());
  for (const auto& [field, flag] : kFlags) {
    if (absl::StartsWith(message, field)) {
      return absl::Status(status.code(),
                          absl::StrCat(flag, absl::string_view(message).substr(strlen(field))));
    }
  }
  return status;
}

std::string FormatSeconds(double seconds) {
  if (seconds < 1e-3) return absl::StrFormat("%.2f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.3f ms", seconds * 1e3);
  return absl::StrFormat("%.3f s", seconds);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void FunctionList::AddOptions(CLI::App* app) {
  app->add_option("workloads", specs,
                  "Workloads: NAME or NAME:K=V,... (e.g. GMM:M=256,N=256,K=256), files "
                  "(.ir/.json), or for tune ONNX models (.onnx: their tasks, weighted)")
      ->required();
  app->add_option("--dtype", dtype,
                  "Data type of every workload (default: each one's first dtype)");
  app->add_option("--acc", acc,
                  "What float16 and bfloat16 products and convolutions sum in: float32 (their "
                  "results then float32; default: the dtype itself)");
}

absl::StatusOr<std::vector<FunctionList::Entry>> FunctionList::Load() const {
  std::vector<Entry> entries;
  std::map<std::string, int> used;
  for (const std::string& spec : specs) {
    FunctionSource source;
    source.workload = spec;
    source.dtype = IsRegularFile(spec) ? "" : dtype;
    source.acc = IsRegularFile(spec) ? "" : acc;
    Entry entry;
    TESSERA_ASSIGN_OR_RETURN(entry.func, source.Load(&entry.label));
    std::string stem = spec.substr(0, spec.find(':'));
    std::string base;
    for (char c : stem.substr(stem.find_last_of('/') + 1)) {
      base +=
          std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    }
    int n = used[base]++;
    entry.name = n == 0 ? base : absl::StrCat(base, "_", n);
    entry.func = entry.func.WithName(entry.name);
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<LoadedSpaces> LoadDesignSpaces(const FunctionSource& source,
                                              const std::string& target, int64_t seed) {
  LoadedSpaces out;
  TESSERA_ASSIGN_OR_RETURN(out.func, source.Load(&out.label));
  TESSERA_ASSIGN_OR_RETURN(out.target, ResolveTarget(target));
  TESSERA_ASSIGN_OR_RETURN(out.config, DefaultSpaceConfig(out.target));
  TESSERA_ASSIGN_OR_RETURN(out.spaces, GenerateDesignSpaces(out.func, out.config, seed));
  return out;
}

absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Database>> db = ::tessera::OpenDatabase(path);
  if (!db.ok()) {
    return absl::Status(db.status().code(), absl::StrCat("database ", RedactDatabaseUrl(path), ": ",
                                                         db.status().message()));
  }
  return db;
}

}  // namespace cli
}  // namespace tessera
