#!/usr/bin/env python3
"""Builds one SPIR-V module from an OpenCL C kernel template of drivers/gpu/kernels/.

usage: build_spirv.py CLANG LLVM_SPIRV SPIRV_VAL COMMON.cl KERNEL.cl OUT.spv

The kernel sources are templates: the kernel selector (drivers/gpu/kernel_selector.cpp)
writes #defines for each node (shapes, attributes and the fused op expressions as
compile-time constants) before them. No build-time module can hold every instantiation,
so the build compiles one reference instantiation per template (the defines below: the
same macros the selector writes, with representative values) exactly as the driver
compiles a node's instantiation at run time (clang -target spir64 -> llvm-spirv), and
validates it with spirv-val: a template that does not compile, or compiles to invalid
SPIR-V, fails the build.
"""
import os
import subprocess
import sys
import tempfile

POST = {"POST_OPS(v, o)": "do { v = fmax((v), 0.0f); v = ((v) + p0[(o)]); } while (0)",
        "POST_ARGS": ", __global const float* p0"}
# The same post-ops on a vector of VW consecutive outputs (tiled templates).
VPOST = {"VPOST_OPS(v, o)": "do { v = fmax((v), 0.0f); v = ((v) + VLOADF(VW)(0, p0 + (o))); } while (0)"}
IDX = "{ size_t t_ = o; size_t i_; i_ = t_ % 8UL; t_ /= 8UL; ia += i_ * 1UL; ib += i_ * 1UL; (void)t_; (void)i_; }"

# Reference instantiation of each template (kernel file name -> defines); the
# copies (transpose, concat, gather) and where take any device element type T.
VARIANTS = {
    "unary": {"TOTAL": "256UL", "TX": "float", "TY": "float", "UNARY_OP(v)": "(1.0f / (1.0f + exp(-(v))))", **POST},
    "binary": {"TOTAL": "256UL", "TA": "float", "TY": "float", "BINARY_OP(a, b)": "act_pow((a), (b))",
               "INDEX_AB": IDX, **POST},
    # A comparison of int64 operands into bool, as Where reads it.
    "where": {"TOTAL": "256UL", "T": "long",
              "INDEX_CAB": "{ size_t t_ = o; size_t i_; i_ = t_ % 8UL; t_ /= 8UL; ic += i_ * 1UL; ia += i_ * 1UL; "
              "ib += t_ * 1UL; (void)t_; (void)i_; }"},
    "conv": {"TOTAL": "1024UL", "OC": "4", "OH": "16", "OW": "16", "IC": "3", "IH": "16", "IW": "16",
             "OCG": "4", "ICG": "3", "KH": "3", "KW": "3", "SH": "1", "SW": "1", "DH": "1", "DW": "1",
             "PH": "1", "PW": "1", "BIAS_ARG": ", __global const float* bias", "BIAS_VALUE": "bias[oc]", **POST},
    # Stride 2 with VW 8: the double-width load and its even lanes.
    "conv_spatial": {"NB": "1", "OC": "8", "OH": "8", "OW": "8", "IC": "6", "IH": "16", "IW": "16",
                     "OCG": "4", "ICG": "3", "KH": "3", "KW": "3", "SH": "2", "SW": "2", "DH": "1", "DW": "1",
                     "PH": "1", "PW": "1", "VW": "8", "VW2": "16", "OCB": "4", "PV": "2",
                     "BIAS_ARG": ", __global const float* bias", "BIAS_VALUE": "bias[oc]", **POST, **VPOST},
    "conv_channel": {"NB": "1", "OC": "12", "OH": "16", "OW": "16", "IC": "3", "IH": "16", "IW": "16",
                     "OCG": "12", "ICG": "3", "KH": "3", "KW": "3", "SH": "1", "SW": "1", "DH": "1", "DW": "1",
                     "PH": "1", "PW": "1", "VW": "4", "VW2": "8", "OCB": "2", "PB": "4",
                     "BIAS_ARG": ", __global const float* bias", "BIAS_VALUE": "bias[oc]", **POST},
    "gemm": {"M": "10", "N": "40", "K": "16", "BATCH": "2", "VW": "8", "VW2": "16", "MB": "4", "NV": "2",
             "INDEX_BATCH": "ib = bt;", "BIAS_ARG": ", __global const float* bias", "BIAS_VALUE": "bias[m]",
             "B_SCALE_ARG": ", __global const float* bscale", "B_SCALE(k)": "bscale[(size_t)bt * K + (k)]", **POST,
             **VPOST},
    "matmul": {"TOTAL": "64UL", "M": "8", "N": "8", "K": "16", "B_TRANS": "1",
               "INDEX_BATCH": "{ size_t t_ = bt; (void)t_; }", **POST},
    "pool": {"TOTAL": "256UL", "OH": "8", "OW": "8", "IH": "16", "IW": "16", "KH": "2", "KW": "2",
             "SH": "2", "SW": "2", "DH": "1", "DW": "1", "PH": "0", "PW": "0", "PH_END": "0", "PW_END": "0",
             "POOL_MAX": "1", "COUNT_PAD": "0", **POST},
    "softmax": {"TOTAL": "64UL", "OUTER": "4", "AXIS": "16", "INNER": "1"},
    # 24 channels of 16 positions, 6 hidden, one bias.
    "squeeze_excite": {"C": "24", "CH": "6", "C2": "24", "HW": "16", "LWS": "32",
                       "HIDDEN_OPS(v)": "do { v = fmax((v), 0.0f); } while (0)",
                       "B1_ARG": ", __global const float* b1", "B1_VALUE(i)": "b1[i]", "B2_ARG": "",
                       "B2_VALUE(i)": "0.0f", **POST},
    "reduce": {"TOTAL": "4UL", "RCOUNT": "16UL", "RED_INIT": "0.0f", "RED_OP(a, v)": "((a) + (v))",
               "RED_FINAL(a)": "((a) / (float)16)",
               "INDEX_KEEP": "{ size_t t_ = o; base += t_ * 16UL; }",
               "INDEX_RED": "{ size_t t_ = r; off += t_ * 1UL; }", **POST},
    "transpose": {"TOTAL": "64UL", "T": "float", **POST, "INDEX_IN": "{ size_t t_ = o; size_t i_; i_ = t_ % 8UL; t_ /= 8UL; "
                  "ix += i_ * 8UL; ix += t_ * 1UL; }"},
    "concat": {"TOTAL": "64UL", "T": "uchar", "A_IN": "4", "A_OUT": "8", "INNER": "16", "OFFSET": "4"},
    # Stride 2, a kernel of 3: outputs that no input reaches along an axis.
    "conv_transpose": {"TOTAL": "2048UL", "OC": "8", "OH": "16", "OW": "16", "IC": "4", "IH": "8", "IW": "8",
                       "OCG": "4", "ICG": "2", "KH": "3", "KW": "3", "SH": "2", "SW": "2", "DH": "1", "DW": "1",
                       "PH": "1", "PW": "1", "BIAS_ARG": ", __global const float* bias", "BIAS_VALUE": "bias[oc]",
                       **POST},
    # Constant padding of one axis of [4, 8] by 2 and 1: [4, 11].
    "pad": {"TOTAL": "44UL", "PAD_VALUE": "0.5f",
            "PAD_INDEX": "{ size_t t_ = o; long c_; c_ = (long)(t_ % 11UL) - 2; t_ /= 11UL; "
            "if (c_ < 0 || c_ >= 8) inside = 0; ix += (size_t)c_ * 1UL; ix += t_ * 8UL; }"},
    "gather": {"TOTAL": "24UL", "T": "float", "AXIS": "8", "NIDX": "3", "INNER": "4"},
    # Bidirectional, with bias, initial states and peepholes.
    "lstm": {"SEQ": "3", "NDIR": "2", "BATCH": "2", "HID": "8", "INP": "5", "REVERSE(d)": "((d) == 1)",
             "BIAS_ARG": ", __global const float* bias", "BIAS(d, r)": "(bias[(d) * 64 + (r)] + bias[(d) * 64 + 32 + (r)])",
             "H0_ARG": ", __global const float* h0", "H0(d, b, j)": "h0[((d) * 2 + (b)) * 8 + (j)]",
             "C0_ARG": ", __global const float* c0", "C0(d, b, j)": "c0[((d) * 2 + (b)) * 8 + (j)]",
             "PEEP_ARG": ", __global const float* peep", "PEEP(d, g, j)": "peep[(d) * 24 + (g) * 8 + (j)]"},
    # Bilinear along the last two axes of [2, 8, 8] -> [2, 16, 16].
    "resize": {"TOTAL": "512UL",
               "RESIZE_INDEX": "size_t t_ = o; size_t i_; i_ = t_ % 16UL; t_ /= 16UL; "
               "const size_t lo0 = (size_t)tab[0UL + 3 * i_ + 0] * 1UL, hi0 = (size_t)tab[0UL + 3 * i_ + 1] * 1UL; "
               "const float w0 = tab[0UL + 3 * i_ + 2]; i_ = t_ % 16UL; t_ /= 16UL; "
               "const size_t lo1 = (size_t)tab[48UL + 3 * i_ + 0] * 8UL, hi1 = (size_t)tab[48UL + 3 * i_ + 1] * 8UL; "
               "const float w1 = tab[48UL + 3 * i_ + 2]; i_ = t_ % 2UL; t_ /= 2UL; base += i_ * 64UL; (void)t_;",
               "RESIZE_VALUE": "(1.0f - w0) * (1.0f - w1) * x[base + lo0 + lo1] + w0 * (1.0f - w1) * x[base + hi0 + lo1]"
               " + (1.0f - w0) * w1 * x[base + lo0 + hi1] + w0 * w1 * x[base + hi0 + hi1]", **POST},
}

# The options the OpenCL driver builds with (drivers/gpu/kernels_cache.cpp) and
# the SPIR-V target; the Level Zero driver uses the same at run time
# (drivers/level_zero/spirv_compiler.cpp). Unoptimised LLVM IR: clang-15 -O1/-O2
# followed by llvm-spirv-15 gives invalid SPIR-V for conv.cl (a use laid out
# before its OpPhi, spirv-val: "ID has not been defined"); the device compiler
# optimises the module when zeModuleCreate builds it.
CLANG_ARGS = ["-x", "cl", "-cl-std=CL1.2", "-target", "spir64", "-O0", "-Xclang", "-disable-O0-optnone", "-emit-llvm", "-c",
              "-Xclang", "-finclude-default-header"]


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("build_spirv.py: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stdout))


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    clang, llvm_spirv, spirv_val, common, kernel, out = sys.argv[1:]
    name = os.path.splitext(os.path.basename(kernel))[0]
    if name not in VARIANTS:
        sys.exit("build_spirv.py: no reference instantiation for kernels/%s.cl; add one to VARIANTS" % name)
    text = ""
    with open(common, encoding="utf-8") as f:
        text += f.read() + "\n"
    text += "#define KERNEL_NAME k_%s\n" % name
    for k, v in VARIANTS[name].items():
        text += "#define %s %s\n" % (k, v)
    with open(kernel, encoding="utf-8") as f:
        text += f.read()
    with tempfile.TemporaryDirectory() as tmp:
        src, bc = os.path.join(tmp, name + ".cl"), os.path.join(tmp, name + ".bc")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        run([clang] + CLANG_ARGS + ["-o", bc, src])
        run([llvm_spirv, bc, "-o", out + ".tmp"])
        run([spirv_val, out + ".tmp"])
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
