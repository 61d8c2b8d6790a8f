// RecordFilter against testdata/record-filters/cases.tsv, whose expectations an independent
// implementation (Python's json module, testdata/record-filters/generate.py) decided; the Java
// client checks the same file, so the push thread and a job filtering fetched records agree.
#include "nearstream/push/record_filter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace nearstream::push {
namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

RecordFilter FilterFromSpec(const std::string& spec) {
  const std::vector<std::string> parts = Split(spec, ':');
  if (parts[0] == "bytes_contain") return RecordFilter::BytesContain(FromHex(parts.at(1))).value();
  EXPECT_EQ(parts[0], "json_field_in");
  std::vector<std::string> values;
  for (const std::string& v : Split(parts.at(2), ',')) values.push_back(FromHex(v));
  return RecordFilter::JsonFieldIn(FromHex(parts.at(1)), values).value();
}

TEST(RecordFilterTest, AgreesWithTheIndependentCases) {
  std::ifstream in(std::string(NEARSTREAM_TESTDATA_DIR) + "/record-filters/cases.tsv");
  ASSERT_TRUE(in) << "missing testdata/record-filters/cases.tsv";
  std::string line;
  int cases = 0, passing = 0, wrong = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cols = Split(line, '\t');
    ASSERT_GE(cols.size(), 3u) << line;
    const bool expect = cols[0] == "pass";
    const bool got = FilterFromSpec(cols[1]).Matches(FromHex(cols[2]));
    ++cases;
    passing += expect ? 1 : 0;
    if (got != expect && ++wrong <= 20) {
      ADD_FAILURE() << "expected " << cols[0] << " for " << cols[1] << " on "
                    << (cols.size() > 3 ? cols[3] : cols[2]);
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(cases, 2000);
  EXPECT_GT(passing, 200);
}

TEST(RecordFilterTest, NoFilterPassesEverything) {
  RecordFilter none;
  EXPECT_TRUE(none.passes_all());
  EXPECT_TRUE(none.Matches(""));
  EXPECT_TRUE(none.Matches("not json"));
}

TEST(RecordFilterTest, FindsTheTopLevelMemberOnly) {
  RecordFilter f = RecordFilter::JsonFieldIn("event_type", {"view", "click"}).value();
  EXPECT_TRUE(f.Matches(R"({"ad_id":"1","event_type":"view","n":[1,{"event_type":"x"}]})"));
  EXPECT_TRUE(f.Matches(R"({"event_type":"cl\u0069ck"})"));
  EXPECT_FALSE(f.Matches(R"({"a":{"event_type":"view"}})"));
  // A repeated name passes when any of its values does.
  EXPECT_TRUE(f.Matches(R"({"event_type":"view","event_type":"purchase"})"));
  EXPECT_TRUE(f.Matches(R"({"event_type":"purchase","event_type":"view"})"));
  EXPECT_FALSE(f.Matches(R"({"event_type":"purchase","event_type":"buy"})"));
  EXPECT_TRUE(f.Matches(R"({"event_type":5,"event_type":"view"})"));
  EXPECT_FALSE(f.Matches(R"({"event_type":"view",})"));
  EXPECT_FALSE(f.Matches(R"({"event_type":"view"} x)"));
  EXPECT_FALSE(f.Matches(R"({"event_type":"view","n":01})"));
  EXPECT_FALSE(f.Matches(R"({"event_type":"\ud83d"})"));
}

TEST(RecordFilterTest, RefusesFiltersOutOfBounds) {
  EXPECT_EQ(RecordFilter::JsonFieldIn("", {"v"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordFilter::JsonFieldIn("f", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordFilter::JsonFieldIn("f", std::vector<std::string>(4097, "v")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordFilter::BytesContain("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RecordFilter::BytesContain(std::string(65537, 'x')).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(RecordFilter::BytesContain(std::string(65536, 'x')).ok());
}

}  // namespace
}  // namespace nearstream::push
