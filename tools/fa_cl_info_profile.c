/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_info --profile: the planner's choices for a named device profile (src/devices/profiles.c), with no
 * OpenCL device or platform needed (--emit: fa_cl_info_emit.c).
 */
#include "fa_cl_info_profile.h"

#include "kernels/portable_tiled.h" /* the tiled kernel's TM and head_dim limit, printed */
#include "plan/planner.h"          /* the planner, the registry, the device profiles, dtype names */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Long enough that no plan is clamped by the sequence (as fa_cl_info's device table). */
#define PLAN_SEQLEN 4096

/* The plan table's rows. */
static const int table_head_dims[] = {32, 64, 80, 96, 128, 256, 512};
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
    const fa_cl__tile_request any = {128, FA_CL_F16, PLAN_SEQLEN, PLAN_SEQLEN, 1, 0};
    for (int k = 0, n = 0; k < fa_cl__kernel_count(); k++)
        if (fa_cl__kernel_at(k)->applies(&lim, &any))
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
            fa_cl__tile_request req = {table_head_dims[h], table_dtypes[d], PLAN_SEQLEN, PLAN_SEQLEN, table_head_dims[h] % 8 == 0, 0};
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
