// status_page_test.cc -- the coordinator's status page in a real browser.
//
// A live farm (private redis-server, two coordinators sharing it, two CPU
// workers behind the first) proves jobs; one fails on purpose with HTML in
// its error message, one because its witness file is missing (its error
// message quotes the witness path), and then a flood of 200 junk
// submissions fails at intake. Headless Chromium, driven through
// chromedriver's WebDriver HTTP API (plain sockets through the harness's
// http_request, no client library), opens the first coordinator's page and
// the test reads the rendered tables back: the jobs with their partition
// counts and latencies; the failures grouped per code, so the missing
// witness's failure is still listed after the flood, with its code and the
// partition at fault and never its witness path; no markup from data
// becomes elements or runs; the workers with their proof counts, the
// circuits, the charts' totals; and the browser's console log must hold no
// errors. A screenshot of the page is kept in
// $TEST_UNDECLARED_OUTPUTS_DIR/status_page.png.
//
// The JSON API is also checked over plain HTTP: the second coordinator (no
// workers of its own) shows the same farm; its access token is enforced on
// the page and the API while /metrics, on its own port, stays open; no
// witness reference or query string appears.
//
// Without chromium and chromedriver (ZKFARM_CHROMIUM, ZKFARM_CHROMEDRIVER
// override /usr/bin/chromium and /usr/bin/chromedriver) the browser part is
// SKIPPED, never passed; tools/install_deps.sh installs both.

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "schema/job.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// A WebDriver session on a chromedriver process.
class Browser {
 public:
  Browser(const std::string& chromedriver, const std::string& chromium, const TempDir& dir) : port_(free_port()) {
    driver_ = std::make_unique<Process>(
        std::vector<std::string>{chromedriver, "--port=" + std::to_string(port_)}, dir.file("chromedriver.log"));
    if (!eventually([&] { return http_request(port_, "GET", "/status").status == 200; }, 30s))
      throw std::runtime_error("chromedriver did not answer: " + driver_->log());
    std::filesystem::create_directories(dir.file("chromium-profile"));
    json capabilities = {
        {"browserName", "chrome"},
        {"goog:loggingPrefs", {{"browser", "ALL"}}},
        {"goog:chromeOptions",
         {{"binary", chromium},
          {"args",
           {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--window-size=1400,2200", "--user-data-dir=" + dir.file("chromium-profile")}}}}};
    json reply = call("POST", "/session", {{"capabilities", {{"alwaysMatch", capabilities}}}});
    session_ = reply["value"]["sessionId"];
  }
  ~Browser() {
    if (!session_.empty()) http_request(port_, "DELETE", "/session/" + session_);
  }

  void open(const std::string& url) { call("POST", path("/url"), {{"url", url}}); }
  // Runs a script in the page; returns its value.
  json run(const std::string& script) {
    return call("POST", path("/execute/sync"), {{"script", script}, {"args", json::array()}})["value"];
  }
  json console_log() { return call("POST", path("/se/log"), {{"type", "browser"}})["value"]; }
  std::vector<std::uint8_t> screenshot() {
    return base64_decode(call("GET", path("/screenshot"))["value"].get<std::string>());
  }

 private:
  std::string path(const std::string& tail) const { return "/session/" + session_ + tail; }
  json call(const std::string& method, const std::string& p, const json& body = nullptr) {
    HttpResult r = http_request(port_, method, p, body.is_null() ? "" : body.dump());
    if (r.status != 200) throw std::runtime_error(method + " " + p + ": HTTP " + std::to_string(r.status) + " " + r.body);
    return json::parse(r.body);
  }

  int port_;
  std::unique_ptr<Process> driver_;
  std::string session_;
};

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

class StatusPageTest : public FarmTest {
 protected:
  json api(int port, const std::string& path, const std::string& headers = "") {
    HttpResult r = http_request(port, "GET", path, "", headers);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return r.status == 200 ? json::parse(r.body) : json::object();
  }
};

// What a script reads back from a rendered table: its rows' cell texts.
const char kReadPage[] = R"js(
const table = (id) => [...document.querySelectorAll('#' + id + ' tbody tr')]
    .map((tr) => [...tr.cells].map((td) => td.textContent));
const chart = (id) => { const c = document.getElementById(id);
  return { partitions: c.getAttribute('data-partitions'), jobs_done: c.getAttribute('data-jobs-done'),
           latency_avg: c.getAttribute('data-latency-avg-s'), bars: c.querySelectorAll('rect.bar').length,
           line: c.querySelectorAll('polyline.line').length }; };
const card = (id) => { const c = document.querySelector('#' + id + ' .value'); return c ? c.textContent : null; };
return { refreshes: Number(document.body.getAttribute('data-refreshes') || 0), title: document.title,
         error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
         scripts: document.scripts.length, injected: document.querySelectorAll('main b, main img, main script').length,
         pwned: window.zkfarmPwned === true, text: document.body.textContent,
         failed_codes: document.getElementById('failed-codes').textContent,
         workers: table('workers'), running: table('jobs-running'), queued: table('jobs-queued'),
         done: table('jobs-done'), failed: table('jobs-failed'), circuits: table('circuits'),
         throughput: chart('chart-throughput'), latency: chart('chart-latency'),
         cards: { workers: card('card-workers'), partitions: card('card-partitions'), done: card('card-done'),
                  failed: card('card-failed') } };
)js";

TEST_F(StatusPageTest, FarmInTheBrowser) {
  const int page_port = free_port(), metrics_port = free_port();
  start_coordinator({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--status-listen",
                     "127.0.0.1:" + std::to_string(page_port)});
  start_worker("cpu-a");
  start_worker("cpu-b");
  ASSERT_TRUE(eventually([&] { return http_request(page_port, "GET", "/api/v1/workers").status == 200; }, 30s)) << logs();

  // Three jobs that succeed (5 partitions in all) and one that fails at
  // intake with markup in its error message (job ids are restricted to a
  // safe alphabet, an unsupported witness scheme is quoted in the error).
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");
  farm::submit(options_, job_json("job-a", bn254_.id, {bn, bn}));
  farm::submit(options_, job_json("job-b", bls12381_.id, {bls}, "high"));
  farm::submit(options_, job_json("job-c", bn254_.id, {bn, bn}, "low"));
  const std::string markup = "<script>window.zkfarmPwned=true</script><b>bold</b><img src=x>";
  RedisClient redis(options_.redis_url);
  KeyLayout keys(options_.prefix);
  json bad = {{"id", "job-bad"}, {"circuit", bn254_.id}, {"partitions", json::array({markup + "://x?sig=hidden"})}};
  redis.command({"LPUSH", keys.queue(Priority::kNormal), bad.dump()});
  for (const char* id : {"job-a", "job-b", "job-c"}) EXPECT_EQ(wait_job(id).state, "done") << id;
  EXPECT_EQ(wait_job("job-bad").state, "failed");
  // A real failure whose error message quotes its witness reference: the
  // file is missing (under the witness root).
  const std::string missing = dir_->file("missing-witness-secret-name.wtns");
  farm::submit(options_, job_json("job-missing", bn254_.id, {bn, "file://" + missing}));
  const farm::JobStatus missing_status = wait_job("job-missing");
  EXPECT_EQ(missing_status.state, "failed");
  EXPECT_EQ(missing_status.error_code, "witnessUnavailable");
  EXPECT_NE(missing_status.error.find("missing-witness-secret-name"), std::string::npos)
      << "the message no longer quotes the path: this test checks nothing: " << missing_status.error;
  // Then a flood of junk: 200 submissions that fail at intake (invalidJob).
  constexpr int kJunk = 200;
  for (int i = 0; i < kJunk; ++i)
    redis.command({"LPUSH", keys.queue(Priority::kNormal),
                   json({{"id", "junk-" + std::to_string(i)}, {"circuit", "junk"}, {"partitions", {"x"}}}).dump()});
  for (int i = 0; i < kJunk; ++i) EXPECT_EQ(wait_job("junk-" + std::to_string(i)).state, "failed");

  // A second coordinator on the same Redis, with a token and no workers
  // (started now so that it takes none of the jobs above).
  const std::string token = "s3cret-token-0123456789";
  write_file(dir_->file("token"), token + "\n");
  const int second_port = free_port();
  const int second_metrics_port = free_port();
  Process second({runfile("coordinator/zkfarm-coordinator"), "--redis", options_.redis_url, "--id", "c2", "--listen",
                  "tcp://127.0.0.1:" + std::to_string(free_port()), "--artifacts", options_.artifacts,
                  "--metrics-listen", "127.0.0.1:" + std::to_string(second_metrics_port), "--status-listen",
                  "127.0.0.1:" + std::to_string(second_port), "--http-token-file", dir_->file("token"),
                  "--max-active-jobs", "1"},
                 dir_->file("coordinator-c2.log"));
  ASSERT_TRUE(eventually([&] { return http_request(second_metrics_port, "GET", "/metrics").status == 200; }, 30s))
      << logs();

  // The API on both coordinators: the same farm.
  json jobs = api(page_port, "/api/v1/jobs");
  const std::string bearer = "Authorization: Bearer " + token + "\r\n";
  json jobs_second = api(second_port, "/api/v1/jobs", bearer);
  ASSERT_EQ(jobs["done"].size(), 3u) << jobs.dump(2);
  ASSERT_EQ(jobs_second["done"].size(), 3u) << jobs_second.dump(2);
  EXPECT_EQ(jobs["done"][0]["id"], jobs_second["done"][0]["id"]);
  // Failures per code: the newest 10 of the flood's code, and the real
  // failure of another code kept visible after it.
  std::map<std::string, json> codes;
  for (const auto& c : jobs["failed_codes"]) codes[c["code"]] = c;
  ASSERT_EQ(codes.size(), 2u) << jobs["failed_codes"].dump(2);
  EXPECT_EQ(codes["invalidJob"]["shown"], 10);
  EXPECT_EQ(codes["invalidJob"]["kept"], 100);
  EXPECT_EQ(codes["witnessUnavailable"]["shown"], 1);
  ASSERT_EQ(jobs["failed"].size(), 11u) << jobs["failed"].dump(2);
  json missing_row;
  for (const auto& j : jobs["failed"])
    if (j["id"] == "job-missing") missing_row = j;
  ASSERT_TRUE(missing_row.is_object()) << "the real failure was pushed off by the flood: " << jobs["failed"].dump(2);
  EXPECT_EQ(missing_row["error_code"], "witnessUnavailable");
  EXPECT_EQ(missing_row["error_partition"], 1);
  EXPECT_FALSE(missing_row.contains("error")) << "error text on the page: " << missing_row.dump();
  const std::string raw_jobs = http_request(page_port, "GET", "/api/v1/jobs").body;
  EXPECT_EQ(raw_jobs.find("hidden"), std::string::npos) << raw_jobs;
  EXPECT_EQ(raw_jobs.find("bn128_mul.wtns"), std::string::npos) << "witness reference on the page: " << raw_jobs;
  EXPECT_EQ(raw_jobs.find("missing-witness-secret-name"), std::string::npos)
      << "witness reference on the page: " << raw_jobs;
  EXPECT_EQ(raw_jobs.find("file://"), std::string::npos) << "witness reference on the page: " << raw_jobs;
  // Both workers joined (one may have joined after the jobs above were done
  // by the other: a loaded machine starts processes slowly).
  json workers;
  EXPECT_TRUE(eventually(
      [&] {
        workers = api(second_port, "/api/v1/workers", bearer)["workers"];
        return workers.size() == 2;
      },
      30s));
  ASSERT_EQ(workers.size(), 2u) << workers.dump(2);
  double proofs = 0;
  for (const auto& w : workers) proofs += w["proofs"].get<double>();
  EXPECT_EQ(proofs, 5);
  json stats = api(page_port, "/api/v1/stats");
  EXPECT_EQ(stats["last_hour"]["partitions"], 5);
  EXPECT_EQ(stats["last_hour"]["jobs_done"], 3);
  EXPECT_EQ(stats["last_hour"]["jobs_failed"], 2 + kJunk);
  EXPECT_EQ(stats["minutes"].size(), 60u);
  // Resident circuits reach Redis with the workers' next heartbeat refresh.
  json circuits;
  EXPECT_TRUE(eventually(
      [&] {
        circuits = api(page_port, "/api/v1/circuits")["circuits"];
        return circuits.size() == 2 && !circuits[0]["resident_on"].empty() && !circuits[1]["resident_on"].empty();
      },
      20s))
      << circuits.dump(2);

  // Safe by default: the token on the second coordinator, read-only,
  // /metrics open on its own port (and only there).
  EXPECT_EQ(http_request(second_port, "GET", "/").status, 401);
  EXPECT_EQ(http_request(second_port, "GET", "/api/v1/jobs").status, 401);
  EXPECT_EQ(http_request(second_port, "GET", "/api/v1/jobs", "", "Authorization: Bearer wrong-token-0123456789\r\n").status, 401);
  EXPECT_EQ(http_request(second_port, "GET", "/api/v1/jobs", "",
                 "Authorization: Basic " + base64_encode(std::vector<std::uint8_t>(
                                               {'o', 'p', ':', 's', '3', 'c', 'r', 'e', 't', '-', 't', 'o', 'k', 'e', 'n', '-',
                                                '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'})) + "\r\n")
                .status,
            200);
  EXPECT_EQ(http_request(second_metrics_port, "GET", "/metrics").status, 200);
  EXPECT_EQ(http_request(second_metrics_port, "GET", "/").status, 404);
  EXPECT_EQ(http_request(page_port, "POST", "/api/v1/jobs", "{}").status, 405);
  HttpResult page = http_request(page_port, "GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("Content-Security-Policy: default-src 'none'; script-src 'self'"), std::string::npos)
      << page.headers;
  EXPECT_NE(http_request(metrics_port, "GET", "/metrics").body.find("zkfarm_jobs_completed_total"), std::string::npos);
  EXPECT_EQ(http_request(page_port, "GET", "/metrics").status, 404);

  // The browser.
  const std::string chromium = env_or("ZKFARM_CHROMIUM", "/usr/bin/chromium");
  const std::string chromedriver = env_or("ZKFARM_CHROMEDRIVER", "/usr/bin/chromedriver");
  if (access(chromium.c_str(), X_OK) != 0 || access(chromedriver.c_str(), X_OK) != 0)
    GTEST_SKIP() << "SKIPPED: no " << chromium << " or " << chromedriver
                 << " (tools/install_deps.sh installs Debian's chromium and chromium-driver)";
  Browser browser(chromedriver, chromium, *dir_);
  browser.open("http://127.0.0.1:" + std::to_string(page_port) + "/?refresh=1");
  json seen;
  const bool rendered = eventually(
      [&] {
        seen = browser.run(kReadPage);
        return seen["refreshes"].get<int>() >= 2 && seen["done"].size() == 3 && seen["workers"].size() == 2;
      },
      30s);
  ASSERT_TRUE(rendered) << seen.dump(2);
  EXPECT_EQ(seen["error"], "");
  EXPECT_EQ(seen["title"], "zkfarm status");
  // Jobs: done with partitions and a latency; the failed one with its code
  // and the markup as plain text (no element made from it, nothing run).
  std::map<std::string, json> done;
  for (const auto& row : seen["done"]) done[row[0]] = row;
  ASSERT_EQ(done.size(), 3u) << seen["done"].dump();
  EXPECT_EQ(done["job-a"][2], "2");
  EXPECT_EQ(done["job-b"][2], "1");
  EXPECT_EQ(done["job-b"][1], "high");
  EXPECT_EQ(done["job-c"][2], "2");
  for (const auto& [id, row] : done) EXPECT_NE(row[3].get<std::string>(), "-") << id << ": no latency";
  ASSERT_EQ(seen["failed"].size(), 11u) << seen["failed"].dump();
  std::map<std::string, json> failed;
  for (const auto& row : seen["failed"]) failed[row[0]] = row;
  ASSERT_EQ(failed.count("job-missing"), 1u) << "the real failure was pushed off by the flood";
  EXPECT_EQ(failed["job-missing"][1], "failed");
  EXPECT_EQ(failed["job-missing"][2], "witnessUnavailable");
  EXPECT_EQ(failed["job-missing"][3], "1") << "the partition at fault";
  EXPECT_NE(seen["failed_codes"].get<std::string>().find("invalidJob 10 of the last 100"), std::string::npos)
      << seen["failed_codes"];
  const std::string text = seen["text"];
  EXPECT_EQ(text.find("missing-witness-secret-name"), std::string::npos) << "witness reference on the page";
  EXPECT_EQ(text.find("file://"), std::string::npos) << "witness reference on the page";
  EXPECT_EQ(seen["injected"], 0);
  EXPECT_FALSE(seen["pwned"].get<bool>());
  EXPECT_EQ(seen["scripts"], 1) << "only status.js";
  EXPECT_EQ(seen["running"].size(), 1u) << "the empty-table row only";
  // Workers with their proofs (5 in all), both alive, none quarantined.
  int page_proofs = 0;
  for (const auto& row : seen["workers"]) {
    EXPECT_EQ(row[3], "alive") << row.dump();
    EXPECT_EQ(row[7], "no") << row.dump();
    EXPECT_NE(row[2].get<std::string>().find("(cpu)"), std::string::npos) << row.dump();
    page_proofs += std::stoi(row[5].get<std::string>());
  }
  EXPECT_EQ(page_proofs, 5);
  EXPECT_EQ(seen["circuits"].size(), 2u);
  // Charts and cards agree with the jobs run.
  EXPECT_EQ(seen["throughput"]["partitions"], "5") << seen["throughput"].dump();
  EXPECT_EQ(seen["throughput"]["jobs_done"], "3");
  EXPECT_GE(seen["throughput"]["bars"].get<int>(), 1);
  EXPECT_EQ(seen["latency"]["line"], 1);
  EXPECT_EQ(seen["cards"]["partitions"], "5");
  EXPECT_EQ(seen["cards"]["done"], "3");
  EXPECT_EQ(seen["cards"]["failed"], std::to_string(2 + kJunk));
  EXPECT_EQ(seen["cards"]["workers"], "2 / 2");
  // No console errors.
  for (const auto& entry : browser.console_log())
    EXPECT_NE(entry["level"], "SEVERE") << entry.dump();
  const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  const std::vector<std::uint8_t> png = browser.screenshot();
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(std::string(png.begin() + 1, png.begin() + 4), "PNG");
  write_file(std::string(outputs != nullptr ? outputs : dir_->path().c_str()) + "/status_page.png",
             std::string(png.begin(), png.end()));
}

}  // namespace
}  // namespace zkfarm::testing
