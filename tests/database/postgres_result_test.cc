// The libpq pieces the PostgreSQL stores share (database/postgres_result.h): values of a real
// query's result on the test process's throw-away cluster (tests/database/postgres_cluster.h;
// skipped, saying why, where the PostgreSQL binaries are missing), and libpq's multi-line
// messages as one line.
#include "database/postgres_result.h"

#include <gtest/gtest.h>

#include "tests/database/postgres_cluster.h"

namespace tessera {
namespace {

TEST(PgResultTest, ReadsTextIntegersDoublesBooleansAndNulls) {
  std::string why;
  testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
  if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
  PGconn* conn = PQconnectdb(cluster->NewDatabase().value().c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PgResult set(PQexec(conn, "SET extra_float_digits = 3"));
  ASSERT_EQ(PQresultStatus(set.get()), PGRES_COMMAND_OK);
  PgResult r(PQexec(conn,
                    "SELECT 'a\"b' AS t, 9007199254740993::BIGINT AS i, 0.1::FLOAT8 AS d, "
                    "true AS yes, false AS no, NULL::TEXT AS nothing "
                    "UNION ALL SELECT '', -1, -2.5, false, true, 'x'"));
  ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn);
  ASSERT_EQ(r.rows(), 2);
  EXPECT_EQ(r.Text(0, 0), "a\"b");
  EXPECT_EQ(r.Int(0, 1), 9007199254740993);
  EXPECT_EQ(r.Double(0, 2), 0.1) << "exact with extra_float_digits = 3";
  EXPECT_TRUE(r.Bool(0, 3));
  EXPECT_FALSE(r.Bool(0, 4));
  EXPECT_TRUE(r.IsNull(0, 5));
  EXPECT_FALSE(r.IsNull(1, 5));
  EXPECT_EQ(r.Text(1, 0), "");
  EXPECT_EQ(r.Int(1, 1), -1);
  EXPECT_EQ(r.Double(1, 2), -2.5);
  // Moved, the result is cleared once (by its new owner).
  PgResult moved(std::move(r));
  EXPECT_EQ(r.get(), nullptr);
  EXPECT_EQ(moved.rows(), 2);
  PQfinish(conn);
}

TEST(PgOneLineTest, JoinsLinesDroppingTheirIndentationAndTrailingSpace) {
  EXPECT_EQ(PgOneLine("connection failed: No such file\n\tIs the server running?\n", "; "),
            "connection failed: No such file; Is the server running?");
  EXPECT_EQ(PgOneLine("SELECT 1\n  FROM t\n  WHERE x", " "), "SELECT 1 FROM t WHERE x");
  EXPECT_EQ(PgOneLine("one line", "; "), "one line");
  EXPECT_EQ(PgOneLine("\n", "; "), "");
}

}  // namespace
}  // namespace tessera
