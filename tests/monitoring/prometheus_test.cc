// prometheus_test.cc -- the monitoring files against a real Prometheus
// scraping a live farm.
//
// A private redis-server, zkfarm-coordinator and zkfarm-worker processes
// (tests/cluster's FarmTest) serve /metrics on free loopback ports; a real
// `prometheus` (Debian's package) scrapes them every second with
// monitoring/prometheus.yml (file_sd targets written here, intervals cut to
// 1 s) and evaluates monitoring/alerts.yml. The farm then goes through what
// the dashboards show: jobs on two curves and four priorities, a worker
// killed while proving (heartbeat misses, a death, a requeue), a worker
// returning corrupt proofs (invalid proofs, faults, quarantine), a worker
// whose cached zkeys are corrupt (a failed circuit load, a task error, a
// retry), a job rejected at intake, and a tenant's jobs beside the default
// tenant's. Then:
//   * every live /metrics scrape passes `promtool check metrics`;
//   * every expression of every Grafana dashboard panel, with the dashboard
//     variables set to "All", is accepted by /api/v1/query and returns data;
//     every variable's label_values() query finds values; the panels of
//     the Tenants row show the tenant's series and the default tenant's;
//   * every alert of alerts.yml is loaded, evaluates without error, and its
//     expression is accepted by /api/v1/query.
// Needs /usr/bin/prometheus and /usr/bin/promtool (tools/install_deps.sh);
// ZKFARM_PROMETHEUS / ZKFARM_PROMTOOL override the paths.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "cluster/tenants.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string tool_path(const char* variable, const char* fallback) {
  const char* path = std::getenv(variable);
  return path && *path ? path : fallback;
}

// GET http://127.0.0.1:port<target>: {status, body}, status 0 when the
// connection failed.
std::pair<int, std::string> http_get(int port, const std::string& target) {
  HttpResult r = http_request(port, "GET", target);
  return {r.status, std::move(r.body)};
}

std::string url_encode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Runs promtool check metrics on a scrape; returns {exit status, output}.
std::pair<int, std::string> promtool_check_metrics(const std::string& scrape, const std::string& dir) {
  const std::string input = dir + "/scrape.txt";
  write_file(input, scrape);
  const std::string promtool = tool_path("ZKFARM_PROMTOOL", "/usr/bin/promtool");
  FILE* pipe = ::popen((promtool + " check metrics < '" + input + "' 2>&1").c_str(), "r");
  if (!pipe) return {-1, "cannot run " + promtool};
  std::string output;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

struct PanelQuery {
  std::string dashboard, panel, expr;
};

// Every target expression of every panel (rows included) of the dashboards.
std::vector<PanelQuery> dashboard_queries(std::vector<std::string>* variable_queries) {
  std::vector<PanelQuery> queries;
  const std::string dir = std::filesystem::path(runfile("monitoring/grafana/dashboards/farm-overview.json"))
                              .parent_path()
                              .string();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json dashboard = json::parse(in);
    const std::string title = dashboard.value("title", entry.path().filename().string());
    std::function<void(const json&)> visit = [&](const json& panels) {
      for (const auto& panel : panels) {
        if (panel.contains("panels")) visit(panel["panels"]);
        if (!panel.contains("targets")) continue;
        for (const auto& target : panel["targets"])
          if (target.contains("expr")) queries.push_back({title, panel.value("title", "?"), target["expr"]});
      }
    };
    visit(dashboard["panels"]);
    for (const auto& variable : dashboard["templating"]["list"])
      if (variable.value("type", "") == "query") variable_queries->push_back(variable["definition"]);
  }
  return queries;
}

// The dashboards' variables as Grafana sends them with "All" selected.
std::string substitute_variables(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "15s");
  expr = std::regex_replace(expr, std::regex(R"(\$(priority|worker|circuit|tenant))"), ".*");
  return expr;
}

class PrometheusTest : public FarmTest {
 protected:
  // GET /api/v1/<path> from the test Prometheus; the parsed reply.
  json api(const std::string& path) {
    const auto [status, body] = http_get(prometheus_port_, "/api/v1/" + path);
    if (status == 0) return json{{"status", "error"}, {"error", "no answer from Prometheus"}};
    try {
      return json::parse(body);
    } catch (const std::exception& e) {
      return json{{"status", "error"}, {"error", "HTTP " + std::to_string(status) + ": " + body.substr(0, 300)}};
    }
  }
  json query(const std::string& expr) { return api("query?query=" + url_encode(expr)); }

  std::string scrape(int port) {
    const auto [status, body] = http_get(port, "/metrics");
    EXPECT_EQ(status, 200) << "scrape of 127.0.0.1:" << port;
    return body;
  }

  // Starts a worker serving metrics on its own port.
  std::size_t start_metered_worker(const std::string& id, std::vector<std::string> extra = {}) {
    extra.push_back("--metrics-listen");
    extra.push_back("127.0.0.1:" + std::to_string(worker_ports_.at(id)));
    return start_worker(id, extra);
  }

  void start_prometheus() {
    const std::string dir = dir_->file("prometheus");
    std::filesystem::create_directories(dir + "/targets");
    // The shipped scrape configuration, with test intervals.
    std::string config = read_file(runfile("monitoring/prometheus.yml"));
    config = std::regex_replace(config, std::regex(R"((scrape|evaluation)_interval: \S+)"), "$1_interval: 1s");
    config = std::regex_replace(config, std::regex(R"(scrape_timeout: \S+)"), "scrape_timeout: 1s");
    config = std::regex_replace(config, std::regex(R"(refresh_interval: \S+)"), "refresh_interval: 5s");
    config = std::regex_replace(config, std::regex(R"(localhost:9090)"),
                                "127.0.0.1:" + std::to_string(prometheus_port_));
    write_file(dir + "/prometheus.yml", config);
    std::filesystem::copy_file(runfile("monitoring/alerts.yml"), dir + "/alerts.yml");
    write_file(dir + "/targets/coordinator.yml",
               "- targets: ['127.0.0.1:" + std::to_string(coordinator_metrics_port_) + "']\n");
    std::string workers = "- targets:\n";
    for (const auto& [id, port] : worker_ports_) workers += "    - 127.0.0.1:" + std::to_string(port) + "\n";
    write_file(dir + "/targets/workers.yml", workers);
    const std::string binary = tool_path("ZKFARM_PROMETHEUS", "/usr/bin/prometheus");
    ASSERT_EQ(::access(binary.c_str(), X_OK), 0)
        << binary << " not found: install Debian's `prometheus` (tools/install_deps.sh)";
    prometheus_ = std::make_unique<Process>(
        std::vector<std::string>{binary, "--config.file=" + dir + "/prometheus.yml",
                                 "--storage.tsdb.path=" + dir + "/data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_),
                                 "--log.level=warn"},
        dir_->file("prometheus.log"));
    ASSERT_TRUE(eventually([&] { return http_get(prometheus_port_, "/-/ready").first == 200; }, 30s))
        << "Prometheus did not become ready:\n"
        << prometheus_->log();
  }

  void TearDown() override {
    prometheus_.reset();
    FarmTest::TearDown();
  }

  int coordinator_metrics_port_ = 0, prometheus_port_ = 0;
  std::map<std::string, int> worker_ports_;
  std::unique_ptr<Process> prometheus_;
};

TEST_F(PrometheusTest, DashboardsAndAlertsWorkOnALiveFarm) {
  coordinator_metrics_port_ = free_port();
  prometheus_port_ = free_port();
  for (const char* id : {"w1", "w2", "doomed", "bad-proofs"}) worker_ports_[id] = free_port();
  // Up to three invalid proofs (then bad-proofs is quarantined) and one
  // corrupt cache may hit the same partition: allow the attempts.
  // A tenant, registered before the coordinator starts, with both circuits.
  farm::FarmOptions as_acme = options_;
  {
    RedisClient admin(options_.redis_url);
    const KeyLayout keys(options_.prefix);
    as_acme.redis_url = add_tenant(admin, keys, TenantRecord{.name = "acme"}).url(options_.redis_url);
    share_circuit(admin, keys, bn254_.id, {"acme"});
    share_circuit(admin, keys, bls12381_.id, {"acme"});
  }
  start_coordinator({"--metrics-listen", "127.0.0.1:" + std::to_string(coordinator_metrics_port_),
                     "--max-attempts", "6"});
  start_prometheus();
  const std::string bn = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");
  auto coordinator_scrape_has = [&](const std::string& text) {
    return eventually([&] { return http_get(coordinator_metrics_port_, "/metrics").second.find(text) !=
                                   std::string::npos; },
                      20s);
  };

  // 1. A worker killed while it proves: heartbeat misses, a death, a requeue.
  const std::size_t doomed = start_metered_worker("doomed", {"--prove-delay-ms", "60000"});
  farm::submit(options_, job_json("survivor", bn254_.id, {bn}, "high"));
  ASSERT_TRUE(eventually([&] { return workers_[doomed]->log().find("received") != std::string::npos; }, 20s))
      << logs();
  workers_[doomed]->signal(SIGKILL);
  ASSERT_TRUE(coordinator_scrape_has("zkfarm_partitions_requeued_total{reason=\"workerDead\",tenant=\"default\"}"))
      << logs();

  // 2. A worker returning corrupt proofs: the coordinator catches them and
  // retries the partitions elsewhere.
  const std::size_t bad_proofs = start_metered_worker("bad-proofs", {"--inject-fault", "corrupt-proof"});
  farm::submit(options_, job_json("winning", bls12381_.id, {bls}, "critical"));
  ASSERT_TRUE(coordinator_scrape_has("zkfarm_partitions_invalid_total{")) << logs();
  workers_[bad_proofs]->signal(SIGTERM);

  // 3. Healthy workers finish everything. One job is bad input, and one is
  // for a circuit record whose id is not its zkey's sha256 (a store that
  // does not hold what the record says): every load of it fails
  // (artifactChecksum) and the job fails; a corrupt cached copy would be
  // fetched again instead, so it would not show a failed load.
  CircuitInfo mislabelled = bn254_;
  mislabelled.id = std::string(64, 'b');
  for (const auto& relative : {ArtifactStore::zkey_relative, ArtifactStore::pce_relative}) {
    const std::string to = options_.artifacts + "/" + relative(mislabelled.id);
    std::filesystem::create_directories(std::filesystem::path(to).parent_path());
    std::filesystem::copy_file(options_.artifacts + "/" + relative(bn254_.id), to);
  }
  {
    RedisClient redis(options_.redis_url);
    store_circuit_info(redis, KeyLayout(options_.prefix), mislabelled);
  }
  farm::submit(options_, job_json("mislabelled-key", mislabelled.id, {bn}, "normal"));
  start_metered_worker("w1");
  start_metered_worker("w2");
  farm::submit(options_, job_json("bulk-bn", bn254_.id, {bn, bn, bn}, "low"));
  farm::submit(options_, job_json("bulk-bls", bls12381_.id, {bls, bls}, "normal"));
  farm::submit(options_, job_json("wrong-curve", bn254_.id, {bls}, "normal"));
  // The tenant's witnesses under its own directory of the witness root.
  const std::string acme_bn = "file://" + tenant_witness_file("acme", "bn128_mul.wtns");
  const std::string acme_bls = "file://" + tenant_witness_file("acme", "bls12381_mul.wtns");
  farm::submit(as_acme, job_json("acme-bn", bn254_.id, {acme_bn, acme_bn}, "normal"));
  farm::submit(as_acme, job_json("acme-bls", bls12381_.id, {acme_bls}, "high"));
  for (const char* id : {"survivor", "winning", "bulk-bn", "bulk-bls"}) {
    const farm::JobStatus status = wait_job(id, 60s);
    EXPECT_EQ(status.state, "done") << id << ": " << status.error;
  }
  for (const char* id : {"acme-bn", "acme-bls"}) {
    const auto status = farm::wait(as_acme, id, 60s);
    ASSERT_TRUE(status) << id;
    EXPECT_EQ(status->state, "done") << id << ": " << status->error;
  }
  const farm::JobStatus mislabelled_key = wait_job("mislabelled-key", 60s);
  EXPECT_EQ(mislabelled_key.state, "failed");
  EXPECT_EQ(mislabelled_key.error_code, "artifactChecksum") << mislabelled_key.error;
  const farm::JobStatus wrong_curve = wait_job("wrong-curve");
  EXPECT_EQ(wrong_curve.state, "failed");
  EXPECT_EQ(wrong_curve.error_code, "wrongCurve") << wrong_curve.error;
  ASSERT_TRUE(coordinator_scrape_has("zkfarm_partitions_retried_total{circuit=")) << logs();

  // 4. An input job whose circuit's witness generator was altered in the
  // store after it was registered: every worker refuses to run it
  // (zkfarm_witgen_failures_total), the partition is retried, the job fails.
  {
    CircuitInfo altered = bn254_;
    altered.witgen_path = ArtifactStore::witgen_relative(altered.id);
    const std::string binary = options_.artifacts + "/" + altered.witgen_path;
    std::filesystem::create_directories(std::filesystem::path(binary).parent_path());
    write_file(binary, "not the generator that was registered");
    write_file(binary + ".dat", "constants");
    altered.witgen_sha256 = std::string(64, '0');
    altered.witgen_dat_sha256 = sha256_file_hex(binary + ".dat");
    RedisClient redis(options_.redis_url);
    store_circuit_info(redis, KeyLayout(options_.prefix), altered);
    farm::submit(options_, R"({"id":"altered-generator","circuit":")" + altered.id +
                               R"(","partitions":[{"input":{"a":"3"}}]})");
    const farm::JobStatus status = wait_job("altered-generator", 60s);
    EXPECT_EQ(status.state, "failed");
    EXPECT_NE(status.error.find("the circuit record says"), std::string::npos) << status.error;
    store_circuit_info(redis, KeyLayout(options_.prefix), bn254_);
  }

  // Live scrapes pass promtool.
  std::map<std::string, int> live = {{"coordinator", coordinator_metrics_port_},
                                     {"w1", worker_ports_["w1"]},
                                     {"w2", worker_ports_["w2"]}};
  for (const auto& [name, port] : live) {
    const std::string text = scrape(port);
    EXPECT_NE(text.find("zkfarm_build_info"), std::string::npos) << name;
    const auto [status, output] = promtool_check_metrics(text, dir_->path());
    EXPECT_EQ(status, 0) << name << ": promtool check metrics:\n" << output;
  }

  // Let Prometheus take a few more samples of the final state (rate() needs
  // two samples of a series within its window): wait for the series born last.
  auto samples_of = [&](const std::string& selector) {
    const json result = query("min(count_over_time(" + selector + "[1m]))")["data"]["result"];
    return result.empty() ? 0.0 : std::stod(result[0]["value"][1].get<std::string>());
  };
  ASSERT_TRUE(eventually(
      [&] {
        return samples_of("zkfarm_jobs_failed_total") >= 3 && samples_of("zkfarm_device_task_errors_total") >= 3 &&
               samples_of("zkfarm_jobs_completed_total") >= 3 && samples_of("zkfarm_partitions_retried_total") >= 3 &&
               samples_of("zkfarm_witgen_failures_total") >= 3 &&
               samples_of("zkfarm_jobs_completed_total{tenant=\"acme\"}") >= 3;
      },
      30s))
      << "Prometheus did not scrape the final state: " << query("up").dump() << "\n"
      << prometheus_->log();

  // Every dashboard panel query parses and returns data.
  std::vector<std::string> variable_queries;
  const auto panels = dashboard_queries(&variable_queries);
  EXPECT_GE(panels.size(), 60u);
  std::size_t with_data = 0, tenant_panels = 0;
  for (const auto& panel : panels) {
    const std::string expr = substitute_variables(panel.expr);
    const json reply = query(expr);
    if (reply.value("status", "") != "success") {
      ADD_FAILURE() << panel.dashboard << " / " << panel.panel << ": " << expr << "\n  " << reply.dump();
      continue;
    }
    if (reply["data"]["result"].empty()) {
      ADD_FAILURE() << panel.dashboard << " / " << panel.panel << " returns no data: " << expr;
      continue;
    }
    ++with_data;
    // The Tenants row: a series of the tenant's and one of the default
    // tenant's (failures, retries and requeues: the default tenant's only;
    // acme's jobs all succeed at once).
    const std::string title = panel.panel;
    if (title.size() > 10 && title.compare(title.size() - 10, 10, " by tenant") == 0) {
      std::set<std::string> tenants;
      for (const auto& series : reply["data"]["result"])
        if (series["metric"].contains("tenant")) tenants.insert(series["metric"]["tenant"].get<std::string>());
      EXPECT_EQ(tenants.count("default"), 1u) << title << ": " << reply.dump();
      if (!std::regex_search(panel.expr, std::regex("jobs_failed|retried|requeued"))) {
        EXPECT_EQ(tenants.count("acme"), 1u) << title << ": " << reply.dump();
      }
      ++tenant_panels;
    }
  }
  std::cout << with_data << " of " << panels.size() << " panel queries returned data\n";
  EXPECT_EQ(tenant_panels, 8u) << "the Tenants row's queries (6 panels, two with two)";
  // Variables: label_values(metric, label).
  const std::regex label_values(R"(label_values\((\w+),\s*(\w+)\))");
  for (const auto& definition : variable_queries) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(definition, m, label_values)) << "unexpected variable query " << definition;
    const json reply = api("label/" + m[2].str() + "/values?" + url_encode("match[]") + "=" + url_encode(m[1].str()));
    EXPECT_EQ(reply.value("status", ""), "success") << definition << ": " << reply.dump();
    EXPECT_FALSE(reply["data"].empty()) << definition << " finds no values";
  }

  // Every alert is loaded and evaluates cleanly; its expression parses.
  const std::string alerts_text = read_file(runfile("monitoring/alerts.yml"));
  std::size_t alerts_in_file = 0;
  for (std::size_t at = 0; (at = alerts_text.find("- alert:", at)) != std::string::npos; ++at) ++alerts_in_file;
  std::vector<json> alerts;
  ASSERT_TRUE(eventually(
      [&] {
        alerts.clear();
        const json reply = api("rules?type=alert");
        if (reply.value("status", "") != "success") return false;
        for (const auto& group : reply["data"]["groups"])
          for (const auto& rule : group["rules"]) alerts.push_back(rule);
        for (const auto& rule : alerts)
          if (rule.value("health", "") != "ok") return false;
        return alerts.size() == alerts_in_file;
      },
      20s))
      << api("rules?type=alert").dump(2);
  for (const auto& rule : alerts) {
    const json reply = query(rule["query"]);
    EXPECT_EQ(reply.value("status", ""), "success") << rule["name"] << ": " << reply.dump();
  }
  std::cout << alerts.size() << " alerts loaded and evaluated\n";
}

}  // namespace
}  // namespace zkfarm::testing
