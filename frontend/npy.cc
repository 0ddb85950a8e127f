#include "frontend/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tessera {
namespace {

struct DescrRow {
  const char* descr;
  DataType dtype;
};
constexpr DescrRow kDescrs[] = {
    {"<f4", DataType::Float32()}, {"<f8", DataType::Float64()}, {"<f2", DataType::Float16()},
    {"<i8", DataType::Int64()},   {"<i4", DataType::Int32()},   {"|i1", DataType::Int8()},
    {"|u1", DataType::UInt8()},   {"|b1", DataType::Bool()},
};

// The text between the quotes after `key` in the header dict, or after ':' up to `end`.
bool Field(const std::string& header, const std::string& key, char open, char close,
           std::string* out) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return false;
  size_t a = header.find(open, k + key.size() + 2);
  if (a == std::string::npos) return false;
  size_t b = header.find(close, a + 1);
  if (b == std::string::npos) return false;
  *out = header.substr(a + 1, b - a - 1);
  return true;
}

}  // namespace

absl::StatusOr<NDArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a supported .npy file: ", what));
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) return bad("no magic");
  const int major = static_cast<unsigned char>(data[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<unsigned char>(data[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return bad(absl::StrCat("version ", major));
  }
  if (header_start + header_len > data.size()) return bad("truncated header");
  const std::string header = data.substr(header_start, header_len);
  std::string descr, order, shape_text;
  if (!Field(header, "descr", '\'', '\'', &descr)) return bad("no descr");
  if (!Field(header, "fortran_order", ' ', ',', &order)) return bad("no fortran_order");
  if (absl::StripAsciiWhitespace(order) != "False") return bad("Fortran order");
  if (!Field(header, "shape", '(', ')', &shape_text)) return bad("no shape");
  const DataType* dtype = nullptr;
  for (const DescrRow& r : kDescrs) {
    if (descr == r.descr) dtype = &r.dtype;
  }
  if (dtype == nullptr) return bad(absl::StrCat("dtype ", descr));
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(shape_text, ',', absl::SkipWhitespace())) {
    int64_t d;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &d) || d < 0) {
      return bad(absl::StrCat("shape (", shape_text, ")"));
    }
    shape.push_back(d);
  }
  NDArray a = NDArray::Empty(*dtype, shape);
  const size_t offset = header_start + header_len;
  if (data.size() - offset != static_cast<size_t>(a.nbytes())) {
    return bad(absl::StrCat(data.size() - offset, " data bytes for ", a.nbytes()));
  }
  std::memcpy(a.data(), data.data() + offset, static_cast<size_t>(a.nbytes()));
  return a;
}

absl::Status WriteNpy(const std::string& path, const NDArray& array) {
  const char* descr = nullptr;
  for (const DescrRow& r : kDescrs) {
    if (r.dtype == array.dtype()) descr = r.descr;
  }
  if (descr == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no .npy dtype for ", array.dtype().ToString()));
  }
  std::string shape;
  for (int64_t d : array.shape()) absl::StrAppend(&shape, d, ",");
  if (array.shape().size() > 1) shape.pop_back();
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", shape, "), }");
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(static_cast<const char*>(array.data()), array.nbytes());
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace tessera
