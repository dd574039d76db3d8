/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_info: every OpenCL platform and device with the properties fa_cl cares about, and the tiles
 * the planner would choose on each. Modelled on clinfo: device properties are a table of
 * (query, label, key, formatter), a failed query is printed in its row and the listing goes on,
 * human output by default and --json for machines.
 *
 * Exit status: 0 listed, 1 no platform or no such device, 2 bad usage.
 */
#include "fa_cl_info_profile.h"
#include "plan/plan.h" /* planner, environment parsing, device query, CL error names */
#include "json.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))


/* Long enough that nothing in the plan table is clamped by the sequence. */
#define PLAN_SEQLEN 4096

/* ==== property values and formatters ========================================================== */

typedef enum value_kind { V_TEXT, V_COUNT, V_BYTES, V_ERROR, V_ABSENT } value_kind;

/* One queried property, rendered later as a human row or a JSON member. */
typedef struct value {
    value_kind kind;
    cl_ulong num;   /* V_COUNT, V_BYTES */
    cl_int err;     /* V_ERROR */
    char text[512]; /* V_TEXT (truncated with "...") */
} value;

typedef void (*formatter)(cl_device_id dev, cl_device_info param, value *out);

static void set_error(value *out, cl_int err)
{
    out->kind = V_ERROR;
    out->err = err;
}

static void set_text(value *out, const char *s)
{
    out->kind = V_TEXT;
    snprintf(out->text, sizeof out->text, "%s", s);
}

/* Drivers pad some strings with spaces (Intel names, NVIDIA versions); strip them in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\0'))
        s[--n] = '\0';
    return s;
}

/* A device string of any length, heap-allocated (the caller frees), or NULL with *err set. */
static char *device_string(cl_device_id dev, cl_device_info param, cl_int *err)
{
    size_t need = 0;
    *err = clGetDeviceInfo(dev, param, 0, NULL, &need);
    if (*err != CL_SUCCESS)
        return NULL;
    char *buf = (char *)calloc(need + 1, 1);
    if (!buf) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    *err = clGetDeviceInfo(dev, param, need, buf, NULL);
    if (*err != CL_SUCCESS) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void fmt_string(cl_device_id dev, cl_device_info param, value *out)
{
    cl_int err;
    char *s = device_string(dev, param, &err);
    if (!s) {
        set_error(out, err);
        return;
    }
    const char *t = trim(s);
    set_text(out, t);
    if (strlen(t) >= sizeof out->text)
        memcpy(out->text + sizeof out->text - 4, "...", 4);
    free(s);
}

/* Scalar query; on failure records the error in out and returns 0. */
static int query_scalar(cl_device_id dev, cl_device_info param, void *buf, size_t size, value *out)
{
    cl_int err = clGetDeviceInfo(dev, param, size, buf, NULL);
    if (err != CL_SUCCESS) {
        set_error(out, err);
        return 0;
    }
    return 1;
}

static void fmt_uint(cl_device_id dev, cl_device_info param, value *out)
{
    cl_uint v = 0;
    if (query_scalar(dev, param, &v, sizeof v, out)) {
        out->kind = V_COUNT;
        out->num = v;
    }
}

static void fmt_size(cl_device_id dev, cl_device_info param, value *out)
{
    size_t v = 0;
    if (query_scalar(dev, param, &v, sizeof v, out)) {
        out->kind = V_COUNT;
        out->num = (cl_ulong)v;
    }
}

static void fmt_bytes(cl_device_id dev, cl_device_info param, value *out)
{
    cl_ulong v = 0;
    if (query_scalar(dev, param, &v, sizeof v, out)) {
        out->kind = V_BYTES;
        out->num = v;
    }
}

static void fmt_device_type(cl_device_id dev, cl_device_info param, value *out)
{
    static const struct { cl_device_type bit; const char *name; } names[] = {
        {CL_DEVICE_TYPE_CPU, "CPU"}, {CL_DEVICE_TYPE_GPU, "GPU"}, {CL_DEVICE_TYPE_ACCELERATOR, "accelerator"},
        {CL_DEVICE_TYPE_CUSTOM, "custom"}, {CL_DEVICE_TYPE_DEFAULT, "default"},
    };
    cl_device_type t = 0;
    if (!query_scalar(dev, param, &t, sizeof t, out))
        return;
    char buf[128] = "";
    for (size_t i = 0; i < COUNT_OF(names); i++) {
        if (t & names[i].bit) {
            if (buf[0])
                strcat(buf, ", ");
            strcat(buf, names[i].name);
        }
    }
    set_text(out, buf[0] ? buf : "unknown");
}

static void fmt_local_mem_type(cl_device_id dev, cl_device_info param, value *out)
{
    cl_device_local_mem_type t = 0;
    if (!query_scalar(dev, param, &t, sizeof t, out))
        return;
    /* "global" means local memory is ordinary (cached) memory: CPUs, some embedded GPUs. */
    set_text(out, t == CL_LOCAL ? "local" : t == CL_GLOBAL ? "global" : "none");
}

/* cl_nv_device_attribute_query's queries (the Khronos headers may lack them). */
#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#endif

/* cl_nv_device_attribute_query: MAJOR is param, MINOR the next enum. */
static void fmt_nv_compute_capability(cl_device_id dev, cl_device_info param, value *out)
{
    cl_uint major = 0, minor = 0;
    if (!query_scalar(dev, param, &major, sizeof major, out) ||
        !query_scalar(dev, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, &minor, sizeof minor, out))
        return;
    char buf[32];
    snprintf(buf, sizeof buf, "%u.%u", major, minor);
    set_text(out, buf);
}

/* ==== the tables: adding a property or an extension is one line ============================== */

typedef struct device_prop {
    cl_device_info param;
    const char *label;     /* human output */
    const char *key;       /* JSON member */
    formatter fmt;
    const char *needs_ext; /* only queried when the device has this extension */
} device_prop;

static const device_prop device_props[] = {
    {CL_DEVICE_NAME, "Name", "name", fmt_string, NULL},
    {CL_DEVICE_VENDOR, "Vendor", "vendor", fmt_string, NULL},
    {CL_DRIVER_VERSION, "Driver version", "driver_version", fmt_string, NULL},
    {CL_DEVICE_VERSION, "OpenCL version", "opencl_version", fmt_string, NULL},
    {CL_DEVICE_OPENCL_C_VERSION, "OpenCL C version", "opencl_c_version", fmt_string, NULL},
    {CL_DEVICE_TYPE, "Device type", "type", fmt_device_type, NULL},
    {CL_DEVICE_MAX_COMPUTE_UNITS, "Compute units", "compute_units", fmt_uint, NULL},
    {CL_DEVICE_MAX_WORK_GROUP_SIZE, "Max work-group size", "max_work_group_size", fmt_size, NULL},
    {CL_DEVICE_LOCAL_MEM_SIZE, "Local memory size", "local_mem_size", fmt_bytes, NULL},
    {CL_DEVICE_LOCAL_MEM_TYPE, "Local memory type", "local_mem_type", fmt_local_mem_type, NULL},
    {CL_DEVICE_GLOBAL_MEM_SIZE, "Global memory", "global_mem_size", fmt_bytes, NULL},
    {CL_DEVICE_MAX_MEM_ALLOC_SIZE, "Max allocation", "max_alloc_size", fmt_bytes, NULL},
    {CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, "Global cache size", "global_cache_size", fmt_bytes, NULL},
    {CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, "NVIDIA compute capability", "nv_compute_capability",
     fmt_nv_compute_capability, "cl_nv_device_attribute_query"},
};
#define N_PROPS COUNT_OF(device_props)

/* Extensions shown as yes/no: the ones a kernel variant or the planner could use. */
static const char *const extensions[] = {
    "cl_khr_fp16",
    "cl_khr_fp64",
    "cl_khr_subgroups",
    "cl_khr_subgroup_shuffle",
    "cl_intel_subgroups",
    "cl_intel_required_subgroup_size",
    "cl_nv_device_attribute_query",
    "cl_amd_device_attribute_query",
    "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics",
};
#define N_EXTS COUNT_OF(extensions)

typedef struct platform_prop {
    cl_platform_info param;
    const char *label, *key;
} platform_prop;

static const platform_prop platform_props[] = {
    {CL_PLATFORM_NAME, "Name", "name"},
    {CL_PLATFORM_VENDOR, "Vendor", "vendor"},
    {CL_PLATFORM_VERSION, "Version", "version"},
};
#define N_PLATFORM_PROPS COUNT_OF(platform_props)

/* The plan table's rows: head_dim x storage type. */
static const int plan_head_dims[] = {32, 64, 80, 96, 128, 192, 256, 512};
static const fa_cl_dtype plan_dtypes[] = {FA_CL_F32, FA_CL_F16};
#define N_PLANS (COUNT_OF(plan_head_dims) * COUNT_OF(plan_dtypes))

/* ==== what one run collects ==================================================================== */

typedef struct plan_row {
    int head_dim;
    fa_cl_dtype dtype;
    fa_cl_status status;
    fa_cl__tiles tiles;
    char msg[512]; /* the planner's message when status != FA_CL_SUCCESS */
} plan_row;

/* The decode table's rows (serving: split-KV and GQA packing), 32 query heads on 8 kv heads, one
 * query row, d = 128, f16: batch and cache length. */
static const int64_t decode_shapes[][2] = {{1, 131072}, {16, 8192}, {64, 4096}};
#define N_DECODE COUNT_OF(decode_shapes)

typedef struct decode_row {
    int64_t batch, seqlen_k;
    fa_cl_status status;
    fa_cl__tiles tiles;
    int pack;           /* query heads a work-group takes */
    int64_t splits;     /* split-KV chunks */
    uint64_t scratch;   /* the partial results' bytes (a plan refuses to split past the largest allocation) */
    char msg[256];
} decode_row;

/* feature rows of the plans (feature_rows below) */
#define N_FEATURES 4

typedef struct device_report {
    int p, d;
    int is_default;
    value props[N_PROPS];
    cl_int ext_err; /* CL_SUCCESS when the extension string was read */
    int ext_has[N_EXTS];
    /* plans: planned is 0 when they were not asked for or could not be computed (plans_error says why) */
    int planned;
    char plans_error[FA_CL_ERROR_CAPACITY];
    fa_cl__limits limits;
    plan_row plans[N_PLANS];
    decode_row decode[N_DECODE];
    /* prefill plans (head_dim 128, f16, N 4096) with a feature that not every kernel takes: score
     * modifiers, an attention mask, K/V in another storage type, the backward (feature_rows) */
    fa_cl__tiles feat_tiles[N_FEATURES];
    fa_cl_status feat_status[N_FEATURES];
    char feat_msg[N_FEATURES][256];
    char notes[FA_CL_NOTES_CAPACITY]; /* fa_cl_context_notes of a context on the device (program cache) */
} device_report;

typedef struct platform_report {
    int p;
    value props[N_PLATFORM_PROPS];
    cl_int devices_err;
    cl_uint num_devices;
} platform_report;

typedef struct options {
    int json, plans;
    int want_p, want_d;     /* -1: every device */
    const char *profile;    /* --profile: plan for a named profile instead of the devices */
    const char *emit_dir;   /* --emit: with --profile, write sources and build options there */
    int kernels;            /* --kernels: the kernel registry, no OpenCL */
    int features;           /* --features: which families take each feature, no OpenCL */
    int tune;               /* --tune: every FA_CL_TUNE key, no OpenCL */
} options;

/* The FA_CL_* environment, read once (the library reads it the same way per context). */
typedef struct env_state {
    fa_cl_status status;
    fa_cl__env env;
    char error[512];
} env_state;

/* ==== collecting ============================================================================== */

static void collect_extensions(cl_device_id dev, device_report *r)
{
    char *list = device_string(dev, CL_DEVICE_EXTENSIONS, &r->ext_err);
    if (!list)
        return;
    for (size_t i = 0; i < N_EXTS; i++)
        r->ext_has[i] = fa_cl__has_extension(list, extensions[i]);
    free(list);
}

static int device_has_extension(const device_report *r, const char *ext)
{
    for (size_t i = 0; i < N_EXTS; i++)
        if (strcmp(extensions[i], ext) == 0)
            return r->ext_err == CL_SUCCESS && r->ext_has[i];
    return 0;
}

/* An fa_cl context on one device, so that the planner gets exactly the limits a user's context
 * would (fa_cl__context_limits: device properties plus FA_CL_LOCAL_MEM_BYTES / FA_CL_TUNE), with
 * no copy of that logic here to drift. NULL with the library's message in why on failure. */
static fa_cl_context *context_on(cl_platform_id plat, cl_device_id dev, char *why, size_t size)
{
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_int err = CL_SUCCESS;
    cl_context clctx = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (!clctx) {
        snprintf(why, size, "clCreateContext: %s (%d)", fa_cl__cl_error_name(err), (int)err);
        return NULL;
    }
    cl_command_queue q = clCreateCommandQueue(clctx, dev, 0, &err);
    if (!q) {
        snprintf(why, size, "clCreateCommandQueue: %s (%d)", fa_cl__cl_error_name(err), (int)err);
        clReleaseContext(clctx);
        return NULL;
    }
    fa_cl_context *ctx = NULL;
    if (fa_cl_context_create(clctx, dev, q, &ctx) != FA_CL_SUCCESS)
        snprintf(why, size, "%s", fa_cl_last_error(NULL));
    clReleaseCommandQueue(q); /* the fa_cl context holds its own references */
    clReleaseContext(clctx);
    return ctx;
}

/* A request of the planner's (src/kernels/family.h): the shape, no feature. */
static fa_cl__tile_request request(fa_cl__operation op, int head_dim, fa_cl_dtype dtype, int64_t seqlen_q,
                                   int64_t seqlen_k, int aligned16, int64_t row_keys)
{
    fa_cl__tile_request r;
    memset(&r, 0, sizeof r);
    r.op = op;
    r.head_dim = head_dim;
    r.dtype = dtype;
    r.seqlen_q = seqlen_q;
    r.seqlen_k = seqlen_k;
    r.aligned16 = aligned16;
    r.row_keys = row_keys;
    return r;
}

/* The library's notes (where the program cache is, or why it is off) and, if asked, the plan table. */
/* The decode rows: the planner's GQA packing, tiles and split count for the device's compute units
 * (two work-groups each on GPUs), as fa_cl_plan_create decides them (src/plan/plan.c). */
static void collect_decode(const fa_cl_context *ctx, device_report *r)
{
    const int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    const int slots = (int)ctx->props.compute_units * (gpu ? 2 : 1);
    for (size_t i = 0; i < N_DECODE; i++) {
        decode_row *row = &r->decode[i];
        row->batch = decode_shapes[i][0];
        row->seqlen_k = decode_shapes[i][1];
        row->pack = fa_cl__gqa_pack(4, 1, ctx->env.gqa_pack);
        const fa_cl__tile_request req = request(FA_CL_OP_FORWARD, 128, FA_CL_F16, row->pack, row->seqlen_k, 1, 0);
        row->status = fa_cl__plan_tiles(&r->limits, &req, &row->tiles, row->msg, sizeof row->msg);
        if (row->status != FA_CL_SUCCESS)
            continue;
        row->splits = fa_cl__split_count(&row->tiles, row->batch, 32 / row->pack, row->pack, row->seqlen_k,
                                         row->seqlen_k, slots, ctx->env.splits);
        row->scratch = row->splits > 1 ? (uint64_t)row->splits * (uint64_t)row->batch * 32u * (128u + 1u) * 4u : 0;
    }
    /* with each feature: the family that takes it (the walk of src/plan/planner.c, on the families'
     * data); then the backward's key-block tiles */
    for (int f = 0; f < N_FEATURES; f++) {
        fa_cl__tile_request req = request(f == 3 ? FA_CL_OP_BACKWARD : FA_CL_OP_FORWARD, 128, FA_CL_F16, 4096, 4096,
                                          1, 0);
        req.features = f == 0 ? FA_CL_FEAT_MODIFIERS : f == 2 ? FA_CL_FEAT_QO_TYPES : 0;
        req.mask = f == 1 ? FA_CL_MASK_F16 : FA_CL_MASK_NONE;
        r->feat_status[f] = fa_cl__plan_tiles(&r->limits, &req, &r->feat_tiles[f], r->feat_msg[f],
                                              sizeof r->feat_msg[f]);
    }
}

/* the features of device_report.feat_*: the table's label and the JSON key */
static const char *const feature_rows[N_FEATURES][2] = {
    {"Score modifiers (softcap, ALiBi, sinks)", "modifiers"},
    {"Attention mask (desc.mask)", "mask"},
    {"K/V in another storage type (f16 with f32 q, q8_0)", "storage"},
    {"The backward (dQ, dK, dV)", "backward"},
};

static void collect_context(cl_platform_id plat, cl_device_id dev, int plans, device_report *r)
{
    fa_cl_context *ctx = context_on(plat, dev, r->plans_error, sizeof r->plans_error);
    if (!ctx) {
        snprintf(r->notes, sizeof r->notes, "(no fa_cl context: %.3000s)\n", r->plans_error);
        return;
    }
    snprintf(r->notes, sizeof r->notes, "%s", fa_cl_context_notes(ctx));
    fa_cl__context_limits(ctx, &r->limits);
    if (!plans) {
        fa_cl_context_release(ctx);
        snprintf(r->plans_error, sizeof r->plans_error, "not computed (--no-plans)");
        return;
    }
    /* the limits point into the context (its tuning values, the device's extensions): planned
     * before it goes */
    collect_decode(ctx, r);
    size_t i = 0;
    for (size_t h = 0; h < COUNT_OF(plan_head_dims); h++) {
        for (size_t t = 0; t < COUNT_OF(plan_dtypes); t++, i++) {
            plan_row *row = &r->plans[i];
            row->head_dim = plan_head_dims[h];
            row->dtype = plan_dtypes[t];
            /* contiguous tensors: 16-byte rows whenever head_dim is a multiple of 8 */
            const fa_cl__tile_request req =
                request(FA_CL_OP_FORWARD, row->head_dim, row->dtype, PLAN_SEQLEN, PLAN_SEQLEN, row->head_dim % 8 == 0, 0);
            row->status = fa_cl__plan_tiles(&r->limits, &req, &row->tiles, row->msg, sizeof row->msg);
        }
    }
    fa_cl_context_release(ctx);
    r->limits.tune = NULL;
    r->limits.dev.extensions = NULL;
    r->planned = 1;
}

static void collect_device(cl_platform_id plat, cl_device_id dev, int p, int d, cl_device_id default_dev,
                           const options *o, device_report *r)
{
    memset(r, 0, sizeof *r);
    r->p = p;
    r->d = d;
    r->is_default = (default_dev != NULL && dev == default_dev);
    collect_extensions(dev, r);
    for (size_t i = 0; i < N_PROPS; i++) {
        const device_prop *dp = &device_props[i];
        if (dp->needs_ext && !device_has_extension(r, dp->needs_ext))
            r->props[i].kind = V_ABSENT;
        else
            dp->fmt(dev, dp->param, &r->props[i]);
    }
    collect_context(plat, dev, o->plans, r);
}

static void collect_platform(cl_platform_id plat, int p, platform_report *r)
{
    memset(r, 0, sizeof *r);
    r->p = p;
    for (size_t i = 0; i < N_PLATFORM_PROPS; i++) {
        value *v = &r->props[i];
        char buf[1024] = "";
        cl_int err = clGetPlatformInfo(plat, platform_props[i].param, sizeof buf - 1, buf, NULL);
        if (err != CL_SUCCESS)
            set_error(v, err);
        else
            set_text(v, trim(buf));
    }
}

/* ==== human output ============================================================================ */

/* "65536 (64 KiB)": exact bytes for scripts that grep, a unit for people. */
static void format_bytes(char *buf, size_t size, cl_ulong v)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    int u = -1;
    cl_ulong scale = 1;
    while (u + 1 < (int)COUNT_OF(units) && v >= scale * 1024) {
        scale *= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, size, "%llu", (unsigned long long)v);
    else if (v % scale == 0)
        snprintf(buf, size, "%llu (%llu %s)", (unsigned long long)v, (unsigned long long)(v / scale), units[u]);
    else
        snprintf(buf, size, "%llu (%.1f %s)", (unsigned long long)v, (double)v / (double)scale, units[u]);
}

static void format_value(char *buf, size_t size, const value *v)
{
    switch (v->kind) {
    case V_TEXT: snprintf(buf, size, "%s", v->text); break;
    case V_COUNT: snprintf(buf, size, "%llu", (unsigned long long)v->num); break;
    case V_BYTES: format_bytes(buf, size, v->num); break;
    case V_ERROR: snprintf(buf, size, "<error: %s (%d)>", fa_cl__cl_error_name(v->err), (int)v->err); break;
    case V_ABSENT: snprintf(buf, size, "n/a"); break;
    }
}

static void human_row(const char *indent, const char *label, const value *v)
{
    char buf[600];
    format_value(buf, sizeof buf, v);
    printf("%s%-28s %s\n", indent, label, buf);
}

static void human_env(const env_state *env)
{
    static const char *const names[] = {"FA_CL_DEVICE", "FA_CL_LOCAL_MEM_BYTES", "FA_CL_TUNE", "FA_CL_KERNEL_DIR",
                                        "FA_CL_BUILD_OPTIONS", "FA_CL_KERNEL_VARIANT", "FA_CL_CACHE_DIR"};
    int any = 0;
    printf("Environment:");
    for (size_t i = 0; i < COUNT_OF(names); i++) {
        const char *s = getenv(names[i]);
        if (s && *s) {
            printf(" %s=%s", names[i], s);
            any = 1;
        }
    }
    printf("%s\n", any ? "" : " no FA_CL_* variables set");
    if (env->status != FA_CL_SUCCESS)
        printf("  error: %s (fa_cl_context_create would fail)\n", env->error);
}

static void human_platform(const platform_report *r)
{
    printf("\nPlatform %d: %s\n", r->p, r->props[0].kind == V_TEXT ? r->props[0].text : "?");
    for (size_t i = 1; i < N_PLATFORM_PROPS; i++)
        human_row("  ", platform_props[i].label, &r->props[i]);
    if (r->devices_err == CL_DEVICE_NOT_FOUND)
        printf("  %-28s 0 (CL_DEVICE_NOT_FOUND)\n", "Devices");
    else if (r->devices_err != CL_SUCCESS)
        printf("  %-28s <error: %s (%d)>\n", "Devices", fa_cl__cl_error_name(r->devices_err), (int)r->devices_err);
    else
        printf("  %-28s %u\n", "Devices", r->num_devices);
}

static void human_plan_row(const plan_row *row)
{
    printf("      %8d %-5s ", row->head_dim, fa_cl__dtype_name(row->dtype));
    if (row->status != FA_CL_SUCCESS) {
        printf("error %s: %s\n", fa_cl_status_string(row->status), row->msg);
        return;
    }
    const fa_cl__tiles *t = &row->tiles;
    char used[48];
    snprintf(used, sizeof used, "%zu / %zu", t->local_mem_bytes, t->local_mem_budget);
    printf("%4d %4d %9d %7d %19s  %-14s %s%s\n", t->block_q, t->block_kv, t->rows_per_item, t->work_group_size, used,
           t->kernel, t->budget_source, t->forced ? " (FA_CL_TUNE tile=)" : "");
}

static void human_plans(const device_report *r)
{
    if (!r->planned) {
        printf("    Plans: %s\n", r->plans_error);
        return;
    }
    const fa_cl__limits *l = &r->limits;
    printf("    Plans: the planner's choice before compilation (seqlen %d); fa_cl_plan_create re-plans if the\n"
           "    compiled kernel reports fewer work-items or more local memory than planned.\n",
           PLAN_SEQLEN);
    printf("    Planner limits: local memory %zu bytes (%s), max work-group %zu", l->local_mem_size,
           l->local_mem_is_global ? "type global" : "type local", l->max_work_group);
    if (l->private_floats > 0)
        printf(", %d registers a work-item", l->private_floats);
    if (l->local_mem_cap)
        printf(", FA_CL_LOCAL_MEM_BYTES %zu", l->local_mem_cap);
    if (l->forced_q > 0)
        printf(", FA_CL_TUNE tile=%dx%d", l->forced_q, l->forced_kv);
    printf("\n      head_dim dtype  B_r  B_c rows/item WG size  local bytes/budget  kernel         budget source\n");
    for (size_t i = 0; i < N_PLANS; i++)
        human_plan_row(&r->plans[i]);
    printf("    Decode plans (32 query heads on 8 kv heads, one query row, head_dim 128, f16):\n"
           "             B       Sk  B_r  B_c  kernel          GQA pack  splits  scratch bytes\n");
    for (size_t i = 0; i < N_DECODE; i++) {
        const decode_row *d = &r->decode[i];
        if (d->status != FA_CL_SUCCESS)
            printf("      %8lld %8lld error %s: %s\n", (long long)d->batch, (long long)d->seqlen_k,
                   fa_cl_status_string(d->status), d->msg);
        else
            printf("      %8lld %8lld %4d %4d  %-14s %9d %7lld %14llu\n", (long long)d->batch, (long long)d->seqlen_k,
                   d->tiles.block_q, d->tiles.block_kv, d->tiles.kernel, d->pack, (long long)d->splits,
                   (unsigned long long)d->scratch);
    }
    printf("    Plans with a feature not every kernel takes (head_dim 128, f16, N 4096):\n");
    for (int f = 0; f < N_FEATURES; f++) {
        if (r->feat_status[f] == FA_CL_SUCCESS)
            printf("      %-52s %s %dx%d\n", feature_rows[f][0], r->feat_tiles[f].kernel, r->feat_tiles[f].block_q,
                   r->feat_tiles[f].block_kv);
        else
            printf("      %-52s error %s: %s\n", feature_rows[f][0], fa_cl_status_string(r->feat_status[f]),
                   r->feat_msg[f]);
    }
}

static void human_device(const device_report *r)
{
    const value *name = &r->props[0]; /* CL_DEVICE_NAME heads the table */
    printf("\n  Device %d:%d: %s%s\n", r->p, r->d, name->kind == V_TEXT ? name->text : "?",
           r->is_default ? "  [default device]" : "");
    for (size_t i = 0; i < N_PROPS; i++)
        if (r->props[i].kind != V_ABSENT)
            human_row("    ", device_props[i].label, &r->props[i]);
    if (r->ext_err != CL_SUCCESS) {
        printf("    %-28s <error: %s (%d)>\n", "Extensions", fa_cl__cl_error_name(r->ext_err), (int)r->ext_err);
    } else {
        printf("    Extensions\n");
        for (size_t i = 0; i < N_EXTS; i++)
            printf("      %-34s %s\n", extensions[i], r->ext_has[i] ? "yes" : "no");
    }
    printf("    Notes\n");
    for (const char *p = r->notes; *p;) {
        const char *end = strchr(p, '\n');
        int len = end ? (int)(end - p) : (int)strlen(p);
        printf("      %.*s\n", len, p);
        p += len + (end != NULL);
    }
    human_plans(r);
}

/* ==== JSON output ============================================================================= */

/* A small streaming writer: it tracks commas and indentation so callers only name members. */
typedef struct json {
    FILE *f;
    int depth;
    int first[16]; /* no member written yet at this depth */
} json;

static void json_indent(json *w)
{
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

/* Comma, newline and indent before a member (key != NULL) or an array element (key == NULL). */
static void json_key(json *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth])
            fputc(',', w->f);
        w->first[w->depth] = 0;
        json_indent(w);
    }
    if (key) {
        json_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void json_open(json *w, const char *key, char brace)
{
    json_key(w, key);
    fputc(brace, w->f);
    if (w->depth + 1 < (int)COUNT_OF(w->first))
        w->depth++;
    w->first[w->depth] = 1;
}

static void json_close(json *w, char brace)
{
    int empty = w->first[w->depth];
    w->depth--;
    if (!empty)
        json_indent(w);
    fputc(brace, w->f);
}

static void json_str(json *w, const char *key, const char *s)
{
    json_key(w, key);
    if (s)
        json_string(w->f, s);
    else
        fputs("null", w->f);
}

static void json_num(json *w, const char *key, unsigned long long v)
{
    json_key(w, key);
    fprintf(w->f, "%llu", v);
}

static void json_int(json *w, const char *key, long long v)
{
    json_key(w, key);
    fprintf(w->f, "%lld", v);
}

static void json_bool(json *w, const char *key, int v)
{
    json_key(w, key);
    fputs(v ? "true" : "false", w->f);
}

/* Numbers stay numbers; a failed query is {"error": "CL_..."}; a property that does not apply is null. */
static void json_value(json *w, const char *key, const value *v)
{
    switch (v->kind) {
    case V_TEXT: json_str(w, key, v->text); break;
    case V_COUNT:
    case V_BYTES: json_num(w, key, v->num); break;
    case V_ABSENT: json_str(w, key, NULL); break;
    case V_ERROR:
        json_open(w, key, '{');
        json_str(w, "error", fa_cl__cl_error_name(v->err));
        json_int(w, "code", (long long)v->err);
        json_close(w, '}');
        break;
    }
}

static void json_env(json *w, const env_state *env)
{
    static const char *const names[] = {"FA_CL_DEVICE", "FA_CL_LOCAL_MEM_BYTES", "FA_CL_TUNE", "FA_CL_KERNEL_DIR",
                                        "FA_CL_BUILD_OPTIONS", "FA_CL_KERNEL_VARIANT", "FA_CL_CACHE_DIR"};
    json_open(w, "environment", '{');
    for (size_t i = 0; i < COUNT_OF(names); i++) {
        const char *s = getenv(names[i]);
        json_str(w, names[i], s && *s ? s : NULL);
    }
    json_str(w, "error", env->status == FA_CL_SUCCESS ? NULL : env->error);
    json_close(w, '}');
}

static void json_plan_row(json *w, const plan_row *row)
{
    const fa_cl__tiles *t = &row->tiles;
    json_open(w, NULL, '{');
    json_num(w, "head_dim", (unsigned long long)row->head_dim);
    json_str(w, "dtype", fa_cl__dtype_name(row->dtype));
    if (row->status != FA_CL_SUCCESS) {
        json_str(w, "status", fa_cl_status_string(row->status));
        json_str(w, "error", row->msg);
    } else {
        json_num(w, "block_q", (unsigned long long)t->block_q);
        json_num(w, "block_kv", (unsigned long long)t->block_kv);
        json_num(w, "rows_per_item", (unsigned long long)t->rows_per_item);
        json_num(w, "work_group_size", (unsigned long long)t->work_group_size);
        json_num(w, "head_dim_padded", (unsigned long long)t->head_dim_padded);
        json_num(w, "local_mem_bytes", t->local_mem_bytes);
        json_num(w, "local_mem_budget", t->local_mem_budget);
        json_str(w, "budget_source", t->budget_source);
        json_bool(w, "forced", t->forced);
        json_str(w, "kernel", t->kernel);
        json_str(w, "error", NULL);
    }
    json_close(w, '}');
}

static void json_plans(json *w, const device_report *r)
{
    json_open(w, "plans", '{');
    json_str(w, "note", "the planner's choice before compilation; fa_cl_plan_create re-plans if the compiled "
                        "kernel reports fewer work-items or more local memory");
    json_num(w, "seqlen", PLAN_SEQLEN);
    json_str(w, "error", r->planned ? NULL : r->plans_error);
    if (r->planned) {
        const fa_cl__limits *l = &r->limits;
        json_open(w, "limits", '{');
        json_num(w, "local_mem_size", l->local_mem_size);
        json_bool(w, "local_mem_is_global", l->local_mem_is_global);
        json_num(w, "max_work_group", l->max_work_group);
        json_num(w, "local_mem_cap", l->local_mem_cap);
        json_num(w, "private_floats", (unsigned long long)l->private_floats);
        char tile[64];
        snprintf(tile, sizeof tile, "%dx%d", l->forced_q, l->forced_kv);
        json_str(w, "forced_tile", l->forced_q > 0 ? tile : NULL);
        json_close(w, '}');
        json_open(w, "rows", '[');
        for (size_t i = 0; i < N_PLANS; i++)
            json_plan_row(w, &r->plans[i]);
        json_close(w, ']');
        json_open(w, "decode", '[');
        for (size_t i = 0; i < N_DECODE; i++) {
            const decode_row *d = &r->decode[i];
            json_open(w, NULL, '{');
            json_num(w, "batch", (unsigned long long)d->batch);
            json_num(w, "heads_q", 32);
            json_num(w, "heads_kv", 8);
            json_num(w, "seqlen_q", 1);
            json_num(w, "seqlen_k", (unsigned long long)d->seqlen_k);
            json_num(w, "head_dim", 128);
            json_str(w, "error", d->status == FA_CL_SUCCESS ? NULL : d->msg);
            json_str(w, "kernel", d->status == FA_CL_SUCCESS ? d->tiles.kernel : NULL);
            json_num(w, "block_q", (unsigned long long)d->tiles.block_q);
            json_num(w, "block_kv", (unsigned long long)d->tiles.block_kv);
            json_num(w, "gqa_pack", (unsigned long long)d->pack);
            json_num(w, "splits", (unsigned long long)d->splits);
            json_num(w, "scratch_bytes", (unsigned long long)d->scratch);
            json_close(w, '}');
        }
        json_close(w, ']');
        /* plans with a score modifier, a mask, K/V in another type, the backward (head_dim 128, f16) */
        for (int f = 0; f < N_FEATURES; f++) {
            const int ok = r->feat_status[f] == FA_CL_SUCCESS;
            json_open(w, feature_rows[f][1], '{');
            json_str(w, "error", ok ? NULL : r->feat_msg[f]);
            json_str(w, "kernel", ok ? r->feat_tiles[f].kernel : NULL);
            json_num(w, "block_q", (unsigned long long)r->feat_tiles[f].block_q);
            json_num(w, "block_kv", (unsigned long long)r->feat_tiles[f].block_kv);
            json_close(w, '}');
        }
    }
    json_close(w, '}');
}

static void json_device(json *w, const device_report *r)
{
    char id[32];
    snprintf(id, sizeof id, "%d:%d", r->p, r->d);
    json_open(w, NULL, '{');
    json_str(w, "id", id);
    json_bool(w, "default", r->is_default);
    for (size_t i = 0; i < N_PROPS; i++)
        json_value(w, device_props[i].key, &r->props[i]);
    if (r->ext_err != CL_SUCCESS) {
        value v = {.kind = V_ERROR, .err = r->ext_err};
        json_value(w, "extensions", &v);
    } else {
        json_open(w, "extensions", '{');
        for (size_t i = 0; i < N_EXTS; i++)
            json_bool(w, extensions[i], r->ext_has[i]);
        json_close(w, '}');
    }
    json_str(w, "notes", r->notes);
    json_plans(w, r);
    json_close(w, '}');
}

static void json_platform_begin(json *w, const platform_report *r)
{
    json_open(w, NULL, '{');
    json_num(w, "index", (unsigned long long)r->p);
    for (size_t i = 0; i < N_PLATFORM_PROPS; i++)
        json_value(w, platform_props[i].key, &r->props[i]);
    json_str(w, "devices_error", r->devices_err == CL_SUCCESS ? NULL : fa_cl__cl_error_name(r->devices_err));
    json_open(w, "devices", '[');
}

static void json_platform_end(json *w)
{
    json_close(w, ']');
    json_close(w, '}');
}

/* ==== no platform: why, and what to install ==================================================== */

/* The library's text (fa_cl__no_platform_message): on stderr, and as JSON on stdout with --json. */
static int report_no_platform(cl_int err, cl_uint count, const options *o)
{
    char msg[2048];
    fa_cl__no_platform_message(err, count, msg, sizeof msg - 1);
    strcat(msg, "\n");
    fprintf(stderr, "fa_cl_info: %s", msg);
    if (o->json) {
        json w = {stdout, 0, {1}};
        json_open(&w, NULL, '{');
        json_str(&w, "error", msg);
        json_str(&w, "cl_error", err != CL_SUCCESS ? fa_cl__cl_error_name(err) : NULL);
        json_open(&w, "platforms", '[');
        json_close(&w, ']');
        json_close(&w, '}');
        fputc('\n', stdout);
    }
    return 1;
}

/* ==== options ================================================================================= */

static void usage(FILE *f)
{
    fprintf(f, "usage: fa_cl_info [--device p:d] [--json] [--no-plans]\n"
               "       fa_cl_info --profile NAME|all|list [--emit DIR]\n"
               "       fa_cl_info --help | --version\n"
               "List OpenCL platforms and devices with the properties fa_cl uses, and the tiles its\n"
               "planner chooses on each device for head_dim 32..512 (f32, f16).\n"
               "Options with a value take '--opt VALUE' or '--opt=VALUE'.\n"
               "  -d, --device p:d   only platform p, device d (the numbering FA_CL_DEVICE uses)\n"
               "  --json             machine-readable output\n"
               "  --no-plans         skip the plan table\n"
               "  --profile NAME     no device: the plan table for a named device profile ('list' names them,\n"
               "                     'all' plans every one)\n"
               "  --emit DIR         with --profile: write the kernel source and exact build options of every\n"
               "                     program the plans of representative descriptors build (DIR/builds.tsv;\n"
               "                     tools/fa_cl_info_emit.c's cases x head_dims x f32, f16, bf16)\n"
               "  --kernels          the kernel registry in the order the planner tries it: name, vendor-only\n"
               "                     (0/1), operation, entry point, cl/ files (tab-separated; scripts read it)\n"
               "  --features         which kernel families take each feature, dtype and mask type, and what\n"
               "                     device each needs (the families' own data; no OpenCL)\n"
               "  --tune             every FA_CL_TUNE key: the planner's and each family's (docs/tuning.md)\n"
               "  --version          the tool and library version\n"
               "  -h, --help         this text\n"
               "Honours FA_CL_LOCAL_MEM_BYTES and FA_CL_TUNE in the device plan table, as the library does;\n"
               "profiles are planned as the library would with no FA_CL_* variable set.\n"
               "Exit status: 0 listed; 1 no platform or no such device; 2 bad usage.\n");
}

/* "p:d" with two non-negative decimal indices. */
static int parse_device(const char *s, int *p, int *d)
{
    char *end = NULL;
    errno = 0;
    long lp = strtol(s, &end, 10);
    if (errno || end == s || *end != ':' || lp < 0 || lp > 1000000 || s[0] == '-' || s[0] == '+')
        return 0;
    const char *t = end + 1;
    long ld = strtol(t, &end, 10);
    if (errno || end == t || *end || ld < 0 || ld > 1000000 || t[0] == '-' || t[0] == '+')
        return 0;
    *p = (int)lp;
    *d = (int)ld;
    return 1;
}

/* values >= 256, so that optopt after an error tells a long option from a short one */
enum {
    OPT_DEVICE = 256, OPT_JSON, OPT_NO_PLANS, OPT_PROFILE, OPT_EMIT, OPT_KERNELS, OPT_FEATURES, OPT_TUNE, OPT_VERSION,
    OPT_HELP
};

static const struct option long_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-plans", no_argument, NULL, OPT_NO_PLANS},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"emit", required_argument, NULL, OPT_EMIT},
    {"kernels", no_argument, NULL, OPT_KERNELS},
    {"features", no_argument, NULL, OPT_FEATURES},
    {"tune", no_argument, NULL, OPT_TUNE},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* 0: run; 1: --help or --version printed; 2: usage error (already reported). */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.json = 0, .plans = 1, .want_p = -1, .want_d = -1, .profile = NULL, .emit_dir = NULL, .kernels = 0};
    opterr = 0; /* our messages: getopt's would start with the full path of argv[0] */
    for (;;) {
        int c = getopt_long(argc, argv, "+:d:h", long_options, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'h':
        case OPT_HELP:
            usage(stdout);
            return 1;
        case OPT_VERSION:
            printf("fa_cl_info (fa_cl %s)\n", fa_cl_version());
            return 1;
        case OPT_JSON: o->json = 1; break;
        case OPT_NO_PLANS: o->plans = 0; break;
        case OPT_PROFILE: o->profile = optarg; break;
        case OPT_EMIT: o->emit_dir = optarg; break;
        case OPT_KERNELS: o->kernels = 1; break;
        case OPT_FEATURES: o->features = 1; break;
        case OPT_TUNE: o->tune = 1; break;
        case 'd':
        case OPT_DEVICE:
            if (!parse_device(optarg, &o->want_p, &o->want_d)) {
                fprintf(stderr, "fa_cl_info: --device wants p:d (two indices, e.g. 0:1), got '%s'\n", optarg);
                return 2;
            }
            break;
        /* getopt_long's errors: optopt is the short option, a long option's value (>= 256), or 0 */
        case ':':
            if (optopt > 0 && optopt < 256)
                fprintf(stderr, "fa_cl_info: -%c needs a value\n", optopt);
            else
                fprintf(stderr, "fa_cl_info: %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            if (optopt >= 256)
                fprintf(stderr, "fa_cl_info: '%s': that option takes no value\n", argv[optind - 1]);
            else if (optopt)
                fprintf(stderr, "fa_cl_info: unknown option '-%c'\n", optopt);
            else /* an unknown long option, or an abbreviation of more than one */
                fprintf(stderr, "fa_cl_info: unknown or ambiguous option '%s'\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fa_cl_info: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->emit_dir && !o->profile) {
        fprintf(stderr, "fa_cl_info: --emit needs --profile\n");
        return 2;
    }
    return 0;
}

/* ==== main ==================================================================================== */

/* Platform and device handles, numbered as fa_cl_context_create_default numbers them for FA_CL_DEVICE. */
typedef struct inventory {
    cl_platform_id *platforms;
    cl_uint num_platforms;
} inventory;

/* Devices of one platform (heap, caller frees); *err says why there are none. */
static cl_device_id *platform_devices(cl_platform_id plat, cl_uint *count, cl_int *err)
{
    *count = 0;
    *err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, count);
    if (*err != CL_SUCCESS || *count == 0)
        return NULL;
    cl_device_id *devs = (cl_device_id *)calloc(*count, sizeof *devs);
    if (!devs) {
        *err = CL_OUT_OF_HOST_MEMORY;
        *count = 0;
        return NULL;
    }
    *err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, *count, devs, NULL);
    if (*err != CL_SUCCESS) {
        free(devs);
        *count = 0;
        return NULL;
    }
    return devs;
}

/* The device fa_cl_context_create_default picks (FA_CL_DEVICE, else first GPU, else first device). */
static cl_device_id default_device(char *why, size_t size)
{
    fa_cl_context *ctx = NULL;
    if (fa_cl_context_create_default(&ctx) != FA_CL_SUCCESS) {
        snprintf(why, size, "%s", fa_cl_last_error(NULL));
        return NULL;
    }
    cl_device_id dev = fa_cl_context_device(ctx);
    fa_cl_context_release(ctx); /* the device handle outlives the context: root devices are not released */
    return dev;
}

/* Check --device before printing anything, so a bad index is one clear message. */
static int check_selection(const inventory *inv, const options *o)
{
    if (o->want_p < 0)
        return 1;
    if ((cl_uint)o->want_p >= inv->num_platforms) {
        fprintf(stderr, "fa_cl_info: no device %d:%d: there %s %u platform%s (0..%u)\n", o->want_p, o->want_d,
                inv->num_platforms == 1 ? "is" : "are", inv->num_platforms, inv->num_platforms == 1 ? "" : "s",
                inv->num_platforms - 1);
        return 0;
    }
    cl_uint nd = 0;
    cl_int err = CL_SUCCESS;
    free(platform_devices(inv->platforms[o->want_p], &nd, &err));
    if ((cl_uint)o->want_d >= nd) {
        fprintf(stderr, "fa_cl_info: no device %d:%d: platform %d has %u device%s", o->want_p, o->want_d, o->want_p,
                nd, nd == 1 ? "" : "s");
        if (err != CL_SUCCESS)
            fprintf(stderr, " (clGetDeviceIDs: %s)", fa_cl__cl_error_name(err));
        fputc('\n', stderr);
        return 0;
    }
    return 1;
}

static void show_platform(const inventory *inv, cl_uint p, cl_device_id default_dev, const options *o, json *w,
                          device_report *dr)
{
    platform_report pr;
    collect_platform(inv->platforms[p], (int)p, &pr);
    cl_device_id *devs = platform_devices(inv->platforms[p], &pr.num_devices, &pr.devices_err);
    if (o->json)
        json_platform_begin(w, &pr);
    else
        human_platform(&pr);
    for (cl_uint d = 0; d < pr.num_devices; d++) {
        if (o->want_d >= 0 && (cl_uint)o->want_d != d)
            continue;
        collect_device(inv->platforms[p], devs[d], (int)p, (int)d, default_dev, o, dr);
        if (o->json)
            json_device(w, dr);
        else
            human_device(dr);
    }
    if (o->json)
        json_platform_end(w);
    free(devs);
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc == 2)
        fprintf(stderr, "fa_cl_info --help lists the options\n");
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    if (o.kernels) { /* no OpenCL: scripts read the names and files from here */
        for (int i = 0; i < fa_cl__kernel_count(); i++) {
            const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
            printf("%s\t%d\t%s\t%s\t", f->name, fa_cl__family_vendor(f), f->op == FA_CL_OP_FORWARD ? "forward" : f->op == FA_CL_OP_COMBINE ? "combine" : f->op == FA_CL_OP_APPEND ? "append" : f->op == FA_CL_OP_BACKWARD ? "backward" : f->op == FA_CL_OP_PAD_ROWS ? "pad-rows" : f->op == FA_CL_OP_CHECK ? "check" : "?", f->entry);
            for (int j = 0; j < f->nfiles; j++)
                printf("%s%s", j ? " " : "", f->files[j]);
            printf("\t%s\n", f->summary);
        }
        return 0;
    }
    if (o.tune) { /* no OpenCL */
        fa_cl_info_tune();
        return 0;
    }
    if (o.features) { /* no OpenCL */
        fa_cl_info_features();
        return 0;
    }
    if (o.profile) /* no OpenCL at all: the offline checks run where no device is */
        return fa_cl_info_profile(o.profile, o.emit_dir);

    inventory inv = {NULL, 0};
    cl_int err = clGetPlatformIDs(0, NULL, &inv.num_platforms);
    if (err != CL_SUCCESS || inv.num_platforms == 0)
        return report_no_platform(err, inv.num_platforms, &o);
    inv.platforms = (cl_platform_id *)calloc(inv.num_platforms, sizeof *inv.platforms);
    if (!inv.platforms) {
        fprintf(stderr, "fa_cl_info: out of host memory\n");
        return 1;
    }
    err = clGetPlatformIDs(inv.num_platforms, inv.platforms, NULL);
    if (err != CL_SUCCESS) {
        free(inv.platforms);
        return report_no_platform(err, 0, &o);
    }
    if (!check_selection(&inv, &o)) {
        free(inv.platforms);
        return 1;
    }

    env_state env;
    env.status = fa_cl__env_read(&env.env, env.error, sizeof env.error);
    if (env.status == FA_CL_SUCCESS)
        env.status = fa_cl__env_resolve(&env.env, fa_cl__env_getenv, NULL, env.error, sizeof env.error);
    char default_why[FA_CL_ERROR_CAPACITY] = "";
    cl_device_id default_dev = default_device(default_why, sizeof default_why);
    /* a report holds a large error buffer: one on the heap, reused for every device */
    device_report *dr = (device_report *)malloc(sizeof *dr);
    if (!dr) {
        free(inv.platforms);
        fprintf(stderr, "fa_cl_info: out of host memory\n");
        return 1;
    }

    json w = {stdout, 0, {1}};
    if (o.json) {
        json_open(&w, NULL, '{');
        json_str(&w, "fa_cl_version", fa_cl_version());
        json_env(&w, &env);
        json_str(&w, "default_device_error", default_dev ? NULL : default_why);
        json_open(&w, "platforms", '[');
    } else {
        printf("fa_cl %s: OpenCL platforms and devices (%u platform%s)\n", fa_cl_version(), inv.num_platforms,
               inv.num_platforms == 1 ? "" : "s");
        human_env(&env);
        if (!default_dev)
            printf("Default device: none (%s)\n", default_why);
        printf("\n");
        fa_cl_info_features();
    }
    for (cl_uint p = 0; p < inv.num_platforms; p++)
        if (o.want_p < 0 || (cl_uint)o.want_p == p)
            show_platform(&inv, p, default_dev, &o, &w, dr);
    if (o.json) {
        json_close(&w, ']');
        json_close(&w, '}');
        fputc('\n', stdout);
    }
    free(dr);
    free(inv.platforms);
    return 0;
}
