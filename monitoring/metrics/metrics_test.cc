// metrics_test.cc -- the metrics library against its contract (docs/METRICS.md)
// and against Prometheus's own linter.
//
// Starts a coordinator and a worker metric set on free loopback ports, uses
// every accessor, scrapes /metrics over a plain HTTP/1.0 socket and checks:
// the families and their types and label names are exactly the catalogue's;
// values show up; `promtool check metrics` accepts the scrape.
#include "monitoring/metrics/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace zkfarm::metrics {
namespace {

const char kCircuit[] = "3f2a9c0d1e4b5a6978877665544332211ffeeddccbbaa0099887766554433221";
const char kCircuitLabel[] = "3f2a9c0d1e4b5a69";

// prometheus-cpp's exposer adds these to every endpoint (it cannot be told
// not to); docs/METRICS.md lists them under "Added by prometheus-cpp".
const std::set<std::string> kExposerFamilies = {"exposer_transferred_bytes_total", "exposer_scrapes_total",
                                                "exposer_request_latencies"};

// One catalogue row of docs/METRICS.md.
struct CatalogueEntry {
  std::string type;
  std::set<std::string> labels;
  bool coordinator = false, worker = false;
};

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::string strip_backticks(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
  return trim(s);
}

// Rows "| `zkfarm_name` | type | unit | labels | exported by | meaning |".
std::map<std::string, CatalogueEntry> read_catalogue() {
  std::ifstream in("docs/METRICS.md");
  EXPECT_TRUE(in.good()) << "docs/METRICS.md not in the runfiles";
  std::map<std::string, CatalogueEntry> catalogue;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `zkfarm_", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|')) cells.push_back(trim(cell));
    EXPECT_GE(cells.size(), 6u) << line;
    if (cells.size() < 6) continue;
    CatalogueEntry entry;
    entry.type = cells[1];
    if (cells[3] != "(none)") {
      std::stringstream labels(cells[3]);
      std::string label;
      while (std::getline(labels, label, ',')) entry.labels.insert(strip_backticks(label));
    }
    entry.coordinator = cells[4].find("coordinator") != std::string::npos;
    entry.worker = cells[4].find("worker") != std::string::npos;
    const std::string name = strip_backticks(cells[0]);
    EXPECT_EQ(catalogue.count(name), 0u) << "listed twice: " << name;
    catalogue[name] = entry;
  }
  return catalogue;
}

bool catalogue_mentions(const std::string& name) {
  std::ifstream in("docs/METRICS.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str().find("`" + name + "`") != std::string::npos;
}

// GET /metrics from 127.0.0.1:port over HTTP/1.0; returns the body. Fails the
// test on a connection error or a status other than 200.
std::string scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    ADD_FAILURE() << "cannot connect to 127.0.0.1:" << port;
    return "";
  }
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  EXPECT_EQ(response.rfind("HTTP/1.1 200", 0) == 0 || response.rfind("HTTP/1.0 200", 0) == 0, true)
      << response.substr(0, 200);
  const std::size_t body = response.find("\r\n\r\n");
  EXPECT_NE(body, std::string::npos);
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// GET path from 127.0.0.1:port over HTTP/1.0: the whole response (status
// line, headers, body), "" when it cannot connect.
std::string http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  return response;
}

struct ScrapedFamily {
  std::string type;
  std::set<std::string> label_names;  // over all samples, without "le"
};

// The families of a text-format scrape: "# TYPE name type" lines and the
// label names of their samples.
std::map<std::string, ScrapedFamily> parse_scrape(const std::string& text) {
  std::map<std::string, ScrapedFamily> families;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::stringstream fields(line.substr(7));
      std::string name, type;
      fields >> name >> type;
      families[name].type = type;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (!families.count(name) && name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0)
        name = name.substr(0, name.size() - s.size());
    }
    EXPECT_TRUE(families.count(name)) << "sample without # TYPE: " << line;
    const std::size_t open = line.find('{');
    if (open == std::string::npos) continue;
    const std::string labels = line.substr(open + 1, line.find('}') - open - 1);
    // name="value" pairs; values produced by this library hold no '"' or ','.
    std::stringstream pairs(labels);
    std::string pair;
    while (std::getline(pairs, pair, ',')) {
      const std::string label = pair.substr(0, pair.find('='));
      if (label != "le") families[name].label_names.insert(label);
    }
  }
  return families;
}

// Runs promtool check metrics on the text; returns its exit status and output.
std::pair<int, std::string> promtool_check(const std::string& text) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/zkfarm_metrics_scrape.txt";
  std::ofstream(path) << text;
  const char* override_path = std::getenv("ZKFARM_PROMTOOL");
  const std::string promtool = override_path ? override_path : "/usr/bin/promtool";
  if (access(promtool.c_str(), X_OK) != 0)
    return {-1, promtool + " not found: install Debian's `prometheus` (tools/install_deps.sh)"};
  FILE* pipe = popen((promtool + " check metrics < '" + path + "' 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// Compares a scrape with the catalogue rows of one process.
void expect_matches_catalogue(const std::string& text, bool worker_process) {
  const auto catalogue = read_catalogue();
  ASSERT_GT(catalogue.size(), 30u);
  for (const std::string& name : kExposerFamilies)
    EXPECT_TRUE(catalogue_mentions(name)) << name << " is not documented in docs/METRICS.md";
  const auto scraped = parse_scrape(text);
  for (const auto& [name, entry] : catalogue) {
    if (!(worker_process ? entry.worker : entry.coordinator)) {
      EXPECT_EQ(scraped.count(name), 0u) << name << " is not the " << (worker_process ? "worker" : "coordinator")
                                         << "'s per docs/METRICS.md";
      continue;
    }
    auto it = scraped.find(name);
    if (it == scraped.end()) {
      ADD_FAILURE() << "missing from the scrape: " << name;
      continue;
    }
    EXPECT_EQ(it->second.type, entry.type) << name;
    std::set<std::string> expected = entry.labels;
    if (worker_process) expected.insert({"worker", "device"});
    EXPECT_EQ(it->second.label_names, expected) << "label names of " << name;
  }
  for (const auto& [name, family] : scraped) {
    if (name.rfind("zkfarm_", 0) == 0)
      EXPECT_TRUE(catalogue.count(name)) << "exported but not in docs/METRICS.md: " << name;
    else
      EXPECT_TRUE(kExposerFamilies.count(name)) << "unexpected family: " << name;
  }
}

TEST(Labels, Normalization) {
  EXPECT_EQ(priority_label("critical"), "critical");
  EXPECT_EQ(priority_label("low"), "low");
  EXPECT_EQ(priority_label("urgent"), "unknown");
  EXPECT_EQ(priority_label(""), "unknown");
  EXPECT_EQ(circuit_label(kCircuit), kCircuitLabel);
  EXPECT_EQ(circuit_label("3F2A9C0D1E4B5A69"), "none");  // upper case is not a circuit id
  EXPECT_EQ(circuit_label("abc"), "none");
  EXPECT_EQ(circuit_label(std::string(65, 'a')), "none");
  EXPECT_EQ(code_label("invalidProof"), "invalidProof");
  EXPECT_EQ(code_label("worker_dead"), "worker_dead");
  EXPECT_EQ(code_label("no spaces"), "unknown");
  EXPECT_EQ(code_label("9lives"), "unknown");
  EXPECT_EQ(code_label(std::string(65, 'a')), "unknown");
  EXPECT_EQ(worker_label("host-a/gpu3"), "host-a/gpu3");
  EXPECT_EQ(worker_label("bad\"quote"), "invalid");
  EXPECT_EQ(worker_label(""), "invalid");
  EXPECT_EQ(curve_label("bn128"), "bn254");
  EXPECT_EQ(curve_label("bls12381"), "bls12381");
  EXPECT_EQ(curve_label("secp256k1"), "unknown");
  EXPECT_EQ(stage_label(Stage::kMsm), "msm");
  EXPECT_EQ(stage_label(Stage::kDeviceRelease), "device_release");
}

TEST(Endpoint, BindAddresses) {
  EXPECT_EQ(check_bind_address("127.0.0.1:9460"), "");
  EXPECT_EQ(check_bind_address(":9460"), "");
  EXPECT_EQ(check_bind_address("[::1]:0"), "");
  EXPECT_NE(check_bind_address("9460"), "");
  EXPECT_NE(check_bind_address("127.0.0.1:70000"), "");
  EXPECT_NE(check_bind_address("127.0.0.1:9460,9461"), "");
  EXPECT_NE(check_bind_address("example.com:80"), "");
  EXPECT_EQ(default_worker_bind_address(3), "0.0.0.0:9473");
  EXPECT_EQ(default_worker_bind_address(-1), "0.0.0.0:9469");
  auto metrics = std::make_shared<CoordinatorMetrics>("test");
  EXPECT_THROW(MetricsEndpoint("localhost:0", metrics), std::runtime_error);
  MetricsEndpoint first("127.0.0.1:0", metrics);
  ASSERT_GT(first.port(), 0);
  // The same port twice: the second cannot bind and says which address.
  try {
    MetricsEndpoint second("127.0.0.1:" + std::to_string(first.port()), metrics);
    ADD_FAILURE() << "bound a port already in use";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())), std::string::npos)
        << e.what();
  }
}

// A slowloris client: connects and sends a request's headers a line at a
// time, one every 200 ms, never ending them, until the server closes the
// connection or the Trickler is destroyed.
class Trickler {
 public:
  explicit Trickler(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    thread_ = std::thread([this] {
      std::string line = "GET /metrics HTTP/1.1\r\n";
      while (connected_ && !stop_) {
        if (send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) break;
        line = "X-Slow: 1\r\n";
        for (int i = 0; i < 20 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      dropped_ = !stop_;
    });
  }
  ~Trickler() {
    stop_ = true;
    thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  bool dropped() const { return dropped_; }  // the server closed it

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::atomic<bool> stop_{false}, dropped_{false};
  std::thread thread_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// /metrics under slowloris: more trickling clients than the 4 threads the
// page and /metrics used to share, on the metrics port itself. A scrape
// still answers (free threads), well inside a generous bound; with
// civetweb's default request timeout (30 s) and 4 threads it waited until
// the first trickler gave up.
TEST(Endpoint, ScrapeAnswersBesideSlowlorisClients) {
  auto metrics = std::make_shared<CoordinatorMetrics>("test");
  MetricsEndpoint endpoint("127.0.0.1:0", metrics);
  std::vector<std::unique_ptr<Trickler>> tricklers;
  for (int i = 0; i < 6; ++i) tricklers.push_back(std::make_unique<Trickler>(endpoint.port()));
  for (const auto& t : tricklers) ASSERT_TRUE(t->connected());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // each holds a thread now
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(scrape(endpoint.port()).find("zkfarm_build_info"), std::string::npos);
  EXPECT_LT(seconds_since(start), 10.0);
}

// A trickling client loses its thread once the request timeout passes,
// even with every thread taken: the server answers again.
TEST(Endpoint, RequestTimeoutDropsTricklingClients) {
  std::atomic<int> calls{0};
  HttpEndpoint endpoint(
      "127.0.0.1:0",
      [&](const HttpRequest&, HttpResponse& response) {
        ++calls;
        response.body = "ok";
        return true;
      },
      HttpServerLimits{2, std::chrono::milliseconds(500)});
  std::vector<std::unique_ptr<Trickler>> tricklers;
  for (int i = 0; i < 2; ++i) tricklers.push_back(std::make_unique<Trickler>(endpoint.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  const std::string page = http_get(endpoint.port(), "/");
  EXPECT_EQ(page.rfind("HTTP/1.1 200", 0), 0u) << page;
  EXPECT_LT(seconds_since(start), 20.0);
  for (const auto& t : tricklers) {
    for (int i = 0; i < 1000 && !t->dropped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(t->dropped()) << "a trickling client kept its connection past the request timeout";
  }
  EXPECT_EQ(calls, 1) << "a request without its blank line reached the handler";
}

// An HttpEndpoint hands every path to its handler; a declined path is a 404.
// /metrics is not served there: it has its own server.
TEST(Endpoint, HttpEndpointServesItsHandler) {
  std::atomic<int> calls{0};
  const HttpServerLimits limits{2, std::chrono::milliseconds(1000)};
  HttpEndpoint endpoint(
      "127.0.0.1:0",
      [&](const HttpRequest& request, HttpResponse& response) {
        ++calls;
        if (request.path != "/" && request.path != "/api/v1/thing") return false;
        response.content_type = "application/json";
        response.headers.push_back({"Cache-Control", "no-store"});
        response.body = "{\"path\":\"" + request.path + "\",\"query\":\"" + request.query + "\"}";
        return true;
      },
      limits);
  const std::string page = http_get(endpoint.port(), "/api/v1/thing?limit=3");
  EXPECT_EQ(page.rfind("HTTP/1.1 200", 0), 0u) << page;
  EXPECT_NE(page.find("Content-Type: application/json"), std::string::npos) << page;
  EXPECT_NE(page.find("Cache-Control: no-store"), std::string::npos) << page;
  EXPECT_NE(page.find("{\"path\":\"/api/v1/thing\",\"query\":\"limit=3\"}"), std::string::npos) << page;
  const std::string missing = http_get(endpoint.port(), "/metrics");
  EXPECT_EQ(missing.substr(0, missing.find("\r\n")).substr(8), " 404 Not Found") << missing;
  EXPECT_EQ(calls, 2);
  // The metrics server answers /metrics only.
  auto metrics = std::make_shared<CoordinatorMetrics>("test");
  MetricsEndpoint metrics_endpoint("127.0.0.1:0", metrics);
  const std::string root = http_get(metrics_endpoint.port(), "/");
  EXPECT_EQ(root.substr(0, root.find("\r\n")).substr(8), " 404 Not Found") << root;
  // Two endpoints in one process each reach their own handler.
  HttpEndpoint other(
      "127.0.0.1:0",
      [](const HttpRequest&, HttpResponse& response) {
        response.body = "other";
        return true;
      },
      limits);
  const std::string other_page = http_get(other.port(), "/");
  EXPECT_EQ(other_page.substr(other_page.size() - 5), "other");
  EXPECT_NE(http_get(endpoint.port(), "/").find("\"path\":\"/\""), std::string::npos);
  EXPECT_THROW(HttpEndpoint("127.0.0.1:" + std::to_string(other.port()), {}, limits), std::runtime_error);
  EXPECT_TRUE(is_loopback_bind_address("127.0.0.1:9461"));
  EXPECT_TRUE(is_loopback_bind_address("[::1]:9461"));
  EXPECT_FALSE(is_loopback_bind_address("0.0.0.0:9461"));
  EXPECT_FALSE(is_loopback_bind_address(":9461"));
}

TEST(Coordinator, ScrapeMatchesCatalogueAndPassesPromtool) {
  auto metrics = std::make_shared<CoordinatorMetrics>("0.1.0-test");
  MetricsEndpoint endpoint("127.0.0.1:0", metrics);
  metrics->circuit_registered(kCircuit);
  // Every accessor once, so every family has a child to show.
  metrics->tenant_registered("acme");
  metrics->jobs_submitted(kCircuit, "critical", "").Increment();
  metrics->jobs_submitted(kCircuit, "critical", "").Increment();
  metrics->jobs_submitted(kCircuit, "normal", "acme").Increment();
  metrics->jobs_completed(kCircuit, "critical", "").Increment();
  metrics->jobs_failed("", "bogus", "invalidJob", "").Increment();
  metrics->jobs_active("normal").Set(3);
  metrics->queue_depth("high", "").Set(7);
  metrics->queue_depth("low", "acme").Set(5);
  metrics->job_queue_wait("critical", "").Observe(0.3);
  metrics->job_latency(kCircuit, "critical", "").Observe(12.5);
  metrics->partitions_proved(kCircuit, "").Increment(10);
  metrics->partitions_verified(kCircuit, "").Increment(9);
  metrics->partitions_invalid(kCircuit, "host-a/gpu1", "").Increment();
  metrics->partitions_retried(kCircuit, "invalidProof", "").Increment();
  metrics->partitions_requeued("workerDead", "").Increment(2);
  metrics->partitions_pending("low").Set(4);
  metrics->partitions_in_flight().Set(2);
  metrics->partition_dispatch_wait("normal", "").Observe(0.02);
  metrics->verify_duration("bls12381").Observe(0.8);
  metrics->worker_connected("host-a/gpu1").Set(1);
  metrics->worker_quarantined("host-a/gpu1").Set(0);
  metrics->worker_faults("host-a/gpu1").Increment();
  metrics->worker_heartbeat_misses("host-a/gpu1").Increment(3);
  metrics->worker_deaths("host-a/gpu1").Increment();
  metrics->redis_errors().Increment();

  const std::string text = scrape(endpoint.port());
  ASSERT_FALSE(text.empty());
  expect_matches_catalogue(text, /*worker_process=*/false);
  EXPECT_NE(text.find("zkfarm_jobs_submitted_total{circuit=\"" + std::string(kCircuitLabel) +
                      "\",priority=\"critical\",tenant=\"default\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("zkfarm_jobs_submitted_total{circuit=\"" + std::string(kCircuitLabel) +
                      "\",priority=\"normal\",tenant=\"acme\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_jobs_failed_total{circuit=\"none\",code=\"invalidJob\",priority=\"unknown\","
                      "tenant=\"default\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_queue_depth{priority=\"high\",tenant=\"default\"} 7"), std::string::npos);
  EXPECT_NE(text.find("zkfarm_queue_depth{priority=\"low\",tenant=\"acme\"} 5"), std::string::npos);
  // Priority series exist at 0 before any use; alert thresholds are buckets.
  EXPECT_NE(text.find("zkfarm_queue_depth{priority=\"low\",tenant=\"default\"} 0"), std::string::npos);
  EXPECT_NE(text.find("zkfarm_job_latency_seconds_bucket{circuit=\"" + std::string(kCircuitLabel) +
                      "\",priority=\"critical\",tenant=\"default\",le=\"20\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_job_latency_seconds_bucket{circuit=\"" + std::string(kCircuitLabel) +
                      "\",priority=\"critical\",tenant=\"default\",le=\"1800\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_build_info{component=\"coordinator\",version=\"0.1.0-test\"} 1"), std::string::npos);

  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << "promtool check metrics:\n" << output << "\nscrape:\n" << text;
}

// Labels from jobs and Hellos are bounded: unregistered circuits count as
// "unknown", worker ids past kMaxWorkerLabels as "other".
TEST(Coordinator, CircuitAndWorkerLabelsAreBounded) {
  CoordinatorMetrics metrics("0.1.0-test");
  const std::string other_circuit(64, 'b');
  metrics.jobs_submitted(other_circuit, "normal", "").Increment();
  metrics.jobs_failed(other_circuit, "normal", "unknownCircuit", "").Increment();
  metrics.jobs_submitted("not-hex", "normal", "").Increment();
  metrics.circuit_registered(kCircuit);
  metrics.jobs_submitted(kCircuit, "normal", "").Increment();
  for (std::size_t i = 0; i < CoordinatorMetrics::kMaxWorkerLabels + 10; ++i)
    metrics.worker_connected("w" + std::to_string(i)).Set(1);
  const std::string text = metrics.scrape_text();
  EXPECT_NE(text.find("zkfarm_jobs_submitted_total{circuit=\"unknown\",priority=\"normal\",tenant=\"default\"} 1"),
            std::string::npos)
      << text.substr(0, 4000);
  EXPECT_NE(text.find("zkfarm_jobs_failed_total{circuit=\"unknown\",code=\"unknownCircuit\",priority=\"normal\","
                      "tenant=\"default\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_jobs_submitted_total{circuit=\"none\",priority=\"normal\",tenant=\"default\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("zkfarm_jobs_submitted_total{circuit=\"" + std::string(kCircuitLabel) +
                      "\",priority=\"normal\",tenant=\"default\"} 1"),
            std::string::npos);
  EXPECT_EQ(text.find("circuit=\"bbbbbbbbbbbbbbbb\""), std::string::npos);
  EXPECT_NE(text.find("zkfarm_worker_connected{worker=\"w0\"} 1"), std::string::npos);
  EXPECT_NE(text.find("zkfarm_worker_connected{worker=\"other\"} 1"), std::string::npos);
  EXPECT_EQ(text.find("zkfarm_worker_connected{worker=\"w" + std::to_string(CoordinatorMetrics::kMaxWorkerLabels) +
                      "\"}"),
            std::string::npos);
  std::size_t series = 0;
  for (std::size_t at = 0; (at = text.find("\nzkfarm_worker_connected{", at)) != std::string::npos; ++at) ++series;
  EXPECT_EQ(series, CoordinatorMetrics::kMaxWorkerLabels + 1);
}

// Tenant labels are bounded as circuit labels: the default tenant is
// "default", a registered tenant its name (at most kMaxTenantLabels of
// them), anything else -- a tenant not (yet) registered, a malformed name,
// names past the cap -- "unknown".
TEST(Coordinator, TenantLabelsAreBounded) {
  EXPECT_EQ(tenant_label(""), "default");
  EXPECT_EQ(tenant_label("default"), "default");
  EXPECT_EQ(tenant_label("acme-1"), "acme-1");
  for (const char* bad : {"Acme", "a:b", "-a", "a\"b", "abcdefghijabcdefghijabcdefghijabc"})
    EXPECT_EQ(tenant_label(bad), "unknown") << bad;
  CoordinatorMetrics metrics("0.1.0-test");
  metrics.circuit_registered(kCircuit);
  metrics.jobs_completed(kCircuit, "normal", "acme").Increment();  // not registered yet
  metrics.tenant_registered("acme");
  metrics.tenant_registered("Bad:Name");  // never a label
  metrics.jobs_completed(kCircuit, "normal", "acme").Increment();
  metrics.jobs_completed(kCircuit, "normal", "Bad:Name").Increment();
  for (std::size_t i = 0; i < CoordinatorMetrics::kMaxTenantLabels + 10; ++i)
    metrics.tenant_registered("t" + std::to_string(i));
  for (std::size_t i = 0; i < CoordinatorMetrics::kMaxTenantLabels + 10; ++i)
    metrics.partitions_verified(kCircuit, "t" + std::to_string(i)).Increment();
  const std::string text = metrics.scrape_text();
  const std::string head = "zkfarm_jobs_completed_total{circuit=\"" + std::string(kCircuitLabel) + "\",priority=\"normal\",";
  EXPECT_NE(text.find(head + "tenant=\"acme\"} 1"), std::string::npos) << text.substr(0, 4000);
  EXPECT_NE(text.find(head + "tenant=\"unknown\"} 2"), std::string::npos) << text.substr(0, 4000);
  EXPECT_EQ(text.find("Bad:Name"), std::string::npos);
  std::size_t series = 0;
  for (std::size_t at = 0; (at = text.find("\nzkfarm_partitions_verified_total{", at)) != std::string::npos; ++at)
    ++series;
  // acme took one of the cap's places: kMaxTenantLabels - 1 of t0.., plus "unknown".
  EXPECT_EQ(series, CoordinatorMetrics::kMaxTenantLabels);
  EXPECT_NE(text.find("zkfarm_partitions_verified_total{circuit=\"" + std::string(kCircuitLabel) +
                      "\",tenant=\"unknown\"} 11"),
            std::string::npos);
}

TEST(Worker, ScrapeMatchesCatalogueAndPassesPromtool) {
  auto metrics = std::make_shared<WorkerMetrics>("host-a/gpu3", "3", "0.1.0-test");
  MetricsEndpoint endpoint("127.0.0.1:0", metrics);
  metrics->set_device_info("NVIDIA H200", "GPU-0f0e0d0c", "cuda");
  metrics->set_device_info("NVIDIA H200", "GPU-0f0e0d0c-b", "cuda");  // replaces the first
  metrics->slots().Set(2);
  metrics->proofs(kCircuit).Increment();
  metrics->task_errors("deviceFault").Increment();
  metrics->witgen_duration().Observe(0.2);
  metrics->witgen_failures("badInput").Increment();
  metrics->witgen_queue_depth().Set(3);
  metrics->witgen_workers().Set(14);
  metrics->witgen_busy(2);
  metrics->witgen_busy(0);
  metrics->memory_used_bytes().Set(73.5e9);
  metrics->memory_total_bytes().Set(150e9);
  for (Stage stage : kAllStages) metrics->prove_stage_duration(stage).Observe(0.5);
  metrics->prove_duration(kCircuit).Observe(3.0);
  metrics->coordinator_heartbeat_misses().Increment();
  metrics->circuit_cache_hits(kCircuit).Increment(5);
  metrics->circuit_cache_misses(kCircuit).Increment();
  metrics->circuit_loads(kCircuit, true).Increment();
  metrics->circuit_loads(kCircuit, false).Increment();
  metrics->circuit_load_duration(kCircuit).Observe(42);
  metrics->circuit_cache_evictions().Increment();
  metrics->circuit_cache_resident().Set(1);
  metrics->redis_errors().Increment();

  // Busy time counts while a task runs, before it finishes (flushed at
  // scrape), and overlapping tasks do not count twice: the busy time can
  // never exceed the wall time since the first task started. Counting each
  // task would give about twice the elapsed time.
  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto first_started = std::chrono::steady_clock::now();
  metrics->task_started();
  metrics->task_started();  // overlapping tasks do not count twice
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const std::string text = scrape(endpoint.port());
  ASSERT_FALSE(text.empty());
  const double busy_while_running = metrics->busy_seconds().Value();
  EXPECT_GE(busy_while_running, 0.1);
  EXPECT_LE(busy_while_running, seconds_since(first_started)) << "overlapping tasks counted twice";
  EXPECT_EQ(metrics->tasks_in_progress().Value(), 2);
  // The slots' time counts each task: two tasks of >= 0.12 s each.
  const double tasks_while_running = metrics->task_seconds().Value();
  EXPECT_GE(tasks_while_running, 0.2) << "each task in progress counts";
  EXPECT_LE(tasks_while_running, 2 * seconds_since(first_started));
  metrics->task_finished();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // one task still runs: busy
  metrics->task_finished();
  metrics->task_finished();  // unbalanced: ignored
  EXPECT_EQ(metrics->tasks_in_progress().Value(), 0);
  const double busy_after = metrics->busy_seconds().Value();
  EXPECT_GE(busy_after, busy_while_running + 0.05) << "a task still running after another finished is busy time";
  EXPECT_LE(busy_after, seconds_since(first_started)) << "overlapping tasks counted twice";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  scrape(endpoint.port());
  EXPECT_EQ(metrics->busy_seconds().Value(), busy_after) << "idle time must not count as busy";
  // The second task's 50 ms alone count once more, not twice.
  const double tasks_after = metrics->task_seconds().Value();
  EXPECT_GE(tasks_after, tasks_while_running + 0.05);
  // (Counted twice, the difference would be >= 0.05 s over the busy time's;
  // both were flushed by the same scrape, a moment before the first finish.)
  EXPECT_LT(tasks_after - tasks_while_running, busy_after - busy_while_running + 0.04)
      << "one task running counts its time once";

  expect_matches_catalogue(text, /*worker_process=*/true);
  // Constant labels come first in prometheus-cpp's output.
  EXPECT_NE(text.find("zkfarm_device_proofs_total{device=\"3\",worker=\"host-a/gpu3\",circuit=\"" +
                      std::string(kCircuitLabel) + "\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("uuid=\"GPU-0f0e0d0c-b\""), std::string::npos);
  EXPECT_EQ(text.find("uuid=\"GPU-0f0e0d0c\""), std::string::npos) << "old device_info series kept";
  EXPECT_NE(text.find("zkfarm_device_tasks_in_progress{device=\"3\",worker=\"host-a/gpu3\"} 2"), std::string::npos);

  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << "promtool check metrics:\n" << output << "\nscrape:\n" << text;
}

// A fresh process's scrape (nothing observed yet) is also clean.
TEST(Worker, FreshScrapePassesPromtool) {
  auto metrics = std::make_shared<WorkerMetrics>("host-b/cpu", "cpu", "0.1.0-test");
  MetricsEndpoint endpoint("127.0.0.1:0", metrics);
  const std::string text = scrape(endpoint.port());
  EXPECT_NE(text.find("zkfarm_device_busy_seconds_total{device=\"cpu\",worker=\"host-b/cpu\"} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("zkfarm_prove_stage_duration_seconds_count{device=\"cpu\",worker=\"host-b/cpu\",stage=\"spmv\"} 0"),
            std::string::npos);
  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << output;
}

// Accessors from many threads at once (run under TSan to check the locking).
TEST(Coordinator, ConcurrentUpdates) {
  auto metrics = std::make_shared<CoordinatorMetrics>("test");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < 1000; ++i) {
        metrics->partitions_verified(kCircuit, "").Increment();
        metrics->job_latency(kCircuit, kPriorities[static_cast<std::size_t>(t)], "").Observe(i * 0.01);
        metrics->worker_faults("w" + std::to_string(i % 8)).Increment();
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(metrics->partitions_verified(kCircuit, "").Value(), 4000);
  EXPECT_NE(metrics->scrape_text().find("zkfarm_worker_faults_total{worker=\"w7\"} 500"), std::string::npos);
}

}  // namespace
}  // namespace zkfarm::metrics
