// farm_commands.h -- the zkfarm CLI commands that talk to a proving farm
// through Redis (cluster/farm_api.h): circuit add, submit, status, wait,
// result, workers, cancel; and keygen, which makes the CURVE key pairs the
// coordinator and workers authenticate each other with.
//
// Every farm command takes --redis URL (default $ZKFARM_REDIS, then
// redis://127.0.0.1:6379; a password or ACL user goes in the URL:
// redis://user:password@host:port/db), --prefix (default $ZKFARM_PREFIX,
// then "zkfarm:") and, where files are stored, --artifacts (default
// $ZKFARM_ARTIFACTS).
//
// Exit codes, for all of them: 0 success; 1 the job failed, was cancelled,
// is not done (yet), or a cancel came too late; 2 usage or input error
// (bad arguments, unknown job or circuit, invalid job JSON, Redis
// unreachable), with the message already printed on stderr.
#pragma once

#include <vector>

#include "cli/local_commands.h"

namespace zkfarm::cli {

// The farm commands, in the order `zkfarm --help` lists them.
const std::vector<Command>& farm_commands();

}  // namespace zkfarm::cli
