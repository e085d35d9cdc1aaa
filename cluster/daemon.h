// daemon.h -- the start-up steps zkfarm-coordinator and zkfarm-worker share:
// signal handling, the host name, and the Prometheus endpoint.
//
// Both daemons block SIGTERM and SIGINT in every thread (a dedicated thread or
// a signalfd takes them), ignore SIGPIPE, validate their flags (exit 2 on a
// bad one), then bind /metrics before serving so that a taken port is a
// start-up error (exit 2), not a silent lack of metrics.
#pragma once

#include <signal.h>

#include <memory>
#include <string>

#include "monitoring/metrics/metrics.h"

namespace zkfarm {

// Blocks SIGTERM and SIGINT in the calling thread (and so in every thread it
// starts afterwards) and ignores SIGPIPE. Call first thing in main(), before
// any thread exists. Returns the blocked set, for sigwait or a signalfd.
sigset_t block_termination_signals();

// This machine's host name, or fallback when it has none.
std::string host_name(const std::string& fallback);

// Throws FlagError ("--metrics-listen 'ADDR': why") unless listen is empty
// (metrics off) or a HOST:PORT MetricsEndpoint can bind.
void check_metrics_listen(const std::string& listen);

// Serves metrics at listen (a server of its own: metrics.h), or returns
// nullptr when listen is empty; logs the URL. Throws std::runtime_error when
// the address cannot be bound.
std::unique_ptr<metrics::MetricsEndpoint> serve_metrics(const std::string& listen,
                                                        std::shared_ptr<metrics::FarmMetrics> metrics);

}  // namespace zkfarm
