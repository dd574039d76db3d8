/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One decoding step against a paged KV cache (include/fa_cl.h, "Serving"): two sequences of
 * different lengths whose keys live in 16-key pages of a shared pool, in any order; each gets one
 * new token, which the call appends to the cache at the sequence's length (k_new, v_new) before
 * attending to every key so far. GQA: 8 query heads read 2 kv heads. The result is checked
 * against a CPU reference over the same keys; the exit status is 0 only if it matches (77: no
 * OpenCL device).
 */
#include <fa_cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 2, HQ = 8, HKV = 2, D = 64, PAGE = 16, CAPACITY = 256, PAGES_PER_SEQ = CAPACITY / PAGE,
       NUM_PAGES = B * PAGES_PER_SEQ };

static const int lengths[B] = {37, 200}; /* keys already in the cache, before this step's token */

/* element offset of key j of sequence b, kv head h, in a pool [NUM_PAGES, PAGE, HKV, D] */
static size_t pool_at(const int *table, int b, int j, int h)
{
    return (((size_t)table[b * PAGES_PER_SEQ + j / PAGE] * PAGE + (size_t)(j % PAGE)) * HKV + (size_t)h) * D;
}

static float value(unsigned *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 9) & 0xffff) / 65536.0f - 0.5f;
}

static int fail(fa_cl_context *ctx, const char *what, fa_cl_status st)
{
    fprintf(stderr, "%s: %s: %s\n", what, fa_cl_status_string(st), fa_cl_last_error(ctx));
    return st == FA_CL_ERROR_NO_DEVICE ? 77 : 1;
}

int main(void)
{
    static float k_pool[NUM_PAGES * PAGE * HKV * D], v_pool[NUM_PAGES * PAGE * HKV * D];
    static float q[B * HQ * D], k_new[B * HKV * D], v_new[B * HKV * D], o[B * HQ * D];
    int table[B * PAGES_PER_SEQ];
    unsigned seed = 1;
    for (int p = 0; p < NUM_PAGES; p++) /* the pages of both sequences, interleaved and reversed */
        table[(p % B) * PAGES_PER_SEQ + p / B] = NUM_PAGES - 1 - p;
    for (size_t i = 0; i < sizeof k_pool / sizeof k_pool[0]; i++) {
        k_pool[i] = value(&seed);
        v_pool[i] = value(&seed);
    }
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        q[i] = value(&seed);
    for (size_t i = 0; i < sizeof k_new / sizeof k_new[0]; i++) {
        k_new[i] = value(&seed);
        v_new[i] = value(&seed);
    }

    fa_cl_context *ctx;
    fa_cl_status st = fa_cl_context_create_default(&ctx);
    if (st != FA_CL_SUCCESS)
        return fail(NULL, "fa_cl_context_create_default", st);
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, HQ, /*seqlen_q*/ 1, /*seqlen_k: the capacity*/ CAPACITY, D, FA_CL_F32);
    d.heads_kv = HKV;
    d.page_size = PAGE;            /* k, v: pools [NUM_PAGES, PAGE, HKV, D] (strides 0: contiguous) */
    d.num_pages = NUM_PAGES;
    d.pages_per_seq = PAGES_PER_SEQ;
    d.kv_seqlens = 1;              /* each sequence's length: args.cache_seqlens */
    d.seqlen_new = 1;              /* one new token per sequence: args.k_new, args.v_new */
    fa_cl_plan *plan;
    if ((st = fa_cl_plan_create(ctx, &d, &plan)) != FA_CL_SUCCESS)
        return fail(ctx, "fa_cl_plan_create", st);
    fa_cl_plan_info info;
    fa_cl_plan_get_info(plan, &info);
    printf("plan: %s %dx%d, %d launches, GQA pack %d, split-KV %d, %zu scratch bytes\n", info.kernel, info.block_q,
           info.block_kv, info.launches, info.gqa_pack, info.splits, info.scratch_bytes);

    cl_context cl = fa_cl_context_cl_context(ctx);
    const cl_mem_flags in = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cache = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    cl_int e[8];
    cl_mem mq = clCreateBuffer(cl, in, sizeof q, q, &e[0]);
    cl_mem mk = clCreateBuffer(cl, cache, sizeof k_pool, k_pool, &e[1]); /* the append writes the cache */
    cl_mem mv = clCreateBuffer(cl, cache, sizeof v_pool, v_pool, &e[2]);
    cl_mem mo = clCreateBuffer(cl, CL_MEM_WRITE_ONLY, sizeof o, NULL, &e[3]);
    cl_mem mlen = clCreateBuffer(cl, in, sizeof lengths, (void *)lengths, &e[4]);
    cl_mem mtab = clCreateBuffer(cl, in, sizeof table, table, &e[5]);
    cl_mem mkn = clCreateBuffer(cl, in, sizeof k_new, k_new, &e[6]);
    cl_mem mvn = clCreateBuffer(cl, in, sizeof v_new, v_new, &e[7]);
    for (int i = 0; i < 8; i++)
        if (e[i] != CL_SUCCESS) {
            fprintf(stderr, "clCreateBuffer failed (%d)\n", (int)e[i]);
            return 1;
        }
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = mq, a.k = mk, a.v = mv, a.o = mo;
    a.cache_seqlens = mlen, a.block_table = mtab, a.k_new = mkn, a.v_new = mvn;
    if ((st = fa_cl_plan_run(plan, &a)) != FA_CL_SUCCESS)
        return fail(ctx, "fa_cl_plan_run", st);
    if (clEnqueueReadBuffer(fa_cl_context_queue(ctx), mo, CL_TRUE, 0, sizeof o, o, 0, NULL, NULL) != CL_SUCCESS)
        return 1;

    /* the reference: each query head against its kv head's keys 0 .. length, the new one last */
    double worst = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++) {
            const int hk = h / (HQ / HKV), n = lengths[b] + 1;
            const float *qh = q + ((size_t)b * HQ + h) * D;
            double s[CAPACITY], m = -INFINITY, sum = 0.0;
            for (int j = 0; j < n; j++) {
                const float *kj = j < lengths[b] ? k_pool + pool_at(table, b, j, hk) : k_new + ((size_t)b * HKV + hk) * D;
                double dot = 0.0;
                for (int c = 0; c < D; c++)
                    dot += (double)qh[c] * kj[c];
                s[j] = dot / sqrt((double)D);
                m = s[j] > m ? s[j] : m;
            }
            for (int j = 0; j < n; j++)
                sum += (s[j] = exp(s[j] - m));
            for (int c = 0; c < D; c++) {
                double acc = 0.0;
                for (int j = 0; j < n; j++)
                    acc += s[j] * (j < lengths[b] ? v_pool[pool_at(table, b, j, hk) + c]
                                                  : v_new[((size_t)b * HKV + hk) * D + c]);
                const double err = fabs(acc / sum - o[((size_t)b * HQ + h) * D + c]);
                worst = err > worst ? err : worst;
            }
        }
    printf("max |error| against the CPU reference: %.3g\n", worst);

    cl_mem mems[8] = {mq, mk, mv, mo, mlen, mtab, mkn, mvn};
    for (int i = 0; i < 8; i++)
        clReleaseMemObject(mems[i]);
    fa_cl_plan_release(plan);
    fa_cl_context_release(ctx);
    return worst < 1e-5 ? 0 : 1;
}
