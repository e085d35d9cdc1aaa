// harness.cc -- see harness.h.
#include "tests/harness/harness.h"

#include <string_view>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <hiredis/hiredis.h>

extern char** environ;

namespace zkfarm::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(base ? base : "/tmp") + "/zkfarm-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind to a free port failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string runfile(const std::string& rel) {
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* d = std::getenv(var)) {
      std::string p = std::string(d) + "/zkfarm/" + rel;
      if (std::filesystem::exists(p)) return p;
    }
  }
  if (std::filesystem::exists(rel)) return rel;
  throw std::runtime_error("runfile not found: " + rel);
}

namespace {

// This process's environment with extra_env's variables set (each replacing
// one of the same name).
std::vector<std::string> environment_with(const std::map<std::string, std::string>& extra_env) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos && extra_env.count(entry.substr(0, eq))) continue;
    out.push_back(entry);
  }
  for (const auto& [k, v] : extra_env) out.push_back(k + "=" + v);
  return out;
}

// argv/envp-style pointers into strings, null-terminated (strings must outlive them).
std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Process::Process(std::vector<std::string> argv, std::string log_path,
                 std::map<std::string, std::string> extra_env)
    : log_path_(std::move(log_path)) {
  std::vector<std::string> env_strings = environment_with(extra_env);
  std::vector<char*> envp = null_terminated(env_strings), args = null_terminated(argv);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

Process::~Process() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    wait_for(std::chrono::seconds(10));
  }
}

void Process::signal(int sig) {
  if (running()) ::kill(pid_, sig);
}

std::optional<int> Process::wait_for(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool Process::running() { return !wait_for(std::chrono::milliseconds(0)).has_value(); }

std::string Process::log() const { return read_file(log_path_); }

RedisServer::RedisServer(const std::string& dir, Options options) : dir_(dir), options_(std::move(options)) {
  port_ = free_port();
  start();
}

void RedisServer::start() {
  std::vector<std::string> argv = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                   "--dir", dir_, "--save", "", "--daemonize", "no",
                                   "--appendonly", options_.appendonly ? "yes" : "no",
                                   "--appendfsync", options_.appendfsync, "--maxmemory-policy", "noeviction"};
  if (!options_.password.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(options_.password);
  }
  if (!options_.aclfile.empty()) {
    argv.push_back("--aclfile");
    argv.push_back(options_.aclfile);
  }
  process_ = std::make_unique<Process>(argv, dir_ + "/redis.log");
  bool up = eventually(
      [&] {
        timeval tv{0, 200000};
        redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
        if (!c) return false;
        bool ok = c->err == 0;
        if (ok) {
          auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
          // NOAUTH errors also mean the server is up; LOADING (replaying
          // the AOF after a restart) means it cannot answer yet.
          ok = r != nullptr &&
               !(r->type == REDIS_REPLY_ERROR && r->str && std::string_view(r->str).substr(0, 7) == "LOADING");
          if (r) freeReplyObject(r);
        }
        redisFree(c);
        return ok;
      },
      std::chrono::seconds(10));
  if (!up) throw std::runtime_error("redis-server did not start: " + process_->log());
}

RedisServer::~RedisServer() { process_.reset(); }

bool wait_for_listener(int port, std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
        ::close(fd);
        return ok;
      },
      timeout);
}

HttpServer::HttpServer(const std::string& dir, const std::string& log_path, const std::string& script,
                       const std::vector<std::string>& extra) {
  if (::access("/usr/bin/python3", X_OK) != 0)
    throw std::runtime_error("no /usr/bin/python3 for the test HTTP server (tools/install_deps.sh installs it)");
  port_ = free_port();
  std::vector<std::string> argv = {"/usr/bin/python3"};
  if (script.empty()) argv.insert(argv.end(), {"-m", "http.server", std::to_string(port_), "--bind", "127.0.0.1"});
  else argv.insert(argv.end(), {script, std::to_string(port_)});
  argv.insert(argv.end(), {"--directory", dir});
  argv.insert(argv.end(), extra.begin(), extra.end());
  process_ = std::make_unique<Process>(argv, log_path);
  const bool up = wait_for_listener(port_, std::chrono::seconds(20));
  if (!up) throw std::runtime_error("the test HTTP server did not start: " + process_->log());
}

HttpServer::~HttpServer() { process_.reset(); }

std::string HttpServer::url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }

std::unique_ptr<RedisServer> start_redis_with_shipped_users(const TempDir& dir) {
  write_file(dir.file("users.acl"), read_file(runfile("deploy/users.acl")));
  return std::make_unique<RedisServer>(dir.path(), RedisServer::Options{.aclfile = dir.file("users.acl")});
}

std::string shipped_user_url(const RedisServer& server, const std::string& user) {
  // The password as the file gives it: "user NAME on >PASSWORD ...".
  std::istringstream acl(read_file(runfile("deploy/users.acl")));
  for (std::string line; std::getline(acl, line);) {
    std::istringstream words(line);
    std::string keyword, name, word;
    if (!(words >> keyword >> name) || keyword != "user" || name != user) continue;
    while (words >> word)
      if (word.size() > 1 && word[0] == '>')
        return "redis://" + user + ":" + word.substr(1) + "@127.0.0.1:" + std::to_string(server.port());
  }
  throw std::invalid_argument("shipped_user_url: deploy/users.acl has no user " + user + " with a password");
}

std::string RedisServer::url() const {
  std::string auth = options_.password.empty() ? "" : ":" + options_.password + "@";
  return "redis://" + auth + "127.0.0.1:" + std::to_string(port_);
}

void RedisServer::crash_and_restart() {
  process_->signal(SIGKILL);
  process_->wait_for(std::chrono::seconds(10));
  process_.reset();
  start();
}

CommandResult run_command(const std::vector<std::string>& argv, const std::string& scratch_dir,
                          std::map<std::string, std::string> extra_env, std::chrono::milliseconds timeout,
                          const std::string& stdin_path) {
  static int counter = 0;
  const std::string base = scratch_dir + "/cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  std::vector<std::string> env_strings = environment_with(extra_env), argv_copy = argv;
  std::vector<char*> envp = null_terminated(env_strings), args = null_terminated(argv_copy);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.out = read_file(base + ".out");
  result.err = read_file(base + ".err");
  std::error_code ec;
  std::filesystem::remove(base + ".out", ec);
  std::filesystem::remove(base + ".err", ec);
  return result;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

HttpResult http_request(int port, const std::string& method, const std::string& path, const std::string& body,
                        const std::string& extra_headers) {
  HttpResult result;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) close(fd);
    return result;
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n" + extra_headers;
  if (!body.empty() || method == "POST")
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = write(fd, request.data() + sent, request.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  // Read until the body is complete (Content-Length, last chunk) or EOF;
  // chromedriver may keep the connection open. 120 s at most per read.
  timeval timeout{120, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string response;
  char buffer[65536];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
    response.append(buffer, static_cast<std::size_t>(n));
    const std::size_t end = response.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    std::string head = response.substr(0, end);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::size_t length = head.find("content-length:");
    if (length != std::string::npos &&
        response.size() >= end + 4 + std::stoul(head.substr(length + 15)))
      break;
    if (head.find("transfer-encoding: chunked") != std::string::npos &&
        response.size() >= 5 && response.compare(response.size() - 5, 5, "0\r\n\r\n") == 0)
      break;
  }
  close(fd);
  const std::size_t split = response.find("\r\n\r\n");
  if (response.size() < 12 || split == std::string::npos) return result;
  result.status = std::atoi(response.c_str() + 9);
  result.headers = response.substr(0, split);
  result.body = response.substr(split + 4);
  std::string lower = result.headers;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("transfer-encoding: chunked") != std::string::npos) {
    std::string chunked = std::move(result.body), body;
    for (std::size_t at = 0;;) {
      const std::size_t line_end = chunked.find("\r\n", at);
      if (line_end == std::string::npos) break;
      const std::size_t size = std::stoul(chunked.substr(at, line_end - at), nullptr, 16);
      if (size == 0) break;
      body += chunked.substr(line_end + 2, size);
      at = line_end + 2 + size + 2;
    }
    result.body = std::move(body);
  }
  return result;
}

}  // namespace zkfarm::testing
