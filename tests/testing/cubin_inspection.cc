#include "tests/testing/cubin_inspection.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/testing/process.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace testing {
namespace {

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The entries of a directory whose names start with `prefix`.
std::vector<std::string> Entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) out.push_back(dir + "/" + name);
  }
  closedir(d);
  return out;
}

// "  REG:96 STACK:0 SHARED:32768 LOCAL:0 ..." into `kernel`.
void ParseResources(absl::string_view line, KernelImage* kernel) {
  for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits(':', 1));
    if (kv.size() != 2) continue;
    int value = 0;
    if (!absl::SimpleAtoi(kv[1], &value)) continue;
    if (kv[0] == "REG") kernel->registers = value;
    if (kv[0] == "STACK") kernel->stack_bytes = value;
    if (kv[0] == "LOCAL") kernel->local_bytes = value;
    if (kv[0] == "SHARED") kernel->shared_bytes = value;
  }
}

}  // namespace

std::string FindCuobjdump(const std::string& venv) {
  const char* env = std::getenv("TESSERA_CUOBJDUMP");
  if (env != nullptr && *env != '\0') return env;
  const std::string toolkit = DefaultCudaIncludeDir() + "/../bin/cuobjdump";
  if (IsExecutable(toolkit)) return toolkit;
  for (const std::string& python : Entries(venv + "/lib", "python3")) {
    for (const std::string& cuda : Entries(python + "/site-packages/nvidia", "cu")) {
      const std::string path = cuda + "/bin/cuobjdump";
      if (IsExecutable(path)) return path;
    }
  }
  return "";
}

absl::StatusOr<std::vector<KernelImage>> InspectCubin(const std::string& cubin,
                                                      const std::string& cuobjdump,
                                                      const std::string& scratch_dir) {
  const std::string path = scratch_dir + "/image.cubin";
  {
    std::ofstream out(path, std::ios::binary);
    out << cubin;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  std::vector<KernelImage> kernels;
  const CommandResult resources = RunCommand({cuobjdump, "-res-usage", path}, 60, scratch_dir);
  if (resources.exit_code != 0) {
    return absl::InternalError(absl::StrCat("cuobjdump -res-usage failed: ", resources.err));
  }
  for (absl::string_view line : absl::StrSplit(resources.out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "Function ")) {
      kernels.emplace_back();
      kernels.back().name = std::string(absl::StripSuffix(line, ":"));
    } else if (!kernels.empty() && absl::StartsWith(line, "REG:")) {
      ParseResources(line, &kernels.back());
    }
  }
  const CommandResult sass = RunCommand({cuobjdump, "-sass", path}, 60, scratch_dir);
  if (sass.exit_code != 0) {
    return absl::InternalError(absl::StrCat("cuobjdump -sass failed: ", sass.err));
  }
  KernelImage* current = nullptr;
  for (absl::string_view line : absl::StrSplit(sass.out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "Function : ")) {
      current = nullptr;
      for (KernelImage& k : kernels) {
        if (k.name == line) current = &k;
      }
      continue;
    }
    // "/*0080*/  @!P0 LDGSTS.E.BYPASS.128 [R3], [R4.64] ;": the opcode after the address
    // and an optional predicate.
    if (current == nullptr || !absl::ConsumePrefix(&line, "/*")) continue;
    const size_t end = line.find("*/");
    if (end == std::string::npos) continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line.substr(end + 2), ' ', absl::SkipWhitespace());
    size_t w = 0;
    if (w < words.size() && absl::StartsWith(words[w], "@")) ++w;
    if (w < words.size()) current->opcodes.insert(std::string(absl::StripSuffix(words[w], ";")));
  }
  return kernels;
}

}  // namespace testing
}  // namespace tessera
