#include "engine.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <map>
#include <unordered_map>
#include <utility>

namespace trainsim::sim {
namespace sg = simgrid::s4u;

void configure_simgrid(int* argc, char** argv) {
  static bool configured = false;
  if (configured) return;
  configured = true;
  static sg::Engine engine(argc, argv);
  sg::Engine::set_config("network/model:CM02");
  sg::Engine::set_config("network/crosstraffic:0");
  sg::Engine::set_config("network/TCP-gamma:0");
  sg::Engine::set_config("maxmin/precision:1e-12");
  sg::Engine::set_config("surf/precision:1e-12");
}

double ring_hop_bytes(CollectiveKind kind, double bytes, int n) {
  if (n < 2) return 0;
  switch (kind) {
    case CollectiveKind::ALL_REDUCE: return 2.0 * (n - 1) / n * bytes;
    case CollectiveKind::ALL_GATHER:
    case CollectiveKind::REDUCE_SCATTER: return static_cast<double>(n - 1) / n * bytes;
    case CollectiveKind::BROADCAST: return bytes;
  }
  return 0;
}

int ring_steps(CollectiveKind kind, int n) {
  if (n < 2) return 0;
  return kind == CollectiveKind::ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

namespace {

class Replayer {
 public:
  Replayer(const TaskGraph& g, const Platform& p, const RateCaps& caps)
      : graph_(g), platform_(p), caps_(caps), n_(boost::num_vertices(g)), waiting_(n_, 0), pending_(n_, 0),
        phase_(n_, 0), live_(n_) {
    result_.timing.assign(n_, {});
    for (std::size_t v = 0; v < n_; ++v) waiting_[v] = static_cast<int>(boost::in_degree(v, graph_));
  }

  ReplayResult run() {
    // SimGrid's completion signal is process-wide: one callback, registered once, forwards to
    // the replay in progress.
    static Replayer* current = nullptr;
    static bool registered = false;
    if (!registered) {
      registered = true;
      sg::Activity::on_completion_cb([](sg::Activity const& a) {
        const auto id = reinterpret_cast<std::uintptr_t>(a.get_data<void>());
        if (id != 0 && current != nullptr) current->on_activity_done(static_cast<OpId>(id - 1));
      });
    }
    current = this;
    const double t0 = sg::Engine::get_clock();
    // Collect the ready ops first: an op with no work finishes as it starts and readies its
    // successors, which must not be started a second time by this loop.
    for (std::size_t v = n_; v-- > 0;) {
      if (waiting_[v] == 0) ready_.push_back(v);
    }
    drain();
    sg::Engine::get_instance()->run();
    if (completed_ != n_) throw std::logic_error("replay: the task graph has a cycle or an unreachable op");
    current = nullptr;
    // The last op's end (an interference exec may outlast it, carrying no work of the step).
    double last = t0;
    for (const auto& t : result_.timing) last = std::max(last, t.end);
    result_.makespan = last - t0;
    for (auto& t : result_.timing) {
      t.start -= t0;
      t.end -= t0;
    }
    return std::move(result_);
  }

 private:
  template <class Ptr>
  void launch(OpId id, Ptr activity) {
    activity->set_data(reinterpret_cast<void*>(static_cast<std::uintptr_t>(id + 1)));
    live_[id].push_back(activity);
    ++pending_[id];
    ++result_.activities;
    activity->start();
  }

  double cap_of(OpId id) const { return id < caps_.per_op.size() ? caps_.per_op[id] : 0.0; }

  // Changing a link's bandwidth re-solves the sharing model: only when the cap changes.
  void set_cap(sg::Link* link, double bytes_per_s) {
    auto [it, inserted] = caps_in_force_.try_emplace(link, UNCAPPED);
    if (it->second == bytes_per_s) return;
    it->second = bytes_per_s;
    link->set_bandwidth(bytes_per_s);
  }

  // Storage reads and writes in flight on a node's device: while both directions run, together
  // they move at most the measured mixed rate (the profile's mixed_read_GBps + mixed_write_GBps,
  // shared max-min fairly); either alone keeps its own rate (sim/README.md, "Storage").
  void storage_flows(const Op& op, bool read, int delta) {
    sg::Link* shared = platform_.storage_mixed(op.gpu);
    if (shared == nullptr) return;
    auto& n = storage_in_flight_[shared];
    n[read ? 0 : 1] += delta;
    set_cap(shared, n[0] > 0 && n[1] > 0 ? platform_.storage_mixed_bytes_per_s() : UNCAPPED);
  }

  // A delay (latency) before an op's flows start: a kernel timer, which costs no activity and no
  // variable in the sharing model (an exec standing for it would cost both, for every copy and
  // collective). The engine's run() returns only once no timer is left.
  void launch_delay(OpId id, double seconds) {
    phase_[id] = 1;
    launch_timer(id, seconds);
  }
  // Work that is only time (a delay op, a ring alone on its links): a timer as above.
  void launch_timer(OpId id, double seconds) {
    ++pending_[id];
    simgrid::kernel::timer::Timer::set(sg::Engine::get_clock() + seconds, [this, id] { on_activity_done(id); });
  }

  void launch_flow(OpId id, sg::Host* from, sg::Host* to, double amount) {
    const auto bytes = static_cast<std::uint64_t>(std::llround(amount));
    if (bytes > 0) launch(id, sg::Comm::sendto_init(from, to)->set_payload_size(bytes));
  }

  void start(OpId id) {
    const Op& op = graph_[id];
    result_.timing[id].start = sg::Engine::get_clock();
    switch (op.kind) {
      case OpKind::COMPUTE:
        if (op.seconds > 0) {
          ++computing_[op.gpu];
          launch(id, sg::Exec::init()->set_flops_amount(op.seconds * GPU_SPEED)->set_host(platform_.gpu(op.gpu)));
        }
        break;
      case OpKind::DELAY:
        if (op.seconds > 0) launch_timer(id, op.seconds);
        break;
      case OpKind::CPU:
        // CPU-Adam as a flow of parameters over the node's CPU link (platform.hpp).
        launch_flow(id, platform_.io_endpoint(op.gpu), platform_.cpu_work_end(op.gpu), op.params);
        break;
      case OpKind::COPY_H2D:
      case OpKind::COPY_D2H: {
        if (op.bytes <= 0) break;
        // The latency as a delay, the bytes as a latency-free flow that shares its links evenly
        // (platform.hpp, copy_latency_s).
        if (platform_.copy_latency_s() > 0) launch_delay(id, platform_.copy_latency_s());
        else start_flows(id);
        break;
      }
      case OpKind::STORAGE_READ:
      case OpKind::STORAGE_WRITE: {
        if (op.bytes <= 0) break;
        if (!platform_.has_storage()) throw std::logic_error("replay: storage op on a platform without storage");
        const bool read = op.kind == OpKind::STORAGE_READ;
        storage_flows(op, read, +1);
        sg::Host* io = platform_.io_endpoint(op.gpu);
        sg::Host* host = platform_.host_of(op.gpu);
        launch_flow(id, read ? io : host, read ? host : io, op.bytes);
        break;
      }
      case OpKind::COLLECTIVE: {
        const RingRoute& ring = platform_.ring(op.ring);
        if (ring.channels.empty() || op.group_size < 2) break;
        enter_ring(op);
        if (ring.alone()) {
          // Every channel alone on its links (platform.hpp): latency plus the slowest channel's
          // bytes at its bottleneck rate.
          double slowest = 0;
          if (ring.channels.size() == 1) {
            const double rate = cap_of(id) > 0 ? std::min(cap_of(id), ring.exclusive_rates.front()) : ring.exclusive_rates.front();
            slowest = ring_hop_bytes(op.collective, op.bytes, op.group_size) / rate;
          } else {
            const std::uint64_t bytes = channel_bytes(op);
            for (std::size_t ch = 0; ch < ring.channels.size(); ++ch) slowest = std::max(slowest, lone_channel_seconds(id, ch, bytes));
          }
          phase_[id] = 2;
          const double seconds = op.latency_s + slowest + waited_for_compute(op);
          interfere(op, seconds);
          launch_timer(id, seconds);
          break;
        }
        const double wait_s = waited_for_compute(op);
        if (cap_of(id) > 0) {
          interfere(op, op.latency_s + wait_s + ring_hop_bytes(op.collective, op.bytes, op.group_size) / cap_of(id));
        }
        if (op.latency_s + wait_s > 0) launch_delay(id, op.latency_s + wait_s);
        else start_flows(id);
        break;
      }
      case OpKind::TRANSFER: {
        if (op.bytes <= 0) break;
        const TransferRoute& route = platform_.transfer(op.transfer);
        if (route.latency_s > 0) launch_delay(id, route.latency_s);
        else start_flows(id);
        break;
      }
    }
    if (pending_[id] == 0) finish(id);
  }

  // The model, chosen from the measurements (calibrate/cuda/interference_bench.cpp; the tables
  // in hwprofiles/h200x4-measured.json and h200x2-measured.json, raw results in
  // reports/calibration/interference/): a collective launched while its GPU runs a GEMM first
  // waits for SMs, which the GEMM's blocks hold until they retire, and then shares HBM with it.
  // Its time beside back-to-back GEMMs minus its time alone hardly depends on its size from 1 to
  // 64 MiB and follows the GEMM's length (on 4 H200: 49-97 us beside a 97 us GEMM, 632-881 us
  // beside a 757 us one), growing at 512 MiB-2 GiB where the two share HBM; the ratio of the two
  // runs from 1.1 to 59. So the replay adds the measured difference as a wait instead of
  // multiplying the collective's time: the single factor it replaces (4.46, measured at 64 MiB
  // beside an 8192x16384x4096 GEMM) over-predicted the validation's FSDP2 steps by 35-98%.
  // While the collective runs, its wait included (the bench's compute slowdown was measured with
  // collectives queued back to back), compute on its GPUs runs the measured compute_slowdown
  // (1.01-1.50) times longer. Both are read at the collective's kind and size and the run's GEMM
  // (hw::interference_effect). Broadcast has no measured points: it reads all-gather's (both
  // move each byte once around the ring).
  hw::InterferenceEffect effect(const Op& op) {
    if (!caps_.interference) return {};
    const auto key = std::make_pair(static_cast<int>(op.collective), op.bytes);
    const auto it = effects_.find(key);
    if (it != effects_.end()) return it->second;
    const char* name = op.collective == CollectiveKind::ALL_REDUCE       ? "all_reduce"
                       : op.collective == CollectiveKind::REDUCE_SCATTER ? "reduce_scatter"
                                                                         : "all_gather";
    const hw::InterferenceEffect e = hw::interference_effect(*caps_.interference, name, op.bytes, caps_.gemm_flops);
    effects_.emplace(key, e);
    return e;
  }

  // The wait of a collective that starts while one of its GPUs computes; 0 otherwise.
  double waited_for_compute(const Op& op) {
    for (int g : op.participants) {
      const auto it = computing_.find(g);
      if (it != computing_.end() && it->second > 0) return effect(op).extra_s;
    }
    return 0;
  }

  // While a collective runs, each of its GPUs gives it the share of its compute the measured
  // slowdown says: an exec bounded to (1 - 1/slowdown) of the GPU's speed for the collective's
  // duration; compute overlapping it gets the rest (SimGrid shares a host's speed max-min fairly,
  // so a bounded exec below half the speed takes exactly its bound), compute that does not overlap
  // is untouched. The exec ends on its own at the collective's end and carries no op.
  void interfere(const Op& op, double seconds) {
    const double s = effect(op).compute_slowdown;
    if (s <= 1 || seconds <= 0) return;
    const double bound = (1.0 - 1.0 / std::min(s, 2.0)) * GPU_SPEED;
    for (int g : op.participants) {
      sg::ExecPtr e = sg::Exec::init()->set_flops_amount(bound * seconds)->set_bound(bound)->set_host(platform_.gpu(g));
      e->start();
      phantoms_.push_back(e);
    }
  }

  void start_flows(OpId id) {
    const Op& op = graph_[id];
    phase_[id] = 2;
    if (op.kind == OpKind::COPY_H2D || op.kind == OpKind::COPY_D2H) {
      const bool to_gpu = op.kind == OpKind::COPY_H2D;
      sg::Host* gpu = platform_.gpu(op.gpu);
      sg::Host* host = platform_.host_of(op.gpu);
      set_cap(platform_.copy_cap(op.gpu, to_gpu), cap_of(id) > 0 ? cap_of(id) : UNCAPPED);
      launch_flow(id, to_gpu ? host : gpu, to_gpu ? gpu : host, op.bytes);
      return;
    }
    if (op.kind == OpKind::TRANSFER) {
      const TransferRoute& route = platform_.transfer(op.transfer);
      launch_flow(id, route.src, route.dst, op.bytes);
      return;
    }
    const RingRoute& ring = platform_.ring(op.ring);
    const std::uint64_t bytes = channel_bytes(op);
    if (bytes == 0) return;
    // Channels alone on their links (platform.hpp) as one timer for the slowest of them, the
    // others as flows.
    double lone = 0;
    for (std::size_t ch = 0; ch < ring.channels.size(); ++ch) {
      if (ring.exclusive_rates[ch] > 0) {
        lone = std::max(lone, lone_channel_seconds(id, ch, bytes));
        continue;
      }
      set_cap(ring.caps[ch], channel_cap(id));
      launch(id, sg::Comm::sendto_init(ring.channels[ch].first, ring.channels[ch].second)->set_payload_size(bytes));
    }
    if (lone > 0) launch_timer(id, lone);
  }

  // What one channel of a collective carries (a whole number of bytes, as a flow's payload) and
  // the cap each channel gets of a calibrated rate for the whole collective.
  std::uint64_t channel_bytes(const Op& op) const {
    const double per_channel = ring_hop_bytes(op.collective, op.bytes, op.group_size) /
                               static_cast<double>(platform_.ring(op.ring).channels.size());
    return static_cast<std::uint64_t>(std::llround(per_channel));
  }
  double channel_cap(OpId id) const {
    return cap_of(id) > 0 ? cap_of(id) / static_cast<double>(platform_.ring(graph_[id].ring).channels.size()) : UNCAPPED;
  }
  // A channel alone on its links: its `bytes` (channel_bytes) at its bottleneck rate, or the cap
  // if lower.
  double lone_channel_seconds(OpId id, std::size_t ch, std::uint64_t bytes) const {
    const double rate = std::min(channel_cap(id), platform_.ring(graph_[id].ring).exclusive_rates[ch]);
    return static_cast<double>(bytes) / rate;
  }

  // A ring with channels timed in closed form must carry one collective at a time (the claim
  // platform.hpp's exclusive rates rest on): a second one in flight is an error, not a silent
  // overlap the closed form would miss.
  static bool has_lone_channels(const RingRoute& ring) {
    return std::any_of(ring.exclusive_rates.begin(), ring.exclusive_rates.end(), [](double r) { return r > 0; });
  }
  void enter_ring(const Op& op) {
    if (!has_lone_channels(platform_.ring(op.ring))) return;
    if (++collectives_in_flight_[op.ring] > 1) {
      throw std::logic_error("replay: two collectives at once on ring " + std::to_string(op.ring) +
                             ", whose channels are timed as if alone on their links");
    }
  }
  void leave_ring(const Op& op) {
    const RingRoute& ring = platform_.ring(op.ring);
    if (op.kind == OpKind::COLLECTIVE && !ring.channels.empty() && op.group_size >= 2 && has_lone_channels(ring)) {
      --collectives_in_flight_[op.ring];
    }
  }

  void on_activity_done(OpId id) {
    if (--pending_[id] > 0) return;
    if (phase_[id] == 1) {
      start_flows(id);
      if (pending_[id] > 0) return;
    }
    finish(id);
    drain();
  }

  // Ops whose work is empty finish at once; their successors may start at once too.
  void finish(OpId id) {
    result_.timing[id].end = sg::Engine::get_clock();
    if (graph_[id].kind == OpKind::COLLECTIVE) leave_ring(graph_[id]);
    if (graph_[id].kind == OpKind::COMPUTE && graph_[id].seconds > 0) --computing_[graph_[id].gpu];
    if ((graph_[id].kind == OpKind::STORAGE_READ || graph_[id].kind == OpKind::STORAGE_WRITE) && graph_[id].bytes > 0) {
      storage_flows(graph_[id], graph_[id].kind == OpKind::STORAGE_READ, -1);
    }
    // SimGrid still touches an activity after its completion signal, also after the signals of
    // other activities that end at the same instant (releasing one then crashed a 35-stage
    // replay); keeping every one to the end makes SimGrid's own bookkeeping scan them all. So
    // an op's activities are released at the first completion at a later time.
    const double now = sg::Engine::get_clock();
    if (now > graveyard_time_) {
      graveyard_.clear();
      graveyard_time_ = now;
    }
    for (auto& a : live_[id]) graveyard_.push_back(std::move(a));
    live_[id].clear();
    live_[id].shrink_to_fit();
    ++completed_;
    for (auto [e, end] = boost::out_edges(id, graph_); e != end; ++e) {
      const OpId next = boost::target(*e, graph_);
      if (--waiting_[next] == 0) ready_.push_back(next);
    }
  }

  void drain() {
    while (!ready_.empty()) {
      const OpId next = ready_.back();
      ready_.pop_back();
      start(next);
    }
  }

  const TaskGraph& graph_;
  const Platform& platform_;
  const RateCaps& caps_;
  std::size_t n_;
  std::vector<int> waiting_;
  std::vector<int> pending_;
  std::vector<int> phase_;
  std::vector<std::vector<sg::ActivityPtr>> live_;
  std::vector<OpId> ready_;
  std::vector<sg::ActivityPtr> graveyard_;
  double graveyard_time_ = -1;
  std::unordered_map<const sg::Link*, double> caps_in_force_;
  std::unordered_map<int, int> computing_;  // simulated GPU -> compute ops running on it
  std::unordered_map<const sg::Link*, std::array<int, 2>> storage_in_flight_;  // reads, writes per device
  std::vector<sg::ExecPtr> phantoms_;      // interference execs, kept to the end of the replay
  std::map<std::pair<int, double>, hw::InterferenceEffect> effects_;  // by (collective kind, bytes)
  std::unordered_map<int, int> collectives_in_flight_;  // ring -> collectives, where it has lone channels
  std::size_t completed_ = 0;
  ReplayResult result_;
};

}  // namespace

ReplayResult replay(const TaskGraph& graph, const Platform& platform, const RateCaps& caps) {
  Replayer r(graph, platform, caps);
  return r.run();
}

}  // namespace trainsim::sim
