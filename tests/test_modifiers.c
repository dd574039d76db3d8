/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Score modifiers (include/fa_cl.h "Score modifiers"): softcap, ALiBi slopes and attention sinks,
 * alone and together, with causal masks, windows, GQA (packed for decode rows), head_dim tails and
 * every layout, against the float64 oracle on the inputs as stored (tests/oracle.c), at the
 * tolerances of tests/tolerance.h. Subsets:
 *   cases      the fused path (the planner's kernel, or FA_CL_KERNEL_VARIANT; CTest also runs it
 *              with FA_CL_TUNE splits and kv_chunk, so sinks meet the combine and the chunk merge)
 *   mods       the cases without an attention mask (CTest: the f32 tensor-core kernel)
 *   hopper     cases shaped for nvidia-wgmma (CTest: also on the emulated nvidia-mma)
 *   wgmma      the same, skipped unless the device is Hopper (CTest: each must plan on nvidia-wgmma)
 *   reference  fa_cl_reference_run on the same cases
 *   invalid    what bad modifiers get: a status and a message naming the field
 *   tiny N     case N of a tiny set, one per process (oclgrind)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_util.h"

static tu_tally mods_tally = {"modifiers", 0, 0};

typedef struct mod_case {
    tu_case c;
    float softcap; /* 0 = none */
    int alibi, sinks;
    fa_cl_mask_type mask; /* FA_CL_MASK_NONE = none */
    int bcast;            /* the mask broadcast over: 1 batches, 2 heads, 4 rows (stride 0); 8: even offset
                             and strides (the tensor-core kernel's paired loads); 16: offset and strides of
                             16 entries (16-byte rows: the tensor-core kernel copies mask tiles with K/V) */
} mod_case;

/* A mask for mc in a buffer of its own: strides [B, Hq, Sq] (0 where broadcast) with rows padded by
 * 3 entries and an offset of 5 (bcast & 8: padded to an even pitch, offset 6; & 16: to a multiple of
 * 16, offset 16), gaps NaN (a read of one would show), entries random in [-2, 1]
 * with a quarter masked (-inf, or 0 for a boolean), and one row of every slice wholly masked
 * (unless rows broadcast). dense gets the oracle's [B, Hq, Sq, Sk] terms. */
typedef struct test_mask {
    cl_mem mem;
    double *dense;
    int64_t stride[3];
    size_t offset;
} test_mask;

static int mask_make(fa_cl_context *ctx, const mod_case *mc, uint64_t seed, test_mask *m)
{
    const tu_case *c = &mc->c;
    const int64_t pitch = mc->bcast & 16 ? (c->Sk + 3 + 15) / 16 * 16 : mc->bcast & 8 ? (c->Sk + 4) / 2 * 2 : c->Sk + 3, rows = mc->bcast & 4 ? 1 : c->Sq, heads = mc->bcast & 2 ? 1 : c->Hq;
    const int64_t batches = mc->bcast & 1 ? 1 : c->B;
    m->offset = mc->bcast & 16 ? 16 : mc->bcast & 8 ? 6 : 5;
    m->stride[2] = mc->bcast & 4 ? 0 : pitch;
    m->stride[1] = mc->bcast & 2 ? 0 : rows * pitch;
    m->stride[0] = mc->bcast & 1 ? 0 : heads * rows * pitch;
    const size_t n = m->offset + (size_t)(batches * heads * rows * pitch);
    const size_t esize = mc->mask == FA_CL_MASK_F32 ? 4 : mc->mask == FA_CL_MASK_BOOL ? 1 : 2; /* f16, bf16 */
    unsigned char *img = (unsigned char *)malloc(n * esize);
    double *slice = (double *)malloc(n * sizeof(double)); /* each stored entry's term */
    m->dense = (double *)malloc((size_t)(c->B * c->Hq * c->Sq * c->Sk) * sizeof(double));
    m->mem = NULL;
    if (!img || !slice || !m->dense) {
        free(img);
        free(slice);
        return -1;
    }
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0x3a5cu);
    for (size_t e = 0; e < n; e++) {
        const int gap = e < m->offset || (int64_t)((e - m->offset) % (size_t)pitch) >= c->Sk;
        const int64_t row = (int64_t)((e - m->offset) / (size_t)pitch) % rows;
        const int masked = !gap && (tu_rng_uniform(&r) < 0.25 || (rows > 1 && row == 1));
        const float x = gap ? NAN : masked ? -INFINITY : (float)(-2.0 + 3.0 * tu_rng_uniform(&r));
        if (mc->mask == FA_CL_MASK_F32) {
            memcpy(img + 4 * e, &x, 4);
            slice[e] = x;
        } else if (mc->mask == FA_CL_MASK_F16) {
            const uint16_t hx = tu_f32_to_f16(x);
            memcpy(img + 2 * e, &hx, 2);
            slice[e] = tu_f16_to_f32(hx);
        } else if (mc->mask == FA_CL_MASK_BF16) {
            const uint16_t bx = tu_f32_to_bf16(x);
            memcpy(img + 2 * e, &bx, 2);
            slice[e] = tu_bf16_to_f32(bx);
        } else {
            img[e] = gap ? 0xa5 : masked ? 0 : (unsigned char)(1 + (e % 200)); /* any nonzero is visible */
            slice[e] = masked ? -INFINITY : 0.0;
        }
    }
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->Hq; h++)
            for (int64_t i = 0; i < c->Sq; i++)
                for (int64_t j = 0; j < c->Sk; j++)
                    m->dense[((b * c->Hq + h) * c->Sq + i) * c->Sk + j] =
                        slice[m->offset + (size_t)(b * m->stride[0] + h * m->stride[1] + i * m->stride[2] + j)];
    m->mem = tu_buffer(ctx, CL_MEM_READ_ONLY, n * esize, img);
    free(img);
    free(slice);
    return m->mem ? 0 : -1;
}

/* ALiBi's slopes for H heads (the paper's geometric series 2^(-8 (h + 1) / H)); sinks in [-1, 3] */
static void per_head(const mod_case *mc, float *slopes, float *sinks, uint64_t seed)
{
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0x5151u);
    for (int64_t h = 0; h < mc->c.Hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)mc->c.Hq);
        sinks[h] = (float)(-1.0 + 4.0 * tu_rng_uniform(&r));
    }
}

static void mod_name(const mod_case *mc, char *buf, size_t size)
{
    char c[256];
    tu_case_format(&mc->c, c, sizeof c);
    static const char *const masks[] = {"", " mask=f32", " mask=f16", " mask=bool", " mask=bf16"};
    snprintf(buf, size, "%s softcap=%g%s%s%s%s%s%s%s", c, (double)mc->softcap, mc->alibi ? " alibi" : "",
             mc->sinks ? " sinks" : "", masks[mc->mask], mc->bcast & 1 ? " /B" : "", mc->bcast & 2 ? " /H" : "",
             mc->bcast & 4 ? " /rows" : "", mc->bcast & 16 ? " rows16" : mc->bcast & 8 ? " even" : "");
}

/* One case through `reference` (fa_cl_reference_run) or the fused path; checked against the oracle. */
static void check_case(tu_tally *t, fa_cl_context *ctx, const mod_case *mc, uint64_t seed, int reference)
{
    char name[400];
    mod_name(mc, name, sizeof name);
    tu_problem p;
    if (tu_problem_init(&p, ctx, &mc->c, seed, 0) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        return;
    }
    const size_t hq = (size_t)mc->c.Hq, no = (size_t)(mc->c.B * mc->c.Hq * mc->c.Sq * mc->c.D);
    float *slopes = (float *)calloc(hq, sizeof(float)), *sinks = (float *)calloc(hq, sizeof(float));
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc(p.lse_elems * sizeof(double));
    cl_mem slope_mem = NULL, sink_mem = NULL;
    test_mask mask = {NULL, NULL, {0, 0, 0}, 0};
    if (!slopes || !sinks || !ref_o || !ref_lse) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    if (mc->mask && mask_make(ctx, mc, seed, &mask) != 0) {
        tu_expect(t, 0, "%s: mask setup failed", name);
        goto done;
    }
    per_head(mc, slopes, sinks, seed);
    const tu_mods mods = {mc->softcap, mc->alibi ? slopes : NULL, mc->sinks ? sinks : NULL, mask.dense};
    tu_attention_f64_mods(&p.c, &mods, p.x[0], p.x[1], p.x[2], ref_o, ref_lse);
    slope_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * sizeof(float), slopes);
    sink_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * sizeof(float), sinks);
    if (!slope_mem || !sink_mem || tu_problem_poison(&p, ctx) != 0) {
        tu_expect(t, 0, "%s: buffers failed", name);
        goto done;
    }
    p.desc.softcap = mc->softcap;
    p.desc.alibi = mc->alibi;
    p.desc.sinks = mc->sinks;
    p.desc.mask = mc->mask;
    memcpy(p.desc.mask_stride, mask.stride, sizeof mask.stride);
    p.desc.mask_offset = mask.offset;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.lse = p.lse_mem;
    a.alibi_slopes = mc->alibi ? slope_mem : NULL;
    a.sinks = mc->sinks ? sink_mem : NULL;
    a.mask = mask.mem;
    tu_run_and_check(t, ctx, &p, &a, ref_o, ref_lse, name, reference);
done:
    if (slope_mem)
        clReleaseMemObject(slope_mem);
    if (sink_mem)
        clReleaseMemObject(sink_mem);
    if (mask.mem)
        clReleaseMemObject(mask.mem);
    free(mask.dense);
    free(slopes);
    free(sinks);
    free(ref_o);
    free(ref_lse);
    tu_problem_free(&p);
}

/* Scores of a few units (inputs scaled by the softcap cases' 3x): the softcap bends them. */
static const mod_case all_cases[] = {
    /* each modifier alone, causal with GQA and a head_dim tail, f32 */
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.9f, 1}, 5.0f, 0, 0, FA_CL_MASK_NONE, 0},
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 1, 0, FA_CL_MASK_NONE, 0},
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 1, FA_CL_MASK_NONE, 0},
    /* all three; windows (rows that see no key get the sink's LSE), f16, strided layouts */
    {{1, 3, 3, 64, 64, 64, FA_CL_F16, 0, 8, 4, "SPCS", 0.5f, 1}, 4.0f, 1, 1, FA_CL_MASK_NONE, 0},
    {{2, 2, 1, 40, 24, 32, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 2.0f, 1, 1, FA_CL_MASK_NONE, 0},
    /* decode rows: GQA packing, split-KV (the combine adds the sink), bf16, d = 128 */
    {{2, 8, 2, 1, 300, 128, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, 10.0f, 1, 1, FA_CL_MASK_NONE, 0},
    {{3, 4, 1, 4, 129, 64, FA_CL_F32, 1, -1, -1, "PCCP", 0.0f, 1}, 0.0f, 0, 1, FA_CL_MASK_NONE, 0},
    /* a window wider than the keys, softcap only, d = 16 */
    {{1, 2, 2, 17, 17, 16, FA_CL_F32, 0, 100, 100, "CCCC", 0.0f, 1}, 1.0f, 0, 0, FA_CL_MASK_NONE, 0},
    /* attention masks: each type, dense and broadcast over batches, heads or rows; with causal,
     * windows, GQA, the other modifiers, decode rows (packed, split) and f16/bf16 storage */
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F32, 0},
    {{2, 4, 2, 37, 53, 40, FA_CL_F16, 1, -1, -1, "SPCS", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 3},
    {{2, 4, 2, 37, 133, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 3 | 8},
    {{2, 4, 4, 40, 72, 64, FA_CL_BF16, 0, 16, 8, "CCCC", 0.7f, 1}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 1},
    {{2, 4, 4, 40, 72, 64, FA_CL_BF16, 0, 16, 8, "CCCC", 0.7f, 1}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 1 | 8},
    {{1, 4, 2, 70, 140, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F32, 8},
    {{1, 3, 3, 64, 64, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 4.0f, 1, 1, FA_CL_MASK_F32, 2},
    {{2, 8, 2, 1, 300, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 4},
    {{3, 4, 1, 4, 129, 64, FA_CL_F32, 1, -1, -1, "PCCP", 0.0f, 1}, 0.0f, 0, 1, FA_CL_MASK_BOOL, 0},
    {{1, 2, 2, 130, 70, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 7},
    /* bf16 masks: with every other modifier and strided layouts; paired loads, causal, GQA */
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "SPCS", 0.0f, 1}, 3.0f, 1, 1, FA_CL_MASK_BF16, 3},
    {{2, 4, 2, 37, 133, 64, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BF16, 4 | 8},
    /* 16-byte mask rows (tiles copied with K/V on the tensor-core kernel): key tails inside a 16-byte
     * copy (NaN gaps beyond), broadcasts, causal, windows, GQA, each mask type */
    {{2, 4, 2, 70, 141, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16},
    {{2, 4, 2, 130, 77, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 16 | 3},
    {{1, 4, 4, 97, 203, 64, FA_CL_BF16, 0, 40, 8, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F32, 16 | 2},
    {{1, 2, 1, 150, 150, 256, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16 | 4},
    {{2, 8, 2, 1, 300, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 16}, /* decoding */
    /* the Hopper kernel's shapes (d = 97..128, more than 64 rows): swizzled mask tiles of 128 and 64
     * keys, several query blocks, key tails, causal, windows, GQA, padded rows (d = 111) */
    {{1, 4, 2, 200, 300, 128, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BOOL, 16 | 1},
    {{2, 2, 2, 150, 260, 128, FA_CL_BF16, 0, 64, 32, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F32, 16 | 4},
    {{1, 4, 1, 129, 257, 111, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16 | 2},
    {{2, 2, 1, 256, 256, 128, FA_CL_BF16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16 | 1},
    /* there, a mask of its own for every batch and head (tiles by TMA through a 4-d map: rows and
     * keys past the ends read as zeros) */
    {{2, 4, 2, 160, 300, 128, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16},
    /* and bf16 masks there (causal, a key tail: the ldmatrix reads at d = 128), and decoding */
    {{2, 4, 2, 70, 141, 128, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BF16, 16},
    {{2, 8, 2, 1, 300, 128, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_BF16, 16 | 2},
};

/* Hopper's tensor-core kernel's shapes (nvidia-wgmma: 16-byte rows, more than 64 query rows, head_dim
 * 97..128, 129..256, or 41..64 with more than 512 keys): the modifiers alone and together with causal
 * masks, windows, GQA, key tails, several query blocks, and a mask of 16-byte rows (its tiles copied
 * with K/V) */
static const mod_case hopper_cases[] = {
    {{1, 4, 2, 200, 300, 128, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 4.0f, 1, 1, FA_CL_MASK_NONE, 0},
    {{2, 4, 4, 150, 260, 128, FA_CL_BF16, 0, 64, 32, "CCCC", 0.0f, 1}, 0.0f, 1, 1, FA_CL_MASK_NONE, 0},
    {{1, 4, 1, 129, 257, 112, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 5.0f, 0, 0, FA_CL_MASK_NONE, 0},
    {{1, 2, 1, 130, 600, 64, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 3.0f, 1, 0, FA_CL_MASK_NONE, 0},
    {{1, 2, 2, 130, 140, 256, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, 6.0f, 0, 1, FA_CL_MASK_NONE, 0},
    {{1, 4, 2, 200, 300, 128, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 4.0f, 1, 1, FA_CL_MASK_BOOL, 16 | 1},
};

/* cases[0 .. n) seeded from seed0 on, through the fused path; mask_free: those without an attention mask */
static int check_list(fa_cl_context *ctx, const mod_case *cases, int n, uint64_t seed0, int mask_free)
{
    for (int i = 0; i < n; i++)
        if (!mask_free || cases[i].mask == FA_CL_MASK_NONE)
            check_case(&mods_tally, ctx, &cases[i], seed0 + (uint64_t)i, 0);
    return 0;
}

static int run_hopper(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    return check_list(ctx, hopper_cases, TU_COUNT(hopper_cases), 200, 0);
}

/* the same where nvidia-wgmma runs (compute capability 9.0; skipped elsewhere) */
static int run_wgmma(fa_cl_context *ctx, int argc, char **argv)
{
    if (!tu_hopper(ctx)) {
        printf("SKIP: nvidia-wgmma needs an NVIDIA GPU of compute capability 9.0\n");
        return TU_EXIT_SKIP;
    }
    return run_hopper(ctx, argc, argv);
}

static int run_cases(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    return check_list(ctx, all_cases, TU_COUNT(all_cases), 100, 0);
}

/* the cases without an attention mask (the f32 tensor-core kernel takes the modifiers, not masks) */
static int run_mods(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    return check_list(ctx, all_cases, TU_COUNT(all_cases), 100, 1);
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&mods_tally, ctx, &all_cases[i], 100 + (uint64_t)i, 1);
    return 0;
}

/* The tiny cases oclgrind runs (one per process). */
static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    static const mod_case tiny[] = {
        {{1, 2, 1, 9, 21, 8, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 3.0f, 1, 1, FA_CL_MASK_NONE, 0},
        {{2, 4, 2, 1, 40, 16, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 1, 1, FA_CL_MASK_NONE, 0},
        {{2, 2, 1, 9, 21, 8, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 1},
        {{1, 4, 2, 3, 40, 16, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 1, FA_CL_MASK_BOOL, 0},
        /* 16-byte mask rows: the tensor-core kernel's mask tiles, a key tail inside a copy */
        {{2, 2, 1, 20, 37, 16, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 0, FA_CL_MASK_F16, 16},
        /* the three modifiers on 16-bit storage (the tensor-core kernel's): causal, GQA, key tails */
        {{1, 4, 2, 20, 37, 16, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 3.0f, 1, 1, FA_CL_MASK_NONE, 0},
    };
    const int only = argc > 0 ? atoi(argv[0]) : -1;
    for (int i = 0; i < TU_COUNT(tiny); i++)
        if (only < 0 || only == i)
            check_case(&mods_tally, ctx, &tiny[i], 7 + (uint64_t)i, 0);
    return 0;
}

/* what bad modifiers get */
static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &mods_tally;
    const tu_case c = {1, 4, 2, 8, 8, 16, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1};
    tu_problem p;
    if (tu_problem_init(&p, ctx, &c, 1, 0) != 0)
        return 1;
    char msg[300];
    const float caps[3] = {-1.0f, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        fa_cl_attention_desc d = p.desc;
        d.softcap = caps[i];
        fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, "softcap"), "softcap %g: %s: %s",
                  (double)caps[i], fa_cl_status_string(st), msg);
    }
    float small[3] = {0.1f, 0.2f, 0.3f}; /* heads_q 4: one float short */
    cl_mem three = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof small, small);
    fa_cl_forward_args a;
    const struct { int alibi, sinks, give_alibi, give_sinks; fa_cl_status want; const char *says; } bad[] = {
        {1, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "alibi_slopes"}, /* desc.alibi without a buffer */
        {0, 1, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "sinks"},
        {0, 0, 1, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.alibi"},   /* a buffer the desc does not ask for */
        {1, 0, 1, 0, FA_CL_ERROR_BUFFER_TOO_SMALL, "alibi_slopes"}, /* 3 floats for 4 heads */
        {0, 1, 0, 1, FA_CL_ERROR_BUFFER_TOO_SMALL, "sinks"},
    };
    for (int i = 0; i < TU_COUNT(bad) && three; i++) {
        fa_cl_attention_desc d = p.desc;
        d.alibi = bad[i].alibi;
        d.sinks = bad[i].sinks;
        fa_cl_forward_args_init(&a);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3];
        a.alibi_slopes = bad[i].give_alibi ? three : NULL;
        a.sinks = bad[i].give_sinks ? three : NULL;
        fa_cl_status st = fa_cl_attention_run(ctx, &d, &a);
        tu_expect(t, st == bad[i].want && strstr(fa_cl_last_error(ctx), bad[i].says), "bad case %d: %s: %s", i,
                  fa_cl_status_string(st), fa_cl_last_error(ctx));
        st = fa_cl_reference_run(ctx, &d, &a);
        tu_expect(t, st == bad[i].want || st == FA_CL_ERROR_UNSUPPORTED, "bad case %d, the reference: %s: %s", i,
                  fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    /* attention masks: a type that is none, strides without a mask, a negative stride, no buffer,
     * a buffer a float short of the strides' reach, a scale whose inverse overflows */
    {
        float mask_img[4 * 8 * 8];
        memset(mask_img, 0, sizeof mask_img);
        cl_mem mask_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof mask_img - sizeof(float), mask_img);
        const struct { int type; int64_t s0, s1, s2; size_t off; float scale; int give; fa_cl_status want;
                       const char *says; } mbad[] = {
            {7, 0, 64, 8, 0, 0.0f, 1, FA_CL_ERROR_INVALID_ARGUMENT, "desc.mask"},
            {0, 0, 64, 8, 0, 0.0f, 0, FA_CL_ERROR_INVALID_ARGUMENT, "mask_stride"},
            {1, 0, -64, 8, 0, 0.0f, 1, FA_CL_ERROR_INVALID_ARGUMENT, "mask_stride"},
            {1, 0, 64, 8, 0, 0.0f, 0, FA_CL_ERROR_INVALID_ARGUMENT, "args.mask"},
            {1, 0, 64, 8, 0, 0.0f, 1, FA_CL_ERROR_BUFFER_TOO_SMALL, "mask"},    /* 4 heads x 8 x 8 floats, one short */
            {1, 0, 0, 0, 250, 0.0f, 1, FA_CL_ERROR_BUFFER_TOO_SMALL, "mask"},   /* one row broadcast, from 250 of 255 */
            {1, 0, 0, 8, 0, 1e-39f, 1, FA_CL_ERROR_UNSUPPORTED, "1 / scale"},
        };
        for (int i = 0; i < TU_COUNT(mbad) && mask_mem; i++) {
            fa_cl_attention_desc dm = p.desc;
            dm.mask = (fa_cl_mask_type)mbad[i].type;
            dm.mask_stride[0] = mbad[i].s0, dm.mask_stride[1] = mbad[i].s1, dm.mask_stride[2] = mbad[i].s2;
            dm.mask_offset = mbad[i].off;
            dm.scale = mbad[i].scale;
            fa_cl_forward_args_init(&a);
            a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3];
            a.mask = mbad[i].give ? mask_mem : NULL;
            fa_cl_status st = fa_cl_attention_run(ctx, &dm, &a);
            tu_expect(t, st == mbad[i].want && strstr(fa_cl_last_error(ctx), mbad[i].says), "bad mask %d: %s: %s", i,
                      fa_cl_status_string(st), fa_cl_last_error(ctx));
            st = fa_cl_reference_run(ctx, &dm, &a);
            tu_expect(t, st == mbad[i].want && strstr(fa_cl_last_error(ctx), mbad[i].says),
                      "bad mask %d, the reference: %s: %s", i, fa_cl_status_string(st), fa_cl_last_error(ctx));
        }
        /* a mask given to a call that did not ask for one */
        fa_cl_forward_args_init(&a);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.mask = mask_mem;
        fa_cl_status st = fa_cl_attention_run(ctx, &p.desc, &a);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(ctx), "desc.mask"),
                  "args.mask without desc.mask: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        if (mask_mem)
            clReleaseMemObject(mask_mem);
    }
    /* the positional reference call has no slopes to take */
    fa_cl_attention_desc d = p.desc;
    d.alibi = 1;
    fa_cl_status st = fa_cl_reference_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], p.mem[3], NULL, 0, NULL, NULL);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT || st == FA_CL_ERROR_UNSUPPORTED,
              "fa_cl_reference_forward with desc.alibi: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    if (three)
        clReleaseMemObject(three);
    tu_problem_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"cases", run_cases}, {"mods", run_mods}, {"hopper", run_hopper}, {"wgmma", run_wgmma},
        {"reference", run_reference}, {"invalid", run_invalid}, {"tiny", run_tiny},
    };
    return tu_main(&mods_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
