// tenants_test.cc -- tenants against a real redis-server and real farm
// processes (cluster/tenants.h):
//   * HostileTenantIsRefused: Redis started with the shipped ACL users
//     (deploy/users.acl), two tenants made by the admin's `tenant add` code;
//     tenant A tries every way it has to reach tenant B's jobs, the default
//     tenant's jobs or the farm's own state, and Redis refuses each (NOPERM);
//     A's own client commands work, and both tenants use one job id.
//   * TenantJobsRunAndCircuitsAreTheirs: a coordinator and a worker take
//     jobs from the default tenant's and two tenants' queues (one id in all
//     three); a circuit shared with one tenant only fails the other's job
//     unknownCircuit; a tenant's own circuit serves its jobs; a tenant may
//     not register a witness generator; a tenant cancels its queued job.
//   * QuotaRefusals: a tenant's job over its max-job-bytes, or of more
//     partitions than its max-active-partitions, fails quotaExceeded at
//     intake with a message naming the limit and the figures; a job within
//     them runs.
//   * QueuedJobsBeyondTheLimitAreRefused: a tenant with max-queued-jobs 2
//     and six jobs queued (five submitted, one raw LPUSH) keeps the two
//     first in take order (priority, then age); the others fail
//     quotaExceeded, each naming its figure.
//   * ActivePartitionsHoldTheJobInItsQueue: with max-active-partitions 2 a
//     tenant's second job of two partitions waits in its queue until the
//     first ended, and its third starts after it (order kept); another
//     tenant's job queued behind them starts meanwhile.
//   * IntakeSlotsAreSharedBetweenTenants: with --max-active-jobs 4 and no
//     worker, a tenant's burst holds 3 of the slots (one kept for the idle
//     tenants) and another tenant's job is taken at once.
//   * CliManagesTenants: `zkfarm tenant add|list|set|rotate|remove`.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/digest.h"
#include "cluster/farm_api.h"
#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/tenants.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;

// Runs a command that Redis must refuse with NOPERM; returns "" when it
// was refused so, else what happened.
std::string refusal_problem(RedisClient& redis, const std::vector<std::string>& command) {
  try {
    redis.command(command);
  } catch (const RedisError& e) {
    if (std::string(e.what()).find("NOPERM") != std::string::npos) return "";
    return std::string("refused, but not by the ACL: ") + e.what();
  }
  return "accepted";
}

std::string joined(const std::vector<std::string>& command) {
  std::string out;
  for (const auto& part : command) out += (out.empty() ? "" : " ") + part.substr(0, 60);
  return out;
}

TEST(TenantAcl, HostileTenantIsRefused) {
  TempDir dir;
  // The shipped users, in a copy Redis may rewrite (ACL SAVE).
  const std::unique_ptr<RedisServer> server = start_redis_with_shipped_users(dir);
  const std::string admin_url = shipped_user_url(*server, "zkfarm-admin");
  RedisClient admin(admin_url);
  const KeyLayout keys("zkfarm:");
  TenantRecord a_record;
  a_record.name = "a";
  TenantRecord b_record;
  b_record.name = "b";
  b_record.weight = 3;
  const TenantCredentials a = add_tenant(admin, keys, a_record);
  const TenantCredentials b = add_tenant(admin, keys, b_record);
  EXPECT_EQ(a.user, "zkfarm-tenant-a");
  EXPECT_EQ(load_tenant(admin, keys, "b")->weight, 3);
  // The users were saved into the ACL file.
  EXPECT_NE(read_file(dir.file("users.acl")).find("user zkfarm-tenant-b"), std::string::npos);

  // The farm's own state and the default tenant's job, as the admin makes them.
  const std::string circuit(64, 'c');
  admin.command({"HSET", keys.circuit(circuit), "curve", "bn128"});
  admin.command({"SADD", keys.circuits(), circuit});
  admin.command({"HSET", keys.worker("w1"), "state", "alive"});
  admin.command({"SADD", keys.quarantine(), "w2"});
  admin.command({"HSET", keys.job("j1"), "state", "queued"});

  // Both tenants submit a job of one id; each sees its own.
  farm::FarmOptions as_a;
  as_a.redis_url = a.url(admin_url);
  farm::FarmOptions as_b;
  as_b.redis_url = b.url(admin_url);
  const std::string job = R"({"id":"j1","circuit":")" + circuit + R"(","partitions":[{"witness":"file:///w.wtns"}]})";
  EXPECT_EQ(farm::submit(as_a, job), "j1");
  EXPECT_EQ(farm::submit(as_b, job), "j1");
  EXPECT_THROW(farm::submit(as_b, job), farm::FarmError);  // one id once per tenant
  ASSERT_TRUE(farm::status(as_a, "j1"));
  EXPECT_EQ(farm::status(as_a, "j1")->state, "queued");
  EXPECT_EQ(admin.command({"LLEN", keys.for_tenant("b").queue(Priority::kNormal)}).as_integer(), 1);
  EXPECT_EQ(admin.command({"LLEN", keys.queue(Priority::kNormal)}).as_integer(), 0);
  // A's raw queue push works as before, into its own queue.
  RedisClient hostile(a.url(admin_url));
  hostile.command({"LPUSH", keys.for_tenant("a").queue(Priority::kLow), job});
  EXPECT_EQ(farm::cancel(as_a, "j1"), "cancelled");
  EXPECT_EQ(farm::status(as_b, "j1")->state, "queued");  // B's job of that id untouched

  const KeyLayout tb = keys.for_tenant("b");
  const std::string evil_job = R"({"id":"x","circuit":")" + circuit + R"(","partitions":[{"witness":"file:///etc/passwd"}]})";
  const std::vector<std::vector<std::string>> attempts = {
      // read another tenant's jobs, results and events
      {"HGETALL", tb.job("j1")},
      {"HGET", tb.job("j1"), "spec"},
      {"GET", tb.job_result("j1")},
      {"LRANGE", tb.job_events("j1"), "0", "-1"},
      {"BLPOP", tb.done("j1"), "0.01"},
      {"LRANGE", tb.queue(Priority::kNormal), "0", "-1"},
      {"ZRANGE", tb.queued_index(Priority::kNormal), "0", "-1"},
      {"SUBSCRIBE", tb.events_channel()},
      // ... and the default tenant's
      {"HGETALL", keys.job("j1")},
      {"LRANGE", keys.queue(Priority::kNormal), "0", "-1"},
      // cancel another tenant's job
      {"FCALL", "zkfarm_cancel_1", "8", tb.job("j1"), tb.done("j1"), tb.job_events("j1"),
       tb.recent_failed("cancelled"), tb.queued_index(Priority::kCritical), tb.queued_index(Priority::kHigh),
       tb.queued_index(Priority::kNormal), tb.queued_index(Priority::kLow), "0", "0", "{}", tb.events_channel(),
       tb.cancels(""), tb.job(""), "100"},
      {"SADD", tb.cancels("coordinator-1"), "j1"},
      {"SADD", keys.cancels("coordinator-1"), "j1"},
      // overwrite a result, forge a job record
      {"SET", tb.job_result("j1"), "{}"},
      {"HSET", tb.job("j1"), "state", "done"},
      {"HSET", tb.job("forged"), "state", "queued"},
      {"HSET", keys.job("forged"), "state", "queued"},
      {"RPUSH", tb.done("j1"), "done"},
      // push into another tenant's queue, the default tenant's, a coordinator's list
      {"LPUSH", tb.queue(Priority::kCritical), evil_job},
      {"LPUSH", keys.queue(Priority::kCritical), evil_job},
      {"LPUSH", keys.processing("coordinator-1"), evil_job},
      {"FCALL", "zkfarm_submit_1", "3", tb.job("x"), tb.queue(Priority::kNormal), tb.queued_index(Priority::kNormal),
       "0", circuit, "normal", "1", evil_job, "d", "x", ""},
      // change a circuit record, share one with itself, change a worker record or the quarantine
      {"HSET", keys.circuit(circuit), "zkey", "../../etc/passwd"},
      {"SADD", keys.circuits(), std::string(64, 'd')},
      {"SADD", keys.circuit_tenants(circuit), "a"},
      {"HSET", keys.worker("w1"), "state", "gone"},
      {"SREM", keys.quarantine(), "w2"},
      {"SADD", keys.quarantine(), "w1"},
      {"HSET", keys.worker_keys(), "w1", "key"},
      // raise its own figures, add a tenant
      {"HSET", keys.tenant_record("a"), "weight", "1000"},
      {"SADD", keys.tenants(), "c"},
      // run a script, load one, replace the farm's client functions
      {"EVAL", "return redis.call('KEYS', '*')", "0"},
      {"EVALSHA", std::string(40, '0'), "0"},
      {"SCRIPT", "LOAD", "return 1"},
      {"FUNCTION", "LOAD", "REPLACE", "#!lua name=zkfarm_jobs_1\nredis.register_function('zkfarm_submit_1', "
                                      "function(k, a) return redis.call('FLUSHALL') end)"},
      {"FUNCTION", "FLUSH"},
      // list keys outside its namespace
      {"KEYS", "*"},
      {"SCAN", "0"},
      {"SCAN", "0", "MATCH", "zkfarm:t:a:*"},
      {"RANDOMKEY"},
      // administration
      {"CONFIG", "GET", "*"},
      {"CONFIG", "SET", "maxmemory", "1"},
      {"FLUSHALL"},
      {"FLUSHDB"},
      {"ACL", "SETUSER", "zkfarm-tenant-a", "+@all", "~*"},
      {"ACL", "LIST"},
      {"ACL", "GETUSER", "zkfarm-tenant-b"},
      {"CLIENT", "LIST"},
      {"CLIENT", "KILL", "USER", "zkfarm-tenant-b"},
      {"MONITOR"},
      {"SHUTDOWN", "NOSAVE"},
      {"DEL", tb.job("j1")},
      {"RENAME", tb.job("j1"), "zkfarm:t:a:stolen"},
      {"MIGRATE", "127.0.0.1", "1", tb.job("j1"), "0", "10"},
  };
  for (const auto& command : attempts)
    EXPECT_EQ(refusal_problem(hostile, command), "") << joined(command);
  // Nothing of B's, the default tenant's or the farm's changed.
  EXPECT_EQ(farm::status(as_b, "j1")->state, "queued");
  EXPECT_EQ(admin.command({"LLEN", tb.queue(Priority::kNormal)}).as_integer(), 1);
  EXPECT_EQ(admin.command({"LLEN", tb.queue(Priority::kCritical)}).as_integer(), 0);
  EXPECT_EQ(admin.command({"LLEN", keys.queue(Priority::kCritical)}).as_integer(), 0);
  EXPECT_EQ(admin.command({"HGET", keys.job("j1"), "state"}).as_string(), "queued");
  EXPECT_EQ(admin.command({"EXISTS", tb.job("x")}).as_integer(), 0);
  EXPECT_EQ(admin.command({"SISMEMBER", keys.quarantine(), "w2"}).as_integer(), 1);
  EXPECT_EQ(admin.command({"HGET", keys.tenant_record("a"), "weight"}).as_string(), "1");
  EXPECT_GT(admin.command({"DBSIZE"}).as_integer(), 5);

  // The workers' user reads circuit records and nothing is written with it.
  RedisClient worker(shipped_user_url(*server, "zkfarm-worker"));
  EXPECT_EQ(worker.command({"HGET", keys.circuit(circuit), "curve"}).as_string(), "bn128");
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"HSET", keys.circuit(circuit), "zkey", "x"},
                                             {"LPUSH", keys.queue(Priority::kCritical), evil_job},
                                             {"SREM", keys.quarantine(), "w2"},
                                             {"EVAL", "return 1", "0"},
                                             {"KEYS", "*"}})
    EXPECT_EQ(refusal_problem(worker, command), "") << "worker: " << joined(command);

  // A tenant cannot manage tenants; a removed tenant cannot log in; a
  // rotated password replaces the old one.
  EXPECT_THROW(add_tenant(hostile, keys, TenantRecord{.name = "c"}), RedisError);
  const TenantCredentials b2 = rotate_tenant(admin, keys, "b");
  EXPECT_THROW(RedisClient(b.url(admin_url)).command({"PING"}), RedisError);
  EXPECT_EQ(farm::status(farm::FarmOptions{.redis_url = b2.url(admin_url)}, "j1")->state, "queued");
  remove_tenant(admin, keys, "a");
  EXPECT_THROW(RedisClient(a.url(admin_url)).command({"PING"}), RedisError);
  EXPECT_EQ(tenant_names(admin, keys), std::vector<std::string>{"b"});
}

TEST(TenantAcl, NamesAndUsers) {
  const KeyLayout keys("zkfarm:");
  EXPECT_TRUE(is_valid_tenant_name("acme-1"));
  for (const char* bad : {"", "default", "Acme", "a:b", "a*", "-a", "a b", "abcdefghijabcdefghijabcdefghijabc"})
    EXPECT_FALSE(is_valid_tenant_name(bad)) << bad;
  EXPECT_EQ(keys.for_tenant("acme").job("j"), "zkfarm:t:acme:job:j");
  EXPECT_EQ(keys.for_tenant("acme").processing("c"), "zkfarm:processing:c");  // the farm's
  EXPECT_EQ(keys.job("j"), "zkfarm:job:j");                                    // the default tenant: unchanged
  EXPECT_EQ(tenant_of_user(keys, "zkfarm-tenant-acme"), "acme");
  EXPECT_EQ(tenant_of_user(keys, "zkfarm-admin"), "");
  EXPECT_EQ(tenant_of_user(keys, "default"), "");
  EXPECT_THROW(tenant_acl_rules(KeyLayout("zk*:"), "acme"), TenantError);
  EXPECT_THROW(TenantRecord({.name = "a", .weight = 0}).check(), TenantError);
  const ProcessingEntry entry = split_processing_entry(processing_entry("acme", "{\"id\":\"j\"}"));
  EXPECT_EQ(entry.tenant, "acme");
  EXPECT_EQ(entry.raw, "{\"id\":\"j\"}");
  EXPECT_EQ(split_processing_entry("{}").tenant, "");
}

TEST(TenantAcl, TakeOverMovesTenantJobsAndCancels) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  const KeyLayout keys("zkfarm:");
  const KeyLayout ta = keys.for_tenant("a");
  JobStore store(redis, keys);
  redis.command({"HSET", ta.job("j"), JobStore::kOwner, "dead", JobStore::kState, "running"});
  redis.command({"HSET", keys.job("j"), JobStore::kOwner, "dead", JobStore::kState, "running"});
  redis.command({"LPUSH", keys.processing("dead"), processing_entry("a", R"({"id":"j"})")});
  redis.command({"LPUSH", keys.processing("dead"), R"({"id":"j"})"});
  redis.command({"SADD", ta.cancels("dead"), "j"});
  EXPECT_EQ(store.take_over("dead", "me", {"a"}), 2u);
  EXPECT_EQ(redis.command({"HGET", ta.job("j"), JobStore::kOwner}).as_string(), "me");
  EXPECT_EQ(redis.command({"HGET", keys.job("j"), JobStore::kOwner}).as_string(), "me");
  EXPECT_EQ(redis.command({"SISMEMBER", ta.cancels("me"), "j"}).as_integer(), 1);
  // take_next: the default tenant first, then the tenants in the order given.
  redis.command({"LPUSH", ta.queue(Priority::kNormal), "a1"});
  redis.command({"LPUSH", keys.for_tenant("b").queue(Priority::kNormal), "b1"});
  redis.command({"LPUSH", keys.for_tenant("b").queue(Priority::kHigh), "b0"});
  EXPECT_EQ(split_processing_entry(*store.take_next("me", {"a", "b"})).raw, "b0");  // priority first
  EXPECT_EQ(split_processing_entry(*store.take_next("me", {"b", "a"})).tenant, "b");  // the caller's turn
  EXPECT_EQ(split_processing_entry(*store.take_next("me", {"b", "a"})).tenant, "a");
  EXPECT_FALSE(store.take_next("me", {"a", "b"}));
}

class TenantFarmTest : public FarmTest {};

TEST_F(TenantFarmTest, TenantJobsRunAndCircuitsAreTheirs) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials a = add_tenant(admin, keys, TenantRecord{.name = "a"});
  const TenantCredentials b = add_tenant(admin, keys, TenantRecord{.name = "b"});
  const CommandResult shared = run_command({runfile("cli/zkfarm"), "circuit", "share", bn254_.id, "a", "--redis",
                                            options_.redis_url}, dir_->path());
  EXPECT_EQ(shared.exit_code, 0) << shared.err;
  EXPECT_THROW(share_circuit(admin, keys, bn254_.id, {"nobody"}), TenantError);
  farm::FarmOptions as_a = options_, as_b = options_;
  as_a.redis_url = a.url(options_.redis_url);
  as_b.redis_url = b.url(options_.redis_url);
  // Each namespace's witnesses where its jobs may read them: the default
  // tenant's anywhere under the witness root, a tenant's under its own
  // directory there (tenant_confinement_test checks the refusals).
  const std::string bn_witness = "file://" + witness_file("bn128_mul.wtns");
  const std::string a_witness = "file://" + tenant_witness_file("a", "bn128_mul.wtns");
  const std::string b_witness = "file://" + tenant_witness_file("b", "bn128_mul.wtns");
  const std::string b_bls_witness = "file://" + tenant_witness_file("b", "bls12381_mul.wtns");

  // B registers the BLS circuit itself (no witness generator: refused).
  EXPECT_THROW(farm::circuit_add(as_b, runfile("formats/testdata/bls12381_mul.zkey"), std::nullopt,
                                 dir_->path()),
               farm::FarmError);
  const CircuitInfo own = farm::circuit_add(as_b, runfile("formats/testdata/bls12381_mul.zkey"));
  EXPECT_EQ(admin.command({"SISMEMBER", keys.for_tenant("b").tenant_circuits(), own.id}).as_integer(), 1);

  start_coordinator();
  start_worker("w0");
  // One id in three namespaces.
  EXPECT_EQ(farm::submit(options_, job_json("same", bn254_.id, {bn_witness})), "same");
  EXPECT_EQ(farm::submit(as_a, job_json("same", bn254_.id, {a_witness, a_witness}, "high")), "same");
  EXPECT_EQ(farm::submit(as_b, job_json("same", bn254_.id, {b_witness})), "same");  // not shared with B
  EXPECT_EQ(farm::submit(as_b, job_json("own", own.id, {b_bls_witness})), "own");   // B's own circuit
  // A raw push into A's queue.
  RedisClient(as_a.redis_url).command({"LPUSH", keys.for_tenant("a").queue(Priority::kLow),
                                       job_json("raw", bn254_.id, {a_witness})});
  auto wait = [&](const farm::FarmOptions& who, const std::string& id) {
    eventually([&] { return farm::status(who, id).has_value(); }, std::chrono::seconds(40));
    auto s = farm::wait(who, id, std::chrono::seconds(60));
    EXPECT_TRUE(s && s->terminal()) << id << "\n" << logs();
    return s ? *s : farm::JobStatus{};
  };
  EXPECT_EQ(wait(options_, "same").state, "done") << logs();
  const farm::JobStatus a_same = wait(as_a, "same");
  EXPECT_EQ(a_same.state, "done") << logs();
  EXPECT_EQ(a_same.partitions, 2u);
  const farm::JobStatus b_same = wait(as_b, "same");
  EXPECT_EQ(b_same.state, "failed");
  EXPECT_EQ(b_same.error_code, "unknownCircuit");
  EXPECT_EQ(wait(as_b, "own").state, "done") << logs();
  EXPECT_EQ(wait(as_a, "raw").state, "done") << logs();
  // A tenant that spoils its own job's keys (a set where the job hash
  // belongs) loses that entry only: the next job runs.
  RedisClient a_client(as_a.redis_url);
  a_client.command({"SADD", keys.for_tenant("a").job("spoiled"), "x"});
  a_client.command({"LPUSH", keys.for_tenant("a").queue(Priority::kNormal), job_json("spoiled", bn254_.id, {a_witness})});
  EXPECT_EQ(farm::submit(as_a, job_json("after", bn254_.id, {a_witness})), "after");
  EXPECT_EQ(wait(as_a, "after").state, "done") << logs();
  EXPECT_TRUE(eventually([&] { return admin.command({"LLEN", keys.rejected()}).as_integer() == 1; },
                         std::chrono::seconds(20)))
      << logs();
  // Results are in the tenant's namespace, under the id it knows.
  const auto result = farm::result(as_a, "same");
  ASSERT_TRUE(result);
  EXPECT_EQ(json::parse(*result)["id"], "same");
  EXPECT_EQ(json::parse(*result)["partitions"].size(), 2u);
  EXPECT_FALSE(farm::result(as_b, "same"));

  // A cancels a job it queued while no coordinator runs.
  kill_coordinator();
  EXPECT_EQ(farm::submit(as_a, job_json("later", bn254_.id, {a_witness})), "later");
  EXPECT_EQ(farm::cancel(as_a, "later"), "cancelled");
  EXPECT_EQ(farm::cancel(as_b, "later"), "unknown");
}

TEST_F(TenantFarmTest, QuotaRefusals) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials q =
      add_tenant(admin, keys, TenantRecord{.name = "q", .max_active_partitions = 1, .max_job_bytes = 600});
  share_circuit(admin, keys, bn254_.id, {"q"});
  farm::FarmOptions as_q = options_;
  as_q.redis_url = q.url(options_.redis_url);
  const std::string w = "file://" + tenant_witness_file("q", "bn128_mul.wtns");
  start_coordinator();
  start_worker("w0");
  const std::string small = job_json("small", bn254_.id, {w});
  const std::string big = job_json("big", bn254_.id, {w, w, w, w, w, w, w, w});
  ASSERT_LE(job_json("two", bn254_.id, {w, w}).size(), 600u);
  ASSERT_GT(big.size(), 600u);
  EXPECT_EQ(farm::submit(as_q, big), "big");
  EXPECT_EQ(farm::submit(as_q, job_json("two", bn254_.id, {w, w})), "two");
  EXPECT_EQ(farm::submit(as_q, small), "small");
  auto wait = [&](const std::string& id) {
    eventually([&] { return farm::status(as_q, id).has_value(); }, std::chrono::seconds(40));
    auto s = farm::wait(as_q, id, std::chrono::seconds(60));
    EXPECT_TRUE(s && s->terminal()) << id << "\n" << logs();
    return s ? *s : farm::JobStatus{};
  };
  const farm::JobStatus b = wait("big");
  EXPECT_EQ(b.error_code, "quotaExceeded") << logs();
  EXPECT_NE(b.error.find("tenant q: a job of " + std::to_string(big.size()) + " bytes, max-job-bytes 600"),
            std::string::npos)
      << b.error;
  const farm::JobStatus t = wait("two");
  EXPECT_EQ(t.error_code, "quotaExceeded") << logs();
  EXPECT_NE(t.error.find("max-active-partitions 1"), std::string::npos) << t.error;
  EXPECT_EQ(wait("small").state, "done") << logs();
}

// A tenant's job statuses, waited for until terminal.
farm::JobStatus wait_for(const farm::FarmOptions& who, const std::string& id, const std::string& logs_hint,
                         std::chrono::seconds timeout = std::chrono::seconds(60)) {
  eventually([&] { return farm::status(who, id).has_value(); }, std::chrono::seconds(40));
  auto s = farm::wait(who, id, timeout);
  EXPECT_TRUE(s && s->terminal()) << id << "\n" << logs_hint;
  return s ? *s : farm::JobStatus{};
}

TEST_F(TenantFarmTest, QueuedJobsBeyondTheLimitAreRefused) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials q = add_tenant(admin, keys, TenantRecord{.name = "q", .max_queued_jobs = 2});
  share_circuit(admin, keys, bn254_.id, {"q"});
  farm::FarmOptions as_q = options_;
  as_q.redis_url = q.url(options_.redis_url);
  const std::string w = "file://" + tenant_witness_file("q", "bn128_mul.wtns");
  // Queued while no coordinator runs: j1..j4 normal, j5 high, then a raw
  // LPUSH of j6 (normal). Take order: j5, j1, j2, j3, j4, j6.
  for (const char* id : {"j1", "j2", "j3", "j4"}) EXPECT_EQ(farm::submit(as_q, job_json(id, bn254_.id, {w})), id);
  EXPECT_EQ(farm::submit(as_q, job_json("j5", bn254_.id, {w}, "high")), "j5");
  RedisClient(as_q.redis_url).command({"LPUSH", keys.for_tenant("q").queue(Priority::kNormal),
                                       job_json("j6", bn254_.id, {w})});
  start_coordinator();
  start_worker("w0");
  EXPECT_EQ(wait_for(as_q, "j5", logs()).state, "done") << logs();
  EXPECT_EQ(wait_for(as_q, "j1", logs()).state, "done") << logs();
  // The newest of the least urgent queue first: j6 had 5 jobs ahead, j4 4, ...
  const std::vector<std::pair<std::string, int>> refused = {{"j6", 6}, {"j4", 5}, {"j3", 4}, {"j2", 3}};
  for (const auto& [id, queued] : refused) {
    const farm::JobStatus s = wait_for(as_q, id, logs());
    EXPECT_EQ(s.error_code, "quotaExceeded") << id << " " << s.state << " " << s.error;
    EXPECT_EQ(s.error, "tenant q: " + std::to_string(queued) + " queued jobs, max-queued-jobs 2") << id;
  }
  // Nothing left behind; a job within the limit still runs.
  EXPECT_EQ(admin.command({"LLEN", keys.for_tenant("q").queue(Priority::kNormal)}).as_integer(), 0);
  EXPECT_EQ(farm::submit(as_q, job_json("later", bn254_.id, {w})), "later");
  EXPECT_EQ(wait_for(as_q, "later", logs()).state, "done") << logs();
}

TEST_F(TenantFarmTest, ActivePartitionsHoldTheJobInItsQueue) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials h = add_tenant(admin, keys, TenantRecord{.name = "h", .max_active_partitions = 2});
  const TenantCredentials o = add_tenant(admin, keys, TenantRecord{.name = "o"});
  share_circuit(admin, keys, bn254_.id, {"h", "o"});
  farm::FarmOptions as_h = options_, as_o = options_;
  as_h.redis_url = h.url(options_.redis_url);
  as_o.redis_url = o.url(options_.redis_url);
  const std::string w = "file://" + tenant_witness_file("h", "bn128_mul.wtns");
  const std::string o_witness = "file://" + tenant_witness_file("o", "bn128_mul.wtns");
  start_coordinator();
  // Slow workers: each partition takes over a second, so h1 is active
  // while the others come.
  start_worker("w0", {"--prove-delay-ms", "1500"});
  start_worker("w1", {"--prove-delay-ms", "1500"});
  EXPECT_EQ(farm::submit(as_h, job_json("h1", bn254_.id, {w, w})), "h1");
  EXPECT_EQ(farm::submit(as_h, job_json("h2", bn254_.id, {w, w})), "h2");
  EXPECT_EQ(farm::submit(as_h, job_json("h3", bn254_.id, {w})), "h3");
  EXPECT_EQ(farm::submit(as_o, job_json("o1", bn254_.id, {o_witness})), "o1");
  const farm::JobStatus h1 = wait_for(as_h, "h1", logs(), std::chrono::seconds(90));
  const farm::JobStatus h2 = wait_for(as_h, "h2", logs(), std::chrono::seconds(90));
  const farm::JobStatus h3 = wait_for(as_h, "h3", logs(), std::chrono::seconds(90));
  const farm::JobStatus o1 = wait_for(as_o, "o1", logs(), std::chrono::seconds(90));
  for (const auto* s : {&h1, &h2, &h3, &o1}) EXPECT_EQ(s->state, "done") << s->id << " " << s->error << "\n" << logs();
  // h2 (2 partitions) started only once h1's were proved; h3 (1), queued
  // behind it, not before it (it would have fitted beside h1's last).
  EXPECT_GE(h2.started_at, h1.finished_at) << logs();
  EXPECT_GE(h3.started_at, h2.started_at) << logs();
  // Queued behind h's held jobs, o's job was not blocked.
  EXPECT_LT(o1.started_at, h1.finished_at) << logs();
  EXPECT_NE(logs().find("held in its queue: tenant h: 2 active partitions and 2 of this job, max-active-partitions 2"),
            std::string::npos)
      << logs();
}

TEST_F(TenantFarmTest, IntakeSlotsAreSharedBetweenTenants) {
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  const TenantCredentials a = add_tenant(admin, keys, TenantRecord{.name = "a"});
  const TenantCredentials b = add_tenant(admin, keys, TenantRecord{.name = "b"});
  share_circuit(admin, keys, bn254_.id, {"a", "b"});
  farm::FarmOptions as_a = options_, as_b = options_;
  as_a.redis_url = a.url(options_.redis_url);
  as_b.redis_url = b.url(options_.redis_url);
  const std::string w = "file://" + tenant_witness_file("a", "bn128_mul.wtns");
  // No worker: every job taken in stays held, so the slots are what the
  // intake took.
  start_coordinator({"--max-active-jobs", "4"});
  for (int i = 0; i < 8; ++i) farm::submit(as_a, job_json("a" + std::to_string(i), bn254_.id, {w}));
  auto running = [&](const farm::FarmOptions& who, const std::string& prefix, int n) {
    int count = 0;
    for (int i = 0; i < n; ++i)
      if (auto s = farm::status(who, prefix + std::to_string(i)); s && s->state == "running") ++count;
    return count;
  };
  EXPECT_TRUE(eventually([&] { return running(as_a, "a", 8) == 3; }, std::chrono::seconds(20))) << logs();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(running(as_a, "a", 8), 3) << "one slot is kept for the idle tenants";
  EXPECT_EQ(farm::submit(as_b, job_json("b0", bn254_.id, {"file://" + tenant_witness_file("b", "bn128_mul.wtns")})), "b0");
  EXPECT_TRUE(eventually([&] { return running(as_b, "b", 1) == 1; }, std::chrono::seconds(10))) << logs();
  EXPECT_EQ(running(as_a, "a", 8), 3);
  EXPECT_EQ(farm::status(as_a, "a7")->state, "queued");
}

TEST_F(TenantFarmTest, CliManagesTenants) {
  const std::string zkfarm = runfile("cli/zkfarm");
  const std::vector<std::string> farm = {"--redis", options_.redis_url};
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), zkfarm);
    args.insert(args.end(), farm.begin(), farm.end());
    return run_command(args, dir_->path());
  };
  const CommandResult added = run({"tenant", "add", "acme", "--weight", "2", "--reserved-workers", "1",
                                   "--max-queued-jobs", "50"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const std::string url = added.out.substr(0, added.out.find('\n'));
  EXPECT_EQ(url.rfind("redis://zkfarm-tenant-acme:", 0), 0u) << added.err;
  // The second line: its status page token, of which the record keeps the sha256 only.
  const std::string token = added.out.substr(url.size() + 1, added.out.find('\n', url.size() + 1) - url.size() - 1);
  EXPECT_EQ(status_token_tenant(token), "acme") << added.out;
  const std::string hex = token.substr(token.find('.') + 1);
  EXPECT_EQ(added.out.find(hex, added.out.find(hex) + 1), std::string::npos);  // printed once
  {
    RedisClient redis(options_.redis_url);
    const std::string stored =
        redis.command({"HGET", KeyLayout(options_.prefix).tenant_record("acme"), TenantRecord::kStatusTokenSha256}).str;
    EXPECT_EQ(stored.size(), 64u);
    EXPECT_EQ(stored, sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(token.data()),
                                                                token.size())));
  }
  EXPECT_EQ(run({"tenant", "add", "acme"}).exit_code, 2);
  EXPECT_EQ(run({"tenant", "add", "Bad:Name"}).exit_code, 2);
  EXPECT_EQ(run({"tenant", "set", "acme", "--weight", "0"}).exit_code, 2);
  const CommandResult set = run({"tenant", "set", "acme", "--max-job-bytes", "1000"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const CommandResult listed = run({"tenant", "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json list = json::parse(listed.out);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["weight"], 2);
  EXPECT_EQ(list[0]["reserved_workers"], 1);
  EXPECT_EQ(list[0]["max_queued_jobs"], 50);
  EXPECT_EQ(list[0]["max_job_bytes"], 1000);
  EXPECT_EQ(list[0]["status_token"], true);
  EXPECT_EQ(listed.out.find(hex), std::string::npos);
  // The coordinator's reader sees the same figures.
  RedisClient admin(options_.redis_url);
  const auto records = load_tenants(admin, KeyLayout(options_.prefix));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].weight, 2);
  // The tenant's URL works for client commands and not for tenant admin.
  const CommandResult as_tenant = run_command({zkfarm, "tenant", "list", "--redis", url}, dir_->path());
  EXPECT_EQ(as_tenant.exit_code, 2) << as_tenant.err;
  const CommandResult rotated = run({"tenant", "rotate", "acme"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  EXPECT_NE(rotated.out.substr(0, rotated.out.find('\n')), url);
  EXPECT_EQ(rotated.out.find(token), std::string::npos) << "rotate makes a new status page token too";
  EXPECT_EQ(run({"tenant", "remove", "acme"}).exit_code, 0);
  EXPECT_EQ(run({"tenant", "remove", "acme"}).exit_code, 2);
}

}  // namespace
}  // namespace zkfarm::testing
