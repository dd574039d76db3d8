/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partial results and their merge (include/fa_cl.h "Partial results and their merge"): a problem's
 * keys cut into 1..5 chunks (uneven, one that no row sees), its query rows into ranges, each
 * (rows, keys) pair one forward call with its positions (desc.q_position, k_position,
 * full_seqlen_q / _k), the chunks of a row range merged by fa_cl_merge and compared with the
 * float64 oracle of the whole problem (tests/oracle.c) at tests/tolerance.h's bar: causal masks,
 * windows, ALiBi, GQA, f32 and f16 storage (partials in f32, or in the storage type). Subsets:
 *   cases      the fused path (the planner's kernel, or FA_CL_KERNEL_VARIANT)
 *   reference  the partial calls through fa_cl_reference_run
 *   backward   the backward of key chunks with the whole problem's o and LSE: dK, dV and dQ's shares
 *   invalid    merges of parts of different shapes or layouts, bad positions: a status and a message
 *   tiny N     case N of a tiny set, one per process (oclgrind: the partial calls and the merge)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_util.h"

static tu_tally partial_tally = {"partial", 0, 0};

#define MAX_CUTS 6

typedef struct part_case {
    tu_case c;       /* the whole problem (dtype: q, k, v and the merged o) */
    int alibi;
    int ncuts_k;     /* key chunks: [cut_k[i], cut_k[i + 1]) */
    int64_t cut_k[MAX_CUTS + 1];
    int ncuts_q;     /* query row ranges */
    int64_t cut_q[MAX_CUTS + 1];
    int part_f32;    /* partial o stored in f32 (else in dtype) */
} part_case;

/* Rows [r0, r1) of x [B, H, S, D] into a new contiguous [B, H, r1 - r0, D] array of dtype t. */
static void *slice_rows(const float *x, int64_t B, int64_t H, int64_t S, int64_t D, int64_t r0, int64_t r1,
                        fa_cl_dtype t)
{
    const int64_t n = r1 - r0;
    unsigned char *out = (unsigned char *)malloc((size_t)(B * H * n * D) * tu_dtype_size(t));
    if (!out)
        return NULL;
    size_t e = 0;
    for (int64_t bh = 0; bh < B * H; bh++)
        for (int64_t s = r0; s < r1; s++)
            for (int64_t d = 0; d < D; d++)
                tu_store(t, out, e++, x[(bh * S + s) * D + d]);
    return out;
}

/* One partial call: rows [q0, q1) against keys [k0, k1) into o (type ot) and lse. */
static fa_cl_status partial_call(fa_cl_context *ctx, const part_case *pc, const float *const x[3], cl_mem slopes,
                                 int64_t q0, int64_t q1, int64_t k0, int64_t k1, fa_cl_dtype ot, int reference,
                                 fa_cl_attention_desc *desc, cl_mem *o, cl_mem *lse)
{
    const tu_case *c = &pc->c;
    const int64_t sq = q1 - q0, sk = k1 - k0;
    fa_cl_attention_desc_init(desc, c->B, c->Hq, sq, sk, c->D, c->dtype);
    desc->heads_kv = c->Hkv;
    desc->causal = c->causal;
    desc->window_left = c->wl;
    desc->window_right = c->wr;
    desc->alibi = pc->alibi;
    desc->q_position = q0;
    desc->k_position = k0;
    desc->full_seqlen_q = c->Sq;
    desc->full_seqlen_k = c->Sk;
    if (ot != c->dtype)
        desc->o_type = FA_CL_STORAGE_F32;
    void *hq = slice_rows(x[0], c->B, c->Hq, c->Sq, c->D, q0, q1, c->dtype);
    void *hk = slice_rows(x[1], c->B, c->Hkv, c->Sk, c->D, k0, k1, c->dtype);
    void *hv = slice_rows(x[2], c->B, c->Hkv, c->Sk, c->D, k0, k1, c->dtype);
    const size_t es = tu_dtype_size(c->dtype), rows = (size_t)(c->B * c->Hq * sq);
    cl_mem q = hq ? tu_buffer(ctx, CL_MEM_READ_ONLY, rows * (size_t)c->D * es, hq) : NULL;
    cl_mem k = hk ? tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(c->B * c->Hkv * sk * c->D) * es, hk) : NULL;
    cl_mem v = hv ? tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(c->B * c->Hkv * sk * c->D) * es, hv) : NULL;
    *o = tu_buffer(ctx, CL_MEM_READ_WRITE, rows * (size_t)c->D * tu_dtype_size(ot), NULL);
    *lse = tu_buffer(ctx, CL_MEM_READ_WRITE, rows * sizeof(float), NULL);
    free(hq), free(hk), free(hv);
    fa_cl_status st = FA_CL_ERROR_OUT_OF_MEMORY;
    if (q && k && v && *o && *lse) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = q, a.k = k, a.v = v, a.o = *o, a.lse = *lse;
        a.alibi_slopes = pc->alibi ? slopes : NULL;
        st = reference ? fa_cl_reference_run(ctx, desc, &a) : fa_cl_attention_run(ctx, desc, &a);
        if (st != FA_CL_SUCCESS)
            fprintf(stderr, "partial call rows [%lld, %lld) keys [%lld, %lld): %s: %s\n", (long long)q0, (long long)q1,
                    (long long)k0, (long long)k1, fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    if (q) clReleaseMemObject(q);
    if (k) clReleaseMemObject(k);
    if (v) clReleaseMemObject(v);
    return st;
}

/* The merged rows [q0, q1) against the oracle's; 1 when within the bar. */
static int check_rows(const part_case *pc, const double *ref_o, const double *ref_lse, int64_t q0, int64_t q1,
                      const void *o, const float *lse, char *why, size_t why_size)
{
    const tu_case *c = &pc->c;
    const int64_t sq = q1 - q0;
    double worst = 0.0;
    for (int64_t bh = 0; bh < c->B * c->Hq; bh++)
        for (int64_t i = 0; i < sq; i++) {
            const int64_t row = bh * c->Sq + q0 + i, got_row = bh * sq + i;
            const double rl = ref_lse[row], gl = lse[got_row];
            const int lse_ok = isinf(rl) ? gl == rl : fabs(gl - rl) <= 1e-4 * fmax(fabs(rl), 1.0);
            if (!lse_ok) {
                snprintf(why, why_size, "row %lld: lse %.9g, oracle %.9g", (long long)row, gl, rl);
                return 0;
            }
            for (int64_t d = 0; d < c->D; d++) {
                const double got = tu_load(c->dtype, o, (size_t)(got_row * c->D + d)), ref = ref_o[row * c->D + d];
                if (!fa_cl_tolerance_ok(c->dtype, got, ref)) {
                    snprintf(why, why_size, "row %lld col %lld: %.9g, oracle %.9g", (long long)row, (long long)d, got,
                             ref);
                    return 0;
                }
                worst = fmax(worst, fabs(got - ref) / fa_cl_tolerance_bound(c->dtype, ref));
            }
        }
    snprintf(why, why_size, "worst error %.2f of the bar", worst);
    return 1;
}

/* Every row range's partial calls, their merge, and the check against the whole problem's oracle. */
static void run_case(tu_tally *t, fa_cl_context *ctx, const part_case *pc, uint64_t seed, int reference)
{
    const tu_case *c = &pc->c;
    char name[256], why[256];
    tu_case_format(c, name, sizeof name);
    size_t len = strlen(name);
    len += (size_t)snprintf(name + len, sizeof name - len, "%s keys", pc->alibi ? " alibi" : "");
    for (int i = 0; i <= pc->ncuts_k && len < sizeof name; i++)
        len += (size_t)snprintf(name + len, sizeof name - len, "%c%lld", i ? ',' : ' ', (long long)pc->cut_k[i]);
    for (int i = 0; i <= pc->ncuts_q && len < sizeof name; i++)
        len += (size_t)snprintf(name + len, sizeof name - len, "%s%lld", i ? "," : " rows ", (long long)pc->cut_q[i]);
    if (len < sizeof name)
        snprintf(name + len, sizeof name - len, "%s", pc->part_f32 ? " parts f32" : "");
    const size_t nq = (size_t)(c->B * c->Hq * c->Sq * c->D), nk = (size_t)(c->B * c->Hkv * c->Sk * c->D);
    float *x[3] = {malloc(nq * sizeof(float)), malloc(nk * sizeof(float)), malloc(nk * sizeof(float))};
    double *ref_o = malloc(nq * sizeof(double)), *ref_lse = malloc((size_t)(c->B * c->Hq * c->Sq) * sizeof(double));
    float *slopes = malloc((size_t)c->Hq * sizeof(float));
    if (!x[0] || !x[1] || !x[2] || !ref_o || !ref_lse || !slopes) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto out;
    }
    tu_rng r;
    tu_rng_seed(&r, seed);
    const size_t n[3] = {nq, nk, nk};
    for (int i = 0; i < 3; i++)
        for (size_t e = 0; e < n[i]; e++)
            x[i][e] = tu_round(c->dtype, tu_rng_nonzero(&r));
    for (int64_t h = 0; h < c->Hq; h++)
        slopes[h] = (float)(0.5 / (double)(h + 1));
    tu_mods mods = {0.0, pc->alibi ? slopes : NULL, NULL, NULL};
    tu_attention_f64_mods(c, &mods, x[0], x[1], x[2], ref_o, ref_lse);
    cl_mem slope_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)c->Hq * sizeof(float), slopes);
    const fa_cl_dtype pt = pc->part_f32 ? FA_CL_F32 : c->dtype;
    int ok = slope_mem != NULL;
    for (int qr = 0; qr < pc->ncuts_q && ok; qr++) {
        const int64_t q0 = pc->cut_q[qr], q1 = pc->cut_q[qr + 1], sq = q1 - q0;
        const int np = pc->ncuts_k;
        fa_cl_attention_desc pd[MAX_CUTS];
        const fa_cl_attention_desc *pdp[MAX_CUTS];
        cl_mem po[MAX_CUTS] = {0}, pl[MAX_CUTS] = {0};
        for (int s = 0; s < np && ok; s++) {
            ok = partial_call(ctx, pc, (const float *const *)x, slope_mem, q0, q1, pc->cut_k[s], pc->cut_k[s + 1], pt,
                              reference, &pd[s], &po[s], &pl[s]) == FA_CL_SUCCESS;
            pdp[s] = &pd[s];
        }
        const size_t rows = (size_t)(c->B * c->Hq * sq);
        cl_mem o = tu_buffer(ctx, CL_MEM_READ_WRITE, rows * (size_t)c->D * tu_dtype_size(c->dtype), NULL);
        cl_mem lse = tu_buffer(ctx, CL_MEM_READ_WRITE, rows * sizeof(float), NULL);
        void *ho = malloc(rows * (size_t)c->D * tu_dtype_size(c->dtype));
        float *hl = malloc(rows * sizeof(float));
        if (ok && o && lse && ho && hl) {
            fa_cl_attention_desc out;
            fa_cl_attention_desc_init(&out, c->B, c->Hq, sq, 1, c->D, c->dtype);
            fa_cl_merge_args m;
            fa_cl_merge_args_init(&m);
            m.desc = &out, m.num_parts = (cl_uint)np, m.part_desc = pdp, m.part_o = po, m.part_lse = pl;
            m.o = o, m.lse = lse;
            const fa_cl_status st = fa_cl_merge(ctx, &m);
            ok = st == FA_CL_SUCCESS && tu_read(ctx, o, rows * (size_t)c->D * tu_dtype_size(c->dtype), ho) == 0 &&
                 tu_read(ctx, lse, rows * sizeof(float), hl) == 0;
            if (st != FA_CL_SUCCESS)
                snprintf(why, sizeof why, "fa_cl_merge: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            else
                ok = ok && check_rows(pc, ref_o, ref_lse, q0, q1, ho, hl, why, sizeof why);
        } else {
            ok = 0;
            snprintf(why, sizeof why, "a partial call or an allocation failed");
        }
        for (int s = 0; s < np; s++) {
            if (po[s]) clReleaseMemObject(po[s]);
            if (pl[s]) clReleaseMemObject(pl[s]);
        }
        if (o) clReleaseMemObject(o);
        if (lse) clReleaseMemObject(lse);
        free(ho), free(hl);
    }
    tu_expect(t, ok, "%s%s: %s", reference ? "reference " : "", name, why);
    if (slope_mem)
        clReleaseMemObject(slope_mem);
out:
    free(x[0]), free(x[1]), free(x[2]), free(ref_o), free(ref_lse), free(slopes);
}

/* The cases: cuts of the keys (uneven, a chunk no row sees: causal keys past every row of a range)
 * and of the rows (a ring's shards, zigzag's two halves). */
static const part_case cases[] = {
    /* one chunk: the plain call through the merge */
    {{1, 2, 2, 17, 29, 16, FA_CL_F32, 0, -1, -1, NULL, 0.0f, 1}, 0, 1, {0, 29}, 1, {0, 17}, 0},
    /* uneven chunks, causal, GQA; rows in two ranges: the first range's last chunk sees no key */
    {{2, 4, 2, 40, 40, 32, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 1}, 0, 4, {0, 7, 8, 23, 40}, 2, {0, 20, 40}, 0},
    /* five chunks, a window, ALiBi, seqlen_q < seqlen_k (bottom-right) */
    {{1, 3, 1, 13, 61, 24, FA_CL_F32, 0, 9, 4, NULL, 0.0f, 1}, 1, 5, {0, 11, 12, 30, 31, 61}, 1, {0, 13}, 0},
    /* causal + window + ALiBi over three row ranges (a ring of three's shards) */
    {{1, 2, 1, 48, 48, 40, FA_CL_F32, 1, 20, 0, NULL, 0.0f, 1}, 1, 3, {0, 16, 32, 48}, 3, {0, 16, 32, 48}, 0},
    /* f16 storage, partials in f32 and in f16; causal with seqlen_q > seqlen_k (rows that see nothing) */
    {{2, 4, 1, 37, 30, 64, FA_CL_F16, 1, -1, -1, NULL, 0.0f, 1}, 0, 3, {0, 9, 10, 30}, 2, {0, 5, 37}, 1},
    {{1, 4, 2, 33, 50, 64, FA_CL_F16, 1, -1, -1, NULL, 0.0f, 1}, 0, 2, {0, 25, 50}, 1, {0, 33}, 0},
    /* bf16, head_dim tail */
    {{1, 2, 2, 21, 45, 19, FA_CL_BF16, 0, 6, 6, NULL, 0.0f, 1}, 0, 3, {0, 15, 16, 45}, 1, {0, 21}, 1},
};

/* Tiny cases for oclgrind, one per process and one merge each: the combine reading f16 partials
 * through their view, and f32 partials of the last rows (q_position 3) with a window, ALiBi and a
 * head_dim tail. (Two merges in one process: Oclgrind 21.10 reports the second's staged LSE as
 * uninitialised, not when the first's staging buffers, released while its launches were queued,
 * are kept: its bookkeeping of a reused allocation, tried by hand; PoCL's results are checked.) */
static const part_case tiny_cases[] = {
    {{1, 2, 1, 5, 9, 8, FA_CL_F16, 1, -1, -1, NULL, 0.0f, 1}, 0, 3, {0, 3, 4, 9}, 1, {0, 5}, 0},
    {{1, 2, 2, 6, 6, 12, FA_CL_F32, 1, 3, -1, NULL, 0.0f, 1}, 1, 2, {0, 3, 6}, 1, {3, 6}, 1},
};

static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    const int i = argc > 0 ? atoi(argv[0]) : 0;
    if (i < 0 || i >= TU_COUNT(tiny_cases))
        return 2;
    run_case(&partial_tally, ctx, &tiny_cases[i], 0x71u + (uint64_t)i, 0);
    return 0;
}

static int run_cases(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(cases); i++)
        run_case(&partial_tally, ctx, &cases[i], 0x9a17u + (uint64_t)i, 0);
    return 0;
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(cases); i++)
        run_case(&partial_tally, ctx, &cases[i], 0x9a17u + (uint64_t)i, 1);
    return 0;
}

/* The backward of a key range (include/fa_cl.h: positions take the backward too), as a ring's
 * backward runs it: every chunk's call with the whole problem's o and LSE gives dK and dV of its
 * keys and its share of dQ; the shares summed are dQ. Against the oracle's gradients; with ALiBi,
 * whose diagonal the chunks' positions move. */
static void backward_chunks(fa_cl_context *ctx, int alibi)
{
    tu_tally *t = &partial_tally;
    const tu_case c = {1, 4, 2, 40, 40, 32, FA_CL_F32, 1, 24, -1, NULL, 0.0f, 1};
    const int64_t cut[] = {0, 13, 27, 40};
    const int np = 3;
    const size_t nq = (size_t)(c.B * c.Hq * c.Sq * c.D), nk = (size_t)(c.B * c.Hkv * c.Sk * c.D);
    float *x[4] = {malloc(nq * 4), malloc(nk * 4), malloc(nk * 4), malloc(nq * 4)}; /* q, k, v, dout */
    double *ref_o = malloc(nq * 8), *ref_lse = malloc((size_t)(c.B * c.Hq * c.Sq) * 8);
    double *ref_g[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nk * 8)};
    float *o32 = malloc(nq * 4), *lse32 = malloc((size_t)(c.B * c.Hq * c.Sq) * 4), *dq = calloc(nq, 4);
    float *dkv[2] = {malloc(nk * 4), malloc(nk * 4)};
    if (!x[0] || !x[1] || !x[2] || !x[3] || !ref_o || !ref_lse || !ref_g[0] || !ref_g[1] || !ref_g[2] || !o32 ||
        !lse32 || !dq || !dkv[0] || !dkv[1])
        return;
    tu_rng r;
    tu_rng_seed(&r, 0xbac4u);
    const size_t n[4] = {nq, nk, nk, nq};
    for (int i = 0; i < 4; i++)
        for (size_t e = 0; e < n[i]; e++)
            x[i][e] = tu_rng_nonzero(&r);
    const float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
    const tu_mods mods = {0.0, alibi ? slopes : NULL, NULL, NULL};
    tu_attention_f64_mods(&c, &mods, x[0], x[1], x[2], ref_o, ref_lse);
    tu_attention_backward_f64_mods(&c, &mods, x[0], x[1], x[2], x[3], ref_g[0], ref_g[1], ref_g[2], NULL);
    for (size_t e = 0; e < nq; e++)
        o32[e] = (float)ref_o[e];
    for (int64_t e = 0; e < c.B * c.Hq * c.Sq; e++)
        lse32[e] = (float)ref_lse[e];
    cl_mem q = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * 4, x[0]), dout = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * 4, x[3]);
    cl_mem o = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * 4, o32);
    cl_mem lse = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(c.B * c.Hq * c.Sq) * 4, lse32);
    cl_mem ms = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof slopes, slopes);
    int ok = q && dout && o && lse && ms;
    char why[256] = "";
    for (int s = 0; s < np && ok; s++) {
        const int64_t k0 = cut[s], sk = cut[s + 1] - cut[s];
        const size_t nc = (size_t)(c.B * c.Hkv * sk * c.D);
        fa_cl_attention_desc d;
        fa_cl_attention_desc_init(&d, c.B, c.Hq, c.Sq, sk, c.D, c.dtype);
        d.heads_kv = c.Hkv, d.causal = c.causal, d.window_left = c.wl, d.window_right = c.wr;
        d.k_position = k0, d.full_seqlen_k = c.Sk;
        d.alibi = alibi;
        float *hk = slice_rows(x[1], c.B, c.Hkv, c.Sk, c.D, k0, k0 + sk, FA_CL_F32);
        float *hv = slice_rows(x[2], c.B, c.Hkv, c.Sk, c.D, k0, k0 + sk, FA_CL_F32);
        float *part = malloc(nq * 4);
        fa_cl_backward_args a;
        fa_cl_backward_args_init(&a);
        a.q = q, a.o = o, a.lse = lse, a.dout = dout, a.alibi_slopes = alibi ? ms : NULL;
        a.k = hk ? tu_buffer(ctx, CL_MEM_READ_ONLY, nc * 4, hk) : NULL;
        a.v = hv ? tu_buffer(ctx, CL_MEM_READ_ONLY, nc * 4, hv) : NULL;
        a.dq = tu_buffer(ctx, CL_MEM_READ_WRITE, nq * 4, NULL);
        a.dk = tu_buffer(ctx, CL_MEM_READ_WRITE, nc * 4, NULL);
        a.dv = tu_buffer(ctx, CL_MEM_READ_WRITE, nc * 4, NULL);
        fa_cl_status st = a.k && a.v && a.dq && a.dk && a.dv && part ? fa_cl_attention_backward(ctx, &d, &a)
                                                                       : FA_CL_ERROR_OUT_OF_MEMORY;
        if (st != FA_CL_SUCCESS)
            snprintf(why, sizeof why, "chunk %d: %s: %s", s, fa_cl_status_string(st), fa_cl_last_error(ctx));
        ok = st == FA_CL_SUCCESS && tu_read(ctx, a.dq, nq * 4, part) == 0 && tu_read(ctx, a.dk, nc * 4, hk) == 0 &&
             tu_read(ctx, a.dv, nc * 4, hv) == 0;
        for (size_t e = 0; ok && e < nq; e++)
            dq[e] += part[e];
        for (int g = 0; ok && g < 2; g++) /* the chunk's dK, dV into the whole problem's rows */
            for (int64_t bh = 0; bh < c.B * c.Hkv; bh++)
                memcpy(&dkv[g][(size_t)((bh * c.Sk + k0) * c.D)], &(g ? hv : hk)[(size_t)(bh * sk * c.D)],
                       (size_t)(sk * c.D) * 4);
        cl_mem mems[5] = {a.k, a.v, a.dq, a.dk, a.dv};
        for (int i = 0; i < 5; i++)
            if (mems[i])
                clReleaseMemObject(mems[i]);
        free(hk), free(hv), free(part);
    }
    const float *got[3] = {dq, dkv[0], dkv[1]};
    static const char *const gname[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3 && ok; g++)
        for (size_t e = 0; e < (g ? nk : nq) && ok; e++)
            if (!fa_cl_tolerance_ok(FA_CL_F32, got[g][e], ref_g[g][e])) {
                ok = 0;
                snprintf(why, sizeof why, "%s[%zu] %.9g, oracle %.9g", gname[g], e, got[g][e], ref_g[g][e]);
            }
    tu_expect(t, ok, "backward of 3 key chunks (causal, window (24, -1), GQA 4/2%s): %s", alibi ? ", ALiBi" : "",
              ok ? "dq, dk, dv match" : why);
    cl_mem mems[5] = {q, dout, o, lse, ms};
    for (int i = 0; i < 5; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    for (int i = 0; i < 4; i++)
        free(x[i]);
    free(ref_o), free(ref_lse), free(ref_g[0]), free(ref_g[1]), free(ref_g[2]), free(o32), free(lse32), free(dq);
    free(dkv[0]), free(dkv[1]);
}

static int run_backward(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    backward_chunks(ctx, 0);
    backward_chunks(ctx, 1);
    return 0;
}

/* What a bad merge or bad positions get: the status, and a message naming the problem. */
static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &partial_tally;
    fa_cl_attention_desc d, other;
    fa_cl_attention_desc_init(&d, 1, 2, 8, 8, 16, FA_CL_F32);
    char msg[512];
    const struct { const char *what; int64_t qp, kp, fq, fk; int kv_seqlens; fa_cl_status st; const char *words; } pos[] = {
        {"negative q_position", -1, 0, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "q_position must not be negative"},
        {"keys past full_seqlen_k", 0, 5, 0, 12, 0, FA_CL_ERROR_INVALID_ARGUMENT, "past desc.full_seqlen_k"},
        {"rows past full_seqlen_q", 3, 0, 10, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "past desc.full_seqlen_q"},
        {"positions with kv_seqlens", 0, 8, 0, 0, 1, FA_CL_ERROR_UNSUPPORTED, "do not combine with desc.kv_seqlens"},
        {"a full length beyond 2^30 - 1", 0, 0, 0, (int64_t)1 << 30, 0, FA_CL_ERROR_UNSUPPORTED, "at most"},
    };
    for (int i = 0; i < TU_COUNT(pos); i++) {
        fa_cl_attention_desc b = d;
        b.q_position = pos[i].qp, b.k_position = pos[i].kp, b.full_seqlen_q = pos[i].fq, b.full_seqlen_k = pos[i].fk;
        b.kv_seqlens = pos[i].kv_seqlens;
        const fa_cl_status st = fa_cl_attention_desc_validate(&b, msg, sizeof msg);
        tu_expect(t, st == pos[i].st && strstr(msg, pos[i].words) != NULL, "%s: %s (%s)", pos[i].what,
                  fa_cl_status_string(st), msg);
    }
    /* merges: two parts of one shape, then one part of another shape or layout */
    const size_t bytes = 2 * 8 * 16 * sizeof(float) * 2;
    cl_mem o[3] = {tu_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL), tu_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL),
                   tu_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL)};
    cl_mem l[3] = {tu_buffer(ctx, CL_MEM_READ_WRITE, 64, NULL), tu_buffer(ctx, CL_MEM_READ_WRITE, 64, NULL),
                   tu_buffer(ctx, CL_MEM_READ_WRITE, 64, NULL)};
    if (!o[0] || !o[1] || !o[2] || !l[0] || !l[1] || !l[2])
        return 1;
    const struct { const char *what; int field; int64_t value; fa_cl_status st; const char *words; } bad[] = {
        {"a part of another seqlen_q", 0, 7, FA_CL_ERROR_INVALID_ARGUMENT, "part 1 has shape"},
        {"a part of another head_dim", 1, 8, FA_CL_ERROR_INVALID_ARGUMENT, "part 1 has shape"},
        {"a part of another o layout", 2, 32, FA_CL_ERROR_INVALID_ARGUMENT, "part 1's o view"},
        {"a part in another storage type", 3, 0, FA_CL_ERROR_INVALID_ARGUMENT, "part 1's o view"},
    };
    for (int i = 0; i < TU_COUNT(bad); i++) {
        other = d;
        if (bad[i].field == 0)
            other.seqlen_q = bad[i].value;
        else if (bad[i].field == 1)
            other.head_dim = bad[i].value;
        else if (bad[i].field == 2)
            other.o_stride[0] = 2 * 8 * 32, other.o_stride[1] = 8 * 32, other.o_stride[2] = bad[i].value;
        else
            other.o_type = FA_CL_STORAGE_F16;
        const fa_cl_attention_desc *pd[2] = {&d, &other};
        fa_cl_merge_args m;
        fa_cl_merge_args_init(&m);
        m.desc = &d, m.num_parts = 2, m.part_desc = pd, m.part_o = o, m.part_lse = l, m.o = o[2], m.lse = l[2];
        const fa_cl_status st = fa_cl_merge(ctx, &m);
        tu_expect(t, st == bad[i].st && strstr(fa_cl_last_error(ctx), bad[i].words) != NULL, "merge of %s: %s (%s)",
                  bad[i].what, fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    /* no parts; an output that is a part; sinks on the merged result */
    fa_cl_merge_args m;
    fa_cl_merge_args_init(&m);
    m.desc = &d, m.num_parts = 0, m.part_o = o, m.part_lse = l, m.o = o[2], m.lse = l[2];
    fa_cl_status st = fa_cl_merge(ctx, &m);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "num_parts is 0"),
              "merge of no parts: %s (%s)", fa_cl_status_string(st), fa_cl_last_error(ctx));
    m.num_parts = 2, m.o = o[1];
    st = fa_cl_merge(ctx, &m);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "overlaps input part_o[1]"),
              "merge into a part's o: %s (%s)", fa_cl_status_string(st), fa_cl_last_error(ctx));
    other = d;
    other.sinks = 1;
    m.desc = &other, m.o = o[2];
    st = fa_cl_merge(ctx, &m);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED && strstr(fa_cl_last_error(ctx), "desc.sinks"),
              "merge with sinks: %s (%s)", fa_cl_status_string(st), fa_cl_last_error(ctx));
    st = fa_cl_merge(ctx, NULL);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT, "merge of NULL args: %s (%s)", fa_cl_status_string(st),
              fa_cl_last_error(ctx));
    for (int i = 0; i < 3; i++)
        clReleaseMemObject(o[i]), clReleaseMemObject(l[i]);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"cases", run_cases},       {"reference", run_reference}, {"backward", run_backward},
        {"invalid", run_invalid}, {"tiny", run_tiny}};
    return tu_main(&partial_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
