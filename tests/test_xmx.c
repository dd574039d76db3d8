/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Intel's XMX intrinsics as cl/fa_xmx.cl builds them (emulated, FA_XMX_EMULATE, on a device without
 * cl_intel_subgroup_matrix_multiply_accumulate; the real ones where the device has it), through
 * tests/kernels/fa_xmx_check.cl: C = A B for 16-bit A (M x 32) and B (32 x 4 sub-groups' columns),
 * two sub-groups a work-group, against the host's GEMM in double. The inputs are multiples of 1/8
 * in [-1, 1], exact in f16 and bf16, so every product and partial sum is exact in fp32: the result
 * must equal the host's bit for bit, and any mistake in a layout (a wrong half, lane or row) shows.
 * Subsets:
 *   all             sub-groups 8 and 16, f16 and bf16, M = 1, 2, 4, 8
 *   one SG BF16 M   one of them (Oclgrind: races and out-of-bounds in the emulation's exchange)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/program.h"
#include "test_util.h"

#ifndef FA_CL_CHECK_KERNEL_DIR
#error "FA_CL_CHECK_KERNEL_DIR: the directory of tests/kernels/fa_xmx_check.cl and cl/fa_xmx.cl"
#endif

static tu_tally tally = {"xmx", 0, 0};

enum { K = 32, SUBGROUPS = 4 };

/* x: a multiple of 1/8 in [-1, 1], exact in both types */
static uint16_t bits16(float x, int bf16) { return bf16 ? tu_f32_to_bf16(x) : tu_f32_to_f16(x); }

static int device_has_xmx(fa_cl_context *ctx)
{
    char ext[8192] = "";
    clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
    return strstr(ext, "cl_intel_subgroup_matrix_multiply_accumulate") != NULL;
}

/* One configuration: 1 when C matches the host's GEMM exactly. */
static int check(fa_cl_context *ctx, int sg, int bf16, int m)
{
    const int n = SUBGROUPS * sg, native = device_has_xmx(ctx);
    char options[160];
    snprintf(options, sizeof options, "-DFA_XMX_SG=%d -DFA_XMX_M=%d -DFA_XMX_BF16=%d -DFA_XMX_WG=%d%s", sg, m, bf16,
             2 * sg, native ? "" : " -DFA_XMX_EMULATE");
    static const char *const files[] = {"fa_xmx.cl", "fa_xmx_check.cl"};
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, TU_COUNT(files), options, 0, &prog);
    if (!tu_expect(&tally, st == FA_CL_SUCCESS, "sub-group %d, %s, M=%d: the check kernel builds (%s)", sg,
                   bf16 ? "bf16" : "f16", m, st == FA_CL_SUCCESS ? "ok" : fa_cl_last_error(ctx)))
        return 0;
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "fa_xmx_check_gemm", &err);
    clReleaseProgram(prog);
    float af[8 * K], bf[K * 64], c[8 * 64];
    uint16_t a[8 * K], b[K * 64];
    tu_rng rng;
    tu_rng_seed(&rng, (uint64_t)(sg * 100 + bf16 * 10 + m));
    for (int i = 0; i < m * K; i++)
        af[i] = (float)((int)(tu_rng_next(&rng) % 17) - 8) / 8.0f, a[i] = bits16(af[i], bf16);
    for (int i = 0; i < K * n; i++)
        bf[i] = (float)((int)(tu_rng_next(&rng) % 17) - 8) / 8.0f, b[i] = bits16(bf[i], bf16);
    int first;
    const int bad = tu_gemm16(ctx, k, a, b, af, bf, m, K, n, (size_t)n, (size_t)(2 * sg), c, &first);
    tu_expect(&tally, bad == 0, "sub-group %d, %s, M=%d (%s): C = A B exactly: %d of %d wrong (first at row %d, column %d: %g)",
              sg, bf16 ? "bf16" : "f16", m, native ? "native" : "emulated", bad, m * n, first < 0 ? -1 : first / n,
              first < 0 ? -1 : first % n, first < 0 ? 0.0 : (double)c[first]);
    if (k)
        clReleaseKernel(k);
    return bad == 0;
}

static int run_all(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    static const int ms[4] = {1, 2, 4, 8};
    for (int sg = 8; sg <= 16; sg *= 2)
        for (int bf16 = 0; bf16 < 2; bf16++)
            for (int i = 0; i < 4; i++)
                check(ctx, sg, bf16, ms[i]);
    return 0;
}

static int run_one(fa_cl_context *ctx, int argc, char **argv)
{
    const int sg = argc > 0 ? atoi(argv[0]) : 8, bf16 = argc > 1 ? atoi(argv[1]) : 0, m = argc > 2 ? atoi(argv[2]) : 2;
    if ((sg != 8 && sg != 16) || (bf16 != 0 && bf16 != 1) || (m != 1 && m != 2 && m != 4 && m != 8)) {
        printf("xmx one: SG (8, 16) BF16 (0, 1) M (1, 2, 4, 8)\n");
        return 2;
    }
    check(ctx, sg, bf16, m);
    return 0;
}

int main(int argc, char **argv)
{
    tu_kernel_dir_default(FA_CL_CHECK_KERNEL_DIR);
    const tu_subset subsets[] = {{"all", run_all}, {"one", run_one}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, 0);
}
