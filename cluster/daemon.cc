// daemon.cc -- see daemon.h.
#include "cluster/daemon.h"

#include <pthread.h>
#include <unistd.h>

#include "cluster/flags.h"
#include "cluster/log.h"

namespace zkfarm {

sigset_t block_termination_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::string host_name(const std::string& fallback) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return host[0] ? host : fallback;
}

void check_metrics_listen(const std::string& listen) {
  if (listen.empty()) return;
  const std::string problem = metrics::check_bind_address(listen);
  if (!problem.empty()) throw FlagError("--metrics-listen '" + listen + "': " + problem);
}

std::unique_ptr<metrics::MetricsEndpoint> serve_metrics(const std::string& listen,
                                                        std::shared_ptr<metrics::FarmMetrics> metrics) {
  if (listen.empty()) return nullptr;
  auto endpoint = std::make_unique<metrics::MetricsEndpoint>(listen, std::move(metrics));
  ZKLOG(kInfo) << "metrics at http://" << listen.substr(0, listen.rfind(':')) << ":" << endpoint->port()
               << "/metrics";
  return endpoint;
}

}  // namespace zkfarm
