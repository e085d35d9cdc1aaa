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
// TenantView: a farm on a Redis that runs the shipped ACL users
// (deploy/users.acl; the coordinator is zkfarm-admin), two tenants made by
// `tenant add`'s code and jobs of each and of the default tenant. The
// admin's token sees every job (each naming its tenant) and a summary row
// per tenant; tenant alpha's status page token sees only its own jobs,
// circuits and figures, and no answer to it -- of the page or of any API
// path -- holds bravo's job ids, its circuit, its name, the default
// tenant's job or a worker id; a wrong token, a rotated tenant's old
// token and a removed tenant's are refused; the coordinator's metrics
// carry the tenant label. In the browser the tenant's page (basic auth
// with its token) shows its jobs only, no workers table, and no trace of
// bravo.
//
// Without chromium and chromedriver (ZKFARM_CHROMIUM, ZKFARM_CHROMEDRIVER
// override /usr/bin/chromium and /usr/bin/chromedriver) the browser part is
// SKIPPED, never passed; tools/install_deps.sh installs both.

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "schema/job.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/tenants.h"
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

// A farm whose Redis runs the shipped ACL users; the fixture's URL is the
// admin's (the coordinator's, as deploy/ configures it).
class TenantStatusPageTest : public StatusPageTest {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    redis_ = start_redis_with_shipped_users(*dir_);
    options_.redis_url = shipped_user_url(*redis_, "zkfarm-admin");
    options_.prefix = "zkfarm:";
    options_.artifacts = dir_->file("artifacts");
    std::filesystem::create_directories(options_.artifacts);
    bn254_ = farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"));
    bls12381_ = farm::circuit_add(options_, runfile("formats/testdata/bls12381_mul.zkey"));
    coordinator_port_ = free_port();
  }

  // Waits for a job of the tenant whose options these are.
  farm::JobStatus wait_for(const farm::FarmOptions& who, const std::string& id) {
    eventually([&] { return farm::status(who, id).has_value(); }, 40s);
    auto s = farm::wait(who, id, 60s);
    EXPECT_TRUE(s && s->terminal()) << id << "\n" << logs();
    return s ? *s : farm::JobStatus{};
  }
};

std::set<std::string> ids_in(const json& rows) {
  std::set<std::string> ids;
  for (const auto& row : rows) ids.insert(row["id"].get<std::string>());
  return ids;
}

TEST_F(TenantStatusPageTest, TenantView) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials alpha = add_tenant(admin, keys, TenantRecord{.name = "alpha", .weight = 2});
  const TenantCredentials bravo = add_tenant(admin, keys, TenantRecord{.name = "bravo", .max_queued_jobs = 40});
  ASSERT_EQ(alpha.status_token.rfind("alpha.", 0), 0u) << alpha.status_token;
  // bn254 for everyone, bls12381 for bravo only.
  share_circuit(admin, keys, bn254_.id, {"*"});
  share_circuit(admin, keys, bls12381_.id, {"bravo"});
  const std::string admin_token = "admin-token-0123456789abcdef";
  write_file(dir_->file("token"), admin_token + "\n");
  const int page_port = free_port(), metrics_port = free_port();
  start_coordinator({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--status-listen",
                     "127.0.0.1:" + std::to_string(page_port), "--http-token-file", dir_->file("token")});
  start_worker("cpu-hidden-worker");

  farm::FarmOptions as_alpha = options_, as_bravo = options_;
  as_alpha.redis_url = alpha.url(options_.redis_url);
  as_bravo.redis_url = bravo.url(options_.redis_url);
  // Each tenant's witnesses under its own directory of the witness root.
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string alpha_bn = "file://" + tenant_witness_file("alpha", "bn128_mul.wtns");
  const std::string bravo_bn = "file://" + tenant_witness_file("bravo", "bn128_mul.wtns");
  const std::string bravo_bls = "file://" + tenant_witness_file("bravo", "bls12381_mul.wtns");
  farm::submit(as_alpha, job_json("alpha-one", bn254_.id, {alpha_bn, alpha_bn}));
  farm::submit(as_alpha, job_json("alpha-two", bn254_.id, {alpha_bn}, "high"));
  farm::submit(as_bravo, job_json("bravo-secret-bls", bls12381_.id, {bravo_bls}));
  farm::submit(as_bravo, job_json("bravo-secret-bn", bn254_.id, {bravo_bn, bravo_bn, bravo_bn}));
  farm::submit(as_bravo,
               job_json("bravo-secret-missing", bn254_.id, {"file://" + dir_->file("tenants/bravo/bravo-nowhere.wtns")}));
  farm::submit(options_, job_json("default-job", bn254_.id, {bn}));
  EXPECT_EQ(wait_for(as_alpha, "alpha-one").state, "done");
  EXPECT_EQ(wait_for(as_alpha, "alpha-two").state, "done");
  EXPECT_EQ(wait_for(as_bravo, "bravo-secret-bls").state, "done");
  EXPECT_EQ(wait_for(as_bravo, "bravo-secret-bn").state, "done");
  EXPECT_EQ(wait_for(as_bravo, "bravo-secret-missing").state, "failed");
  EXPECT_EQ(wait_for(options_, "default-job").state, "done");

  const std::string as_admin = "Authorization: Bearer " + admin_token + "\r\n";
  const std::string as_alpha_page = "Authorization: Bearer " + alpha.status_token + "\r\n";
  const std::string as_bravo_page = "Authorization: Bearer " + bravo.status_token + "\r\n";

  // The admin: every tenant's jobs, each naming its tenant, and the summary.
  json jobs = api(page_port, "/api/v1/jobs", as_admin);
  EXPECT_EQ(jobs["viewer"]["role"], "admin");
  EXPECT_EQ(ids_in(jobs["done"]),
            (std::set<std::string>{"alpha-one", "alpha-two", "bravo-secret-bls", "bravo-secret-bn", "default-job"}))
      << jobs["done"].dump(2);
  for (const auto& row : jobs["done"]) {  // each id starts with its tenant's name
    const std::string id = row["id"];
    EXPECT_EQ(row["tenant"], id.substr(0, id.find('-'))) << row.dump();
  }
  EXPECT_EQ(ids_in(jobs["failed"]), std::set<std::string>{"bravo-secret-missing"});
  EXPECT_TRUE(jobs.contains("coordinators"));
  std::map<std::string, json> rows;
  // The worker time reaches Redis with each verified partition: all 8 are.
  json tenants;
  ASSERT_TRUE(eventually(
      [&] {
        tenants = api(page_port, "/api/v1/tenants", as_admin);
        rows.clear();
        for (const auto& t : tenants["tenants"]) rows[t["name"]] = t;
        return rows.size() == 3 && rows["alpha"]["last_hour"]["partitions"] == 3 &&
               rows["bravo"]["last_hour"]["partitions"] == 4;
      },
      20s))
      << tenants.dump(2);
  EXPECT_EQ(rows["default"]["last_hour"]["partitions"], 1);
  EXPECT_EQ(rows["alpha"]["last_hour"]["jobs_done"], 2);
  EXPECT_EQ(rows["bravo"]["last_hour"]["jobs_failed"], 1);
  EXPECT_EQ(rows["alpha"]["weight"], 2);
  EXPECT_EQ(rows["bravo"]["max_queued_jobs"], 40);
  double share = 0;
  for (auto& [name, row] : rows) {
    ASSERT_TRUE(row["worker_share"].is_number()) << row.dump();
    EXPECT_GT(row["worker_share"].get<double>(), 0) << name;
    share += row["worker_share"].get<double>();
  }
  EXPECT_NEAR(share, 1.0, 1e-6);
  EXPECT_EQ(api(page_port, "/api/v1/workers", as_admin)["workers"].size(), 1u);
  EXPECT_EQ(api(page_port, "/api/v1/circuits", as_admin)["circuits"].size(), 2u);
  EXPECT_EQ(api(page_port, "/api/v1/stats", as_admin)["last_hour"]["partitions"], 8);

  // Alpha: its own jobs, circuits and figures, nothing of bravo's, of the
  // default tenant's or of the workers but their number.
  jobs = api(page_port, "/api/v1/jobs", as_alpha_page);
  EXPECT_EQ(jobs["viewer"]["role"], "tenant");
  EXPECT_EQ(jobs["viewer"]["tenant"], "alpha");
  EXPECT_EQ(ids_in(jobs["done"]), (std::set<std::string>{"alpha-one", "alpha-two"}));
  EXPECT_TRUE(jobs["failed"].empty()) << jobs["failed"].dump();
  EXPECT_TRUE(jobs["failed_codes"].empty());
  EXPECT_FALSE(jobs.contains("coordinators"));
  const json workers = api(page_port, "/api/v1/workers", as_alpha_page);
  EXPECT_TRUE(workers["workers"].empty());
  EXPECT_EQ(workers["capacity"]["alive"], 1);
  const json circuits = api(page_port, "/api/v1/circuits", as_alpha_page)["circuits"];
  ASSERT_EQ(circuits.size(), 1u) << circuits.dump(2);
  EXPECT_EQ(circuits[0]["id"], bn254_.id);
  EXPECT_TRUE(circuits[0]["resident_on"].empty());
  const json stats = api(page_port, "/api/v1/stats", as_alpha_page);
  EXPECT_EQ(stats["last_hour"]["partitions"], 3);
  EXPECT_EQ(stats["last_hour"]["jobs_done"], 2);
  EXPECT_EQ(stats["last_hour"]["jobs_failed"], 0);
  tenants = api(page_port, "/api/v1/tenants", as_alpha_page);
  ASSERT_EQ(tenants["tenants"].size(), 1u);
  EXPECT_EQ(tenants["tenants"][0]["name"], "alpha");
  EXPECT_FALSE(tenants["tenants"][0].contains("worker_share"));
  for (const char* path : {"/", "/status.js", "/api/v1/jobs", "/api/v1/workers", "/api/v1/circuits", "/api/v1/stats",
                           "/api/v1/tenants"}) {
    const HttpResult r = http_request(page_port, "GET", path, "", as_alpha_page);
    EXPECT_EQ(r.status, 200) << path;
    for (const std::string& secret : {std::string("bravo"), std::string("default-job"), bls12381_.id,
                                      bls12381_.id.substr(0, 16), std::string("cpu-hidden-worker")})
      EXPECT_EQ(r.body.find(secret), std::string::npos) << path << " shows alpha '" << secret << "': " << r.body;
  }
  // Bravo sees its own, none of alpha's.
  jobs = api(page_port, "/api/v1/jobs", as_bravo_page);
  EXPECT_EQ(ids_in(jobs["done"]), (std::set<std::string>{"bravo-secret-bls", "bravo-secret-bn"}));
  EXPECT_EQ(ids_in(jobs["failed"]), std::set<std::string>{"bravo-secret-missing"});
  EXPECT_EQ(jobs.dump().find("alpha"), std::string::npos);
  EXPECT_EQ(api(page_port, "/api/v1/circuits", as_bravo_page)["circuits"].size(), 2u);

  // Refused: no token, a wrong one, a forged tenant token, the Redis
  // password as a page token; basic auth with the token works.
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs").status, 401);
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs", "", "Authorization: Bearer wrong-token-0123456789\r\n").status,
            401);
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs", "",
                         "Authorization: Bearer alpha." + std::string(64, '0') + "\r\n")
                .status,
            401);
  EXPECT_EQ(http_request(page_port, "GET", "/", "", "Authorization: Bearer " + alpha.password + "\r\n").status, 401);
  const std::string basic = "t:" + alpha.status_token;
  const HttpResult by_basic = http_request(
      page_port, "GET", "/api/v1/jobs", "",
      "Authorization: Basic " + base64_encode(std::vector<std::uint8_t>(basic.begin(), basic.end())) + "\r\n");
  EXPECT_EQ(by_basic.status, 200);
  EXPECT_EQ(by_basic.body.find("bravo"), std::string::npos);

  // The metrics carry the tenant label (registered tenants only).
  const std::string scrape = http_request(metrics_port, "GET", "/metrics").body;
  for (const char* tenant : {"alpha", "bravo", "default"})
    EXPECT_NE(scrape.find("zkfarm_jobs_completed_total{circuit=\"" + bn254_.id.substr(0, 16) + "\",priority=\"normal\","
                          "tenant=\"" + std::string(tenant) + "\"}"),
              std::string::npos)
        << tenant << "\n" << scrape;
  EXPECT_NE(scrape.find("zkfarm_partitions_verified_total{circuit=\"" + bls12381_.id.substr(0, 16) +
                        "\",tenant=\"bravo\"} 1"),
            std::string::npos);
  EXPECT_NE(scrape.find("zkfarm_queue_depth{priority=\"normal\",tenant=\"alpha\"} 0"), std::string::npos);
  EXPECT_EQ(scrape.find("tenant=\"unknown\""), std::string::npos);

  // The browser, as alpha (basic auth: the token is the password).
  const std::string chromium = env_or("ZKFARM_CHROMIUM", "/usr/bin/chromium");
  const std::string chromedriver = env_or("ZKFARM_CHROMEDRIVER", "/usr/bin/chromedriver");
  bool browsed = false;
  if (access(chromium.c_str(), X_OK) == 0 && access(chromedriver.c_str(), X_OK) == 0) {
    browsed = true;
    Browser browser(chromedriver, chromium, *dir_);
    const char kReadTenantPage[] = R"js(
const table = (id) => [...document.querySelectorAll('#' + id + ' tbody tr')]
    .map((tr) => [...tr.cells].map((td) => td.textContent));
return { refreshes: Number(document.body.getAttribute('data-refreshes') || 0),
         error: document.getElementById('error').hidden ? '' : document.getElementById('error').textContent,
         text: document.body.textContent, served: document.getElementById('served-by').textContent,
         done: table('jobs-done'), tenants: table('tenants'),
         tenants_shown: !document.getElementById('tenants-section').hidden,
         workers_shown: !document.getElementById('workers').hidden,
         capacity: document.getElementById('capacity').textContent };
)js";
    browser.open("http://t:" + alpha.status_token + "@127.0.0.1:" + std::to_string(page_port) + "/?refresh=1");
    json seen;
    EXPECT_TRUE(eventually(
        [&] {
          seen = browser.run(kReadTenantPage);
          return seen["refreshes"].get<int>() >= 2 && seen["done"].size() == 2;
        },
        30s))
        << seen.dump(2);
    EXPECT_EQ(seen["error"], "");
    std::set<std::string> shown;
    for (const auto& row : seen["done"]) {
      shown.insert(row[0].get<std::string>());
      EXPECT_EQ(row.back(), "alpha") << row.dump();  // the tenant column
    }
    EXPECT_EQ(shown, (std::set<std::string>{"alpha-one", "alpha-two"}));
    EXPECT_TRUE(seen["tenants_shown"].get<bool>());
    ASSERT_EQ(seen["tenants"].size(), 1u) << seen["tenants"].dump();
    EXPECT_EQ(seen["tenants"][0][0], "alpha");
    EXPECT_FALSE(seen["workers_shown"].get<bool>());
    EXPECT_EQ(seen["capacity"].get<std::string>().rfind("1 workers alive", 0), 0u) << seen["capacity"];
    EXPECT_NE(seen["served"].get<std::string>().find("tenant alpha"), std::string::npos);
    const std::string text = seen["text"];
    for (const std::string& secret : {std::string("bravo"), std::string("default-job"), std::string("cpu-hidden-worker")})
      EXPECT_EQ(text.find(secret), std::string::npos) << "the tenant's page shows '" << secret << "'";
    for (const auto& entry : browser.console_log()) EXPECT_NE(entry["level"], "SEVERE") << entry.dump();
    // The admin's page lists both tenants and names each job's tenant.
    browser.open("http://op:" + admin_token + "@127.0.0.1:" + std::to_string(page_port) + "/?refresh=1");
    EXPECT_TRUE(eventually(
        [&] {
          seen = browser.run(kReadTenantPage);
          return seen["done"].size() == 5 && seen["tenants"].size() == 3;
        },
        30s))
        << seen.dump(2);
    EXPECT_TRUE(seen["workers_shown"].get<bool>());
    const char* outputs = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    const std::vector<std::uint8_t> png = browser.screenshot();
    write_file(std::string(outputs != nullptr ? outputs : dir_->path().c_str()) + "/status_page_tenants.png",
               std::string(png.begin(), png.end()));
  }

  // A rotated tenant's old token is refused at once, the new one works; a
  // removed tenant's is refused.
  const TenantCredentials rotated = rotate_tenant(admin, keys, "alpha");
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs", "", as_alpha_page).status, 401);
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs", "", "Authorization: Bearer " + rotated.status_token + "\r\n")
                .status,
            200);
  remove_tenant(admin, keys, "bravo");
  EXPECT_EQ(http_request(page_port, "GET", "/api/v1/jobs", "", as_bravo_page).status, 401);
  if (!browsed)
    GTEST_SKIP() << "SKIPPED (browser part): no " << chromium << " or " << chromedriver
                 << " (tools/install_deps.sh installs Debian's chromium and chromium-driver)";
}

}  // namespace
}  // namespace zkfarm::testing
