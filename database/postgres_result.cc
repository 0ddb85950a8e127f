#include "database/postgres_result.h"

#include <cctype>
#include <cstdlib>

namespace tessera {

std::string PgResult::Text(int row, int column) const {
  return std::string(PQgetvalue(result_, row, column),
                     static_cast<size_t>(PQgetlength(result_, row, column)));
}

int64_t PgResult::Int(int row, int column) const {
  return std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}

double PgResult::Double(int row, int column) const {
  return std::strtod(PQgetvalue(result_, row, column), nullptr);
}

std::string PgOneLine(std::string text, const char* separator) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    while (i + 1 < text.size() && (text[i + 1] == '\t' || text[i + 1] == ' ')) ++i;
    out += separator;
  }
  return out;
}

}  // namespace tessera
