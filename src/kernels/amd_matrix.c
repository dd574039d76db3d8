/* SPDX-License-Identifier: Apache-2.0 */
/* amd-wmma (RDNA3) and amd-mfma (CDNA2/3): FlashAttention-2 on AMD's matrix units through clang's
 * AMDGPU builtins, f16/bf16 (cl/fa_forward_amd_matrix.cl, one text: FA_AMD_MATRIX picks the
 * instruction). What they take, the devices they need, their tiles. Built against AMD's documented
 * lane layouts and checked by emulation only: each is verified on the device at first use. */
#include "kernels/amd_matrix.h"
#include "plan/planner.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl",   "fa_forward_common.cl", "fa_fwd_coords.cl",
                                    "fa_fwd_rows.cl", "fa_fwd_chunks.cl",     "fa_fwd_masks.cl",
                                    "fa_fwd_io.cl",   "fa_amd_matrix.cl",     "fa_forward_amd_matrix.cl"};

/* own[] of their tiles */
enum { OWN_INSTRUCTION, OWN_BF16 };

int fa_cl__amd_wave(int instruction) { return instruction == FA_CL_AMD_WMMA ? 32 : 64; }
int fa_cl__amd_tile(int instruction) { return instruction == FA_CL_AMD_MFMA_32 ? 32 : 16; }

static int dim_padded(int instruction, int head_dim)
{
    const int t = fa_cl__amd_tile(instruction);
    return (head_dim + t - 1) / t * t;
}

size_t fa_cl__amd_local_bytes(int instruction, int block_q, int block_kv, int head_dim, int emulated)
{
    const size_t t = (size_t)fa_cl__amd_tile(instruction), pitch = (size_t)dim_padded(instruction, head_dim) + 8;
    const size_t waves = (size_t)block_q / t;
    /* cl/fa_amd_matrix.cl: A and B of one instruction a wave, WMMA's twice (lanes 16..31 checked) */
    const size_t emu = emulated ? waves * (instruction == FA_CL_AMD_WMMA ? 2 : 1) * 2 * t * (t == 32 ? 8 : 16) * 2 : 0;
    return 2 * ((size_t)(block_q + block_kv) * pitch + (size_t)block_q * (size_t)(block_kv + 8)) +
           4 * (size_t)block_q * t + emu;
}

int fa_cl__amd_private_floats(int instruction, int block_kv, int head_dim, int bf16)
{
    const int t = fa_cl__amd_tile(instruction), cn = t * t / fa_cl__amd_wave(instruction);
    const int an = instruction == FA_CL_AMD_WMMA ? 16 : 4; /* 16-bit values, two a register */
    /* per row a lane holds: m, l and its key range, and bf16's rounding of P (clang 19 spilled
     * gfx1100's d = 256 bf16 build at 32-key blocks, 144 bytes, which this puts at 200) */
    return (dim_padded(instruction, head_dim) / t + block_kv / t + 4 + bf16) * cn + an;
}

/* Their tuning keys (FA_CL_TUNE=amd-wmma:key=value; docs/tuning.md). */
static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED, FA_CL_TUNE_EMULATE_REPLACING(NULL)};

static fa_cl_status plan_for(const fa_cl__kernel_family *f, int instruction, const fa_cl__limits *lim,
                             const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg, size_t msg_size)
{
    const int t = fa_cl__amd_tile(instruction), wave = fa_cl__amd_wave(instruction);
    const int emulated = fa_cl__family_emulated(lim, f), d = req->head_dim;
    const size_t budget = out->local_mem_budget, max_wg = lim->max_work_group ? lim->max_work_group : 1;
    /* long rows sum in chunks of keys, launch by launch (cl/fa_fwd_chunks.cl): not built here */
    const int64_t keys = req->row_keys > 0 ? req->row_keys : req->seqlen_k;
    if (lim->chunk_keys > 0 || keys > fa_cl__chunk_keys(req->o_f32 ? FA_CL_F32 : req->dtype)) {
        snprintf(msg, msg_size, "%s does not sum long rows in chunks of keys (portable-tiled does)", f->name);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    /* a mask or score modifiers: per row a lane also holds their state (8 or 16 rows a lane). clang
     * 19 spilled 64-key blocks on gfx90a (56 bytes; none at 32), 32-key blocks on gfx1100 (20 to 248
     * bytes; none at 16) and there 4 waves at head_dim 128 with sinks or softcap (12 bytes; none with
     * 2): scripts/amd_matrix_offline_check.sh --cases all */
    const int wmma = instruction == FA_CL_AMD_WMMA;
    const int mods = (req->features & FA_CL_FEAT_MODIFIERS) || req->mask != FA_CL_MASK_NONE;
    const int most_kv = mods ? (wmma ? 16 : 32) : 64, most_waves = wmma && mods && d > 64 ? 2 : FA_CL_AMD_MAX_WAVES;
    /* the AMD budget of src/devices/amd.c for both: gfx90a's MFMA builds take about twice the model
     * (VGPRs and AGPRs, 512 a lane) and spilled at head_dim 256 (296 bytes, clang 19), which the
     * model puts at 212 */
    const int regs = lim->private_floats;
    int br = 0, bc = 0, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        const size_t need = fa_cl__amd_local_bytes(instruction, br, bc, d, emulated);
        if (br % t || bc % t || br / t > FA_CL_AMD_MAX_WAVES || (size_t)(br / t * wave) > max_wg || need > budget) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for %s: B_r and B_c must be multiples of %d, B_r at most "
                     "%d rows and %zu work-items, within %zu bytes of local memory (needs %zu)", br, bc, f->name, t,
                     FA_CL_AMD_MAX_WAVES * t, max_wg / (size_t)wave * (size_t)t, budget, need);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        forced = 1;
    } else {
        /* the most waves the rows fill (at most FA_CL_AMD_MAX_WAVES), then the widest key block
         * whose local memory and registers fit */
        const int64_t rows = req->seqlen_q > 0 ? req->seqlen_q : 1;
        int waves = most_waves;
        while (waves > 1 && (int64_t)(waves / 2) * t >= rows)
            waves /= 2;
        for (; waves >= 1 && br == 0; waves /= 2)
            for (int c = most_kv; c >= 16 && c % t == 0 && br == 0; c /= 2) {
                if ((size_t)(waves * wave) > max_wg || fa_cl__amd_local_bytes(instruction, waves * t, c, d, emulated) > budget)
                    continue;
                if (!emulated && regs > 0 &&
                    fa_cl__amd_private_floats(instruction, c, d, req->dtype == FA_CL_BF16) > regs)
                    continue;
                br = waves * t;
                bc = c;
            }
        if (br == 0) {
            snprintf(msg, msg_size, "no tile of %s fits head_dim %d in %zu bytes (%s) and %d registers a lane", f->name,
                     d, budget, out->budget_source, lim->private_floats);
            return FA_CL_ERROR_UNSUPPORTED;
        }
    }
    fa_cl__tiles_set(out, f, br, bc, t, t, br / t * wave, fa_cl__amd_local_bytes(instruction, br, bc, d, emulated));
    out->elem_bytes = 2;
    out->forced = forced;
    out->emulated = emulated;
    out->own[OWN_INSTRUCTION] = instruction;
    out->own[OWN_BF16] = req->dtype == FA_CL_BF16;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return snprintf(out, n, " -DWAVES=%d -DFA_AMD_MATRIX=%d -DFA_AMD_BF16=%d%s", t->work_group_size /
                    fa_cl__amd_wave(t->own[OWN_INSTRUCTION]), t->own[OWN_INSTRUCTION], t->own[OWN_BF16],
                    t->emulated ? " -DFA_AMD_MATRIX_EMULATE" : "");
}

/* What both take: the shared units' masks, windows, GQA packing and serving features, score
 * modifiers and masks; not the storage types, q8_0 / fp8 K/V, value widths or tree masks. */
#define FA_CL_AMD_TAKES                                                                                   \
    {FA_CL_DTYPES_16, FA_CL_FEAT_SERVING | FA_CL_FEAT_MODIFIERS, FA_CL_MASKS_ALL, FA_CL_AMD_MAX_DIM}

static fa_cl_status plan_wmma(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    return plan_for(&fa_cl__kernel_amd_wmma, FA_CL_AMD_WMMA, lim, req, out, msg, msg_size);
}

static fa_cl_status plan_mfma(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    return plan_for(&fa_cl__kernel_amd_mfma, FA_CL_AMD_MFMA_32, lim, req, out, msg, msg_size);
}

const fa_cl__kernel_family fa_cl__kernel_amd_wmma = {
    .name = "amd-wmma",
    .id = FA_CL_KERNEL_AMD_WMMA,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f16/bf16 on AMD RDNA3 matrix units: WMMA 16x16x16 (wave32) through clang's AMDGPU builtins",
    .takes = FA_CL_AMD_TAKES,
    /* RDNA3 (gfx11): RDNA4's WMMA has other operand layouts */
    .needs = {.vendor = FA_CL_VENDOR_AMD,
              .targets = "gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151"},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan_wmma,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .verify_first_use = 1,
};

const fa_cl__kernel_family fa_cl__kernel_amd_mfma = {
    .name = "amd-mfma",
    .id = FA_CL_KERNEL_AMD_MFMA,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f16/bf16 on AMD CDNA matrix cores: MFMA 32x32x8 (wave64) through clang's AMDGPU builtins",
    .takes = FA_CL_AMD_TAKES,
    /* CDNA2 and CDNA3 (the bf16_1k forms are gfx90a's and later; gfx908 has only the older bf16) */
    .needs = {.vendor = FA_CL_VENDOR_AMD, .targets = "gfx90a gfx940 gfx941 gfx942"},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan_mfma,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .verify_first_use = 1,
};
