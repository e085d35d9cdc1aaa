// http_fetch_test.cc -- cluster/http_fetch against a real HTTP server (the
// test's own: Debian's python3 -m http.server on 127.0.0.1): bodies into
// memory and into files, a broken transfer started over, typed failures
// whose messages never carry the query string, the size cap against
// servers that announce or send more than it, and confined URLs
// (--witness-url-allow): loopback and private addresses refused directly and
// through redirects, with one error text for refused and unreachable URLs.
#include "cluster/http_fetch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <new>

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


// The peak resident memory of this process (VmHWM), in bytes.
std::uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) << 10;
  return 0;
}

TEST_F(HttpFetchTest, ServersThatAnnounceOrSendMoreThanTheCapAreRefused) {
  HttpServer hostile(dir_.file("www"), dir_.file("hostile.log"), runfile("tests/cluster/range_http_server.py"),
                     {"--huge-length", "/sub/blob.bin", "--endless", "/sub/endless.bin"});
  std::filesystem::copy_file(dir_.file("www/sub/blob.bin"), dir_.file("www/sub/endless.bin"));
  HttpLimits capped;
  capped.max_bytes = body_.size();
  const std::uint64_t rss_before = peak_rss_bytes();
  // 60 GiB announced: refused before a byte of the body is kept.
  try {
    http_get(hostile.url() + "sub/blob.bin", capped);
    FAIL() << "a 60 GiB Content-Length was accepted";
  } catch (const HttpError& e) {
    EXPECT_TRUE(e.too_large()) << e.what();
    EXPECT_NE(std::string(e.what()).find("the server announces more than the 300000 bytes"), std::string::npos)
        << e.what();
  }
  // No length, and a body that never ends: cut off as it passes the cap.
  try {
    http_get(hostile.url() + "sub/endless.bin", capped);
    FAIL() << "an endless body was accepted";
  } catch (const HttpError& e) {
    EXPECT_TRUE(e.too_large()) << e.what();
    EXPECT_NE(std::string(e.what()).find("runs past 300000 bytes"), std::string::npos) << e.what();
  }
  EXPECT_LT(peak_rss_bytes(), rss_before + (64u << 20)) << "the refusals grew the process";
  // Under the 64 GiB default cap, the 60 GiB the server announces cannot be
  // reserved here: the failure comes back as an exception after curl
  // returns, never through curl's C frames (which would end the process).
  EXPECT_ANY_THROW(http_get(hostile.url() + "sub/blob.bin", HttpLimits{}));
  // The same server's Range requests are honest: the prefix is fine.
  EXPECT_EQ(http_get_prefix(hostile.url() + "sub/blob.bin", capped, 100).bytes.size(), 100u);
}

TEST_F(HttpFetchTest, UrlPoliciesParseOrSayWhatIsWrong) {
  const UrlPolicy p = parse_url_policy({"Store.Internal, 10.0.0.5", "::1", "http://127.0.0.1:8080/w", "public"});
  EXPECT_TRUE(p.public_hosts);
  EXPECT_EQ(p.hosts, (std::vector<std::string>{"store.internal", "10.0.0.5", "[::1]"}));
  ASSERT_EQ(p.prefixes.size(), 1u);
  EXPECT_EQ(p.prefixes[0].port, 8080);
  EXPECT_EQ(p.prefixes[0].path, "/w");
  EXPECT_FALSE(parse_url_policy({"none"}).public_hosts);
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{}, {"none", "host"}, {"host:8080"}, {"ftp://host/"},
                                             {"http://host/w/?sig=secret"}, {"http://user@host/"}, {"ho st"},
                                             {"http://host/w/%2e%2e/"}})
    EXPECT_THROW(parse_url_policy(bad), std::invalid_argument) << (bad.empty() ? "(none)" : bad[0]);
}

TEST_F(HttpFetchTest, ConfinedTransfersReachOnlyWhatTheAllowListNames) {
  // server_ (S) serves www on 127.0.0.1; "localhost" resolves to loopback
  // too. R redirects: to S by the name localhost, to S by address (outside
  // R's prefix), and within R out of its /pub/ prefix (the same connection).
  const std::string s_port = std::to_string(server_->port());
  std::filesystem::create_directories(dir_.file("www/pub"));
  std::filesystem::copy_file(dir_.file("www/sub/blob.bin"), dir_.file("www/pub/blob.bin"));
  HttpServer r(dir_.file("www"), dir_.file("redirect.log"), runfile("tests/cluster/range_http_server.py"),
               {"--redirect", "/pub/to-localhost=http://localhost:" + s_port + "/sub/blob.bin", "--redirect",
                "/pub/to-address=http://127.0.0.1:" + s_port + "/sub/blob.bin", "--redirect",
                "/pub/to-private=/sub/blob.bin"});
  const auto limits_for = [](const std::vector<std::string>& allow) {
    HttpLimits limits;
    limits.urls = parse_url_policy(allow);
    limits.connect_timeout = std::chrono::seconds(5);
    return limits;
  };
  // Every refusal reads the same after the URL.
  const auto expect_refused = [](const std::string& url, const HttpLimits& limits) {
    try {
      http_get(url, limits);
      ADD_FAILURE() << url << " was fetched";
    } catch (const HttpError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what, "GET " + redact_url(url) + ": " + std::string(kUnreachable)) << url;
      EXPECT_EQ(e.status(), 0) << url;
    }
  };
  const std::string closed = "http://127.0.0.1:" + std::to_string(free_port()) + "/sub/blob.bin";
  // "public" (the binaries' default): loopback by address or by name, and a
  // private address, are refused before any connection.
  const HttpLimits public_only = limits_for({"public"});
  expect_refused(base_ + "sub/blob.bin", public_only);
  expect_refused("http://localhost:" + s_port + "/sub/blob.bin", public_only);
  expect_refused("http://10.255.1.2/sub/blob.bin", public_only);
  expect_refused("http://[::1]:" + s_port + "/sub/blob.bin", public_only);
  expect_refused(closed, public_only);
  expect_refused(base_ + "sub/blob.bin", limits_for({"none"}));
  // A host entry allows that host, on any port; a closed port there says
  // what a refused URL says.
  const HttpLimits loopback = limits_for({"127.0.0.1"});
  EXPECT_EQ(http_get(base_ + "sub/blob.bin", loopback).size(), body_.size());
  expect_refused(closed, loopback);
  expect_refused("http://localhost:" + s_port + "/sub/blob.bin", loopback);
  // A prefix allows what lies below it, and no redirect leaves it.
  const HttpLimits prefix = limits_for({r.url() + "pub/"});
  EXPECT_EQ(http_get(r.url() + "pub/blob.bin", prefix).size(), body_.size());
  expect_refused(r.url() + "sub/blob.bin", prefix);
  expect_refused(r.url() + "pub/to-localhost", prefix);
  expect_refused(r.url() + "pub/to-address", prefix);
  expect_refused(r.url() + "pub/to-private", prefix);
  // Refused before the request: neither server saw one for the blob.
  EXPECT_TRUE(eventually([&] { return r.log().find("redirect /pub/to-private") != std::string::npos; }, 5s)) << r.log();
  EXPECT_EQ(r.log().find("request GET /sub/blob.bin"), std::string::npos) << r.log();
  std::size_t s_requests = 0;
  for (std::size_t at = server_->log().find("GET /sub/blob.bin"); at != std::string::npos;
       at = server_->log().find("GET /sub/blob.bin", at + 1))
    ++s_requests;
  EXPECT_EQ(s_requests, 1u) << "only the allowed fetch reached S:\n" << server_->log();
  // Unconfined (artifacts, the operator's own URL): loopback is fine.
  EXPECT_EQ(http_get(base_ + "sub/blob.bin", HttpLimits{}).size(), body_.size());
}

}  // namespace
}  // namespace zkfarm::testing
