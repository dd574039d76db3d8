/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Numbers at the edges, on the device (CTest runs each subset with FA_CL_KERNEL_VARIANT=portable and
 * =portable-tiled; on an NVIDIA GPU the f16/bf16 cases of both take nvidia-mma, the f32 ones the
 * forced family):
 *
 *   test_edges nan_inf      a NaN or an Inf in one q row, one k row or one v element: the rows that
 *                           see it follow the float64 reference (NaN where it is NaN, the same
 *                           infinities); every other row, head and batch is bitwise what the run
 *                           without it gave. Never hangs: every call completes.
 *   test_edges magnitudes   scores around +-1e4 (|q.k| * scale), scale 1e-30 (uniform weights),
 *                           f16 values at the f16 maximum (65504: the output stays finite, no
 *                           spurious overflow), and an f16 +Inf in v (the rows that see it give +Inf,
 *                           as the reference does): all against float64 (and the CLBlast reference)
 *   test_edges determinism  the same inputs 100 times: o and LSE bitwise identical every time
 *   test_edges subbuffers   q, k, v and o each a sub-buffer (clCreateSubBuffer) of one parent, at
 *                           aligned origins, with element offsets and strides inside: results against
 *                           float64, and nothing of the parent outside o's view written
 *   test_edges offset64     a view at an element offset past 2^29 in a buffer of the device's maximum
 *                           allocation (f16): offsets are 64-bit in every kernel (there is no 32-bit
 *                           path), so the result is right there too
 *   test_edges long_rows    f32 rows of 2^20 keys with near-uniform weights and positive v (the case
 *                           where one fp32 accumulator drifts: 1.1e-3 relative at 4M keys before the
 *                           two-level accumulation) against float64; and rows of 2^25 + 4097
 *                           identical keys (a seqlen stride of 0: one K and V row read every time) in
 *                           f32, f16 and bf16, whose output is v exactly and LSE s + ln(Sk); a sum of
 *                           ones in fp32 stops at 2^24 terms, and this row gave half of v before.
 *                           `test_edges long_rows N` takes N identical keys instead (2^30 - 1, the
 *                           largest seqlen_k: 2 to 7 minutes on a 2-core CPU)
 *   test_edges long_values  rows of 2^16 and 2^20 keys (`long_values 24 1073741823`: 2^24 and
 *                           2^30 - 1 keys, powers of two up to 30 or key counts; a dtype name: that
 *                           one only; K and V above 4 GiB: identical keys only), B = H = 1, 3 query
 *                           rows, head_dim 8, in f32, f16, bf16 and f16 with o in f32 (f32's bar):
 *                           identical keys (every weight 1: o = v) and near-identical ones (k0 +
 *                           noise: near-uniform weights), with values that are not dyadic (0.3,
 *                           1.1, -0.7, ...: fp32 sums of them round), each column of one sign,
 *                           against float64 within o's bar. One fp32 sum of 65536 such terms was
 *                           6.6e-4 off in f32 (6 times the bar), one of 2^23 9% in bf16: the chunk
 *                           lengths and the compensated merges keep the error the same at every
 *                           length (src/plan/planner.h)
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16

static tu_tally tally = {"edges", 0, 0};

/* Rewrite p's inputs from p->x (after the caller changed them), recompute the float64 reference. */
static int refresh(tu_problem *p, fa_cl_context *ctx)
{
    for (int t = 0; t < 3; t++) {
        tu_tensor_put(&p->t[t], p->x[t]);
        if (ctx && tu_write(ctx, p->mem[t], tu_tensor_bytes(&p->t[t]), p->t[t].img) != 0)
            return -1;
    }
    tu_attention_f64(&p->c, p->x[0], p->x[1], p->x[2], p->ref_o, p->ref_lse);
    return ctx ? tu_problem_poison(p, ctx) : 0;
}

/* One forward through a fresh plan; o and lse read back into p's images. */
static int forward(fa_cl_context *ctx, tu_problem *p, char *why, size_t n)
{
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p->desc, &plan);
    cl_event done = NULL;
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_forward(plan, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->c.lse ? p->lse_mem : NULL, 0,
                                NULL, &done);
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS) {
        snprintf(why, n, "%s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        return -1;
    }
    cl_int es = clWaitForEvents(1, &done);
    clReleaseEvent(done);
    if (es != CL_SUCCESS || tu_problem_read(p, ctx) != 0) {
        snprintf(why, n, "the call did not complete (%d)", (int)es);
        return -1;
    }
    return 0;
}

/* ---- NaN / Inf -------------------------------------------------------------------------------- */

static const tu_case iso = {2, 4, 2, 40, 40, 16, F32, 1, -1, -1, NULL, 0.0f, 1}; /* GQA 2:1, causal */
static const tu_case iso_win = {2, 2, 2, 33, 47, 12, F16, 0, 6, 3, "PPPP", 0.0f, 1};

static void poison_case(fa_cl_context *ctx, const tu_case *c, int t, int64_t b, int64_t h, int64_t s, int64_t d,
                        float value, int whole_row, const char *what)
{
    tu_problem p;
    char why[600] = "", cs[200];
    tu_case_format(c, cs, sizeof cs);
    if (tu_problem_init(&p, ctx, c, 777, 1) != 0) {
        tu_expect(&tally, 0, "%s: setup", what);
        return;
    }
    /* the clean run */
    if (forward(ctx, &p, why, sizeof why) != 0) {
        tu_expect(&tally, 0, "%s %s: clean run: %s", what, cs, why);
        tu_problem_free(&p);
        return;
    }
    const size_t ob = tu_tensor_bytes(&p.t[3]), lb = p.lse_elems * sizeof(float);
    unsigned char *clean_o = (unsigned char *)malloc(ob);
    float *clean_l = (float *)malloc(lb);
    memcpy(clean_o, p.t[3].img, ob);
    memcpy(clean_l, p.lse_img, lb);
    /* poison one element (or a whole head_dim row) of tensor t */
    const tu_tensor *tt = &p.t[t];
    for (int64_t e = whole_row ? 0 : d; e < (whole_row ? c->D : d + 1); e++)
        p.x[t][(size_t)(((b * tt->dim[1] + h) * tt->dim[2] + s) * tt->dim[3] + e)] = value;
    refresh(&p, ctx);
    int ok = forward(ctx, &p, why, sizeof why) == 0;
    size_t affected = 0, rows = p.lse_elems, mismatched = 0, unchanged_bad = 0;
    const int64_t D = c->D;
    const tu_tensor *to = &p.t[3];
    for (size_t r = 0; ok && r < rows; r++) {
        const int64_t bb = (int64_t)(r / (size_t)(c->Hq * c->Sq)), hh = (int64_t)(r / (size_t)c->Sq % (size_t)c->Hq),
                      ss = (int64_t)(r % (size_t)c->Sq);
        int row_affected = !isfinite(p.ref_lse[r]) && !(isinf(p.ref_lse[r]) && p.ref_lse[r] < 0);
        for (int64_t e = 0; e < D; e++)
            row_affected = row_affected || !isfinite(p.ref_o[r * (size_t)D + (size_t)e]);
        affected += (size_t)row_affected;
        for (int64_t e = 0; e < D; e++) {
            const size_t idx = tu_tensor_index(to, bb, hh, ss, e);
            const double got = tu_load(c->dtype, to->img, idx), ref = p.ref_o[r * (size_t)D + (size_t)e];
            if (!row_affected) { /* bitwise the clean run's */
                if (memcmp(to->img + idx * tu_dtype_size(c->dtype), clean_o + idx * tu_dtype_size(c->dtype),
                           tu_dtype_size(c->dtype)) != 0)
                    unchanged_bad++;
            } else if (isnan(ref) ? !isnan(got) : isinf(ref) ? got != ref : !isfinite(got)) {
                mismatched++;
            }
        }
        if (!row_affected && memcmp(&p.lse_img[r], &clean_l[r], sizeof(float)) != 0)
            unchanged_bad++;
        if (row_affected && (isnan(p.ref_lse[r]) ? !isnan(p.lse_img[r]) : 0))
            mismatched++;
    }
    tu_expect(&tally, ok && affected > 0 && mismatched == 0 && unchanged_bad == 0,
              "%s %s: %zu of %zu rows see it; %zu elements there differ from the float64 reference's NaN/Inf, "
              "%zu elements of the other rows/heads/batches differ from the clean run %s",
              what, cs, affected, rows, mismatched, unchanged_bad, why);
    free(clean_o);
    free(clean_l);
    tu_problem_free(&p);
}

static int subset_nan_inf(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    poison_case(ctx, &iso, 0, 1, 2, 17, 5, NAN, 0, "NaN in q[1,2,17,5]: only that row");
    poison_case(ctx, &iso, 0, 0, 1, 30, 0, INFINITY, 0, "+Inf in q[0,1,30,0]: only that row");
    poison_case(ctx, &iso, 1, 1, 0, 21, 3, NAN, 0, "NaN in k[1,0,21,3]: rows >= 21 of heads 0-1, batch 1");
    poison_case(ctx, &iso, 1, 0, 1, 5, 0, -INFINITY, 1, "-Inf row k[0,1,5,:]: rows that see key 5 of heads 2-3");
    poison_case(ctx, &iso, 2, 1, 1, 12, 7, NAN, 0, "NaN in v[1,1,12,7]: column 7 of rows >= 12, heads 2-3, batch 1");
    poison_case(ctx, &iso, 2, 0, 0, 0, 2, INFINITY, 0, "+Inf in v[0,0,0,2]: column 2 of every row of heads 0-1");
    poison_case(ctx, &iso_win, 1, 0, 1, 30, 4, NAN, 0, "NaN in k (window (6,3)): only the rows whose window has it");
    poison_case(ctx, &iso_win, 2, 1, 0, 40, 0, NAN, 1, "NaN row v (window (6,3)): only the rows whose window has it");
    return 0;
}

/* ---- magnitudes ------------------------------------------------------------------------------- */

/* with_reference: also run the CLBlast reference and hold it to the same bar. Not done for scores of
 * 1e4 (its fp32 score GEMM is off by ~4e-5 in the output there: measured, above the f32 bar) nor for
 * an Inf in v (its P.V GEMM multiplies masked p = 0 by Inf: NaN in rows that cannot see the key, the
 * documented difference; the fused path skips masked keys). */
static void check_case(fa_cl_context *ctx, tu_problem *p, const char *what, int with_reference)
{
    char why[600] = "", detail[1024] = "", cs[200];
    tu_case_format(&p->c, cs, sizeof cs);
    if (forward(ctx, p, why, sizeof why) != 0) {
        tu_expect(&tally, 0, "%s %s: %s", what, cs, why);
        return;
    }
    tu_result r;
    tu_problem_check(p, p->ref_o, p->ref_lse, &r);
    tu_result_format(&r, p, detail, sizeof detail);
    int ok = r.ok;
#ifdef FA_CL_EDGES_WITH_REFERENCE
    /* the CLBlast reference gives the same non-finite values and agrees within the bar */
    if (ok && with_reference && fa_cl_reference_forward(ctx, &p->desc, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL,
                                      NULL) == FA_CL_SUCCESS) {
        clFinish(fa_cl_context_queue(ctx));
        tu_problem_read(p, ctx);
        tu_result rr;
        tu_problem_check(p, p->ref_o, p->ref_lse, &rr);
        ok = rr.ok;
        strncat(detail, rr.ok ? "; the CLBlast reference agrees" : "; the CLBlast reference differs: ",
                sizeof detail - strlen(detail) - 1);
        if (!rr.ok)
            strncat(detail, rr.first, sizeof detail - strlen(detail) - 1);
    }
#else
    (void)with_reference;
#endif
    tu_expect(&tally, ok, "%s %s: %s", what, cs, detail);
    tu_problem_poison(p, ctx);
}

static int subset_magnitudes(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_problem p;
    /* |q.k| * scale ~ 1e4: q, k integers of magnitude 20..31 (D = 16: up to 16 * 961 = 15376), scale 1.
     * Integers keep every score exact in fp32 whatever the summation order (< 2^24), so the check is
     * about what the online max must do (no overflow, no loss in the exponent), not about the
     * conditioning of fp32 dot products: at |s| ~ 1e4 one ulp of a score (~1e-3) moves the weights
     * by ~1e-3 relative, beyond the f32 bar for any fp32 implementation (seen on an H200). */
    const tu_case big = {1, 2, 2, 37, 45, 16, F32, 0, -1, -1, NULL, 1.0f, 1};
    if (tu_problem_init(&p, ctx, &big, 5, 1) == 0) {
        tu_rng rng;
        tu_rng_seed(&rng, 11);
        for (int t = 0; t < 2; t++)
            for (size_t i = 0; i < (size_t)(big.B * big.Hq * (t ? big.Sk : big.Sq) * big.D); i++)
                p.x[t][i] = (float)(20 + (int)(tu_rng_next(&rng) % 12)) * ((tu_rng_next(&rng) & 1) ? 1.0f : -1.0f);
        refresh(&p, ctx);
        double mx = 0;
        for (size_t i = 0; i < p.lse_elems; i++)
            mx = fabs(p.ref_lse[i]) > mx ? fabs(p.ref_lse[i]) : mx;
        char what[96];
        snprintf(what, sizeof what, "scores up to |%.3g| (online max, no overflow)", mx);
        check_case(ctx, &p, what, 0);
        tu_problem_free(&p);
    }
    /* tiny: scale 1e-30, all weights equal */
    const tu_case tiny = {1, 2, 1, 29, 51, 32, F16, 1, -1, -1, NULL, 1e-30f, 1};
    if (tu_problem_init(&p, ctx, &tiny, 6, 1) == 0) {
        check_case(ctx, &p, "scale 1e-30 (uniform weights)", 1);
        tu_problem_free(&p);
    }
    /* f16 at its maximum: 65504 everywhere in v; the output is 65504, not +Inf */
    const tu_case f16max = {1, 2, 2, 21, 70, 8, F16, 0, -1, -1, NULL, 0.0f, 1};
    if (tu_problem_init(&p, ctx, &f16max, 7, 1) == 0) {
        for (size_t i = 0; i < (size_t)(f16max.B * f16max.Hkv * f16max.Sk * f16max.D); i++)
            p.x[2][i] = (i % 2) ? 65504.0f : -65504.0f;
        refresh(&p, ctx);
        check_case(ctx, &p, "f16 v = +-65504 (the f16 maximum): finite outputs", 1);
        tu_problem_free(&p);
    }
    /* every score of a row -inf (a -Inf in q against positive k): 0 and LSE -inf, as a row that
     * sees no key, in the fused path and the reference alike */
    const tu_case neg = {1, 2, 1, 11, 29, 8, F32, 0, -1, -1, NULL, 0.0f, 1};
    if (tu_problem_init(&p, ctx, &neg, 9, 1) == 0) {
        for (size_t j = 0; j < (size_t)(neg.Sk); j++)
            p.x[1][j * neg.D] = fabsf(p.x[1][j * neg.D]);
        p.x[0][3 * neg.D] = -INFINITY; /* head 0, row 3 */
        refresh(&p, ctx);
        check_case(ctx, &p, "every score of a row -inf: 0 and LSE -inf", 1);
        tu_problem_free(&p);
    }
    /* scales beyond FLT_MAX / log2(e) (the exponent's factor is clamped there): the LSE still uses
     * the scale itself */
    const tu_case huge = {1, 1, 1, 5, 9, 4, F32, 0, -1, -1, NULL, 2.97e38f, 1};
    if (tu_problem_init(&p, ctx, &huge, 10, 1) == 0) {
        check_case(ctx, &p, "scale 2.97e38: outputs and LSE", 0);
        tu_problem_free(&p);
    }
    /* an f16 +Inf in v: the rows that see it give +Inf in that column */
    const tu_case f16inf = {1, 1, 1, 9, 9, 4, F16, 1, -1, -1, NULL, 0.0f, 1};
    if (tu_problem_init(&p, ctx, &f16inf, 8, 1) == 0) {
        p.x[2][4 * 4 + 1] = INFINITY; /* key 4, column 1 */
        refresh(&p, ctx);
        check_case(ctx, &p, "f16 +Inf in v[key 4, column 1]: +Inf in rows >= 4", 0);
        tu_problem_free(&p);
    }
    return 0;
}

/* ---- determinism ------------------------------------------------------------------------------ */

static int subset_determinism(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const tu_case cases[] = {
        {2, 4, 2, 100, 130, 64, F16, 1, -1, -1, NULL, 0.0f, 1},
        {1, 2, 2, 77, 77, 40, F32, 0, 16, 8, "SSSS", 0.0f, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        tu_problem p;
        char cs[200];
        tu_case_format(&cases[ci], cs, sizeof cs);
        if (tu_problem_init(&p, ctx, &cases[ci], 9, 0) != 0)
            continue;
        const size_t ob = tu_tensor_bytes(&p.t[3]), lb = (p.lse_elems + p.lse_slack) * sizeof(float);
        unsigned char *o0 = (unsigned char *)malloc(ob), *l0 = (unsigned char *)malloc(lb);
        fa_cl_plan *plan = NULL;
        int diff = 0, runs = 0;
        if (fa_cl_plan_create(ctx, &p.desc, &plan) == FA_CL_SUCCESS) {
            for (int i = 0; i < 100; i++) {
                tu_problem_poison(&p, ctx);
                /* alternate the shared plan and the one-shot call: both must give the same bits */
                fa_cl_status st = (i % 2) ? fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3],
                                                               p.lse_mem, 0, NULL, NULL)
                                          : fa_cl_attention_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2],
                                                                    p.mem[3], p.lse_mem, 0, NULL, NULL);
                if (st != FA_CL_SUCCESS || tu_problem_read(&p, ctx) != 0)
                    break;
                runs++;
                if (i == 0) {
                    memcpy(o0, p.t[3].img, ob);
                    memcpy(l0, p.lse_img, lb);
                } else if (memcmp(o0, p.t[3].img, ob) != 0 || memcmp(l0, p.lse_img, lb) != 0) {
                    diff++;
                }
            }
        }
        fa_cl_plan_release(plan);
        tu_expect(&tally, runs == 100 && diff == 0, "determinism %s: %d runs, %d not bitwise identical to the first",
                  cs, runs, diff);
        free(o0);
        free(l0);
        tu_problem_free(&p);
    }
    return 0;
}

/* ---- sub-buffers ------------------------------------------------------------------------------ */

static int subset_subbuffers(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    cl_uint align_bits = 0;
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    const size_t align = align_bits >= 8 ? align_bits / 8 : 128;
    const tu_case cases[] = {
        {2, 4, 2, 29, 41, 24, F16, 1, -1, -1, "PQSP", 0.0f, 1},
        {1, 2, 1, 33, 17, 40, F32, 0, 5, 5, "CCCC", 0.0f, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const tu_case *c = &cases[ci];
        tu_problem p;
        char cs[200], detail[1024] = "";
        tu_case_format(c, cs, sizeof cs);
        if (tu_problem_init(&p, ctx, c, 21 + ci, 1) != 0)
            continue;
        const size_t es = tu_dtype_size(c->dtype);
        size_t origin[4], at = align; /* the first sub-buffer does not start at the parent's start */
        for (int t = 0; t < 4; t++) {
            origin[t] = at;
            at = (at + tu_tensor_bytes(&p.t[t]) + align - 1) / align * align + align;
        }
        const size_t total = at;
        unsigned char *img = (unsigned char *)malloc(total);
        for (size_t i = 0; i < total / es; i++)
            tu_store_bits(c->dtype, img, i, tu_sentinel_bits(c->dtype));
        for (int t = 0; t < 4; t++)
            memcpy(img + origin[t], p.t[t].img, tu_tensor_bytes(&p.t[t]));
        cl_mem parent = tu_buffer(ctx, CL_MEM_READ_WRITE, total, img), sub[4] = {NULL, NULL, NULL, NULL};
        cl_int err = CL_SUCCESS;
        for (int t = 0; t < 4 && parent; t++) {
            cl_buffer_region reg = {origin[t], tu_tensor_bytes(&p.t[t])};
            sub[t] = clCreateSubBuffer(parent, t < 3 ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE,
                                       CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
        }
        int ok = parent && sub[0] && sub[1] && sub[2] && sub[3];
        fa_cl_status st = FA_CL_ERROR_OPENCL;
        if (ok) {
            fa_cl_plan *plan = NULL;
            st = fa_cl_plan_create(ctx, &p.desc, &plan);
            if (st == FA_CL_SUCCESS)
                st = fa_cl_plan_forward(plan, sub[0], sub[1], sub[2], sub[3], p.lse_mem, 0, NULL, NULL);
            fa_cl_plan_release(plan);
            ok = st == FA_CL_SUCCESS;
        }
        if (ok) {
            unsigned char *back = (unsigned char *)malloc(total);
            clFinish(fa_cl_context_queue(ctx));
            tu_read(ctx, parent, total, back);
            tu_problem_read(&p, ctx); /* lse */
            memcpy(p.t[3].img, back + origin[3], tu_tensor_bytes(&p.t[3]));
            tu_result r;
            tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
            tu_result_format(&r, &p, detail, sizeof detail);
            /* everything of the parent outside o's sub-buffer is as it was */
            int outside = memcmp(back, img, origin[3]) == 0 &&
                          memcmp(back + origin[3] + tu_tensor_bytes(&p.t[3]), img + origin[3] + tu_tensor_bytes(&p.t[3]),
                                 total - origin[3] - tu_tensor_bytes(&p.t[3])) == 0;
            ok = r.ok && outside;
            if (!outside)
                strncat(detail, "; the parent changed outside o's sub-buffer", sizeof detail - strlen(detail) - 1);
            free(back);
        } else {
            snprintf(detail, sizeof detail, "%s (%d): %.300s", fa_cl_status_string(st), (int)err,
                     fa_cl_last_error(ctx));
        }
        tu_expect(&tally, ok, "sub-buffers %s: q, k, v, o at origins %zu, %zu, %zu, %zu of one %zu-byte buffer: %s",
                  cs, origin[0], origin[1], origin[2], origin[3], total, detail);
        for (int t = 0; t < 4; t++)
            if (sub[t])
                clReleaseMemObject(sub[t]);
        if (parent)
            clReleaseMemObject(parent);
        free(img);
        tu_problem_free(&p);
    }
    return 0;
}

/* ---- 64-bit offsets --------------------------------------------------------------------------- */

static int subset_offset64(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    cl_ulong max_alloc = 0;
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    if (max_alloc > ((cl_ulong)1 << 31))
        max_alloc = (cl_ulong)1 << 31; /* 2 GiB: offsets past 2^29 f16 elements */
    const size_t total = (size_t)max_alloc / 2; /* f16 elements */
    const tu_case c = {1, 2, 1, 33, 47, 24, F16, 1, -1, -1, "PPPP", 0.0f, 1};
    tu_problem p;
    if (total < ((size_t)1 << 26) || tu_problem_init(&p, NULL, &c, 12, 1) != 0) {
        tu_expect(&tally, 0, "offset64: the device allows only %llu bytes per allocation",
                  (unsigned long long)max_alloc);
        return 0;
    }
    /* q, k, v, o images placed one after the other at the end of the buffer */
    size_t need = 0;
    for (int t = 0; t < 4; t++)
        need += p.t[t].elems + 64;
    size_t base[4], at = total - need;
    cl_int err;
    cl_mem big = clCreateBuffer(fa_cl_context_cl_context(ctx), CL_MEM_READ_WRITE, total * 2, NULL, &err);
    cl_mem lse = tu_buffer(ctx, CL_MEM_READ_WRITE, (p.lse_elems + p.lse_slack) * sizeof(float), NULL);
    if (!big || !lse) {
        tu_expect(&tally, 0, "offset64: cannot allocate %zu bytes (%d)", total * 2, (int)err);
        if (big)
            clReleaseMemObject(big);
        if (lse)
            clReleaseMemObject(lse);
        tu_problem_free(&p);
        return 0;
    }
    cl_command_queue queue = fa_cl_context_queue(ctx);
    fa_cl_attention_desc d = p.desc;
    size_t *offs[4] = {&d.q_offset, &d.k_offset, &d.v_offset, &d.o_offset};
    for (int t = 0; t < 4; t++) {
        base[t] = at;
        at += p.t[t].elems + 64;
        *offs[t] = base[t] + p.t[t].offset;
        clEnqueueWriteBuffer(queue, big, CL_TRUE, base[t] * 2, tu_tensor_bytes(&p.t[t]), p.t[t].img, 0, NULL, NULL);
    }
    for (size_t i = 0; i < p.lse_elems + p.lse_slack; i++)
        tu_store_bits(F32, p.lse_img, i, tu_sentinel_bits(F32));
    clEnqueueWriteBuffer(queue, lse, CL_TRUE, 0, (p.lse_elems + p.lse_slack) * 4, p.lse_img, 0, NULL, NULL);
    char detail[1024] = "";
    int ok = 0;
    for (int api = 0; api < 2; api++) {
        fa_cl_status st;
        if (api == 0) {
            fa_cl_plan *plan = NULL;
            st = fa_cl_plan_create(ctx, &d, &plan);
            if (st == FA_CL_SUCCESS)
                st = fa_cl_plan_forward(plan, big, big, big, big, lse, 0, NULL, NULL);
            fa_cl_plan_release(plan);
        } else {
            st = fa_cl_reference_forward(ctx, &d, big, big, big, big, lse, 0, NULL, NULL);
        }
        if (st == FA_CL_ERROR_UNSUPPORTED && api == 1) /* built without CLBlast */
            continue;
        if (st != FA_CL_SUCCESS) {
            tu_expect(&tally, 0, "offset64 %s: %s: %.300s", api ? "reference" : "fused", fa_cl_status_string(st),
                      fa_cl_last_error(ctx));
            continue;
        }
        clFinish(queue);
        clEnqueueReadBuffer(queue, big, CL_TRUE, base[3] * 2, tu_tensor_bytes(&p.t[3]), p.t[3].img, 0, NULL, NULL);
        clEnqueueReadBuffer(queue, lse, CL_TRUE, 0, (p.lse_elems + p.lse_slack) * 4, p.lse_img, 0, NULL, NULL);
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        ok = r.ok;
        tu_expect(&tally, ok, "offset64 %s: q at element %zu, o at %zu of a %zu-element f16 buffer (byte offsets past "
                  "2^30): %s", api ? "reference" : "fused", d.q_offset, d.o_offset, total, detail);
        /* poison o again for the next run */
        tu_tensor_fill_bits(&p.t[3], tu_sentinel_bits(F16));
        clEnqueueWriteBuffer(queue, big, CL_TRUE, base[3] * 2, tu_tensor_bytes(&p.t[3]), p.t[3].img, 0, NULL, NULL);
        for (size_t i = 0; i < p.lse_elems + p.lse_slack; i++)
            tu_store_bits(F32, p.lse_img, i, tu_sentinel_bits(F32));
        clEnqueueWriteBuffer(queue, lse, CL_TRUE, 0, (p.lse_elems + p.lse_slack) * 4, p.lse_img, 0, NULL, NULL);
    }
    clReleaseMemObject(big);
    clReleaseMemObject(lse);
    tu_problem_free(&p);
    return 0;
}

/* ---- long rows -------------------------------------------------------------------------------- */

/* N identical keys: k and v are one row each, read through a seqlen stride of 0. Every weight is 1,
 * so o = v and LSE = scale * q.k + ln(N), whatever the kernel's summation order. */
static void identical_keys(fa_cl_context *ctx, fa_cl_dtype dtype, int64_t n)
{
    enum { D = 4, H = 2, SQ = 3 };
    const float vals[D] = {0.25f, -0.5f, 0.75f, 1.0f}; /* exact in every storage type */
    unsigned char qkv[D * 4], o_img[H * SQ * D * 4];
    float lse[H * SQ];
    for (int e = 0; e < D; e++)
        tu_store(dtype, qkv, (size_t)e, vals[e]);
    double dot = 0;
    for (int e = 0; e < D; e++)
        dot += (double)vals[e] * vals[e];
    const double want_lse = dot / sqrt((double)D) + log((double)n);
    const size_t es = tu_dtype_size(dtype);
    cl_mem in = tu_buffer(ctx, CL_MEM_READ_ONLY, D * es, qkv);
    cl_mem o = tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof o_img, NULL);
    cl_mem l = tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof lse, NULL);
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, H, SQ, n, D, dtype);
    /* head and seqlen strides 0: every q, k and v row of every head is the buffer's one row (the
     * batch stride, unused with B = 1, keeps the strides from being all zero, i.e. contiguous) */
    const int64_t one_row[3] = {1, 0, 0};
    memcpy(d.q_stride, one_row, sizeof one_row);
    memcpy(d.k_stride, one_row, sizeof one_row);
    memcpy(d.v_stride, one_row, sizeof one_row);
    char why[400] = "";
    int ok = in && o && l;
    const double t0 = tu_now_ms();
    if (ok) {
        fa_cl_status st = fa_cl_attention_forward(ctx, &d, in, in, in, o, l, 0, NULL, NULL);
        ok = st == FA_CL_SUCCESS && tu_read(ctx, o, sizeof o_img, o_img) == 0 && tu_read(ctx, l, sizeof lse, lse) == 0;
        if (st != FA_CL_SUCCESS)
            snprintf(why, sizeof why, "%s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    double worst = 0, worst_lse = 0;
    for (int r = 0; ok && r < H * SQ; r++) {
        for (int e = 0; e < D; e++) {
            double got = tu_load(dtype, o_img, (size_t)(r * D + e));
            if (!fa_cl_tolerance_ok(dtype, got, vals[e]))
                ok = 0, snprintf(why, sizeof why, "row %d o[%d] = %.9g, want %g", r, e, got, (double)vals[e]);
            worst = fmax(worst, fabs(got - vals[e]));
        }
        if (!fa_cl_tolerance_lse_ok(lse[r], want_lse))
            ok = 0, snprintf(why, sizeof why, "row %d LSE %.9g, want %.9g", r, (double)lse[r], want_lse);
        worst_lse = fmax(worst_lse, fabs(lse[r] - want_lse));
    }
    tu_expect(&tally, ok, "%lld identical keys, %s: max|o - v| %.3g, max|LSE - ref| %.3g (%.1f s) %s", (long long)n,
              tu_dtype_name(dtype), worst, worst_lse, (tu_now_ms() - t0) / 1e3, why);
    if (in) clReleaseMemObject(in);
    if (o) clReleaseMemObject(o);
    if (l) clReleaseMemObject(l);
}

/* argv[0], if given: that many identical keys, f32 only */
static int subset_long_rows(fa_cl_context *ctx, int argc, char **argv)
{
    const int64_t n_identical = argc > 0 ? strtoll(argv[0], NULL, 10) : 0;
    /* near-uniform weights (scores within +-0.05) and v in [1/16, 1]: every p.v adds to one sum */
    const tu_case near_uniform = {1, 1, 1, 8, (int64_t)1 << 20, 8, F32, 0, -1, -1, NULL, 0.0f, 1};
    tu_problem p;
    if (tu_problem_init(&p, ctx, &near_uniform, 21, 0) == 0) {
        const size_t nq = (size_t)(near_uniform.Sq * near_uniform.D), nk = (size_t)(near_uniform.Sk * near_uniform.D);
        for (size_t i = 0; i < nq; i++)
            p.x[0][i] *= 0.02f;
        for (size_t i = 0; i < nk; i++)
            p.x[2][i] = fabsf(p.x[2][i]);
        p.ref_o = (double *)malloc(nq * sizeof(double));
        p.ref_lse = (double *)malloc((size_t)near_uniform.Sq * sizeof(double));
        if (p.ref_o && p.ref_lse && refresh(&p, ctx) == 0)
            check_case(ctx, &p, "2^20 keys, near-uniform weights, positive v", 0);
        tu_problem_free(&p);
    }
    if (n_identical > 0) {
        identical_keys(ctx, F32, n_identical);
        return 0;
    }
    const int64_t n = ((int64_t)1 << 25) + 4097;
    identical_keys(ctx, F32, n);
    identical_keys(ctx, F16, n);
    identical_keys(ctx, BF16, n);
    return 0;
}

/* ---- long rows of ordinary values ------------------------------------------------------------ */

/* Rows of n keys, B = H = 1, LV_SQ query rows, head_dim LV_D, against float64. Identical keys (a
 * seqlen stride of 0: one K and V row) give every key the weight 1, so o = v whatever the order of
 * the sums; near-identical keys (k0 plus noise, K and V n rows each) give near-uniform weights. The
 * values are not dyadic (0.3, 1.1, ...: in f32 every sum of them rounds), each column one sign, so
 * the error of a long fp32 sum of p * v shows undiluted in the output. */
enum { LV_D = 8, LV_SQ = 3, LV_BLOCK = 1 << 16 };
static const float lv_v[LV_D] = {0.3f, 1.1f, -0.7f, 0.1f, 2.9f, 0.55f, -1.3f, 0.77f};

/* key j's k and v rows of a near-identical row: k0 + noise in +-0.02, v within 30% of lv_v */
static void lv_key(tu_rng *rng, fa_cl_dtype dtype, float k[LV_D], float v[LV_D])
{
    for (int e = 0; e < LV_D; e++) {
        k[e] = tu_round(dtype, 0.5f * lv_v[e] + 0.04f * (float)(tu_rng_uniform(rng) - 0.5));
        v[e] = tu_round(dtype, lv_v[e] * (float)(0.7 + 0.6 * tu_rng_uniform(rng)));
    }
}

/* One row of n identical or near-identical keys in dtype, o in dtype or (o32) f32: passes where
 * every output is within the bar of o's type against float64 (the line gives the worst |o - ref| as
 * a fraction of the bar, the same for the LSE) */
static void long_row(fa_cl_context *ctx, fa_cl_dtype dtype, int64_t n, int near, int o32)
{
    const fa_cl_dtype odt = o32 ? F32 : dtype;
    const size_t es = tu_dtype_size(dtype);
    const int64_t rows = near ? n : 1;
    char why[600] = "", kernel[64] = "?";
    if ((cl_ulong)rows * LV_D * es > (cl_ulong)1 << 32) { /* beyond 2^27 f32 keys: identical keys only */
        printf("(%lld near-identical keys, %s: K and V would take more than 4 GiB each, not run)\n", (long long)n,
               tu_dtype_name(dtype));
        return;
    }
    const double t0 = tu_now_ms();
    tu_rng rng;
    tu_rng_seed(&rng, 4400 + (uint64_t)n + (uint64_t)near);
    float q[LV_SQ][LV_D];
    unsigned char q_img[LV_SQ * LV_D * 4], o_img[LV_SQ * LV_D * 4];
    for (int r = 0; r < LV_SQ; r++)
        for (int e = 0; e < LV_D; e++) {
            q[r][e] = tu_round(dtype, (float)(2.0 * tu_rng_uniform(&rng) - 1.0));
            tu_store(dtype, q_img, (size_t)(r * LV_D + e), q[r][e]);
        }
    const double scale = 1.0 / sqrt((double)LV_D);
    /* float64 sums relative to the scores of k0 = lv_v / 2 (within 0.1 of every score: no overflow) */
    double shift[LV_SQ], sum_p[LV_SQ] = {0}, sum_pv[LV_SQ][LV_D] = {{0}};
    for (int r = 0; r < LV_SQ; r++) {
        shift[r] = 0;
        for (int e = 0; e < LV_D; e++)
            shift[r] += scale * q[r][e] * 0.5 * lv_v[e];
    }
    cl_mem qm = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof q_img, q_img);
    cl_mem km = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)rows * LV_D * es, NULL);
    cl_mem vm = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)rows * LV_D * es, NULL);
    cl_mem om = tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof o_img, NULL);
    cl_mem lm = tu_buffer(ctx, CL_MEM_READ_WRITE, LV_SQ * sizeof(float), NULL);
    unsigned char *kb = (unsigned char *)malloc((size_t)LV_BLOCK * LV_D * es),
                  *vb = (unsigned char *)malloc((size_t)LV_BLOCK * LV_D * es);
    int ok = qm && km && vm && om && lm && kb && vb;
    cl_command_queue queue = fa_cl_context_queue(ctx);
    for (int64_t j0 = 0; ok && j0 < rows; j0 += LV_BLOCK) {
        const int64_t m = rows - j0 < LV_BLOCK ? rows - j0 : LV_BLOCK;
        for (int64_t j = 0; j < m; j++) {
            float k[LV_D], v[LV_D];
            if (near) {
                lv_key(&rng, dtype, k, v);
            } else {
                for (int e = 0; e < LV_D; e++)
                    k[e] = tu_round(dtype, 0.5f * lv_v[e]), v[e] = tu_round(dtype, lv_v[e]);
            }
            for (int e = 0; e < LV_D; e++) {
                tu_store(dtype, kb, (size_t)(j * LV_D + e), k[e]);
                tu_store(dtype, vb, (size_t)(j * LV_D + e), v[e]);
            }
            for (int r = 0; r < LV_SQ; r++) {
                double s = 0;
                for (int e = 0; e < LV_D; e++)
                    s += scale * q[r][e] * k[e];
                const double p = exp(s - shift[r]) * (near ? 1.0 : (double)n);
                sum_p[r] += p;
                for (int e = 0; e < LV_D; e++)
                    sum_pv[r][e] += p * v[e];
            }
        }
        const size_t bytes = (size_t)m * LV_D * es;
        ok = clEnqueueWriteBuffer(queue, km, CL_TRUE, (size_t)j0 * LV_D * es, bytes, kb, 0, NULL, NULL) == CL_SUCCESS &&
             clEnqueueWriteBuffer(queue, vm, CL_TRUE, (size_t)j0 * LV_D * es, bytes, vb, 0, NULL, NULL) == CL_SUCCESS;
    }
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, 1, LV_SQ, n, LV_D, dtype);
    if (o32)
        d.o_type = FA_CL_STORAGE_F32;
    if (!near) { /* one K and V row read for every key (the batch stride keeps the strides not all 0) */
        const int64_t one_row[3] = {1, 0, 0};
        memcpy(d.k_stride, one_row, sizeof one_row);
        memcpy(d.v_stride, one_row, sizeof one_row);
    }
    const double t1 = tu_now_ms();
    float lse[LV_SQ];
    if (ok) {
        fa_cl_plan *plan = NULL;
        fa_cl_plan_info info;
        fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
        if (st == FA_CL_SUCCESS && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS)
            snprintf(kernel, sizeof kernel, "%s, %d launches, %d splits", info.kernel, info.launches, info.splits);
        if (st == FA_CL_SUCCESS)
            st = fa_cl_plan_forward(plan, qm, km, vm, om, lm, 0, NULL, NULL);
        fa_cl_plan_release(plan);
        ok = st == FA_CL_SUCCESS && tu_read(ctx, om, sizeof o_img, o_img) == 0 &&
             tu_read(ctx, lm, sizeof lse, lse) == 0;
        if (st != FA_CL_SUCCESS)
            snprintf(why, sizeof why, "%s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    } else {
        snprintf(why, sizeof why, "setup failed");
    }
    double worst = 0, worst_rel = 0, worst_lse = 0;
    for (int r = 0; ok && r < LV_SQ; r++) {
        for (int e = 0; e < LV_D; e++) {
            const double ref = sum_pv[r][e] / sum_p[r], got = tu_load(odt, o_img, (size_t)(r * LV_D + e));
            if (!fa_cl_tolerance_ok(odt, got, ref) && !why[0])
                snprintf(why, sizeof why, "row %d o[%d] = %.9g, want %.9g", r, e, got, ref);
            worst = fmax(worst, fabs(got - ref) / fa_cl_tolerance_bound(odt, ref));
            worst_rel = fmax(worst_rel, fabs(got - ref) / fabs(ref));
        }
        const double ref_lse = shift[r] + log(sum_p[r]);
        if (!fa_cl_tolerance_lse_ok(lse[r], ref_lse) && !why[0])
            snprintf(why, sizeof why, "row %d LSE %.9g, want %.9g", r, (double)lse[r], ref_lse);
        worst_lse = fmax(worst_lse, fabs(lse[r] - ref_lse) / fa_cl_tolerance_lse_bound(ref_lse));
    }
    tu_expect(&tally, ok && !why[0],
              "%lld %s keys, %s%s (%s): o max rel err %.2g (%.3f of the bar), LSE %.3f of the bar (setup %.1f s, "
              "run %.1f s) %s",
              (long long)n, near ? "near-identical" : "identical", tu_dtype_name(dtype), o32 ? " (o f32)" : "", kernel,
              worst_rel, worst,
              worst_lse, (t1 - t0) / 1e3, (tu_now_ms() - t1) / 1e3, why);
    free(kb);
    free(vb);
    cl_mem mems[5] = {qm, km, vm, om, lm};
    for (int i = 0; i < 5; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
}

/* argv: the row lengths, powers of two (up to 30) or key counts (above 30; default 16 20), and
 * optionally a dtype (f32, f16, bf16) */
static int subset_long_values(fa_cl_context *ctx, int argc, char **argv)
{
    int64_t lens[8] = {(int64_t)1 << 16, (int64_t)1 << 20};
    int nlens = 2;
    const fa_cl_dtype all[3] = {F32, F16, BF16};
    int want = -1;
    if (argc > 0)
        nlens = 0;
    for (int i = 0; i < argc && nlens < 8; i++) {
        for (int t = 0; t < 3; t++)
            if (strcmp(argv[i], tu_dtype_name(all[t])) == 0)
                want = t;
        const int64_t x = strtoll(argv[i], NULL, 10);
        if (x > 0)
            lens[nlens++] = x > 30 ? x : (int64_t)1 << x;
    }
    for (int i = 0; i < nlens; i++) {
        for (int t = 0; t < 3; t++)
            for (int near = 0; near < 2; near++)
                if (want < 0 || want == t)
                    long_row(ctx, all[t], lens[i], near, 0);
        if (want < 0) /* f16 inputs, o f32: f32's bar */
            long_row(ctx, F16, lens[i], 0, 1);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"nan_inf", subset_nan_inf},   {"magnitudes", subset_magnitudes}, {"determinism", subset_determinism},
        {"offset64", subset_offset64}, {"subbuffers", subset_subbuffers}, {"long_rows", subset_long_rows},
        {"long_values", subset_long_values},
    };
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, 0);
}
