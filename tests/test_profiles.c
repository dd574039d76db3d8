/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device profiles and build options (no device): what the offline compile checks rely on.
 *  - fa_cl__limits_for_device: the one path from device properties to planner limits (a live
 *    context and a profile both go through it), the NVIDIA static local table, register budgets.
 *  - the profiles the issue names exist, with the numbers their vendors document, and every
 *    plan the offline checks build for them is one the planner makes.
 *  - fa_cl__build_options: the exact -D string the library passes, and its files per variant.
 */
#include "program/build_options.h"
#include "kernels/nvidia.h"
#include "kernels/portable.h"
#include "kernels/portable_tiled.h"
#include "plan/planner.h"
#include "test_util.h"

#include <string.h>

#define KIB ((size_t)1024)

static void limits(tu_tally *t)
{
    fa_cl__device_traits cpu = {.local_mem_size = 1024 * KIB, .local_mem_is_global = 1, .max_work_group = 4096};
    fa_cl__limits l;
    fa_cl__limits_for_device(&cpu, &l);
    tu_expect(t, l.local_mem_size == 1024 * KIB && l.local_mem_is_global && l.max_work_group == 4096 &&
                     !l.dev.is_gpu && l.private_floats == 0 && l.local_mem_source == NULL && l.forced_q == 0,
              "CPU: limits are the properties, rows variant, no register budget");

    fa_cl__device_traits h100 = {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 48 * KIB,
                                 .max_work_group = 1024, .arch_major = 9};
    fa_cl__limits_for_device(&h100, &l);
    tu_expect(t, l.local_mem_size == 227 * KIB && l.local_mem_source && strstr(l.local_mem_source, "NVIDIA") &&
                     l.dev.is_gpu && l.private_floats == 200 && l.dev.rows_small_dims &&
                     fa_cl__family_available(&l, fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_MMA), (char[8]){0}, 8) &&
                     fa_cl__family_available(&l, fa_cl__kernel_by_id(FA_CL_KERNEL_NVIDIA_WGMMA), (char[8]){0}, 8),
              "NVIDIA cc 9.0: 48 KiB reported -> 227 KiB static (%zu), tiled, register budget 200 (%d), tensor cores "
              "(nvidia-mma, nvidia-wgmma)", l.local_mem_size, l.private_floats);

    static const struct {
        fa_cl__vendor v;
        int min_subgroup, want;
        const char *why;
    } regs[] = {
        {FA_CL_VENDOR_INTEL, 8, 128, "Intel, 8-wide sub-groups: SIMD8, 128 GRFs of 32 bytes"},
        {FA_CL_VENDOR_INTEL, 0, 128, "Intel, sub-group sizes unknown: as SIMD8"},
        {FA_CL_VENDOR_INTEL, 16, 64, "Intel Xe-HPC (narrowest sub-group 16): SIMD32, 128 GRFs of 64 bytes"},
        {FA_CL_VENDOR_AMD, 0, 192, "AMD: 256 VGPRs less a quarter"},
        {FA_CL_VENDOR_NVIDIA, 0, 200, "NVIDIA: 200 (the H200's 168 registers at 148 floats, ptxas proxy at d = 256)"},
        {FA_CL_VENDOR_OTHER, 0, 0, "other: unknown"},
    };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
        int got = fa_cl__private_floats(regs[i].v, regs[i].min_subgroup);
        tu_expect(t, got == regs[i].want, "register budget %s: %d (want %d)", regs[i].why, got, regs[i].want);
    }
}

static void profiles(tu_tally *t)
{
    static const char *const required[] = {"intel-arc-a770", "intel-max-1550", "intel-xe-lp", "amd-rx7900",
                                           "amd-mi250",      "nvidia-h100",    "mobile-32k"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        tu_expect(t, fa_cl__profile_find(required[i]) != NULL, "profile %s exists", required[i]);
    tu_expect(t, fa_cl__profile_find("no-such-gpu") == NULL && fa_cl__profile_find(NULL) == NULL &&
                     fa_cl__profile_get(-1) == NULL && fa_cl__profile_get(fa_cl__profile_count()) == NULL,
              "unknown names and indices give NULL");

    for (int i = 0; i < fa_cl__profile_count(); i++) {
        const fa_cl__device_profile *p = fa_cl__profile_get(i);
        tu_expect(t, fa_cl__profile_find(p->name) == p, "%s: found by its name, once", p->name);
        tu_expect(t, p->description && p->source && p->source[0] && p->extensions && p->traits.local_mem_size > 0 &&
                         p->traits.max_work_group > 0 && p->compute_units > 0 && p->preferred_multiple > 0 &&
                         (p->compiler == NULL) == (p->target == NULL),
                  "%s: every field set, a source cited", p->name);
        fa_cl__limits a, b;
        fa_cl__device_traits traits;
        fa_cl__profile_limits(p, &a);
        fa_cl__profile_traits(p, &traits);
        fa_cl__limits_for_device(&traits, &b);
        tu_expect(t, memcmp(&a, &b, sizeof a) == 0 && a.dev.extensions == p->extensions,
                  "%s: limits come from fa_cl__limits_for_device of its traits (its extensions)", p->name);
        /* every plan the offline checks build: planned, within the device, and spill-free by the
         * register model except where not even one row per work-item fits (documented) */
        static const int dims[] = {64, 128, 256};
        for (size_t dd = 0; dd < 6; dd++) {
            const size_t d = dd % 3;
            const fa_cl_dtype dtype = dd < 3 ? FA_CL_F16 : FA_CL_F32; /* f16: NVIDIA's tensor-core plans */
            fa_cl__tile_request req;
            memset(&req, 0, sizeof req);
            req.head_dim = dims[d];
            req.dtype = dtype;
            req.seqlen_q = req.seqlen_k = 4096;
            req.aligned16 = 1;
            fa_cl__tiles tl;
            char msg[256];
            fa_cl_status st = fa_cl__plan_tiles(&a, &req, &tl, msg, sizeof msg);
            int ok = st == FA_CL_SUCCESS && tl.local_mem_bytes <= a.local_mem_size &&
                     (size_t)tl.work_group_size <= p->traits.max_work_group;
            int floats = 0;
            if (ok && tl.variant == FA_CL_KERNEL_PORTABLE_TILED)
                floats = fa_cl__tiled_private_floats(tl.rows_per_item, tl.cols_per_item,
                                                    tl.block_kv / tl.cols_per_item, tl.head_dim_padded);
            else if (ok && tl.variant == FA_CL_KERNEL_PORTABLE)
                floats = fa_cl__rows_private_floats(tl.rows_per_item, tl.block_kv, tl.head_dim_padded);
            /* (the tensor-core kernel is outside the model: its registers are ptxas' report) */
            if (ok && a.private_floats > 0 && floats > a.private_floats)
                ok = tl.variant == FA_CL_KERNEL_PORTABLE_TILED && tl.rows_per_item == 1;
            tu_expect(t, ok, "%s d=%d %s: %s %dx%d, %d rows a work-item, wg %d, %zu local bytes, %d private floats "
                      "(budget %d)%s%s", p->name, dims[d], dtype == FA_CL_F16 ? "f16" : "f32",
                      tl.kernel ? tl.kernel : "-", tl.block_q, tl.block_kv,
                      tl.rows_per_item, tl.work_group_size, tl.local_mem_bytes, floats, a.private_floats,
                      st ? ": " : "", st ? msg : "");
        }
    }

    /* the documented numbers */
    const fa_cl__device_profile *arc = fa_cl__profile_find("intel-arc-a770");
    const fa_cl__device_profile *pvc = fa_cl__profile_find("intel-max-1550");
    const fa_cl__device_profile *xelp = fa_cl__profile_find("intel-xe-lp");
    const fa_cl__device_profile *rdna3 = fa_cl__profile_find("amd-rx7900");
    const fa_cl__device_profile *cdna2 = fa_cl__profile_find("amd-mi250");
    const fa_cl__device_profile *mob = fa_cl__profile_find("mobile-32k");
    if (arc && pvc && xelp && rdna3 && cdna2 && mob) {
        tu_expect(t, arc->traits.local_mem_size == 64 * KIB && arc->traits.max_work_group == 1024 &&
                         strcmp(arc->target, "dg2") == 0,
                  "Arc A770: 64 KiB SLM, 1024 work-items, ocloc dg2");
        tu_expect(t, pvc->traits.local_mem_size == 128 * KIB && pvc->traits.max_work_group == 1024 &&
                         pvc->traits.min_subgroup == 16 && strcmp(pvc->target, "pvc") == 0,
                  "Max 1550: 128 KiB SLM, 1024 work-items, sub-groups from 16, ocloc pvc");
        tu_expect(t, xelp->traits.local_mem_size == 64 * KIB && xelp->traits.max_work_group == 512 &&
                         strcmp(xelp->target, "tgllp") == 0,
                  "Xe-LP: 64 KiB SLM, 512 work-items, ocloc tgllp");
        tu_expect(t, rdna3->traits.max_work_group == 256 && cdna2->traits.max_work_group == 256 &&
                         rdna3->traits.local_mem_size == 64 * KIB && strcmp(rdna3->target, "gfx1100") == 0 &&
                         strcmp(cdna2->target, "gfx90a") == 0,
                  "AMD on ROCm OpenCL: 64 KiB LDS, 256 work-items reported, gfx1100 / gfx90a");
        tu_expect(t, mob->traits.local_mem_size == 32 * KIB && mob->traits.max_work_group == 256 && !mob->compiler,
                  "mobile-32k: 32 KiB, 256 work-items, no offline compiler");
    }
}

/* Tiles as a family's plan gives them (the fields build options read). */
static fa_cl__tiles tiles_of(fa_cl__kernel_id variant, int block_q, int block_kv, int rows, int cols, int wg, int dpad)
{
    fa_cl__tiles t;
    memset(&t, 0, sizeof t);
    t.variant = variant;
    t.kernel = fa_cl__kernel_by_id(variant)->name;
    t.block_q = block_q;
    t.block_kv = block_kv;
    t.rows_per_item = rows;
    t.cols_per_item = cols;
    t.work_group_size = wg;
    t.head_dim_padded = dpad;
    t.splits = 1;
    return t;
}

static void build_options(tu_tally *t)
{
    fa_cl__tiles tiled = tiles_of(FA_CL_KERNEL_PORTABLE_TILED, 64, 32, 2, 4, 256, 128);
    char buf[512];
    int n = fa_cl__build_options(&tiled, FA_CL_BF16, 128, 1, buf, sizeof buf);
    const char *want = "-DFA_DTYPE=2 -DHEAD_DIM=128 -DD_PAD=128 -DBLOCK_Q=64 -DBLOCK_KV=32 -DTM=2 -DTN=4 -DFA_UNROLL "
                       "-DFA_NATIVE_EXP -cl-mad-enable";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "tiled, GPU: '%s'", buf);

    tiled.head_dim_padded = 512;
    n = fa_cl__build_options(&tiled, FA_CL_F16, 512, 1, buf, sizeof buf);
    want = "-DFA_DTYPE=1 -DHEAD_DIM=512 -DD_PAD=512 -DBLOCK_Q=64 -DBLOCK_KV=32 -DTM=2 -DTN=4 -DFA_NATIVE_EXP "
           "-cl-mad-enable";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "tiled, GPU, d = 512 (not unrolled): '%s'", buf);
    tiled.head_dim_padded = 384;
    n = fa_cl__build_options(&tiled, FA_CL_F16, 384, 1, buf, sizeof buf);
    tu_expect(t, n > 0 && strstr(buf, " -DFA_UNROLL ") != NULL, "tiled, GPU, d = 384 (unrolled): '%s'", buf);
    tiled.head_dim_padded = 128;

    fa_cl__tiles rows = tiles_of(FA_CL_KERNEL_PORTABLE, 128, 32, 2, 32, 64, 44);
    n = fa_cl__build_options(&rows, FA_CL_F32, 41, 0, buf, sizeof buf);
    want = "-DFA_DTYPE=0 -DHEAD_DIM=41 -DD_PAD=44 -DBLOCK_Q=128 -DBLOCK_KV=32 -DROWS=2";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "rows, CPU (no GPU flags): '%s'", buf);

    /* the tensor-core kernel: rows per warp, aligned rows, and the emulated primitives for tests */
    fa_cl__tiles mma = tiles_of(FA_CL_KERNEL_NVIDIA_MMA, 128, 32, 32, 8, 128, 128);
    FA_CL_NV(&mma, ALIGNED16) = 1;
    n = fa_cl__build_options(&mma, FA_CL_F16, 128, 1, buf, sizeof buf);
    want = "-DFA_DTYPE=1 -DHEAD_DIM=128 -DD_PAD=128 -DBLOCK_Q=128 -DBLOCK_KV=32 -DWARP_ROWS=32 -DFA_ALIGNED16 -DFA_CP_L2=128 "
           "-DFA_UNROLL -DFA_NATIVE_EXP -cl-mad-enable";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "tensor-core, GPU: '%s'", buf);
    FA_CL_NV(&mma, ALIGNED16) = 0;
    mma.emulated = 1;
    n = fa_cl__build_options(&mma, FA_CL_BF16, 40, 0, buf, sizeof buf);
    want = "-DFA_DTYPE=2 -DHEAD_DIM=40 -DD_PAD=128 -DBLOCK_Q=128 -DBLOCK_KV=32 -DWARP_ROWS=32 -DFA_PTX_EMULATE";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "tensor-core emulated, CPU: '%s'", buf);

    /* a split-KV plan's forward over paged K/V */
    rows.splits = 8;
    rows.paged = 16;
    n = fa_cl__build_options(&rows, FA_CL_F16, 64, 0, buf, sizeof buf);
    want = "-DFA_DTYPE=1 -DHEAD_DIM=64 -DD_PAD=44 -DBLOCK_Q=128 -DBLOCK_KV=32 -DROWS=2 -DFA_SERVING -DFA_SPLIT -DFA_PAGED -DFA_PAGE_SIZE=16";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "split, paged: '%s'", buf);
    rows.splits = 1;
    rows.paged = 0;
    rows.mask = FA_CL_MASK_BOOL;
    n = fa_cl__build_options(&rows, FA_CL_F16, 64, 0, buf, sizeof buf);
    want = "-DFA_DTYPE=1 -DHEAD_DIM=64 -DD_PAD=44 -DBLOCK_Q=128 -DBLOCK_KV=32 -DROWS=2 -DFA_MASK=3";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "boolean mask: '%s'", buf);

    fa_cl__tiles tf32 = tiles_of(FA_CL_KERNEL_NVIDIA_TF32X3, 64, 32, 16, 8, 128, 128);
    FA_CL_NV(&tf32, ALIGNED16) = 1;
    n = fa_cl__build_options(&tf32, FA_CL_F32, 128, 1, buf, sizeof buf);
    want = "-DFA_DTYPE=0 -DHEAD_DIM=128 -DD_PAD=128 -DBLOCK_Q=64 -DBLOCK_KV=32 -DFA_ALIGNED16 -DFA_UNROLL "
           "-DFA_NATIVE_EXP -cl-mad-enable";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "fp32 tensor-core (3xTF32), GPU: '%s'", buf);
    const char *const *tf32_files = NULL;
    const int ntf = fa_cl__kernel_files(FA_CL_KERNEL_NVIDIA_TF32X3, &tf32_files);
    tu_expect(t, ntf == 12 && strcmp(tf32_files[ntf - 1], "fa_forward_nv_tf32.cl") == 0 &&
                     strcmp(tf32_files[7], "fa_nv_ptx.cl") == 0 && strcmp(tf32_files[9], "fa_nv_softmax.cl") == 0 &&
                     strcmp(tf32_files[10], "fa_nv_mods.cl") == 0,
              "fp32 tensor-core kernel files: the forward's units, PTX primitives, its constants, the online softmax, "
              "the score modifiers, "
              "fa_forward_nv_tf32.cl");
    /* the f32 backward on tensor cores: the f16 backward's kernel file with FA_DTYPE 0 and its pass */
    tf32.variant = FA_CL_KERNEL_NVIDIA_TF32_BACKWARD;
    tf32.block_kv = 64;
    FA_CL_NV(&tf32, PASS_ROWS) = 64;
    FA_CL_NV(&tf32, DKDV_ROLES) = 1;
    n = fa_cl__build_options(&tf32, FA_CL_F32, 128, 1, buf, sizeof buf);
    want = "-DFA_DTYPE=0 -DHEAD_DIM=128 -DD_PAD=128 -DBLOCK_Q=64 -DBLOCK_KV=64 -DPASS_ROWS=64 -DFA_BW_ROLES -DFA_ALIGNED16 "
           "-DFA_UNROLL -DFA_NATIVE_EXP -cl-mad-enable";
    tu_expect(t, n == (int)strlen(want) && strcmp(buf, want) == 0, "fp32 tensor-core backward (3xTF32), GPU: '%s'", buf);
    const char *const *mma_files = NULL;
    const int nbw = fa_cl__kernel_files(FA_CL_KERNEL_NVIDIA_TF32_BACKWARD, &tf32_files);
    const int nmma = fa_cl__kernel_files(FA_CL_KERNEL_NVIDIA_MMA_BACKWARD, &mma_files);
    tu_expect(t, nbw == 9 && nmma == 9 && strcmp(tf32_files[6], "fa_nv_bwd_tf32.cl") == 0 &&
                     strcmp(mma_files[6], "fa_nv_bwd_mma.cl") == 0 && strcmp(tf32_files[7], mma_files[7]) == 0 &&
                     strcmp(tf32_files[8], mma_files[8]) == 0 && strcmp(tf32_files[8], "fa_nv_bwd_dq.cl") == 0,
              "fp32 tensor-core backward kernel files: nvidia-mma-backward's kernels with the 3xTF32 atoms");

    char small[16];
    tu_expect(t, fa_cl__build_options(&tiled, FA_CL_F16, 128, 1, small, sizeof small) == -1 &&
                     memchr(small, '\0', sizeof small) != NULL,
              "a short buffer: -1, still NUL-terminated");

    char full[256];
    n = fa_cl__full_build_options("-DX=1", "-cl-nv-verbose", full, sizeof full);
    tu_expect(t, n > 0 && strcmp(full, FA_CL_STD_OPTION " -DX=1 -cl-nv-verbose") == 0, "full options: '%s'", full);

    const char *const *files;
    int nr = fa_cl__kernel_files(FA_CL_KERNEL_PORTABLE, &files);
    tu_expect(t, nr == 8 && strcmp(files[0], "fa_common.cl") == 0 && strcmp(files[1], "fa_forward_common.cl") == 0 &&
                     strcmp(files[2], "fa_fwd_coords.cl") == 0 && strcmp(files[7], "fa_forward.cl") == 0,
              "rows variant: fa_common.cl + fa_forward_common.cl and the forward's units + fa_forward.cl");
    int nt = fa_cl__kernel_files(FA_CL_KERNEL_PORTABLE_TILED, &files);
    tu_expect(t, nt == 8 && strcmp(files[7], "fa_forward_tiled.cl") == 0, "tiled variant: + fa_forward_tiled.cl");
    tu_expect(t, fa_cl__kernel_files((fa_cl__kernel_id)0, &files) == 0 && files == NULL, "unknown variant: no files");
}

int main(void)
{
    tu_tally t = {"profiles", 0, 0};
    limits(&t);
    profiles(&t);
    build_options(&t);
    return tu_finish(&t);
}
