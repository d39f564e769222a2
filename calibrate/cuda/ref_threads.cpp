#include "ref_threads.hpp"

#include <exception>
#include <mutex>
#include <thread>

namespace trainsim::calibrate::ref {

std::vector<RankOutcome> run_on_threads(int world, std::vector<ncclComm_t>& comms,
                                        const std::function<RankOutcome(int, std::barrier<>&)>& fn) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(world));
  std::mutex mutex;
  std::exception_ptr first_error;
  bool aborted = false;
  std::barrier sync(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        outcomes[static_cast<std::size_t>(r)] = fn(r, sync);
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (!first_error) first_error = std::current_exception();
          if (!aborted) {
            aborted = true;
            for (ncclComm_t c : comms) {
              if (c != nullptr) ncclCommAbort(c);
            }
          }
        }
        sync.arrive_and_drop();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!aborted) {
    for (ncclComm_t c : comms) {
      if (c != nullptr) ncclCommDestroy(c);
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return outcomes;
}

}  // namespace trainsim::calibrate::ref
