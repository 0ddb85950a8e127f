#include "frontend/npy.h"

#include <zlib.h>

#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_bytes.h"
#include "base/status_macros.h"

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

// The array of an .npy file's bytes; errors name `path` (a file, or an archive's member).
absl::StatusOr<NDArray> ParseNpy(const std::string& data, const std::string& path) {
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

// The bytes of `array` as an .npy file (version 1.0); errors name `path`.
absl::StatusOr<std::string> NpyBytes(const NDArray& array, const std::string& path) {
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
  std::string out("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  out += header;
  out.append(static_cast<const char*>(array.data()), static_cast<size_t>(array.nbytes()));
  return out;
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Zip records (PKWARE APPNOTE 4.3): little-endian fields at fixed offsets.
constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50,
                   kEndOfCentralDirectory = 0x06054b50;

uint32_t Le(const std::string& d, size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(d[at + i])) << (8 * i);
  return v;
}

void PutLe(std::string* d, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) d->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Inflates a raw deflate stream of `size` bytes.
absl::StatusOr<std::string> Inflate(const char* data, size_t compressed, size_t size) {
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return absl::InternalError("inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z.avail_in = static_cast<uInt>(compressed);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(size);
  const int rc = inflate(&z, Z_FINISH);
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.total_out != size) {
    return absl::InvalidArgumentError("deflate data does not inflate to its size");
  }
  return out;
}

}  // namespace

absl::StatusOr<NDArray> ReadNpy(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  return ParseNpy(data, path);
}

absl::Status WriteNpy(const std::string& path, const NDArray& array) {
  TESSERA_ASSIGN_OR_RETURN(std::string bytes, NpyBytes(array, path));
  return WriteFile(path, bytes);
}

absl::StatusOr<NamedArrays> ReadNpz(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string d, ReadFileBytes(path));
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a supported .npz file: ", what));
  };
  // The end-of-central-directory record: 22 bytes and a comment of up to 64 KiB at the end.
  size_t eocd = std::string::npos;
  if (d.size() >= 22) {
    const size_t lowest = d.size() > 22 + 0xffff ? d.size() - 22 - 0xffff : 0;
    for (size_t at = d.size() - 22 + 1; eocd == std::string::npos && at-- > lowest;) {
      if (Le(d, at, 4) == kEndOfCentralDirectory) eocd = at;
    }
  }
  if (eocd == std::string::npos) return bad("not a zip archive");
  const uint32_t entries = Le(d, eocd + 10, 2);
  size_t at = Le(d, eocd + 16, 4);
  if (entries == 0xffff || at == 0xffffffff) return bad("zip64 archive");
  NamedArrays arrays;
  for (uint32_t e = 0; e < entries; ++e) {
    if (at + 46 > d.size() || Le(d, at, 4) != kCentralHeader) return bad("truncated directory");
    const uint32_t method = Le(d, at + 10, 2), crc = Le(d, at + 16, 4);
    const uint32_t compressed = Le(d, at + 20, 4), size = Le(d, at + 24, 4);
    const size_t name_len = Le(d, at + 28, 2), extra_len = Le(d, at + 30, 2),
                 comment_len = Le(d, at + 32, 2), local = Le(d, at + 42, 4);
    if (at + 46 + name_len > d.size()) return bad("truncated directory");
    const std::string name = d.substr(at + 46, name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (compressed == 0xffffffff || size == 0xffffffff || local == 0xffffffff) {
      return bad(absl::StrCat(name, ": zip64 sizes"));
    }
    // The member's data follows its local header, whose own sizes np.savez leaves to zip64
    // fields: the directory's sizes are the ones to trust.
    if (local + 30 > d.size() || Le(d, local, 4) != kLocalHeader) {
      return bad(absl::StrCat(name, ": no local header"));
    }
    const size_t start = local + 30 + Le(d, local + 26, 2) + Le(d, local + 28, 2);
    if (start + compressed > d.size()) return bad(absl::StrCat(name, ": truncated"));
    std::string bytes;
    if (method == 0) {
      bytes = d.substr(start, compressed);
    } else if (method == 8) {
      absl::StatusOr<std::string> inflated = Inflate(d.data() + start, compressed, size);
      if (!inflated.ok()) return bad(absl::StrCat(name, ": ", inflated.status().message()));
      bytes = *std::move(inflated);
    } else {
      return bad(absl::StrCat(name, ": compression method ", method));
    }
    if (crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())) !=
        crc) {
      return bad(absl::StrCat(name, ": CRC mismatch"));
    }
    if (!absl::EndsWith(name, ".npy")) return bad(absl::StrCat(name, ": not an .npy member"));
    TESSERA_ASSIGN_OR_RETURN(NDArray a, ParseNpy(bytes, absl::StrCat(path, ": ", name)));
    arrays.push_back({name.substr(0, name.size() - 4), std::move(a)});
  }
  return arrays;
}

absl::Status WriteNpz(const std::string& path, const NamedArrays& arrays) {
  std::string zip, directory;
  constexpr uint32_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, the zip epoch
  for (const auto& [array_name, array] : arrays) {
    const std::string name = array_name + ".npy";
    TESSERA_ASSIGN_OR_RETURN(std::string bytes, NpyBytes(array, absl::StrCat(path, ": ", name)));
    if (bytes.size() >= 0xffffffffu || zip.size() >= 0xffffffffu) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", name, ": over 4 GiB (zip64)"));
    }
    const uint32_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
    const uint32_t offset = static_cast<uint32_t>(zip.size());
    // Local header: version 2.0, no flags, stored, time 0, date, crc, sizes, name, no extra.
    for (std::string* h : {&zip, &directory}) {
      PutLe(h, h == &zip ? kLocalHeader : kCentralHeader, 4);
      if (h == &directory) PutLe(h, 20, 2);  // version made by
      PutLe(h, 20, 2);
      PutLe(h, 0, 2);
      PutLe(h, 0, 2);
      PutLe(h, 0, 2);
      PutLe(h, kDosDate, 2);
      PutLe(h, crc, 4);
      PutLe(h, static_cast<uint32_t>(bytes.size()), 4);
      PutLe(h, static_cast<uint32_t>(bytes.size()), 4);
      PutLe(h, static_cast<uint32_t>(name.size()), 2);
      PutLe(h, 0, 2);
      if (h == &directory) {
        PutLe(h, 0, 2);  // comment
        PutLe(h, 0, 2);  // disk
        PutLe(h, 0, 2);  // internal attributes
        PutLe(h, 0, 4);  // external attributes
        PutLe(h, offset, 4);
      }
      *h += name;
    }
    zip += bytes;
  }
  const uint32_t directory_offset = static_cast<uint32_t>(zip.size());
  zip += directory;
  PutLe(&zip, kEndOfCentralDirectory, 4);
  PutLe(&zip, 0, 2);
  PutLe(&zip, 0, 2);
  PutLe(&zip, static_cast<uint32_t>(arrays.size()), 2);
  PutLe(&zip, static_cast<uint32_t>(arrays.size()), 2);
  PutLe(&zip, static_cast<uint32_t>(directory.size()), 4);
  PutLe(&zip, directory_offset, 4);
  PutLe(&zip, 0, 2);
  return WriteFile(path, zip);
}

}  // namespace tessera
