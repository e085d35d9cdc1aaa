// http_endpoint.h -- the daemons' HTTP servers: bind addresses, and a small
// civetweb server that hands every request to one handler (the coordinator's
// status page). /metrics has its own server (MetricsEndpoint, metrics.h), so
// clients of one port never take the threads of the other.
//
// Each server is one civetweb context with a fixed pool of threads; a
// connection holds a thread from accept to close. HttpServerLimits bounds
// how long a client may hold one: request_timeout caps the time to receive a
// request's headers (a slowloris client that trickles them is dropped when it
// passes) and each read or write after. Keep-alive is off, so each request
// is one connection.
//
// Thread-safety: the handler is called on the server's threads, several at
// once; it must not throw (an exception becomes a 500 with no details).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

class CivetServer;

namespace zkfarm::metrics {

// Checks a bind address as the servers take it, without binding: "HOST:PORT"
// (IPv4 literal), "[IPv6]:PORT" or ":PORT" (all interfaces), port 0..65535.
// Returns an empty string when valid, else what is wrong.
std::string check_bind_address(std::string_view bind_address);
// True for an address only this host can reach: 127.0.0.0/8 or [::1].
bool is_loopback_bind_address(std::string_view bind_address);
// A valid bind address as civetweb's listening_ports option ("0.0.0.0:PORT"
// for ":PORT"; civetweb's own ":PORT" would mean something else).
std::string civetweb_listening_port(std::string_view bind_address);

struct HttpServerLimits {
  std::size_t threads;                        // connections served at once
  std::chrono::milliseconds request_timeout;  // headers in, and each read or write after
};

// A request, handed to an HttpHandler.
struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string path;           // URL-decoded path, e.g. "/api/v1/jobs"
  std::string query;          // raw query string after '?', "" if none
  std::string authorization;  // the Authorization header, "" if none
};
struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};
// Answers a request. Returns false when the path is not its own: the server
// then answers 404.
using HttpHandler = std::function<bool(const HttpRequest&, HttpResponse&)>;

// Serves handler at http://<bind_address>/ on its own threads until
// destroyed. Port 0 takes a free port (see port()). Throws
// std::runtime_error naming the address when it is malformed or cannot be
// bound.
class HttpEndpoint {
 public:
  HttpEndpoint(const std::string& bind_address, HttpHandler handler, HttpServerLimits limits);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  int port() const { return port_; }  // the port actually bound

 private:
  HttpHandler handler_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

}  // namespace zkfarm::metrics
