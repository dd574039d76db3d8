/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AMD's matrix instructions as cl/fa_amd_matrix.cl builds them (emulated, FA_AMD_MATRIX_EMULATE: no
 * device here has them), through tests/kernels/fa_amd_matrix_check.cl: C = A B for 16-bit A (T x 64)
 * and B (64 x 4 waves' T columns), two waves a work-group, against the host's GEMM in double. The
 * inputs are multiples of 1/8 in [-1, 1], exact in f16 and bf16, so every product and partial sum is
 * exact in fp32: the result must equal the host's bit for bit, and any mistake in a layout (a wrong
 * lane, k or row) shows.
 * Subsets:
 *   all             WMMA 16x16x16 (wave32), MFMA 32x32x8 and 16x16x16 (wave64), f16 and bf16
 *   one KIND BF16   one of them (KIND 1, 2, 3 as FA_AMD_MATRIX; Oclgrind: races and out-of-bounds)
 *   verify FAMILY right|wrong
 *                   the family's first-use check (src/plan/verify.c) with its instructions emulated
 *                   (CTest sets FA_CL_TUNE FAMILY:emulate=1): "right" must pass and be planned;
 *                   "wrong" (CTest: a copy of the kernels whose emulation has a wrong C layout, through
 *                   FA_CL_KERNEL_DIR) must be caught, the family off with a note naming it
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/program.h"
#include "test_util.h"

#ifndef FA_CL_CHECK_KERNEL_DIR
#error "FA_CL_CHECK_KERNEL_DIR: the directory of tests/kernels/fa_amd_matrix_check.cl and cl/fa_amd_matrix.cl"
#endif

static tu_tally tally = {"amd_matrix", 0, 0};

enum { K = 64, WAVES = 4 };
static const char *const names[4] = {"", "WMMA 16x16x16 wave32", "MFMA 32x32x8 wave64", "MFMA 16x16x16 wave64"};

static uint16_t bits16(float x, int bf16) { return bf16 ? tu_f32_to_bf16(x) : tu_f32_to_f16(x); }

/* One configuration: 1 when C matches the host's GEMM exactly. */
static int check(fa_cl_context *ctx, int kind, int bf16)
{
    const int wave = kind == 1 ? 32 : 64, t = kind == 2 ? 32 : 16, n = WAVES * t;
    char options[160];
    snprintf(options, sizeof options, "-DFA_AMD_MATRIX=%d -DFA_AMD_BF16=%d -DFA_AMD_WG=%d -DFA_AMD_MATRIX_EMULATE",
             kind, bf16, 2 * wave);
    static const char *const files[] = {"fa_amd_matrix.cl", "fa_amd_matrix_check.cl"};
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, TU_COUNT(files), options, 0, &prog);
    if (!tu_expect(&tally, st == FA_CL_SUCCESS, "%s, %s: the check kernel builds (%s)", names[kind],
                   bf16 ? "bf16" : "f16", st == FA_CL_SUCCESS ? "ok" : fa_cl_last_error(ctx)))
        return 0;
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "fa_amd_check_gemm", &err);
    clReleaseProgram(prog);
    float af[32 * K], bf[K * 128], c[32 * 128];
    uint16_t a[32 * K], b[K * 128];
    tu_rng rng;
    tu_rng_seed(&rng, (uint64_t)(kind * 10 + bf16));
    for (int i = 0; i < t * K; i++)
        af[i] = (float)((int)(tu_rng_next(&rng) % 17) - 8) / 8.0f, a[i] = bits16(af[i], bf16);
    for (int i = 0; i < K * n; i++)
        bf[i] = (float)((int)(tu_rng_next(&rng) % 17) - 8) / 8.0f, b[i] = bits16(bf[i], bf16);
    int first;
    const int bad = tu_gemm16(ctx, k, a, b, af, bf, t, K, n, (size_t)(WAVES * wave), (size_t)(2 * wave), c, &first);
    tu_expect(&tally, bad == 0, "%s, %s (emulated): C = A B exactly: %d of %d wrong (first at row %d, column %d: %g)",
              names[kind], bf16 ? "bf16" : "f16", bad, t * n, first < 0 ? -1 : first / n, first < 0 ? -1 : first % n,
              first < 0 ? 0.0 : (double)c[first]);
    if (k)
        clReleaseKernel(k);
    return bad == 0;
}

static int run_all(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int kind = 1; kind <= 3; kind++)
        for (int bf16 = 0; bf16 < 2; bf16++)
            check(ctx, kind, bf16);
    return 0;
}

static int run_one(fa_cl_context *ctx, int argc, char **argv)
{
    const int kind = argc > 0 ? atoi(argv[0]) : 1, bf16 = argc > 1 ? atoi(argv[1]) : 0;
    if (kind < 1 || kind > 3 || (bf16 != 0 && bf16 != 1)) {
        printf("amd_matrix one: KIND (1 WMMA, 2 MFMA 32x32x8, 3 MFMA 16x16x16) BF16 (0, 1)\n");
        return 2;
    }
    check(ctx, kind, bf16);
    return 0;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

static int run_verify(fa_cl_context *ctx, int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "right") != 0 && strcmp(argv[1], "wrong") != 0)) {
        printf("amd_matrix verify: FAMILY (amd-wmma, amd-mfma) right|wrong\n");
        return 2;
    }
    const char *family = argv[0];
    const int right = strcmp(argv[1], "right") == 0;
    for (int dtype = FA_CL_F16; dtype <= FA_CL_BF16; dtype++) {
        fa_cl_attention_desc desc;
        fa_cl_attention_desc_init(&desc, 1, 2, 70, 70, 64, (fa_cl_dtype)dtype);
        desc.causal = 1;
        fa_cl_plan *plan = NULL;
        fa_cl_plan_info info;
        const int ok = fa_cl_plan_create(ctx, &desc, &plan) == FA_CL_SUCCESS && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS;
        const char *notes = fa_cl_context_notes(ctx), *k = ok ? info.kernel : "-";
        char named[96];
        snprintf(named, sizeof named, "family %s: its result differed", family);
        if (right)
            tu_expect(&tally, ok && strcmp(k, family) == 0 && count(notes, "differed") == 0,
                      "%s, %s: the first-use check passes and the plan takes it (planned %s)", family,
                      dtype == FA_CL_F16 ? "f16" : "bf16", k);
        else
            tu_expect(&tally, ok && strcmp(k, family) != 0 && count(notes, named) == 1,
                      "%s with a wrong layout, %s: caught at first use, off, one note (planned %s; notes: %s)", family,
                      dtype == FA_CL_F16 ? "f16" : "bf16", k, notes);
        if (!ok)
            printf("  last error: %.1000s\n", fa_cl_last_error(ctx));
        fa_cl_plan_release(plan);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "verify") != 0) /* the check kernel beside the unit (verify: the library's) */
        tu_kernel_dir_default(FA_CL_CHECK_KERNEL_DIR);
    const tu_subset subsets[] = {{"all", run_all}, {"one", run_one}, {"verify", run_verify}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, 0);
}
