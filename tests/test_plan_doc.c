/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worked planner numbers of docs/design.md, from the real planner (fa_cl__plan_tiles), no device.
 * Prints the table the document shows and fails if the planner no longer gives those numbers
 * (then docs/design.md needs the new ones). Devices: a local-memory size, 1024 work-items, and
 * whether it is a GPU (the register-tiled variant where it fits) or not (the rows variant).
 */
#include "plan/planner.h"
#include "test_util.h"

#include <string.h>

static tu_tally tally = {"plan_doc", 0, 0};

typedef struct doc_row {
    size_t local; /* CL_DEVICE_LOCAL_MEM_SIZE (or the NVIDIA table's value) */
    int gpu;
    int d;
    const char *kernel; /* what docs/design.md says */
    int br, bc, rows, wg;
    size_t bytes;
} doc_row;

#define KIB ((size_t)1024)
static const doc_row rows[] = {
    /* local      gpu  d    kernel            B_r B_c rows WG  bytes */
    {48 * KIB, 0, 64, "portable", 128, 32, 1, 128, 40960},
    {48 * KIB, 0, 128, "portable", 64, 32, 1, 64, 49152},
    {48 * KIB, 0, 256, "portable", 24, 24, 1, 24, 49152},
    {48 * KIB, 1, 64, "portable-tiled", 64, 32, 4, 128, 36992},
    {48 * KIB, 1, 128, "portable-tiled", 32, 32, 4, 64, 39552},
    {48 * KIB, 1, 256, "portable", 24, 24, 1, 24, 49152},
    {48 * KIB, 1, 512, "portable", 8, 8, 1, 8, 32768},
    {64 * KIB, 0, 64, "portable", 128, 32, 1, 128, 40960},
    {64 * KIB, 0, 128, "portable", 96, 32, 1, 96, 65536},
    {64 * KIB, 0, 256, "portable", 32, 32, 1, 32, 65536},
    {64 * KIB, 1, 64, "portable-tiled", 64, 32, 4, 128, 36992},
    {64 * KIB, 1, 128, "portable-tiled", 64, 32, 4, 128, 61568},
    {64 * KIB, 1, 256, "portable", 32, 32, 1, 32, 65536},
    {64 * KIB, 1, 512, "portable", 16, 16, 1, 16, 65536},
    {1024 * KIB, 0, 64, "portable", 128, 32, 1, 128, 40960},
    {1024 * KIB, 0, 128, "portable", 128, 32, 1, 128, 81920},
    {1024 * KIB, 0, 256, "portable", 128, 32, 1, 128, 163840},
    {1024 * KIB, 1, 64, "portable-tiled", 64, 32, 4, 128, 36992},
    {1024 * KIB, 1, 128, "portable-tiled", 64, 32, 4, 128, 61568},
    {1024 * KIB, 1, 256, "portable", 128, 32, 1, 128, 163840},
    {1024 * KIB, 1, 512, "portable", 128, 32, 1, 128, 327680},
};

int main(void)
{
    printf("%-9s %-4s %4s  %-14s %4s %4s %5s %4s %8s %9s\n", "local", "gpu", "d", "kernel", "B_r", "B_c", "rows",
           "WG", "bytes", "of budget");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const doc_row *r = &rows[i];
        /* a GPU (or not) of no vendor the families know: the portable kernels */
        const fa_cl__device_traits dev = {.is_gpu = r->gpu, .local_mem_size = r->local, .max_work_group = 1024};
        fa_cl__limits lim;
        fa_cl__limits_for_device(&dev, &lim);
        fa_cl__tile_request req;
        memset(&req, 0, sizeof req);
        req.head_dim = r->d;
        req.dtype = FA_CL_F16;
        req.seqlen_q = req.seqlen_k = 4096;
        req.aligned16 = 1;
        fa_cl__tiles t;
        char msg[256] = "";
        fa_cl_status st = fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg);
        if (st != FA_CL_SUCCESS) {
            tu_expect(&tally, 0, "%zu bytes, d=%d: %s", r->local, r->d, msg);
            continue;
        }
        printf("%4zu KiB  %-4s %4d  %-14s %4d %4d %5d %4d %8zu %8.0f%%\n", r->local / KIB, r->gpu ? "yes" : "no",
               r->d, t.kernel, t.block_q, t.block_kv, t.rows_per_item, t.work_group_size, t.local_mem_bytes,
               100.0 * (double)t.local_mem_bytes / (double)r->local);
        int same = strcmp(t.kernel, r->kernel) == 0 && t.block_q == r->br && t.block_kv == r->bc &&
                   t.rows_per_item == r->rows && t.work_group_size == r->wg && t.local_mem_bytes == r->bytes;
        if (!same)
            tu_expect(&tally, 0, "the row above differs from docs/design.md (%s %dx%d rows %d WG %d, %zu bytes): "
                      "update the document", r->kernel, r->br, r->bc, r->rows, r->wg, r->bytes);
        else
            tally.passed++;
    }
    return tu_finish(&tally);
}
