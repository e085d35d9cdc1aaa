// http_endpoint.cc -- see http_endpoint.h.
#include "monitoring/metrics/http_endpoint.h"

#include <CivetServer.h>
#include <civetweb.h>

#include <cctype>
#include <cstdint>
#include <stdexcept>

namespace zkfarm::metrics {

std::string check_bind_address(std::string_view bind_address) {
  const std::size_t colon = bind_address.rfind(':');
  if (colon == std::string_view::npos) return "expected HOST:PORT";
  const std::string_view host = bind_address.substr(0, colon);
  const std::string_view port = bind_address.substr(colon + 1);
  if (port.empty() || port.size() > 5) return "port must be 0..65535";
  std::uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return "port must be 0..65535";
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value > 65535) return "port must be 0..65535";
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return "IPv6 host must be [ADDRESS]";
    for (char c : host.substr(1, host.size() - 2))
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return "bad IPv6 address";
    return "";
  }
  for (char c : host)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return "host must be an IPv4 address or [IPv6]";
  return "";
}

bool is_loopback_bind_address(std::string_view bind_address) {
  const std::string_view host = bind_address.substr(0, bind_address.rfind(':'));
  return host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string civetweb_listening_port(std::string_view bind_address) {
  // civetweb reads "PORT" as every IPv4 interface and takes a comma-separated
  // list, which check_bind_address has already ruled out.
  return bind_address.front() == ':' ? "0.0.0.0" + std::string(bind_address) : std::string(bind_address);
}

namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

// civetweb's begin_request: every request goes to the endpoint's handler
// (the CivetServer is the context's user data, the handler its user
// context). Returns the status written (non-zero: civetweb does nothing more).
int on_begin_request(mg_connection* connection) {
  const auto* server = static_cast<const CivetServer*>(mg_get_user_data(mg_get_context(connection)));
  const auto* handler = static_cast<const HttpHandler*>(server->getUserContext());
  const mg_request_info* info = mg_get_request_info(connection);
  const char* uri = info->local_uri != nullptr ? info->local_uri : info->request_uri;
  HttpRequest request;
  request.method = info->request_method != nullptr ? info->request_method : "";
  request.path = uri != nullptr ? uri : "";
  request.query = info->query_string != nullptr ? info->query_string : "";
  const char* authorization = mg_get_header(connection, "Authorization");
  request.authorization = authorization != nullptr ? authorization : "";
  HttpResponse response;
  try {
    if (!(*handler)(request, response)) {
      response = HttpResponse{};
      response.status = 404;
      response.body = "not found\n";
    }
  } catch (...) {
    response = HttpResponse{};
    response.status = 500;
    response.body = "internal error\n";
  }
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + reason_phrase(response.status) +
                     "\r\nContent-Type: " + response.content_type +
                     "\r\nContent-Length: " + std::to_string(response.body.size()) +
                     "\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  mg_write(connection, head.data(), head.size());
  if (request.method != "HEAD") mg_write(connection, response.body.data(), response.body.size());
  return response.status;
}

}  // namespace

HttpEndpoint::HttpEndpoint(const std::string& bind_address, HttpHandler handler, HttpServerLimits limits)
    : handler_(std::move(handler)) {
  const std::string problem = check_bind_address(bind_address);
  if (!problem.empty()) throw std::runtime_error("HTTP address '" + bind_address + "': " + problem);
  const std::vector<std::string> options = {
      "listening_ports", civetweb_listening_port(bind_address),
      "num_threads", std::to_string(limits.threads),
      "request_timeout_ms", std::to_string(limits.request_timeout.count()),
      "enable_keep_alive", "no",
  };
  CivetCallbacks callbacks;
  callbacks.begin_request = on_begin_request;
  try {
    server_ = std::make_unique<CivetServer>(options, &callbacks, &handler_);
  } catch (const std::exception& e) {
    throw std::runtime_error("HTTP address '" + bind_address + "': cannot listen: " + e.what());
  }
  const std::vector<int> ports = server_->getListeningPorts();
  if (ports.empty()) {
    server_.reset();
    throw std::runtime_error("HTTP address '" + bind_address + "': not listening");
  }
  port_ = ports.front();
}

HttpEndpoint::~HttpEndpoint() = default;  // ~CivetServer stops civetweb: no request runs after

}  // namespace zkfarm::metrics
