/* SPDX-License-Identifier: Apache-2.0 */
/* The README's example: attention on the default device, from host arrays and back. */
#include <fa_cl.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, H = 8, S = 512, D = 64 }; /* contiguous [B, H, S, D] */

int main(void)
{
    fa_cl_context *ctx;
    fa_cl_status st = fa_cl_context_create_default(&ctx); /* FA_CL_DEVICE, else the first GPU, else any */
    if (st != FA_CL_SUCCESS) {
        fprintf(stderr, "%s: %s\n", fa_cl_status_string(st), fa_cl_last_error(NULL));
        return st == FA_CL_ERROR_NO_DEVICE ? 77 : 1;
    }
    const size_t n = (size_t)B * H * S * D, bytes = n * sizeof(float);
    float *x = malloc(bytes), *o = malloc(bytes);
    for (size_t i = 0; x && i < n; i++)
        x[i] = (float)(i % 17) / 17.0f - 0.5f; /* q = k = v, for brevity */

    cl_context cl = fa_cl_context_cl_context(ctx);
    cl_mem qkv = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, x, NULL);
    cl_mem out = clCreateBuffer(cl, CL_MEM_WRITE_ONLY, bytes, NULL, NULL);

    fa_cl_attention_desc desc;
    fa_cl_attention_desc_init(&desc, B, H, S, S, D, FA_CL_F32);
    desc.causal = 1; /* bottom-right aligned, as FlashAttention-2 */
    fa_cl_plan *plan = NULL; /* compiles once (or loads from the program cache); reuse it */
    st = fa_cl_plan_create(ctx, &desc, &plan);
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_forward(plan, qkv, qkv, qkv, out, NULL, 0, NULL, NULL); /* asynchronous */
    if (st == FA_CL_SUCCESS && clEnqueueReadBuffer(fa_cl_context_queue(ctx), out, CL_TRUE, 0, bytes, o, 0, NULL,
                                                   NULL) != CL_SUCCESS)
        st = FA_CL_ERROR_OPENCL;
    int ok = st == FA_CL_SUCCESS;
    for (int d = 0; ok && d < D; d++) /* causal: query row 0 sees key 0 alone, so o[0] = v[0] */
        ok = o[d] - x[d] < 1e-6f && x[d] - o[d] < 1e-6f;
    if (st == FA_CL_SUCCESS)
        printf("o[0, 0, 0, 0..3] = %.4f %.4f %.4f %.4f (%s)\n", o[0], o[1], o[2], o[3], ok ? "= v[0]" : "wrong");
    else
        fprintf(stderr, "%s: %s\n", fa_cl_status_string(st), fa_cl_last_error(ctx));

    fa_cl_plan_release(plan);
    clReleaseMemObject(qkv);
    clReleaseMemObject(out);
    fa_cl_context_release(ctx);
    free(x), free(o);
    return ok ? 0 : 1;
}
