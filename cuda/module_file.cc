#include "cuda/module_file.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

constexpr char kFormat[] = "tessera-cuda-module";
constexpr int kVersion = 1;
constexpr char kCubinSuffix[] = ".cubin";

nlohmann::json KernelToJson(const CudaKernel& k) {
  nlohmann::json j = {{"name", k.name},
                      {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                      {"block", {k.block[0], k.block[1], k.block[2]}},
                      {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                      {"param_indices", k.param_indices}};
  if (!k.tensor_maps.empty()) {
    nlohmann::json maps = nlohmann::json::array();
    for (const CudaTensorMap& m : k.tensor_maps) {
      maps.push_back({{"param", m.param}, {"dtype", m.dtype}, {"dims", m.dims}, {"box", m.box}});
    }
    j["tensor_maps"] = maps;
  }
  return j;
}

// One tensor map of kernel `kernel`; `where` names the kernel in errors.
absl::StatusOr<CudaTensorMap> TensorMapFromJson(const nlohmann::json& j, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor map ", j.dump(), ": ", why));
  };
  if (!j.is_object()) return bad("not an object");
  CudaTensorMap m;
  if (!j.contains("param") || !j["param"].is_number_integer() || j["param"].get<int64_t>() < 0) {
    return bad("\"param\" must be a non-negative integer");
  }
  m.param = j["param"].get<int>();
  if (!j.contains("dtype") || !j["dtype"].is_string()) return bad("missing \"dtype\"");
  m.dtype = j["dtype"].get<std::string>();
  if (m.dtype != "float16" && m.dtype != "bfloat16" && m.dtype != "float32") {
    return bad("\"dtype\" must be float16, bfloat16 or float32");
  }
  for (const char* key : {"dims", "box"}) {
    if (!j.contains(key) || !j[key].is_array()) return bad(absl::StrCat("missing \"", key, "\""));
    std::vector<int64_t>& out = std::string(key) == "dims" ? m.dims : m.box;
    for (const nlohmann::json& v : j[key]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        return bad(absl::StrCat("\"", key, "\" must hold positive integers"));
      }
      out.push_back(v.get<int64_t>());
    }
  }
  if (m.dims.size() < 2 || m.dims.size() > 5 || m.box.size() != m.dims.size()) {
    return bad("needs 2 to 5 dimensions, as many in \"box\" as in \"dims\"");
  }
  for (size_t d = 0; d < m.dims.size(); ++d) {
    if (m.box[d] > 256) return bad("a box side exceeds 256");
  }
  return m;
}

// Parses one kernel entry; `where` names it in errors ("<path>: kernel 1").
absl::StatusOr<CudaKernel> KernelFromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, " is not an object"));
  CudaKernel k;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": missing \"name\""));
  }
  k.name = j["name"].get<std::string>();
  for (const char* key : {"grid", "block"}) {
    const nlohmann::json& dims = j.contains(key) ? j[key] : nlohmann::json();
    if (!dims.is_array() || dims.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", k.name, "): \"", key, "\" must be 3 integers"));
    }
    int64_t* out = std::string(key) == "grid" ? k.grid : k.block;
    for (int d = 0; d < 3; ++d) {
      if (!dims[d].is_number_integer() || dims[d].get<int64_t>() < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " (", k.name, "): \"", key, "\" extents must be positive, got ", dims.dump()));
      }
      out[d] = dims[d].get<int64_t>();
    }
  }
  const nlohmann::json& smem =
      j.contains("dynamic_shared_bytes") ? j["dynamic_shared_bytes"] : nlohmann::json(0);
  if (!smem.is_number_integer() || smem.get<int64_t>() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " (", k.name, "): \"dynamic_shared_bytes\" must be >= 0"));
  }
  k.dynamic_shared_bytes = smem.get<int64_t>();
  const nlohmann::json& params =
      j.contains("param_indices") ? j["param_indices"] : nlohmann::json();
  if (!params.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " (", k.name, "): missing \"param_indices\""));
  }
  for (const nlohmann::json& p : params) {
    if (!p.is_number_integer() || p.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", k.name, "): \"param_indices\" must be non-negative integers"));
    }
    k.param_indices.push_back(p.get<int>());
  }
  if (j.contains("tensor_maps")) {
    if (!j["tensor_maps"].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " (", k.name, "): \"tensor_maps\" must be an array"));
    }
    for (const nlohmann::json& m : j["tensor_maps"]) {
      absl::StatusOr<CudaTensorMap> map =
          TensorMapFromJson(m, absl::StrCat(where, " (", k.name, ")"));
      if (!map.ok()) return map.status();
      k.tensor_maps.push_back(*std::move(map));
    }
  }
  return k;
}

}  // namespace

std::string CudaManifestPath(const std::string& cubin_path) {
  std::string suffix = kCubinSuffix;
  std::string stem = cubin_path;
  if (stem.size() >= suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  return stem + ".kernels.json";
}

absl::Status WriteCudaManifest(const std::string& cubin_path, const CudaModuleFile& module) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const CudaKernel& k : module.kernels) kernels.push_back(KernelToJson(k));
  nlohmann::json out = {
      {"format", kFormat}, {"version", kVersion}, {"arch", module.arch}, {"kernels", kernels}};
  std::string path = CudaManifestPath(cubin_path);
  std::ofstream file(path, std::ios::binary);
  file << out.dump(1) << "\n";
  if (!file.good()) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<CudaModuleFile> ReadCudaManifest(const std::string& cubin_path) {
  std::string path = CudaManifestPath(cubin_path);
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read kernel manifest ", path));
  nlohmann::json j = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  if (!j.contains("format") || j["format"] != kFormat || !j.contains("version") ||
      j["version"] != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a ", kFormat, " manifest of version ", kVersion));
  }
  CudaModuleFile module;
  if (j.contains("arch") && j["arch"].is_string()) module.arch = j["arch"].get<std::string>();
  const nlohmann::json& kernels = j.contains("kernels") ? j["kernels"] : nlohmann::json();
  if (!kernels.is_array() || kernels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no kernels"));
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    absl::StatusOr<CudaKernel> k = KernelFromJson(kernels[i], absl::StrCat(path, ": kernel ", i));
    if (!k.ok()) return k.status();
    module.kernels.push_back(*std::move(k));
  }
  return module;
}

}  // namespace tessera
