/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hopper's warpgroup MMA through the sm_90a PTX retargeting, on the GPU (compute capability 9.0
 * only; skipped elsewhere): tests/kernels/fa_wgmma_check.cl (not in the library: read from
 * FA_CL_CHECK_KERNEL_DIR, where the build copies it beside cl/'s files) built by the library's sm_90a path
 * (src/program/program.c) computes 64 x N products with cl/fa_nv_wgmma.cl's tiles, descriptors and
 * instructions, in the two forms the forward kernel (nvidia-wgmma) uses, for f16 and bf16, both
 * tile layouts (the 128-byte swizzle and none), at the kernel's sizes (run_gemm's table): S = Q K^T
 * (both operands from local memory, K-major) and O += P V (A from registers, B MN-major,
 * accumulating onto C; N = 256 as two products of 128). Small integers: every product and sum is exact, so
 * the check is equality with the host's.
 *
 * "build" runs on any device: the sm_90a path on a program without marked lines succeeds on compute
 * capability 9.0 and elsewhere fails with FA_CL_ERROR_BUILD_FAILED, naming the step (the binary
 * is not sm_90 PTX); it is not cached as a success, and the plain build of the same source, a key
 * of its own, still builds.
 */
#include "program/program.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tu_tally tally = {"wgmma", 0, 0};

static int check_form(fa_cl_context *ctx, fa_cl_dtype dt, int form, int n, int kd, int swizzle)
{
    static const char *const files[] = {"fa_common.cl", "fa_nv_ptx.cl", "fa_nv_wgmma.cl", "fa_wgmma_check.cl"};
    char what[96];
    snprintf(what, sizeof what, "%s, %s", form == 1 ? "S = Q K^T (ss, K-major)" : "O += P V (rs, MN-major B)",
             swizzle ? "128-byte swizzle" : "no swizzle");
    char options[160];
    snprintf(options, sizeof options, "-DFA_DTYPE=%d -DCHECK_N=%d -DCHECK_K=%d -DCHECK_FORM=%d -DFA_WG_SWIZZLE=%d",
             dt == FA_CL_F16 ? 1 : 2, n, kd, form, swizzle);
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, 4, options, 1, &prog);
    if (!tu_expect(&tally, st == FA_CL_SUCCESS, "%s %s n=%d k=%d: sm_90a build (%s)", tu_dtype_name(dt), what, n, kd,
                   st == FA_CL_SUCCESS ? "ok" : fa_cl_last_error(ctx)))
        return 1;
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "fa_wgmma_check", &err);
    clReleaseProgram(prog);
    if (!tu_expect(&tally, k != NULL, "clCreateKernel(fa_wgmma_check): %d", (int)err))
        return 1;

    /* a (64 x K), b (form 1: n x K, form 2: K x n), c (64 x n), values in -4..4 and c's in -8..8 */
    const size_t na = 64 * kd, nb = (size_t)n * kd, nc = 64 * (size_t)n;
    uint16_t *a = calloc(na, 2), *b = calloc(nb, 2);
    float *fa = calloc(na, 4), *fb = calloc(nb, 4), *c = calloc(nc, 4), *want = calloc(nc, 4);
    int ok = a && b && fa && fb && c && want;
    tu_rng rng;
    tu_rng_seed(&rng, 0x5eed0000u + (uint64_t)(form * 1000 + n + 3 * kd + swizzle + (dt == FA_CL_BF16 ? 7 : 0)));
    for (size_t i = 0; ok && i < na; i++) {
        fa[i] = (float)((int)(tu_rng_next(&rng) % 9) - 4);
        a[i] = dt == FA_CL_F16 ? tu_f32_to_f16(fa[i]) : tu_f32_to_bf16(fa[i]);
    }
    for (size_t i = 0; ok && i < nb; i++) {
        fb[i] = (float)((int)(tu_rng_next(&rng) % 9) - 4);
        b[i] = dt == FA_CL_F16 ? tu_f32_to_f16(fb[i]) : tu_f32_to_bf16(fb[i]);
    }
    for (size_t i = 0; ok && i < nc; i++)
        c[i] = form == 2 ? (float)((int)(tu_rng_next(&rng) % 17) - 8) : -1.0f; /* form 1 overwrites */
    for (int r = 0; ok && r < 64; r++)
        for (int j = 0; j < n; j++) {
            float s = form == 2 ? c[(size_t)r * n + j] : 0.0f;
            for (int kk = 0; kk < kd; kk++)
                s += fa[(size_t)r * kd + kk] * (form == 1 ? fb[(size_t)j * kd + kk] : fb[(size_t)kk * n + j]);
            want[(size_t)r * n + j] = s;
        }
    cl_mem ma = ok ? tu_buffer(ctx, CL_MEM_READ_ONLY, na * 2, a) : NULL;
    cl_mem mb = ok ? tu_buffer(ctx, CL_MEM_READ_ONLY, nb * 2, b) : NULL;
    cl_mem mc = ok ? tu_buffer(ctx, CL_MEM_READ_WRITE, nc * 4, c) : NULL;
    ok = ok && ma && mb && mc;
    size_t g = 128;
    ok = ok && clSetKernelArg(k, 0, sizeof ma, &ma) == CL_SUCCESS && clSetKernelArg(k, 1, sizeof mb, &mb) == CL_SUCCESS &&
         clSetKernelArg(k, 2, sizeof mc, &mc) == CL_SUCCESS &&
         clEnqueueNDRangeKernel(fa_cl_context_queue(ctx), k, 1, NULL, &g, &g, 0, NULL, NULL) == CL_SUCCESS &&
         tu_read(ctx, mc, nc * 4, c) == 0;
    size_t bad = 0, first = 0;
    for (size_t i = 0; ok && i < nc; i++)
        if (c[i] != want[i] && bad++ == 0)
            first = i;
    tu_expect(&tally, ok && bad == 0, "%s %s n=%d k=%d: %zu of %zu elements differ%s", tu_dtype_name(dt), what, n,
              kd, bad, nc, ok ? "" : " (setup failed)");
    if (bad)
        printf("  first at row %zu column %zu: %g, want %g\n", first / (size_t)n, first % (size_t)n, c[first],
               want[first]);
    if (ma) clReleaseMemObject(ma);
    if (mb) clReleaseMemObject(mb);
    if (mc) clReleaseMemObject(mc);
    clReleaseKernel(k);
    free(a), free(b), free(fa), free(fb), free(c), free(want);
    return 0;
}

static int run_gemm(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (!tu_hopper(ctx)) {
        printf("SKIP: wgmma needs an NVIDIA GPU of compute capability 9.0 (this device: %s)\n",
               tu_nvidia(ctx) ? "NVIDIA, another compute capability" : "not NVIDIA");
        return TU_EXIT_SKIP;
    }
    /* the forward's products: S at 32, 64 and 128 keys over head_dim 64 and 256 (the panels of a
     * wide K-major tile), P V over 32 and 64 keys at n = 64, 128 and 256 (two n = 128 halves) */
    static const struct { int form, n, k; } shapes[] = {
        {1, 32, 64}, {1, 64, 64}, {1, 128, 64}, {1, 32, 256}, {1, 64, 256},
        {2, 64, 64}, {2, 128, 64}, {2, 256, 64}, {2, 256, 32},
    };
    const fa_cl_dtype types[2] = {FA_CL_F16, FA_CL_BF16};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < TU_COUNT(shapes); j++)
            for (int sw = 0; sw <= 128; sw += 128)
                check_form(ctx, types[i], shapes[j].form, shapes[j].n, shapes[j].k, sw);
    return 0;
}

static int run_build(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    static const char *const files[] = {"fa_pad_rows.cl"};
    const int hopper = tu_hopper(ctx);
    for (int round = 0; round < 2; round++) {
        cl_program prog = NULL;
        fa_cl_status st = fa_cl__program_get(ctx, files, 1, "-DHEAD_DIM=8", 1, &prog);
        const char *why = fa_cl_last_error(ctx);
        if (hopper)
            tu_expect(&tally, st == FA_CL_SUCCESS && prog, "round %d: sm_90a build of a program without marked lines "
                      "on compute capability 9.0: %s", round, fa_cl_status_string(st));
        else
            tu_expect(&tally, st == FA_CL_ERROR_BUILD_FAILED && !prog && strstr(why, "sm_90a build") &&
                      strstr(why, "not retargeted"), "round %d: sm_90a build elsewhere: %s (%s)", round,
                      fa_cl_status_string(st), why);
        if (prog)
            clReleaseProgram(prog);
    }
    cl_program plain = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, 1, "-DHEAD_DIM=8", 0, &plain);
    tu_expect(&tally, st == FA_CL_SUCCESS && plain, "the plain build of the same source: %s", fa_cl_status_string(st));
    if (plain)
        clReleaseProgram(plain);
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {{"gemm", run_gemm}, {"build", run_build}};
    tu_kernel_dir_default(FA_CL_CHECK_KERNEL_DIR);
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, 0);
}
