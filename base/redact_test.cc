// redact_test.cc -- redact_url() hides credentials; check_http_url() says
// what is wrong without quoting the URL.
#include "base/redact.h"

#include <gtest/gtest.h>

namespace zkfarm {
namespace {

TEST(RedactUrl, DropsTheQueryStringFragmentAndUserinfo) {
  EXPECT_EQ(redact_url("https://bucket.example/w/p0.wtns?X-Amz-Signature=deadbeef&X-Amz-Expires=60"),
            "https://bucket.example/w/p0.wtns?<redacted>");
  EXPECT_EQ(redact_url("http://user:secret@host:8080/a/b#token"), "http://host:8080/a/b?<redacted>");
  EXPECT_EQ(redact_url("https://host?sig=1"), "https://host?<redacted>");
  EXPECT_EQ(redact_url("https://host/plain.wtns"), "https://host/plain.wtns");
  EXPECT_EQ(redact_url("file:///srv/zkfarm/p0.wtns"), "file:///srv/zkfarm/p0.wtns");
  EXPECT_EQ(redact_url("not a url?secret"), "not a url?<redacted>");
  EXPECT_EQ(redact_url(""), "");
  EXPECT_EQ(redact_url("https://a@b@host/x"), "https://host/x");
}

TEST(CheckHttpUrl, NamesTheProblemWithoutTheUrl) {
  EXPECT_EQ(check_http_url("https://host/p.wtns?sig=1"), "");
  EXPECT_EQ(check_http_url("HTTP://host/p"), "");
  EXPECT_NE(check_http_url("ftp://host/p"), "");
  EXPECT_NE(check_http_url("https:///p"), "");
  EXPECT_NE(check_http_url("https://user@:80/p"), "");
  EXPECT_NE(check_http_url("https://host/a b"), "");
  EXPECT_EQ(check_http_url("https://host/p?sig=secret x").find("secret"), std::string::npos);
  EXPECT_NE(check_http_url("https://host/" + std::string(9000, 'a')), "");
}

}  // namespace
}  // namespace zkfarm
