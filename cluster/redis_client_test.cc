// redis_client_test.cc -- the Redis wrapper and job store against a real,
// private redis-server (started and killed by the test).
#include "cluster/redis_client.h"

#include <gtest/gtest.h>

#include "cluster/job_store.h"
#include "tests/harness/harness.h"

namespace zkfarm {
namespace {

using testing::RedisServer;
using testing::TempDir;

TEST(RedisUrl, Parses) {
  RedisUrl u = RedisUrl::parse("redis://alice:p%40ss@10.0.0.1:7000/3");
  EXPECT_EQ(u.user, "alice");
  EXPECT_EQ(u.password, "p@ss");
  EXPECT_EQ(u.host, "10.0.0.1");
  EXPECT_EQ(u.port, 7000);
  EXPECT_EQ(u.db, 3);
  EXPECT_EQ(u.redacted(), "redis://alice:***@10.0.0.1:7000/3");
  EXPECT_EQ(RedisUrl::parse("redis://h").port, 6379);
  EXPECT_THROW(RedisUrl::parse("http://h"), std::invalid_argument);
  EXPECT_THROW(RedisUrl::parse("redis://h:99999"), std::invalid_argument);
  EXPECT_THROW(RedisUrl::parse("redis://:pw@"), std::invalid_argument);
}

TEST(RedisClient, CommandsErrorsAndReconnect) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  EXPECT_EQ(redis.command({"SET", "k", std::string("a\0b", 3)}).as_string(), "OK");
  EXPECT_EQ(redis.command({"GET", "k"}).as_string(), std::string("a\0b", 3));
  EXPECT_TRUE(redis.command({"GET", "missing"}).is_nil());
  try {
    redis.command({"LPUSH", "k", "x"});
    FAIL();
  } catch (const RedisError& e) {
    EXPECT_EQ(e.kind(), RedisError::Kind::kReply);
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos);
  }
  // Still usable after an error reply.
  EXPECT_EQ(redis.command({"INCR", "n"}).as_integer(), 1);
  EXPECT_EQ(redis.eval("return ARGV[1] .. KEYS[1]", {"k"}, {"v"}).as_string(), "vk");
  // Kill the connection from the server side: the next command fails with
  // kConnection, the one after reconnects.
  redis.command({"CLIENT", "KILL", "TYPE", "normal"});
  int connection_errors = 0;
  for (int i = 0; i < 3; ++i) {
    try {
      redis.command({"PING"});
    } catch (const RedisError& e) {
      EXPECT_EQ(e.kind(), RedisError::Kind::kConnection);
      ++connection_errors;
    }
  }
  EXPECT_LE(connection_errors, 1);
  EXPECT_EQ(redis.retry([&] { return redis.command({"GET", "n"}); }).as_string(), "1");
}

TEST(RedisClient, PipelineAndTransactionInOneRoundTrip) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  // Replies in order, one per command.
  auto replies = redis.pipeline({{"SET", "p:a", "1"}, {"INCR", "p:a"}, {"GET", "p:a"}});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[1].as_integer(), 2);
  EXPECT_EQ(replies[2].as_string(), "2");
  EXPECT_TRUE(redis.pipeline({}).empty());
  // An error reply is thrown after every reply was read: the connection
  // stays in step (the next command gets its own reply).
  EXPECT_THROW(redis.pipeline({{"SET", "p:b", "x"}, {"INCR", "p:b"}, {"SET", "p:c", "y"}}), RedisError);
  EXPECT_EQ(redis.command({"GET", "p:c"}).as_string(), "y");
  EXPECT_EQ(redis.command({"PING"}).as_string(), "PONG");
  // A transaction: the EXEC array; a command refused while queueing aborts
  // all of it.
  auto exec = redis.transaction({{"INCR", "p:a"}, {"INCR", "p:a"}});
  ASSERT_EQ(exec.as_array().size(), 2u);
  EXPECT_EQ(exec.as_array()[1].as_integer(), 4);
  EXPECT_THROW(redis.transaction({{"INCR", "p:a"}, {"NOSUCHCOMMAND"}}), RedisError);
  EXPECT_EQ(redis.command({"GET", "p:a"}).as_string(), "4");
  // A runtime error inside EXEC is thrown too (the other commands ran, as
  // Redis runs them).
  EXPECT_THROW(redis.transaction({{"INCR", "p:b"}, {"INCR", "p:a"}}), RedisError);
  EXPECT_EQ(redis.command({"GET", "p:a"}).as_string(), "5");
}

TEST(RedisClient, AuthErrorsAreTyped) {
  TempDir dir;
  RedisServer server(dir.path(), {.appendonly = false, .password = "s3cret"});
  RedisClient good(server.url());
  EXPECT_EQ(good.command({"PING"}).as_string(), "PONG");
  RedisClient bad("redis://:wrong@127.0.0.1:" + std::to_string(server.port()));
  try {
    bad.command({"PING"});
    FAIL();
  } catch (const RedisError& e) {
    EXPECT_EQ(e.kind(), RedisError::Kind::kAuth);
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "password leaked: " << e.what();
  }
  RedisClient down("redis://127.0.0.1:" + std::to_string(testing::free_port()));
  try {
    down.command({"PING"});
    FAIL();
  } catch (const RedisError& e) {
    EXPECT_EQ(e.kind(), RedisError::Kind::kConnection);
  }
}

TEST(JobStore, SubmitTakeClaimFinish) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  JobStore store(redis, KeyLayout("t:"));
  JobSpec low, crit;
  low.id = "low1";
  low.circuit = std::string(64, 'b');
  low.priority = Priority::kLow;
  low.partitions.push_back(parse_witness_url("redis://w", "w"));
  crit = low;
  crit.id = "crit1";
  crit.priority = Priority::kCritical;
  ASSERT_TRUE(store.submit(low));
  ASSERT_FALSE(store.submit(low));  // duplicate id
  ASSERT_TRUE(store.submit(crit));
  // Critical first, then low.
  auto first = store.take_next("c1");
  ASSERT_TRUE(first);
  EXPECT_EQ(parse_job(*first).id, "crit1");
  EXPECT_EQ(parse_job(*store.take_next("c1")).id, "low1");
  EXPECT_FALSE(store.take_next("c1"));
  EXPECT_EQ(store.processing("c1").size(), 2u);
  std::string detail;
  EXPECT_EQ(store.claim(crit, "c1", &detail), JobStore::Claim::kNew);
  EXPECT_EQ(store.claim(crit, "c1", &detail), JobStore::Claim::kResume);
  EXPECT_EQ(store.claim(crit, "c2", &detail), JobStore::Claim::kOwnedElsewhere);
  EXPECT_EQ(detail, "c1");
  store.store_proof("crit1", 0, "{\"p\":1}", event_json("crit1", "proved"));
  EXPECT_EQ(store.proofs("crit1").at(0), "{\"p\":1}");
  JobStore::Finish f;
  f.state = kStateDone;
  f.result_json = "{}";
  f.raw = store.processing("c1").back();
  f.owner = "c1";
  f.ttl_seconds = 100;
  EXPECT_TRUE(store.finish("crit1", f));
  EXPECT_FALSE(store.finish("crit1", f));
  EXPECT_EQ(redis.command({"LPOP", "t:done:crit1"}).as_string(), "done");
  EXPECT_GT(redis.command({"TTL", "t:job:crit1"}).as_integer(), 0);
  EXPECT_EQ(store.processing("c1").size(), 1u);
  // Cancel: a queued job ends at once, a running one is flagged for its owner.
  JobSpec q = low;
  q.id = "q1";
  ASSERT_TRUE(store.submit(q));
  EXPECT_EQ(store.cancel("q1", 0), "cancelled");
  EXPECT_EQ(store.claim(q, "c1", &detail), JobStore::Claim::kTerminal);
  EXPECT_EQ(store.claim(low, "c1", &detail), JobStore::Claim::kNew);
  EXPECT_EQ(store.cancel("low1", 0), "requested");
  EXPECT_EQ(redis.command({"SPOP", "t:cancels:c1"}).as_string(), "low1");
  EXPECT_EQ(store.cancel("nope", 0), "unknown");
}

TEST(JobStore, OneIdOneJob) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  JobStore store(redis, KeyLayout("t:"));
  JobSpec queued;
  queued.id = "same";
  queued.circuit = std::string(64, 'b');
  queued.partitions.push_back(parse_witness_url("redis://w", "w"));
  ASSERT_TRUE(store.submit(queued));
  std::string state;
  EXPECT_FALSE(store.submit(queued, &state));
  EXPECT_EQ(state, "queued");
  // Another entry with the same id (pushed raw) is a duplicate and writes
  // nothing; the submitted entry itself claims its job.
  JobSpec other = queued;
  other.priority = Priority::kHigh;
  std::string detail;
  EXPECT_EQ(store.claim(other, "c1", &detail, entry_digest(other.to_json())), JobStore::Claim::kDuplicate);
  EXPECT_EQ(detail, "queued");
  EXPECT_EQ(redis.command({"HGET", "t:job:same", JobStore::kState}).as_string(), "queued");
  EXPECT_EQ(redis.command({"HGET", "t:job:same", JobStore::kPriority}).as_string(), "normal");
  const std::string digest = entry_digest(queued.to_json());
  EXPECT_EQ(store.claim(queued, "c1", &detail, digest), JobStore::Claim::kNew);
  EXPECT_EQ(store.claim(queued, "c1", &detail, digest), JobStore::Claim::kResume);
  EXPECT_EQ(store.claim(other, "c1", &detail, entry_digest(other.to_json())), JobStore::Claim::kDuplicate);
  EXPECT_EQ(detail, "running");
  // A raw push claims a fresh id for its own entry.
  JobSpec raw = queued;
  raw.id = "raw";
  EXPECT_EQ(store.claim(raw, "c1", &detail, entry_digest("A")), JobStore::Claim::kNew);
  EXPECT_EQ(store.claim(raw, "c1", &detail, entry_digest("B")), JobStore::Claim::kDuplicate);
  EXPECT_EQ(store.claim(raw, "c1", &detail, entry_digest("A")), JobStore::Claim::kResume);
}

TEST(JobStore, SetAsideFailsTheEntrysJobOnly) {
  TempDir dir;
  RedisServer server(dir.path());
  RedisClient redis(server.url());
  JobStore store(redis, KeyLayout("t:"));
  redis.command({"LPUSH", "t:processing:c1", "entry-1", "not json \xff"});
  const std::string digest = entry_digest("entry-1");
  EXPECT_EQ(store.begin_intake("c1", digest), 1);
  EXPECT_EQ(store.begin_intake("c1", digest), 2);
  store.set_aside("c1", "entry-1", "j1", 2, "crashed twice", 100);
  EXPECT_EQ(redis.command({"HGET", "t:job:j1", JobStore::kState}).as_string(), "failed");
  EXPECT_EQ(redis.command({"HGET", "t:job:j1", JobStore::kErrorCode}).as_string(), "setAside");
  EXPECT_EQ(redis.command({"LPOP", "t:done:j1"}).as_string(), "failed");
  EXPECT_EQ(redis.command({"HEXISTS", "t:intake:c1", digest}).as_integer(), 0);
  // Bytes that are not UTF-8 are kept (replaced), not an error.
  store.set_aside("c1", "not json \xff", "", 3, "crashed", 100);
  EXPECT_EQ(redis.command({"LLEN", "t:processing:c1"}).as_integer(), 0);
  EXPECT_EQ(redis.command({"LLEN", "t:setaside"}).as_integer(), 2);
  // Another entry naming a job it does not own sets only itself aside.
  JobSpec spec;
  spec.id = "j2";
  spec.circuit = std::string(64, 'b');
  spec.partitions.push_back(parse_witness_url("redis://w", "w"));
  ASSERT_TRUE(store.submit(spec));
  redis.command({"LPUSH", "t:processing:c1", "impostor"});
  store.set_aside("c1", "impostor", "j2", 3, "crashed", 100);
  EXPECT_EQ(redis.command({"HGET", "t:job:j2", JobStore::kState}).as_string(), "queued");
  EXPECT_EQ(redis.command({"LLEN", "t:setaside"}).as_integer(), 3);
}

}  // namespace
}  // namespace zkfarm
