// http_fetch_test.cc -- cluster/http_fetch against a real HTTP server (the
// test's own: Debian's python3 -m http.server on 127.0.0.1): bodies into
// memory and into files, a broken transfer started over, typed failures
// whose messages never carry the query string, the size cap.
#include "cluster/http_fetch.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

class HttpFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.file("www/sub"));
    body_.resize(300000);
    for (std::size_t i = 0; i < body_.size(); ++i) body_[i] = static_cast<char>((i * 131) ^ (i >> 7));
    write_file(dir_.file("www/sub/blob.bin"), body_);
    server_ = std::make_unique<HttpServer>(dir_.file("www"), dir_.file("http.log"));
    base_ = server_->url();
  }
  TempDir dir_;
  std::string body_, base_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpFetchTest, GetsABodyIntoOneBuffer) {
  const auto bytes = http_get(base_ + "sub/blob.bin?X-Signature=topsecret", HttpLimits{}, body_.size());
  ASSERT_EQ(bytes.size(), body_.size());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), body_);
  EXPECT_EQ(http_get(base_ + "sub/blob.bin", HttpLimits{}).size(), body_.size());
}

TEST_F(HttpFetchTest, FailuresAreTypedAndNeverQuoteTheQuery) {
  try {
    http_get(base_ + "sub/missing.bin?X-Signature=topsecret", HttpLimits{});
    FAIL() << "a missing file was fetched";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_FALSE(e.transient());
    EXPECT_EQ(std::string(e.what()).find("topsecret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sub/missing.bin?<redacted>"), std::string::npos) << e.what();
  }
  try {
    http_get(base_ + "sub/blob.bin?sig=topsecret", HttpLimits{}, body_.size() - 1);
    FAIL() << "a body of the wrong size was accepted";
  } catch (const HttpError& e) {
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("topsecret"), std::string::npos) << e.what();
  }
  HttpLimits small;
  small.max_bytes = 1000;
  EXPECT_THROW(http_get(base_ + "sub/blob.bin", small), HttpError);
  // Nothing listens there: transient, no status.
  try {
    http_get("http://127.0.0.1:" + std::to_string(free_port()) + "/x?sig=topsecret", HttpLimits{});
    FAIL() << "a closed port answered";
  } catch (const HttpError& e) {
    EXPECT_TRUE(e.transient());
    EXPECT_EQ(std::string(e.what()).find("topsecret"), std::string::npos) << e.what();
  }
  // Only http and https, and a host.
  EXPECT_THROW(http_get("ftp://127.0.0.1/x", HttpLimits{}), HttpError);
  EXPECT_THROW(http_get("http:///x", HttpLimits{}), HttpError);
}

TEST_F(HttpFetchTest, TlsIsVerified) {
  // The test server speaks plain HTTP: an https:// URL to it fails the TLS
  // handshake instead of falling back to plaintext.
  const std::string https = "https://" + base_.substr(std::string("http://").size()) + "sub/blob.bin";
  EXPECT_THROW(http_get(https, HttpLimits{}), HttpError);
  HttpLimits bad_ca;
  bad_ca.ca_file = dir_.file("no-such-ca.pem");
  EXPECT_THROW(http_get(https, bad_ca), HttpError);
}

TEST_F(HttpFetchTest, DownloadsIntoAFileAndStartsABrokenOneOver) {
  const std::string path = dir_.file("blob.part");
  std::uint64_t last_done = 0, last_total = 0;
  auto progress = [&](std::uint64_t done, std::uint64_t total) {
    last_done = done;
    last_total = total;
  };
  http_download(base_ + "sub/blob.bin", path, HttpLimits{}, body_.size(), progress);
  EXPECT_EQ(read_file(path), body_);
  EXPECT_EQ(last_done, body_.size());
  EXPECT_EQ(last_total, body_.size());
  // A transfer broken earlier left a prefix, or bytes that are not one: this
  // server ignores Range, so the file is started over either way.
  write_file(path, body_.substr(0, 1000));
  http_download(base_ + "sub/blob.bin", path, HttpLimits{}, body_.size(), progress);
  EXPECT_EQ(read_file(path), body_);
  write_file(path, std::string(5000, 'x'));
  http_download(base_ + "sub/blob.bin", path, HttpLimits{}, std::nullopt, progress);
  EXPECT_EQ(read_file(path), body_);
  EXPECT_THROW(http_download(base_ + "sub/none.bin", path, HttpLimits{}, std::nullopt, progress), HttpError);
}

TEST_F(HttpFetchTest, APrefixIsAllThatCrossesWithOrWithoutRangeSupport) {
  // python3 -m http.server ignores Range: the body is cut off after n bytes.
  HttpPrefix p = http_get_prefix(base_ + "sub/blob.bin?sig=topsecret", HttpLimits{}, 1000);
  ASSERT_EQ(p.bytes.size(), 1000u);
  EXPECT_EQ(std::string(p.bytes.begin(), p.bytes.end()), body_.substr(0, 1000));
  ASSERT_TRUE(p.total);
  EXPECT_EQ(*p.total, body_.size());
  // A server that honours Range sends only the prefix (206 with the total).
  HttpServer ranged(dir_.file("www"), dir_.file("range.log"), runfile("tests/cluster/range_http_server.py"));
  p = http_get_prefix(ranged.url() + "sub/blob.bin", HttpLimits{}, 4096);
  ASSERT_EQ(p.bytes.size(), 4096u);
  EXPECT_EQ(std::string(p.bytes.begin(), p.bytes.end()), body_.substr(0, 4096));
  ASSERT_TRUE(p.total);
  EXPECT_EQ(*p.total, body_.size());
  EXPECT_TRUE(eventually([&] { return ranged.log().find("status=206 bytes=0-4095/300000") != std::string::npos; }, 5s))
      << ranged.log();
  // A prefix longer than the body is the whole body.
  p = http_get_prefix(ranged.url() + "sub/blob.bin", HttpLimits{}, 1 << 20);
  EXPECT_EQ(p.bytes.size(), body_.size());
  EXPECT_THROW(http_get_prefix(ranged.url() + "sub/missing.bin", HttpLimits{}, 100), HttpError);
}

}  // namespace
}  // namespace zkfarm::testing
