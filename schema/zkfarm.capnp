# zkfarm.capnp -- every message between zkfarm-coordinator and zkfarm-worker.
#
# Transport: ZeroMQ. The coordinator binds a ROUTER socket, each worker
# connects a DEALER; one ZeroMQ message frame carries exactly one Envelope,
# serialized unpacked (capnp::messageToFlatArray). The first message a worker
# sends is Hello; the coordinator answers Welcome or Reject. A message that
# does not decode, has the wrong protocol version or is not allowed in the
# current state is logged and dropped: it never ends a process.
#
# Flow control is credit-based: a worker grants credits (Hello.credits, then
# Credit messages as slots free up) and the coordinator never has more tasks
# outstanding at a worker than the credits it was granted.
#
# Compatibility: fields are only ever appended (new ordinals); a change that
# an older peer cannot ignore bumps protocolVersion, which is checked at
# Hello.
@0xe82f4707df68e75a;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("zkfarm::wire");

const protocolVersion :UInt32 = 1;

enum Curve {
  unknown @0;
  bn254 @1;      # snarkjs "bn128"
  bls12381 @2;   # snarkjs "bls12381"
}

# Typed failure codes, shared by TaskError and Reject. The coordinator decides
# from the code whether a failed task is the input's fault (the job fails with
# the message) or the worker's (the partition is retried elsewhere).
enum ErrorCode {
  unknown @0;
  # The job's input is wrong: retrying cannot help.
  badWitness @1;          # unparseable witness file
  witnessLength @2;       # witness length differs from the circuit's signals
  unsatisfied @3;         # witness fails a constraint
  wrongCurve @4;          # witness field differs from the circuit's
  unknownCircuit @5;      # circuit not in the artifact store
  # The worker or its environment failed: retry on another worker.
  witnessUnavailable @6;  # witness reference could not be read
  artifactChecksum @7;    # artifact on disk does not match its hash
  outOfMemory @8;
  deviceFault @9;
  internal @10;
  cancelled @11;
  # Protocol level.
  protocolVersion @12;    # Reject: versions differ
  malformedMessage @13;
  unknownSession @14;     # Reject: a message from a worker without Hello
  shuttingDown @15;
  workerIdTaken @16;      # Reject: the worker id has a live session, or is bound to another CURVE key
  badInput @17;           # the circuit's witness generator refused the partition's input
  witnessChecksum @18;    # the witness's bytes differ from the job's sha256 or size
}

struct DeviceInfo {
  ordinal @0 :Int32;       # CUDA ordinal given at launch; -1 for the CPU backend
  name @1 :Text;           # "NVIDIA H200", "cpu (16 threads)"
  uuid @2 :Text;           # stable device identity (GPU UUID, or host-derived for CPU)
  memoryBytes @3 :UInt64;  # device (or host) memory
  backend @4 :Text;        # "cpu", "cuda"
}

struct Hello {
  protocolVersion @0 :UInt32;
  workerId @1 :Text;         # stable, e.g. "host-a/gpu3"; names fault counters
  sessionId @2 :UInt64;      # random per process start: tells a restart apart
  hostname @3 :Text;
  pid @4 :UInt32;
  device @5 :DeviceInfo;
  curves @6 :List(Curve);    # curves this backend proves
  loadedCircuits @7 :List(Text);  # circuit ids resident now (affinity)
  credits @8 :UInt32;        # tasks the worker can take right now
  softwareVersion @9 :Text;
  maxTasks @10 :UInt32;      # tasks its device holds at once (its slots); credits never exceed it
}

struct Welcome {
  coordinatorId @0 :Text;
  heartbeatIntervalMs @1 :UInt32;  # both sides send heartbeats this often
  deadAfterMs @2 :UInt32;          # silence after which a peer is dead
}

struct Reject {
  code @0 :ErrorCode;
  message @1 :Text;
}

struct Heartbeat {
  sequence @0 :UInt64;
  sentAtUnixMs @1 :UInt64;
  busyTasks @2 :UInt32;            # worker: tasks being proved now
  loadedCircuits @3 :List(Text);   # worker: resident circuits (affinity)
  witnessPending @4 :List(UInt64); # worker: ids of held tasks waiting for or in witness generation
}

struct Credit {
  credits @0 :UInt32;  # additional tasks the worker can take
  withdraw @1 :UInt32; # unused credits the worker takes back (a worker serving
                       # several coordinators moves idle credits to another);
                       # the coordinator lowers its count, never below zero
}

struct WitnessRef {
  union {
    file @0 :Text;     # absolute path (from a file:// URL) on shared storage
    redisKey @1 :Text; # a Redis string key holding the .wtns bytes
    inline @2 :Data;   # the .wtns bytes themselves (tiny witnesses only)
    input @3 :Text;    # circom input signals (JSON object): the worker computes the witness
    url @4 :Text;      # an http:// or https:// URL (may carry a signature: never logged)
  }
  sha256 @5 :Text;     # optional: hex sha256 of the witness bytes ("" = unchecked)
  size @6 :UInt64;     # optional: their length (0 = unchecked)
}

struct Task {
  taskId @0 :UInt64;       # unique per coordinator session; echoed in Result/TaskError
  jobId @1 :Text;
  partitionIndex @2 :UInt32;
  attempt @3 :UInt32;      # 0 for the first try
  circuitId @4 :Text;      # sha256 of the zkey, hex
  curve @5 :Curve;
  witness @6 :WitnessRef;
  deadlineUnixMs @7 :UInt64;  # 0 = none
  # Input partitions: sha256 of the circuit's witness generator and of its
  # .dat in the artifact store (the worker checks them before running it).
  witnessGeneratorSha256 @8 :Text;
  witnessGeneratorDatSha256 @9 :Text;
  # The tenant whose job this is ("" = the default tenant, the farm's own
  # namespace): the worker reads the circuit record that tenant's job was
  # checked against and its file:// and redis:// witnesses only where that
  # tenant's may lie (cluster/artifacts.h, WitnessPolicy::tenant_policy).
  # An older worker ignores it and applies the farm's rule.
  tenant @10 :Text;
}

struct StageTimings {
  loadCircuitSeconds @0 :Float64;   # 0 when the circuit was resident
  fetchWitnessSeconds @1 :Float64;
  parseWitnessSeconds @2 :Float64;
  witnessCheckSeconds @3 :Float64;
  spmvSeconds @4 :Float64;
  nttSeconds @5 :Float64;
  msmSeconds @6 :Float64;
  proveSeconds @7 :Float64;         # the prover's own total
  totalSeconds @8 :Float64;         # task receipt to result
  witnessGenSeconds @9 :Float64;    # input partitions: the witness generator's run
}

struct Result {
  taskId @0 :UInt64;
  jobId @1 :Text;
  partitionIndex @2 :UInt32;
  # Groth16 proof, uncompressed affine, coordinates canonical little-endian:
  # A.x A.y B.x.c0 B.x.c1 B.y.c0 B.y.c1 C.x C.y (8 * n8q bytes).
  proof @3 :Data;
  timings @4 :StageTimings;
  deviceUuid @5 :Text;
  circuitWasResident @6 :Bool;
  # Input partitions only: the public signals of the witness the worker
  # computed (witness[1..nPublic], canonical little-endian, n8 bytes each),
  # which the coordinator verifies the proof against.
  publicInputs @7 :Data;
}

struct TaskError {
  taskId @0 :UInt64;
  jobId @1 :Text;
  partitionIndex @2 :UInt32;
  code @3 :ErrorCode;
  message @4 :Text;
}

struct Cancel {
  taskId @0 :UInt64;
  jobId @1 :Text;
}

# Worker -> coordinator: where a held task is. The time before `ready`
# (waiting at the worker, fetching, parsing, generating the witness) is
# bounded by the coordinator's witness timeout and is never counted against
# the worker's device; the task timeout runs from `ready` (or `proving`),
# and only the time from `proving` is measured for the automatic timeout.
enum TaskStage {
  proving @0;  # its proof begins now
  witness @1;  # the worker begins fetching (or generating) its witness
  ready @2;    # its witness is fetched, parsed and checked: it waits for the device
}

struct TaskProgress {
  taskId @0 :UInt64;
  stage @1 :TaskStage;
}

struct Shutdown {
  reason @0 :Text;
  # Worker -> coordinator: "I am draining, send nothing more". Coordinator ->
  # worker: "stop after the current tasks".
  drain @1 :Bool;
}

struct Envelope {
  protocolVersion @0 :UInt32;
  body :union {
    hello @1 :Hello;
    welcome @2 :Welcome;
    reject @3 :Reject;
    heartbeat @4 :Heartbeat;
    credit @5 :Credit;
    task @6 :Task;
    result @7 :Result;
    error @8 :TaskError;
    cancel @9 :Cancel;
    shutdown @10 :Shutdown;
    progress @11 :TaskProgress;
  }
}
