// What the PostgreSQL stores (the records database, database/postgres_database.cc, and the
// server's job store, server/postgres_job_store.cc) share of libpq: a query's result owned
// and cleared, its values read as text, integers, doubles and booleans, and libpq's
// multi-line messages made one line for errors.
#ifndef TESSERA_DATABASE_POSTGRES_RESULT_H_
#define TESSERA_DATABASE_POSTGRES_RESULT_H_

#include <libpq-fe.h>

#include <cstdint>
#include <string>
#include <utility>

namespace tessera {

// One query's result (may be null: the query could not be sent), cleared on destruction.
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result) {}
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  PgResult(PgResult&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
  ~PgResult() { PQclear(result_); }

  PGresult* get() const { return result_; }
  int rows() const { return PQntuples(result_); }
  bool IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
  std::string Text(int row, int column) const;
  int64_t Int(int row, int column) const;
  // Doubles come back exact when the session set extra_float_digits = 3.
  double Double(int row, int column) const;
  bool Bool(int row, int column) const { return PQgetvalue(result_, row, column)[0] == 't'; }

 private:
  PGresult* result_;
};

// libpq's messages span lines ("...failed: No such file\n\tIs the server running...?\n"):
// one line, with the line breaks (and the indentation after them) replaced by `separator`
// and trailing white space dropped.
std::string PgOneLine(std::string text, const char* separator);

}  // namespace tessera

#endif  // TESSERA_DATABASE_POSTGRES_RESULT_H_
