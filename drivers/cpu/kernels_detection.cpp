// NonMaxSuppression: per batch and class, the boxes above the score
// threshold in falling score order, each kept unless it overlaps a kept box
// by more than the IoU threshold (at most max_output_boxes_per_class kept).
#include <algorithm>
#include <cstring>
#include <vector>

#include "drivers/cpu/kernel.h"
#include "drivers/cpu/kernel_factories.h"
#include "drivers/cpu/layout_util.h"

namespace hetero::cpu {

namespace {

using core::DType;
using core::Tensor;

struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

float iou(const Box& a, const Box& b) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return 0;
  const float inter = ih * iw;
  const float uni = a.area() + b.area() - inter;
  return uni > 0 ? inter / uni : 0;
}

}  // namespace

std::unique_ptr<Kernel> make_non_max_suppression(const KernelBuild& b) {
  const bool center = b.node.attr_int("center_point_box", 0) != 0;
  return make_fn_kernel([center](KernelRun& r) {
    const Tensor& boxes = required_input(r, 0);
    const Tensor& scores = required_input(r, 1);
    if (boxes.dtype() != DType::F32 || scores.dtype() != DType::F32)
      fail(HETERO_NOT_SUPPORTED, r.node().describe() + ": boxes and scores must be float32");
    if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 || scores.dim(0) != boxes.dim(0) ||
        scores.dim(2) != boxes.dim(1))
      bad_input(r.node(), "boxes " + core::shape_to_string(boxes.shape()) + " and scores " +
                              core::shape_to_string(scores.shape()) + " do not fit [B,N,4] and [B,C,N]");
    const Tensor* max_t = r.input(2);
    const int64_t max_out = max_t && max_t->numel() ? max_t->as_int64(0) : 0;
    const Tensor* iou_t = r.input(3);
    const double iou_thr = iou_t && iou_t->numel() ? iou_t->as_double(0) : 0.0;
    const Tensor* score_t = r.input(4);
    const bool has_score_thr = score_t && score_t->numel();
    const double score_thr = has_score_thr ? score_t->as_double(0) : 0.0;
    const int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
    std::vector<int64_t> selected;  // triples
    std::vector<Box> bx(static_cast<size_t>(n));
    for (int64_t bi = 0; bi < batches && max_out > 0; ++bi) {
      const float* p = boxes.data<float>() + bi * n * 4;
      for (int64_t i = 0; i < n; ++i) {
        const float* q = p + i * 4;
        Box& c = bx[static_cast<size_t>(i)];
        if (center) {
          c = {q[1] - q[3] / 2, q[0] - q[2] / 2, q[1] + q[3] / 2, q[0] + q[2] / 2};
        } else {
          // Corners may come in either order.
          c = {std::min(q[0], q[2]), std::min(q[1], q[3]), std::max(q[0], q[2]), std::max(q[1], q[3])};
        }
      }
      for (int64_t ci = 0; ci < classes; ++ci) {
        const float* s = scores.data<float>() + (bi * classes + ci) * n;
        std::vector<int64_t> cand;
        for (int64_t i = 0; i < n; ++i)
          if (!has_score_thr || s[i] > score_thr) cand.push_back(i);
        std::stable_sort(cand.begin(), cand.end(), [s](int64_t a, int64_t c) { return total_less(s[c], s[a]); });
        std::vector<int64_t> kept;
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t j : kept)
            if (iou(bx[static_cast<size_t>(i)], bx[static_cast<size_t>(j)]) > iou_thr) {
              keep = false;
              break;
            }
          if (keep) kept.push_back(i);
        }
        for (int64_t i : kept) selected.insert(selected.end(), {bi, ci, i});
      }
    }
    Tensor& y = r.output(0, DType::I64, {static_cast<int64_t>(selected.size() / 3), 3});
    if (!selected.empty()) std::memcpy(y.raw(), selected.data(), selected.size() * sizeof(int64_t));
  });
}

}  // namespace hetero::cpu
