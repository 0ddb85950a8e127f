#include "bench/anchors/mlas_anchor.h"

#include <sys/wait.h>

#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace anchors {
namespace {

// 'text' for sh -c, with any single quote closed, escaped and reopened.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string OrtShapeArg(const std::string& name, const std::string& workload,
                        const std::map<std::string, int64_t>& params) {
  std::string arg = absl::StrCat(name, ":", workload, ":");
  bool first = true;
  for (const auto& [key, value] : params) {
    absl::StrAppend(&arg, first ? "" : ",", key, "=", value);
    first = false;
  }
  return arg;
}

absl::StatusOr<double> ParseOrtLine(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLAS anchor: not a JSON object from ort_anchor.py: ", line.substr(0, 200)));
  }
  if (j.contains("error") && j["error"].is_string()) {
    return absl::UnimplementedError(absl::StrCat("MLAS anchor: ", j["error"].get<std::string>()));
  }
  if (!j.contains("seconds") || !j["seconds"].is_number() || j["seconds"].get<double>() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLAS anchor: no positive \"seconds\" in: ", line.substr(0, 200)));
  }
  return j["seconds"].get<double>();
}

absl::StatusOr<double> MlasSeconds(const std::string& python, const std::string& script,
                                   const std::string& name, const std::string& workload,
                                   const std::map<std::string, int64_t>& params) {
  const std::string command =
      absl::StrCat(ShellQuote(python), " ", ShellQuote(script), " --threads 2 --shape ",
                   ShellQuote(OrtShapeArg(name, workload, params)));
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    return absl::InternalError(absl::StrCat("MLAS anchor: cannot run ", command));
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int rc = pclose(pipe);
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    return absl::InternalError(
        absl::StrCat("MLAS anchor: `", command, "` failed (see its stderr above)"));
  }
  const size_t end = out.find_last_not_of("\n");
  const size_t start = end == std::string::npos ? 0 : out.rfind('\n', end);
  return ParseOrtLine(out.substr(start == std::string::npos ? 0 : start + 1));
}

}  // namespace anchors
}  // namespace tessera
