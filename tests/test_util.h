/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers of the fa_cl test suite: reporting, context creation, host f16/bf16 conversion
 * (round to nearest even), seeded random data (never zero), strided tensor images with poisoned
 * gaps, device buffers and the tolerance check (the float64 oracle it checks against is in
 * oracle.h, the bar itself in tolerance.h).
 */
#ifndef FA_CL_TEST_UTIL_H
#define FA_CL_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fa_cl.h"
#include "oracle.h"
#include "tolerance.h"

/* Exit code CTest treats as "skipped" (SKIP_RETURN_CODE): no OpenCL device at all. */
#define TU_EXIT_SKIP 77

/* ---- reporting -------------------------------------------------------------------------------- */

typedef struct tu_tally {
    const char *name;
    int passed, failed;
} tu_tally;

/* Record one check; prints "[PASS] what" or "[FAIL] what". Returns ok. */
int tu_expect(tu_tally *t, int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Print "<name>: N passed, N failed" and return the process exit code (0 only if none failed
 * and at least one check ran; TU_EXIT_SKIP when nothing ran because a forced kernel refused every
 * case by design, tu_refused_by_design). */
int tu_finish(const tu_tally *t);

/* ---- contexts --------------------------------------------------------------------------------- */

/* fa_cl_context_create_default, printing the device once. Returns 0, TU_EXIT_SKIP when there is no
 * OpenCL device or a family's FA_CL_TUNE emulate key asks to emulate kernels the device runs natively, or 1 on
 * another failure (message printed). */
int tu_context(fa_cl_context **out);

/* ---- subsets: one executable per topic, one subset of it per CTest test ----------------------- */

typedef struct tu_subset {
    const char *name;
    /* ctx: the suite's context, or NULL for a suite that opens none; argc/argv: the words after the
     * subset's name (test_leaks plans 1000: 1, {"1000"}). Returns 0 to go on to tu_finish, or the
     * exit code (1 on a failed setup, TU_EXIT_SKIP). */
    int (*run)(fa_cl_context *ctx, int argc, char **argv);
} tu_subset;

#define TU_COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))
#define TU_TIMED 1 /* tu_main flag: print "<name> took 1.2 s" after the subset */

/*
 * The main() of a test executable: runs the subset argv[1] names (subsets[0] without one) with
 * t->name, the suite's, made "suite[subset]"; open (tu_context, a suite's own, or NULL for none)
 * gives it a context, released after. Returns 2 for an unknown subset (the names printed), open's
 * or run's nonzero code, else tu_finish's.
 */
int tu_main(tu_tally *t, int argc, char **argv, const tu_subset *subsets, int count,
            int (*open)(fa_cl_context **ctx), int flags);

/* Kernel sources from dir (FA_CL_KERNEL_DIR, read at context creation) unless the caller named a
 * directory: for the test-only kernels the library does not embed (tests/kernels/), which the build
 * copies beside the library's cl/ files. Call before tu_main. */
void tu_kernel_dir_default(const char *dir);

/* ---- storage types ---------------------------------------------------------------------------- */

/* ggml's q8_0 as a tensor's storage in the tests (K and V): the kernels' type id 3, never a
 * descriptor's dtype (desc.k_type / v_type = FA_CL_STORAGE_Q8_0) */
#define TU_Q8_0 ((fa_cl_dtype)3)

/* q8_0 blocks of n (a multiple of 32) values: encode x into dst (34 bytes per 32: d = max|x| / 127
 * rounded to f16, q_i = round(x_i / d)) and set x to the dequantised d * q_i; the value of element e
 * of an image. Encoding dequantised values again gives the same bytes. */
void tu_q8_encode(float *x, int64_t n, unsigned char *dst);
float tu_q8_load(const unsigned char *img, size_t e);

/* OCP FP8 as a tensor's storage in the tests (K and V; desc.k_type / v_type = FA_CL_STORAGE_E4M3 /
 * _E5M2): the kernels' type ids 4 and 5, a byte an element. The host's own conversions, from the
 * formats' definitions (not the kernels' bit manipulation): the value of a code (ldexp; NaN codes
 * NaN, e5m2's Inf codes Inf), and the code nearest x by exhaustive search over the finite codes, ties
 * to the even code, saturating at the largest finite value, NaN -> NaN, Inf -> Inf (e5m2) or NaN
 * (e4m3). */
#define TU_E4M3 ((fa_cl_dtype)4)
#define TU_E5M2 ((fa_cl_dtype)5)
int tu_is_fp8(fa_cl_dtype t);
double tu_fp8_value(fa_cl_dtype t, unsigned code);
unsigned tu_fp8_nearest(fa_cl_dtype t, float x);

uint16_t tu_f32_to_f16(float f);  /* round to nearest even; overflow -> inf; NaN stays NaN */
float tu_f16_to_f32(uint16_t h);
uint16_t tu_f32_to_bf16(float f); /* round to nearest even; NaN stays NaN */
float tu_bf16_to_f32(uint16_t h);
float tu_round(fa_cl_dtype t, float x); /* x rounded to t and back */
size_t tu_dtype_size(fa_cl_dtype t);
const char *tu_dtype_name(fa_cl_dtype t); /* the library's names: "f32", "f16", "bf16" */

/* Element i of a host image of storage type t. */
float tu_load(fa_cl_dtype t, const void *img, size_t i);
void tu_store(fa_cl_dtype t, void *img, size_t i, float x);
uint32_t tu_load_bits(fa_cl_dtype t, const void *img, size_t i);
void tu_store_bits(fa_cl_dtype t, void *img, size_t i, uint32_t bits);
/* A NaN with a payload no arithmetic produces: fills output buffers before a call. */
uint32_t tu_sentinel_bits(fa_cl_dtype t);
/* A plain quiet NaN: fills the gaps of input buffers, so reading one poisons the result. */
uint32_t tu_nan_bits(fa_cl_dtype t);

/* ---- random numbers --------------------------------------------------------------------------- */

typedef struct tu_rng {
    uint64_t s;
} tu_rng;

void tu_rng_seed(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
double tu_rng_uniform(tu_rng *r); /* [0, 1) */
/* Uniform magnitude in [1/16, 1] with a random sign: never zero, also after rounding to bf16. */
float tu_rng_nonzero(tu_rng *r);

/* ---- strided tensors -------------------------------------------------------------------------- */

/*
 * Layout letters (one per tensor q, k, v, o in a case's layout string):
 *   C  contiguous [B,H,S,D], descriptor strides all 0, offset 0
 *   H  the same layout with explicit strides
 *   S  [B,S,H,D] (FlashAttention's), explicit strides, offset 0
 *   P  [B,H,S,D] padded at every level (D+3, +5, +7) with a nonzero element offset
 *   Q  [B,S,H,D] padded at every level with a nonzero element offset
 *   B  batch stride 0 (every batch reads the same data; inputs only), offset 3
 */
typedef struct tu_tensor {
    fa_cl_dtype dtype;
    char layout;
    int64_t dim[4];         /* B, H, S, D */
    int64_t stride[3];      /* element strides used for indexing (never all zero) */
    int64_t desc_stride[3]; /* what the descriptor gets (all zero for 'C') */
    size_t offset;          /* element offset of the view */
    size_t elems;           /* buffer size in elements: offset + extent (+ slack) */
    unsigned char *img;     /* host image of the whole buffer */
    unsigned char *inview;  /* per element: 1 inside the view */
} tu_tensor;

/* Set up the layout; salt varies the offset between tensors; slack adds elements after the view.
 * Returns 0, or -1 on a bad layout letter or out of memory. */
int tu_tensor_init(tu_tensor *t, char layout, fa_cl_dtype dtype, int64_t B, int64_t H, int64_t S, int64_t D,
                   size_t salt, size_t slack);
void tu_tensor_free(tu_tensor *t);
size_t tu_tensor_index(const tu_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
/* Fill the whole image (view and gaps) with one bit pattern. */
void tu_tensor_fill_bits(tu_tensor *t, uint32_t bits);
/* Write logical [B,H,S,D] values into the view, then read them back into x (so x holds exactly
 * what the buffer holds: the rounded values, the last write where strides alias). */
void tu_tensor_put(tu_tensor *t, float *x);
size_t tu_tensor_bytes(const tu_tensor *t);

/* ---- device buffers --------------------------------------------------------------------------- */

/* clCreateBuffer with flags and (if host != NULL) CL_MEM_COPY_HOST_PTR; NULL on failure (printed). */
cl_mem tu_buffer(fa_cl_context *ctx, cl_mem_flags flags, size_t bytes, const void *host);
int tu_write(fa_cl_context *ctx, cl_mem m, size_t bytes, const void *host); /* blocking; 0 ok */
int tu_read(fa_cl_context *ctx, cl_mem m, size_t bytes, void *host);        /* blocking; 0 ok */

/* A matrix-unit check kernel k(A, B, C, K, N) (tests/kernels/fa_*_check.cl) on 16-bit A (m x kdim)
 * and B (kdim x n), row-major, over global / local work-items: its C (m x n, fp32) read into c and
 * compared exactly with the host's product of af and bf in double (inputs exact in 16 bits, sums
 * exact in fp32). The count of elements that differ, the first in *first (-1: none); -1 on an
 * OpenCL error (printed). */
int tu_gemm16(fa_cl_context *ctx, cl_kernel k, const uint16_t *a, const uint16_t *b, const float *af, const float *bf,
              int m, int kdim, int n, size_t global, size_t local, float *c, int *first);

/* ---- problems: one attention call with its data, reference and checks ------------------------- */

/* "B=2 H=4/2 S=113x203 D=64 f16 causal win=(16,0) layout=SPCC scale=dflt lse" */
void tu_case_format(const tu_case *c, char *buf, size_t size);
typedef struct tu_problem {
    tu_case c;
    int64_t dv;            /* v's and o's row width (desc.head_dim_v; c.D unless tu_problem_init_dv says) */
    char layout[5];
    fa_cl_attention_desc desc;
    tu_tensor t[4];        /* q, k, v, o */
    float *x[3];           /* logical q, k, v as stored (rounded) */
    double *ref_o, *ref_lse;
    size_t lse_elems;      /* B * Hq * Sq */
    size_t lse_slack;      /* extra floats after the LSE, must stay untouched */
    float *lse_img;        /* host image of the LSE buffer (lse_elems + lse_slack) */
    cl_mem mem[4], lse_mem;
    int tc_compute;        /* 1 + the type a tensor-core kernel computes this problem in where q or o is wider
                              (tests set it: tolerance.h fa_cl_tolerance_mixed_dtype); 0: none */
    int bar;               /* 1 + the type whose bar o is held to (tu_problem_set_bar); 0: o's own */
    int lse_bar;           /* 1 + the type q was rounded to, whose bar the LSE is held to (tu_problem_set_bar;
                              tolerance.h fa_cl_tolerance_lse_rounded_q_bound); 0: the LSE's own */
    const char *kernel;    /* the plan's kernel family (tu_run_and_check sets it; static storage) */
} tu_problem;

/* Build the tensors (random data from seed, input gaps NaN), the float64 reference (unless
 * want_ref is 0) and the device buffers (inputs CL_MEM_READ_ONLY, o READ_WRITE, lse WRITE_ONLY).
 * Returns 0, or -1 (printed). */
int tu_problem_init(tu_problem *p, fa_cl_context *ctx, const tu_case *c, uint64_t seed, int want_ref);
/* The same with each tensor's storage (q, k, v, o; TU_Q8_0 for k and v, layout 'C' or 'H'): c->dtype
 * is the descriptor's dtype, tensors of another type get desc.*_type; o's type sets the accuracy
 * bar (tu_problem_check). */
int tu_problem_init_types(tu_problem *p, fa_cl_context *ctx, const tu_case *c, const fa_cl_dtype types[4],
                          uint64_t seed, int want_ref);
/* The same with v and o rows dv wide (desc.head_dim_v = dv; 0: c->D, head_dim_v left 0). */
int tu_problem_init_dv(tu_problem *p, fa_cl_context *ctx, const tu_case *c, const fa_cl_dtype types[4], int64_t dv,
                       uint64_t seed, int want_ref);
void tu_problem_free(tu_problem *p);
/* Fill the o and lse buffers (every element, gaps and slack included) with the sentinel. */
int tu_problem_poison(tu_problem *p, fa_cl_context *ctx);
/* Read o and lse back into the host images. */
int tu_problem_read(tu_problem *p, fa_cl_context *ctx);
/* The output in the host image as logical float64 [B,Hq,Sq,dv] (and the LSE image as float64). */
void tu_problem_output(const tu_problem *p, double *o, double *lse);

typedef struct tu_result {
    double max_err;       /* max |got - ref| over the output */
    double max_ratio;     /* max |got - ref| / bound: <= 1 passes */
    double bound_at_max;  /* the bound where the ratio peaked */
    double lse_max_err;   /* max |got - ref| over finite LSE values */
    double lse_max_ratio;
    size_t bad, unwritten, clobbered;             /* o: out of tolerance, sentinel left, gap written */
    size_t masked_rows, masked_bad;               /* rows that see no key; of those not exactly 0 */
    size_t lse_bad, lse_unwritten, lse_clobbered; /* same for lse */
    int ok;
    char first[256];                              /* the first failure, for the log */
} tu_result;

/* Compare the host images against ref_o / ref_lse (logical float64; ref_lse -inf marks a row that
 * sees no key). Checks every element inside the o view was written and every one outside is the
 * sentinel; the same for lse when the case has one. */
void tu_problem_check(const tu_problem *p, const double *ref_o, const double *ref_lse, tu_result *r);
/* One line: "max|err| 1.2e-05 (bound 1.1e-04, ratio 0.11) lse 3e-07 ..." */
void tu_result_format(const tu_result *r, const tu_problem *p, char *buf, size_t size);

/* Run p's call with args a — through fa_cl_reference_run (reference) or a plan of the library's
 * choosing (a forced kernel that refuses the case, "takes no" / "takes one storage type" / "not
 * verified", is logged and not counted) — read the results back and check them against ref_o / ref_lse:
 * one tu_expect named `name` with the plan's kernel and tiles. */
void tu_run_and_check(tu_tally *t, fa_cl_context *ctx, tu_problem *p, const fa_cl_forward_args *a, const double *ref_o,
                      const double *ref_lse, const char *name, int reference);

/* A plan creation that a forced kernel (FA_CL_KERNEL_VARIANT) refuses by design (UNSUPPORTED:
 * "takes no", "takes one storage type", "not verified"): logged as skipped, returns 1; else 0. */
int tu_refused_by_design(fa_cl_context *ctx, fa_cl_status st, const char *name);

/* TU_EXPECT_KERNEL="f16:nvidia-mma,bf16:nvidia-mma,f32:nvidia-tf32x3" (CTest's tensor-core runs):
 * the kernel a plan for storage type dtype must have chosen (none listed for it: any). 1 where
 * `kernel` is as expected; else a failed tu_expect naming the case, so that a fallback fails. */
int tu_kernel_as_expected(tu_tally *t, fa_cl_dtype dtype, const char *kernel, const char *name);

/* The value FA_CL_TUNE gives key (any family's, the first item of that name) in buf, or NULL. */
const char *tu_tune(const char *key, char *buf, size_t size);

/* 0 where the planner walks the NVIDIA tensor-core forward family nvidia-mma on ctx (an NVIDIA GPU of
 * compute capability 8.0 or later, or FA_CL_TUNE nvidia-mma:emulate=1); else 1, a "SKIP: " line
 * saying why printed. */
int tu_tensor_core_skip(fa_cl_context *ctx);
/* Whether kernel (fa_cl_plan_info.kernel) is a tensor-core forward family: nvidia-mma, nvidia-wgmma. */
int tu_tensor_core_kernel(const char *kernel);
/* p->bar and p->lse_bar for a run on kernel (p->tc_compute's bars where kernel is a tensor-core family). */
void tu_problem_set_bar(tu_problem *p, const char *kernel);
/* The context's device is an NVIDIA GPU (tu_nvidia), of compute capability 9.0 (tu_hopper: wgmma, TMA). */
int tu_nvidia(fa_cl_context *ctx);
int tu_hopper(fa_cl_context *ctx);

/* Milliseconds since an arbitrary start. */
double tu_now_ms(void);

#endif /* FA_CL_TEST_UTIL_H */
