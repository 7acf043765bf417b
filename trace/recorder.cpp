#include "nnvm/trace/recorder.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/block_pool.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/mode_state.h"
#include "nnvm/core/profiling.h"
#include "nnvm/trace/cursor.h"
#include "nnvm/trace/flush.h"
#include "nnvm/trace/signature.h"

namespace nnvm::trace {

namespace {

// What the recording trace owes one storage.
struct Record final : PendingWork {
  // kWatch: a FlushCapture's watch on a materialised storage (owned by it),
  // which the trace owes nothing.
  enum Kind { kContents, kWrite, kWatch } kind = kContents;
  std::thread::id thread;
  ValueId value = -1;  // kContents: the storage's whole contents; kWrite: what to write
  uint64_t made = 0;   // kContents: the layout_id of the lazy tensor made with the storage
  Tensor target;       // kWrite: the materialised tensor written at the flush
  std::shared_ptr<const std::string> failure;  // why its trace failed, once it has
};

// A trace's records, made in chunks (one allocation per kChunk records, not
// one per lazy tensor). A storage's pending pointer points into the arena
// until the flush, which clears it first thing (a failed trace gives its
// storages records of their own) and moves each write's target out; the
// next trace then reuses the arena's records as they are. A record in the
// arena never carries a failure (fail() copies it first).
class RecordArena {
 public:
  static constexpr size_t kChunk = 64;

  // A record that `owner`'s pending pointer points to.
  Record* make(Storage& owner) {
    if (used_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<Record[]>(kChunk));
    Record* r = &chunks_[used_ / kChunk][used_ % kChunk];
    ++used_;
    owner.set_pending(r);
    return r;
  }

  void clear() {
#ifndef NDEBUG
    for (size_t k = 0; k < used_; ++k) {
      const Record& r = chunks_[k / kChunk][k % kChunk];
      NNVM_DCHECK(!r.target.defined() && !r.failure);
    }
#endif
    used_ = 0;
  }

 private:
  std::vector<std::unique_ptr<Record[]>> chunks_;
  size_t used_ = 0;
};

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.storage_offset() == b.storage_offset() && a.dtype() == b.dtype() && same_dims(a.sizes(), b.sizes()) &&
         same_dims(a.strides(), b.strides());
}

// A tensor with the value's dtype, shape and strides (a trace input's layout).
bool same_layout(const Value& v, const TensorImpl& t) {
  return v.dtype == t.dtype && same_dims(v.shape, t.shape) && same_dims(v.strides, t.strides);
}

const OpDef& op_named(const char* name) { return find_op(name); }

// A handle of its own to t's current layout: a program may later point t's
// TensorImpl elsewhere (Module::to, set_data), and the trace must still read
// and write what t was when the op was recorded.
Tensor snapshot(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage();
  impl->shape = dims(t.sizes());
  impl->strides = dims(t.strides());
  impl->offset = t.storage_offset();
  impl->dtype = t.dtype();
  impl->device = t.device();
  impl->is_view = t.impl()->is_view;
  return Tensor(std::move(impl));
}

// What a trace has made of a materialised tensor it reads (value -1:
// nothing yet). At namespace scope: the recorder keeps an array of them,
// which needs their default constructor before the class is complete.
struct TakenInput {
  ValueId value = -1;
  size_t index = 0;  // into the recorder's inputs_
};

class Recorder {
 public:
  // A thread that ends with a recorded trace runs it, so the tensors it hands
  // on have values. It runs on a fresh thread: this one's other thread_locals
  // (kernels' scratch buffers) may already be destroyed.
  ~Recorder() {
    if (node_count() == 0 && owed_.empty()) return;
    try {
      std::thread([this] {
        try {
          flush();
        } catch (...) {  // a failing trace: its tensors carry the error
        }
      }).join();
    } catch (...) {  // no thread to be had: the tensors carry an error instead
      abandon("the thread that recorded it ended and no thread could be started to run its trace");
    }
  }

  void record(const OpDef& op, TensorRefs inputs, const Attrs& attrs, detail::LazyOutputs& outs) {
    if (reads_program_memory(inputs)) [[unlikely]] {
      const std::vector<Tensor> read = read_program_memory(inputs);
      record(op, read, attrs, outs);
      return;
    }
    NewInputs fresh;
    const Node* known = repeated_node(op, inputs, attrs, fresh);
    if (!known && flush_if_needed(op, inputs, nullptr)) known = repeated_node(op, inputs, attrs, fresh);
    ValueId first;
    size_t count;
    if (known) {
      // The node's new trace inputs, in the order the entry numbered them.
      for (const NewInput& in : fresh) take_input(in.known ? input_for(in.impl) : new_input(in.impl), inputs[in.at]);
      if (unbuilt_) {
        first = ValueId(followed_values_);
        NNVM_DCHECK(known->outputs.empty() || known->outputs[0] == first);
        followed_values_ += known->outputs.size();
        ++followed_nodes_;
      } else {
        first = trace_.add_node_like(op, known->inputs, attrs, *cursor_.entry(), *known);
      }
      count = known->outputs.size();
      ++stats_.nodes_repeated;
    } else {
      build();
      const OutputSpecs specs = op.infer(TensorSpan(inputs), attrs);  // before values_of: a failing op records nothing
      const absl::InlinedVector<ValueId, 4> ins = values_of(op, inputs);
      first = trace_.add_inferred_node(op, ins, attrs, specs);
      count = specs.size();
      cursor_.follow(trace_);
    }
    const Device device = inputs.empty() ? Device() : inputs[0].impl()->device;  // defined: call() checked
    for (size_t k = 0; k < count; ++k) outs.push_back(make_lazy(first + ValueId(k), device, op.name, known != nullptr));
    if (int64_t(node_count()) >= detail::recorded_cap()) flush();
  }

  void record_into(const OpDef& op, TensorRefs inputs, const Attrs& attrs, const OutputSpec& result,
                   const Tensor& out) {
    if (reads_program_memory(inputs)) [[unlikely]] {
      const std::vector<Tensor> read = read_program_memory(inputs);
      record_into(op, read, attrs, result, out);
      return;
    }
    flush_if_needed(op, inputs, &out);
    build();
    const absl::InlinedVector<ValueId, 4> ins = values_of(op, inputs);
    ValueId v = trace_.add_inferred_node(op, ins, attrs, {result});
    cursor_.follow(trace_);
    if (result.dtype != out.dtype()) {
      static const OpDef& copy = op_named("copy");
      v = trace_.add_inferred_node(copy, {v}, {out.dtype()}, {{result.shape, out.dtype()}});
      cursor_.follow(trace_);
    }
    Storage& s = *out.storage();
    if (Record* r = own_record(s, op.name)) {
      r->made = 0;  // the new value's layout may not be the lazy tensor's
      if (r->kind == Record::kWrite) {  // the same layout: flush_if_needed saw to that
        r->value = v;
      } else if (is_whole(out, r->value)) {
        r->value = v;
      } else {
        static const OpDef& update = op_named("strided_update");
        const Value& base = trace_.value(r->value);
        r->value = trace_.add_inferred_node(update, {r->value, v},
                                            {dims(out.sizes()), dims(out.strides()), out.storage_offset()},
                                            {{base.shape, base.dtype}});
        cursor_.follow(trace_);
      }
    } else {
      Record* rec = make_record(Record::kWrite, v, s);
      rec->target = snapshot(out);
      owed_.push_back({out.storage(), rec});
    }
    // The caller reads its own memory (from_blob) without asking us first.
    if (s.is_external() || int64_t(trace_.nodes().size()) >= detail::recorded_cap()) flush();
  }

  void materialize(Storage& s) {
    Record* r = static_cast<Record*>(s.pending());
    FlushCapture* capture = FlushCapture::active();
    if (r->kind == Record::kWatch) {
      // A trace's kernels read it (here while this thread flushes, or on the
      // pool's threads): not the program.
      if (flushing_ || r->thread != thread_) return;
      if (capture) ++capture->host_reads;
      s.set_pending(nullptr);
      return;
    }
    check_usable(*r, "data access");
    if (capture && !flushing_) ++capture->host_reads;
    flush();
  }

  void flush() {
    if (flushing_ || (node_count() == 0 && owed_.empty())) return;
    profiling::Scope profile("flush", "flush");
    if (profile.active()) profile.arg("nodes", int64_t(node_count()));
    // Every storage still alive that the trace owes something is an output;
    // lazy storages no tensor refers to any more are not.
    std::vector<FlushOutput>& binds = binds_;
    binds.clear();
    for (Owed& o : owed_) {
      // Held by owed_ alone: no tensor refers to it, and none can again.
      const bool dropped = o.storage.use_count() == 1;
      if (o.record->kind == Record::kContents && dropped) {
        keep_spare(std::move(o.storage));
        continue;
      }
      outputs_.push_back(o.record->value);
      o.storage->set_pending(nullptr);
      binds.push_back({o.record->kind == Record::kContents ? std::move(o.storage) : nullptr,
                       std::move(o.record->target), o.record});
    }
    const bool repeated = cursor_.repeats(node_count(), value_count(), inputs_.size(), outputs_);
    stats_.flushes_repeated += repeated;
    // Each input with the layout it was recorded with (a plan of the trace's
    // signature has those layouts), or undefined.
    std::vector<Tensor>& inputs = flushed_inputs_;
    inputs.clear();
    for (size_t k = 0; k < inputs_.size(); ++k) inputs.push_back(as_recorded(inputs_[k], input_value(k)));
    reset();
    ++stats_.flushes;
    stats_.nodes_flushed += int64_t(node_count());

    flushing_ = true;
    // Nothing records while the flush runs (it is eager), so it runs the
    // recorded trace in place; afterwards the next trace records into its
    // buffers, which the flush has just walked (in cache). The flush's other
    // buffers are members, emptied here and kept for the next.
    struct Done {
      Recorder& r;
      ~Done() {
        r.flushing_ = false;
        if (!r.unbuilt_) r.trace_.clear();
        r.unbuilt_ = true;
        r.followed_nodes_ = r.followed_values_ = 0;
        r.outputs_.clear();
        r.arena_.clear();
        r.cursor_.restart();
        r.binds_.clear();
        r.flushed_inputs_.clear();
        r.flush_buffers_.clear();
      }
    } done{*this};
    run_flush(Flush{.cursor = cursor_,
                    .unbuilt = unbuilt_,
                    .repeated = repeated,
                    .inputs = absl::MakeSpan(inputs),
                    .outputs = binds,
                    .build = [this](const Trace* entry) -> const Trace& {
                      build_with_outputs(entry);
                      return trace_;
                    },
                    .fail =
                        [](const FlushOutput& out, std::shared_ptr<const std::string> failure) {
                          fail(*out.storage, *static_cast<const Record*>(out.record), std::move(failure));
                        },
                    .observer = observer_,
                    .stats = stats_,
                    .profile = profile},
              flush_buffers_);
  }

  // impl is about to point at other memory: an input of the trace that is
  // what impl is now keeps its storage.
  void repoint(const TensorImpl& impl) {
    const Input* in = find_input(&impl);
    if (!in || in->value < 0) return;
    InputRef& input = inputs_[in->index];
    if (!input.kept && impl.storage.get() == input.storage) input.kept = impl.storage;
  }

  RecorderStats stats() const {
    RecorderStats s = stats_;
    s.nodes = int64_t(node_count());
    return s;
  }
  void set_observer(std::function<void(const Trace&)> f) { observer_ = std::move(f); }

 private:
  // A materialised tensor the trace reads: the tensor itself (no copy of its
  // metadata) and what a program may re-point before the flush (its storage
  // and offset; the trace's input value keeps its dtype, shape and strides).
  // The storage is not held (two atomic operations per input and trace):
  // the tensor holds it, and Tensor::set_data, the one way to re-point a
  // tensor, has the recorder keep it first (repoint).
  struct InputRef {
    Tensor tensor;
    const Storage* storage = nullptr;
    int64_t offset = 0;
    bool is_view = false;
    uint64_t layout_id = 0;         // the tensor's when taken: its layout is the input value's
    std::shared_ptr<Storage> kept;  // the storage, once the tensor was re-pointed
  };
  using Input = TakenInput;
  // A storage the trace owes something, held until the flush: a weak
  // reference would cost four atomic operations per lazy tensor (take, lock,
  // release, drop) where this costs one, and a lazy storage no tensor holds
  // any more (use_count 1) can never be reached again.
  struct Owed {
    std::shared_ptr<Storage> storage;
    Record* record;  // in arena_
  };

  // A materialised tensor an op reads that is not an input of the trace
  // yet: input `at` of the op; `known`: the recorder has an entry for its
  // TensorImpl (a tensor re-pointed since it was taken).
  // Made in place (emplace_back): a temporary copied in would be read back
  // whole right after its fields were stored one by one, a load the
  // processor cannot forward from those stores (a stall per new input).
  struct NewInput {
    NewInput(const TensorImpl* impl, size_t at, bool known) : impl(impl), at(at), known(known) {}
    const TensorImpl* impl;
    size_t at;
    bool known;
  };
  using NewInputs = absl::InlinedVector<NewInput, 4>;

  // The node of the entry the cursor follows (at the trace's first op, of
  // any recent entry) that the op repeats, or null: the same op and
  // attributes (node_like), and inputs with the node's value ids, a trace
  // input with its dtype, shape and strides where the node reads a new one.
  // Fills `fresh` with the inputs to take, and records nothing. Null too
  // when an input needs a flush first or reading it records a view node.
  const Node* repeated_node(const OpDef& op, TensorRefs inputs, const Attrs& attrs, NewInputs& fresh) {
    const size_t at = node_count();
    const size_t first = at == 0 ? 0 : cursor_.followed();
    const size_t last = at == 0 ? TraceCursor::kRecent : first + 1;
    for (size_t k = first; k < last; ++k) {
      const Node* n = cursor_.node_like(k, at, op, inputs.size(), attrs);
      if (!n || !inputs_repeat(k, *n, op, inputs, fresh)) continue;
      if (at == 0) cursor_.choose(k);
      return n;
    }
    return nullptr;
  }

  // Whether the op's inputs are node n's of recent entry k, which the trace
  // repeats so far (its values are the entry's first ones). A layout is
  // compared only when the TensorImpl's layout_id does not say it already:
  // the lazy tensor the recorder made for the value, an input taken with
  // it, or a tensor the cursor saw with the entry's input layout before.
  bool inputs_repeat(size_t k, const Node& n, const OpDef& op, TensorRefs inputs, NewInputs& fresh) {
    const Trace& e = cursor_.recent(k);
    fresh.clear();
    ValueId next = ValueId(value_count());  // the id of the next new trace input
    const absl::Span<const ValueId> wants = n.inputs;  // read once: the stores below might alias it
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorImpl& t = *inputs[i].impl();  // defined: call() checked every input
      const ValueId want = wants[i];
      size_t twin = 0;
      while (twin < i && inputs[twin].impl() != &t) ++twin;
      if (twin < i) {
        if (want != wants[twin]) return false;
      } else if (const Record* r = own_record(*t.storage, op.name)) {
        if (r->value != want) return false;
        if (r->kind == Record::kWrite ? !same_layout(inputs[i], r->target)
                                      : t.layout_id != r->made && !is_whole(t, e.value(want)))
          return false;
        NNVM_DCHECK(r->kind == Record::kWrite || is_whole(t, e.value(want)));
      } else if (const Input* in = find_input(&t);
                 in && in->value >= 0 && unchanged(t, inputs_[in->index], e.value(in->value))) {
        if (in->value != want) return false;
      } else {
        const Value& v = e.value(want);
        if (want != next || !v.is_input()) return false;
        if (!cursor_.known_layout(k, v.index, t.layout_id)) {
          if (!same_layout(v, t)) return false;
          cursor_.set_known_layout(k, v.index, t.layout_id);
        }
        NNVM_DCHECK(same_layout(v, t));
        ++next;
        fresh.emplace_back(&t, i, in != nullptr);
      }
    }
    return true;
  }

  // The trace being recorded while it is unbuilt_ is the first
  // followed_nodes_ nodes and followed_values_ values of the cursor's entry.
  size_t node_count() const { return unbuilt_ ? followed_nodes_ : trace_.nodes().size(); }
  size_t value_count() const { return unbuilt_ ? followed_values_ : trace_.values().size(); }
  const Value& value(ValueId v) const { return unbuilt_ ? cursor_.entry()->value(v) : trace_.value(v); }
  // The layout of trace input k.
  const Value& input_value(size_t k) const {
    const Trace& t = unbuilt_ ? *cursor_.entry() : trace_;
    return t.value(t.inputs()[k]);
  }

  // Builds the trace recorded so far, from `entry` while unbuilt_: before an
  // op the cursor does not give its outputs, or a flush that needs the trace.
  void build(const Trace* entry) {
    if (!unbuilt_) return;
    unbuilt_ = false;
    if (followed_values_ > 0) trace_.assign_prefix(*entry, followed_nodes_, followed_values_);
  }
  void build() { build(cursor_.entry()); }
  // At a flush that needs the trace: the trace, built, with its outputs marked.
  void build_with_outputs(const Trace* entry) {
    build(entry);
    for (ValueId v : outputs_) trace_.mark_output(v);
  }

  // Every storage the trace owes something that is still alive gets a
  // failed record of its own: its pending pointer no longer points into
  // arena_, which dies with the recorder.
  void abandon(const char* why) {
    const auto failure = std::make_shared<const std::string>(why);
    for (Owed& o : owed_)
      if (o.storage.use_count() > 1) fail(*o.storage, *o.record, failure);
    owed_.clear();
  }

  // Gives s a copy of `r` of its own that carries `failure`: using s throws
  // it, and s no longer points into arena_.
  static void fail(Storage& s, const Record& r, std::shared_ptr<const std::string> failure) {
    auto own = std::make_unique<Record>(r);
    own->failure = std::move(failure);
    s.set_pending(std::move(own));
  }

  void reset() {
    inputs_.clear();
    few_count_ = 0;
    input_of_.clear();
    owed_.clear();
  }

  // Every input of every op passes here: the checks inline, the errors not.
  void check_usable(const Record& r, std::string_view op) const {
    if (r.failure || r.thread != thread_) [[unlikely]] throw_unusable(r, op);
  }
  [[noreturn, gnu::noinline]] void throw_unusable(const Record& r, std::string_view op) const {
    if (r.failure)
      throw Error(detail::concat(op, ": the tensor's trace failed, so it has no value: ", *r.failure));
    throw Error(detail::concat(op, ": the tensor is being recorded by another thread's trace; each thread "
                               "records its own. Call nnvm::mark_step() on that thread before handing the tensor over"));
  }

  // Memory the program owns (from_blob) is read when the op is recorded, as
  // eager mode reads it: the program may free or overwrite it before the
  // trace runs. Each op that reads it reads a copy made then (a new trace
  // input), so a write between two ops is seen by the second only
  // (docs/TRACE.md, "Memory the program owns").
  static bool reads_program_memory(TensorRefs inputs) {
    for (const Tensor& t : inputs)
      if (t.impl()->storage->is_external()) return true;
    return false;
  }
  static std::vector<Tensor> read_program_memory(TensorRefs inputs) {
    detail::RunEagerly eager;
    NoGradGuard no_grad;
    std::vector<Tensor> read;
    read.reserve(inputs.size());
    for (const Tensor& t : inputs) read.push_back(t.impl()->storage->is_external() ? t.clone() : t);
    return read;
  }

  // The record this thread's trace keeps for s, or null when s is plain memory.
  Record* own_record(const Storage& s, std::string_view op) const {
    Record* r = static_cast<Record*>(s.pending());
    if (r && r->kind == Record::kWatch) return nullptr;  // plain memory, watched
    if (r) check_usable(*r, op);
    return r;
  }

  // A tensor of a storage with a pending write, at another layout than the
  // write's, needs the write done first.
  bool needs_flush(const Tensor& t, std::string_view op) const {
    const Record* r = own_record(*t.storage(), op);
    return r && r->kind == Record::kWrite && !same_layout(t, r->target);
  }

  // Runs the trace when an input or `out` needs it (needs_flush); whether it did.
  bool flush_if_needed(const OpDef& op, TensorRefs inputs, const Tensor* out) {
    bool needed = out && needs_flush(*out, op.name);
    for (const Tensor& in : inputs) needed = needed || needs_flush(in, op.name);
    if (needed) flush();
    return needed;
  }

  bool is_whole(const Tensor& t, ValueId v) const { return is_whole(*t.impl(), value(v)); }
  static bool is_whole(const TensorImpl& impl, const Value& whole) {
    return impl.offset == 0 && same_dims(impl.shape, whole.shape) &&
           (same_dims(impl.strides, whole.strides) || is_contiguous_layout(impl.shape, impl.strides));
  }

  absl::InlinedVector<ValueId, 4> values_of(const OpDef& op, TensorRefs inputs) {
    absl::InlinedVector<ValueId, 4> ids;
    for (const Tensor& in : inputs) ids.push_back(value_of(in, op.name));
    return ids;
  }

  ValueId value_of(const Tensor& t, std::string_view op) {
    if (const Record* r = own_record(*t.storage(), op)) {
      if (r->kind == Record::kWrite || is_whole(t, r->value)) return r->value;
      NNVM_DCHECK(!unbuilt_);  // predict_ids declines the cursor: the op builds the trace first
      static const OpDef& as_strided = op_named("as_strided");
      const ValueId view =
          trace_.add_node1(as_strided, {r->value}, {dims(t.sizes()), dims(t.strides()), t.storage_offset()});
      cursor_.follow(trace_);
      return view;
    }
    Input& in = input_for(t.impl());
    if (in.value >= 0 && unchanged(*t.impl(), inputs_[in.index], value(in.value))) return in.value;
    return take_input(in, t);
  }

  // Makes the materialised tensor t, whose entry is `in`, a new input of the trace.
  ValueId take_input(Input& in, const Tensor& t) {
    in.value = unbuilt_ ? ValueId(followed_values_++) : trace_.add_input(t);
    in.index = inputs_.size();
    const TensorImpl& impl = *t.impl();
    inputs_.push_back({t, impl.storage.get(), impl.offset, impl.is_view, impl.layout_id, nullptr});
    return in.value;
  }

  // What the trace has made of a materialised tensor: a scan while the trace
  // reads a few, a hash map past that (value -1: nothing yet).
  Input& input_for(const TensorImpl* impl) {
    if (input_of_.empty())
      for (auto& [key, in] : few())
        if (key == impl) return in;
    return new_input(impl);
  }
  // The same for a TensorImpl the recorder has no entry for yet.
  Input& new_input(const TensorImpl* impl) {
    if (input_of_.empty()) {
      if (few_count_ < kFewInputs) {
        few_inputs_[few_count_] = {impl, Input{}};
        return few_inputs_[few_count_++].second;
      }
      for (auto& [key, in] : few()) input_of_.emplace(key, in);
    }
    return input_of_[impl];
  }

  const Input* find_input(const TensorImpl* impl) const {
    if (input_of_.empty()) {
      for (const auto& [key, in] : few())
        if (key == impl) return &in;
      return nullptr;
    }
    auto it = input_of_.find(impl);
    return it == input_of_.end() ? nullptr : &it->second;
  }

  // t is still what the trace took as input `v`.
  static bool unchanged(const TensorImpl& t, const InputRef& input, const Value& v) {
    return t.storage.get() == input.storage && t.offset == input.offset &&
           (t.layout_id == input.layout_id || same_layout(v, t));
  }

  // The tensor to run input `v` with: the tensor itself, or, when the program
  // has re-pointed it since (Module::to, set_data), a handle to what it was.
  static Tensor as_recorded(InputRef& input, const Value& v) {
    if (unchanged(*input.tensor.impl(), input, v)) return std::move(input.tensor);
    // Edited behind the recorder's back (not through set_data): the memory
    // may be gone. An undefined input fails the ops that read it, as any
    // failing op of a trace does, and nothing else.
    if (!input.kept) [[unlikely]]
      return Tensor();
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::move(input.kept);
    impl->shape = v.shape;
    impl->strides = v.strides;
    impl->offset = input.offset;
    impl->dtype = v.dtype;
    impl->device = impl->storage->device();
    impl->is_view = input.is_view;
    return Tensor(std::move(impl));
  }

  // `repeated`: v is the value of the entry followed, its size checked when it was inferred.
  Tensor make_lazy(ValueId v, Device device, std::string_view op, bool repeated) {
    const Value& value = this->value(v);
    const size_t nbytes = repeated ? cursor_.value_bytes(v) : checked_nbytes(value.shape, itemsize(value.dtype), op);
    std::shared_ptr<Storage> storage;
    if (spare_storages_.empty()) {
      storage = std::allocate_shared<Storage>(BlockPool<Storage>(), nbytes, device, Storage::Lazy{});
    } else {
      storage = std::move(spare_storages_.back());
      spare_storages_.pop_back();
      storage->reuse_lazy(nbytes, device);
    }
    Record* record = make_record(Record::kContents, v, *storage);
    owed_.push_back({storage, record});
    Tensor lazy = pooled_tensor(std::move(storage), value.shape, value.strides, 0, value.dtype, device);
    record->made = lazy.impl()->layout_id;
    return lazy;
  }

  // A lazy storage the trace owed its contents, dropped by every tensor
  // before the flush (a temporary of an expression): kept for a later lazy
  // tensor instead of freed, up to kSpareStorages. It never had memory.
  void keep_spare(std::shared_ptr<Storage> storage) {
    storage->set_pending(nullptr);
    if (spare_storages_.size() < kSpareStorages) spare_storages_.push_back(std::move(storage));
  }

  Record* make_record(Record::Kind kind, ValueId v, Storage& owner) {
    Record* r = arena_.make(owner);
    r->kind = kind;
    r->thread = thread_;
    r->value = v;
    r->made = 0;
    return r;
  }

  const std::thread::id thread_ = std::this_thread::get_id();  // the recorder is thread_local
  Trace trace_;
  // While the cursor follows an entry from the trace's first node, the trace
  // is not built: an op the cursor gives its outputs only counts its values,
  // and a flush that repeats a compiled entry whole needs no trace at all.
  bool unbuilt_ = true;
  size_t followed_nodes_ = 0, followed_values_ = 0;
  std::vector<ValueId> outputs_;  // the trace's, at a flush
  RecordArena arena_;  // the records of the trace being recorded
  std::vector<InputRef> inputs_;  // by input position
  static constexpr size_t kFewInputs = 16;
  // A plain array: scanned once or twice per op, where an InlinedVector
  // would test where its elements live at each access.
  std::array<std::pair<const TensorImpl*, Input>, kFewInputs> few_inputs_;
  size_t few_count_ = 0;
  absl::Span<std::pair<const TensorImpl*, Input>> few() { return {few_inputs_.data(), few_count_}; }
  absl::Span<const std::pair<const TensorImpl*, Input>> few() const { return {few_inputs_.data(), few_count_}; }
  absl::flat_hash_map<const TensorImpl*, Input> input_of_;  // once the trace reads more than kFewInputs
  std::vector<Owed> owed_;      // in the order the trace took them on
  static constexpr size_t kSpareStorages = 256;
  std::vector<std::shared_ptr<Storage>> spare_storages_;  // see keep_spare
  TraceCursor cursor_;  // the entries of the last flushes, and the one this trace repeats
  // A flush's buffers, empty between flushes (flushes do not nest).
  std::vector<FlushOutput> binds_;
  std::vector<Tensor> flushed_inputs_;
  FlushBuffers flush_buffers_;
  bool flushing_ = false;
  RecorderStats stats_;
  std::function<void(const Trace&)> observer_;
};

Recorder& recorder() { return thread_state<Recorder>(); }

const detail::TraceHooks kHooks{
    [](const OpDef& op, TensorRefs inputs, const Attrs& attrs, detail::LazyOutputs& outs) {
      recorder().record(op, inputs, attrs, outs);
    },
    [](const OpDef& op, TensorRefs inputs, const Attrs& attrs, const OutputSpec& result,
       const Tensor& out) { recorder().record_into(op, inputs, attrs, result, out); },
    [](Storage& s) { recorder().materialize(s); },
    [] { recorder().flush(); },
    [](const TensorImpl& impl) { recorder().repoint(impl); },
};

NNVM_REGISTER(trace_recorder) { detail::install_trace_hooks(&kHooks); }

}  // namespace

TraceCache& global_trace_cache() {
  static TraceCache* cache = new TraceCache(compile_plan);  // leaked: flushes may run during static destruction
  return *cache;
}

RecorderStats recorder_stats() { return recorder().stats(); }

void set_flush_observer(std::function<void(const Trace&)> f) { recorder().set_observer(std::move(f)); }

namespace {
thread_local FlushCapture* t_capture = nullptr;
}  // namespace

FlushCapture::FlushCapture() {
  NNVM_CHECK(t_capture == nullptr, "FlushCapture", "a region is being captured on this thread already");
  t_capture = this;
}

FlushCapture::~FlushCapture() {
  t_capture = nullptr;
  for (const std::shared_ptr<Storage>& s : watched_) {
    const auto* r = static_cast<const Record*>(s->pending());
    if (r && r->kind == Record::kWatch) s->set_pending(nullptr);
  }
}

FlushCapture* FlushCapture::active() { return t_capture; }

void FlushCapture::watch(const std::shared_ptr<Storage>& s) {
  if (s->pending()) return;  // owed by the trace (lazy, or a pending write), or watched already
  auto r = std::make_unique<Record>();
  r->kind = Record::kWatch;
  r->thread = std::this_thread::get_id();
  s->set_pending(std::move(r));
  watched_.push_back(s);
}

}  // namespace nnvm::trace
