// `tessera sample`: draw N random candidates from a function's search space for a target (a
// design space chosen uniformly, decisions erased, replayed and postprocessed:
// tuner/space_generator.h SampleCandidate), build the valid ones in parallel (C builder for
// cpu, NVRTC for cuda, no GPU needed) and, on cpu, run each once and compare its outputs with
// the unscheduled function's (worker/check.h). Prints one progress line per phase on stderr and
// a summary: valid, rejected (per postprocessor), build failed, wrong output, run failed, with
// the first few messages of each kind. Exit status 2 when a candidate built but computed wrong
// outputs, 1 on errors, else 0.
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "tuner/space_generator.h"
#include "worker/backends.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct SampleOptions {
  FunctionSource source;
  std::string target = "cpu";
  int num = 32;
  int64_t seed = 0;
  bool no_build = false;
  bool no_run = false;
  double timeout = 60;
  int max_errors = 3;
  int max_draws = kDefaultMaxDraws;
  bool json = false;
};

// What happened to the samples; every sample lands in exactly one of rejected (by stage),
// build_failed, run_failed, wrong_output, passed, or (not built / not run) valid only.
struct Tally {
  int sampled = 0;
  int draws = 0;  // draws of the sampler (a rejected draw is drawn again, up to --max-draws)
  int valid = 0;  // passed postprocessing
  int unfilled = 0;  // samples for which every draw was rejected
  std::map<std::string, int> rejected;  // rejected draws by stage: "replay" or a postprocessor
  int built = 0;
  int build_failed = 0;
  int checked = 0;
  int passed = 0;
  int wrong_output = 0;
  int run_failed = 0;
  // The first messages, by kind ("rejected", "build failed", "wrong output", "run failed").
  std::map<std::string, std::vector<std::string>> errors;

  void AddError(const std::string& kind, const std::string& message, int max_errors) {
    std::vector<std::string>& list = errors[kind];
    if (static_cast<int>(list.size()) < max_errors) list.push_back(message);
  }
  int Rejected() const {
    int n = 0;
    for (const auto& [stage, count] : rejected) n += count;
    return n;
  }
};

// "VerifyGPUCode 3, replay 1".
std::string CountsText(const std::map<std::string, int>& counts) {
  std::vector<std::string> parts;
  for (const auto& [name, count] : counts) parts.push_back(absl::StrCat(name, " ", count));
  return absl::StrJoin(parts, ", ");
}

// The first line of a (possibly long, multi-line compiler) message and, when it ends in ':'
// ("nvrtc: compilation for sm_90 failed:"), the first line after it that names an error; at
// most 300 characters.
std::string Headline(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  if (!line.empty() && line.back() == ':') {
    for (absl::string_view rest : absl::StrSplit(message, '\n')) {
      if (absl::StrContains(rest, "error")) {
        absl::StrAppend(&line, " ", absl::StripAsciiWhitespace(rest));
        break;
      }
    }
  }
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

void PrintText(const Tally& t, const std::string& label, const Target& target, size_t spaces,
               const SampleOptions& options) {
  std::printf("%s on %s: %zu design space%s, %d samples (seed %ld)\n", label.c_str(),
              target.ToString().c_str(), spaces, spaces == 1 ? "" : "s", t.sampled,
              static_cast<long>(options.seed));
  std::printf("  valid:        %d  (%d draws, %.1f%% of draws passed postprocessing)\n", t.valid,
              t.draws, t.draws > 0 ? 100.0 * t.valid / t.draws : 0.0);
  std::printf("  rejected:     %d draws%s; %d samples without a valid draw\n", t.Rejected(),
              t.rejected.empty() ? "" : absl::StrCat("  (", CountsText(t.rejected), ")").c_str(),
              t.unfilled);
  if (!options.no_build) {
    std::printf("  built:        %d\n  build failed: %d\n", t.built, t.build_failed);
  }
  if (t.checked > 0 || t.run_failed > 0) {
    std::printf("  correct:      %d\n  wrong output: %d\n  run failed:   %d\n", t.passed,
                t.wrong_output, t.run_failed);
  }
  for (const auto& [kind, messages] : t.errors) {
    for (const std::string& m : messages) std::printf("  [%s] %s\n", kind.c_str(), m.c_str());
  }
}

nlohmann::json TallyJson(const Tally& t, const std::string& label, const Target& target,
                         size_t spaces, const SampleOptions& options) {
  nlohmann::json out = {{"function", label},   {"target", target.ToString()},
                        {"seed", options.seed}, {"spaces", spaces},
                        {"samples", t.sampled}, {"draws", t.draws},
                        {"valid", t.valid},     {"unfilled", t.unfilled},
                        {"rejected", t.rejected}};
  if (!options.no_build) {
    out["built"] = t.built;
    out["build_failed"] = t.build_failed;
  }
  if (t.checked > 0 || t.run_failed > 0) {
    out["correct"] = t.passed;
    out["wrong_output"] = t.wrong_output;
    out["run_failed"] = t.run_failed;
  }
  out["errors"] = t.errors;
  return out;
}

int RunSample(const SampleOptions& options) {
  if (options.num <= 0) return ReportError(absl::InvalidArgumentError("-n must be positive"));
  absl::StatusOr<LoadedSpaces> loaded =
      LoadDesignSpaces(options.source, options.target, options.seed);
  if (!loaded.ok()) return ReportError(loaded.status());
  const std::string& label = loaded->label;
  const PrimFunc* func = &loaded->func;
  const Target* target = &loaded->target;
  const SpaceConfig* config = &loaded->config;
  const std::vector<Schedule>* spaces = &loaded->spaces;
  if (spaces->empty()) {
    return ReportError(absl::FailedPreconditionError(
        absl::StrCat("the rules of ", target->kind_name(), " produced no design space")));
  }

  // Sampling starts from the simplified traces, as the search strategies do
  // (docs/reference/metaschedule.md §5.2).
  std::vector<Trace> traces;
  for (const Schedule& space : *spaces) traces.push_back(space.trace().Simplified(true));
  Tally t;
  Random rng(options.seed);
  std::vector<BuildInput> inputs;
  for (int i = 0; i < options.num; ++i) {
    SampledCandidate sample =
        SampleCandidate(*func, traces, config->postprocs, &rng, options.max_draws);
    ++t.sampled;
    t.draws += sample.draws;
    for (const CandidateFailure& f : sample.rejections) {
      ++t.rejected[f.stage];
      t.AddError("rejected", Headline(absl::StrCat(f.stage, ": ", f.message)), options.max_errors);
    }
    if (!sample.schedule.ok()) {
      ++t.unfilled;
      continue;
    }
    ++t.valid;
    inputs.push_back({sample.schedule->func(), *target});
  }
  std::fprintf(stderr, "sampled %d candidates from %zu design space%s: %d valid\n", t.sampled,
               spaces->size(), spaces->size() == 1 ? "" : "s", t.valid);

  if (!options.no_build && !inputs.empty()) {
    std::unique_ptr<Builder> builder = NewBuilder(*target);
    std::vector<BuildResult> builds = builder->Build(inputs);
    std::vector<size_t> built;
    for (size_t i = 0; i < builds.size(); ++i) {
      if (builds[i].ok()) {
        built.push_back(i);
      } else {
        ++t.build_failed;
        t.AddError("build failed", Headline(builds[i].error_msg), options.max_errors);
      }
    }
    t.built = static_cast<int>(built.size());
    std::fprintf(stderr, "built %d of %zu\n", t.built, inputs.size());
    if (target->is_cpu() && !options.no_run && !built.empty()) {
      absl::StatusOr<ReferenceOutputs> reference =
          ComputeReference(*func, options.seed, options.timeout);
      if (!reference.ok()) return ReportError(reference.status());
      for (size_t i : built) {
        absl::StatusOr<CheckOutcome> check = CheckAgainstReference(
            inputs[i].func, *reference, *target, builds[i], options.timeout);
        if (!check.ok()) {
          ++t.run_failed;
          t.AddError("run failed", Headline(std::string(check.status().message())),
                     options.max_errors);
          continue;
        }
        ++t.checked;
        if (check->passed) {
          ++t.passed;
        } else {
          ++t.wrong_output;
          t.AddError("wrong output",
                     absl::StrCat("candidate ", i, ": ", check->mismatches,
                                  " mismatches against the ", check->reference,
                                  ", max abs error ", check->max_abs_error),
                     options.max_errors);
        }
      }
      std::fprintf(stderr, "checked %d of %d against the unscheduled function\n", t.checked,
                   t.built);
    }
  }

  if (options.json) {
    std::printf("%s\n", TallyJson(t, label, *target, spaces->size(), options).dump(2).c_str());
  } else {
    PrintText(t, label, *target, spaces->size(), options);
  }
  return t.wrong_output > 0 ? 2 : 0;
}

}  // namespace

Command RegisterSampleCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "sample", "Sample random candidates from a function's search space, build and check them");
  auto options = std::make_shared<SampleOptions>();
  options->source.AddOptions(app);
  app->add_option("--target", options->target,
                  "Target: cpu (build, run and check), or cuda, e.g. 'cuda -arch=sm_80' "
                  "(build with NVRTC only; no GPU needed)")
      ->capture_default_str();
  app->add_option("-n,--num", options->num, "Number of candidates to sample")
      ->capture_default_str();
  app->add_option("--seed", options->seed,
                  "Seed of the design spaces, the sampling and the random check inputs")
      ->capture_default_str();
  app->add_option("--max-draws", options->max_draws,
                  "Draws per sample: a draw the postprocessors reject is drawn again")
      ->capture_default_str();
  app->add_flag("--no-build", options->no_build,
                "Only sample and postprocess (count valid and rejected candidates)");
  app->add_flag("--no-run", options->no_run, "Build the valid candidates but do not run them");
  app->add_option("--timeout", options->timeout, "Seconds before one candidate's run is killed")
      ->capture_default_str();
  app->add_option("--max-errors", options->max_errors,
                  "Messages shown per kind of failure (rejected, build failed, ...)")
      ->capture_default_str();
  app->add_flag("--json", options->json,
                "Print {function, target, seed, spaces, samples, draws, valid, unfilled, rejected, built, "
                "build_failed, correct, wrong_output, run_failed, errors}");
  return {app, [options]() { return RunSample(*options); }};
}

}  // namespace cli
}  // namespace tessera
