/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared-prefix ("cascade") attention with partial results (include/fa_cl.h, "Partial results and
 * their merge"): NSUF requests share one prefix of PREFIX tokens (a system prompt) and each adds
 * SUFFIX tokens of its own, causal. The prefix's K/V are stored once; one call attends every
 * request's queries to them (a batch stride of 0 broadcasts the prefix to the batch), another to
 * each request's own suffix keys, with their positions in the full sequence, and fa_cl_merge joins
 * the two partial results. The result is checked against a CPU reference over prefix + suffix;
 * the exit status is 0 only if it matches (77: no OpenCL device).
 */
#include <fa_cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { NSUF = 3, H = 4, D = 64, PREFIX = 96, SUFFIX = 24, FULL = PREFIX + SUFFIX };

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

/* One partial call's descriptor: the requests' SUFFIX query rows (positions PREFIX ..) against
 * nkeys keys starting at position k_position, causal in the full sequence of FULL tokens. */
static fa_cl_attention_desc partial_desc(int nkeys, int k_position)
{
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, NSUF, H, SUFFIX, nkeys, D, FA_CL_F32);
    d.causal = 1;
    d.q_position = PREFIX;
    d.k_position = k_position;
    d.full_seqlen_q = FULL;
    d.full_seqlen_k = FULL;
    return d;
}

int main(void)
{
    static float kp[H * PREFIX * D], vp[H * PREFIX * D];                       /* the prefix, once */
    static float q[NSUF * H * SUFFIX * D], ks[NSUF * H * SUFFIX * D], vs[NSUF * H * SUFFIX * D], o[NSUF * H * SUFFIX * D];
    unsigned seed = 7;
    for (int i = 0; i < H * PREFIX * D; i++)
        kp[i] = value(&seed), vp[i] = value(&seed);
    for (int i = 0; i < NSUF * H * SUFFIX * D; i++)
        q[i] = value(&seed), ks[i] = value(&seed), vs[i] = value(&seed);

    fa_cl_context *ctx;
    fa_cl_status st = fa_cl_context_create_default(&ctx);
    if (st != FA_CL_SUCCESS)
        return fail(NULL, "fa_cl_context_create_default", st);
    cl_context cl = fa_cl_context_cl_context(ctx);
    cl_int err;
    const cl_mem_flags in = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
    cl_mem m_kp = clCreateBuffer(cl, in, sizeof kp, kp, &err), m_vp = clCreateBuffer(cl, in, sizeof vp, vp, &err);
    cl_mem m_q = clCreateBuffer(cl, in, sizeof q, q, &err), m_ks = clCreateBuffer(cl, in, sizeof ks, ks, &err);
    cl_mem m_vs = clCreateBuffer(cl, in, sizeof vs, vs, &err);
    cl_mem part_o[2], part_lse[2], m_o = clCreateBuffer(cl, CL_MEM_READ_WRITE, sizeof o, NULL, &err);
    for (int i = 0; i < 2; i++) {
        part_o[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, sizeof o, NULL, &err);
        part_lse[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, NSUF * H * SUFFIX * sizeof(float), NULL, &err);
    }

    /* the prefix: keys 0 .. PREFIX - 1, one copy for every request (batch stride 0) */
    fa_cl_attention_desc prefix = partial_desc(PREFIX, 0);
    prefix.k_stride[0] = prefix.v_stride[0] = 0;
    prefix.k_stride[1] = prefix.v_stride[1] = PREFIX * D;
    prefix.k_stride[2] = prefix.v_stride[2] = D;
    /* each request's own keys: positions PREFIX .. FULL - 1 */
    fa_cl_attention_desc suffix = partial_desc(SUFFIX, PREFIX);
    const fa_cl_attention_desc *descs[2] = {&prefix, &suffix};
    const cl_mem keys[2][2] = {{m_kp, m_vp}, {m_ks, m_vs}};
    for (int i = 0; i < 2 && st == FA_CL_SUCCESS; i++) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = m_q, a.k = keys[i][0], a.v = keys[i][1], a.o = part_o[i], a.lse = part_lse[i];
        st = fa_cl_attention_run(ctx, descs[i], &a);
    }
    if (st != FA_CL_SUCCESS)
        return fail(ctx, "a partial call", st);

    fa_cl_merge_args m;
    fa_cl_merge_args_init(&m);
    m.desc = &suffix; /* the merged o: the suffix call's shape and o view */
    m.num_parts = 2, m.part_desc = descs, m.part_o = part_o, m.part_lse = part_lse;
    m.o = m_o;
    if ((st = fa_cl_merge(ctx, &m)) != FA_CL_SUCCESS)
        return fail(ctx, "fa_cl_merge", st);
    err = clEnqueueReadBuffer(fa_cl_context_queue(ctx), m_o, CL_TRUE, 0, sizeof o, o, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fail(ctx, "clEnqueueReadBuffer", FA_CL_ERROR_OPENCL);

    /* the CPU reference: row i of request b (position PREFIX + i) sees the prefix and suffix keys 0 .. i */
    double worst = 0.0;
    const double scale = 1.0 / sqrt((double)D);
    for (int b = 0; b < NSUF; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < SUFFIX; i++) {
                const float *qi = &q[((b * H + h) * SUFFIX + i) * D];
                double s[FULL], mx = -INFINITY, sum = 0.0;
                const int seen = PREFIX + i + 1;
                for (int j = 0; j < seen; j++) {
                    const float *kj = j < PREFIX ? &kp[(h * PREFIX + j) * D] : &ks[((b * H + h) * SUFFIX + j - PREFIX) * D];
                    double dot = 0.0;
                    for (int c = 0; c < D; c++)
                        dot += (double)qi[c] * kj[c];
                    s[j] = dot * scale;
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < seen; j++)
                    sum += exp(s[j] - mx);
                for (int c = 0; c < D; c++) {
                    double acc = 0.0;
                    for (int j = 0; j < seen; j++)
                        acc += exp(s[j] - mx) *
                               (j < PREFIX ? vp[(h * PREFIX + j) * D + c] : vs[((b * H + h) * SUFFIX + j - PREFIX) * D + c]);
                    const double err_c = fabs(acc / sum - o[((b * H + h) * SUFFIX + i) * D + c]);
                    worst = err_c > worst ? err_c : worst;
                }
            }
    printf("shared prefix of %d tokens, %d requests of %d tokens each: max |o - reference| = %.2e\n", PREFIX, NSUF,
           SUFFIX, worst);

    cl_mem all[] = {m_kp, m_vp, m_q, m_ks, m_vs, m_o, part_o[0], part_o[1], part_lse[0], part_lse[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clReleaseMemObject(all[i]);
    fa_cl_context_release(ctx);
    return worst <= 1e-4 ? 0 : 1;
}
