/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_info --profile: the planner's choices for a named device profile (src/plan/profiles.c), with no
 * OpenCL device or platform needed, and --emit: the kernel sources and the exact build options the
 * library would pass for each plan, for the offline compile checks (scripts/offline_compile.sh).
 */
#include "fa_cl_info_profile.h"

#include "fa_cl_internal.h" /* build options, embedded kernel sources, dtype names */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Long enough that no plan is clamped by the sequence (as fa_cl_info's device table). */
#define PLAN_SEQLEN 4096

/* The plan table's rows, and the offline build matrix. */
static const int table_head_dims[] = {32, 64, 80, 96, 128, 256, 512};
static const int emit_head_dims[] = {64, 128, 256};
static const fa_cl_dtype table_dtypes[] = {FA_CL_F32, FA_CL_F16}; /* as fa_cl_info's device table */
static const fa_cl_dtype dtypes[] = {FA_CL_F32, FA_CL_F16, FA_CL_BF16};

static const char *vendor_name(fa_cl_vendor v)
{
    switch (v) {
    case FA_CL_VENDOR_NVIDIA: return "nvidia";
    case FA_CL_VENDOR_AMD: return "amd";
    case FA_CL_VENDOR_INTEL: return "intel";
    case FA_CL_VENDOR_OTHER: break;
    }
    return "other";
}

static void list_profiles(void)
{
    printf("%-16s %-7s %12s %8s %6s %8s  %-16s %s\n", "profile", "vendor", "local bytes", "max WG", "CUs",
           "multiple", "offline target", "device");
    for (int i = 0; i < fa_cl_profile_count(); i++) {
        const fa_cl_device_profile *p = fa_cl_profile_get(i);
        char target[64] = "none";
        if (p->compiler)
            snprintf(target, sizeof target, "%s:%s", p->compiler, p->target);
        printf("%-16s %-7s %12zu %8zu %6u %8d  %-16s %s\n", p->name, vendor_name(p->traits.vendor),
               p->traits.local_mem_size, p->traits.max_work_group, p->compute_units, p->preferred_multiple, target,
               p->description);
    }
}

static void print_profile(const fa_cl_device_profile *p)
{
    fa_cl_limits lim;
    fa_cl_profile_limits(p, &lim);
    printf("Profile %s: %s\n", p->name, p->description);
    printf("  %-24s %s\n", "Source", p->source);
    printf("  %-24s %s, vendor %s\n", "Device type", p->traits.is_gpu ? "GPU" : "CPU", vendor_name(p->traits.vendor));
    printf("  %-24s %zu, type %s\n", "Local memory", p->traits.local_mem_size,
           p->traits.local_mem_is_global ? "global" : "local");
    printf("  %-24s %zu\n", "Max work-group size", p->traits.max_work_group);
    printf("  %-24s %u\n", "Compute units", p->compute_units);
    printf("  %-24s %d\n", "Preferred multiple", p->preferred_multiple);
    printf("  %-24s %s\n", "Extensions", p->extensions[0] ? p->extensions : "(none that matter)");
    if (p->compiler)
        printf("  %-24s %s, target %s\n", "Offline compiler", p->compiler, p->target);
    else
        printf("  %-24s none here (the generic SPIR check still compiles its plans)\n", "Offline compiler");
    printf("  Planner limits: local memory %zu bytes (%s), max work-group %zu, kernels tried: ", lim.local_mem_size,
           lim.local_mem_source ? lim.local_mem_source : "device local memory", lim.max_work_group);
    const fa_cl_tile_request any = {128, FA_CL_F16, PLAN_SEQLEN, PLAN_SEQLEN, 1, 0};
    for (int k = 0, n = 0; k < fa_cl_kernel_count(); k++)
        if (fa_cl_kernel_at(k)->applies(&lim, &any))
            printf("%s%s", n++ ? ", " : "", fa_cl_kernel_at(k)->name);
    printf(",\n    registers a work-item holds without spilling: ");
    if (lim.private_floats > 0)
        printf("%d floats\n", lim.private_floats);
    else
        printf("unknown (the measured defaults: TM = %d, tiled up to head_dim %d)\n", FA_CL_TILED_TM,
               FA_CL_TILED_MAX_DIM);
    printf("    head_dim dtype  B_r  B_c rows/item keys/item WG size  local bytes/budget  kernel\n");
    for (size_t h = 0; h < COUNT_OF(table_head_dims); h++) {
        for (size_t d = 0; d < COUNT_OF(table_dtypes); d++) {
            fa_cl_tile_request req = {table_head_dims[h], table_dtypes[d], PLAN_SEQLEN, PLAN_SEQLEN, table_head_dims[h] % 8 == 0, 0};
            fa_cl_tiles t;
            char msg[512];
            printf("    %8d %-5s ", req.head_dim, fa_cl__dtype_name(req.dtype));
            if (fa_cl_plan_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS) {
                printf("error: %s\n", msg);
                continue;
            }
            char used[48];
            snprintf(used, sizeof used, "%zu / %zu", t.local_mem_bytes, t.local_mem_budget);
            printf("%4d %4d %9d %9d %7d %19s  %s\n", t.block_q, t.block_kv, t.rows_per_item, t.cols_per_item,
                   t.work_group_size, used, t.kernel);
        }
    }
}

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
static int emit_source(const char *dir, const fa_cl_kernel_family *f)
{
    const char *const *files = f->files;
    const int n = f->nfiles;
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const char *s = fa_cl__embedded_text(files[i]);
        if (!s) {
            fprintf(stderr, "fa_cl_info: no embedded kernel source cl/%s\n", files[i]);
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
    for (int i = 0; i < n; i++)
        strcat(text, fa_cl__embedded_text(files[i]));
    char name[64];
    snprintf(name, sizeof name, "%s.cl", f->name);
    int rc = write_file(dir, name, text);
    free(text);
    return rc;
}

/* One row of builds.tsv; marks the row's kernel family used (its source is emitted). */
static void emit_row(FILE *tsv, const fa_cl_device_profile *p, const fa_cl_tiles *t, int head_dim, fa_cl_dtype dtype,
                     const char *options, int *used)
{
    for (int k = 0; k < fa_cl_kernel_count(); k++)
        used[k] |= fa_cl_kernel_at(k)->id == t->variant;
    fprintf(tsv, "%s\t%s\t%s\t%s\t%d\t%s\tboth\t%d\t%zu\t%zu\t%s.cl\t%s\t%d\n", p->name,
            p->compiler ? p->compiler : "-", p->target ? p->target : "-", t->kernel, head_dim,
            fa_cl__dtype_name(dtype), t->work_group_size, t->local_mem_bytes, t->local_mem_budget, t->kernel, options,
            fa_cl_kernel_by_id(t->variant)->vendor);
}

/*
 * One line per build of builds.tsv. Causal masks and windows are kernel arguments (win_left,
 * win_right, reverse_blocks), not build options: fa_cl_tile_request has no mask field, so one
 * build serves causal and non-causal calls alike ("both").
 */
static int emit_profile(FILE *tsv, const fa_cl_device_profile *p, int *used)
{
    fa_cl_limits lim;
    fa_cl_profile_limits(p, &lim);
    for (size_t h = 0; h < COUNT_OF(emit_head_dims); h++) {
        for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
            fa_cl_tile_request req = {emit_head_dims[h], dtypes[d], PLAN_SEQLEN, PLAN_SEQLEN, emit_head_dims[h] % 8 == 0, 0};
            fa_cl_tiles t;
            char msg[512], opts[512], full[1024];
            if (fa_cl_plan_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS) {
                fprintf(stderr, "fa_cl_info: profile %s, head_dim %d: %s\n", p->name, req.head_dim, msg);
                return 1;
            }
            if (fa_cl_build_options(&t, req.dtype, req.head_dim, p->traits.is_gpu, opts, sizeof opts) < 0 ||
                fa_cl_full_build_options(opts, "", full, sizeof full) < 0) {
                fprintf(stderr, "fa_cl_info: build options too long\n");
                return 1;
            }
            emit_row(tsv, p, &t, req.head_dim, req.dtype, full, used);
        }
    }
    /* the backward's program (its three kernels) at each head_dim and dtype */
    for (size_t h = 0; h < COUNT_OF(emit_head_dims); h++) {
        for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
            fa_cl_tile_request req = {emit_head_dims[h], dtypes[d], PLAN_SEQLEN, PLAN_SEQLEN, 1, 0};
            fa_cl_tiles t;
            char msg[512], opts[512], full[1024];
            if (fa_cl_plan_backward_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS)
                continue; /* 32 KiB devices at head_dim 256: the backward is refused there (UNSUPPORTED) */
            if (fa_cl_build_options(&t, req.dtype, req.head_dim, p->traits.is_gpu, opts, sizeof opts) < 0 ||
                fa_cl_full_build_options(opts, "", full, sizeof full) < 0)
                return 1;
            emit_row(tsv, p, &t, req.head_dim, req.dtype, full, used);
        }
    }
    /* the serving builds at head_dim 128 (every -D a serving plan can get, the planner's decode
     * tiles: a few GQA-packed rows), and the split-KV combine and the append kernels */
    for (size_t d = 0; d < COUNT_OF(dtypes); d++) {
        fa_cl_tile_request req = {128, dtypes[d], 4, PLAN_SEQLEN, 1, 0};
        fa_cl_tiles t;
        char msg[512], opts[512], full[1024];
        if (fa_cl_plan_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS) {
            fprintf(stderr, "fa_cl_info: profile %s, decode tiles: %s\n", p->name, msg);
            return 1;
        }
        t.chunk_keys = 0;
        t.splits = 4;
        t.packed = 1;
        t.varlen_q = 1;
        for (int kv = 0; kv < 2; kv++) { /* a paged cache with lengths and appends, or varlen keys */
            t.seqlens = kv == 0;
            t.paged = kv == 0 ? 16 : 0; /* vLLM's page size */
            /* and every score modifier, where the kernel takes them (not the tensor-core ones yet) */
            t.softcap = t.alibi = t.sinks = kv == 0 && !fa_cl_kernel_by_id(t.variant)->vendor;
            /* and a mask (every kernel but nvidia-tf32x3): f16 (bf16 with bf16 data) with the cache,
             * boolean with varlen keys */
            t.mask = t.variant == FA_CL_KERNEL_NVIDIA_TF32X3 ? FA_CL_MASK_NONE
                     : kv == 1                              ? FA_CL_MASK_BOOL
                     : dtypes[d] == FA_CL_BF16              ? FA_CL_MASK_BF16
                                                            : FA_CL_MASK_F16;
            /* and (varlen keys, portable kernels) K and V in q8_0 blocks */
            t.types[1] = t.types[2] = kv == 1 && !fa_cl_kernel_by_id(t.variant)->vendor ? 1 + FA_CL_TYPE_Q8_0 : 0;
            t.append_rows = kv == 0 ? 4 : 0;
            t.varlen_k = kv == 1;
            if (fa_cl_build_options(&t, req.dtype, req.head_dim, p->traits.is_gpu, opts, sizeof opts) < 0 ||
                fa_cl_full_build_options(opts, "", full, sizeof full) < 0)
                return 1;
            emit_row(tsv, p, &t, req.head_dim, req.dtype, full, used);
        }
        /* the other launches' programs, with the options src/plan/plan.c gives them */
        const fa_cl_kernel_family *aux[3] = {&fa_cl_kernel_combine, &fa_cl_kernel_append, &fa_cl_kernel_check_serving};
        const char *aux_opts[2] = {" -DFA_VARLEN_Q", " -DFA_PAGED" FA_CL_STATUS_OPTIONS};
        const int aux_wg[3] = {FA_CL_COMBINE_WG, FA_CL_APPEND_WG, FA_CL_CHECK_WG};
        for (int a = 0; a < 3; a++) {
            fa_cl_tiles at = t;
            at.variant = aux[a]->id;
            at.kernel = aux[a]->name;
            at.work_group_size = aux_wg[a];
            at.local_mem_bytes = 0;
            if (a < 2)
                snprintf(opts, sizeof opts, "-DFA_DTYPE=%d -DHEAD_DIM=128%s", (int)req.dtype, aux_opts[a]);
            else
                snprintf(opts, sizeof opts, "%s", FA_CL_STATUS_OPTIONS + 1);
            if (fa_cl_full_build_options(opts, "", full, sizeof full) < 0)
                return 1;
            emit_row(tsv, p, &at, req.head_dim, req.dtype, full, used);
        }
    }
    return 0;
}

static int emit(const char *which, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/builds.tsv", dir);
    FILE *tsv = fopen(path, "wb");
    if (!tsv) {
        fprintf(stderr, "fa_cl_info: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(tsv, "profile\tcompiler\ttarget\tvariant\thead_dim\tdtype\tcausal\twork_group\tlocal_bytes\t"
                 "local_budget\tsource\toptions\tvendor_only\n");
    int rc = 0, n = 0, used[16] = {0}; /* per registry entry: some build uses it */
    for (int i = 0; i < fa_cl_profile_count() && rc == 0; i++) {
        const fa_cl_device_profile *p = fa_cl_profile_get(i);
        if (strcmp(which, "all") == 0 || strcmp(which, p->name) == 0) {
            rc = emit_profile(tsv, p, used);
            n++;
        }
    }
    if (fclose(tsv) != 0)
        rc = 1;
    for (int k = 0; k < fa_cl_kernel_count() && rc == 0; k++)
        if (used[k])
            rc = emit_source(dir, fa_cl_kernel_at(k));
    if (rc == 0)
        printf("fa_cl_info: %d profile%s: builds in %s\n", n, n == 1 ? "" : "s", path);
    return rc;
}

int fa_cl_info_profile(const char *name, const char *emit_dir)
{
    int all = strcmp(name, "all") == 0;
    if (strcmp(name, "list") == 0) {
        list_profiles();
        return 0;
    }
    if (!all && !fa_cl_profile_find(name)) {
        fprintf(stderr, "fa_cl_info: no profile '%s'; these exist:\n", name);
        list_profiles();
        return 2;
    }
    if (emit_dir)
        return emit(name, emit_dir);
    for (int i = 0; i < fa_cl_profile_count(); i++) {
        const fa_cl_device_profile *p = fa_cl_profile_get(i);
        if (all || strcmp(p->name, name) == 0) {
            print_profile(p);
            if (all && i + 1 < fa_cl_profile_count())
                printf("\n");
        }
    }
    return 0;
}
