/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hopper's tensor memory accelerator through the sm_90a retargeting, on the GPU (compute
 * capability 9.0 only; skipped elsewhere): tests/kernels/fa_tma_check.cl (read from
 * FA_CL_CHECK_KERNEL_DIR, as test_wgmma.c's) writes a tensor map on the device
 * (cl/fa_nv_tma.cl: tensormap.replace on zeros, no CUDA host API), copies boxes through it with
 * cp.async.bulk.tensor into local memory and writes them out as they landed. The host computes
 * where each byte must be under the 128-byte swizzle (row r's 16-byte chunk c at c ^ (r % 8)) and
 * what it must be: the tensor's byte, or zero where the box reaches past the tensor on either
 * side (the forward's tails: rows past Sq, keys past Sk). Byte equality, for 1-, 2- and 4-byte
 * elements, 64 and 128 rows, boxes inside, across the end of each dimension and before the start.
 */
#include "program/program.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tu_tally tally = {"tma", 0, 0};

/* the tensor: dims innermost first, strides (bytes) of dims 1..3 */
typedef struct tensor4 {
    uint32_t d[4];
    uint64_t s[3];
} tensor4;

/* byte x of element (i0, i1, i2, i3) of t in host, or 0 past its ends */
static uint8_t tensor_byte(const uint8_t *host, const tensor4 *t, int esize, int64_t i0, int64_t i1, int64_t i2,
                           int64_t i3, int x)
{
    const int64_t i[4] = {i0, i1, i2, i3};
    for (int k = 0; k < 4; k++)
        if (i[k] < 0 || i[k] >= (int64_t)t->d[k])
            return 0;
    return host[(uint64_t)i0 * (uint64_t)esize + (uint64_t)i1 * t->s[0] + (uint64_t)i2 * t->s[1] +
                (uint64_t)i3 * t->s[2] + (uint64_t)x];
}

static void check_copies(fa_cl_context *ctx, int esize, int rows)
{
    static const char *const files[] = {"fa_common.cl", "fa_nv_ptx.cl", "fa_nv_wgmma.cl", "fa_nv_tma.cl",
                                        "fa_tma_check.cl"};
    char options[96];
    snprintf(options, sizeof options, "-DFA_DTYPE=1 -DCHECK_ROWS=%d", rows);
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, TU_COUNT(files), options, 1, &prog);
    if (!tu_expect(&tally, st == FA_CL_SUCCESS, "%d-byte elements, %d rows: sm_90a build (%s)", esize, rows,
                   st == FA_CL_SUCCESS ? "ok" : fa_cl_last_error(ctx)))
        return;
    cl_int err1, err2;
    cl_kernel km = clCreateKernel(prog, "fa_tma_check_map", &err1), kc = clCreateKernel(prog, "fa_tma_check_copy", &err2);
    clReleaseProgram(prog);
    if (!tu_expect(&tally, km && kc, "clCreateKernel: %d %d", (int)err1, (int)err2)) {
        if (km) clReleaseKernel(km);
        if (kc) clReleaseKernel(kc);
        return;
    }
    /* 200 elements a row in rows of 16 bytes more than a multiple of 16 that holds them (a pitch no
     * power of two), 100 rows, 3 x 2 */
    tensor4 t = {{200u, 100u, 3u, 2u}, {0, 0, 0}};
    t.s[0] = (uint64_t)((200 * esize + 15) / 16 * 16 + 16);
    t.s[1] = t.s[0] * t.d[1] + 48;
    t.s[2] = t.s[1] * t.d[2];
    const size_t bytes = (size_t)(t.s[2] * t.d[3]);
    uint8_t *host = malloc(bytes);
    const size_t out_bytes = 2 * (size_t)rows * 128;
    uint8_t *out = malloc(out_bytes);
    int ok = host && out;
    tu_rng rng;
    tu_rng_seed(&rng, 0x7a300000u + (uint64_t)(esize * 1000 + rows));
    for (size_t i = 0; ok && i < bytes; i++)
        host[i] = (uint8_t)(tu_rng_next(&rng) | 1u); /* never 0: a zero-filled byte is told apart */
    cl_mem src = ok ? tu_buffer(ctx, CL_MEM_READ_ONLY, bytes, host) : NULL;
    cl_mem map = ok ? tu_buffer(ctx, CL_MEM_READ_WRITE, 128, NULL) : NULL;
    cl_mem dst = ok ? tu_buffer(ctx, CL_MEM_READ_WRITE, out_bytes, NULL) : NULL;
    ok = ok && src && map && dst;
    cl_command_queue q = fa_cl_context_queue(ctx);
    size_t one = 1, wg = 128;
    cl_uint d[4] = {t.d[0], t.d[1], t.d[2], t.d[3]};
    cl_ulong s[3] = {t.s[0], t.s[1], t.s[2]};
    cl_int es = esize;
    cl_uint n = 0;
    ok = ok && clSetKernelArg(km, n++, sizeof map, &map) == CL_SUCCESS && clSetKernelArg(km, n++, sizeof src, &src) == CL_SUCCESS;
    for (int i = 0; ok && i < 4; i++)
        ok = clSetKernelArg(km, n++, sizeof d[i], &d[i]) == CL_SUCCESS;
    for (int i = 0; ok && i < 3; i++)
        ok = clSetKernelArg(km, n++, sizeof s[i], &s[i]) == CL_SUCCESS;
    ok = ok && clSetKernelArg(km, n++, sizeof es, &es) == CL_SUCCESS &&
         clEnqueueNDRangeKernel(q, km, 1, NULL, &one, &one, 0, NULL, NULL) == CL_SUCCESS;
    tu_expect(&tally, ok, "%d-byte elements, %d rows: the map written", esize, rows);

    /* boxes: inside; across the ends of dims 0 and 1; before the start of dim 1; the last of dims 2, 3.
     * A box starts 16-byte aligned along dim 0 (the kernels' key blocks do) */
    const int per = 128 / esize, across = (200 - per / 2) / (16 / esize) * (16 / esize);
    const struct { int c[4], boxes; } cases[] = {
        {{0, 0, 0, 0}, 2}, {{per, 8, 1, 1}, 1}, {{across, 100 - rows / 2, 2, 1}, 2}, {{0, -5, 1, 0}, 1},
        {{-per, 3, 0, 1}, 2},
    };
    for (int ci = 0; ok && ci < TU_COUNT(cases); ci++) {
        const int *c = cases[ci].c, boxes = cases[ci].boxes;
        memset(out, 0xee, out_bytes);
        cl_mem zero = dst;
        ok = clEnqueueWriteBuffer(q, zero, CL_TRUE, 0, out_bytes, out, 0, NULL, NULL) == CL_SUCCESS;
        n = 0;
        ok = ok && clSetKernelArg(kc, n++, sizeof map, &map) == CL_SUCCESS &&
             clSetKernelArg(kc, n++, sizeof dst, &dst) == CL_SUCCESS;
        for (int i = 0; ok && i < 4; i++)
            ok = clSetKernelArg(kc, n++, sizeof(cl_int), &c[i]) == CL_SUCCESS;
        ok = ok && clSetKernelArg(kc, n++, sizeof(cl_int), &boxes) == CL_SUCCESS &&
             clSetKernelArg(kc, n++, sizeof es, &es) == CL_SUCCESS &&
             clEnqueueNDRangeKernel(q, kc, 1, NULL, &wg, &wg, 0, NULL, NULL) == CL_SUCCESS &&
             tu_read(ctx, dst, out_bytes, out) == 0;
        size_t bad = 0, first = 0;
        uint8_t got1 = 0, want1 = 0;
        for (int b = 0; ok && b < boxes; b++)
            for (int r = 0; r < rows; r++)
                for (int x = 0; x < 128; x++) {
                    const size_t at = (size_t)b * rows * 128 + (size_t)r * 128 + (size_t)(((x / 16) ^ (r % 8)) * 16 + x % 16);
                    const uint8_t want = tensor_byte(host, &t, esize, c[0] + b * per + x / esize, c[1] + r, c[2], c[3],
                                                     x % esize);
                    if (out[at] != want && bad++ == 0)
                        first = at, got1 = out[at], want1 = want;
                }
        tu_expect(&tally, ok && bad == 0, "%d-byte elements, %d rows, box (%d, %d, %d, %d) x %d: %zu of %zu bytes "
                  "differ%s", esize, rows, c[0], c[1], c[2], c[3], boxes, bad, (size_t)boxes * rows * 128,
                  ok ? "" : " (setup failed)");
        if (bad)
            printf("  first at byte %zu: 0x%02x, want 0x%02x\n", first, got1, want1);
    }
    if (src) clReleaseMemObject(src);
    if (map) clReleaseMemObject(map);
    if (dst) clReleaseMemObject(dst);
    clReleaseKernel(km);
    clReleaseKernel(kc);
    free(host);
    free(out);
}

static int run_copies(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (!tu_hopper(ctx)) {
        printf("SKIP: TMA through the sm_90a retargeting needs an NVIDIA GPU of compute capability 9.0 (this "
               "device: %s)\n", tu_nvidia(ctx) ? "NVIDIA, another compute capability" : "not NVIDIA");
        return TU_EXIT_SKIP;
    }
    const int sizes[3] = {2, 1, 4};
    for (int i = 0; i < 3; i++) {
        check_copies(ctx, sizes[i], 128);
        check_copies(ctx, sizes[i], 64);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {{"copies", run_copies}};
    tu_kernel_dir_default(FA_CL_CHECK_KERNEL_DIR);
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, 0);
}
