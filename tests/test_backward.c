/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The backward pass (include/fa_cl.h "Backward") against the float64 oracle
 * (tu_attention_backward_f64, itself checked against finite differences by test_backward_oracle).
 *
 * Accuracy in FlashAttention's style: for each of dq, dk, dv, the largest error of fa_cl against
 * float64 must be at most K_STORAGE times the largest error of the same computation done in the
 * storage precision (every product S, P, O, dV, dP, dS, dQ, dK rounded to the dtype, as an unfused
 * implementation in that dtype gives; FlashAttention's tests take 2; K_TF32X3, 16, for the f32
 * tensor-core family, whose 3xTF32 products are fp32-like, not fp32), plus a floor of
 * 1e-6 + 1e-5 max|ref| for the fp32 accumulations of f32 problems, where the storage-precision
 * error is itself fp32 rounding. Every element of the gradients' views must be written, and
 * nothing between strided rows.
 *
 * Subsets:
 *   shapes       tails, causal, windows, GQA/MQA, head dims 1 .. 512, every layout, sub-buffer
 *                offsets, gradients in layouts of their own; the one-shot call and a plan agree bitwise
 *   reference    fa_cl_reference_backward on the same cases
 *   determinism  100 runs bitwise equal
 *   invalid      bad input: a status, a message naming the problem, outputs untouched
 *   tiny N       case N of a tiny set, one per process (oclgrind)
 *   mma [f32]    small cases for the tensor-core backward (emulated here, native on NVIDIA GPUs), each
 *                checked to run on the family the planner must give it (f32: nvidia-tf32x3-backward,
 *                which the emulation plans with nvidia-tf32x3-backward:enabled=1); "f32": those cases alone
 *   varlen       packed variable-length batches (cu_seqlens) and per-sequence key counts, each
 *                sequence against the oracle on its own rows; rows no sequence owns never written
 *   mods [N|N-M] the score modifiers and masks (softcap, ALiBi, sinks and their gradient, masks of
 *                every type, broadcast), alone and together, against tu_attention_backward_f64_mods
 *                within tests/tolerance.h's gradient bar, each on the family expected_family names
 *                (the tensor cores where they run, emulated too), and dq and dsink bitwise equal over
 *                20 runs; N: case N alone (oclgrind); N-M: cases N .. M
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/nvidia_mma_backward.h" /* the head_dims the tensor-core backward takes */
#include "oracle.h"
#include "plan/plan.h" /* the context's limits, the device's compute capability (the wgmma subset) */
#include "test_util.h"

#define K_STORAGE 2.0
/* nvidia-tf32x3-backward (f32 on tensor cores) is fp32-like, not fp32: each product is 3xTF32
 * (both parts rounded to TF32's 11 bits, the small x small term dropped, about 2^-21 relative) and
 * P comes from ex2.approx (2 ulp), errors that do not average out as fp32's rounding does: on the
 * H200 its error reached 9.3 x the storage-precision one (S = 100 x 1, where every P is 1) */
#define K_TF32X3 16.0

/* the factor for the kernel that ran (NULL: not known, the f32 bar's) */
static double k_storage(const char *kernel)
{
    return kernel && strcmp(kernel, "nvidia-tf32x3-backward") == 0 ? K_TF32X3 : K_STORAGE;
}

static tu_tally backward_tally = {"backward", 0, 0};
/* the kernel every plan of a subset must be (the wgmma subset on Hopper); NULL: any */
static const char *expect_kernel;

/* The mma, tiny and varlen subsets check which family ran (a case the planner sent to the portable
 * kernel would pass its accuracy checks without testing the tensor-core one). */
static int check_family;

/* The family a case must get: the tensor cores wherever they run (natively, or emulated with
 * emulate=1) and take the case -- f32 too, unless nvidia-tf32x3-backward:enabled=0 -- else portable-backward.
 * (Under emulation f32 needs its enabled=1: without it this says nvidia-tf32x3-backward and the
 * planner portable-backward, and the case fails, as it should: it would not test the kernel.) */
static const char *expected_family(fa_cl_context *ctx, fa_cl_dtype dtype, int64_t head_dim)
{
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    const fa_cl__kernel_family *tf32 = fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_TF32_BACKWARD);
    char why[300];
    if (!fa_cl__family_available(&lim, fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_MMA_BACKWARD), why, sizeof why) ||
        head_dim > FA_CL_MMA_BACKWARD_MAX_DIM ||
        /* a forced tile those families cannot take (FA_CL_TUNE tile: B_r = B_c, a multiple of 16 up to 128) */
        (lim.forced_q > 0 && (lim.forced_q != lim.forced_kv || lim.forced_q % 16 || lim.forced_q > 128)) ||
        (dtype == FA_CL_F32 && fa_cl__tune_given(&lim, tf32, 0) && !fa_cl__tune_value(&lim, tf32, 0)))
        return "portable-backward";
    return dtype == FA_CL_F32 ? "nvidia-tf32x3-backward" : "nvidia-mma-backward";
}

/* got is the family want names, or, on Hopper where nvidia-mma-backward is wanted, the wgmma one
 * (which takes the cases whose rows allow it: the wgmma subset requires it where it must) */
static int family_matches(fa_cl_context *ctx, const char *want, const char *got)
{
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    if (!got)
        return 0;
    char why[300];
    const int wgmma =
        fa_cl__family_available(&lim, fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD), why, sizeof why);
    return strcmp(got, want) == 0 ||
           (wgmma && strcmp(want, "nvidia-mma-backward") == 0 && strcmp(got, "nvidia-wgmma-backward") == 0);
}

typedef struct bw_case {
    tu_case c;          /* layout: q, k, v, o; c.lse is always on (the backward needs it) */
    const char *grads;  /* layouts of dout, dq, dk, dv; NULL: dout like o and the gradients' strides left 0
                           (the library then takes q's, k's, v's) */
} bw_case;

/* ---- the same computation in the storage precision ------------------------------------------ */

static double rnd(fa_cl_dtype t, double x) { return (double)tu_round(t, (float)x); }

/* The backward with every intermediate product rounded to t: what an unfused implementation in
 * that dtype computes (its GEMMs accumulate in fp32 and round their outputs). Logical layouts. */
static void backward_storage(const tu_case *c, fa_cl_dtype t, const float *q, const float *k, const float *v,
                             const float *dout, double *dq, double *dk, double *dv)
{
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, Sq = c->Sq, Sk = c->Sk, D = c->D, G = Hq / Hkv;
    const double scale = tu_case_scale(c);
    memset(dq, 0, sizeof *dq * (size_t)(B * Hq * Sq * D));
    memset(dk, 0, sizeof *dk * (size_t)(B * Hkv * Sk * D));
    memset(dv, 0, sizeof *dv * (size_t)(B * Hkv * Sk * D));
    double *p = (double *)malloc(sizeof *p * (size_t)Sk), *ds = (double *)malloc(sizeof *ds * (size_t)Sk);
    double *o = (double *)malloc(sizeof *o * (size_t)D);
    double *gk = (double *)calloc((size_t)(B * Hkv * Sk * D), sizeof *gk);
    double *gv = (double *)calloc((size_t)(B * Hkv * Sk * D), sizeof *gv);
    if (!p || !ds || !o || !gk || !gv)
        goto done;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const int64_t hk = h / G;
            const float *Q = q + (size_t)((b * Hq + h) * Sq * D), *dO = dout + (size_t)((b * Hq + h) * Sq * D);
            const float *K = k + (size_t)((b * Hkv + hk) * Sk * D), *V = v + (size_t)((b * Hkv + hk) * Sk * D);
            for (int64_t i = 0; i < Sq; i++) {
                const int64_t diag = i + Sk - Sq;
                double m = -INFINITY;
                for (int64_t j = 0; j < Sk; j++) {
                    const int vis = (!c->causal || j <= diag) && (c->wl < 0 || j >= diag - c->wl) &&
                                    (c->wr < 0 || j <= diag + c->wr);
                    double s = 0;
                    for (int64_t e = 0; e < D; e++)
                        s += (double)Q[i * D + e] * K[j * D + e];
                    p[j] = vis ? rnd(t, s) * scale : -INFINITY;
                    m = p[j] > m ? p[j] : m;
                }
                if (m == -INFINITY)
                    continue; /* the row sees no key */
                double l = 0;
                for (int64_t j = 0; j < Sk; j++)
                    l += p[j] = p[j] == -INFINITY ? 0.0 : exp(p[j] - m);
                for (int64_t j = 0; j < Sk; j++)
                    p[j] = rnd(t, p[j] / l);
                double dd = 0;
                for (int64_t e = 0; e < D; e++) {
                    double x = 0;
                    for (int64_t j = 0; j < Sk; j++)
                        x += p[j] * V[j * D + e];
                    o[e] = rnd(t, x);
                    dd += o[e] * dO[i * D + e];
                }
                for (int64_t j = 0; j < Sk; j++) {
                    double x = 0;
                    for (int64_t e = 0; e < D; e++)
                        x += (double)dO[i * D + e] * V[j * D + e];
                    ds[j] = rnd(t, p[j] * (rnd(t, x) - dd));
                }
                for (int64_t e = 0; e < D; e++) {
                    double x = 0;
                    for (int64_t j = 0; j < Sk; j++)
                        x += ds[j] * K[j * D + e];
                    dq[(size_t)(((b * Hq + h) * Sq + i) * D + e)] = rnd(t, x * scale);
                }
                for (int64_t j = 0; j < Sk; j++)
                    for (int64_t e = 0; e < D; e++) {
                        const size_t at = (size_t)(((b * Hkv + hk) * Sk + j) * D + e);
                        gv[at] += p[j] * dO[i * D + e];
                        gk[at] += ds[j] * Q[i * D + e] * scale;
                    }
            }
        }
    for (size_t e = 0; e < (size_t)(B * Hkv * Sk * D); e++)
        dk[e] = rnd(t, gk[e]), dv[e] = rnd(t, gv[e]);
done:
    free(p), free(ds), free(o), free(gk), free(gv);
}

/* ---- one case --------------------------------------------------------------------------------- */

typedef struct bw_run {
    tu_problem p;
    tu_tensor g[4];   /* dout, dq, dk, dv */
    float *dout;      /* logical dout as stored */
    cl_mem mem[4];
    fa_cl_backward_args args;
} bw_run;

static void bw_free(bw_run *r)
{
    for (int i = 0; i < 4; i++) {
        if (r->mem[i])
            clReleaseMemObject(r->mem[i]);
        tu_tensor_free(&r->g[i]);
    }
    free(r->dout);
    tu_problem_free(&r->p);
}

/* The score modifiers of a case on the device (the mods subset): the descriptor's fields and the
 * buffers both passes take. NULL: none. */
typedef struct bw_mods_dev {
    float softcap;
    int alibi, sinks;
    fa_cl_mask_type mask;
    int64_t mask_stride[3];
    cl_mem slopes, sink_logits, mask_mem, dsink;
} bw_mods_dev;

/* The problem (q, k, v; o and the LSE from the library's forward, with the modifiers m where not
 * NULL), dout, and the gradient buffers filled with the sentinel; desc gets the gradient views.
 * Returns 0, or -1 (printed). */
static int bw_setup_mods(bw_run *r, fa_cl_context *ctx, const bw_case *bc, uint64_t seed, const bw_mods_dev *m)
{
    memset(r, 0, sizeof *r);
    tu_case c = bc->c;
    c.lse = 1;
    if (tu_problem_init(&r->p, ctx, &c, seed, 0) != 0)
        return -1;
    /* the backward reads the LSE the forward wrote: a buffer both may use */
    clReleaseMemObject(r->p.lse_mem);
    r->p.lse_mem = tu_buffer(ctx, CL_MEM_READ_WRITE, (r->p.lse_elems + r->p.lse_slack) * sizeof(float), NULL);
    if (!r->p.lse_mem)
        return -1;
    fa_cl_forward_args fa;
    fa_cl_forward_args_init(&fa);
    fa.q = r->p.mem[0], fa.k = r->p.mem[1], fa.v = r->p.mem[2], fa.o = r->p.mem[3], fa.lse = r->p.lse_mem;
    if (m) {
        fa_cl_attention_desc *d = &r->p.desc;
        d->softcap = m->softcap, d->alibi = m->alibi, d->sinks = m->sinks, d->mask = m->mask;
        memcpy(d->mask_stride, m->mask_stride, sizeof d->mask_stride);
        fa.alibi_slopes = m->slopes, fa.sinks = m->sink_logits, fa.mask = m->mask_mem;
    }
    if (fa_cl_attention_run(ctx, &r->p.desc, &fa) != FA_CL_SUCCESS) {
        printf("forward failed: %s\n", fa_cl_last_error(ctx));
        return -1;
    }
    const char *primal = r->p.layout; /* q k v o */
    const char letters[4] = {bc->grads ? bc->grads[0] : primal[3], bc->grads ? bc->grads[1] : primal[0],
                             bc->grads ? bc->grads[2] : primal[1], bc->grads ? bc->grads[3] : primal[2]};
    const int64_t heads[4] = {c.Hq, c.Hq, c.Hkv, c.Hkv}, rows[4] = {c.Sq, c.Sq, c.Sk, c.Sk};
    for (int i = 0; i < 4; i++)
        if (tu_tensor_init(&r->g[i], letters[i], c.dtype, c.B, heads[i], rows[i], c.D, 7 + (size_t)i, 5) != 0)
            return -1;
    r->dout = (float *)malloc(sizeof(float) * (size_t)(c.B * c.Hq * c.Sq * c.D));
    if (!r->dout)
        return -1;
    tu_rng rng;
    tu_rng_seed(&rng, seed * 31 + 7);
    for (size_t e = 0; e < (size_t)(c.B * c.Hq * c.Sq * c.D); e++)
        r->dout[e] = tu_rng_nonzero(&rng);
    tu_tensor_fill_bits(&r->g[0], tu_nan_bits(c.dtype));
    tu_tensor_put(&r->g[0], r->dout);
    for (int i = 1; i < 4; i++)
        tu_tensor_fill_bits(&r->g[i], tu_sentinel_bits(c.dtype));
    for (int i = 0; i < 4; i++) {
        r->mem[i] = tu_buffer(ctx, i == 0 ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE, tu_tensor_bytes(&r->g[i]),
                              r->g[i].img);
        if (!r->mem[i])
            return -1;
    }
    fa_cl_attention_desc *d = &r->p.desc;
    int64_t *st[4] = {d->dout_stride, d->dq_stride, d->dk_stride, d->dv_stride};
    size_t *off[4] = {&d->dout_offset, &d->dq_offset, &d->dk_offset, &d->dv_offset};
    for (int i = 0; i < 4; i++) {
        /* given layouts: explicit strides ('C' too: all-zero strides would mean the primal's here) */
        memcpy(st[i], bc->grads ? r->g[i].stride : (const int64_t[3]){0, 0, 0}, 3 * sizeof(int64_t));
        *off[i] = r->g[i].offset;
    }
    fa_cl_backward_args_init(&r->args);
    r->args.q = r->p.mem[0], r->args.k = r->p.mem[1], r->args.v = r->p.mem[2], r->args.o = r->p.mem[3];
    r->args.lse = r->p.lse_mem, r->args.dout = r->mem[0];
    r->args.dq = r->mem[1], r->args.dk = r->mem[2], r->args.dv = r->mem[3];
    if (m)
        r->args.alibi_slopes = m->slopes, r->args.sinks = m->sink_logits, r->args.mask = m->mask_mem,
        r->args.dsink = m->dsink;
    return 0;
}

static int bw_setup(bw_run *r, fa_cl_context *ctx, const bw_case *bc, uint64_t seed)
{
    return bw_setup_mods(r, ctx, bc, seed, NULL);
}

/* Gradient i (1 dq, 2 dk, 3 dv) read back: its logical values, and whether every element of the
 * view was written and every other one left as the sentinel. */
static int bw_read(bw_run *r, fa_cl_context *ctx, int i, double *out, char *why, size_t why_size)
{
    tu_tensor *t = &r->g[i];
    if (tu_read(ctx, r->mem[i], tu_tensor_bytes(t), t->img) != 0) {
        snprintf(why, why_size, "read failed");
        return 0;
    }
    const uint32_t sentinel = tu_sentinel_bits(t->dtype);
    size_t unwritten = 0, clobbered = 0;
    for (size_t e = 0; e < t->elems; e++) {
        const int is_sentinel = tu_load_bits(t->dtype, t->img, e) == sentinel;
        unwritten += t->inview[e] && is_sentinel;
        clobbered += !t->inview[e] && !is_sentinel;
    }
    size_t n = 0;
    for (int64_t b = 0; b < t->dim[0]; b++)
        for (int64_t h = 0; h < t->dim[1]; h++)
            for (int64_t s = 0; s < t->dim[2]; s++)
                for (int64_t e = 0; e < t->dim[3]; e++)
                    out[n++] = tu_load(t->dtype, t->img, tu_tensor_index(t, b, h, s, e));
    if (unwritten || clobbered)
        snprintf(why, why_size, "%zu elements of the view unwritten, %zu outside it written", unwritten, clobbered);
    return !unwritten && !clobbered;
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(a[i] - b[i]);
        if (!(e <= m))
            m = e; /* NaN sticks */
    }
    return m;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

static void case_name(const bw_case *bc, char *buf, size_t size)
{
    char c[256];
    tu_case_format(&bc->c, c, sizeof c);
    snprintf(buf, size, "%s grads=%s", c, bc->grads ? bc->grads : "default");
}

/* Run the case (plan or one-shot; reference) and check the three gradients. */
static void check_case(tu_tally *t, fa_cl_context *ctx, const bw_case *bc, uint64_t seed, int reference)
{
    char name[400];
    case_name(bc, name, sizeof name);
    bw_run r;
    const size_t nq = (size_t)(bc->c.B * bc->c.Hq * bc->c.Sq * bc->c.D), nk = (size_t)(bc->c.B * bc->c.Hkv *
                                                                                          bc->c.Sk * bc->c.D);
    double *ref[3] = {0}, *pt[3] = {0}, *got[3] = {0};
    if (bw_setup(&r, ctx, bc, seed) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        goto done;
    }
    for (int i = 0; i < 3; i++) {
        const size_t n = i == 0 ? nq : nk;
        ref[i] = (double *)malloc(n * sizeof(double));
        pt[i] = (double *)malloc(n * sizeof(double));
        got[i] = (double *)malloc(n * sizeof(double));
        if (!ref[i] || !pt[i] || !got[i]) {
            tu_expect(t, 0, "%s: out of host memory", name);
            goto done;
        }
    }
    tu_attention_backward_f64(&r.p.c, r.p.x[0], r.p.x[1], r.p.x[2], r.dout, ref[0], ref[1], ref[2]);
    backward_storage(&r.p.c, bc->c.dtype, r.p.x[0], r.p.x[1], r.p.x[2], r.dout, pt[0], pt[1], pt[2]);
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    fa_cl_status st;
    if (reference) {
        st = fa_cl_reference_backward(ctx, &r.p.desc, &r.args);
    } else {
        fa_cl_backward_plan *plan = NULL;
        st = fa_cl_backward_plan_create(ctx, &r.p.desc, &plan);
        if (st == FA_CL_SUCCESS) {
            fa_cl_backward_plan_get_info(plan, &info);
            st = fa_cl_backward_plan_run(plan, &r.args);
        }
        fa_cl_backward_plan_release(plan);
    }
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    int ok = 1;
    char line[600] = "", why[200] = "";
    static const char *const gname[3] = {"dq", "dk", "dv"};
    if (!reference && expect_kernel && (!info.kernel || strcmp(info.kernel, expect_kernel) != 0)) {
        ok = 0;
        snprintf(why, sizeof why, "planned %s, not %s", info.kernel ? info.kernel : "(none)", expect_kernel);
    }
    for (int i = 0; i < 3 && ok; i++)
        ok = bw_read(&r, ctx, i + 1, got[i], why, sizeof why);
    const int read_ok = ok;
    for (int i = 0; i < 3 && read_ok; i++) { /* every gradient's error; the first failure's reason */
        const size_t n = i == 0 ? nq : nk;
        const double err = max_abs_diff(got[i], ref[i], n), err_pt = max_abs_diff(pt[i], ref[i], n);
        const double k = reference ? K_STORAGE : k_storage(info.kernel);
        const double bar = k * err_pt + 1e-6 + 1e-5 * max_abs(ref[i], n);
        const size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, "%s %.2e (storage %.2e, ratio %.2f) ", gname[i], err, err_pt,
                 err_pt > 0 ? err / err_pt : 0.0);
        if (!(err <= bar) && ok) {
            ok = 0;
            snprintf(why, sizeof why, "%s error %.3e above %.3e (%.0f x the storage-precision error + floor)",
                     gname[i], err, bar, k);
        }
    }
    if (!reference && check_family && ok) {
        const char *want = expected_family(ctx, bc->c.dtype, bc->c.D);
        if (!family_matches(ctx, want, info.kernel)) {
            ok = 0;
            snprintf(why, sizeof why, "planned on %s, not %s", info.kernel ? info.kernel : "?", want);
        }
    }
    if (!reference) { /* the one-shot call gives the same bits as the plan */
        double *again = (double *)malloc(nq * sizeof(double));
        int same = again != NULL;
        if (same && fa_cl_attention_backward(ctx, &r.p.desc, &r.args) == FA_CL_SUCCESS &&
            bw_read(&r, ctx, 1, again, why, sizeof why))
            same = memcmp(again, got[0], nq * sizeof(double)) == 0;
        else
            same = 0;
        free(again);
        if (!same && ok) {
            ok = 0;
            snprintf(why, sizeof why, "fa_cl_attention_backward's dq differs from the plan's");
        }
    }
    tu_expect(t, ok, "%s%s: %s%s%s [%s %dx%d, %d items]", reference ? "reference " : "", name, line, ok ? "" : "-- ",
              ok ? "" : why, info.kernel ? info.kernel : "reference", info.block_q, info.block_kv,
              info.work_group_size);
done:
    for (int i = 0; i < 3; i++)
        free(ref[i]), free(pt[i]), free(got[i]);
    bw_free(&r);
}

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16
static const bw_case all_cases[] = {
    /* tails, GQA, causal (bottom-right, rows that see nothing), windows */
    {{1, 2, 2, 37, 53, 24, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 4, 2, 65, 65, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 3, 1, 70, 20, 5, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 2, 2, 33, 65, 64, F32, 0, 8, 3, "SSSS", 0.0f, 1}, NULL},
    {{1, 4, 4, 129, 127, 96, F16, 1, -1, -1, "QQQQ", 0.0f, 1}, NULL},
    {{1, 8, 2, 48, 80, 128, BF16, 0, 16, 16, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 1, 5, 300, 256, F16, 0, -1, -1, "PPPP", 0.0f, 1}, NULL},
    {{2, 2, 1, 17, 33, 1, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 1, 1, 1, 77, 128, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 100, 1, 40, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 64, 64, 160, BF16, 0, -1, 0, "HHHH", 0.0f, 1}, NULL},
    {{1, 1, 1, 256, 256, 32, F32, 1, -1, -1, "CCCC", 0.5f, 1}, NULL},
    /* padded head dims */
    {{1, 2, 1, 40, 44, 3, F16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 40, 44, 59, F16, 1, -1, -1, "SCCS", 0.0f, 1}, NULL},
    {{1, 2, 2, 40, 44, 111, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 1, 1, 24, 40, 192, BF16, 0, 4, 4, "CCCC", 0.0f, 1}, NULL},
    {{1, 1, 1, 24, 40, 224, F16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    /* head_dim above 256: portable-backward (8 x 8 tiles at 512 on a 128 KiB budget) */
    {{1, 2, 1, 37, 45, 512, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 20, 33, 457, BF16, 0, -1, -1, "PPPP", 0.0f, 1}, NULL},
    {{1, 1, 1, 19, 40, 320, F32, 0, 8, 8, "SSSS", 0.0f, 1}, NULL},
    /* gradients in layouts of their own (dout, dq, dk, dv), sub-buffer offsets */
    {{2, 4, 2, 45, 77, 64, F32, 1, -1, -1, "SCSC", 0.0f, 1}, "CPQS"},
    {{1, 4, 1, 33, 50, 32, F16, 0, 10, -1, "CCCC", 0.0f, 1}, "SHPQ"},
};

static int run_shapes(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&backward_tally, ctx, &all_cases[i], 500 + (uint64_t)i, 0);
    return 0;
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&backward_tally, ctx, &all_cases[i], 500 + (uint64_t)i, 1);
    return 0;
}

/* the tensor-core backward's paths (emulated in CTest, emulate=1 with
 * nvidia-tf32x3-backward:enabled=1, with tile=16x16 too): f16, bf16 and f32, head dims padded to 64 and 128, tails of rows, keys and
 * head_dim, causal and windows (blocks with and without the per-element mask), GQA, strided and
 * unaligned views (synchronous loads: offsets or head_dim not whole 16-byte units) */
static const bw_case mma_cases[] = {
    {{1, 2, 1, 37, 53, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 70, 65, 128, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 2, 2, 33, 47, 40, F16, 0, 9, 4, "SPCC", 0.0f, 1}, "QCSP"},
    {{1, 4, 2, 64, 64, 96, F16, 1, -1, -1, "SSSS", 0.0f, 1}, NULL},
    {{1, 1, 1, 20, 80, 5, BF16, 0, -1, -1, "CCCC", 0.7f, 1}, NULL},
    /* above what the tensor-core backward takes (128): it declines, portable-backward computes it */
    {{1, 2, 1, 21, 30, 457, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, /* 16x16 fits 128 KiB: 121088 bytes */
    /* f32 (nvidia-tf32x3-backward): 16-byte rows (cp.async) at d_padded 64 and 128, unaligned views and
     * head_dim 5 (synchronous loads), windows, causal with rows that see nothing, GQA */
    {{1, 2, 1, 37, 53, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 1, 1, 70, 65, 128, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 2, 2, 33, 47, 40, F32, 0, 9, 4, "SPCC", 0.0f, 1}, "QCSP"},
    {{1, 4, 2, 40, 48, 96, F32, 1, -1, -1, "SSSS", 0.0f, 1}, NULL},
    {{1, 1, 1, 20, 80, 5, F32, 0, -1, -1, "CCCC", 0.7f, 1}, NULL},
    {{1, 2, 2, 50, 30, 111, F32, 1, 7, -1, "HHHH", 0.0f, 1}, NULL},
};

static int run_mma(fa_cl_context *ctx, int argc, char **argv)
{
    const int f32_only = argc > 0 && strcmp(argv[0], "f32") == 0;
    check_family = 1;
    for (int i = 0; i < TU_COUNT(mma_cases); i++)
        if (!f32_only || mma_cases[i].c.dtype == F32)
            check_case(&backward_tally, ctx, &mma_cases[i], 700 + (uint64_t)i, 0);
    return 0;
}

/* nvidia-wgmma-backward (Hopper only; skipped elsewhere): 16-byte aligned f16/bf16 rows, head_dim a
 * multiple of 8 up to 128, several 64-row and 64-key blocks each way with tails, causal (rows that
 * see nothing too), windows, GQA/MQA, both dtypes, head_dim padded to 64 and 128, strided views.
 * Every plan must be that kernel unless nvidia-wgmma-backward:enabled=0. */
static const bw_case wgmma_cases[] = {
    {{1, 2, 2, 300, 300, 128, F16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 4, 2, 257, 391, 64, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 4, 1, 200, 130, 128, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 333, 333, 96, F16, 0, 50, 20, "CCCC", 0.0f, 1}, NULL},
    {{1, 2, 2, 128, 517, 40, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{2, 8, 8, 64, 64, 128, BF16, 1, -1, -1, "SSSS", 0.0f, 1}, NULL},
    {{1, 4, 2, 190, 250, 72, F16, 1, 30, -1, "SCSC", 0.0f, 1}, "SCSC"},
    {{1, 2, 1, 1, 300, 128, F16, 0, -1, -1, "CCCC", 0.3f, 1}, NULL},
};

static int run_wgmma(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (!tu_hopper(ctx)) {
        printf("SKIP: nvidia-wgmma-backward needs an NVIDIA GPU of compute capability 9.0 (this device: %s)\n",
               ctx->props.name);
        return TU_EXIT_SKIP;
    }
    /* FA_CL_TUNE nvidia-wgmma-backward:enabled=0 (the wgmma_off test): nvidia-mma-backward's plans */
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    const fa_cl__kernel_family *wg = fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD);
    expect_kernel = fa_cl__tune_value(&lim, wg, 0) == 0 ? "nvidia-mma-backward" : "nvidia-wgmma-backward";
    for (int i = 0; i < TU_COUNT(wgmma_cases); i++)
        check_case(&backward_tally, ctx, &wgmma_cases[i], 900 + (uint64_t)i, 0);
    expect_kernel = NULL;
    return 0;
}

/* ---- variable-length batches and per-sequence key counts ---------------------------------------- */

typedef struct bw_varlen_case {
    int64_t B, Hq, Hkv, D;
    fa_cl_dtype dtype;
    int causal;
    int64_t wl, wr;
    const int *cu_q; /* B + 1 offsets into total_q packed rows */
    int64_t total_q, max_q;
    const int *cu_k; /* B + 1 offsets into total_k packed keys; NULL: K dense [B, Hkv, max_k, D] */
    int64_t total_k, max_k;
    const int *lens; /* with cu_k NULL: each sequence's key count (cache_seqlens), NULL: max_k */
    int mods;        /* 1: softcap 3, ALiBi and sinks (their gradient summed over the sequences) */
} bw_varlen_case;

#define LENS(...) ((const int[]){__VA_ARGS__})

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* sequence b's [start, start + len) of cu over total rows, clamped as include/fa_cl.h says */
static void seq_rows(const int *cu, int64_t b, int64_t total, int64_t max, int64_t *start, int64_t *len)
{
    *start = clamp64(cu[b], 0, total);
    *len = clamp64(clamp64(cu[b + 1], *start, total) - *start, 0, max);
}

static float *random_rounded(tu_rng *r, fa_cl_dtype t, size_t n)
{
    float *x = (float *)malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++)
        x[i] = tu_round(t, tu_rng_nonzero(r));
    return x;
}

static cl_mem image_buffer(fa_cl_context *ctx, fa_cl_dtype t, const float *x, size_t n, cl_mem_flags flags)
{
    unsigned char *img = (unsigned char *)malloc(n * tu_dtype_size(t));
    cl_mem m = NULL;
    if (img) {
        for (size_t i = 0; i < n; i++)
            tu_store(t, img, i, x[i]);
        m = tu_buffer(ctx, flags, n * tu_dtype_size(t), img);
    }
    free(img);
    return m;
}

/* rows [start, start + len) of packed [*, H, D] (or batch b of dense [B, H, S, D] when dense_s > 0)
 * as logical [1, H, len, D] */
static void gather_seq(const float *src, int64_t H, int64_t D, int64_t b, int64_t dense_s, int64_t start,
                       int64_t len, float *dst)
{
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < len; i++)
            for (int64_t e = 0; e < D; e++)
                dst[(h * len + i) * D + e] =
                    dense_s > 0 ? src[((b * H + h) * dense_s + start + i) * D + e] : src[((start + i) * H + h) * D + e];
}

static void check_varlen(tu_tally *t, fa_cl_context *ctx, const bw_varlen_case *vc, uint64_t seed)
{
    const fa_cl_dtype dt = vc->dtype;
    const int dense_k = vc->cu_k == NULL;
    const int64_t krows = dense_k ? vc->B * vc->max_k : vc->total_k;
    const size_t nq = (size_t)(vc->total_q * vc->Hq * vc->D), nk = (size_t)(krows * vc->Hkv * vc->D);
    const size_t nl = (size_t)(vc->Hq * vc->total_q);
    char name[256];
    snprintf(name, sizeof name, "varlen B=%lld H=%lld/%lld D=%lld %s%s total_q %lld (max %lld), %s %lld (max %lld)",
             (long long)vc->B, (long long)vc->Hq, (long long)vc->Hkv, (long long)vc->D, tu_dtype_name(dt),
             vc->causal ? " causal" : "", (long long)vc->total_q, (long long)vc->max_q,
             dense_k ? (vc->lens ? "dense keys with cache_seqlens" : "dense keys") : "total_k", (long long)krows,
             (long long)vc->max_k);
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    float *q = random_rounded(&rng, dt, nq), *k = random_rounded(&rng, dt, nk), *v = random_rounded(&rng, dt, nk);
    float *dout = random_rounded(&rng, dt, nq);
    cl_mem mq = image_buffer(ctx, dt, q, nq, CL_MEM_READ_ONLY), mk = image_buffer(ctx, dt, k, nk, CL_MEM_READ_ONLY);
    cl_mem mv = image_buffer(ctx, dt, v, nk, CL_MEM_READ_ONLY), mdo = image_buffer(ctx, dt, dout, nq, CL_MEM_READ_ONLY);
    const size_t es = tu_dtype_size(dt);
    unsigned char *img[3] = {(unsigned char *)malloc(nq * es), (unsigned char *)malloc(nk * es),
                             (unsigned char *)malloc(nk * es)};
    const size_t gn[3] = {nq, nk, nk};
    cl_mem mg[3] = {0}, mo = tu_buffer(ctx, CL_MEM_READ_WRITE, nq * es, NULL);
    cl_mem ml = tu_buffer(ctx, CL_MEM_READ_WRITE, nl * 4, NULL);
    for (int i = 0; i < 3; i++) {
        for (size_t e = 0; img[i] && e < gn[i]; e++)
            tu_store_bits(dt, img[i], e, tu_sentinel_bits(dt));
        mg[i] = img[i] ? tu_buffer(ctx, CL_MEM_READ_WRITE, gn[i] * es, img[i]) : NULL;
    }
    cl_mem cuq = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(vc->B + 1) * 4, vc->cu_q);
    cl_mem cuk = dense_k ? NULL : tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(vc->B + 1) * 4, vc->cu_k);
    cl_mem lens = dense_k && vc->lens ? tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)vc->B * 4, vc->lens) : NULL;
    /* the modifiers: ALiBi's slopes and the sinks per query head, the sinks' gradient */
    const size_t hq = (size_t)vc->Hq;
    float *slopes = (float *)calloc(hq, sizeof *slopes), *sinks = (float *)calloc(hq, sizeof *sinks);
    float *dsink_got = (float *)calloc(hq, sizeof *dsink_got);
    double *dsink_ref = (double *)calloc(hq, sizeof *dsink_ref), *dsink_seq = (double *)calloc(hq, sizeof *dsink_seq);
    for (size_t h = 0; slopes && sinks && h < hq; h++)
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)hq), sinks[h] = (float)(0.5 * (double)h - 0.5);
    cl_mem mslopes = vc->mods && slopes ? tu_buffer(ctx, CL_MEM_READ_ONLY, hq * 4, slopes) : NULL;
    cl_mem msinks = vc->mods && sinks ? tu_buffer(ctx, CL_MEM_READ_ONLY, hq * 4, sinks) : NULL;
    cl_mem mdsink = vc->mods ? tu_buffer(ctx, CL_MEM_READ_WRITE, hq * 4, NULL) : NULL;
    const tu_mods mods = {vc->mods ? 3.0 : 0.0, vc->mods ? slopes : NULL, vc->mods ? sinks : NULL, NULL};
    int ok = q && k && v && dout && mq && mk && mv && mdo && mo && ml && mg[0] && mg[1] && mg[2] && cuq &&
             dsink_got && dsink_ref && dsink_seq && (!vc->mods || (mslopes && msinks && mdsink)) &&
             (dense_k || cuk) && (!dense_k || !vc->lens || lens);
    char why[300] = "setup failed", line[400] = "";
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, vc->B, vc->Hq, vc->max_q, vc->max_k, vc->D, dt);
    d.heads_kv = vc->Hkv, d.causal = vc->causal, d.window_left = vc->wl, d.window_right = vc->wr;
    d.total_q = vc->total_q;
    d.total_k = dense_k ? 0 : vc->total_k;
    d.kv_seqlens = dense_k && vc->lens;
    d.softcap = (float)mods.softcap, d.alibi = vc->mods, d.sinks = vc->mods;
    if (ok) {
        fa_cl_forward_args fa;
        fa_cl_forward_args_init(&fa);
        fa.q = mq, fa.k = mk, fa.v = mv, fa.o = mo, fa.lse = ml, fa.cu_seqlens_q = cuq, fa.cu_seqlens_k = cuk;
        fa.cache_seqlens = lens;
        fa.alibi_slopes = mslopes, fa.sinks = msinks;
        fa_cl_backward_args a;
        fa_cl_backward_args_init(&a);
        a.q = mq, a.k = mk, a.v = mv, a.o = mo, a.lse = ml, a.dout = mdo, a.dq = mg[0], a.dk = mg[1], a.dv = mg[2];
        a.cu_seqlens_q = cuq, a.cu_seqlens_k = cuk, a.cache_seqlens = lens;
        a.alibi_slopes = mslopes, a.sinks = msinks, a.dsink = mdsink;
        fa_cl_status st = fa_cl_attention_run(ctx, &d, &fa);
        if (st == FA_CL_SUCCESS)
            st = fa_cl_attention_backward(ctx, &d, &a);
        for (int i = 0; i < 3 && st == FA_CL_SUCCESS; i++)
            if (tu_read(ctx, mg[i], gn[i] * es, img[i]) != 0)
                st = FA_CL_ERROR_OPENCL;
        if (st == FA_CL_SUCCESS && vc->mods && tu_read(ctx, mdsink, hq * 4, dsink_got) != 0)
            st = FA_CL_ERROR_OPENCL;
        if (st != FA_CL_SUCCESS) {
            ok = 0;
            snprintf(why, sizeof why, "%s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        }
    }
    fa_cl_plan_info info; /* the family the one-shot call's plan took */
    memset(&info, 0, sizeof info);
    if (ok) {
        fa_cl_backward_plan *plan = NULL;
        if (fa_cl_backward_plan_create(ctx, &d, &plan) == FA_CL_SUCCESS)
            fa_cl_backward_plan_get_info(plan, &info);
        fa_cl_backward_plan_release(plan);
    }
    if (ok && check_family) {
        const char *want = expected_family(ctx, dt, vc->D);
        snprintf(line, sizeof line, "[%s] ", info.kernel ? info.kernel : "no plan");
        if (!family_matches(ctx, want, info.kernel)) {
            ok = 0;
            snprintf(why, sizeof why, "planned on %s, not %s", info.kernel ? info.kernel : "?", want);
        }
    }
    /* per sequence: the oracle and the storage-precision computation on its rows; which rows of
     * the packed (or dense) gradients some sequence owns */
    double err[3] = {0}, err_pt[3] = {0}, mref[3] = {0};
    unsigned char *owned[3] = {(unsigned char *)calloc(gn[0], 1), (unsigned char *)calloc(gn[1], 1),
                               (unsigned char *)calloc(gn[2], 1)};
    ok = ok && owned[0] && owned[1] && owned[2];
    for (int64_t b = 0; ok && b < vc->B; b++) {
        int64_t qs, ql, ks, kl;
        seq_rows(vc->cu_q, b, vc->total_q, vc->max_q, &qs, &ql);
        if (dense_k)
            ks = 0, kl = vc->lens ? clamp64(vc->lens[b], 0, vc->max_k) : vc->max_k;
        else
            seq_rows(vc->cu_k, b, vc->total_k, vc->max_k, &ks, &kl);
        /* dense keys: every key row of the batch is the sequence's (0 gradient past its length) */
        const int64_t own_k = dense_k ? vc->max_k : kl;
        const size_t sqn = (size_t)(vc->Hq * ql * vc->D), skn = (size_t)(vc->Hkv * own_k * vc->D);
        float *lq = (float *)malloc((sqn + 1) * 4), *ldo = (float *)malloc((sqn + 1) * 4);
        float *lk = (float *)malloc((skn + 1) * 4), *lv = (float *)malloc((skn + 1) * 4);
        double *g[3][3]; /* ref, storage, got */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                g[i][j] = (double *)calloc((i == 0 ? sqn : skn) + 1, sizeof(double));
        gather_seq(q, vc->Hq, vc->D, 0, 0, qs, ql, lq);
        gather_seq(dout, vc->Hq, vc->D, 0, 0, qs, ql, ldo);
        gather_seq(k, vc->Hkv, vc->D, b, dense_k ? vc->max_k : 0, ks, own_k, lk);
        gather_seq(v, vc->Hkv, vc->D, b, dense_k ? vc->max_k : 0, ks, own_k, lv);
        /* the oracle over the sequence's kl keys; keys kl .. own_k (dense) keep gradient 0 */
        const tu_case c = {1, vc->Hq, vc->Hkv, ql, kl, vc->D, dt, vc->causal, vc->wl, vc->wr, "CCCC", 0.0f, 1};
        if (ql > 0 && kl > 0) {
            double *tmp[2][2];
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++)
                    tmp[j][i] = (double *)calloc((size_t)(vc->Hkv * kl * vc->D), sizeof(double));
            /* K, V of the kl keys as logical [1, Hkv, kl, D] */
            const size_t kvn = (size_t)(vc->Hkv * kl * vc->D);
            float *kk = (float *)malloc(kvn * 4), *vv = (float *)malloc(kvn * 4);
            for (int64_t h = 0; h < vc->Hkv; h++)
                for (int64_t j = 0; j < kl * vc->D; j++) {
                    kk[h * kl * vc->D + j] = lk[h * own_k * vc->D + j];
                    vv[h * kl * vc->D + j] = lv[h * own_k * vc->D + j];
                }
            tu_attention_backward_f64_mods(&c, &mods, lq, kk, vv, ldo, g[0][0], tmp[0][0], tmp[0][1], dsink_seq);
            for (size_t h = 0; vc->mods && h < hq; h++)
                dsink_ref[h] += dsink_seq[h];
            backward_storage(&c, dt, lq, kk, vv, ldo, g[0][1], tmp[1][0], tmp[1][1]);
            for (int64_t h = 0; h < vc->Hkv; h++)
                for (int64_t j = 0; j < kl * vc->D; j++)
                    for (int w = 0; w < 2; w++) {
                        g[1][w][h * own_k * vc->D + j] = tmp[w][0][h * kl * vc->D + j];
                        g[2][w][h * own_k * vc->D + j] = tmp[w][1][h * kl * vc->D + j];
                    }
            free(kk), free(vv);
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++)
                    free(tmp[j][i]);
        }
        /* the library's rows of this sequence */
        for (int64_t h = 0; h < vc->Hq; h++)
            for (int64_t i = 0; i < ql; i++)
                for (int64_t e = 0; e < vc->D; e++) {
                    const size_t at = (size_t)(((qs + i) * vc->Hq + h) * vc->D + e);
                    g[0][2][(h * ql + i) * vc->D + e] = tu_load(dt, img[0], at);
                    owned[0][at] = 1;
                }
        for (int w = 1; w < 3; w++)
            for (int64_t h = 0; h < vc->Hkv; h++)
                for (int64_t j = 0; j < own_k; j++)
                    for (int64_t e = 0; e < vc->D; e++) {
                        const size_t at = dense_k ? (size_t)(((b * vc->Hkv + h) * vc->max_k + j) * vc->D + e)
                                                  : (size_t)(((ks + j) * vc->Hkv + h) * vc->D + e);
                        g[w][2][(h * own_k + j) * vc->D + e] = tu_load(dt, img[w], at);
                        owned[w][at] = 1;
                    }
        for (int w = 0; w < 3; w++) {
            const size_t n = w == 0 ? sqn : skn;
            err[w] = fmax(err[w], max_abs_diff(g[w][2], g[w][0], n));
            err_pt[w] = fmax(err_pt[w], max_abs_diff(g[w][1], g[w][0], n));
            mref[w] = fmax(mref[w], max_abs(g[w][0], n));
        }
        free(lq), free(ldo), free(lk), free(lv);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                free(g[i][j]);
    }
    static const char *const gname[3] = {"dq", "dk", "dv"};
    for (int w = 0; ok && w < 3; w++) {
        size_t stray = 0; /* rows no sequence owns: never written */
        for (size_t e = 0; e < gn[w]; e++)
            stray += !owned[w][e] && tu_load_bits(dt, img[w], e) != tu_sentinel_bits(dt);
        /* with the modifiers the storage-precision computation (which has none) is no yardstick:
         * tests/tolerance.h's gradient bar, the tensor's largest entry for its relative part */
        const double kf = k_storage(info.kernel);
        const double bar = vc->mods ? fa_cl_tolerance_abs(dt) * fmax(1.0, mref[w]) + fa_cl_tolerance_rel(dt) * mref[w]
                                    : kf * err_pt[w] + 1e-6 + 1e-5 * mref[w];
        const size_t len = strlen(line);
        if (vc->mods)
            snprintf(line + len, sizeof line - len, "%s %.2e (bar %.2e) ", gname[w], err[w], bar);
        else
            snprintf(line + len, sizeof line - len, "%s %.2e (storage %.2e) ", gname[w], err[w], err_pt[w]);
        if (stray) {
            ok = 0;
            snprintf(why, sizeof why, "%s: %zu elements of rows no sequence owns written", gname[w], stray);
        } else if (!(err[w] <= bar)) {
            ok = 0;
            snprintf(why, sizeof why, "%s error above %.0f x the storage-precision error + floor", gname[w], kf);
        }
    }
    if (ok && vc->mods) {
        double dmax = 0.0, derr = 0.0;
        for (size_t h = 0; h < hq; h++)
            dmax = fmax(dmax, fabs(dsink_ref[h])), derr = fmax(derr, fabs(dsink_got[h] - dsink_ref[h]));
        for (size_t h = 0; h < hq && ok; h++)
            if (!fa_cl_tolerance_grad_ok(dt, dsink_got[h], dsink_ref[h], dmax))
                ok = 0, snprintf(why, sizeof why, "dsink[%zu] = %.6g, the oracle's %.6g", h, dsink_got[h], dsink_ref[h]);
        const size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, "dsink %.2e (max |ref| %.2e) ", derr, dmax);
    }
    tu_expect(t, ok, "%s: %s%s%s", name, line, ok ? "" : "-- ", ok ? "" : why);
    for (int i = 0; i < 3; i++) {
        free(img[i]), free(owned[i]);
        if (mg[i])
            clReleaseMemObject(mg[i]);
    }
    cl_mem ms[12] = {mq, mk, mv, mdo, mo, ml, cuq, cuk, lens, mslopes, msinks, mdsink};
    for (int i = 0; i < 12; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
    free(q), free(k), free(v), free(dout), free(slopes), free(sinks), free(dsink_got), free(dsink_ref), free(dsink_seq);
}

static int run_varlen(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    check_family = 1;
    const bw_varlen_case cases[] = {
        /* ragged, an empty sequence, causal bottom-right per sequence, GQA */
        {3, 4, 2, 64, F32, 1, -1, -1, LENS(0, 37, 37, 100), 100, 63, LENS(0, 50, 50, 170), 170, 120, NULL, 0},
        {4, 4, 2, 40, F16, 0, -1, -1, LENS(0, 1, 5, 5, 9), 9, 4, LENS(0, 90, 91, 91, 200), 200, 109, NULL, 0},
        {2, 2, 2, 128, BF16, 1, 16, 0, LENS(0, 70, 90), 90, 70, LENS(0, 70, 200), 200, 130, NULL, 0},
        /* rows 30 .. 39 of q and keys 80 .. 89 belong to no sequence: never written */
        {2, 2, 1, 32, F16, 0, 8, 8, LENS(0, 10, 30), 40, 20, LENS(0, 30, 80), 90, 50, NULL, 0},
        /* varlen q against dense keys with per-sequence lengths (chunked prefill's shape), one of 0 */
        {3, 4, 2, 64, F16, 1, -1, -1, LENS(0, 16, 17, 50), 50, 33, NULL, 0, 120, LENS(100, 0, 120), 0},
        /* the modifiers per sequence (ALiBi's diagonal, the sinks' gradient summed over sequences) */
        {3, 4, 2, 32, F32, 1, -1, -1, LENS(0, 37, 37, 100), 100, 63, LENS(0, 50, 50, 170), 170, 120, NULL, 1},
        {3, 4, 2, 40, F16, 0, 20, -1, LENS(0, 16, 17, 50), 50, 33, NULL, 0, 120, LENS(100, 0, 120), 1},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_varlen(&backward_tally, ctx, &cases[i], 800 + (uint64_t)i);
    return 0;
}

/* ---- the score modifiers and masks ------------------------------------------------------------- */

typedef struct bw_mods_case {
    bw_case bc;
    float softcap;
    int alibi, sinks;
    fa_cl_mask_type mask;
    int bcast; /* the mask broadcast over batches (1) and/or heads (2): stride 0 */
} bw_mods_case;

/* The accuracy bar of tests/tolerance.h for gradients (fa_cl_tolerance_grad_ok, the storage
 * type's) over n elements: the index of the first element that fails, or -1. */
static long grad_fails(fa_cl_dtype t, const double *got, const double *ref, size_t n, double *err)
{
    const double m = max_abs(ref, n);
    *err = max_abs_diff(got, ref, n);
    for (size_t i = 0; i < n; i++)
        if (!fa_cl_tolerance_grad_ok(t, got[i], ref[i], m))
            return (long)i;
    return -1;
}

/* One case: the forward with the modifiers, then the backward (on the family expected_family
 * names: the tensor cores where they run, natively or emulated), dq, dk, dv and the sinks' gradient
 * against the float64 oracle
 * (tu_attention_backward_f64_mods) on the values as stored, within tests/tolerance.h's bar for
 * gradients in the storage type. */
static void check_mods_case(tu_tally *t, fa_cl_context *ctx, const bw_mods_case *mc, uint64_t seed)
{
    const tu_case *c = &mc->bc.c;
    char name[400], cn[256];
    static const char *const masks[] = {"", " mask=f32", " mask=f16", " mask=bool", " mask=bf16"};
    tu_case_format(c, cn, sizeof cn);
    snprintf(name, sizeof name, "mods %s softcap=%g%s%s%s%s%s", cn, (double)mc->softcap, mc->alibi ? " alibi" : "",
             mc->sinks ? " sinks" : "", masks[mc->mask], mc->bcast & 1 ? " /B" : "", mc->bcast & 2 ? " /H" : "");
    const size_t hq = (size_t)c->Hq, nq = (size_t)(c->B * c->Hq * c->Sq * c->D);
    const size_t nk = (size_t)(c->B * c->Hkv * c->Sk * c->D), nm = (size_t)(c->B * c->Hq * c->Sq * c->Sk);
    float *slopes = (float *)calloc(hq, sizeof *slopes), *sinks = (float *)calloc(hq, sizeof *sinks);
    double *dense = (double *)calloc(nm, sizeof *dense), *ref[4] = {0}, *got[4] = {0};
    float *dsink_got = (float *)calloc(hq, sizeof *dsink_got);
    /* the mask's image: [B|1, Hq|1, Sq, Sk] contiguous, the broadcast dimensions of stride 0 */
    const int64_t mb = mc->bcast & 1 ? 1 : c->B, mh = mc->bcast & 2 ? 1 : c->Hq;
    const size_t mes = mc->mask == FA_CL_MASK_F32 ? 4 : mc->mask == FA_CL_MASK_BOOL ? 1 : 2;
    const size_t ment = (size_t)(mb * mh * c->Sq * c->Sk);
    unsigned char *mimg = (unsigned char *)calloc(ment ? ment * mes : 1, 1);
    bw_mods_dev m = {mc->softcap, mc->alibi, mc->sinks, mc->mask, {0, 0, 0}, NULL, NULL, NULL, NULL};
    bw_run r;
    memset(&r, 0, sizeof r);
    int ok = slopes && sinks && dense && dsink_got && mimg;
    tu_rng rng;
    tu_rng_seed(&rng, seed * 7 + 3);
    for (size_t h = 0; ok && h < hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)hq);
        sinks[h] = (float)(-1.0 + 4.0 * tu_rng_uniform(&rng));
    }
    if (ok && mc->mask) {
        m.mask_stride[0] = mc->bcast & 1 ? 0 : mh * c->Sq * c->Sk;
        m.mask_stride[1] = mc->bcast & 2 ? 0 : c->Sq * c->Sk;
        m.mask_stride[2] = c->Sk;
        for (size_t e = 0; e < ment; e++) {
            /* a fifth masked; row 1 of every slice wholly masked (it sees no key: lse -inf, or the sink) */
            const int row = (int)(e / (size_t)c->Sk % (size_t)c->Sq);
            const int masked = tu_rng_uniform(&rng) < 0.2 || (c->Sq > 1 && row == 1);
            const float x = masked ? -INFINITY : tu_round(mc->mask == FA_CL_MASK_F16 ? F16 : mc->mask == FA_CL_MASK_BF16
                                                          ? BF16 : F32, (float)(-2.0 + 3.0 * tu_rng_uniform(&rng)));
            if (mc->mask == FA_CL_MASK_BOOL)
                mimg[e] = masked ? 0 : (unsigned char)(1 + e % 200);
            else
                tu_store(mc->mask == FA_CL_MASK_F32 ? F32 : mc->mask == FA_CL_MASK_F16 ? F16 : BF16, mimg, e, x);
        }
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t h = 0; h < c->Hq; h++)
                for (int64_t ij = 0; ij < c->Sq * c->Sk; ij++) {
                    const size_t e = (size_t)(b * m.mask_stride[0] + h * m.mask_stride[1] + ij);
                    const double x = mc->mask == FA_CL_MASK_BOOL ? (mimg[e] ? 0.0 : -INFINITY)
                                     : mc->mask == FA_CL_MASK_F32 ? (double)tu_load(F32, mimg, e)
                                     : (double)tu_load(mc->mask == FA_CL_MASK_F16 ? F16 : BF16, mimg, e);
                    dense[(size_t)((b * c->Hq + h) * c->Sq * c->Sk + ij)] = x;
                }
        ok = (m.mask_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, ment * mes, mimg)) != NULL;
    }
    if (ok && mc->alibi)
        ok = (m.slopes = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * 4, slopes)) != NULL;
    if (ok && mc->sinks)
        ok = (m.sink_logits = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * 4, sinks)) != NULL &&
             (m.dsink = tu_buffer(ctx, CL_MEM_READ_WRITE, hq * 4, NULL)) != NULL;
    char why[300] = "setup failed", line[400] = "";
    if (ok)
        ok = bw_setup_mods(&r, ctx, &mc->bc, seed, &m) == 0;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    if (ok) {
        fa_cl_backward_plan *plan = NULL;
        fa_cl_status st = fa_cl_backward_plan_create(ctx, &r.p.desc, &plan);
        if (st == FA_CL_SUCCESS) {
            fa_cl_backward_plan_get_info(plan, &info);
            st = fa_cl_backward_plan_run(plan, &r.args);
        }
        fa_cl_backward_plan_release(plan);
        if (st != FA_CL_SUCCESS)
            ok = 0, snprintf(why, sizeof why, "%s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    const size_t n[4] = {nq, nk, nk, hq};
    for (int i = 0; i < 4 && ok; i++) {
        ref[i] = (double *)calloc(n[i] + 1, sizeof(double));
        got[i] = (double *)calloc(n[i] + 1, sizeof(double));
        ok = ref[i] && got[i];
    }
    for (int i = 0; i < 3 && ok; i++)
        ok = bw_read(&r, ctx, i + 1, got[i], why, sizeof why);
    if (ok && mc->sinks) {
        ok = tu_read(ctx, m.dsink, hq * 4, dsink_got) == 0;
        for (size_t h = 0; h < hq; h++)
            got[3][h] = dsink_got[h];
    }
    if (ok) {
        const tu_mods mods = {mc->softcap, mc->alibi ? slopes : NULL, mc->sinks ? sinks : NULL, mc->mask ? dense : NULL};
        tu_attention_backward_f64_mods(&r.p.c, &mods, r.p.x[0], r.p.x[1], r.p.x[2], r.dout, ref[0], ref[1], ref[2],
                                       ref[3]);
        static const char *const gname[4] = {"dq", "dk", "dv", "dsink"};
        for (int i = 0; i < 4; i++) {
            double err;
            /* dsink is float32 whatever the storage type, but sums D_i of rows of o in it */
            const long bad = grad_fails(c->dtype, got[i], ref[i], n[i], &err);
            const size_t len = strlen(line);
            snprintf(line + len, sizeof line - len, "%s %.2e (max |ref| %.2e) ", gname[i], err, max_abs(ref[i], n[i]));
            if (bad >= 0 && ok)
                ok = 0, snprintf(why, sizeof why, "%s[%ld] = %.6g, the oracle's %.6g: above tests/tolerance.h's bar",
                                 gname[i], bad, got[i][bad], ref[i][bad]);
        }
        /* the family every backward plan must get (the tensor cores take the modifiers and masks): a
         * case the planner sent to the portable kernel would not test the tensor-core one */
        const char *want = expected_family(ctx, c->dtype, c->D);
        if (ok && !family_matches(ctx, want, info.kernel))
            ok = 0, snprintf(why, sizeof why, "planned on %s, not %s", info.kernel ? info.kernel : "?", want);
    }
    tu_expect(t, ok, "%s: %s%s%s [%s %dx%d, %d launches]", name, line, ok ? "" : "-- ", ok ? "" : why,
              info.kernel ? info.kernel : "?", info.block_q, info.block_kv, info.launches);
    for (int i = 0; i < 4; i++)
        free(ref[i]), free(got[i]);
    cl_mem mems[4] = {m.slopes, m.sink_logits, m.mask_mem, m.dsink};
    for (int i = 0; i < 4; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    free(slopes), free(sinks), free(dense), free(dsink_got), free(mimg);
    bw_free(&r);
}

/* each modifier alone and together; masks of every type, broadcast; causal, windows, rows that
 * see no key (Sq > Sk causal, a wholly masked row), GQA/MQA, tails, head dims padded */
static const bw_mods_case mods_cases[] = {
    {{{1, 2, 1, 37, 53, 24, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL}, 5.0f, 0, 0, FA_CL_MASK_NONE, 0},
    {{{2, 4, 2, 65, 65, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, 0.0f, 1, 0, FA_CL_MASK_NONE, 0},
    {{{1, 3, 1, 70, 20, 5, F32, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, 0.0f, 0, 1, FA_CL_MASK_NONE, 0},
    {{{2, 2, 2, 33, 65, 64, F32, 0, 8, 3, "SSSS", 0.0f, 1}, NULL}, 0.0f, 0, 0, FA_CL_MASK_F32, 0},
    {{{2, 4, 2, 40, 44, 59, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 1},
    {{{1, 2, 2, 24, 40, 32, F16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL}, 0.0f, 0, 0, FA_CL_MASK_F16, 2},
    {{{1, 2, 1, 19, 30, 16, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, 0.0f, 0, 0, FA_CL_MASK_BF16, 3},
    {{{1, 4, 2, 48, 80, 40, F16, 1, -1, -1, "CCCC", 0.0f, 1}, "CPQS"}, 8.0f, 1, 1, FA_CL_MASK_F16, 0},
    {{{2, 2, 1, 33, 47, 128, F32, 0, 9, 4, "CCCC", 0.7f, 1}, NULL}, 2.0f, 1, 1, FA_CL_MASK_F32, 1},
    /* tiny, everything at once (oclgrind, 8 x 8 tiles: several blocks each way) */
    {{{2, 2, 1, 13, 19, 12, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, 4.0f, 1, 1, FA_CL_MASK_BOOL, 2},
    /* the rest alone in 16-bit storage (nvidia-mma-backward where it runs): the softcap under a window,
     * the sinks where the first rows see no key (sink only), an f32 mask on bf16 */
    {{{1, 4, 1, 50, 70, 48, F16, 0, 16, 5, "CCCC", 0.0f, 1}, NULL}, 6.0f, 0, 0, FA_CL_MASK_NONE, 0},
    {{{1, 2, 1, 70, 40, 64, BF16, 1, -1, -1, "SSSS", 0.0f, 1}, NULL}, 0.0f, 0, 1, FA_CL_MASK_NONE, 0},
    {{{2, 2, 2, 45, 61, 32, BF16, 0, 20, 20, "CCCC", 0.0f, 1}, NULL}, 0.0f, 0, 0, FA_CL_MASK_F32, 0},
    /* case 9 in one sequence (oclgrind on the emulated tensor cores, 16 x 16 tiles: several blocks each way) */
    {{{1, 2, 1, 13, 19, 12, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL}, 4.0f, 1, 1, FA_CL_MASK_BOOL, 2},
};

/* The sinks' gradient is summed in a fixed order too: 20 runs of the case with everything, dq and
 * dsink bitwise equal. */
static void mods_determinism(tu_tally *t, fa_cl_context *ctx)
{
    const bw_mods_case *mc = &mods_cases[7];
    const size_t hq = (size_t)mc->bc.c.Hq;
    float sinks[4] = {0.5f, -1.0f, 2.0f, 0.0f}; /* the case's 4 query heads */
    bw_mods_dev m = {mc->softcap, 0, 1, FA_CL_MASK_NONE, {0, 0, 0}, NULL, NULL, NULL, NULL};
    m.sink_logits = hq <= 4 ? tu_buffer(ctx, CL_MEM_READ_ONLY, hq * 4, sinks) : NULL;
    m.dsink = tu_buffer(ctx, CL_MEM_READ_WRITE, hq * 4, NULL);
    bw_run r;
    memset(&r, 0, sizeof r);
    int same = hq <= 4 && m.sink_logits && m.dsink && bw_setup_mods(&r, ctx, &mc->bc, 99, &m) == 0, runs = 0;
    const size_t qbytes = same ? tu_tensor_bytes(&r.g[1]) : 0;
    unsigned char *first = (unsigned char *)malloc(qbytes + 1), *now = (unsigned char *)malloc(qbytes + 1);
    float ds0[4], ds[4];
    same = same && first && now;
    for (int run = 0; run < 20 && same; run++) {
        same = fa_cl_attention_backward(ctx, &r.p.desc, &r.args) == FA_CL_SUCCESS &&
               tu_read(ctx, r.mem[1], qbytes, run ? now : first) == 0 &&
               tu_read(ctx, m.dsink, hq * 4, run ? ds : ds0) == 0 &&
               (run == 0 || (memcmp(now, first, qbytes) == 0 && memcmp(ds, ds0, hq * 4) == 0));
        runs += same;
    }
    tu_expect(t, same && runs == 20, "mods determinism: 20 runs with softcap and sinks: dq and dsink bitwise equal (%d "
              "matched)", runs);
    free(first), free(now);
    if (m.sink_logits)
        clReleaseMemObject(m.sink_logits);
    if (m.dsink)
        clReleaseMemObject(m.dsink);
    bw_free(&r);
}

static int run_mods(fa_cl_context *ctx, int argc, char **argv)
{
    /* "mods N": case N alone (oclgrind); "mods N-M": cases N .. M (the emulated tensor-core runs, split
     * to keep each test's compiles short), the determinism check too where case 7 is among them */
    const char *dash = argc > 0 ? strchr(argv[0], '-') : NULL;
    const int first = argc > 0 ? atoi(argv[0]) : 0;
    const int last = dash ? atoi(dash + 1) : argc > 0 ? first : TU_COUNT(mods_cases) - 1;
    if (first < 0 || last < first || last >= TU_COUNT(mods_cases)) {
        printf("mods: cases %d..%d do not exist (0..%d)\n", first, last, TU_COUNT(mods_cases) - 1);
        return 2;
    }
    for (int i = first; i <= last; i++)
        check_mods_case(&backward_tally, ctx, &mods_cases[i], 1100 + (uint64_t)i);
    if ((argc == 0 || dash) && first <= 7 && 7 <= last)
        mods_determinism(&backward_tally, ctx);
    return 0;
}

/* oclgrind: small shapes that still cross blocks (FA_CL_TUNE=tile=8x8 in CTest) */
static const bw_case tiny_cases[] = {
    {{1, 2, 1, 13, 19, 12, F32, 1, -1, -1, "CCCC", 0.0f, 1}, NULL},
    {{1, 1, 1, 17, 9, 5, F16, 0, 3, 2, "SPCC", 0.0f, 1}, "QCSP"},
    {{2, 2, 2, 9, 17, 32, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL},
};

static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    const int i = argc > 0 ? atoi(argv[0]) : 0;
    if (i < 0 || i >= TU_COUNT(tiny_cases)) {
        printf("tiny: case %d does not exist (0..%d)\n", i, TU_COUNT(tiny_cases) - 1);
        return 2;
    }
    check_family = 1;
    check_case(&backward_tally, ctx, &tiny_cases[i], 900 + (uint64_t)i, 0);
    return 0;
}

/* FlashAttention's determinism test repeats 50 times; every run here must give the bits of the first. */
static int run_determinism(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const bw_case bc = {{2, 4, 2, 96, 160, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL};
    bw_run r;
    if (bw_setup(&r, ctx, &bc, 77) != 0) {
        bw_free(&r);
        return tu_expect(&backward_tally, 0, "determinism: setup failed"), 0;
    }
    size_t bytes[3];
    unsigned char *first[3] = {0}, *now = NULL;
    size_t most = 0;
    for (int i = 0; i < 3; i++) {
        bytes[i] = tu_tensor_bytes(&r.g[i + 1]);
        most = bytes[i] > most ? bytes[i] : most;
        first[i] = (unsigned char *)malloc(bytes[i]);
    }
    now = (unsigned char *)malloc(most);
    int runs = 0, same = first[0] && first[1] && first[2] && now;
    for (int run = 0; run < 100 && same; run++) {
        if (fa_cl_attention_backward(ctx, &r.p.desc, &r.args) != FA_CL_SUCCESS) {
            same = 0;
            break;
        }
        for (int i = 0; i < 3 && same; i++) {
            unsigned char *dst = run == 0 ? first[i] : now;
            same = tu_read(ctx, r.mem[i + 1], bytes[i], dst) == 0 && (run == 0 || memcmp(now, first[i], bytes[i]) == 0);
        }
        runs += same;
    }
    tu_expect(&backward_tally, same && runs == 100, "determinism: 100 runs of B=2 H=4/2 S=96x160 D=64 f16 causal: "
              "dq, dk, dv bitwise equal (%d matched)", runs);
    for (int i = 0; i < 3; i++)
        free(first[i]);
    free(now);
    bw_free(&r);
    return 0;
}

/* ---- bad input ------------------------------------------------------------------------------- */

/* The call fails with want, its message contains needle, and dq, dk, dv are untouched. */
static void expect_refused(tu_tally *t, fa_cl_context *ctx, bw_run *r, const fa_cl_attention_desc *d,
                           const fa_cl_backward_args *a, fa_cl_status want, const char *needle, const char *what)
{
    const fa_cl_status st = fa_cl_attention_backward(ctx, d, a);
    const char *msg = fa_cl_last_error(ctx);
    int untouched = 1;
    for (int i = 1; i < 4; i++) {
        tu_tensor *g = &r->g[i];
        unsigned char *img = (unsigned char *)malloc(tu_tensor_bytes(g));
        untouched = untouched && img && tu_read(ctx, r->mem[i], tu_tensor_bytes(g), img) == 0;
        for (size_t e = 0; untouched && e < g->elems; e++)
            untouched = tu_load_bits(g->dtype, img, e) == tu_sentinel_bits(g->dtype);
        free(img);
    }
    tu_expect(t, st == want && strstr(msg, needle) != NULL && untouched, "invalid: %s -> %s (%s)%s", what,
              fa_cl_status_string(st), msg, untouched ? "" : " -- an output was written");
}

static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &backward_tally;
    const bw_case bc = {{1, 2, 2, 20, 24, 16, F32, 0, -1, -1, "CCCC", 0.0f, 1}, NULL};
    bw_run r;
    if (bw_setup(&r, ctx, &bc, 5) != 0) {
        bw_free(&r);
        return tu_expect(t, 0, "invalid: setup failed"), 0;
    }
    const fa_cl_attention_desc good = r.p.desc;
    fa_cl_backward_args a = r.args;
    a.dout = NULL;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "dout is NULL", "NULL dout");
    a = r.args;
    a.lse = NULL;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "lse is NULL", "NULL lse");
    /* an LSE buffer of another shape: too small for [B, Hq, Sq] */
    cl_mem small = tu_buffer(ctx, CL_MEM_READ_WRITE, 16, NULL);
    a = r.args;
    a.lse = small;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_BUFFER_TOO_SMALL, "lse", "an lse of 16 bytes");
    a = r.args;
    a.dq = r.args.q; /* aliased dq / q: q is a CL_MEM_READ_ONLY input here */
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "READ_ONLY", "dq aliasing q");
    a = r.args;
    a.dq = r.args.o;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "overlaps", "dq aliasing o");
    cl_mem big = tu_buffer(ctx, CL_MEM_READ_WRITE, 16384, NULL); /* room for either view */
    a = r.args;
    a.dq = a.dk = big;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "overlaps", "dq and dk in one buffer");
    a = r.args;
    a.dv = r.args.dk;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "overlaps", "dv aliasing dk");

    /* the extension rule: a caller built against 0.4's header (no modifiers' buffers) is served */
    a = r.args;
    a.struct_size = offsetof(fa_cl_backward_args, alibi_slopes);
    {
        const fa_cl_status st = fa_cl_attention_backward(ctx, &good, &a);
        tu_expect(t, st == FA_CL_SUCCESS, "invalid: args of 0.4's size (%zu bytes) -> %s", a.struct_size,
                  fa_cl_status_string(st));
        for (int i = 1; i < 4; i++) /* back to the sentinel for the checks that follow */
            tu_write(ctx, r.mem[i], tu_tensor_bytes(&r.g[i]), r.g[i].img);
    }
    a = r.args;
    a.struct_size = 8;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "struct_size", "args.struct_size 8");
    /* the extension rule: a newer header's struct with a field this library does not know set is
     * UNSUPPORTED (its feature is not in this library), as for the descriptor and the forward's args */
    struct newer {
        fa_cl_backward_args a;
        void *future_field;
    } n = {r.args, (void *)&r};
    n.a.struct_size = sizeof n;
    expect_refused(t, ctx, &r, &good, &n.a, FA_CL_ERROR_UNSUPPORTED, "does not know",
                   "a newer args struct with an unknown field set");
    a = r.args;
    a.num_wait = 1;
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "num_wait", "num_wait 1 with no list");
    fa_cl_attention_desc d = good;
    d.dq_stride[2] = -1;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "dq_stride", "a negative dq stride");
    d = good;
    d.dk_stride[0] = 24 * 16, d.dk_stride[1] = 8, d.dk_stride[2] = 16; /* heads 8 elements apart: rows overlap */
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "overlap", "dk rows overlapping");
    d = good;
    d.dv_offset = 1000000;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_BUFFER_TOO_SMALL, "dv", "dv's offset past its buffer");
    /* the modifiers' buffers: required with their fields, refused without them */
    d = good;
    d.mask = FA_CL_MASK_F32;
    d.mask_stride[2] = 24;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "mask is NULL", "a mask without args.mask");
    d = good;
    d.sinks = 1;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "dsink is NULL",
                   "sinks without args.dsink");
    a = r.args;
    a.dsink = big;
    expect_refused(t, ctx, &r, &d, &a, FA_CL_ERROR_INVALID_ARGUMENT, "sinks is NULL", "sinks without args.sinks");
    a.sinks = small;
    a.dsink = small;
    expect_refused(t, ctx, &r, &d, &a, FA_CL_ERROR_INVALID_ARGUMENT, "dsink overlaps", "dsink aliasing sinks");
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "dsink is given",
                   "args.dsink without desc.sinks");
    d = good;
    d.alibi = 1;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "alibi_slopes is NULL",
                   "ALiBi without args.alibi_slopes");
    d = good;
    d.kv_seqlens = 1;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "cache_seqlens is NULL",
                   "kv_seqlens without args.cache_seqlens");
    a = r.args;
    a.cu_seqlens_q = r.args.lse; /* given, but desc.total_q is 0 */
    expect_refused(t, ctx, &r, &good, &a, FA_CL_ERROR_INVALID_ARGUMENT, "cu_seqlens_q is given",
                   "cu_seqlens_q without desc.total_q");
    d = good;
    d.page_size = 16, d.num_pages = 4, d.pages_per_seq = 2;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_UNSUPPORTED, "paged", "a paged K/V");
    d = good;
    d.total_q = 40, d.q_stride[0] = 0, d.q_stride[1] = 16, d.q_stride[2] = 32, d.dq_stride[0] = 7;
    d.dq_stride[1] = 16, d.dq_stride[2] = 32;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "dq_stride[0] must be 0",
                   "varlen dq with a batch stride");
    d = good;
    d.k_type = FA_CL_STORAGE_F16;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_UNSUPPORTED, "storage types", "k in another type");
    d = good;
    d.head_dim = 0;
    expect_refused(t, ctx, &r, &d, &r.args, FA_CL_ERROR_INVALID_ARGUMENT, "head_dim", "head_dim 0");
    expect_refused(t, ctx, &r, &good, NULL, FA_CL_ERROR_INVALID_ARGUMENT, "args is NULL", "NULL args");
    fa_cl_backward_plan *plan = (fa_cl_backward_plan *)&r; /* not NULL: must be cleared */
    const fa_cl_status st = fa_cl_backward_plan_create(ctx, NULL, &plan);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && plan == NULL, "invalid: fa_cl_backward_plan_create(desc NULL) "
              "-> %s, *out NULL", fa_cl_status_string(st));
    tu_expect(t, fa_cl_backward_plan_run(NULL, &r.args) == FA_CL_ERROR_INVALID_ARGUMENT,
              "invalid: fa_cl_backward_plan_run(NULL plan)");
    fa_cl_backward_plan_release(NULL);
    if (small)
        clReleaseMemObject(small);
    if (big)
        clReleaseMemObject(big);
    bw_free(&r);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"shapes", run_shapes},       {"reference", run_reference}, {"determinism", run_determinism},
        {"invalid", run_invalid},     {"tiny", run_tiny},           {"mma", run_mma},
        {"varlen", run_varlen},       {"wgmma", run_wgmma},         {"mods", run_mods},
    };
    return tu_main(&backward_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
