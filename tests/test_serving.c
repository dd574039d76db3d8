/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Serving (fa_cl.h, "Serving"): per-sequence KV lengths (cache_seqlens), a paged K/V pool with a
 * block table, split-KV and GQA packing, against the float64 oracle on the inputs as stored.
 *
 * Each case builds logical q, k, v [B, H, S, D] (tu_problem), then the K/V the kernel is meant to
 * see independently of the library: sequence b's keys 0 .. clamp(len[b], 0, capacity) - 1, each
 * read from the pool page its (clamped) block-table entry names. The oracle runs per sequence on
 * those keys. Outputs are poisoned before the call and every element outside o's view (gaps,
 * slack) and the LSE's must still hold the sentinel after it (tu_problem_check). Pool pages no
 * sequence reaches hold NaN, so reading one shows in the output.
 *
 * Subsets: ragged (lengths), paged (page sizes 16/64/256, shuffled, shared), decode (Sq 1/4/16,
 * causal, windows, GQA, head_dim up to 512), bad_data (lengths and table entries out of range), splits (forced split
 * counts 1..16: within tolerance of the oracle and bitwise equal run to run), invalid (host-side
 * checks with a status and a message), tree (tree masks over the new tokens, appended or cached),
 * tree_invalid (their bad input), mods (the score modifiers with lengths, pages and decode rows) and
 * mixed (q and o in f32 over a paged cache, on the tensor-core kernels).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static tu_tally serving_tally = {"serving", 0, 0};
/* check_case_with asserts that each plan is a tensor-core family's (the mixed subset) */
static int expect_tensor_core;

typedef struct serving_case {
    tu_case c;           /* Sk is the capacity */
    const int *lens;     /* B lengths (may be out of range: bad data), NULL = no cache_seqlens */
    int64_t page_size;   /* 0 = contiguous K/V */
    int shared_pages;    /* sequences b > 0 share their first pages with sequence 0 */
    int bad_entries;     /* some block-table entries outside [0, num_pages) */
} serving_case;

struct varlen_case {
    int64_t B, Hq, Hkv, D;
    fa_cl_dtype dtype;
    int causal;
    int64_t wl, wr;
    const int *cu_q;         /* B + 1 offsets into total_q rows (may be bad data) */
    int64_t total_q, max_q;
    const int *cu_k;         /* B + 1 offsets into total_k rows of logical keys */
    int64_t total_k, max_k;
    int64_t page_size;       /* > 0: chunked prefill: the keys in a paged cache with cache_seqlens */
};
typedef struct varlen_case varlen_case;

typedef struct append_case {
    int64_t B, Hq, Hkv, Sq, cap, D;
    fa_cl_dtype dtype;
    int causal;
    const int *lens;   /* lengths before the append (may be bad data) */
    int64_t seqlen_new, page_size;
} append_case;

typedef struct serving_run {
    tu_problem p;
    fa_cl_attention_desc desc;
    cl_mem pool[2], lens_mem, table_mem, mask_mem, tree_mem, slopes_mem, sinks_mem;
    int64_t num_pages, pages_per_seq;
} serving_run;

/* check_case_with's variations of a case */
enum { SERVE_Q8 = 1,  /* paged cases, head_dim a multiple of 32: the pool holds K and V as q8_0 blocks */
       SERVE_MASK = 2, /* an f32 mask [B, 1, Sq, capacity] (broadcast over heads), a fifth masked */
       SERVE_TREE = 4, /* a random tree mask per sequence over its Sq new tokens, in strided words */
       SERVE_CHAIN = 8, /* the chain tree (token t's parent t - 1) on a causal case: the kernel runs it
                           with causal 0 and the tree, the oracle with the causal mask alone */
       SERVE_MODS = 16, /* the score modifiers together: softcap 4, ALiBi slopes and sinks per query head
                           (each sequence's ALiBi diagonal its own length's) */
       SERVE_SINKS = 32, /* the sinks alone */
       SERVE_QO_F32 = 64 /* q and o in f32 (desc.q_type, o_type), K/V in the dtype (or q8_0) */ };

/* A tree over n new tokens as rows of `words` uint32 (row i: the bits of i and its ancestors): a
 * chain, or each token's parent drawn among the tokens before it (or none: it hangs off the
 * prefix). */
static void make_tree(uint32_t *rows, int64_t n, int64_t words, int64_t row_stride, int chain, tu_rng *rng)
{
    int64_t *parent = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *parent);
    if (!parent)
        return;
    for (int64_t t = 0; t < n; t++) {
        parent[t] = chain ? t - 1 : (int64_t)(tu_rng_next(rng) % (uint64_t)(t + 1)) - 1;
        uint32_t *r = rows + t * row_stride;
        for (int64_t w = 0; w < words; w++) /* bits past n: set, they must be ignored */
            r[w] = w == words - 1 && n % 32 ? ~0u << (n % 32) : 0u;
        for (int64_t a = t; a >= 0; a = parent[a])
            r[a / 32] |= 1u << (a % 32);
    }
    free(parent);
}
static int tree_bit(const uint32_t *row, int64_t t) { return (row[t / 32] >> (t % 32)) & 1u; }
static void check_append_with(tu_tally *t, fa_cl_context *ctx, const append_case *ac, uint64_t seed, int with_tree);

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* check_varlen_with's variations: a boolean mask [B, Hq, max_q, max_k]; the score modifiers together
 * (softcap 4, ALiBi, sinks: serve_mods) */
enum { VARLEN_MASK = 1, VARLEN_MODS = 2 };
static void check_varlen_with(tu_tally *t, fa_cl_context *ctx, const varlen_case *vc, uint64_t seed, int flags);

/* SERVE_MODS' per-head values: ALiBi's geometric slopes, sinks in [-1, 3] */
static void serve_mods(int64_t Hq, uint64_t seed, float *slopes, float *sinks)
{
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0x5151u);
    for (int64_t h = 0; h < Hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)Hq);
        sinks[h] = (float)(-1.0 + 4.0 * tu_rng_uniform(&r));
    }
}

static void run_free(serving_run *r)
{
    cl_mem m[8] = {r->pool[0], r->pool[1], r->lens_mem, r->table_mem, r->mask_mem, r->tree_mem, r->slopes_mem,
                   r->sinks_mem};
    for (int i = 0; i < 8; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    tu_problem_free(&r->p);
}

/* Build the case's buffers and its float64 reference, with the variations in flags (SERVE_*). 0 on
 * success. */
static int run_init(serving_run *r, fa_cl_context *ctx, const serving_case *sc, uint64_t seed, int flags)
{
    const int kv_q8 = (flags & SERVE_Q8) != 0;
    memset(r, 0, sizeof *r);
    const tu_case *c = &sc->c;
    const fa_cl_dtype qo_f32[4] = {FA_CL_F32, c->dtype, c->dtype, FA_CL_F32};
    if ((flags & SERVE_QO_F32) ? tu_problem_init_types(&r->p, ctx, c, qo_f32, seed, 0) != 0
                               : tu_problem_init(&r->p, ctx, c, seed, 0) != 0)
        return -1;
    tu_problem *p = &r->p;
    /* the tensor-core kernels compute in the 16-bit dtype, or with q8_0 K/V under an f32 q in f16
     * (q rounded to it: tests/tolerance.h) */
    if (flags & (SERVE_QO_F32 | SERVE_Q8))
        p->tc_compute = 1 + (int)(c->dtype == FA_CL_F32 ? FA_CL_F16 : c->dtype);
    const int64_t B = c->B, Hkv = c->Hkv, Sk = c->Sk, D = c->D, P = sc->page_size;
    size_t kv_elems = (size_t)(B * Hkv * Sk * D);
    /* shared prefixes: sequence b's first pages hold sequence 0's keys (the same physical pages) */
    const int64_t shared_keys = P > 0 ? clamp64(sc->shared_pages * P, 0, Sk) : 0;
    for (int t = 1; t < 3; t++)
        for (int64_t b = 1; b < B; b++)
            for (int64_t h = 0; h < Hkv; h++)
                memcpy(p->x[t] + (size_t)(((b * Hkv + h) * Sk) * D), p->x[t] + (size_t)((h * Sk) * D),
                       (size_t)(shared_keys * D) * sizeof(float));
    unsigned char *scratch_q8 = kv_q8 ? (unsigned char *)malloc((size_t)(D / 32 * 34)) : NULL;
    if (kv_q8) { /* the logical keys and values as q8_0 gives them back (encoding them again is exact) */
        for (int t = 1; t < 3 && scratch_q8; t++)
            for (size_t row = 0; row < (size_t)(B * Hkv * Sk); row++)
                tu_q8_encode(p->x[t] + row * (size_t)D, D, scratch_q8);
    }

    r->desc = p->desc;
    fa_cl_attention_desc *d = &r->desc;
    /* what the kernel must see: kv[t] logical [B, Hkv, Sk, D], keys past a length never read */
    float *seen[2] = {(float *)malloc(kv_elems * sizeof(float)), (float *)malloc(kv_elems * sizeof(float))};
    int64_t *len = (int64_t *)malloc((size_t)B * sizeof *len);
    int rc = -1;
    void *pool_img[2] = {NULL, NULL};
    float *mask = NULL;      /* SERVE_MASK: [B, Sq, capacity] */
    float *slopes = NULL, *sinks = NULL; /* SERVE_MODS: [Hq] each */
    double *mdense = NULL;   /* one sequence's mask for the oracle */
    uint32_t *tree = NULL;   /* SERVE_TREE / SERVE_CHAIN: the words, strided */
    int *table = NULL;
    if (!seen[0] || !seen[1] || !len)
        goto done;
    for (int64_t b = 0; b < B; b++)
        len[b] = sc->lens ? clamp64(sc->lens[b], 0, Sk) : Sk;
    memcpy(seen[0], p->x[1], kv_elems * sizeof(float));
    memcpy(seen[1], p->x[2], kv_elems * sizeof(float));

    if (P > 0) {
        r->pages_per_seq = (Sk + P - 1) / P;
        const int64_t used = B * r->pages_per_seq, spare = 3;
        r->num_pages = used + spare;
        /* physical page of (b, j): a fixed shuffle of used pages, spare (NaN) pages in between;
         * page 0 and the last page hold data (bad entries are clamped onto them) */
        int64_t *phys = (int64_t *)malloc((size_t)used * sizeof *phys);
        table = (int *)malloc((size_t)used * sizeof *table);
        const size_t page_elems = (size_t)(P * Hkv * D);
        const size_t esz = tu_dtype_size(c->dtype);
        const size_t pool_bytes = kv_q8 ? (size_t)r->num_pages * page_elems / 32 * 34 : (size_t)r->num_pages * page_elems * esz;
        for (int t = 0; t < 2 && phys; t++) {
            pool_img[t] = malloc(pool_bytes);
            if (!pool_img[t])
                goto done_phys;
            if (kv_q8) /* spare pages: NaN scales */
                for (size_t blk = 0; blk < pool_bytes / 34; blk++)
                    memcpy((unsigned char *)pool_img[t] + 34 * blk, "\x00\x7e\x5a\x5a", 4);
            else
                for (size_t e = 0; e < (size_t)r->num_pages * page_elems; e++)
                    tu_store_bits(c->dtype, pool_img[t], e, tu_nan_bits(c->dtype));
        }
        if (!phys || !table)
            goto done_phys;
        for (int64_t i = 0; i < used; i++)
            phys[i] = i;
        tu_rng rng;
        tu_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ull);
        for (int64_t i = used - 1; i > 0; i--) {
            int64_t j = (int64_t)(tu_rng_next(&rng) % (uint64_t)(i + 1));
            int64_t t = phys[i];
            phys[i] = phys[j];
            phys[j] = t;
        }
        for (int64_t i = 0; i < used; i++) /* spare pages are 1 .. spare: a data page stays at 0 */
            phys[i] = phys[i] == 0 ? 0 : phys[i] + spare;
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < r->pages_per_seq; j++) {
                int64_t pg = (b > 0 && j * P < shared_keys) ? phys[j] : phys[b * r->pages_per_seq + j];
                table[b * r->pages_per_seq + j] = (int)pg;
            }
        /* the pool: sequence b's logical keys into its pages (shared pages are written twice, the same values) */
        for (int t = 0; t < 2; t++)
            for (int64_t b = 0; b < B; b++)
                for (int64_t h = 0; h < Hkv; h++)
                    for (int64_t key = 0; key < Sk; key++) {
                        const int64_t pg = table[b * r->pages_per_seq + key / P];
                        float *src = p->x[t + 1] + (size_t)(((b * Hkv + h) * Sk + key) * D);
                        const size_t at = (size_t)(((pg * P + key % P) * Hkv + h) * D);
                        if (kv_q8)
                            tu_q8_encode(src, D, (unsigned char *)pool_img[t] + at / 32 * 34);
                        else
                            for (int64_t e = 0; e < D; e++)
                                tu_store(c->dtype, pool_img[t], at + (size_t)e, src[e]);
                    }
        if (sc->bad_entries) {
            /* entries far outside [0, num_pages): clamped to page 0 and the last page */
            for (int64_t b = 0; b < B; b++) {
                table[b * r->pages_per_seq] = b % 2 ? -7 - (int)b : (int)r->num_pages + 1000;
                if (r->pages_per_seq > 1)
                    table[b * r->pages_per_seq + 1] = b % 2 ? (int)(-2147483647 - 1) : 2147483647;
            }
        }
        /* what each sequence's keys are through the (clamped) table */
        for (int t = 0; t < 2; t++)
            for (int64_t b = 0; b < B; b++)
                for (int64_t h = 0; h < Hkv; h++)
                    for (int64_t key = 0; key < len[b]; key++) {
                        const int64_t pg = clamp64(table[b * r->pages_per_seq + key / P], 0, r->num_pages - 1);
                        float *dst = seen[t] + (size_t)(((b * Hkv + h) * Sk + key) * D);
                        const size_t at = (size_t)(((pg * P + key % P) * Hkv + h) * D);
                        for (int64_t e = 0; e < D; e++)
                            dst[e] = kv_q8 ? tu_q8_load((const unsigned char *)pool_img[t], at + (size_t)e)
                                           : tu_load(c->dtype, pool_img[t], at + (size_t)e);
                    }
        for (int t = 0; t < 2; t++) {
            r->pool[t] = tu_buffer(ctx, CL_MEM_READ_ONLY, pool_bytes, pool_img[t]);
            if (!r->pool[t])
                goto done_phys;
        }
        r->table_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)used * sizeof(int), table);
        if (!r->table_mem)
            goto done_phys;
        d->page_size = P;
        d->num_pages = r->num_pages;
        d->pages_per_seq = r->pages_per_seq;
        memset(d->k_stride, 0, sizeof d->k_stride);
        memset(d->v_stride, 0, sizeof d->v_stride);
        d->k_offset = d->v_offset = 0;
        if (kv_q8)
            d->k_type = d->v_type = FA_CL_STORAGE_Q8_0;
    done_phys:
        free(phys);
        if (!r->table_mem)
            goto done;
    }
    if (sc->lens) {
        int *l32 = (int *)malloc((size_t)B * sizeof *l32);
        if (!l32)
            goto done;
        for (int64_t b = 0; b < B; b++)
            l32[b] = sc->lens[b];
        r->lens_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * sizeof(int), l32);
        free(l32);
        if (!r->lens_mem)
            goto done;
        d->kv_seqlens = 1;
    }

    /* the modifiers (SERVE_MODS, SERVE_SINKS): ALiBi's geometric slopes, sinks in [-1, 3] */
    if (flags & (SERVE_MODS | SERVE_SINKS)) {
        slopes = (float *)malloc((size_t)c->Hq * sizeof(float));
        sinks = (float *)malloc((size_t)c->Hq * sizeof(float));
        if (!slopes || !sinks)
            goto done;
        serve_mods(c->Hq, seed, slopes, sinks);
        if (flags & SERVE_MODS)
            r->slopes_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)c->Hq * sizeof(float), slopes);
        r->sinks_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)c->Hq * sizeof(float), sinks);
        if ((!r->slopes_mem && (flags & SERVE_MODS)) || !r->sinks_mem)
            goto done;
        d->softcap = (flags & SERVE_MODS) ? 4.0f : 0.0f;
        d->alibi = (flags & SERVE_MODS) != 0;
        d->sinks = 1;
    }

    /* the mask (SERVE_MASK): sequence b's entries at b Sq Sk + i Sk + j; keys past a length are
     * there but never visible */
    if (flags & SERVE_MASK) {
        const size_t mn = (size_t)(B * c->Sq * Sk);
        mask = (float *)malloc(mn * sizeof(float));
        mdense = (double *)malloc((size_t)(c->Hq * c->Sq * Sk) * sizeof(double) + 1);
        if (!mask || !mdense)
            goto done;
        tu_rng mr;
        tu_rng_seed(&mr, seed ^ 0x4d41534bu);
        for (size_t e = 0; e < mn; e++)
            mask[e] = tu_rng_uniform(&mr) < 0.2 ? -INFINITY : (float)(-1.5 + 2.0 * tu_rng_uniform(&mr));
        r->mask_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, mn * sizeof(float), mask);
        if (!r->mask_mem)
            goto done;
        d->mask = FA_CL_MASK_F32;
        d->mask_stride[0] = c->Sq * Sk, d->mask_stride[1] = 0, d->mask_stride[2] = Sk;
    }
    /* the tree (SERVE_TREE, SERVE_CHAIN): rows of W words W + 1 apart, sequences Sq rows + 3 apart
     * from word 5; odd seeds broadcast one tree to every sequence (sequence stride 0) */
    const int64_t W = (c->Sq + 31) / 32, tree_bcast = (flags & SERVE_TREE) && (seed & 1);
    const int64_t ts0 = tree_bcast ? 0 : c->Sq * (W + 1) + 3, ts1 = W + 1;
    if (flags & (SERVE_TREE | SERVE_CHAIN)) {
        const size_t words = (size_t)(5 + (B - 1) * ts0 + c->Sq * ts1);
        tree = (uint32_t *)malloc(words * sizeof *tree);
        if (!tree || (!mdense && !(mdense = (double *)malloc((size_t)(c->Hq * c->Sq * Sk) * sizeof(double) + 1))))
            goto done;
        for (size_t e = 0; e < words; e++)
            tree[e] = 0xdeadbeefu; /* gaps: garbage, never read */
        tu_rng tr;
        tu_rng_seed(&tr, seed ^ 0x54524545u);
        for (int64_t b = 0; b < (tree_bcast ? 1 : B); b++)
            make_tree(tree + 5 + b * ts0, c->Sq, W, ts1, (flags & SERVE_CHAIN) != 0, &tr);
        r->tree_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, words * sizeof *tree, tree);
        if (!r->tree_mem)
            goto done;
        d->tree_mask = 1;
        d->tree_mask_stride[0] = ts0, d->tree_mask_stride[1] = ts1, d->tree_mask_offset = 5;
        if (flags & SERVE_CHAIN)
            d->causal = 0; /* the chain is the causal mask: the oracle keeps c->causal */
    }

    /* the oracle, one sequence at a time on its own keys */
    const size_t no = (size_t)(B * c->Hq * c->Sq * D);
    p->ref_o = (double *)malloc(no * sizeof(double));
    p->ref_lse = (double *)malloc(p->lse_elems * sizeof(double));
    float *kb = (float *)malloc((size_t)(Hkv * Sk * D) * sizeof(float) + 1);
    float *vb = (float *)malloc((size_t)(Hkv * Sk * D) * sizeof(float) + 1);
    if (p->ref_o && p->ref_lse && kb && vb) {
        for (int64_t b = 0; b < B; b++) {
            tu_case one = *c;
            one.B = 1;
            one.Sk = len[b];
            for (int64_t h = 0; h < Hkv; h++) {
                memcpy(kb + (size_t)(h * len[b] * D), seen[0] + (size_t)(((b * Hkv + h) * Sk) * D),
                       (size_t)(len[b] * D) * sizeof(float));
                memcpy(vb + (size_t)(h * len[b] * D), seen[1] + (size_t)(((b * Hkv + h) * Sk) * D),
                       (size_t)(len[b] * D) * sizeof(float));
            }
            const size_t qo = (size_t)(b * c->Hq * c->Sq);
            if (mdense) /* [1, Hq, Sq, len[b]]: every head the same rows */
                for (int64_t h = 0; h < c->Hq; h++)
                    for (int64_t i = 0; i < c->Sq; i++)
                        for (int64_t j = 0; j < len[b]; j++) {
                            double x = mask ? mask[(size_t)((b * c->Sq + i) * Sk + j)] : 0.0;
                            const int64_t t = j - (len[b] - c->Sq); /* new token t, or the prefix */
                            if ((flags & SERVE_TREE) && t >= 0 && !tree_bit(tree + 5 + b * ts0 + i * ts1, t))
                                x = -INFINITY;
                            mdense[(h * c->Sq + i) * len[b] + j] = x;
                        }
            const tu_mods mods = {(flags & SERVE_MODS) ? 4.0 : 0.0, (flags & SERVE_MODS) ? slopes : NULL, sinks,
                                  (flags & SERVE_CHAIN) ? NULL : mdense};
            tu_attention_f64_mods(&one, &mods, p->x[0] + qo * (size_t)D, kb, vb, p->ref_o + qo * (size_t)D,
                                  p->ref_lse + qo);
        }
        rc = 0;
    }
    free(kb);
    free(vb);
done:
    free(slopes);
    free(sinks);
    free(mask);
    free(mdense);
    free(tree);
    free(scratch_q8);
    free(seen[0]);
    free(seen[1]);
    free(len);
    free(pool_img[0]);
    free(pool_img[1]);
    free(table);
    if (rc != 0)
        run_free(r);
    return rc;
}

static fa_cl_status run_call(fa_cl_context *ctx, serving_run *r, fa_cl_plan *plan)
{
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = r->p.mem[0];
    a.k = r->pool[0] ? r->pool[0] : r->p.mem[1];
    a.v = r->pool[1] ? r->pool[1] : r->p.mem[2];
    a.o = r->p.mem[3];
    a.lse = r->p.lse_mem;
    a.cache_seqlens = r->lens_mem;
    a.block_table = r->table_mem;
    a.mask = r->mask_mem;
    a.tree_mask = r->tree_mem;
    a.alibi_slopes = r->slopes_mem;
    a.sinks = r->sinks_mem;
    fa_cl_status st = plan ? fa_cl_plan_run(plan, &a) : fa_cl_attention_run(ctx, &r->desc, &a);
    if (st == FA_CL_SUCCESS)
        st = clFinish(fa_cl_context_queue(ctx)) == CL_SUCCESS ? FA_CL_SUCCESS : FA_CL_ERROR_OPENCL;
    return st;
}

static void case_name(const serving_case *sc, char *buf, size_t n)
{
    char shape[200];
    tu_case_format(&sc->c, shape, sizeof shape);
    int k = snprintf(buf, n, "%s", shape);
    if (sc->lens && k > 0 && (size_t)k < n) {
        k += snprintf(buf + k, n - (size_t)k, " lens=");
        for (int64_t b = 0; b < sc->c.B && k > 0 && (size_t)k < n; b++)
            k += snprintf(buf + k, n - (size_t)k, "%s%d", b ? "," : "", sc->lens[b]);
    }
    if (sc->page_size && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " page=%lld%s%s", (long long)sc->page_size,
                 sc->shared_pages ? " shared" : "", sc->bad_entries ? " bad-entries" : "");
}

/* One case: plan, run twice (bitwise equal), check against the oracle; flags: SERVE_* variations. */
static void check_case_with(tu_tally *t, fa_cl_context *ctx, const serving_case *sc, uint64_t seed, int flags)
{
    char name[420];
    case_name(sc, name, sizeof name - 48);
    if (flags & SERVE_Q8)
        strcat(name, " kv=q8_0");
    if (flags & SERVE_MASK)
        strcat(name, " mask=f32");
    if (flags & SERVE_TREE)
        strcat(name, (seed & 1) ? " tree (broadcast)" : " tree");
    if (flags & SERVE_CHAIN)
        strcat(name, " chain tree = causal");
    if (flags & SERVE_MODS)
        strcat(name, " softcap=4 alibi sinks");
    if (flags & SERVE_SINKS)
        strcat(name, " sinks");
    if (flags & SERVE_QO_F32)
        strcat(name, " q=o=f32");
    serving_run r;
    if (run_init(&r, ctx, sc, seed, flags) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        return;
    }
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &r.desc, &plan);
    if (st != FA_CL_SUCCESS) {
        if (!tu_refused_by_design(ctx, st, name))
            tu_expect(t, 0, "%s: fa_cl_plan_create: %s: %.300s", name, fa_cl_status_string(st),
                      fa_cl_last_error(ctx));
        run_free(&r);
        return;
    }
    fa_cl_plan_info info;
    fa_cl_plan_get_info(plan, &info);
    if (!tu_kernel_as_expected(t, sc->c.dtype, info.kernel, name)) {
        fa_cl_plan_release(plan);
        run_free(&r);
        return;
    }
    st = run_call(ctx, &r, plan);
    unsigned char *first = NULL;
    const size_t obytes = tu_tensor_bytes(&r.p.t[3]);
    if (st == FA_CL_SUCCESS && tu_problem_read(&r.p, ctx) == 0 && (first = (unsigned char *)malloc(obytes))) {
        memcpy(first, r.p.t[3].img, obytes);
        /* a second run on the same plan: bitwise the same o (fixed order, no atomics) */
        st = tu_problem_poison(&r.p, ctx) == 0 ? run_call(ctx, &r, plan) : FA_CL_ERROR_OPENCL;
    }
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: run: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
    } else if (tu_problem_read(&r.p, ctx) == 0) {
        tu_result res;
        tu_problem_set_bar(&r.p, info.kernel);
        tu_problem_check(&r.p, r.p.ref_o, r.p.ref_lse, &res);
        char detail[400];
        tu_result_format(&res, &r.p, detail, sizeof detail);
        const int same = first && memcmp(first, r.p.t[3].img, obytes) == 0;
        tu_expect(t, res.ok && same, "%s [%s %dx%d splits %d pack %d launches %d]: %s%s", name, info.kernel,
                  info.block_q, info.block_kv, info.splits, info.gqa_pack, info.launches, detail,
                  same ? "" : "; NOT bitwise equal run to run");
    }
    if (expect_tensor_core)
        tu_expect(t, tu_tensor_core_kernel(info.kernel), "%s: planned on %s (must be a tensor-core family)", name,
                  info.kernel);
    free(first);
    fa_cl_plan_release(plan);
    run_free(&r);
}

static void check_case(tu_tally *t, fa_cl_context *ctx, const serving_case *sc, uint64_t seed)
{
    check_case_with(t, ctx, sc, seed, 0);
}

#define LENS(...) ((const int[]){__VA_ARGS__})

/* A subset's cases, seeded from seed0 on */
static void check_cases(fa_cl_context *ctx, const serving_case *cases, int n, uint64_t seed0)
{
    for (int i = 0; i < n; i++)
        check_case(&serving_tally, ctx, &cases[i], seed0 + (uint64_t)i);
}

static int run_ragged(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{4, 4, 2, 1, 300, 64, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(0, 300, 1, 177), 0, 0, 0},
        {{4, 8, 2, 3, 257, 40, FA_CL_F16, 1, -1, -1, "CSCP", 0.0f, 1}, LENS(257, 0, 64, 65), 0, 0, 0},
        {{3, 6, 6, 2, 190, 64, FA_CL_BF16, 0, -1, -1, "SSSQ", 0.0f, 1}, LENS(5, 190, 0), 0, 0, 0},
        {{2, 4, 1, 70, 130, 32, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(100, 130), 0, 0, 0},
    };
    check_cases(ctx, cases, TU_COUNT(cases), 100);
    /* a mask with per-sequence lengths: the mask's keys are the capacity's, only visible ones used */
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_case_with(&serving_tally, ctx, &cases[i], 150 + (uint64_t)i, SERVE_MASK);
    return 0;
}

static int run_paged(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{2, 4, 2, 1, 200, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, NULL, 16, 0, 0},
        {{3, 4, 2, 1, 500, 64, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(0, 500, 321), 64, 0, 0},
        {{2, 8, 2, 2, 600, 128, FA_CL_BF16, 1, -1, -1, "SCCP", 0.0f, 1}, LENS(600, 333), 256, 0, 0},
        {{3, 4, 4, 1, 160, 32, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(160, 100, 48), 16, 3, 0},
        {{2, 4, 2, 5, 96, 64, FA_CL_F32, 1, 20, 0, "CCCC", 0.0f, 1}, LENS(96, 41), 16, 0, 0},
        /* pages of any size: one key (a block spans as many pages as keys), three, 48 (not powers
         * of two: a block starts mid-page), shared and bad entries among them */
        {{2, 4, 2, 1, 50, 32, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(50, 23), 1, 0, 0},
        {{3, 4, 2, 3, 100, 64, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(100, 0, 61), 3, 2, 0},
        {{2, 8, 2, 2, 300, 64, FA_CL_BF16, 1, -1, -1, "SCCP", 0.0f, 1}, LENS(300, 97), 48, 0, 1},
        {{2, 4, 4, 1, 90, 40, FA_CL_F16, 0, 30, -1, "CCCC", 0.0f, 1}, LENS(90, 2), 7, 1, 0},
    };
    check_cases(ctx, cases, TU_COUNT(cases), 200);
    /* a q8_0 pool (K and V in ggml's blocks): decode and prefill rows, shuffled, shared and bad
     * table entries, lengths, GQA packing */
    const serving_case q8[] = {
        {{2, 8, 2, 1, 300, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0},
        {{3, 4, 4, 1, 160, 64, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(160, 100, 48), 16, 3, 0},
        {{2, 4, 2, 40, 200, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(200, 90), 64, 0, 1},
        {{1, 8, 2, 1, 400, 512, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(333), 16, 0, 0}, /* 16 q8_0 blocks a row */
        /* at most 8 rows at d = 64: nvidia-mma's transposed products (FA_KEYS_M), Sq 1 and 2 */
        {{2, 8, 2, 1, 300, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0},
        /* pages of 64 keys or more (a block's rows in one page: copied by row steps), bad entries */
        {{2, 8, 2, 1, 700, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(700, 300), 256, 0, 1},
        {{2, 4, 4, 33, 520, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(520, 129), 128, 1, 0},
        {{2, 8, 4, 2, 700, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(700, 300), 256, 0, 1},
        /* pages of 1, 3 and 48 keys (a block's rows in several pages, starting mid-page) */
        {{2, 4, 2, 1, 70, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(70, 33), 1, 0, 0},
        {{2, 8, 2, 2, 130, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(130, 64), 3, 0, 1},
        {{2, 4, 2, 1, 200, 32, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(200, 100), 48, 1, 0},
    };
    for (int i = 0; i < TU_COUNT(q8); i++)
        check_case_with(&serving_tally, ctx, &q8[i], 250 + (uint64_t)i, SERVE_Q8 | (i == 2 ? SERVE_MASK : 0));
    return 0;
}

/* q and o in f32 over a paged f16/bf16 or q8_0 cache (ggml's decode): decode and prefill rows,
 * per-sequence lengths, GQA packing, shuffled pages with shared and bad entries, each asserted to
 * plan on a tensor-core family where the planner walks nvidia-mma (else a skip); CTest adds split-KV */
static int run_mixed(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (tu_tensor_core_skip(ctx))
        return TU_EXIT_SKIP;
    const struct {
        serving_case sc;
        int flags;
    } cases[] = {
        {{{2, 8, 2, 1, 300, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0}, 0},
        {{{2, 4, 2, 40, 200, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(200, 90), 64, 1, 1}, 0},
        {{{2, 8, 2, 1, 300, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0}, SERVE_Q8},
        {{{2, 8, 4, 2, 700, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(700, 300), 256, 0, 1}, SERVE_Q8},
    };
    expect_tensor_core = 1;
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_case_with(&serving_tally, ctx, &cases[i].sc, 280 + (uint64_t)i, SERVE_QO_F32 | cases[i].flags);
    expect_tensor_core = 0;
    return 0;
}

/* speculative decoding with tree masks (include/fa_cl.h "Tree masks"): random trees over 2..40 new
 * tokens (one and two words a row, strided and broadcast), with per-sequence lengths (a sequence
 * shorter than its new tokens), pages of 16, 3 and 48, GQA, a window, an attention mask; and the
 * chain tree, run without the causal flag, against the causal oracle */
static int run_tree(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const struct { serving_case sc; int flags; } cases[] = {
        {{{3, 8, 2, 5, 200, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(200, 37, 2), 16, 0, 0}, SERVE_TREE},
        {{{2, 4, 2, 40, 300, 32, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 90), 3, 0, 0}, SERVE_TREE},
        {{{2, 4, 2, 33, 120, 40, FA_CL_BF16, 0, -1, -1, "SCCP", 0.0f, 1}, NULL, 0, 0, 0}, SERVE_TREE},
        {{{2, 4, 2, 4, 64, 32, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(64, 10), 16, 0, 0}, SERVE_TREE | SERVE_MASK},
        {{{2, 4, 1, 6, 150, 64, FA_CL_F16, 0, 20, 0, "CCCC", 0.0f, 1}, LENS(150, 70), 48, 1, 0}, SERVE_TREE},
        {{{2, 4, 4, 8, 128, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(128, 20), 48, 0, 0}, SERVE_CHAIN},
        {{{2, 8, 2, 16, 100, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, NULL, 0, 0, 0}, SERVE_CHAIN},
        {{{1, 4, 2, 37, 300, 32, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(250), 1, 0, 0}, SERVE_CHAIN},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_case_with(&serving_tally, ctx, &cases[i].sc, 1100 + (uint64_t)i, cases[i].flags);
    /* the draft tokens appended first, then attended through the tree: paged (3 and 16) and not,
     * lengths that put new rows past the capacity */
    const append_case ap[] = {
        {3, 8, 2, 6, 200, 64, FA_CL_F16, 0, LENS(10, 150, 197), 6, 16},
        {2, 4, 4, 8, 90, 32, FA_CL_F32, 0, LENS(0, 40), 8, 3},
        {2, 4, 2, 5, 64, 40, FA_CL_BF16, 0, LENS(30, 59), 5, 0},
    };
    for (int i = 0; i < TU_COUNT(ap); i++)
        check_append_with(&serving_tally, ctx, &ap[i], 1150 + (uint64_t)i, 1);
    return 0;
}

/* a tree mask's bad input: a status and a message naming it, nothing enqueued */
static int run_tree_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &serving_tally;
    const serving_case sc = {{2, 4, 2, 5, 100, 32, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(10, 100), 16, 0, 0};
    serving_run r;
    if (run_init(&r, ctx, &sc, 8, SERVE_TREE) != 0) /* seed 8: strided per sequence, 5 + 2 x 13 words */
        return 1;
    struct {
        const char *what, *needle;
        fa_cl_status want;
    } descs[] = {
        {"a negative tree_mask_stride", "must not be negative", FA_CL_ERROR_INVALID_ARGUMENT},
        {"rows overlapping (40 new tokens: 2 words a row, stride 1)", "rows overlap", FA_CL_ERROR_INVALID_ARGUMENT},
        {"sequences overlapping (stride 3 < 5 rows)", "sequences overlap", FA_CL_ERROR_INVALID_ARGUMENT},
        {"strides without desc.tree_mask", "tree_mask is 0", FA_CL_ERROR_INVALID_ARGUMENT},
        {"varlen q rows", "varlen", FA_CL_ERROR_UNSUPPORTED},
        {"an extent past 64 bits", "overflows", FA_CL_ERROR_INVALID_ARGUMENT},
    };
    for (int i = 0; i < TU_COUNT(descs); i++) {
        fa_cl_attention_desc d = r.desc;
        switch (i) {
        case 0: d.tree_mask_stride[1] = -1; break;
        case 1: d.seqlen_q = 40, d.tree_mask_stride[0] = 200, d.tree_mask_stride[1] = 1; break;
        case 2: d.tree_mask_stride[0] = 3, d.tree_mask_stride[1] = 1; break;
        case 3: d.tree_mask = 0; break;
        case 4: d.total_q = 10; memset(d.q_stride, 0, sizeof d.q_stride), memset(d.o_stride, 0, sizeof d.o_stride); break;
        case 5: d.tree_mask_offset = SIZE_MAX / 2; break;
        }
        char msg[512];
        fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
        tu_expect(t, st == descs[i].want && strstr(msg, descs[i].needle), "tree desc %s: %s: %s", descs[i].what,
                  fa_cl_status_string(st), msg);
    }
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &r.desc, &plan);
    cl_mem small = tu_buffer(ctx, CL_MEM_READ_ONLY, 4 * 26, NULL); /* the view needs 5 + 13 + 4 x 2 + 1 words */
    for (int i = 0; i < 3 && st == FA_CL_SUCCESS; i++) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = r.p.mem[0], a.k = r.pool[0], a.v = r.pool[1], a.o = r.p.mem[3];
        a.cache_seqlens = r.lens_mem, a.block_table = r.table_mem, a.tree_mask = r.tree_mem;
        const char *what = "", *needle = "";
        fa_cl_status want = FA_CL_ERROR_INVALID_ARGUMENT, got;
        if (i == 0) {
            a.tree_mask = NULL, what = "no tree mask buffer", needle = "tree_mask is NULL";
            got = fa_cl_plan_run(plan, &a);
        } else if (i == 1) {
            a.tree_mask = small, what = "a tree mask buffer too small", needle = "buffer tree_mask";
            want = FA_CL_ERROR_BUFFER_TOO_SMALL;
            got = fa_cl_plan_run(plan, &a);
        } else {
            fa_cl_attention_desc d = r.desc;
            d.tree_mask = 0;
            memset(d.tree_mask_stride, 0, sizeof d.tree_mask_stride);
            d.tree_mask_offset = 0;
            what = "a tree mask buffer without desc.tree_mask", needle = "desc.tree_mask is 0";
            got = fa_cl_attention_run(ctx, &d, &a);
        }
        tu_expect(t, got == want && strstr(fa_cl_last_error(ctx), needle), "tree args %s: %s: %s", what,
                  fa_cl_status_string(got), fa_cl_last_error(ctx));
    }
    tu_expect(t, st == FA_CL_SUCCESS, "tree plan: %s", fa_cl_last_error(ctx));
    fa_cl_plan_release(plan);
    if (small)
        clReleaseMemObject(small);
    /* the backward does not take it, nor the reference (dense, no lengths or pages: the tree is
     * what they refuse) */
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, 2, 4, 16, 32, FA_CL_F32);
    d.tree_mask = 1;
    fa_cl_backward_plan *bp = NULL;
    st = fa_cl_backward_plan_create(ctx, &d, &bp);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED && strstr(fa_cl_last_error(ctx), "tree"), "tree backward: %s: %s",
              fa_cl_status_string(st), fa_cl_last_error(ctx));
    fa_cl_backward_plan_release(bp);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    st = fa_cl_reference_run(ctx, &d, &a);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED && strstr(fa_cl_last_error(ctx), "tree"), "tree reference: %s: %s",
              fa_cl_status_string(st), fa_cl_last_error(ctx));
    run_free(&r);
    return 0;
}

/* decoding and speculative decoding: Sq 1, 4, 16 with causal masks, windows and GQA groups */
static int run_decode(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{2, 8, 2, 1, 1000, 128, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(1000, 7), 16, 0, 0},
        {{2, 8, 2, 4, 700, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(4, 700), 64, 0, 0},
        {{2, 16, 2, 16, 512, 64, FA_CL_F16, 1, -1, -1, "SCCS", 0.0f, 1}, LENS(300, 17), 0, 0, 0},
        {{1, 8, 1, 4, 900, 64, FA_CL_F32, 1, 100, 0, "CCCC", 0.0f, 1}, LENS(850), 16, 0, 0},
        {{2, 4, 4, 1, 640, 96, FA_CL_F16, 0, 32, -1, "CCCP", 0.0f, 1}, LENS(640, 31), 64, 0, 0},
        /* head_dim above 256 (the portable kernels; the tensor-core ones decline): paged, GQA-packed,
         * split under FA_CL_TUNE splits */
        {{2, 8, 2, 1, 600, 512, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(600, 123), 16, 0, 0},
        {{1, 4, 1, 4, 333, 320, FA_CL_F32, 1, 64, 0, "CCCC", 0.0f, 1}, LENS(300), 0, 0, 0},
        {{2, 4, 4, 1, 257, 457, FA_CL_F16, 0, -1, -1, "CCCP", 0.0f, 1}, LENS(257, 40), 64, 0, 0},
    };
    check_cases(ctx, cases, TU_COUNT(cases), 300);
    return 0;
}

/* the score modifiers together (SERVE_MODS, VARLEN_MODS) with per-sequence lengths (one empty), pages
 * (shared, 16 and 64 keys), decode rows (GQA-packed), varlen rows, causal masks, windows, an attention mask; every
 * storage type (CTest runs it on the tensor-core kernels, emulated, with TU_EXPECT_KERNEL) */
static int run_mods(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{3, 8, 2, 1, 300, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 0, 77), 16, 1, 0},
        {{2, 8, 2, 4, 200, 128, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(4, 200), 64, 0, 0},
        {{2, 4, 2, 16, 150, 64, FA_CL_F16, 1, 40, 0, "CCCC", 0.0f, 1}, LENS(150, 20), 0, 0, 0},
        {{2, 4, 1, 37, 130, 64, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(100, 130), 16, 0, 0},
        {{2, 4, 4, 3, 200, 40, FA_CL_F32, 0, 20, -1, "CCCP", 0.0f, 1}, LENS(200, 50), 0, 0, 0},
        {{2, 4, 2, 40, 96, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(96, 61), 16, 0, 0},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_case_with(&serving_tally, ctx, &cases[i], 950 + (uint64_t)i, SERVE_MODS | (i == 5 ? SERVE_MASK : 0));
    /* q8_0 K/V in pages, decoding: with all three (nvidia-mma's 16-row tiles, B fragments straight
     * from the staged rows: keys in their own order) and with the sinks alone (its 8-row transposed
     * decode, whose epilogue adds them) */
    const serving_case q8[] = {
        {{2, 8, 2, 4, 300, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0},
        {{2, 8, 2, 1, 300, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(300, 77), 16, 0, 0}, /* 4 packed rows */
    };
    check_case_with(&serving_tally, ctx, &q8[0], 960, SERVE_Q8 | SERVE_MODS);
    check_case_with(&serving_tally, ctx, &q8[1], 961, SERVE_Q8 | SERVE_MODS);
    check_case_with(&serving_tally, ctx, &q8[1], 962, SERVE_Q8 | SERVE_SINKS);
    /* varlen rows (an empty sequence; packed GQA rows of a few tokens; chunked prefill on pages) */
    const varlen_case varlen[] = {
        {3, 4, 2, 64, FA_CL_F16, 1, -1, -1, LENS(0, 37, 37, 100), 100, 63, LENS(0, 50, 50, 170), 170, 120, 0},
        {2, 4, 4, 128, FA_CL_BF16, 1, 16, 0, LENS(0, 70, 90), 90, 70, LENS(0, 70, 200), 200, 130, 0},
        {4, 8, 2, 40, FA_CL_F32, 0, -1, -1, LENS(0, 1, 5, 5, 9), 9, 4, LENS(0, 300, 301, 301, 700), 700, 400, 0},
        {3, 8, 2, 64, FA_CL_F32, 1, -1, -1, LENS(0, 16, 17, 50), 50, 33, LENS(0, 100, 117, 300), 300, 183, 16},
    };
    for (int i = 0; i < TU_COUNT(varlen); i++)
        check_varlen_with(&serving_tally, ctx, &varlen[i], 970 + (uint64_t)i, VARLEN_MODS | (i == 0 ? VARLEN_MASK : 0));
    return 0;
}

/* rows longer than one fp32 sum keeps accurate (f32: 2^16 keys): chunked launches, or with
 * FA_CL_TUNE splits a split plan of at least one chunk per 65536 keys */
static int run_long(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{1, 4, 1, 1, 140000, 16, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(139999), 256, 0, 0},
        {{2, 2, 2, 2, 70000, 8, FA_CL_F32, 1, -1, -1, "CCCP", 0.0f, 1}, LENS(70000, 66000), 0, 0, 0},
    };
    check_cases(ctx, cases, TU_COUNT(cases), 900);
    return 0;
}

/* device data the host cannot check: lengths below 0 and above the capacity, table entries
 * outside [0, num_pages); the documented results (clamped) and nothing written outside o */
static int run_bad_data(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const serving_case cases[] = {
        {{4, 4, 2, 1, 200, 64, FA_CL_F32, 0, -1, -1, "CCCP", 0.0f, 1}, LENS(-5, 100000, -2147483647 - 1, 2147483647),
         0, 0, 0},
        {{4, 4, 2, 2, 200, 64, FA_CL_F16, 1, -1, -1, "CCCQ", 0.0f, 1}, LENS(-1, 1000, 50, 0), 16, 0, 1},
        {{2, 4, 2, 1, 300, 32, FA_CL_BF16, 0, -1, -1, "CCCP", 0.0f, 1}, NULL, 64, 0, 1},
    };
    check_cases(ctx, cases, TU_COUNT(cases), 400);
    return 0;
}

/* split-KV forced to n chunks (FA_CL_TUNE splits=n is read at context creation: one context each) */
static int run_splits(fa_cl_context *ctx, int argc, char **argv)
{
    (void)ctx, (void)argc, (void)argv;
    const serving_case cases[] = {
        {{2, 8, 2, 1, 1000, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(1000, 3), 16, 0, 0},
        {{2, 4, 4, 3, 777, 40, FA_CL_F32, 1, -1, -1, "CCCP", 0.0f, 1}, LENS(0, 777), 0, 0, 0},
        {{1, 4, 2, 1, 2100, 128, FA_CL_BF16, 0, 500, 0, "CCCC", 0.0f, 1}, NULL, 256, 0, 0},
    };
    const int counts[] = {1, 2, 3, 5, 8, 16};
    for (int n = 0; n < TU_COUNT(counts); n++) {
        char v[32];
        snprintf(v, sizeof v, "splits=%d", counts[n]);
        setenv("FA_CL_TUNE", v, 1);
        fa_cl_context *c = NULL;
        if (fa_cl_context_create_default(&c) != FA_CL_SUCCESS) {
            tu_expect(&serving_tally, 0, "FA_CL_TUNE=%s: context: %s", v, fa_cl_last_error(NULL));
            continue;
        }
        printf("FA_CL_TUNE=%s\n", v);
        for (int i = 0; i < TU_COUNT(cases); i++)
            check_case(&serving_tally, c, &cases[i], 500 + (uint64_t)i);
        fa_cl_context_release(c);
    }
    unsetenv("FA_CL_TUNE");
    return 0;
}

static void check_varlen(tu_tally *t, fa_cl_context *ctx, const varlen_case *vc, uint64_t seed);
static void check_append(tu_tally *t, fa_cl_context *ctx, const append_case *ac, uint64_t seed);

/* small shapes for oclgrind (races, out-of-bounds reads and writes, uninitialised values): lengths 0
 * and past the capacity, shuffled, shared and out-of-range pages, a masked decode row. "tiny N"
 * runs case N only: under oclgrind 21.10 a second split plan in one process (even of the same
 * case) has its combine's reads of the partial results reported as uninitialised — but not when
 * the first plan's buffers are kept alive, so it is oclgrind's shadow state of device memory that
 * was freed and allocated again (on PoCL every partial entry is written: read back and checked).
 * tests/CMakeLists.txt runs one case per process; case 5 (a q8_0 pool) only when asked for. */
static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    const int only = argc > 0 ? atoi(argv[0]) : -1;
    const serving_case cases[] = {
        {{3, 4, 2, 1, 40, 16, FA_CL_F16, 0, -1, -1, "CCCP", 0.0f, 1}, LENS(0, 40, -3), 16, 1, 1},
        {{2, 4, 2, 2, 48, 16, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(33, 99), 0, 0, 0},
        {{2, 2, 1, 3, 32, 8, FA_CL_BF16, 1, 4, 0, "CCCQ", 0.0f, 1}, LENS(2, 32), 16, 0, 0},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        if (only < 0 || only == i)
            check_case(&serving_tally, ctx, &cases[i], 600 + (uint64_t)i);
    /* 5: a q8_0 pool in pages of 16 keys, decode rows (nvidia-mma's blocks span pages), a bad entry */
    if (only == 5) {
        const serving_case q8 = {{1, 2, 1, 1, 80, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(70), 16, 0, 1};
        check_case_with(&serving_tally, ctx, &q8, 670, SERVE_Q8);
    }
    /* 7: pages of 3 keys (blocks span pages and start mid-page), shared and bad entries; 8: an
     * append into pages of 3, new rows across page boundaries and past the capacity; 9: pages of
     * one key */
    if (only == 7) {
        const serving_case p3 = {{2, 4, 2, 2, 40, 16, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, LENS(40, 11), 3, 2, 1};
        check_case(&serving_tally, ctx, &p3, 671);
    }
    if (only == 8) {
        const append_case ap = {2, 4, 2, 2, 30, 16, FA_CL_F32, 1, (const int[]){4, 28}, 4, 3};
        check_append(&serving_tally, ctx, &ap, 672);
    }
    if (only == 9) {
        const serving_case p1 = {{2, 2, 1, 1, 24, 8, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(24, 5), 1, 0, 0};
        check_case(&serving_tally, ctx, &p1, 673);
    }
    /* 10: a tree over 5 new tokens in pages of 3, strided words, GQA; 11: 3 draft tokens appended
     * into pages of 16 and attended through a tree */
    if (only == 10) {
        const serving_case tr = {{2, 4, 2, 5, 30, 8, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(30, 4), 3, 0, 0};
        check_case_with(&serving_tally, ctx, &tr, 674, SERVE_TREE);
    }
    if (only == 11) {
        const append_case ap = {2, 4, 2, 3, 32, 16, FA_CL_F32, 0, (const int[]){5, 30}, 3, 16};
        check_append_with(&serving_tally, ctx, &ap, 675, 1);
    }
    /* 4: append into a paged cache, new rows straddling the capacity */
    if (only < 0 || only == 4) {
        const append_case ap = {2, 4, 2, 2, 48, 16, FA_CL_F16, 1, (const int[]){-1, 45}, 5, 16};
        check_append(&serving_tally, ctx, &ap, 660);
    }
    /* 3: varlen q and k with an empty sequence, bad offsets and uncovered rows, split or not */
    if (only < 0 || only == 3) {
        const varlen_case v = {3, 4, 2, 16, FA_CL_F16, 1, -1, -1, (const int[]){-2, 5, 5, 99}, 12, 6,
                                      (const int[]){0, 20, 3, 40}, 40, 24, 0};
        check_varlen(&serving_tally, ctx, &v, 650);
    }
    /* 6: varlen q with GQA packing, a mask and an empty sequence (whose mask rows, none, once took
     * % 0: neither PoCL nor Oclgrind 21.10 reports that; this runs the guarded path under them) */
    if (only == 6) {
        const varlen_case v = {3, 4, 2, 16, FA_CL_F32, 1, -1, -1, (const int[]){0, 5, 5, 12}, 12, 7,
                                      (const int[]){0, 20, 23, 40}, 40, 20, 0};
        check_varlen_with(&serving_tally, ctx, &v, 651, VARLEN_MASK);
    }
    return 0;
}

/* ---- variable-length batches: packed [total, heads, d] rows located by cu_seqlens ---------------- */



/* sequence b's [start, start + len) of cu over total rows, clamped as include/fa_cl.h says */
static void varlen_rows(const int *cu, int64_t b, int64_t total, int64_t max, int64_t *start, int64_t *len)
{
    *start = clamp64(cu[b], 0, total);
    *len = clamp64(clamp64(cu[b + 1], *start, total) - *start, 0, max);
}

/* with_mask: a boolean mask [B, Hq, max_q, max_k] (positions within each sequence), a quarter masked */
static void check_varlen_with(tu_tally *t, fa_cl_context *ctx, const varlen_case *vc, uint64_t seed, int flags)
{
    const int with_mask = flags & VARLEN_MASK, with_mods = flags & VARLEN_MODS;
    char name[330];
    snprintf(name, sizeof name, "varlen B=%lld H=%lld/%lld D=%lld %s%s total_q %lld (max %lld) total_k %lld (max %lld)%s%s%s",
             (long long)vc->B, (long long)vc->Hq, (long long)vc->Hkv, (long long)vc->D, tu_dtype_name(vc->dtype),
             vc->causal ? " causal" : "", (long long)vc->total_q, (long long)vc->max_q, (long long)vc->total_k,
             (long long)vc->max_k, vc->page_size ? " paged (chunked prefill)" : "", with_mask ? " mask=bool" : "",
             with_mods ? " softcap=4 alibi sinks" : "");
    const int64_t B = vc->B, Hq = vc->Hq, Hkv = vc->Hkv, D = vc->D, P = vc->page_size;
    const size_t esz = tu_dtype_size(vc->dtype), nq = (size_t)(vc->total_q * Hq * D), nk = (size_t)(vc->total_k * Hkv * D);
    const size_t o_slack = 16, lse_n = (size_t)(Hq * vc->total_q), lse_slack = 7;
    float *x[3] = {malloc(nq * sizeof(float)), malloc(nk * sizeof(float)), malloc(nk * sizeof(float))};
    void *img[3] = {malloc(nq * esz), malloc(nk * esz), malloc(nk * esz)};
    unsigned char *o_img = malloc((nq + o_slack) * esz), *first = malloc((nq + o_slack) * esz);
    float *lse_img = malloc((lse_n + lse_slack) * sizeof(float));
    double *ref_o = malloc(nq * sizeof(double)), *ref_lse = malloc(lse_n * sizeof(double));
    unsigned char *covered = calloc((size_t)vc->total_q, 1);
    int *lens = malloc((size_t)B * sizeof(int)), *table = NULL;
    void *pool[2] = {NULL, NULL};
    cl_mem mem[11] = {NULL}; /* q k v o lse cu_q cu_k|lens table mask slopes sinks */
    float slopes[64], sinks[64];
    const size_t mn = with_mask ? (size_t)(B * Hq * vc->max_q * vc->max_k) : 0;
    unsigned char *mask = with_mask ? malloc(mn) : NULL;
    double *mdense = with_mask ? malloc((size_t)(Hq * vc->max_q * vc->max_k) * sizeof(double) + 1) : NULL;
    if (with_mask && (!mask || !mdense)) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    if (!x[0] || !x[1] || !x[2] || !img[0] || !img[1] || !img[2] || !o_img || !first || !lse_img || !ref_o || !ref_lse ||
        !covered || !lens) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    const size_t n[3] = {nq, nk, nk};
    for (int i = 0; i < 3; i++)
        for (size_t e = 0; e < n[i]; e++) {
            x[i][e] = tu_round(vc->dtype, tu_rng_nonzero(&rng));
            tu_store(vc->dtype, img[i], e, x[i][e]);
        }
    for (size_t e = 0; e < mn; e++)
        mask[e] = tu_rng_uniform(&rng) < 0.25 ? 0 : 1;
    for (size_t e = 0; e < nq + o_slack; e++)
        tu_store_bits(vc->dtype, o_img, e, tu_sentinel_bits(vc->dtype));
    for (size_t e = 0; e < lse_n + lse_slack; e++)
        tu_store_bits(FA_CL_F32, lse_img, e, tu_sentinel_bits(FA_CL_F32));

    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, Hq, vc->max_q, vc->max_k, D, vc->dtype);
    d.heads_kv = Hkv;
    d.causal = vc->causal;
    d.window_left = vc->wl;
    d.window_right = vc->wr;
    d.total_q = vc->total_q;
    /* the keys: packed varlen rows, or sequence b's keys in pages (cache_seqlens = its length) */
    int64_t pages_per_seq = 0, num_pages = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t ks, kl;
        varlen_rows(vc->cu_k, b, vc->total_k, vc->max_k, &ks, &kl);
        lens[b] = (int)kl;
    }
    if (P > 0) {
        pages_per_seq = (vc->max_k + P - 1) / P;
        num_pages = B * pages_per_seq;
        table = malloc((size_t)num_pages * sizeof(int));
        for (int i = 0; i < 2 && table; i++)
            pool[i] = calloc((size_t)(num_pages * P * Hkv * D), esz);
        if (!table || !pool[0] || !pool[1]) {
            tu_expect(t, 0, "%s: out of host memory", name);
            goto done;
        }
        for (int64_t p = 0; p < num_pages; p++) /* page b * pps + j is sequence b's page j, reversed */
            table[p] = (int)(num_pages - 1 - p);
        for (int i = 0; i < 2; i++)
            for (int64_t b = 0; b < B; b++) {
                int64_t ks, kl;
                varlen_rows(vc->cu_k, b, vc->total_k, vc->max_k, &ks, &kl);
                for (int64_t key = 0; key < kl; key++)
                    for (int64_t h = 0; h < Hkv; h++)
                        for (int64_t e = 0; e < D; e++) {
                            const int64_t pg = table[b * pages_per_seq + key / P];
                            tu_store(vc->dtype, pool[i], (size_t)(((pg * P + key % P) * Hkv + h) * D + e),
                                     x[i + 1][(size_t)(((ks + key) * Hkv + h) * D + e)]);
                        }
            }
        d.page_size = P;
        d.num_pages = num_pages;
        d.pages_per_seq = pages_per_seq;
        d.kv_seqlens = 1;
    } else {
        d.total_k = vc->total_k;
    }
    const size_t kv_bytes = P > 0 ? (size_t)(num_pages * P * Hkv * D) * esz : nk * esz;
    mem[0] = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * esz, img[0]);
    mem[1] = tu_buffer(ctx, CL_MEM_READ_ONLY, kv_bytes, P > 0 ? pool[0] : img[1]);
    mem[2] = tu_buffer(ctx, CL_MEM_READ_ONLY, kv_bytes, P > 0 ? pool[1] : img[2]);
    mem[3] = tu_buffer(ctx, CL_MEM_READ_WRITE, (nq + o_slack) * esz, o_img);
    mem[4] = tu_buffer(ctx, CL_MEM_READ_WRITE, (lse_n + lse_slack) * sizeof(float), lse_img);
    mem[5] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(B + 1) * sizeof(int), vc->cu_q);
    mem[6] = P > 0 ? tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * sizeof(int), lens)
                   : tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(B + 1) * sizeof(int), vc->cu_k);
    if (P > 0)
        mem[7] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)num_pages * sizeof(int), table);
    if (with_mask) {
        mem[8] = tu_buffer(ctx, CL_MEM_READ_ONLY, mn, mask);
        d.mask = FA_CL_MASK_BOOL;
        d.mask_stride[0] = Hq * vc->max_q * vc->max_k, d.mask_stride[1] = vc->max_q * vc->max_k, d.mask_stride[2] = vc->max_k;
    }
    if (with_mods && Hq <= 64) {
        serve_mods(Hq, seed, slopes, sinks);
        mem[9] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)Hq * sizeof(float), slopes);
        mem[10] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)Hq * sizeof(float), sinks);
        d.softcap = 4.0f;
        d.alibi = d.sinks = 1;
    }
    for (int i = 0; i < 11; i++)
        if (!mem[i] && !(i == 7 && P == 0) && !(i == 8 && !with_mask) && !(i >= 9 && !with_mods)) { /* 7: paged only */
            tu_expect(t, 0, "%s: buffers", name);
            goto done;
        }
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    if (tu_refused_by_design(ctx, st, name))
        goto done;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    if (st == FA_CL_SUCCESS)
        fa_cl_plan_get_info(plan, &info);
    if (st == FA_CL_SUCCESS && !tu_kernel_as_expected(t, vc->dtype, info.kernel, name)) {
        fa_cl_plan_release(plan);
        goto done;
    }
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = mem[0], a.k = mem[1], a.v = mem[2], a.o = mem[3], a.lse = mem[4], a.cu_seqlens_q = mem[5];
    if (P > 0)
        a.cache_seqlens = mem[6], a.block_table = mem[7];
    else
        a.cu_seqlens_k = mem[6];
    a.mask = mem[8];
    a.alibi_slopes = mem[9], a.sinks = mem[10];
    for (int run = 0; run < 2 && st == FA_CL_SUCCESS; run++) {
        st = fa_cl_plan_run(plan, &a);
        if (st == FA_CL_SUCCESS && (tu_read(ctx, mem[3], (nq + o_slack) * esz, run ? o_img : first) != 0 ||
                                    tu_read(ctx, mem[4], (lse_n + lse_slack) * sizeof(float), lse_img) != 0))
            st = FA_CL_ERROR_OPENCL;
    }
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    /* the oracle, one sequence at a time on its own rows and keys */
    size_t bad = 0, clobbered = 0;
    double worst = 0.0;
    for (int64_t b = 0; b < B; b++) {
        int64_t qs, ql, ks, kl;
        varlen_rows(vc->cu_q, b, vc->total_q, vc->max_q, &qs, &ql);
        varlen_rows(vc->cu_k, b, vc->total_k, vc->max_k, &ks, &kl);
        if (ql == 0)
            continue;
        tu_case one = {1, Hq, Hkv, ql, kl, D, vc->dtype, vc->causal, vc->wl, vc->wr, NULL, 0.0f, 1};
        float *qb = malloc((size_t)(Hq * ql * D) * sizeof(float) + 1);
        float *kb = malloc((size_t)(Hkv * kl * D) * sizeof(float) + 1), *vb = malloc((size_t)(Hkv * kl * D) * sizeof(float) + 1);
        double *ob = malloc((size_t)(Hq * ql * D) * sizeof(double) + 1), *lb = malloc((size_t)(Hq * ql) * sizeof(double) + 1);
        if (!qb || !kb || !vb || !ob || !lb) {
            free(qb), free(kb), free(vb), free(ob), free(lb);
            bad++;
            continue;
        }
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < ql; i++)
                memcpy(qb + (size_t)((h * ql + i) * D), x[0] + (size_t)(((qs + i) * Hq + h) * D), (size_t)D * sizeof(float));
        for (int64_t h = 0; h < Hkv; h++)
            for (int64_t j = 0; j < kl; j++) {
                memcpy(kb + (size_t)((h * kl + j) * D), x[1] + (size_t)(((ks + j) * Hkv + h) * D), (size_t)D * sizeof(float));
                memcpy(vb + (size_t)((h * kl + j) * D), x[2] + (size_t)(((ks + j) * Hkv + h) * D), (size_t)D * sizeof(float));
            }
        if (mdense) /* sequence b's [Hq, ql, kl] corner of its mask */
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t i = 0; i < ql; i++)
                    for (int64_t j = 0; j < kl; j++)
                        mdense[(h * ql + i) * kl + j] =
                            mask[(size_t)(((b * Hq + h) * vc->max_q + i) * vc->max_k + j)] ? 0.0 : -INFINITY;
        const tu_mods mods = {with_mods ? 4.0 : 0.0, with_mods ? slopes : NULL, with_mods ? sinks : NULL, mdense};
        tu_attention_f64_mods(&one, &mods, qb, kb, vb, ob, lb);
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < ql; i++) {
                covered[qs + i] = 1;
                for (int64_t e = 0; e < D; e++) {
                    const double ref = ob[(h * ql + i) * D + e];
                    const double got = tu_load(vc->dtype, o_img, (size_t)(((qs + i) * Hq + h) * D + e));
                    const double ratio = fabs(got - ref) / fa_cl_tolerance_bound(vc->dtype, ref);
                    worst = ratio > worst ? ratio : worst;
                    bad += !fa_cl_tolerance_ok(vc->dtype, got, ref);
                }
                const double lr = lb[h * ql + i], lg = lse_img[h * vc->total_q + qs + i];
                bad += isinf(lr) ? lg != lr : !(fabs(lg - lr) <= 1e-4 * (fabs(lr) > 1 ? fabs(lr) : 1));
            }
        free(qb), free(kb), free(vb), free(ob), free(lb);
    }
    /* rows no sequence covers, and the slack after o and the LSE, keep the sentinel */
    for (int64_t r = 0; r < vc->total_q; r++)
        for (int64_t e = 0; !covered[r] && e < Hq * D; e++)
            clobbered += tu_load_bits(vc->dtype, o_img, (size_t)(r * Hq * D + e)) != tu_sentinel_bits(vc->dtype);
    for (size_t e = nq; e < nq + o_slack; e++)
        clobbered += tu_load_bits(vc->dtype, o_img, e) != tu_sentinel_bits(vc->dtype);
    for (size_t e = 0; e < lse_n + lse_slack; e++)
        if (e >= lse_n || !covered[e % (size_t)vc->total_q])
            clobbered += tu_load_bits(FA_CL_F32, lse_img, e) != tu_sentinel_bits(FA_CL_F32);
    const int same = memcmp(first, o_img, (nq + o_slack) * esz) == 0;
    tu_expect(t, bad == 0 && clobbered == 0 && same, "%s [%s %dx%d splits %d pack %d]: worst ratio %.3f, %zu bad, "
              "%zu written outside the sequences%s", name, info.kernel, info.block_q, info.block_kv, info.splits,
              info.gqa_pack, worst, bad, clobbered, same ? "" : ", NOT bitwise equal run to run");
done:
    for (int i = 0; i < 11; i++)
        if (mem[i])
            clReleaseMemObject(mem[i]);
    free(mask);
    free(mdense);
    for (int i = 0; i < 3; i++)
        free(x[i]), free(img[i]);
    free(o_img), free(first), free(lse_img), free(ref_o), free(ref_lse), free(covered), free(lens), free(table);
    free(pool[0]), free(pool[1]);
}

static void check_varlen(tu_tally *t, fa_cl_context *ctx, const varlen_case *vc, uint64_t seed)
{
    check_varlen_with(t, ctx, vc, seed, 0);
}

static int run_varlen(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const varlen_case cases[] = {
        /* ragged prefill, an empty sequence, causal bottom-right per sequence */
        {3, 4, 2, 64, FA_CL_F32, 1, -1, -1, LENS(0, 37, 37, 100), 100, 63, LENS(0, 50, 50, 170), 170, 120, 0},
        {4, 8, 2, 40, FA_CL_F16, 0, -1, -1, LENS(0, 1, 5, 5, 9), 9, 4, LENS(0, 300, 301, 301, 700), 700, 400, 0},
        {2, 4, 4, 128, FA_CL_BF16, 1, 16, 0, LENS(0, 70, 90), 90, 70, LENS(0, 70, 200), 200, 130, 0},
        /* chunked prefill: varlen q against a paged cache with per-sequence lengths */
        {3, 8, 2, 64, FA_CL_F16, 1, -1, -1, LENS(0, 16, 17, 50), 50, 33, LENS(0, 100, 117, 300), 300, 183, 16},
        /* bad data: offsets below 0 and past the totals, a length past the planned maximum (q rows
         * 10 .. 29, so rows 30 .. 39 belong to no sequence), non-monotonic key offsets (sequence 1
         * gets no key, sequence 2 keys 5 .. 68); overlapping q rows would have no one answer */
        {3, 4, 2, 32, FA_CL_F32, 1, -1, -1, LENS(-9, 10, 10, 9999), 40, 20, LENS(-1, 60, 5, 90), 90, 64, 0},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_varlen(&serving_tally, ctx, &cases[i], 700 + (uint64_t)i);
    /* a boolean mask over each sequence's own positions: ragged, chunked prefill, bad offsets */
    const int masked[] = {0, 3, 4};
    for (int i = 0; i < TU_COUNT(masked); i++)
        check_varlen_with(&serving_tally, ctx, &cases[masked[i]], 750 + (uint64_t)i, VARLEN_MASK);
    return 0;
}

/* ---- append: new keys written into the cache at each length, then attended ------------------- */



static void check_append(tu_tally *t, fa_cl_context *ctx, const append_case *ac, uint64_t seed)
{
    check_append_with(t, ctx, ac, seed, 0);
}

/* with_tree: a random tree mask over the Sq new query rows (contiguous words), the new keys the
 * appended rows */
static void check_append_with(tu_tally *t, fa_cl_context *ctx, const append_case *ac, uint64_t seed, int with_tree)
{
    const int64_t B = ac->B, Hq = ac->Hq, Hkv = ac->Hkv, Sq = ac->Sq, cap = ac->cap, D = ac->D, N = ac->seqlen_new,
                  P = ac->page_size;
    char name[300];
    snprintf(name, sizeof name, "append B=%lld H=%lld/%lld S=%lldx%lld D=%lld %s%s new %lld%s", (long long)B,
             (long long)Hq, (long long)Hkv, (long long)Sq, (long long)cap, (long long)D, tu_dtype_name(ac->dtype),
             ac->causal ? " causal" : "", (long long)N, P ? " paged" : "");
    if (with_tree)
        strcat(name, " tree");
    const int64_t W = (Sq + 31) / 32;
    uint32_t *tree = with_tree ? (uint32_t *)malloc((size_t)(B * Sq * W) * sizeof *tree) : NULL;
    cl_mem tree_mem = NULL;
    const size_t esz = tu_dtype_size(ac->dtype), nkv = (size_t)(B * Hkv * cap * D), nnew = (size_t)(B * N * Hkv * D);
    const size_t nq = (size_t)(B * Hq * Sq * D), nl = (size_t)(B * Hq * Sq), o_slack = 11;
    const int64_t pps = P ? (cap + P - 1) / P : 0, num_pages = B * pps;
    const size_t ncache = P ? (size_t)(num_pages * P * Hkv * D) : nkv;
    float *pre[2] = {malloc(nkv * sizeof(float)), malloc(nkv * sizeof(float))};
    float *truth[2] = {malloc(nkv * sizeof(float)), malloc(nkv * sizeof(float))};
    float *fresh[2] = {malloc(nnew * sizeof(float)), malloc(nnew * sizeof(float))}, *q = malloc(nq * sizeof(float));
    void *cache[2] = {calloc(ncache, esz), calloc(ncache, esz)}, *want[2] = {calloc(ncache, esz), calloc(ncache, esz)};
    void *got[2] = {malloc(ncache * esz), malloc(ncache * esz)}, *new_img[2] = {malloc(nnew * esz), malloc(nnew * esz)};
    void *q_img = malloc(nq * esz), *o_img = malloc((nq + o_slack) * esz), *first = malloc((nq + o_slack) * esz);
    float *lse = malloc(nl * sizeof(float));
    double *ref_o = malloc(nq * sizeof(double)), *ref_l = malloc(nl * sizeof(double));
    int *table = malloc((size_t)(num_pages + 1) * sizeof(int));
    cl_mem mem[10] = {NULL};
    fa_cl_plan *plan = NULL;
    int ok_alloc = q && q_img && o_img && first && lse && ref_o && ref_l && table && (!with_tree || tree);
    for (int i = 0; i < 2; i++)
        ok_alloc = ok_alloc && pre[i] && truth[i] && fresh[i] && cache[i] && want[i] && got[i] && new_img[i];
    if (!ok_alloc) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    for (int i = 0; i < 2; i++) {
        for (size_t e = 0; e < nkv; e++)
            pre[i][e] = tu_round(ac->dtype, tu_rng_nonzero(&rng));
        for (size_t e = 0; e < nnew; e++) {
            fresh[i][e] = tu_round(ac->dtype, tu_rng_nonzero(&rng));
            tu_store(ac->dtype, new_img[i], e, fresh[i][e]);
        }
        memcpy(truth[i], pre[i], nkv * sizeof(float));
    }
    for (size_t e = 0; e < nq; e++) {
        q[e] = tu_round(ac->dtype, tu_rng_nonzero(&rng));
        tu_store(ac->dtype, q_img, e, q[e]);
    }
    for (size_t e = 0; e < nq + o_slack; e++)
        tu_store_bits(ac->dtype, o_img, e, tu_sentinel_bits(ac->dtype));
    for (int64_t p = 0; p < num_pages; p++) /* sequence b's page j is page num_pages - 1 - (b * pps + j) */
        table[p] = (int)(num_pages - 1 - p);
    /* the truth: new row i of sequence b at key clamp(len, 0, cap) + i, dropped at or past cap */
    for (int i = 0; i < 2; i++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t r = 0; r < N; r++) {
                const int64_t pos = clamp64(ac->lens[b], 0, cap) + r;
                for (int64_t h = 0; pos < cap && h < Hkv; h++)
                    memcpy(truth[i] + (size_t)(((b * Hkv + h) * cap + pos) * D),
                           fresh[i] + (size_t)(((b * N + r) * Hkv + h) * D), (size_t)D * sizeof(float));
            }
    /* cache images: before (pre) and after (want), dense [B, Hkv, cap, D] or paged */
    for (int i = 0; i < 2; i++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < Hkv; h++)
                for (int64_t key = 0; key < cap; key++)
                    for (int64_t e = 0; e < D; e++) {
                        const size_t src = (size_t)(((b * Hkv + h) * cap + key) * D + e);
                        const size_t at = P ? (size_t)(((table[b * pps + key / P] * P + key % P) * Hkv + h) * D + e) : src;
                        tu_store(ac->dtype, cache[i], at, pre[i][src]);
                        tu_store(ac->dtype, want[i], at, truth[i][src]);
                    }
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, Hq, Sq, cap, D, ac->dtype);
    d.heads_kv = Hkv;
    d.causal = ac->causal;
    d.kv_seqlens = 1;
    d.seqlen_new = N;
    if (P) {
        d.page_size = P;
        d.num_pages = num_pages;
        d.pages_per_seq = pps;
    }
    if (with_tree) {
        for (int64_t b = 0; b < B; b++)
            make_tree(tree + b * Sq * W, Sq, W, W, 0, &rng);
        tree_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(B * Sq * W) * sizeof *tree, tree);
        if (!tree_mem) {
            tu_expect(t, 0, "%s: buffers", name);
            goto done;
        }
        d.tree_mask = 1;
    }
    mem[0] = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * esz, q_img);
    mem[1] = tu_buffer(ctx, CL_MEM_READ_WRITE, ncache * esz, cache[0]);
    mem[2] = tu_buffer(ctx, CL_MEM_READ_WRITE, ncache * esz, cache[1]);
    mem[3] = tu_buffer(ctx, CL_MEM_READ_WRITE, (nq + o_slack) * esz, o_img);
    mem[4] = tu_buffer(ctx, CL_MEM_WRITE_ONLY, nl * sizeof(float), NULL);
    mem[5] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * sizeof(int), ac->lens);
    mem[6] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(num_pages + 1) * sizeof(int), table);
    mem[7] = tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * esz, new_img[0]);
    mem[8] = tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * esz, new_img[1]);
    const cl_uint zero = 0;
    mem[9] = tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof zero, &zero);
    for (int i = 0; i < 10; i++)
        if (!mem[i]) {
            tu_expect(t, 0, "%s: buffers", name);
            goto done;
        }
    fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    if (tu_refused_by_design(ctx, st, name))
        goto done;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    if (st == FA_CL_SUCCESS)
        fa_cl_plan_get_info(plan, &info);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = mem[0], a.k = mem[1], a.v = mem[2], a.o = mem[3], a.lse = mem[4], a.cache_seqlens = mem[5];
    a.block_table = P ? mem[6] : NULL, a.k_new = mem[7], a.v_new = mem[8];
    a.tree_mask = tree_mem;
    /* twice: the lengths are not updated, so the second call writes the same rows again; the
     * second with a device status (the same results) */
    cl_uint status = 0;
    for (int run = 0; run < 2 && st == FA_CL_SUCCESS; run++) {
        a.status = run ? mem[9] : NULL;
        st = fa_cl_plan_run(plan, &a);
        if (st == FA_CL_SUCCESS && (tu_read(ctx, mem[3], (nq + o_slack) * esz, run ? o_img : first) != 0 ||
                                    tu_read(ctx, mem[4], nl * sizeof(float), lse) != 0))
            st = FA_CL_ERROR_OPENCL;
    }
    for (int i = 0; i < 2 && st == FA_CL_SUCCESS; i++)
        if (tu_read(ctx, mem[1 + i], ncache * esz, got[i]) != 0)
            st = FA_CL_ERROR_OPENCL;
    if (st == FA_CL_SUCCESS && tu_read(ctx, mem[9], sizeof status, &status) != 0)
        st = FA_CL_ERROR_OPENCL;
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    /* the oracle on each sequence's keys after the append */
    size_t bad = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t len = clamp64(clamp64(ac->lens[b], 0, cap) + N, 0, cap);
        tu_case one = {1, Hq, Hkv, Sq, len, D, ac->dtype, ac->causal, -1, -1, NULL, 0.0f, 1};
        float *kb = malloc((size_t)(Hkv * len * D) * sizeof(float) + 1), *vb = malloc((size_t)(Hkv * len * D) * sizeof(float) + 1);
        if (!kb || !vb) {
            free(kb), free(vb);
            bad++;
            continue;
        }
        for (int64_t h = 0; h < Hkv; h++) {
            memcpy(kb + (size_t)(h * len * D), truth[0] + (size_t)(((b * Hkv + h) * cap) * D), (size_t)(len * D) * sizeof(float));
            memcpy(vb + (size_t)(h * len * D), truth[1] + (size_t)(((b * Hkv + h) * cap) * D), (size_t)(len * D) * sizeof(float));
        }
        double *md = with_tree ? malloc((size_t)(Hq * Sq * len) * sizeof(double) + 1) : NULL;
        for (int64_t h = 0; md && h < Hq; h++) /* the tree: new token t is key len - Sq + t */
            for (int64_t i = 0; i < Sq; i++)
                for (int64_t j = 0; j < len; j++) {
                    const int64_t tk = j - (len - Sq);
                    md[(h * Sq + i) * len + j] = tk >= 0 && !tree_bit(tree + (b * Sq + i) * W, tk) ? -INFINITY : 0.0;
                }
        const tu_mods mods = {0.0, NULL, NULL, md};
        tu_attention_f64_mods(&one, &mods, q + (size_t)(b * Hq * Sq * D), kb, vb, ref_o + (size_t)(b * Hq * Sq * D),
                              ref_l + (size_t)(b * Hq * Sq));
        free(kb), free(vb), free(md);
    }
    double worst = 0.0;
    for (size_t e = 0; e < nq; e++) {
        const double g = tu_load(ac->dtype, o_img, e), ratio = fabs(g - ref_o[e]) / fa_cl_tolerance_bound(ac->dtype, ref_o[e]);
        worst = ratio > worst ? ratio : worst;
        bad += !fa_cl_tolerance_ok(ac->dtype, g, ref_o[e]);
    }
    for (size_t e = 0; e < nl; e++)
        bad += isinf(ref_l[e]) ? lse[e] != ref_l[e] : !(fabs(lse[e] - ref_l[e]) <= 1e-4 * (fabs(ref_l[e]) > 1 ? fabs(ref_l[e]) : 1));
    size_t slack = 0;
    for (size_t e = nq; e < nq + o_slack; e++)
        slack += tu_load_bits(ac->dtype, o_img, e) != tu_sentinel_bits(ac->dtype);
    /* the cache afterwards: the new rows where they belong, every other element as it was */
    const int cache_ok = memcmp(got[0], want[0], ncache * esz) == 0 && memcmp(got[1], want[1], ncache * esz) == 0;
    const int same = memcmp(first, o_img, (nq + o_slack) * esz) == 0;
    /* the status: a length out of range, rows dropped past the capacity; the table is good */
    cl_uint want_status = 0;
    for (int64_t b = 0; b < B; b++) {
        if (ac->lens[b] < 0 || ac->lens[b] > cap)
            want_status |= FA_CL_DEVICE_STATUS_BAD_SEQLEN;
        if (clamp64(ac->lens[b], 0, cap) + N > cap)
            want_status |= FA_CL_DEVICE_STATUS_DROPPED_ROWS;
    }
    tu_expect(t, bad == 0 && slack == 0 && cache_ok && same && status == want_status,
              "%s [%s %dx%d splits %d pack %d launches %d]: worst ratio %.3f, %zu bad, %zu slack written, cache %s%s, "
              "status %#x (want %#x)", name, info.kernel, info.block_q, info.block_kv, info.splits, info.gqa_pack,
              info.launches, worst, bad, slack, cache_ok ? "as expected" : "WRONG",
              same ? "" : ", NOT bitwise equal run to run (with a status)", status, want_status);
done:
    fa_cl_plan_release(plan);
    for (int i = 0; i < 10; i++)
        if (mem[i])
            clReleaseMemObject(mem[i]);
    for (int i = 0; i < 2; i++)
        free(pre[i]), free(truth[i]), free(fresh[i]), free(cache[i]), free(want[i]), free(got[i]), free(new_img[i]);
    free(q), free(q_img), free(o_img), free(first), free(lse), free(ref_o), free(ref_l), free(table);
    if (tree_mem)
        clReleaseMemObject(tree_mem);
    free(tree);
}

static int run_append(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const append_case cases[] = {
        /* decoding one token and speculative decoding (4 new keys, causal), contiguous and paged */
        {3, 8, 2, 1, 300, 64, FA_CL_F16, 0, LENS(0, 150, 299), 1, 0},
        {3, 8, 2, 4, 300, 64, FA_CL_F32, 1, LENS(10, 150, 296), 4, 16},
        {2, 4, 4, 2, 512, 128, FA_CL_BF16, 1, LENS(255, 0), 2, 256},
        /* bad lengths: below 0 (appends at 0), past the capacity (every new row dropped), and new
         * rows that straddle the capacity (the last ones dropped) */
        {3, 4, 2, 3, 200, 32, FA_CL_F32, 1, LENS(-4, 100000, 198), 5, 64},
        /* pages of any size: new rows across page boundaries (1, 3) and mid-page (48) */
        {2, 4, 2, 2, 60, 32, FA_CL_F16, 1, LENS(10, 57), 3, 1},
        {3, 8, 2, 4, 100, 64, FA_CL_F32, 1, LENS(0, 47, 97), 4, 3},
        {2, 4, 4, 1, 150, 64, FA_CL_BF16, 0, LENS(47, 148), 5, 48},
    };
    for (int i = 0; i < TU_COUNT(cases); i++)
        check_append(&serving_tally, ctx, &cases[i], 800 + (uint64_t)i);
    return 0;
}

/* Appends through bad block-table entries write nothing. Four sequences of a pool of 7 pages of 16
 * keys (capacity 32, 2 pages each), every element a canary: sequence 0 appends 4 rows through an
 * entry -1, 1 two rows into its page 3 and two through an entry num_pages, 2 four through an
 * entry INT32_MAX, 3 (pages 0 and 6: where the old clamp sent the others' rows) two rows into its
 * page 6 and two past the capacity. Afterwards only the 4 rows written legitimately differ from
 * the canary, bitwise, in both pools; the status says BAD_PAGE and DROPPED_ROWS (and BAD_SEQLEN
 * when a length is out of range: a second call with sequence 3 at length 40, whose rows all drop). */
static void check_append_bad_pages(tu_tally *t, fa_cl_context *ctx, fa_cl_dtype dtype)
{
    enum { B = 4, HKV = 2, HQ = 4, D = 8, P = 16, CAP = 32, PPS = 2, PAGES = 7, NEW = 4 };
    static const int table[B * PPS] = {-1, 2, 3, PAGES, 4, INT32_MAX, 0, 6};
    static const int lens[2][B] = {{5, 14, 20, 30}, {5, 14, 20, 40}};
    const size_t esz = tu_dtype_size(dtype), npool = (size_t)PAGES * P * HKV * D, nnew = (size_t)B * NEW * HKV * D;
    const size_t nq = (size_t)B * HQ * D;
    const uint32_t canary = tu_sentinel_bits(dtype);
    char name[96];
    snprintf(name, sizeof name, "append through bad block-table entries (%s)", tu_dtype_name(dtype));
    void *pool[2] = {malloc(npool * esz), malloc(npool * esz)}, *got = malloc(npool * esz);
    void *fresh[2] = {malloc(nnew * esz), malloc(nnew * esz)}, *q = malloc(nq * esz);
    cl_mem mem[10] = {NULL};
    fa_cl_plan *plan = NULL;
    if (!pool[0] || !pool[1] || !got || !fresh[0] || !fresh[1] || !q) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    tu_rng rng;
    tu_rng_seed(&rng, 4400);
    for (int i = 0; i < 2; i++) {
        for (size_t e = 0; e < npool; e++)
            tu_store_bits(dtype, pool[i], e, canary);
        for (size_t e = 0; e < nnew; e++)
            tu_store(dtype, fresh[i], e, tu_rng_nonzero(&rng));
    }
    for (size_t e = 0; e < nq; e++)
        tu_store(dtype, q, e, tu_rng_nonzero(&rng));
    const cl_uint zero = 0;
    mem[0] = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * esz, q);
    mem[1] = tu_buffer(ctx, CL_MEM_READ_WRITE, npool * esz, pool[0]);
    mem[2] = tu_buffer(ctx, CL_MEM_READ_WRITE, npool * esz, pool[1]);
    mem[3] = tu_buffer(ctx, CL_MEM_READ_WRITE, nq * esz, NULL);
    mem[4] = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof lens[0], lens[0]);
    mem[5] = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof table, table);
    mem[6] = tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * esz, fresh[0]);
    mem[7] = tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * esz, fresh[1]);
    mem[8] = tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof zero, &zero);
    mem[9] = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof lens[1], lens[1]);
    for (int i = 0; i < 10; i++)
        if (!mem[i]) {
            tu_expect(t, 0, "%s: buffers", name);
            goto done;
        }
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, HQ, 1, CAP, D, dtype);
    d.heads_kv = HKV, d.kv_seqlens = 1, d.seqlen_new = NEW;
    d.page_size = P, d.num_pages = PAGES, d.pages_per_seq = PPS;
    fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
    if (tu_refused_by_design(ctx, st, name))
        goto done;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = mem[0], a.k = mem[1], a.v = mem[2], a.o = mem[3], a.cache_seqlens = mem[4], a.block_table = mem[5];
    a.k_new = mem[6], a.v_new = mem[7], a.status = mem[8];
    cl_uint status[2] = {0, 0};
    for (int call = 0; call < 2 && st == FA_CL_SUCCESS; call++) {
        a.cache_seqlens = mem[call ? 9 : 4];
        if ((st = tu_write(ctx, mem[8], sizeof zero, &zero) ? FA_CL_ERROR_OPENCL : fa_cl_plan_run(plan, &a)) ==
                FA_CL_SUCCESS &&
            tu_read(ctx, mem[8], sizeof status[call], &status[call]) != 0)
            st = FA_CL_ERROR_OPENCL;
    }
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    /* the pools: the canary everywhere but (sequence 1, keys 14, 15: page 3 slots 14, 15) and
     * (sequence 3, keys 30, 31: page 6 slots 14, 15), which hold new rows 0 and 1 of the sequence */
    size_t wrong = 0, first_wrong = (size_t)-1;
    for (int i = 0; i < 2; i++) {
        if (tu_read(ctx, mem[1 + i], npool * esz, got) != 0) {
            wrong++;
            continue;
        }
        for (size_t e = 0; e < npool; e++) {
            const size_t page = e / ((size_t)P * HKV * D), slot = e / ((size_t)HKV * D) % P;
            const size_t h = e / D % HKV, c = e % D;
            const int seq = page == 3 ? 1 : page == 6 ? 3 : -1;
            uint32_t want = canary;
            if (seq >= 0 && slot >= 14) /* new row slot - 14 of seq */
                want = tu_load_bits(dtype, fresh[i], (((size_t)seq * NEW + slot - 14) * HKV + h) * D + c);
            if (tu_load_bits(dtype, got, e) != want && !wrong++)
                first_wrong = e;
        }
    }
    const cl_uint bits = FA_CL_DEVICE_STATUS_BAD_PAGE | FA_CL_DEVICE_STATUS_DROPPED_ROWS;
    char where[96] = "";
    if (wrong)
        snprintf(where, sizeof where, " (the first: element %zu, page %zu)", first_wrong,
                 first_wrong / ((size_t)P * HKV * D));
    tu_expect(t, wrong == 0 && status[0] == bits && status[1] == (bits | FA_CL_DEVICE_STATUS_BAD_SEQLEN),
              "%s: %zu pool elements changed that should not have%s, status %#x then %#x (want %#x, then %#x)", name,
              wrong, where, status[0], status[1], bits, bits | FA_CL_DEVICE_STATUS_BAD_SEQLEN);
done:
    fa_cl_plan_release(plan);
    for (int i = 0; i < 10; i++)
        if (mem[i])
            clReleaseMemObject(mem[i]);
    free(pool[0]), free(pool[1]), free(got), free(fresh[0]), free(fresh[1]), free(q);
}

/* Appends through bad block-table entries, f32 and f16 (run_append: good tables, no BAD_PAGE). */
static int run_append_bad(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    check_append_bad_pages(&serving_tally, ctx, FA_CL_F32);
    check_append_bad_pages(&serving_tally, ctx, FA_CL_F16);
    return 0;
}

/* An appending call's outputs (the caches k and v, o, lse, args.status) must not overlap each other
 * or any buffer the call reads; the status must be a writable cl_uint. a holds the call's inputs
 * (its caches read-only: replaced here by writable ones). Each refusal enqueues nothing. */
static void append_aliasing(tu_tally *t, fa_cl_context *ctx, fa_cl_plan *plan, const fa_cl_attention_desc *d,
                            const fa_cl_forward_args *given)
{
    const size_t pool = (size_t)(d->num_pages * d->page_size * d->heads_kv * d->head_dim) * 2; /* f16 */
    cl_mem kc = tu_buffer(ctx, CL_MEM_READ_WRITE, pool, NULL), vc = tu_buffer(ctx, CL_MEM_READ_WRITE, pool, NULL);
    cl_mem both = tu_buffer(ctx, CL_MEM_READ_WRITE, 2 * pool, NULL), ro = tu_buffer(ctx, CL_MEM_READ_ONLY, 4, NULL);
    cl_mem tiny = tu_buffer(ctx, CL_MEM_READ_WRITE, 2, NULL), status = tu_buffer(ctx, CL_MEM_READ_WRITE, 4, NULL);
    cl_mem half[2] = {NULL, NULL}, apart[2] = {NULL, NULL};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && both && err == CL_SUCCESS; i++) {
        const cl_buffer_region overlapping = {(size_t)i * pool / 2, pool}, adjacent = {(size_t)i * pool, pool};
        half[i] = clCreateSubBuffer(both, 0, CL_BUFFER_CREATE_TYPE_REGION, &overlapping, &err);
        if (err == CL_SUCCESS)
            apart[i] = clCreateSubBuffer(both, 0, CL_BUFFER_CREATE_TYPE_REGION, &adjacent, &err);
    }
    if (!kc || !vc || !both || !ro || !tiny || !status || err != CL_SUCCESS) {
        tu_expect(t, 0, "append aliasing: buffers (%d)", (int)err);
    } else {
        const struct {
            const char *what, *needle;
            fa_cl_status want;
        } cases[] = {
            {"k and v caches the same buffer", "the cache k overlaps v", FA_CL_ERROR_INVALID_ARGUMENT},
            {"k and v caches overlapping sub-buffers of one buffer", "the cache k overlaps v",
             FA_CL_ERROR_INVALID_ARGUMENT},
            {"k_new the k cache's buffer", "the cache k overlaps args.k_new", FA_CL_ERROR_INVALID_ARGUMENT},
            {"status inside the k cache", "overlaps args.status", FA_CL_ERROR_INVALID_ARGUMENT},
            {"status o's buffer", "output o overlaps args.status", FA_CL_ERROR_INVALID_ARGUMENT},
            {"status of 2 bytes", "buffer status holds 2 bytes", FA_CL_ERROR_BUFFER_TOO_SMALL},
            {"status CL_MEM_READ_ONLY", "buffer status is written", FA_CL_ERROR_INVALID_ARGUMENT},
            {"k and v caches adjacent sub-buffers of one buffer, a status", "", FA_CL_SUCCESS},
        };
        for (int i = 0; i < TU_COUNT(cases); i++) {
            fa_cl_forward_args a = *given;
            cl_event done = NULL;
            a.k = kc, a.v = vc, a.done = &done;
            switch (i) {
            case 0: a.v = kc; break;
            case 1: a.k = half[0], a.v = half[1]; break;
            case 2: a.k_new = kc; break;
            case 3: a.status = kc; break;
            case 4: a.status = a.o; break;
            case 5: a.status = tiny; break;
            case 6: a.status = ro; break;
            case 7: a.k = apart[0], a.v = apart[1], a.status = status; break;
            }
            const fa_cl_status st = fa_cl_plan_run(plan, &a);
            const char *msg = st == FA_CL_SUCCESS ? "" : fa_cl_last_error(ctx);
            tu_expect(t, st == cases[i].want && strstr(msg, cases[i].needle) && (done != NULL) == (st == FA_CL_SUCCESS),
                      "append, %s: %s: %s", cases[i].what, fa_cl_status_string(st), msg);
            if (done)
                clWaitForEvents(1, &done), clReleaseEvent(done);
        }
    }
    cl_mem all[10] = {kc, vc, half[0], half[1], apart[0], apart[1], both, ro, tiny, status};
    for (int i = 0; i < 10; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
}

/* host-side checks: a status and a message naming the problem, nothing enqueued */
static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &serving_tally;
    const serving_case sc = {{2, 4, 2, 1, 100, 64, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, LENS(10, 100), 16, 0, 0};
    serving_run r;
    if (run_init(&r, ctx, &sc, 7, 0) != 0)
        return 1;
    struct {
        const char *what, *needle;
        fa_cl_status want;
        void (*edit)(fa_cl_attention_desc *);
    } descs[] = {
        {"page_size 2^30", "page_size", FA_CL_ERROR_UNSUPPORTED, NULL},
        {"num_pages 0", "num_pages", FA_CL_ERROR_INVALID_ARGUMENT, NULL},
        {"seqlen_k above the table's pages", "pages_per_seq", FA_CL_ERROR_INVALID_ARGUMENT, NULL},
        {"num_pages without page_size", "page_size is 0", FA_CL_ERROR_INVALID_ARGUMENT, NULL},
        {"negative page_size", "negative", FA_CL_ERROR_INVALID_ARGUMENT, NULL},
    };
    for (int i = 0; i < TU_COUNT(descs); i++) {
        fa_cl_attention_desc d = r.desc;
        switch (i) {
        case 0: d.page_size = (int64_t)1 << 30; break;
        case 1: d.num_pages = 0; break;
        case 2: d.seqlen_k = d.pages_per_seq * d.page_size + 1; break;
        case 3: d.page_size = 0; break;
        case 4: d.page_size = -16; break;
        }
        fa_cl_plan *plan = NULL;
        fa_cl_status st = fa_cl_plan_create(ctx, &d, &plan);
        const char *msg = fa_cl_last_error(ctx);
        tu_expect(t, st == descs[i].want && !plan && strstr(msg, descs[i].needle), "desc %s: %s: %s", descs[i].what,
                  fa_cl_status_string(st), msg);
        fa_cl_plan_release(plan);
    }
    /* the pool must hold num_pages pages */
    fa_cl_attention_desc big = r.desc;
    big.num_pages += 1;
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &big, &plan);
    if (st == FA_CL_SUCCESS) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = r.p.mem[0], a.k = r.pool[0], a.v = r.pool[1], a.o = r.p.mem[3];
        a.cache_seqlens = r.lens_mem, a.block_table = r.table_mem;
        st = fa_cl_plan_run(plan, &a);
        tu_expect(t, st == FA_CL_ERROR_BUFFER_TOO_SMALL && strstr(fa_cl_last_error(ctx), "buffer k"),
                  "a pool smaller than num_pages pages: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        fa_cl_plan_release(plan);
    } else {
        tu_expect(t, 0, "plan with one more page: %s", fa_cl_last_error(ctx));
    }
    /* args: a missing table or lengths, a table too small, a table given to an unpaged plan, the
     * positional call (which cannot pass them), an output overlapping the lengths */
    st = fa_cl_plan_create(ctx, &r.desc, &plan);
    if (st != FA_CL_SUCCESS)
        return 1;
    cl_mem small = tu_buffer(ctx, CL_MEM_READ_ONLY, 4, NULL);
    for (int i = 0; i < 5; i++) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = r.p.mem[0], a.k = r.pool[0], a.v = r.pool[1], a.o = r.p.mem[3];
        a.cache_seqlens = r.lens_mem, a.block_table = r.table_mem;
        const char *what = "", *needle = "";
        fa_cl_status want = FA_CL_ERROR_INVALID_ARGUMENT;
        switch (i) {
        case 0: a.block_table = NULL, what = "no block table", needle = "block_table is NULL"; break;
        case 1: a.cache_seqlens = NULL, what = "no lengths", needle = "cache_seqlens is NULL"; break;
        case 2:
            a.block_table = small, what = "a 4-byte table", needle = "buffer block_table";
            want = FA_CL_ERROR_BUFFER_TOO_SMALL;
            break;
        case 3: what = "lengths given to a plan without them", needle = "desc.kv_seqlens is 0"; break;
        case 4: break;
        }
        if (i == 3) {
            fa_cl_attention_desc d = r.desc;
            d.kv_seqlens = 0;
            fa_cl_plan *p2 = NULL;
            st = fa_cl_plan_create(ctx, &d, &p2);
            if (st == FA_CL_SUCCESS)
                st = fa_cl_plan_run(p2, &a);
            fa_cl_plan_release(p2);
        } else if (i == 4) {
            st = fa_cl_plan_forward(plan, a.q, a.k, a.v, a.o, NULL, 0, NULL, NULL);
            what = "fa_cl_plan_forward (positional)", needle = "cache_seqlens is NULL";
        } else {
            st = fa_cl_plan_run(plan, &a);
        }
        tu_expect(t, st == want && strstr(fa_cl_last_error(ctx), needle), "args %s: %s: %s", what,
                  fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    if (small)
        clReleaseMemObject(small);
    fa_cl_plan_release(plan);
    /* append: needs the lengths; the new rows; a cache it may write */
    {
        fa_cl_attention_desc d = r.desc;
        d.seqlen_new = 2;
        d.kv_seqlens = 0;
        fa_cl_plan *p = NULL;
        st = fa_cl_plan_create(ctx, &d, &p);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "needs desc.kv_seqlens"),
                  "append without kv_seqlens: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        fa_cl_plan_release(p);
        d.kv_seqlens = 1;
        st = fa_cl_plan_create(ctx, &d, &p);
        if (st == FA_CL_SUCCESS) {
            const size_t bytes = (size_t)(d.batch * d.seqlen_new * d.heads_kv * d.head_dim) * 2;
            cl_mem kn = tu_buffer(ctx, CL_MEM_READ_ONLY, bytes, NULL), vn = tu_buffer(ctx, CL_MEM_READ_ONLY, bytes, NULL);
            fa_cl_forward_args a;
            fa_cl_forward_args_init(&a);
            a.q = r.p.mem[0], a.k = r.pool[0], a.v = r.pool[1], a.o = r.p.mem[3];
            a.cache_seqlens = r.lens_mem, a.block_table = r.table_mem;
            st = fa_cl_plan_run(p, &a);
            tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "k_new is NULL"),
                      "append without k_new: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            a.k_new = kn, a.v_new = vn;
            st = fa_cl_plan_run(p, &a); /* the test's pools are CL_MEM_READ_ONLY */
            tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "buffer k is written"),
                      "append into a read-only cache: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            append_aliasing(t, ctx, p, &d, &a);
            if (kn)
                clReleaseMemObject(kn);
            if (vn)
                clReleaseMemObject(vn);
        } else {
            tu_expect(t, 0, "an appending plan: %s", fa_cl_last_error(ctx));
        }
        fa_cl_plan_release(p);
    }
    /* varlen descriptors and buffers */
    {
        fa_cl_attention_desc d;
        fa_cl_attention_desc_init(&d, 2, 4, 8, 8, 64, FA_CL_F16);
        d.total_q = 16;
        fa_cl_attention_desc e = d;
        e.q_stride[0] = 5, e.q_stride[1] = 64, e.q_stride[2] = 256;
        fa_cl_plan *p = NULL;
        st = fa_cl_plan_create(ctx, &e, &p);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "q_stride[0] must be 0"),
                  "varlen q with a batch stride: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        fa_cl_plan_release(p);
        e = d;
        e.total_k = 16, e.kv_seqlens = 1;
        st = fa_cl_plan_create(ctx, &e, &p);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "does not combine"),
                  "varlen k with kv_seqlens: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        fa_cl_plan_release(p);
        e = d;
        e.total_q = -1;
        st = fa_cl_plan_create(ctx, &e, &p);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "total_q"),
                  "negative total_q: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        fa_cl_plan_release(p);
        st = fa_cl_plan_create(ctx, &d, &p);
        if (st == FA_CL_SUCCESS) {
            /* q and o hold 16 packed rows; k and v the dense [2, 4, 8, 64] */
            cl_mem q = tu_buffer(ctx, CL_MEM_READ_ONLY, 16 * 4 * 64 * 2, NULL);
            cl_mem kv = tu_buffer(ctx, CL_MEM_READ_ONLY, 2 * 4 * 8 * 64 * 2, NULL);
            cl_mem o = tu_buffer(ctx, CL_MEM_READ_WRITE, 16 * 4 * 64 * 2, NULL);
            cl_mem cu = tu_buffer(ctx, CL_MEM_READ_ONLY, 8, NULL); /* 2 of the 3 offsets */
            fa_cl_forward_args a;
            fa_cl_forward_args_init(&a);
            a.q = q, a.k = kv, a.v = kv, a.o = o;
            st = fa_cl_plan_run(p, &a);
            tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "cu_seqlens_q is NULL"),
                      "varlen q without cu_seqlens_q: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            a.cu_seqlens_q = cu;
            st = fa_cl_plan_run(p, &a);
            tu_expect(t, st == FA_CL_ERROR_BUFFER_TOO_SMALL && strstr(fa_cl_last_error(ctx), "cu_seqlens_q"),
                      "cu_seqlens_q of batch entries, not batch + 1: %s: %s", fa_cl_status_string(st),
                      fa_cl_last_error(ctx));
            cl_mem m[4] = {q, kv, o, cu};
            for (int i = 0; i < 4; i++)
                if (m[i])
                    clReleaseMemObject(m[i]);
        } else {
            tu_expect(t, 0, "a varlen plan: %s", fa_cl_last_error(ctx));
        }
        fa_cl_plan_release(p);
    }
    /* the reference takes neither */
    st = fa_cl_reference_forward(ctx, &r.desc, r.p.mem[0], r.pool[0], r.pool[1], r.p.mem[3], NULL, 0, NULL, NULL);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED, "the reference refuses paged K/V: %s: %s",
              fa_cl_status_string(st), fa_cl_last_error(ctx));
    run_free(&r);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"ragged", run_ragged}, {"paged", run_paged}, {"mixed", run_mixed}, {"decode", run_decode}, {"mods", run_mods},
        {"bad_data", run_bad_data}, {"splits", run_splits}, {"invalid", run_invalid}, {"tiny", run_tiny}, {"varlen", run_varlen},
        {"append", run_append}, {"append_bad", run_append_bad}, {"long", run_long}, {"tree", run_tree},
        {"tree_invalid", run_tree_invalid},
    };
    return tu_main(&serving_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
