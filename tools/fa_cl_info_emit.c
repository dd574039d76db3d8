/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_info --profile NAME|all --emit DIR: every program the library would build for a list of
 * representative descriptors on each device profile, planned by the library's own decisions
 * (fa_cl__plan_request, fa_cl__plan_decide, forward and backward) with no device: the kernel
 * sources (DIR/<family>.cl, the embedded cl/ files concatenated as clCreateProgramWithSource gets
 * them) and the exact clBuildProgram options (DIR/builds.tsv), for the offline compile checks
 * (scripts/offline_compile.sh) and the kernel token check (scripts/check_kernel_tokens.sh).
 *
 * A case is a descriptor shape (features on top of a dense prefill) and the FA_CL_* settings it is
 * planned under; each is planned at its head_dims x f32, f16, bf16. Its name is part of each
 * build's key in builds.tsv (profile, case, head_dim, dtype, launch): keep names stable, and add a
 * case for every -D path a plan can take (scripts/check_kernel_tokens.sh --coverage lists the
 * kernels' macros no build defines).
 */
#include "fa_cl_info_profile.h"

#include "plan/plan.h" /* the planner's decisions, build options, embedded kernel sources */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The dense prefill every case starts from: docs/performance.md's headline shape, B = 8, H = 16,
 * 4096 rows and keys: no tile is clamped by the sequence, and there are work-groups enough that no
 * profile splits its keys (the Max 1550's 2048 slots included). */
#define EMIT_BATCH 8
#define EMIT_HEADS 16
#define EMIT_SEQLEN 4096
/* A profile has no CL_DEVICE_MAX_MEM_ALLOC_SIZE: split-KV's partial results and padded rows are
 * planned against a quarter of a 16 GiB device, far above what these descriptors need. */
#define EMIT_MAX_ALLOC ((uint64_t)4 << 30)

static const fa_cl_dtype dtypes[] = {FA_CL_F32, FA_CL_F16, FA_CL_BF16};

/* ---- the cases ------------------------------------------------------------------------------- */

enum { PASS_FORWARD = 1, PASS_BACKWARD = 2 };

typedef struct emit_case {
    const char *name;    /* builds.tsv's case: part of each build's key */
    int passes;          /* PASS_FORWARD, PASS_BACKWARD: the plans made for it */
    int dims[4];         /* head_dims (0-terminated); none: 64, 128, 256 */
    const char *profile; /* only this profile's plans (settings that change nothing elsewhere); NULL: every one */
    const char *env;     /* FA_CL_* settings, "NAME=value NAME=value", as the library reads them */
    void (*shape)(fa_cl_attention_desc *d); /* the features, on the dense prefill; NULL: none */
} emit_case;

/* [B, H, Sq, Sk] contiguous mask strides */
static void mask_dense(fa_cl_attention_desc *d, fa_cl_mask_type type)
{
    d->mask = type;
    d->mask_stride[0] = d->heads_q * d->seqlen_q * d->seqlen_k;
    d->mask_stride[1] = d->seqlen_q * d->seqlen_k;
    d->mask_stride[2] = d->seqlen_k;
}

/* decoding: one query row of 32 heads on 8 KV heads (GQA packing, split-KV) */
static void decode_gqa(fa_cl_attention_desc *d)
{
    d->seqlen_q = 1;
    d->heads_q = 32;
    d->heads_kv = 8;
}

/* a paged cache (vLLM's 16-key pages) with per-sequence lengths */
static void paged(fa_cl_attention_desc *d, int64_t page_size)
{
    d->page_size = page_size;
    d->pages_per_seq = (d->seqlen_k + page_size - 1) / page_size;
    d->num_pages = d->batch * d->pages_per_seq;
    d->kv_seqlens = 1;
}

static void shape_mask_f32(fa_cl_attention_desc *d) { mask_dense(d, FA_CL_MASK_F32); }
static void shape_mask_f16(fa_cl_attention_desc *d) { mask_dense(d, FA_CL_MASK_F16); }
static void shape_mask_bool(fa_cl_attention_desc *d) { mask_dense(d, FA_CL_MASK_BOOL); }
static void shape_mask_bf16(fa_cl_attention_desc *d) { mask_dense(d, FA_CL_MASK_BF16); }
static void shape_mask_broadcast(fa_cl_attention_desc *d) /* [1, 1, Sq, Sk] */
{
    mask_dense(d, FA_CL_MASK_F16);
    d->mask_stride[0] = d->mask_stride[1] = 0;
}
static void shape_mask_one_row(fa_cl_attention_desc *d) /* [B, H, 1, Sk]: rows broadcast (no TMA box) */
{
    mask_dense(d, FA_CL_MASK_F16);
    d->mask_stride[2] = 0;
}
static void shape_mask_even(fa_cl_attention_desc *d) /* pairs of entries, rows not 16-byte aligned */
{
    mask_dense(d, FA_CL_MASK_F16);
    d->mask_offset = 2;
}
static void shape_mask_odd(fa_cl_attention_desc *d) /* entries one at a time */
{
    mask_dense(d, FA_CL_MASK_BOOL);
    d->mask_offset = 1;
}
static void shape_softcap(fa_cl_attention_desc *d) { d->softcap = 30.0f; }
static void shape_alibi(fa_cl_attention_desc *d) { d->alibi = 1; }
static void shape_sinks(fa_cl_attention_desc *d) { d->sinks = 1; }
static void shape_mods_mask(fa_cl_attention_desc *d)
{
    d->softcap = 30.0f;
    d->alibi = d->sinks = 1;
    mask_dense(d, FA_CL_MASK_F32);
}
static void shape_kv_q8(fa_cl_attention_desc *d) { d->k_type = d->v_type = FA_CL_STORAGE_Q8_0; }
static void shape_kv_q8_sync(fa_cl_attention_desc *d) /* rows whose bytes are not 4-aligned: loads, no copies */
{
    shape_kv_q8(d);
    d->k_offset = d->v_offset = 32;
}
static void shape_kv_q8_decode(fa_cl_attention_desc *d)
{
    decode_gqa(d);
    shape_kv_q8(d);
}
static void shape_kv_q8_paged(fa_cl_attention_desc *d)
{
    shape_kv_q8_decode(d);
    paged(d, 256);
}
static void shape_mixed(fa_cl_attention_desc *d) /* ggml's common case: q and o in f32, k and v in f16 */
{
    d->q_type = d->o_type = FA_CL_STORAGE_F32;
    d->k_type = d->v_type = FA_CL_STORAGE_F16;
}
static void shape_mixed_decode(fa_cl_attention_desc *d) /* the same decoding, GQA-packed */
{
    decode_gqa(d);
    shape_mixed(d);
}
static void shape_mixed_bf16(fa_cl_attention_desc *d) /* q in bf16, o in f32, k and v in bf16 */
{
    d->q_type = FA_CL_STORAGE_BF16;
    d->o_type = FA_CL_STORAGE_F32;
    d->k_type = d->v_type = FA_CL_STORAGE_BF16;
}
static void shape_mixed_q8(fa_cl_attention_desc *d) /* q and o in f32, k and v in q8_0 */
{
    d->q_type = d->o_type = FA_CL_STORAGE_F32;
    shape_kv_q8(d);
}
static void shape_mixed_q8_paged(fa_cl_attention_desc *d)
{
    shape_kv_q8_paged(d);
    d->q_type = d->o_type = FA_CL_STORAGE_F32;
}
static void shape_unaligned(fa_cl_attention_desc *d) { d->q_offset = d->k_offset = d->v_offset = d->o_offset = 1; }
static void shape_short(fa_cl_attention_desc *d) { d->seqlen_q = d->seqlen_k = 256; }
static void shape_rows16(fa_cl_attention_desc *d) { d->seqlen_q = 16; }
static void shape_rows32(fa_cl_attention_desc *d) { d->seqlen_q = 32; }
static void shape_decode(fa_cl_attention_desc *d) { d->seqlen_q = 1; }
static void shape_decode_gqa(fa_cl_attention_desc *d) { decode_gqa(d); }
/* d_v != d_qk: DeepSeek's 192 / 128 prefill */
static void shape_value_width(fa_cl_attention_desc *d) { d->head_dim_v = d->head_dim / 3 * 2; }
/* MLA's absorbed decode: every query head on one latent head of d_qk = 576 whose first 512 columns
 * are V (the same pool and strides), paged */
static void shape_mla_decode(fa_cl_attention_desc *d)
{
    d->seqlen_q = 1;
    d->heads_kv = 1;
    d->head_dim_v = d->head_dim - 64;
    paged(d, 64);
    const int64_t latent[3] = {64 * d->head_dim, 0, d->head_dim};
    memcpy(d->k_stride, latent, sizeof latent);
    memcpy(d->v_stride, latent, sizeof latent);
}
/* speculative decoding: 8 draft tokens through a tree mask, paged with lengths */
static void shape_tree_decode(fa_cl_attention_desc *d)
{
    decode_gqa(d);
    d->seqlen_q = 8;
    paged(d, 16);
    d->tree_mask = 1;
}
static void shape_gqa_prefill(fa_cl_attention_desc *d)
{
    d->heads_q = 32;
    d->heads_kv = 8;
    d->seqlen_q = d->seqlen_k = 256;
}
static void shape_paged_decode(fa_cl_attention_desc *d)
{
    decode_gqa(d);
    paged(d, 16);
}
static void shape_paged_append(fa_cl_attention_desc *d)
{
    shape_paged_decode(d);
    d->seqlen_new = 4;
}
static void shape_cache_append(fa_cl_attention_desc *d)
{
    decode_gqa(d);
    d->kv_seqlens = 1;
    d->seqlen_new = 4;
}
static void shape_kv_fp8(fa_cl_attention_desc *d) /* e4m3 K with a factor per tensor, e5m2 V without */
{
    d->k_type = FA_CL_STORAGE_E4M3;
    d->v_type = FA_CL_STORAGE_E5M2;
    d->k_descale = FA_CL_DESCALE_TENSOR;
}
static void shape_kv_fp8_paged_append(fa_cl_attention_desc *d) /* a paged fp8 cache appended to, factors per head */
{
    shape_paged_append(d);
    d->k_type = FA_CL_STORAGE_E5M2;
    d->v_type = FA_CL_STORAGE_E4M3;
    d->k_descale = d->v_descale = FA_CL_DESCALE_HEAD;
}
static void shape_seqlens(fa_cl_attention_desc *d) { d->kv_seqlens = 1; }
static void shape_chunked_prefill(fa_cl_attention_desc *d) /* varlen queries into a paged cache */
{
    d->seqlen_q = 512;
    d->total_q = d->batch * d->seqlen_q;
    paged(d, 16);
}
static void shape_varlen(fa_cl_attention_desc *d)
{
    d->total_q = d->batch * d->seqlen_q;
    d->total_k = d->batch * d->seqlen_k;
}
static void shape_varlen_decode(fa_cl_attention_desc *d) /* the combine kernel's FA_VARLEN_Q and FA_SINKS */
{
    decode_gqa(d);
    d->total_q = d->batch;
    d->sinks = 1;
}
/* the builds fa_cl_info emitted before cases existed: decoding with every serving option, either a
 * paged cache with lengths, appends, score modifiers and an f16 mask, or varlen keys with a
 * boolean mask and q8_0 K/V; FA_CL_TUNE splits=4 */
static void shape_serving_paged(fa_cl_attention_desc *d)
{
    shape_paged_append(d);
    d->total_q = d->batch;
    d->softcap = 30.0f;
    d->alibi = d->sinks = 1;
    mask_dense(d, FA_CL_MASK_F16);
}
static void shape_serving_varlen(fa_cl_attention_desc *d)
{
    decode_gqa(d);
    d->total_q = d->batch;
    d->total_k = d->batch * d->seqlen_k;
    mask_dense(d, FA_CL_MASK_BOOL);
    shape_kv_q8(d);
}
static void shape_long_rows(fa_cl_attention_desc *d) /* more keys than one accumulator sums: chunks */
{
    d->seqlen_k = 2 * fa_cl__chunk_keys(d->dtype); /* o in the dtype */
}

#define PLANS PASS_FORWARD | PASS_BACKWARD
#define NV "nvidia-h100"
/* the NVIDIA families' code emulated (tests on any device): nvidia-mma's, and all four */
#define EMULATE_MMA "FA_CL_TUNE=nvidia-mma:emulate=1,nvidia-mma-backward:emulate=1"
#define EMULATE_ALL EMULATE_MMA ",nvidia-tf32x3:emulate=1,nvidia-tf32x3-backward:emulate=1"

static const emit_case cases[] = {
    /* dense prefill: every family's plain build, forward and backward */
    {"dense", PLANS, {0}, NULL, "", NULL},
    {"small-dims", PLANS, {32, 40, 96, 0}, NULL, "", NULL},
    {"wide-dims", PLANS, {160, 192, 0}, NULL, "", NULL},
    {"padded-rows", PLANS, {59, 111, 0}, NULL, "", NULL},
    {"head-dim-512", PASS_FORWARD, {512, 0}, NULL, "", NULL},
    {"unaligned", PLANS, {0}, NULL, "", shape_unaligned},
    {"short-rows", PASS_FORWARD, {0}, NULL, "", shape_short},
    {"rows-16", PASS_FORWARD, {0}, NULL, "", shape_rows16},
    {"rows-32", PASS_FORWARD, {0}, NULL, "", shape_rows32},
    {"long-rows", PASS_FORWARD, {0}, NULL, "", shape_long_rows},
    /* attention masks */
    {"mask-f32", PASS_FORWARD, {0}, NULL, "", shape_mask_f32},
    {"mask-f16", PASS_FORWARD, {0}, NULL, "", shape_mask_f16},
    {"mask-bool", PASS_FORWARD, {0}, NULL, "", shape_mask_bool},
    {"mask-bf16", PASS_FORWARD, {0}, NULL, "", shape_mask_bf16},
    {"mask-broadcast", PASS_FORWARD, {0}, NULL, "", shape_mask_broadcast},
    {"mask-one-row", PASS_FORWARD, {0}, NULL, "", shape_mask_one_row},
    {"mask-even-offset", PASS_FORWARD, {0}, NULL, "", shape_mask_even},
    {"mask-odd-offset", PASS_FORWARD, {0}, NULL, "", shape_mask_odd},
    /* score modifiers */
    {"softcap", PASS_FORWARD, {0}, NULL, "", shape_softcap},
    {"alibi", PASS_FORWARD, {0}, NULL, "", shape_alibi},
    {"sinks", PASS_FORWARD, {0}, NULL, "", shape_sinks},
    {"modifiers-mask", PLANS, {0}, NULL, "", shape_mods_mask}, /* the backward's too (every family's) */
    {"mask-bool-backward", PASS_BACKWARD, {0}, NULL, "", shape_mask_bool},
    {"softcap-backward", PASS_BACKWARD, {0}, NULL, "", shape_softcap}, /* one modifier alone: its #if arms */
    {"sinks-backward", PASS_BACKWARD, {0}, NULL, "", shape_sinks},
    /* storage types */
    {"kv-q8", PASS_FORWARD, {0}, NULL, "", shape_kv_q8},
    {"kv-q8-loads", PASS_FORWARD, {0}, NULL, "", shape_kv_q8_sync},
    {"kv-q8-decode", PASS_FORWARD, {0}, NULL, "", shape_kv_q8_decode},
    {"kv-q8-paged", PASS_FORWARD, {0}, NULL, "", shape_kv_q8_paged},
    {"kv-fp8", PASS_FORWARD, {0}, NULL, "", shape_kv_fp8},
    {"kv-fp8-paged-append", PASS_FORWARD, {0}, NULL, "", shape_kv_fp8_paged_append},
    {"mixed-types", PASS_FORWARD, {0}, NULL, "", shape_mixed},
    {"mixed-types-decode", PASS_FORWARD, {0}, NULL, "", shape_mixed_decode},
    {"mixed-types-bf16", PASS_FORWARD, {0}, NULL, "", shape_mixed_bf16},
    {"mixed-types-q8", PASS_FORWARD, {0}, NULL, "", shape_mixed_q8},
    {"mixed-types-q8-paged", PASS_FORWARD, {0}, NULL, "", shape_mixed_q8_paged},
    /* serving */
    {"decode", PASS_FORWARD, {0}, NULL, "", shape_decode},
    {"decode-gqa", PASS_FORWARD, {0}, NULL, "", shape_decode_gqa},
    {"gqa-prefill", PLANS, {0}, NULL, "", shape_gqa_prefill},
    {"value-width", PASS_FORWARD, {192, 0}, NULL, "", shape_value_width},
    {"mla-decode", PASS_FORWARD, {576, 0}, NULL, "", shape_mla_decode},
    {"tree-decode", PASS_FORWARD, {0}, NULL, "", shape_tree_decode},
    {"paged-decode", PASS_FORWARD, {0}, NULL, "", shape_paged_decode},
    {"paged-append", PASS_FORWARD, {0}, NULL, "", shape_paged_append},
    {"cache-append", PASS_FORWARD, {0}, NULL, "", shape_cache_append},
    {"chunked-prefill", PASS_FORWARD, {0}, NULL, "", shape_chunked_prefill},
    {"varlen", PLANS, {0}, NULL, "", shape_varlen},
    {"varlen-decode-sinks", PASS_FORWARD, {0}, NULL, "", shape_varlen_decode},
    {"serving-paged", PASS_FORWARD, {128, 0}, NULL, "FA_CL_TUNE=splits=4", shape_serving_paged},
    {"serving-varlen", PASS_FORWARD, {128, 0}, NULL, "FA_CL_TUNE=splits=4", shape_serving_varlen},
    {"backward-seqlens", PASS_BACKWARD, {0}, NULL, "", shape_seqlens},
    /* settings a user (or a test) can choose: the NVIDIA experiment switches, the emulated PTX */
    {"env-kv-chunk", PLANS, {0}, NULL, "FA_CL_TUNE=kv_chunk=1024", NULL},
    {"env-gqa-pack", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=gqa_pack=1", shape_gqa_prefill},
    {"env-wgmma-off", PLANS, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:enabled=0,nvidia-wgmma-backward:enabled=0", NULL},
    {"env-wgmma-off-mask", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:enabled=0,nvidia-wgmma-backward:enabled=0", shape_mask_f16},
    {"env-mma-stages-3", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:enabled=0,nvidia-mma:stages=3", NULL},
    {"env-producer-off", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:producer=0", NULL},
    {"env-producer-off-mask", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:producer=0", shape_mask_f16},
    {"env-tma-off", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:tma=none", NULL},
    {"env-tma-mask-only", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:tma=mask", shape_mask_f16},
    {"env-tma-kv-only", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:tma=kv", shape_mask_f16},
    {"env-persistent-off", PASS_FORWARD, {0}, NV, "FA_CL_TUNE=nvidia-wgmma:persistent=0", NULL},
    {"env-tf32-off", PLANS, {0}, NV, "FA_CL_TUNE=nvidia-tf32x3:enabled=0,nvidia-tf32x3-backward:enabled=0", NULL},
    /* intel-xmx's intrinsics emulated (its tests on PoCL), at sub-group 16 (where none is known) and 8 */
    {"env-xmx-emulate", PLANS, {0}, "cpu-pocl", "FA_CL_TUNE=intel-xmx:emulate=1", NULL},
    {"env-xmx8-emulate-mask", PASS_FORWARD, {0}, "cpu-pocl", "FA_CL_TUNE=intel-xmx:emulate=1,intel-xmx:subgroup=8",
     shape_mask_f16},
    {"env-emulate", PLANS, {0}, "cpu-pocl", EMULATE_ALL, NULL},
    {"env-emulate-mask", PASS_FORWARD, {0}, "cpu-pocl", EMULATE_MMA, shape_mask_f16},
    {"env-emulate-kv-q8", PASS_FORWARD, {0}, "cpu-pocl", EMULATE_MMA, shape_kv_q8_decode},
    {"env-emulate-paged", PASS_FORWARD, {0}, "cpu-pocl", EMULATE_MMA, shape_paged_append},
    /* AMD's matrix instructions emulated (tests on any device) */
    {"env-emulate-amd-wmma", PASS_FORWARD, {0}, "cpu-pocl", "FA_CL_TUNE=amd-wmma:emulate=1", NULL},
    {"env-emulate-amd-mfma", PASS_FORWARD, {0}, "cpu-pocl", "FA_CL_TUNE=amd-mfma:emulate=1", shape_mask_f16},
};

/* The case's FA_CL_* settings for fa_cl__env_parse: "NAME=value" words of c->env. */
typedef struct case_env {
    const char *settings;
    char value[256];
} case_env;

static const char *case_lookup(void *data, const char *name)
{
    case_env *e = (case_env *)data;
    const size_t n = strlen(name);
    for (const char *p = e->settings; *p;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ' ');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            snprintf(e->value, sizeof e->value, "%.*s", (int)(end - p - (ptrdiff_t)n - 1), p + n + 1);
            return e->value;
        }
        p = end;
    }
    return NULL;
}

/* ---- the files ------------------------------------------------------------------------------- */

/* Write text to dir/name; 0 on success. */
static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "fa_cl_info: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "fa_cl_info: cannot write %s\n", path);
    return bad;
}

/* dir/<kernel>.cl: the family's files concatenated exactly as clCreateProgramWithSource gets them. */
static int emit_source(const char *dir, const fa_cl__kernel_family *f)
{
    size_t len = 0;
    for (int i = 0; i < f->nfiles; i++) {
        const char *s = fa_cl__embedded_text(f->files[i]);
        if (!s) {
            fprintf(stderr, "fa_cl_info: no embedded kernel source cl/%s\n", f->files[i]);
            return 1;
        }
        len += strlen(s);
    }
    char *text = (char *)malloc(len + 1);
    if (!text) {
        fprintf(stderr, "fa_cl_info: out of host memory\n");
        return 1;
    }
    text[0] = '\0';
    for (int i = 0; i < f->nfiles; i++)
        strcat(text, fa_cl__embedded_text(f->files[i]));
    char name[64];
    snprintf(name, sizeof name, "%s.cl", f->name);
    int rc = write_file(dir, name, text);
    free(text);
    return rc;
}

/* Where the rows go, and which families they use (those families' sources are written). */
typedef struct emit_out {
    FILE *builds, *unplanned;
    int used[32]; /* per registry entry */
    int rows;
} emit_out;

/* One build of a plan: its key (profile, case, head_dim, dtype, launch). Its row gives the program's
 * family, work-group and local memory, the exact clBuildProgram string (before FA_CL_BUILD_OPTIONS),
 * and the options and sm_90a flag fa_cl__program_get takes for it (scripts/nv_build_report.c). */
typedef struct emit_build {
    const fa_cl__device_profile *p;
    const emit_case *c;
    int head_dim;
    fa_cl_dtype dtype;
} emit_build;

static const char *launch_name(fa_cl__operation op)
{
    switch (op) {
    case FA_CL_OP_FORWARD: return "forward";
    case FA_CL_OP_COMBINE: return "combine";
    case FA_CL_OP_APPEND: return "append";
    case FA_CL_OP_BACKWARD: return "backward";
    case FA_CL_OP_PAD_ROWS: return "pad-rows";
    case FA_CL_OP_CHECK: return "check-serving";
    }
    return "?";
}

static int emit_row(emit_out *out, const emit_build *b, fa_cl__kernel_id variant, int work_group, size_t local_bytes,
                    size_t local_budget, const char *options)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(variant);
    char with_patch[700], full[1024];
    if (fa_cl__program_options(options, f->ptx_sm90a, with_patch, sizeof with_patch) < 0 ||
        fa_cl__full_build_options(with_patch, "", full, sizeof full) < 0) {
        fprintf(stderr, "fa_cl_info: build options too long\n");
        return 1;
    }
    for (int k = 0; k < fa_cl__kernel_count() && k < (int)COUNT_OF(out->used); k++)
        out->used[k] |= fa_cl__kernel_at(k) == f;
    const fa_cl__device_profile *p = b->p;
    fprintf(out->builds, "%s\t%s\t%s\t%s\t%d\t%s\tboth\t%d\t%zu\t%zu\t%s.cl\t%s\t%d\t%s\t%s\t%s\t%d\n", p->name,
            p->compiler ? p->compiler : "-", p->target ? p->target : "-", f->name, b->head_dim,
            fa_cl__dtype_name(b->dtype), work_group, local_bytes, local_budget, f->name, full, fa_cl__family_vendor(f), b->c->name,
            launch_name(f->op), options, f->ptx_sm90a);
    out->rows++;
    return 0;
}

/* A plan the library would refuse: its key and why (the check compares these too). */
static void emit_unplanned(emit_out *out, const emit_build *b, const char *launch, const char *msg)
{
    fprintf(out->unplanned, "%s\t%s\t%d\t%s\t%s\t%s\n", b->p->name, b->c->name, b->head_dim,
            fa_cl__dtype_name(b->dtype), launch, msg);
}

/* The plan of op for one descriptor: its main program, and (forward) the combine, pad-rows, append
 * and check-serving programs where the plan launches them (fa_cl__plan_make builds the same; the
 * tensor maps' entry is the forward program's). */
static int emit_plan(emit_out *out, const emit_build *b, const fa_cl__plan_device *dev, fa_cl__operation op,
                     const fa_cl__limits *limits, const fa_cl_attention_desc *desc)
{
    fa_cl__backward_views bv;
    char msg[512], opts[512];
    memset(&bv, 0, sizeof bv);
    const fa_cl_status resolved = op == FA_CL_OP_BACKWARD ? fa_cl__backward_resolve(desc, &bv, msg, sizeof msg)
                                                          : fa_cl__desc_resolve(desc, &bv.fwd, msg, sizeof msg);
    if (resolved != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_info: case %s, head_dim %d: %s\n", b->c->name, b->head_dim, msg);
        return 1; /* the case table is wrong */
    }
    const fa_cl__views *v = &bv.fwd;
    const int pack = fa_cl__plan_pack(dev, op, v);
    fa_cl__limits lim = *limits;
    fa_cl__tile_request req;
    fa_cl__tiles t;
    fa_cl_status st = fa_cl__plan_request(dev, op, &bv, pack, &lim, &req, msg, sizeof msg);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__plan_decide(dev, op, &bv, pack, &lim, &req, &t, msg, sizeof msg);
    if (st != FA_CL_SUCCESS) {
        /* e.g. 32 KiB devices at head_dim 256: the backward is refused there (UNSUPPORTED) */
        emit_unplanned(out, b, op == FA_CL_OP_BACKWARD ? "backward" : "forward", msg);
        return 0;
    }
    if (fa_cl__plan_options(&t, v, dev->is_gpu, opts, sizeof opts) < 0 ||
        emit_row(out, b, t.variant, t.work_group_size, t.local_mem_bytes, t.local_mem_budget, opts))
        return 1;
    static const fa_cl__kernel_id aux[4] = {FA_CL_KERNEL_COMBINE, FA_CL_KERNEL_PAD_ROWS, FA_CL_KERNEL_APPEND,
                                           FA_CL_KERNEL_CHECK_SERVING};
    const int launched[4] = {t.splits > 1, t.rows_padded, v->d.seqlen_new > 0, v->d.kv_seqlens || v->d.page_size > 0};
    for (int a = 0; a < 4 && op == FA_CL_OP_FORWARD; a++) {
        if (!launched[a])
            continue;
        fa_cl__tiles at = t;
        at.variant = aux[a];
        if (fa_cl__plan_options(&at, v, dev->is_gpu, opts, sizeof opts) < 0 ||
            emit_row(out, b, aux[a], fa_cl__kernel_by_id(aux[a])->work_group, 0, t.local_mem_budget, opts))
            return 1;
    }
    return 0;
}

static int emit_case_plans(emit_out *out, const fa_cl__device_profile *p, const emit_case *c)
{
    case_env ce = {c->env, ""};
    fa_cl__env env;
    char msg[512];
    if (fa_cl__settings_parse(&env, case_lookup, &ce, msg, sizeof msg) != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_info: case %s: %s\n", c->name, msg);
        return 1;
    }
    fa_cl__limits lim;
    fa_cl__profile_limits(p, &lim);
    fa_cl__env_limits(&env, 0, &lim);
    const fa_cl__plan_device dev = {p->traits.is_gpu, p->compute_units, EMIT_MAX_ALLOC, &env};
    static const int default_dims[] = {64, 128, 256, 0};
    const int *dims = c->dims[0] ? c->dims : default_dims;
    for (int h = 0; dims[h]; h++) {
        for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
            fa_cl_attention_desc desc;
            fa_cl_attention_desc_init(&desc, EMIT_BATCH, EMIT_HEADS, EMIT_SEQLEN, EMIT_SEQLEN, dims[h], dtypes[d]);
            if (c->shape)
                c->shape(&desc);
            const emit_build b = {p, c, dims[h], dtypes[d]};
            if ((c->passes & PASS_FORWARD) && emit_plan(out, &b, &dev, FA_CL_OP_FORWARD, &lim, &desc))
                return 1;
            if ((c->passes & PASS_BACKWARD) && emit_plan(out, &b, &dev, FA_CL_OP_BACKWARD, &lim, &desc))
                return 1;
        }
    }
    return 0;
}

static FILE *open_in(const char *dir, const char *name, const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        fprintf(stderr, "fa_cl_info: cannot write %s: %s\n", path, strerror(errno));
    else
        fputs(header, f);
    return f;
}

int fa_cl_info_emit(const char *which, const char *dir)
{
    emit_out out;
    memset(&out, 0, sizeof out);
    out.builds = open_in(dir, "builds.tsv",
                         "profile\tcompiler\ttarget\tvariant\thead_dim\tdtype\tcausal\twork_group\tlocal_bytes\t"
                         "local_budget\tsource\toptions\tvendor_only\tcase\tlaunch\tprogram_options\tsm90a\n");
    out.unplanned = open_in(dir, "unplanned.tsv", "profile\tcase\thead_dim\tdtype\tlaunch\treason\n");
    int rc = !out.builds || !out.unplanned, n = 0;
    for (int i = 0; i < fa_cl__profile_count() && rc == 0; i++) {
        const fa_cl__device_profile *p = fa_cl__profile_get(i);
        if (strcmp(which, "all") != 0 && strcmp(which, p->name) != 0)
            continue;
        n++;
        for (size_t c = 0; c < COUNT_OF(cases) && rc == 0; c++)
            if (!cases[c].profile || strcmp(cases[c].profile, p->name) == 0)
                rc = emit_case_plans(&out, p, &cases[c]);
    }
    if (out.builds && fclose(out.builds) != 0)
        rc = 1;
    if (out.unplanned && fclose(out.unplanned) != 0)
        rc = 1;
    for (int k = 0; k < fa_cl__kernel_count() && k < (int)COUNT_OF(out.used) && rc == 0; k++)
        if (out.used[k])
            rc = emit_source(dir, fa_cl__kernel_at(k));
    if (rc == 0)
        printf("fa_cl_info: %d profile%s, %zu cases: %d builds in %s/builds.tsv\n", n, n == 1 ? "" : "s",
               COUNT_OF(cases), out.rows, dir);
    return rc;
}
