/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The common integration case: an application that already owns an OpenCL context, device, queue
 * and buffers hands them to fa_cl. Its tensors use the [batch, seq, heads, head_dim] layout
 * (FlashAttention's), described to fa_cl by strides; K/V have fewer heads (GQA) and the mask is
 * causal. The result is checked against a small CPU reference; the exit status is 0 only if it matches
 * (77: no OpenCL device, nothing to check).
 */
#include <fa_cl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 2, HQ = 4, HKV = 2, SQ = 37, SK = 53, D = 32 };

/* Element (b, s, h, d) of a [B, S, H, D] tensor. */
static size_t at(int S, int H, int b, int s, int h, int d) { return (((size_t)b * S + s) * H + h) * D + d; }

/* O = softmax(Q K^T / sqrt(D) with a bottom-right causal mask) V, in double precision. */
static void cpu_attention(const float *q, const float *k, const float *v, double *o)
{
    const double scale = 1.0 / sqrt((double)D);
    double p[SK];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++) {
                const int hk = h / (HQ / HKV), last = i + SK - SQ; /* keys 0..last are visible */
                double m = -INFINITY, sum = 0;
                for (int j = 0; j <= last && j < SK; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += (double)q[at(SQ, HQ, b, i, h, d)] * k[at(SK, HKV, b, j, hk, d)];
                    p[j] = s * scale;
                    m = p[j] > m ? p[j] : m;
                }
                for (int j = 0; j <= last && j < SK; j++)
                    sum += (p[j] = exp(p[j] - m));
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int j = 0; j <= last && j < SK; j++)
                        acc += p[j] * v[at(SK, HKV, b, j, hk, d)];
                    o[at(SQ, HQ, b, i, h, d)] = sum > 0 ? acc / sum : 0.0;
                }
            }
}

int main(void)
{
    /* ---- the application's own OpenCL objects (first device of the first platform) ---- */
    cl_platform_id platform;
    cl_device_id device;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n) != CL_SUCCESS || n == 0) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl_context cl_ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = cl_ctx ? clCreateCommandQueue(cl_ctx, device, 0, &err) : NULL;
    if (!queue) {
        fprintf(stderr, "OpenCL setup failed (%d)\n", (int)err);
        return 1;
    }
    const size_t nq = (size_t)B * SQ * HQ * D, nk = (size_t)B * SK * HKV * D;
    float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nk * sizeof *v);
    float *o = malloc(nq * sizeof *o);
    double *want = malloc(nq * sizeof *want);
    if (!q || !k || !v || !o || !want)
        return 1;
    unsigned x = 12345;
    for (size_t i = 0; i < nq; i++)
        q[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
    for (size_t i = 0; i < nk; i++) {
        k[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
        v[i] = (float)((x = x * 1103515245u + 12345u) >> 9) / 4194304.0f - 1.0f;
    }
    cl_mem q_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nq * 4, q, &err);
    cl_mem k_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nk * 4, k, &err);
    cl_mem v_mem = clCreateBuffer(cl_ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, nk * 4, v, &err);
    cl_mem o_mem = clCreateBuffer(cl_ctx, CL_MEM_WRITE_ONLY, nq * 4, NULL, &err);
    if (!q_mem || !k_mem || !v_mem || !o_mem) {
        fprintf(stderr, "clCreateBuffer failed (%d)\n", (int)err);
        return 1;
    }

    /* ---- fa_cl on those objects: it retains them, the application keeps ownership of its buffers ---- */
    fa_cl_context *fa = NULL;
    fa_cl_status st = fa_cl_context_create(cl_ctx, device, queue, &fa);
    if (st != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_context_create: %s: %s\n", fa_cl_status_string(st), fa_cl_last_error(NULL));
        return 1;
    }
    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, B, HQ, SQ, SK, D, FA_CL_F32);
    desc.heads_kv = HKV;
    desc.causal = 1;
    /* [B, S, H, D]: element strides of batch, head and sequence */
    const int64_t q_strides[3] = {(int64_t)SQ * HQ * D, D, (int64_t)HQ * D};
    const int64_t kv_strides[3] = {(int64_t)SK * HKV * D, D, (int64_t)HKV * D};
    for (int i = 0; i < 3; i++) {
        desc.q_stride[i] = desc.o_stride[i] = q_strides[i];
        desc.k_stride[i] = desc.v_stride[i] = kv_strides[i];
    }
    cl_event done = NULL;
    st = fa_cl_attention_forward(fa, &desc, q_mem, k_mem, v_mem, o_mem, NULL, 0, NULL, &done);
    if (st != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_attention_forward: %s: %s\n", fa_cl_status_string(st), fa_cl_last_error(fa));
        return 1;
    }
    /* the application's queue runs it: read back after the event, in order */
    err = clEnqueueReadBuffer(queue, o_mem, CL_TRUE, 0, nq * 4, o, 1, &done, NULL);
    clReleaseEvent(done);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "clEnqueueReadBuffer failed (%d)\n", (int)err);
        return 1;
    }

    cpu_attention(q, k, v, want);
    double worst = 0;
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++) {
        double e = fabs(o[i] - want[i]);
        if (!(e <= 1e-5 + 1e-4 * fabs(want[i])))
            bad++;
        if (!(e <= worst))
            worst = e;
    }
    printf("fa_cl on the application's context: B=%d Hq=%d Hkv=%d Sq=%d Sk=%d D=%d causal [B,S,H,D]: "
           "max |error| %.2e, %zu of %zu outside tolerance\n", B, HQ, HKV, SQ, SK, D, worst, bad, nq);

    fa_cl_context_release(fa);
    clReleaseMemObject(q_mem);
    clReleaseMemObject(k_mem);
    clReleaseMemObject(v_mem);
    clReleaseMemObject(o_mem);
    clReleaseCommandQueue(queue);
    clReleaseContext(cl_ctx);
    free(q), free(k), free(v), free(o), free(want);
    return bad == 0 ? 0 : 1;
}
