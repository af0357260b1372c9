// What a kernel derives from its node's input shapes (and from small integer
// inputs: axes, starts, a target shape), kept in the node's memo
// (KernelRun::memo()) and reused while those stay the same. Nearly every
// node sees the same shapes run after run, and deriving them again (output
// shapes, a broadcast's loops, a slice's strides) took most of a small
// model's allocations per inference.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "core/tensor.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu {

// The node's memo as a `Memo`, made empty at the node's first run.
template <typename Memo>
Memo& memo_of(KernelRun& r) {
  static_assert(std::is_final_v<Memo>, "a memo type is compared exactly");
  std::unique_ptr<KernelMemo>& slot = r.memo();
  if (slot && typeid(*slot) == typeid(Memo)) return static_cast<Memo&>(*slot);
  slot = std::make_unique<Memo>();
  return static_cast<Memo&>(*slot);
}

// The inputs a memo was derived from: the shapes of some, the integer values
// of others. A kernel asks same(); when false it derives its values again and
// then calls commit(), so that a run that failed half-way leaves the memo
// unused. Neither allocates once the key has grown to its size.
class MemoKey {
 public:
  // Whether the inputs of `r` at `shapes` (their shapes) and at `values`
  // (their contents, when int64 or int32) are those of the last commit().
  bool same(const KernelRun& r, std::initializer_list<size_t> shapes, std::initializer_list<size_t> values) {
    next_.clear();
    for (size_t i : shapes) {
      const core::Tensor* t = r.input(i);
      next_.push_back(t ? static_cast<int64_t>(t->rank()) : -1);
      if (t) next_.insert(next_.end(), t->shape().begin(), t->shape().end());
    }
    for (size_t i : values) {
      const core::Tensor* t = r.input(i);
      const bool integer = t && (t->dtype() == core::DType::I64 || t->dtype() == core::DType::I32);
      // Absent, and of another type (which the kernel refuses), differ from
      // every list of values.
      next_.push_back(!t ? -1 : integer ? static_cast<int64_t>(t->numel()) : -2);
      if (integer)
        for (size_t k = 0; k < t->numel(); ++k) next_.push_back(t->as_int64(k));
    }
    // A miss leaves the memo unused until commit(): the kernel may fail
    // half-way through deriving its values again.
    committed_ = committed_ && next_ == key_;
    return committed_;
  }
  // The inputs the last same() saw are those the memo now holds values for.
  void commit() {
    key_.swap(next_);
    committed_ = true;
  }

 private:
  std::vector<int64_t> key_, next_;
  bool committed_ = false;
};

}  // namespace hetero::cpu
