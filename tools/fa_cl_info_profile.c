/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_info --profile: the planner's choices for a named device profile (src/devices/profiles.c), with no
 * OpenCL device or platform needed (--emit: fa_cl_info_emit.c).
 */
#include "fa_cl_info_profile.h"

#include "kernels/portable_tiled.h" /* the tiled kernel's TM and head_dim limit, printed */
#include "plan/plan.h"             /* the planner, the registry, the device profiles, FA_CL_TUNE's keys */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Long enough that no plan is clamped by the sequence (as fa_cl_info's device table). */
#define PLAN_SEQLEN 4096

/* The plan table's rows. */
static const int table_head_dims[] = {32, 64, 80, 96, 128, 192, 256, 512};
static const fa_cl_dtype table_dtypes[] = {FA_CL_F32, FA_CL_F16}; /* as fa_cl_info's device table */

static const char *vendor_name(fa_cl__vendor v)
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
    for (int i = 0; i < fa_cl__profile_count(); i++) {
        const fa_cl__device_profile *p = fa_cl__profile_get(i);
        char target[64] = "none";
        if (p->compiler)
            snprintf(target, sizeof target, "%s:%s", p->compiler, p->target);
        printf("%-16s %-7s %12zu %8zu %6u %8d  %-16s %s\n", p->name, vendor_name(p->traits.vendor),
               p->traits.local_mem_size, p->traits.max_work_group, p->compute_units, p->preferred_multiple, target,
               p->description);
    }
}

static void print_profile(const fa_cl__device_profile *p)
{
    fa_cl__limits lim;
    fa_cl__profile_limits(p, &lim);
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
    char why[300];
    for (int k = 0, n = 0; k < fa_cl__kernel_count(); k++)
        if (fa_cl__family_walked(fa_cl__kernel_at(k)) && fa_cl__family_available(&lim, fa_cl__kernel_at(k), why, sizeof why))
            printf("%s%s", n++ ? ", " : "", fa_cl__kernel_at(k)->name);
    printf(",\n    registers a work-item holds without spilling: ");
    if (lim.private_floats > 0)
        printf("%d floats\n", lim.private_floats);
    else
        printf("unknown (the measured defaults: TM = %d, tiled up to head_dim %d)\n", FA_CL_TILED_TM,
               FA_CL_TILED_MAX_DIM);
    printf("    head_dim dtype  B_r  B_c rows/item keys/item WG size  local bytes/budget  kernel\n");
    for (size_t h = 0; h < COUNT_OF(table_head_dims); h++) {
        for (size_t d = 0; d < COUNT_OF(table_dtypes); d++) {
            fa_cl__tile_request req;
            memset(&req, 0, sizeof req);
            req.head_dim = table_head_dims[h];
            req.dtype = table_dtypes[d];
            req.seqlen_q = req.seqlen_k = PLAN_SEQLEN;
            req.aligned16 = table_head_dims[h] % 8 == 0;
            fa_cl__tiles t;
            char msg[512];
            printf("    %8d %-5s ", req.head_dim, fa_cl__dtype_name(req.dtype));
            if (fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS) {
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

int fa_cl_info_profile(const char *name, const char *emit_dir)
{
    int all = strcmp(name, "all") == 0;
    if (strcmp(name, "list") == 0) {
        list_profiles();
        return 0;
    }
    if (!all && !fa_cl__profile_find(name)) {
        fprintf(stderr, "fa_cl_info: no profile '%s'; these exist:\n", name);
        list_profiles();
        return 2;
    }
    if (emit_dir)
        return fa_cl_info_emit(name, emit_dir);
    for (int i = 0; i < fa_cl__profile_count(); i++) {
        const fa_cl__device_profile *p = fa_cl__profile_get(i);
        if (all || strcmp(p->name, name) == 0) {
            print_profile(p);
            if (all && i + 1 < fa_cl__profile_count())
                printf("\n");
        }
    }
    return 0;
}

/* The walked families of op taking (per which: 0 a feature, 1 a dtype, 2 a mask type) bit. */
static void print_takers(const char *label, int which, unsigned bit)
{
    printf("  %-60s ", label);
    int n = 0;
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        const unsigned have = which == 0 ? f->takes.features : which == 1 ? f->takes.dtypes : f->takes.masks;
        if (fa_cl__family_walked(f) && (have & bit))
            printf("%s%s", n++ ? ", " : "", f->name);
    }
    printf("%s\n", n ? "" : "(none)");
}

void fa_cl_info_features(void)
{
    printf("Kernel families by feature (each family's registry data, src/kernels/; the planner tries them in\n"
           "this order and takes the first whose device needs are met, that takes the plan and whose tiles fit):\n");
    static const char *const dtype_names[3] = {"f32", "f16", "bf16"};
    char label[96];
    for (int t = 0; t < 3; t++) {
        snprintf(label, sizeof label, "%s data", dtype_names[t]);
        print_takers(label, 1, 1u << t);
    }
    for (int b = 0; b < FA_CL_FEAT_COUNT; b++)
        print_takers(fa_cl__feature_name(1u << b), 0, 1u << b);
    static const struct {
        fa_cl_mask_type type;
        const char *name;
    } masks[] = {{FA_CL_MASK_F32, "f32"}, {FA_CL_MASK_F16, "f16"}, {FA_CL_MASK_BF16, "bf16"}, {FA_CL_MASK_BOOL, "bool"}};
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        snprintf(label, sizeof label, "an attention mask of %s entries (desc.mask)", masks[m].name);
        print_takers(label, 2, 1u << masks[m].type);
    }
    printf("  %-60s ", "head_dim up to");
    for (int i = 0, n = 0; i < fa_cl__kernel_count(); i++)
        if (fa_cl__family_walked(fa_cl__kernel_at(i)))
            printf("%s%s %d", n++ ? ", " : "", fa_cl__kernel_at(i)->name, fa_cl__kernel_at(i)->takes.max_head_dim);
    printf("\n  Devices:\n");
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        if (!fa_cl__family_walked(f))
            continue;
        const fa_cl__needs *nd = &f->needs;
        printf("    %-26s %s", f->name,
               nd->device == FA_CL_NEEDS_GPU ? "GPUs" : nd->device == FA_CL_PREFERS_GPU ? "GPUs (forced: any device)"
               : nd->device == FA_CL_PREFERS_CPU ? "CPUs (forced: any device)"
               : fa_cl__family_vendor(f) ? "" : "any device");
        if (fa_cl__family_vendor(f)) {
            printf("%s GPUs", fa_cl__vendor_name(nd->vendor));
            if (nd->arch_min && nd->arch_min == nd->arch_max)
                printf(" of architecture %d.%d", nd->arch_min / 10, nd->arch_min % 10);
            else if (nd->arch_min)
                printf(" of architecture %d.%d or later", nd->arch_min / 10, nd->arch_min % 10);
            if (nd->extension)
                printf(" with %s", nd->extension);
            if (fa_cl__tune_key_index(f, "emulate") >= 0)
                printf("; any device with its emulate=1 (tests)");
        }
        printf("\n");
    }
}

void fa_cl_info_tune(void)
{
    char line[1024];
    const fa_cl__tune_key *keys;
    const int n = fa_cl__planner_tune_keys(&keys);
    printf("### The planner (items before any `family:`)\n\n");
    for (int k = 0; k < n; k++) {
        fa_cl__tune_key_line(NULL, &keys[k], line, sizeof line);
        printf("%s\n", line);
    }
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        if (!f->ntune)
            continue;
        printf("\n### %s\n\n", f->name);
        for (int k = 0; k < f->ntune; k++) {
            fa_cl__tune_key_line(f->name, &f->tune[k], line, sizeof line);
            printf("%s\n", line);
        }
    }
}
