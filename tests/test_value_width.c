/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The value width (include/fa_cl.h "Value width": desc.head_dim_v, d_v != d_qk) against the float64
 * oracle on the inputs as stored: dense prefill shapes through the library's plan and the CLBlast
 * reference (shapes), decode rows that split-KV and long-row chunks take (decode, with CTest's
 * FA_CL_TUNE), an append whose v_new rows are d_v wide (append), MLA's shared latent cache, V a view
 * of K's first d_v columns by strides alone, contiguous and paged, with the absorbed decode's GQA
 * packing (mla), and bad input refused with a message (invalid).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static tu_tally tally = {"value_width", 0, 0};

/* One dense case: the tu_case and its value width. */
typedef struct dv_case {
    tu_case c;
    int64_t dv;
} dv_case;

static void case_name(const dv_case *dc, char *buf, size_t n)
{
    char shape[200];
    tu_case_format(&dc->c, shape, sizeof shape);
    snprintf(buf, n, "%s Dv=%lld", shape, (long long)dc->dv);
}

/* The library's plan and (reference != 0) the reference on one case, each against the oracle. */
static void check_dense(fa_cl_context *ctx, const dv_case *dc, uint64_t seed, int reference)
{
    char name[300];
    case_name(dc, name, sizeof name);
    const fa_cl_dtype types[4] = {dc->c.dtype, dc->c.dtype, dc->c.dtype, dc->c.dtype};
    for (int ref = 0; ref <= reference; ref++) {
        tu_problem p;
        if (tu_problem_init_dv(&p, ctx, &dc->c, types, dc->dv, seed, 1) != 0) {
            tu_expect(&tally, 0, "%s: setup failed", name);
            return;
        }
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.lse = p.lse_mem;
        char what[340];
        snprintf(what, sizeof what, "%s%s", name, ref ? " (reference)" : "");
        tu_run_and_check(&tally, ctx, &p, &a, p.ref_o, p.ref_lse, what, ref);
        tu_problem_free(&p);
    }
}

static int run_shapes(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const dv_case cases[] = {
        /* DeepSeek's prefill widths; d_v > d_qk; odd widths both ways; strided layouts; MLA's */
        {{2, 4, 2, 37, 53, 192, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 128},
        {{1, 3, 1, 17, 29, 40, FA_CL_F32, 0, -1, -1, "SPCQ", 0.0f, 1}, 64},
        {{2, 2, 2, 9, 70, 59, FA_CL_BF16, 0, 20, 5, "PSQP", 0.0f, 1}, 13},
        {{1, 2, 2, 16, 16, 8, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 100},
        {{1, 2, 1, 5, 40, 576, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 512},
        {{3, 2, 1, 1, 33, 7, FA_CL_F32, 0, -1, -1, "HCSC", 0.3f, 0}, 3},
        /* widths the tensor-core kernel takes (multiples of 8): d_v > d_qk with 16-byte rows, and
         * d_v < d_qk with padded rows (its loads without asynchronous copies) */
        {{1, 4, 2, 33, 70, 64, FA_CL_BF16, 0, -1, -1, "SCSC", 0.0f, 1}, 128},
        {{2, 2, 1, 20, 90, 128, FA_CL_F16, 1, 16, 0, "PCQP", 0.0f, 1}, 64},
        /* more than 64 query rows, 16-byte rows: nvidia-wgmma's where it runs (O and P V narrower than
         * the tiles; DeepSeek's 192 / 128, causal, and d_v > d_qk) */
        {{1, 2, 1, 130, 150, 192, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, 128},
        {{2, 2, 2, 100, 77, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 64},
        {{1, 2, 1, 80, 200, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 160},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_dense(ctx, &cases[i], 500 + (uint64_t)i, 1);
    return 0;
}

static int run_decode(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    /* few query rows against many keys: split-KV where the planner (or FA_CL_TUNE splits) splits,
     * chunks under FA_CL_TUNE kv_chunk */
    const dv_case cases[] = {
        {{2, 8, 2, 1, 300, 96, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 64},
        {{1, 4, 1, 4, 257, 36, FA_CL_F32, 1, -1, -1, "SCSS", 0.0f, 1}, 52},
        {{2, 16, 1, 2, 200, 192, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, 128},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_dense(ctx, &cases[i], 600 + (uint64_t)i, 0);
    return 0;
}

/* ---- MLA's latent cache: K rows of d_qk, V their first d_v columns (the same buffer) --------- */

typedef struct mla_case {
    int64_t B, Hq, Sq, Sk, dqk, dv;
    fa_cl_dtype dtype;
    int causal;
    int64_t page_size;  /* 0: contiguous [B, 1, Sk, dqk]; else a shuffled pool of pages */
    const int *lens;    /* per-sequence key counts (kv_seqlens), NULL = Sk */
} mla_case;

static void check_mla(fa_cl_context *ctx, const mla_case *mc, uint64_t seed)
{
    char name[240];
    snprintf(name, sizeof name, "mla B=%lld H=%lld/1 S=%lldx%lld D=%lld/%lld %s%s page=%lld%s", (long long)mc->B,
             (long long)mc->Hq, (long long)mc->Sq, (long long)mc->Sk, (long long)mc->dqk, (long long)mc->dv,
             tu_dtype_name(mc->dtype), mc->causal ? " causal" : "", (long long)mc->page_size, mc->lens ? " lens" : "");
    const int64_t B = mc->B, Hq = mc->Hq, Sq = mc->Sq, Sk = mc->Sk, D = mc->dqk, Dv = mc->dv, P = mc->page_size;
    const fa_cl_dtype dt = mc->dtype;
    const size_t es = tu_dtype_size(dt);
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    /* logical q [B, Hq, Sq, D] and latent [B, Sk, D], as stored (rounded) */
    const size_t nq = (size_t)(B * Hq * Sq * D), nl = (size_t)(B * Sk * D), no = (size_t)(B * Hq * Sq * Dv);
    float *q = (float *)malloc(nq * sizeof(float)), *lat = (float *)malloc(nl * sizeof(float));
    void *q_img = malloc(nq * es);
    const int64_t pps = P > 0 ? (Sk + P - 1) / P : 0, spare = 2, num_pages = B * pps + spare;
    const size_t cache_elems = P > 0 ? (size_t)(num_pages * P * D) : nl;
    void *cache_img = malloc(cache_elems * es);
    int *table = P > 0 ? (int *)malloc((size_t)(B * pps) * sizeof(int)) : NULL;
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc((size_t)(B * Hq * Sq) * sizeof(double));
    float *kb = (float *)malloc((size_t)(Sk * D) * sizeof(float)), *vb = (float *)malloc((size_t)(Sk * Dv) * sizeof(float));
    void *o_img = malloc(no * es);
    float *lse_img = (float *)malloc((size_t)(B * Hq * Sq) * sizeof(float));
    cl_mem mq = NULL, mc_ = NULL, mo = NULL, mlse = NULL, mtable = NULL, mlens = NULL;
    fa_cl_plan *plan = NULL;
    if (!q || !lat || !q_img || !cache_img || (P > 0 && !table) || !ref_o || !ref_lse || !kb || !vb || !o_img ||
        !lse_img) {
        tu_expect(&tally, 0, "%s: out of host memory", name);
        goto done;
    }
    for (size_t e = 0; e < nq; e++) {
        tu_store(dt, q_img, e, tu_rng_nonzero(&rng));
        q[e] = tu_load(dt, q_img, e);
    }
    for (size_t e = 0; e < cache_elems; e++) /* pages nobody uses: NaN */
        tu_store_bits(dt, cache_img, e, tu_nan_bits(dt));
    if (P > 0) { /* a fixed shuffle of the used pages after the spare ones: i -> i m + 3 (mod n), m prime to n */
        const int64_t n = B * pps, m = n % 7 ? 7 : 1; /* 7 is prime */
        for (int64_t i = 0; i < n; i++)
            table[i] = (int)(spare + (i * m + 3) % n);
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < Sk; j++) {
            const size_t at = P > 0 ? (size_t)((table[b * pps + j / P] * P + j % P) * D) : (size_t)((b * Sk + j) * D);
            for (int64_t e = 0; e < D; e++) {
                tu_store(dt, cache_img, at + (size_t)e, tu_rng_nonzero(&rng));
                lat[(size_t)((b * Sk + j) * D + e)] = tu_load(dt, cache_img, at + (size_t)e);
            }
        }
    /* the oracle per sequence: its keys, V their first Dv columns */
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = mc->lens ? mc->lens[b] : Sk;
        for (int64_t j = 0; j < len; j++) {
            memcpy(kb + (size_t)(j * D), lat + (size_t)((b * Sk + j) * D), (size_t)D * sizeof(float));
            memcpy(vb + (size_t)(j * Dv), lat + (size_t)((b * Sk + j) * D), (size_t)Dv * sizeof(float));
        }
        const tu_case one = {1, Hq, 1, Sq, len, D, dt, mc->causal, -1, -1, "CCCC", 0.0f, 1};
        tu_attention_f64_dv(&one, Dv, NULL, q + (size_t)(b * Hq * Sq * D), kb, vb, ref_o + (size_t)(b * Hq * Sq * Dv),
                            ref_lse + (size_t)(b * Hq * Sq));
    }
    for (size_t e = 0; e < no; e++)
        tu_store_bits(dt, o_img, e, tu_sentinel_bits(dt));
    mq = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * es, q_img);
    mc_ = tu_buffer(ctx, CL_MEM_READ_ONLY, cache_elems * es, cache_img);
    mo = tu_buffer(ctx, CL_MEM_READ_WRITE, no * es, o_img);
    mlse = tu_buffer(ctx, CL_MEM_READ_WRITE, (size_t)(B * Hq * Sq) * sizeof(float), NULL);
    if (P > 0)
        mtable = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(B * pps) * sizeof(int), table);
    if (mc->lens)
        mlens = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * sizeof(int), mc->lens);
    if (!mq || !mc_ || !mo || !mlse || (P > 0 && !mtable) || (mc->lens && !mlens)) {
        tu_expect(&tally, 0, "%s: buffers failed", name);
        goto done;
    }
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, Hq, Sq, Sk, D, dt);
    d.heads_kv = 1;
    d.head_dim_v = Dv;
    d.causal = mc->causal;
    /* V = the latent's first Dv columns: K's buffer, offset and strides */
    const int64_t ks[3] = {P > 0 ? P * D : Sk * D, 0, D};
    memcpy(d.k_stride, ks, sizeof ks);
    memcpy(d.v_stride, ks, sizeof ks);
    if (P > 0) {
        d.page_size = P;
        d.num_pages = num_pages;
        d.pages_per_seq = pps;
    }
    d.kv_seqlens = mc->lens != NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    if (st != FA_CL_SUCCESS) {
        if (!tu_refused_by_design(ctx, st, name))
            tu_expect(&tally, 0, "%s: fa_cl_plan_create: %s: %.300s", name, fa_cl_status_string(st),
                      fa_cl_last_error(ctx));
        goto done;
    }
    fa_cl_plan_info info;
    fa_cl_plan_get_info(plan, &info);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = mq, a.k = mc_, a.v = mc_, a.o = mo, a.lse = mlse, a.block_table = mtable, a.cache_seqlens = mlens;
    st = fa_cl_plan_run(plan, &a);
    if (st != FA_CL_SUCCESS || tu_read(ctx, mo, no * es, o_img) != 0 ||
        tu_read(ctx, mlse, (size_t)(B * Hq * Sq) * sizeof(float), lse_img) != 0) {
        tu_expect(&tally, 0, "%s: run: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    size_t bad = 0, lse_bad = 0;
    double worst = 0.0;
    for (size_t e = 0; e < no; e++) {
        const double got = tu_load(dt, o_img, e), err = fabs(got - ref_o[e]);
        if (!fa_cl_tolerance_ok(dt, got, ref_o[e]))
            bad++;
        worst = err > worst || isnan(err) ? err : worst;
    }
    for (size_t r = 0; r < (size_t)(B * Hq * Sq); r++)
        lse_bad += !fa_cl_tolerance_lse_ok(lse_img[r], ref_lse[r]);
    /* the absorbed decode: every query head of the latent head in one work-group */
    char tune[16];
    const char *pack_env = tu_tune("gqa_pack", tune, sizeof tune);
    const int want_pack = Sq > 2 ? 0 : pack_env && !strcmp(pack_env, "0") ? 1 : (int)Hq;
    tu_expect(&tally, bad == 0 && lse_bad == 0 && (!want_pack || info.gqa_pack == want_pack),
              "%s [%s %dx%d splits %d pack %d]: max|err| %.3g, %zu bad, %zu bad LSE%s", name, info.kernel,
              info.block_q, info.block_kv, info.splits, info.gqa_pack, worst, bad, lse_bad,
              want_pack && info.gqa_pack != want_pack ? "; the query heads were not packed onto the latent head" : "");
done:
    fa_cl_plan_release(plan);
    cl_mem ms[6] = {mq, mc_, mo, mlse, mtable, mlens};
    for (int i = 0; i < 6; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
    free(q), free(lat), free(q_img), free(cache_img), free(table), free(ref_o), free(ref_lse), free(kb), free(vb);
    free(o_img), free(lse_img);
}

#define LENS(...) ((const int[]){__VA_ARGS__})

static int run_mla(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const mla_case cases[] = {
        /* the absorbed decode, tiny head counts: 576 / 512, one and two new tokens, then pages */
        {2, 8, 1, 70, 576, 512, FA_CL_F32, 0, 0, NULL},
        {1, 4, 2, 45, 576, 512, FA_CL_F16, 1, 0, NULL},
        {2, 8, 1, 70, 576, 512, FA_CL_BF16, 0, 16, LENS(70, 33)},
        {3, 6, 2, 50, 192, 128, FA_CL_F16, 1, 16, LENS(1, 50, 17)},
        {2, 8, 1, 40, 576, 512, FA_CL_F16, 0, 1, LENS(40, 3)},
        {2, 4, 2, 60, 192, 128, FA_CL_BF16, 1, 48, LENS(60, 49)},
        /* prefill rows against the latent, 192 / 128 */
        {1, 2, 24, 40, 192, 128, FA_CL_F32, 1, 0, NULL},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_mla(ctx, &cases[i], 700 + (uint64_t)i);
    /* the absorbed decode at DeepSeek's size plans (no buffers: the plan only): B 64, 128 heads on the
     * latent head, 8192 keys in pages of 64, bf16; every query head packed onto it */
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 64, 128, 1, 8192, 576, FA_CL_BF16);
    d.heads_kv = 1;
    d.head_dim_v = 512;
    const int64_t latent[3] = {64 * 576, 0, 576};
    memcpy(d.k_stride, latent, sizeof latent);
    memcpy(d.v_stride, latent, sizeof latent);
    d.page_size = 64;
    d.pages_per_seq = 8192 / 64;
    d.num_pages = 64 * d.pages_per_seq;
    d.kv_seqlens = 1;
    fa_cl_plan *plan = NULL;
    const fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    if (st == FA_CL_SUCCESS)
        fa_cl_plan_get_info(plan, &info);
    char tune[16];
    const char *pack_env = tu_tune("gqa_pack", tune, sizeof tune);
    const int want = pack_env && !strcmp(pack_env, "0") ? 1 : 128;
    tu_expect(&tally, st == FA_CL_SUCCESS && info.gqa_pack == want,
              "mla B=64 H=128/1 Sk=8192 D=576/512 bf16 pages of 64: plans %s [%s %dx%d splits %d pack %d]%s",
              fa_cl_status_string(st), info.kernel ? info.kernel : "-", info.block_q, info.block_kv, info.splits,
              info.gqa_pack, st ? fa_cl_last_error(ctx) : "");
    fa_cl_plan_release(plan);
    return 0;
}

/* ---- append: k_new rows d_qk wide, v_new rows d_v ---------------------------------------------- */

static int run_append(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const int64_t B = 2, Hq = 4, Hkv = 2, Sq = 3, cap = 40, D = 24, Dv = 40, Sn = 3;
    const fa_cl_dtype dt = FA_CL_F16;
    const int lens[2] = {10, 37}; /* the second drops its last new row (past the capacity) */
    const size_t es = tu_dtype_size(dt);
    tu_rng rng;
    tu_rng_seed(&rng, 800);
    const size_t nq = (size_t)(B * Hq * Sq * D), nk = (size_t)(B * Hkv * cap * D), nv = (size_t)(B * Hkv * cap * Dv);
    const size_t nkn = (size_t)(B * Sn * Hkv * D), nvn = (size_t)(B * Sn * Hkv * Dv), no = (size_t)(B * Hq * Sq * Dv);
    void *img[5] = {malloc(nq * es), malloc(nk * es), malloc(nv * es), malloc(nkn * es), malloc(nvn * es)};
    const size_t n[5] = {nq, nk, nv, nkn, nvn};
    float *x[5];
    for (int t = 0; t < 5; t++) {
        x[t] = (float *)malloc(n[t] * sizeof(float));
        for (size_t e = 0; e < n[t] && img[t] && x[t]; e++) {
            tu_store(dt, img[t], e, tu_rng_nonzero(&rng));
            x[t][e] = tu_load(dt, img[t], e);
        }
    }
    /* what the cache holds after the append: new row i of sequence b at key lens[b] + i, if inside */
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < Sn; i++)
            for (int64_t h = 0; h < Hkv && lens[b] + i < cap; h++) {
                memcpy(x[1] + (size_t)(((b * Hkv + h) * cap + lens[b] + i) * D),
                       x[3] + (size_t)(((b * Sn + i) * Hkv + h) * D), (size_t)D * sizeof(float));
                memcpy(x[2] + (size_t)(((b * Hkv + h) * cap + lens[b] + i) * Dv),
                       x[4] + (size_t)(((b * Sn + i) * Hkv + h) * Dv), (size_t)Dv * sizeof(float));
            }
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc((size_t)(B * Hq * Sq) * 8);
    float *kb = (float *)malloc((size_t)(Hkv * cap * D) * sizeof(float)), *vb = (float *)malloc((size_t)(Hkv * cap * Dv) * sizeof(float));
    for (int64_t b = 0; b < B && ref_o && kb && vb; b++) {
        const int64_t len = lens[b] + Sn < cap ? lens[b] + Sn : cap;
        for (int64_t h = 0; h < Hkv; h++) {
            memcpy(kb + (size_t)(h * len * D), x[1] + (size_t)((b * Hkv + h) * cap * D), (size_t)(len * D) * sizeof(float));
            memcpy(vb + (size_t)(h * len * Dv), x[2] + (size_t)((b * Hkv + h) * cap * Dv), (size_t)(len * Dv) * sizeof(float));
        }
        const tu_case one = {1, Hq, Hkv, Sq, len, D, dt, 1, -1, -1, "CCCC", 0.0f, 1};
        tu_attention_f64_dv(&one, Dv, NULL, x[0] + (size_t)(b * Hq * Sq * D), kb, vb, ref_o + (size_t)(b * Hq * Sq * Dv),
                            ref_lse + (size_t)(b * Hq * Sq));
    }
    cl_mem m[5];
    for (int t = 0; t < 5; t++)
        m[t] = tu_buffer(ctx, t == 1 || t == 2 ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY, n[t] * es, img[t]);
    cl_mem mo = tu_buffer(ctx, CL_MEM_READ_WRITE, no * es, NULL);
    cl_mem mlens = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof lens, lens);
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, Hq, Sq, cap, D, dt);
    d.heads_kv = Hkv;
    d.head_dim_v = Dv;
    d.causal = 1;
    d.kv_seqlens = 1;
    d.seqlen_new = Sn;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = m[0], a.k = m[1], a.v = m[2], a.k_new = m[3], a.v_new = m[4], a.o = mo, a.cache_seqlens = mlens;
    fa_cl_status st = ref_o && kb && vb && m[0] && m[1] && m[2] && m[3] && m[4] && mo && mlens
                          ? fa_cl_attention_run(ctx, &d, &a) : FA_CL_ERROR_OUT_OF_MEMORY;
    void *o_img = malloc(no * es), *v_back = malloc(nv * es);
    size_t bad = 0, cache_bad = 0;
    if (st == FA_CL_SUCCESS && o_img && v_back && tu_read(ctx, mo, no * es, o_img) == 0 &&
        tu_read(ctx, m[2], nv * es, v_back) == 0) {
        for (size_t e = 0; e < no; e++)
            bad += !fa_cl_tolerance_ok(dt, tu_load(dt, o_img, e), ref_o[e]);
        for (size_t e = 0; e < nv; e++)
            cache_bad += tu_load(dt, v_back, e) != x[2][e];
    }
    tu_expect(&tally, st == FA_CL_SUCCESS && bad == 0 && cache_bad == 0,
              "append D=%lld/%lld f16 causal lens 10,37 new 3: %s%s, %zu bad o, %zu wrong v cache elements",
              (long long)D, (long long)Dv, fa_cl_status_string(st), st ? fa_cl_last_error(ctx) : "", bad, cache_bad);
    for (int t = 0; t < 5; t++) {
        if (m[t])
            clReleaseMemObject(m[t]);
        free(img[t]);
        free(x[t]);
    }
    if (mo)
        clReleaseMemObject(mo);
    if (mlens)
        clReleaseMemObject(mlens);
    free(o_img), free(v_back), free(ref_o), free(ref_lse), free(kb), free(vb);
    return 0;
}

/* ---- bad input: refused with a status and a message naming the problem ------------------------ */

static void expect_refused(fa_cl_status got, fa_cl_status want, const char *msg, const char *needle, const char *what)
{
    tu_expect(&tally, got == want && strstr(msg, needle) != NULL, "%s: %s (want %s) \"%s\"", what,
              fa_cl_status_string(got), fa_cl_status_string(want), msg);
}

static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    char msg[512];
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, 2, 4, 8, 64, FA_CL_F16);
    d.head_dim_v = -1;
    expect_refused(fa_cl_attention_desc_validate(&d, msg, sizeof msg), FA_CL_ERROR_INVALID_ARGUMENT, msg,
                   "head_dim_v", "head_dim_v -1");
    d.head_dim_v = 577;
    expect_refused(fa_cl_attention_desc_validate(&d, msg, sizeof msg), FA_CL_ERROR_UNSUPPORTED, msg, "head_dim_v",
                   "head_dim_v 577");
    fa_cl_attention_desc_init(&d, 1, 2, 4, 8, 577, FA_CL_F16);
    d.head_dim_v = 512;
    expect_refused(fa_cl_attention_desc_validate(&d, msg, sizeof msg), FA_CL_ERROR_UNSUPPORTED, msg, "head_dim",
                   "head_dim 577");
    /* q8_0 v rows in whole blocks: head_dim_v a multiple of 32 */
    fa_cl_attention_desc_init(&d, 1, 2, 4, 8, 64, FA_CL_F16);
    d.head_dim_v = 40;
    d.v_type = FA_CL_STORAGE_Q8_0;
    expect_refused(fa_cl_attention_desc_validate(&d, msg, sizeof msg), FA_CL_ERROR_INVALID_ARGUMENT, msg,
                   "head_dim_v", "q8_0 v with head_dim_v 40");
    /* the backward does not take it: plans and the reference */
    fa_cl_attention_desc_init(&d, 1, 2, 4, 8, 64, FA_CL_F32);
    d.head_dim_v = 32;
    fa_cl_backward_plan *bp = NULL;
    fa_cl_status st = fa_cl_backward_plan_create(ctx, &d, &bp);
    expect_refused(st, FA_CL_ERROR_UNSUPPORTED, fa_cl_last_error(ctx), "head_dim_v", "backward plan with head_dim_v");
    fa_cl_backward_plan_release(bp);
    fa_cl_backward_args ba;
    fa_cl_backward_args_init(&ba);
    st = fa_cl_reference_backward(ctx, &d, &ba);
    expect_refused(st, FA_CL_ERROR_UNSUPPORTED, fa_cl_last_error(ctx), "head_dim_v", "reference backward with head_dim_v");
    /* a buffer sized for head_dim rows where v's are head_dim_v wide: too small */
    fa_cl_attention_desc_init(&d, 1, 1, 2, 4, 16, FA_CL_F32);
    d.head_dim_v = 32;
    cl_mem small = tu_buffer(ctx, CL_MEM_READ_WRITE, 4 * 16 * 4, NULL), big = tu_buffer(ctx, CL_MEM_READ_WRITE, 4096, NULL);
    cl_mem o = tu_buffer(ctx, CL_MEM_READ_WRITE, 4096, NULL);
    st = fa_cl_attention_forward(ctx, &d, big, big, small, o, NULL, 0, NULL, NULL);
    expect_refused(st, FA_CL_ERROR_BUFFER_TOO_SMALL, fa_cl_last_error(ctx), "buffer v", "v sized for head_dim rows");
    /* MLA's shared latent with an append: the cache's k and v (both written) overlap */
    fa_cl_attention_desc_init(&d, 1, 2, 1, 8, 16, FA_CL_F32);
    d.heads_kv = 1;
    d.head_dim_v = 8;
    const int64_t ks[3] = {8 * 16, 8 * 16, 16};
    memcpy(d.k_stride, ks, sizeof ks);
    memcpy(d.v_stride, ks, sizeof ks);
    d.kv_seqlens = 1;
    d.seqlen_new = 1;
    cl_mem lens = tu_buffer(ctx, CL_MEM_READ_ONLY, 4, (const int[]){3});
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = small, a.k = big, a.v = big, a.o = o, a.cache_seqlens = lens, a.k_new = small, a.v_new = small;
    st = fa_cl_attention_run(ctx, &d, &a);
    expect_refused(st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(ctx), "overlaps", "append into a shared latent");
    cl_mem ms[4] = {small, big, o, lens};
    for (int i = 0; i < 4; i++)
        if (ms[i])
            clReleaseMemObject(ms[i]);
    return 0;
}

/* A forced family that does not take this value width (FA_CL_KERNEL_VARIANT=nvidia-mma, its kernel
 * emulated anywhere: widths multiples of 8 only): refused, naming it; run under that environment by
 * CTest. */
static int run_forced(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, 2, 16, 64, 64, FA_CL_F16);
    d.head_dim_v = 36;
    fa_cl_plan *plan = NULL;
    const fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    expect_refused(st, FA_CL_ERROR_UNSUPPORTED, fa_cl_last_error(ctx), "head_dim_v", "a forced family without it");
    fa_cl_plan_release(plan);
    return 0;
}

/* Tiny cases for Oclgrind, one per process (tests/CMakeLists.txt): 0 a dense d_v > d_qk, odd widths
 * (split-KV under CTest's FA_CL_TUNE), 1 d_v < d_qk with GQA, 2 MLA's latent in pages of 3 with
 * lengths, packed; 3 and 4 the same in widths nvidia-mma takes. */
static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    const int only = argc > 0 ? atoi(argv[0]) : -1;
    const dv_case dense[] = {
        {{1, 2, 1, 3, 20, 6, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 10},
        {{2, 4, 2, 2, 24, 13, FA_CL_F16, 0, -1, -1, "SCCP", 0.0f, 1}, 5},
    };
    for (int i = 0; i < TU_COUNT(dense); i++)
        if (only < 0 || only == i)
            check_dense(ctx, &dense[i], 900 + (uint64_t)i, 0);
    if (only < 0 || only == 2) {
        const mla_case m = {2, 4, 1, 20, 40, 24, FA_CL_F16, 0, 3, LENS(17, 9)};
        check_mla(ctx, &m, 910);
    }
    /* 3 and 4: widths nvidia-mma takes (multiples of 8), d_v > d_qk and the latent's d_v < d_qk */
    if (only < 0 || only == 3) {
        const dv_case c = {{1, 2, 1, 5, 40, 16, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 24};
        check_dense(ctx, &c, 920, 0);
    }
    if (only < 0 || only == 4) {
        const mla_case m = {1, 4, 1, 30, 48, 32, FA_CL_BF16, 0, 16, LENS(27)};
        check_mla(ctx, &m, 930);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"shapes", run_shapes}, {"decode", run_decode}, {"mla", run_mla},
        {"append", run_append}, {"invalid", run_invalid}, {"forced", run_forced}, {"tiny", run_tiny},
    };
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
