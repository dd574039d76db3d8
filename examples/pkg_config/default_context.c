/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shortest way in: fa_cl picks the device (FA_CL_DEVICE, else the first GPU, else the first
 * device) and owns the OpenCL context; the buffers are made on that context. A plan is created
 * once (this compiles the kernel, or loads it from the on-disk program cache) and reused for every
 * call. O and the log-sum-exp are checked against a small CPU reference; the exit status is 0 only if
 * they match (77: no OpenCL device, nothing to check).
 */
#include <fa_cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, H = 3, SQ = 45, SK = 45, D = 64, CALLS = 3 };

/* O and LSE of softmax(Q K^T / sqrt(D)) V over contiguous [B, H, S, D] tensors, in double precision. */
static void cpu_attention(const float *q, const float *k, const float *v, double *o, double *lse)
{
    const double scale = 1.0 / sqrt((double)D);
    double p[SK];
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < SQ; i++) {
            const float *qi = q + ((size_t)bh * SQ + i) * D;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j < SK; j++) {
                const float *kj = k + ((size_t)bh * SK + j) * D;
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += (double)qi[d] * kj[d];
                p[j] = s * scale;
                m = p[j] > m ? p[j] : m;
            }
            for (int j = 0; j < SK; j++)
                sum += (p[j] = exp(p[j] - m));
            lse[(size_t)bh * SQ + i] = m + log(sum);
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < SK; j++)
                    acc += p[j] * v[((size_t)bh * SK + j) * D + d];
                o[((size_t)bh * SQ + i) * D + d] = acc / sum;
            }
        }
}

static int fail(fa_cl_context *ctx, const char *what, fa_cl_status st)
{
    fprintf(stderr, "%s: %s: %s\n", what, fa_cl_status_string(st), fa_cl_last_error(ctx));
    return st == FA_CL_ERROR_NO_DEVICE ? 77 : 1;
}

int main(void)
{
    fa_cl_context *ctx = NULL;
    fa_cl_status st = fa_cl_context_create_default(&ctx);
    if (st != FA_CL_SUCCESS) {
        if (st == FA_CL_ERROR_NO_DEVICE)
            printf("SKIP: no OpenCL device\n");
        return fail(NULL, "fa_cl_context_create_default", st);
    }
    char name[256] = "";
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_NAME, sizeof name, name, NULL);
    printf("device: %s\n%s", name, fa_cl_context_notes(ctx));

    const size_t nq = (size_t)B * H * SQ * D, nk = (size_t)B * H * SK * D, nl = (size_t)B * H * SQ;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    float *o = malloc(nq * sizeof *o), *lse = malloc(nl * sizeof *lse);
    double *want = malloc(nq * sizeof *want), *want_lse = malloc(nl * sizeof *want_lse);
    if (!q || !k || !v || !o || !lse || !want || !want_lse)
        return 1;
    unsigned x = 777;
    for (size_t i = 0; i < nq; i++)
        q[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
    for (size_t i = 0; i < nk; i++) {
        k[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
        v[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
    }

    cl_context cl_ctx = fa_cl_context_cl_context(ctx);
    cl_command_queue queue = fa_cl_context_queue(ctx);
    cl_int err;
    cl_mem q_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nq * 4, q, &err);
    cl_mem k_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nk * 4, k, &err);
    cl_mem v_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nk * 4, v, &err);
    cl_mem o_mem = clCreateBuffer(cl_ctx, CL_MEM_WRITE_ONLY, nq * 4, NULL, &err);
    cl_mem lse_mem = clCreateBuffer(cl_ctx, CL_MEM_WRITE_ONLY, nl * 4, NULL, &err);
    if (!q_mem || !k_mem || !v_mem || !o_mem || !lse_mem) {
        fprintf(stderr, "clCreateBuffer failed (%d)\n", (int)err);
        return 1;
    }

    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, B, H, SQ, SK, D, FA_CL_F32); /* contiguous [B, H, S, D] */
    fa_cl_plan *plan = NULL;
    st = fa_cl_plan_create(ctx, &desc, &plan);
    if (st != FA_CL_SUCCESS)
        return fail(ctx, "fa_cl_plan_create", st);
    fa_cl_plan_info info;
    fa_cl_plan_get_info(plan, &info);
    printf("plan: B_r %d, B_c %d, %d work-items, %zu bytes of local memory, kernel %s\n", info.block_q,
           info.block_kv, info.work_group_size, info.local_mem_bytes, info.kernel);
    for (int c = 0; c < CALLS; c++) { /* calls queue in order; only the last one is waited for */
        st = fa_cl_plan_forward(plan, q_mem, k_mem, v_mem, o_mem, lse_mem, 0, NULL, NULL);
        if (st != FA_CL_SUCCESS)
            return fail(ctx, "fa_cl_plan_forward", st);
    }
    err = clEnqueueReadBuffer(queue, o_mem, CL_FALSE, 0, nq * 4, o, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(queue, lse_mem, CL_TRUE, 0, nl * 4, lse, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clEnqueueReadBuffer failed (%d)\n", (int)err);
        return 1;
    }

    cpu_attention(q, k, v, want, want_lse);
    double worst = 0, worst_lse = 0;
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++) {
        double e = fabs(o[i] - want[i]);
        bad += !(e <= 1e-5 + 1e-4 * fabs(want[i]));
        worst = e > worst || e != e ? e : worst;
    }
    for (size_t i = 0; i < nl; i++) {
        double e = fabs(lse[i] - want_lse[i]);
        bad += !(e <= 1e-5 * (1 + fabs(want_lse[i])));
        worst_lse = e > worst_lse || e != e ? e : worst_lse;
    }
    printf("fa_cl on the default context: B=%d H=%d Sq=%d Sk=%d D=%d, %d calls: max |error| O %.2e, LSE %.2e; "
           "%zu values outside tolerance\n", B, H, SQ, SK, D, CALLS, worst, worst_lse, bad);

    fa_cl_plan_release(plan);
    clReleaseMemObject(q_mem);
    clReleaseMemObject(k_mem);
    clReleaseMemObject(v_mem);
    clReleaseMemObject(o_mem);
    clReleaseMemObject(lse_mem);
    fa_cl_context_release(ctx); /* after its plans */
    free(q), free(k), free(v), free(o), free(lse), free(want), free(want_lse);
    return bad == 0 ? 0 : 1;
}
