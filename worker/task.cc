// task.cc -- see task.h.
#include "worker/task.h"

#include <new>

#include "cluster/log.h"
#include "cluster/witness_access.h"
#include "schema/wire_model.h"

namespace zkfarm {

Finished task_error(const QueuedTask& task, wire::ErrorCode code, const std::string& message,
                    metrics::WorkerMetrics& metrics) {
  ZKLOG(kWarning) << "task " << task.task_id << " (job " << peer_text(task.job_id) << " partition " << task.partition
                  << ") failed: " << wire::error_code_name(code) << ": " << message;
  metrics.task_errors(wire::error_code_name(code)).Increment();
  return Finished{wire::encode_envelope([&](wire::Envelope::Body::Builder body) {
                    auto e = body.initError();
                    e.setTaskId(task.task_id);
                    e.setJobId(task.job_id);
                    e.setPartitionIndex(task.partition);
                    e.setCode(code);
                    e.setMessage(message);
                  }),
                  task.session, task.task_id};
}

std::pair<wire::ErrorCode, std::string> current_task_error() {
  try {
    throw;
  } catch (const prover::Error& e) {
    return {to_wire(e.kind()), e.what()};
  } catch (const WitnessChecksum& e) {
    return {to_wire(ErrorCode::kWitnessChecksum), e.what()};
  } catch (const std::bad_alloc&) {
    return {to_wire(ErrorCode::kOutOfMemory), "out of memory"};
  } catch (const std::exception& e) {
    return {to_wire(ErrorCode::kInternal), e.what()};
  }
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace zkfarm
