// The RNN, GRU and LSTM kernels: the oneDNN path where it computes the node
// exactly, the plain path for everything else (rnn.h says which is which).
#include "drivers/cpu/rnn.h"
#include "drivers/cpu/kernel_factories.h"

namespace hetero::cpu {

namespace rnn {

namespace {

class RnnKernel final : public Kernel {
 public:
  RnnKernel(const KernelBuild& b, Path path) : node_(b.node), spec_(Spec::parse(b)), path_(path) {
    if (path != Path::Plain) dnnl_ = make_dnnl_rnn(spec_, b);
    if (path == Path::Dnnl && !dnnl_)
      b.unsupported("oneDNN's RNN primitives cannot run this node (clip, input_forget or activations)");
  }

  void run(KernelRun& r) override {
    const Args args = Args::check(spec_, r);
    const bool empty = args.steps == 0 || args.batch == 0 || args.hidden == 0 || args.input_size == 0;
    // Per-batch lengths are the plain path's alone; so are empty shapes.
    if (dnnl_ && !empty && args.full_length() && dnnl_->run(args, r)) return;
    if (path_ == Path::Dnnl)
      fail(HETERO_NOT_SUPPORTED, node_.describe() + ": this run needs the plain path (sequence_lens or its shape)");
    run_plain(spec_, args, r);
  }

 private:
  const core::Node& node_;
  const Spec spec_;
  const Path path_;
  std::unique_ptr<DnnlRnn> dnnl_;
};

}  // namespace

std::unique_ptr<Kernel> make_kernel(const KernelBuild& b, Path path) { return std::make_unique<RnnKernel>(b, path); }

}  // namespace rnn

// Opset 1's LSTM/GRU/RNN differ only by output_sequence, which says whether
// Y is produced; later versions add layout (14) and types (22): one kernel
// reads them all.
std::unique_ptr<Kernel> make_recurrent(const KernelBuild& b) { return rnn::make_kernel(b); }

}  // namespace hetero::cpu
