// defaults.h -- the farm's defaults, declared once: where Redis is, the key
// prefix, and where the coordinator listens for workers. The daemons' flags,
// the CLI's farm options and the config structs all start from these.
//
// Macros as well as constants so that help texts can embed them as literals.
#pragma once

#define ZKFARM_DEFAULT_REDIS_URL "redis://127.0.0.1:6379"
#define ZKFARM_DEFAULT_KEY_PREFIX "zkfarm:"
#define ZKFARM_DEFAULT_COORDINATOR_ENDPOINT "tcp://127.0.0.1:5555"

namespace zkfarm {

// A Redis on this machine, database 0, no password.
inline constexpr char kDefaultRedisUrl[] = ZKFARM_DEFAULT_REDIS_URL;
// Every Redis key starts with it (cluster/keys.h), so farms can share a Redis.
inline constexpr char kDefaultKeyPrefix[] = ZKFARM_DEFAULT_KEY_PREFIX;
// The coordinator's ZeroMQ ROUTER endpoint, loopback only unless configured.
inline constexpr char kDefaultCoordinatorEndpoint[] = ZKFARM_DEFAULT_COORDINATOR_ENDPOINT;
// --witness-url-allow of a daemon started without it: any host whose
// addresses are all public. A pre-signed object-store URL on the internet
// works without configuration, while the farm's own network (loopback,
// link-local, private addresses: Redis, metadata services, admin ports) is
// reached only through an entry naming it. The shipped configs (deploy/)
// say "none" instead: there an operator names the store witnesses come from.
inline constexpr char kDefaultWitnessUrlAllow[] = "public";

}  // namespace zkfarm
