#include "data_parallel_schedule.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace trainsim::sim {

std::string_view to_string(Instr i) {
  switch (i) {
    case Instr::FETCH_PARAMS: return "fetch_params";
    case Instr::GATHER_PARAMS: return "gather_params";
    case Instr::FORWARD: return "forward";
    case Instr::SAVE_CHECKPOINT: return "save_checkpoint";
    case Instr::LOAD_CHECKPOINT: return "load_checkpoint";
    case Instr::RECOMPUTE: return "recompute";
    case Instr::BACKWARD: return "backward";
    case Instr::REDUCE_GRADS: return "reduce_grads";
    case Instr::OFFLOAD_GRADS: return "offload_grads";
    case Instr::OPTIMIZER_STEP: return "optimizer_step";
    case Instr::UPDATE_PARAMS: return "update_params";
  }
  return "?";
}

std::vector<int> assign_buckets(const std::vector<double>& unit_grad_bytes, double bucket_bytes) {
  std::vector<int> bucket(unit_grad_bytes.size(), 0);
  int current = 0;
  double filled = 0;
  for (int u = static_cast<int>(unit_grad_bytes.size()) - 1; u >= 0; --u) {
    bucket[static_cast<std::size_t>(u)] = current;
    filled += unit_grad_bytes[static_cast<std::size_t>(u)];
    if (filled >= bucket_bytes && u > 0) {
      ++current;
      filled = 0;
    }
  }
  return bucket;
}

namespace {

// One compute of the step's sequence.
struct Item {
  Instr kind;
  int unit;
  int layer;
  int micro_batch;
  bool needs_params;
};

class Emitter {
 public:
  explicit Emitter(DataParallelPlan plan) : plan_(std::move(plan)) {
    const int units = static_cast<int>(plan_.unit_layer.size());
    if (plan_.bucket_of_unit.empty()) plan_.bucket_of_unit.assign(static_cast<std::size_t>(units), 0);
    // A bucket closes when its lowest unit's backward is done (the backward runs units in reverse).
    for (int u = 0; u < units; ++u) {
      const auto b = static_cast<std::size_t>(plan_.bucket_of_unit[static_cast<std::size_t>(u)]);
      if (bucket_first_unit_.size() <= b) bucket_first_unit_.resize(b + 1, -1);
      if (bucket_first_unit_[b] < 0) bucket_first_unit_[b] = u;
    }
    if (units > 0) {
      first_layer_ = plan_.unit_layer.front();
      layer_count_ = plan_.unit_layer.back() - first_layer_ + 1;
    }
    // Units of a layer are contiguous (unit_layer is non-decreasing): each layer's first and
    // one-past-last unit.
    layer_units_.assign(static_cast<std::size_t>(layer_count_), {0, 0});
    for (int u = 0; u < units; ++u) {
      auto& [first, end] = layer_units_[static_cast<std::size_t>(plan_.unit_layer[static_cast<std::size_t>(u)] - first_layer_)];
      if (first == end) first = u;
      end = u + 1;
    }
    const auto cells = static_cast<std::size_t>(std::max(0, plan_.micro_batches) * layer_count_);
    first_backward_item_.assign(cells, NONE);
    saved_.assign(cells, NONE);
    loaded_.assign(cells, NONE);
  }

  std::vector<ScheduleItem> run() {
    build_items();
    find_reuses();
    fetch_.assign(items_.size(), NONE);
    gather_.assign(items_.size(), NONE);
    emit_step_gathers();
    for (std::size_t p = 0; p < items_.size(); ++p) {
      emit_prefetches(static_cast<int>(p));
      emit_compute(static_cast<int>(p));
    }
    std::vector<int> before_step = finals_;
    if (before_step.empty()) {
      for (int i = 0; i < static_cast<int>(out_.size()); ++i) {
        if (out_[static_cast<std::size_t>(i)].kind == Instr::BACKWARD) before_step.push_back(i);
      }
    }
    const int step = emit({Instr::OPTIMIZER_STEP, -1, -1, -1, -1, Pass::NONE, before_step});
    if (plan_.update_params) emit({Instr::UPDATE_PARAMS, -1, -1, -1, -1, Pass::NONE, {step}});
    return std::move(out_);
  }

 private:
  int emit(ScheduleItem in) {
    const bool gather = in.kind == Instr::GATHER_PARAMS;
    out_.push_back(std::move(in));
    const int at = static_cast<int>(out_.size()) - 1;
    if (gather) last_gather_ = at;
    return at;
  }

  // Whether a submodule without parameters runs between compute p - 1 and compute p
  // (DataParallelPlan::hook_before_unit): always between passes and layers. Not before a micro-
  // batch's first compute: the coordinator starts each forward with nothing gathered or in flight
  // (reset_step), and the first unit's own hook issues the next prefetch after its wait.
  bool hook_before(int p) const {
    if (p == 0) return false;
    const Item& it = items_[static_cast<std::size_t>(p)];
    const Item& prev = items_[static_cast<std::size_t>(p - 1)];
    if (prev.micro_batch != it.micro_batch) return false;
    if (prev.kind != it.kind || prev.layer != it.layer) return true;
    if (prev.unit + 1 == it.unit) return plan_.hook_before_unit[static_cast<std::size_t>(it.unit)] != 0;
    if (prev.unit == it.unit + 1) return plan_.hook_before_unit[static_cast<std::size_t>(prev.unit)] != 0;
    return true;
  }

  // A bucket's reduction after compute `after`, and the copy of its partition to the optimizer's
  // tier; `epilogue`: the backward's last, which the host waits for.
  void reduce_bucket(int bucket, int after, int micro_batch, bool epilogue) {
    const int r = emit({Instr::REDUCE_GRADS, -1, -1, micro_batch, bucket, Pass::NONE, {after}});
    finals_.push_back(r);
    int last = r;
    const bool offload = plan_.offload_grads && (!plan_.offload_grads_once || micro_batch == plan_.micro_batches - 1);
    if (offload) {
      last = emit({Instr::OFFLOAD_GRADS, -1, -1, micro_batch, bucket, Pass::NONE, {r}});
      finals_.push_back(last);
      out_[static_cast<std::size_t>(last)].host_waits = plan_.grad_offload_blocks_host && micro_batch == plan_.micro_batches - 1;
    }
    if (epilogue) out_[static_cast<std::size_t>(last)].host_waits = true;
  }

  std::vector<int> units_of_layer(int layer) const {
    std::vector<int> out;
    if (layer < first_layer_ || layer >= first_layer_ + layer_count_) return out;
    const auto [first, end] = layer_units_[static_cast<std::size_t>(layer - first_layer_)];
    for (int u = first; u < end; ++u) out.push_back(u);
    return out;
  }

  // A (micro-batch, layer) table's cell.
  int& cell(std::vector<int>& table, int micro_batch, int layer) const {
    return table[static_cast<std::size_t>(micro_batch * layer_count_ + layer - first_layer_)];
  }

  void build_items() {
    const int units = static_cast<int>(plan_.unit_layer.size());
    for (int mb = 0; mb < plan_.micro_batches; ++mb) {
      for (int u = 0; u < units; ++u) items_.push_back({Instr::FORWARD, u, plan_.unit_layer[static_cast<std::size_t>(u)], mb, true});
      const int last_layer = plan_.unit_layer.back();
      for (int layer = last_layer; layer >= plan_.unit_layer.front(); --layer) {
        const std::vector<int> us = units_of_layer(layer);
        if (us.empty()) continue;
        cell(first_backward_item_, mb, layer) = static_cast<int>(items_.size());
        const bool checkpointed = layer >= 0 && layer < plan_.checkpointed_layers;
        if (plan_.recompute_full && checkpointed) {
          for (int u : us) items_.push_back({Instr::RECOMPUTE, u, layer, mb, true});
        } else if (checkpointed && plan_.selective_unit_of_layer >= 0 &&
                   plan_.selective_unit_of_layer < static_cast<int>(us.size())) {
          items_.push_back({Instr::RECOMPUTE, us[static_cast<std::size_t>(plan_.selective_unit_of_layer)], layer, mb, false});
        }
        for (auto it = us.rbegin(); it != us.rend(); ++it) items_.push_back({Instr::BACKWARD, *it, layer, mb, true});
      }
    }
  }

  // A fetch or gather for compute `target`, issued once compute target - ahead - 1 has ended.
  void trigger(ScheduleItem& in, int target, int ahead) const {
    const int t = target - ahead - 1;
    if (t >= 0) in.after.push_back(computes_[static_cast<std::size_t>(t)]);
  }

  bool first_of_layer(const Item& it) const {
    return it.unit == 0 || plan_.unit_layer[static_cast<std::size_t>(it.unit - 1)] != it.layer;
  }

  // For each compute, the earlier compute whose gather it uses (NONE: a gather of its own): a
  // backward right after the recompute of its unit (recompute_shares_gather), a later compute of a
  // gather group in the same pass (gather_group), a unit its buffer still holds or one gathered
  // once a step (gather_slots, step_gathered_units), or the next use of a unit within DeepSpeed's
  // reuse window (reuse_window_params).
  void find_reuses() {
    reuse_from_.assign(items_.size(), NONE);
    slot_wait_.assign(items_.size(), NONE);
    if (plan_.recompute_shares_gather) share_recompute_gathers();
    if (!plan_.gather_group.empty()) share_group_gathers();
    if (plan_.gather_slots > 0 || !plan_.step_gathered_units.empty()) share_slot_gathers();
    if (!plan_.recompute_shares_gather && plan_.reuse_window_params > 0) share_within_reuse_window();
  }

  // Compute p uses the gather compute q uses (q's own, or the one q reuses), unless p already has one.
  void reuse(int p, int q) {
    if (reuse_from_[static_cast<std::size_t>(p)] != NONE) return;
    const int from = reuse_from_[static_cast<std::size_t>(q)];
    reuse_from_[static_cast<std::size_t>(p)] = from != NONE ? from : q;
  }

  void share_recompute_gathers() {
    for (int p = 1; p < static_cast<int>(items_.size()); ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      const Item& before = items_[static_cast<std::size_t>(p - 1)];
      if (it.kind == Instr::BACKWARD && before.kind == Instr::RECOMPUTE && before.unit == it.unit &&
          before.micro_batch == it.micro_batch) {
        reuse(p, p - 1);
      }
    }
  }

  void share_group_gathers() {
    // (micro-batch, backward side, group) -> the compute that gathers the group.
    std::map<std::tuple<int, bool, int>, int> first;
    for (int p = 0; p < static_cast<int>(items_.size()); ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      const int group = plan_.gather_group[static_cast<std::size_t>(it.unit)];
      if (!it.needs_params || group < 0) continue;
      const auto [at, fresh] = first.try_emplace({it.micro_batch, it.kind != Instr::FORWARD, group}, p);
      if (!fresh) reuse(p, at->second);
    }
  }

  void share_slot_gathers() {
    const auto slots = static_cast<std::size_t>(std::max(0, plan_.gather_slots));
    std::vector<int> holds(slots, NONE), last_user(slots, NONE);
    std::map<int, int> step_first;  // a step-gathered unit -> its first compute
    for (int p = 0; p < static_cast<int>(items_.size()); ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      if (!it.needs_params) continue;
      if (std::find(plan_.step_gathered_units.begin(), plan_.step_gathered_units.end(), it.unit) != plan_.step_gathered_units.end()) {
        const auto [at, fresh] = step_first.try_emplace(it.unit, p);
        if (fresh) {
          step_start_.push_back(p);
        } else {
          reuse(p, at->second);
        }
        continue;
      }
      if (slots == 0) continue;
      const auto slot = static_cast<std::size_t>(it.unit) % slots;
      if (holds[slot] == it.unit) {
        reuse(p, last_user[slot]);
      } else {
        holds[slot] = it.unit;
        slot_wait_[static_cast<std::size_t>(p)] = last_user[slot];
      }
      last_user[slot] = p;
    }
  }

  void share_within_reuse_window() {
    const int n = static_cast<int>(items_.size());
    // Parameters the trace passes through: prefix sums over the computes that use parameters.
    std::vector<double> passed(static_cast<std::size_t>(n) + 1, 0.0);
    for (int p = 0; p < n; ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      passed[static_cast<std::size_t>(p) + 1] =
          passed[static_cast<std::size_t>(p)] + (it.needs_params ? plan_.unit_params[static_cast<std::size_t>(it.unit)] : 0.0);
    }
    // The previous use of each unit within its micro-batch (the coordinator releases everything
    // when a micro-batch's backward ends).
    std::vector<int> last_use(plan_.unit_params.size(), NONE);
    int micro_batch = -1;
    for (int p = 0; p < n; ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      if (it.micro_batch != micro_batch) {
        std::fill(last_use.begin(), last_use.end(), NONE);
        micro_batch = it.micro_batch;
      }
      if (!it.needs_params) continue;
      int& q = last_use[static_cast<std::size_t>(it.unit)];
      // Kept if the computes between the two uses pass fewer parameters than the window.
      if (q != NONE && passed[static_cast<std::size_t>(p)] - passed[static_cast<std::size_t>(q) + 1] < plan_.reuse_window_params) {
        reuse(p, q);
      }
      q = p;
    }
  }

  // The step-gathered units' fetches and gathers, before the step's first compute and after the
  // step's barrier only (the reference's zero_grads).
  void emit_step_gathers() {
    for (int p : step_start_) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      if (plan_.fetch_params) fetch_[p] = emit({Instr::FETCH_PARAMS, it.unit, it.layer, it.micro_batch, -1, pass_of(it.kind), {}});
      if (!plan_.gather_params) continue;
      ScheduleItem g{Instr::GATHER_PARAMS, it.unit, it.layer, it.micro_batch, -1, pass_of(it.kind), {}};
      if (fetch_[p] != NONE) g.after.push_back(fetch_[p]);
      gather_[p] = emit(g);
    }
  }

  // A fetch or gather into a buffer waits for the end of the buffer's last compute (none: the
  // step's barrier); elsewhere it is issued `ahead` gathers early (trigger_gather).
  void trigger_load(ScheduleItem& in, int target, int ahead) const {
    if (plan_.gather_slots <= 0) {
      trigger_gather(in, target, ahead);
      return;
    }
    const int wait = slot_wait_[static_cast<std::size_t>(target)];
    if (wait == NONE) return;
    if (wait < static_cast<int>(computes_.size())) {
      in.after.push_back(computes_[static_cast<std::size_t>(wait)]);
    } else {
      trigger_gather(in, target, ahead);  // the buffer's last user is not yet issued: it comes at once after it
    }
  }

  bool reuses(int p) const { return p > 0 && reuse_from_[static_cast<std::size_t>(p)] != NONE; }

  // The fetch or gather for compute `target`, issued once the computes of `ahead` gathers before
  // its own have started, i.e. once the compute before them has ended (without shared gathers,
  // compute target - ahead - 1, as trigger). A compute that uses an earlier gather is no step.
  void trigger_gather(ScheduleItem& in, int target, int ahead) const {
    int t = target;
    for (int k = 0; k < ahead && t > 0; ++k) {
      --t;
      while (t > 0 && reuses(t)) --t;
    }
    if (t - 1 >= 0) in.after.push_back(computes_[static_cast<std::size_t>(t - 1)]);
  }

  static Pass pass_of(Instr k) {
    return k == Instr::FORWARD ? Pass::FORWARD : k == Instr::RECOMPUTE ? Pass::RECOMPUTE : Pass::BACKWARD;
  }

  void emit_prefetches(int position) {
    const int n = static_cast<int>(items_.size());
    in_flight_at_fetch_ = last_gather_;
    for (int p = position; p <= std::min(n - 1, position + plan_.fetch_ahead); ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      if (plan_.fetch_params && it.needs_params && fetch_[p] == NONE) {
        if (reuses(p) && fetch_[reuse_from_[p]] != NONE) {
          fetch_[p] = fetch_[reuse_from_[p]];
        } else {
          ScheduleItem f{Instr::FETCH_PARAMS, it.unit, it.layer, it.micro_batch, -1, pass_of(it.kind), {}};
          trigger_load(f, p, plan_.fetch_ahead);
          fetch_[p] = emit(f);
        }
      }
      // A layer's checkpoint comes back before its first recompute or backward.
      // Blocking copies (checkpoint_copies_block_host) are issued right before their compute.
      const bool blocking = plan_.checkpoint_copies_block_host;
      if (plan_.offload_checkpoints && it.kind != Instr::FORWARD && cell(saved_, it.micro_batch, it.layer) != NONE &&
          (!blocking || p == position)) {
        int& loaded = cell(loaded_, it.micro_batch, it.layer);
        if (cell(first_backward_item_, it.micro_batch, it.layer) == p && loaded == NONE) {
          ScheduleItem c{Instr::LOAD_CHECKPOINT, -1, it.layer, it.micro_batch, -1, Pass::NONE, {cell(saved_, it.micro_batch, it.layer)}};
          trigger(c, p, blocking ? 0 : plan_.fetch_ahead);
          c.host_waits = blocking;
          loaded = emit(c);
        }
      }
    }
    for (int p = position; plan_.gather_params && p <= std::min(n - 1, position + plan_.gather_ahead); ++p) {
      const Item& it = items_[static_cast<std::size_t>(p)];
      if (!it.needs_params || gather_[p] != NONE) continue;
      if (!plan_.gather_for_backward && it.kind != Instr::FORWARD) continue;
      if (reuses(p) && gather_[reuse_from_[p]] != NONE) {
        gather_[p] = gather_[reuse_from_[p]];
        continue;
      }
      ScheduleItem g{Instr::GATHER_PARAMS, it.unit, it.layer, it.micro_batch, -1, pass_of(it.kind), {}};
      trigger_load(g, p, plan_.gather_ahead);
      if (fetch_[p] != NONE) g.after.push_back(fetch_[p]);
      gather_[p] = emit(g);
    }
  }

  void emit_compute(int position) {
    const Item& it = items_[static_cast<std::size_t>(position)];
    SmallVector<int, 3> needs;
    if (gather_[position] != NONE) needs.push_back(gather_[position]);
    else if (fetch_[position] != NONE) needs.push_back(fetch_[position]);
    if (it.kind != Instr::FORWARD && cell(loaded_, it.micro_batch, it.layer) != NONE) needs.push_back(cell(loaded_, it.micro_batch, it.layer));
    // DeepSpeed's hooks wait for every gather issued before them (hook_before_unit).
    if (!plan_.hook_before_unit.empty() && last_gather_ != NONE && last_gather_ != gather_[position] && hook_before(position)) {
      needs.push_back(last_gather_);
    }
    // DeepSpeed 0.3.15's fetch, where the submodule's parameters are gathered now or in flight,
    // waits for every gather in flight when it begins (fetch_waits_in_flight).
    SmallVector<int, 2> ordered;
    if (plan_.fetch_waits_in_flight && it.needs_params && !reuses(position) && in_flight_at_fetch_ > gather_[position]) {
      ordered.push_back(in_flight_at_fetch_);
    }
    // Its prefetch waits on the host for the next compute's NVMe reads (fetch_blocks_previous_compute).
    if (plan_.fetch_blocks_previous_compute && position + 1 < static_cast<int>(items_.size()) &&
        items_[static_cast<std::size_t>(position) + 1].micro_batch == it.micro_batch) {
      const int next = fetch_[static_cast<std::size_t>(position) + 1];
      if (next != NONE && next != fetch_[position]) ordered.push_back(next);
    }
    // Checkpoints leave through two GPU buffers (ZeRO-Infinity Sec. 5.1.2; the memory model's two
    // layers): a layer's forward starts once the checkpoint of the layer two before it is out.
    if (it.kind == Instr::FORWARD && plan_.offload_checkpoints && first_of_layer(it) && it.layer - 2 >= std::max(0, first_layer_) &&
        cell(saved_, it.micro_batch, it.layer - 2) != NONE) {
      needs.push_back(cell(saved_, it.micro_batch, it.layer - 2));
    }
    // Within a layer's backward the recompute comes first; successive computes follow each other
    // on the compute stream, so only data dependencies are listed.
    ScheduleItem compute{it.kind, it.unit, it.layer, it.micro_batch, -1, pass_of(it.kind), needs};
    compute.ordered_after = ordered;
    const int id = emit(compute);
    computes_.push_back(id);
    const auto& units = plan_.unit_layer;
    const bool last_of_layer = it.unit + 1 == static_cast<int>(units.size()) ||
                               units[static_cast<std::size_t>(it.unit + 1)] != it.layer;
    const bool checkpointed = it.layer >= 0 && it.layer < plan_.checkpointed_layers;
    if (it.kind == Instr::FORWARD && last_of_layer && plan_.offload_checkpoints && checkpointed) {
      ScheduleItem save{Instr::SAVE_CHECKPOINT, -1, it.layer, it.micro_batch, -1, Pass::NONE, {id}};
      save.host_waits = plan_.checkpoint_copies_block_host;
      cell(saved_, it.micro_batch, it.layer) = emit(save);
    }
    if (it.kind != Instr::BACKWARD) return;
    const bool reduce = plan_.reduce_every_micro_batch || it.micro_batch == plan_.micro_batches - 1;
    const int u = it.unit;
    const int bucket = plan_.bucket_of_unit[static_cast<std::size_t>(u)];
    const bool closes = bucket_first_unit_[static_cast<std::size_t>(bucket)] == u;
    if (!plan_.reduce_at_next_backward) {
      if (reduce && closes) reduce_bucket(bucket, id, it.micro_batch, false);
      return;
    }
    // The bucket this compute's gradients overflow is reduced now, this one's at the next
    // backward compute, or at once where the micro-batch's backward ends here.
    if (pending_bucket_ != NONE) reduce_bucket(pending_bucket_, pending_after_, it.micro_batch, false);
    pending_bucket_ = NONE;
    if (reduce && closes) {
      pending_bucket_ = bucket;
      pending_after_ = id;
    }
    const bool backward_ends = position + 1 == static_cast<int>(items_.size()) ||
                               items_[static_cast<std::size_t>(position) + 1].micro_batch != it.micro_batch;
    if (backward_ends && pending_bucket_ != NONE) {
      reduce_bucket(pending_bucket_, pending_after_, it.micro_batch, true);
      pending_bucket_ = NONE;
    }
  }

  DataParallelPlan plan_;
  std::vector<int> bucket_first_unit_;  // bucket -> its lowest unit
  std::vector<Item> items_;
  std::vector<ScheduleItem> out_;
  std::vector<int> computes_;
  std::vector<int> finals_;
  static constexpr int NONE = -1;
  int last_gather_ = NONE;                               // the last gather emitted
  int in_flight_at_fetch_ = NONE;                        // the last gather emitted before this compute's prefetches
  int pending_bucket_ = NONE, pending_after_ = NONE;     // a full bucket not yet reduced, and the compute it follows
  std::vector<int> fetch_, gather_;                      // compute position -> instruction (NONE: none)
  std::vector<int> reuse_from_;                          // compute position -> the compute whose gather it uses
  std::vector<int> slot_wait_;                           // compute position -> the compute its buffer's gather waits for
  std::vector<int> step_start_;                          // compute positions whose gathers the step starts with
  int first_layer_ = 0, layer_count_ = 0;           // the layers the units span
  std::vector<std::pair<int, int>> layer_units_;       // layer -> [first unit, end)
  // (micro-batch, layer) tables (cell): the first backward item's position; the checkpoint's
  // save and load instructions (NONE: none).
  std::vector<int> first_backward_item_, saved_, loaded_;
};

}  // namespace

std::vector<ScheduleItem> data_parallel_schedule(const DataParallelPlan& plan) { return Emitter(plan).run(); }

}  // namespace trainsim::sim
