/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts, the layers' common part: the environment's stable variables, the OpenCL objects a
 * context holds, the default device (src/api/context.c creates and releases contexts). */
#include "fa_cl_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A byte count >= 1024 from the environment; unset or empty leaves *out alone. */
static fa_cl_status env_bytes(fa_cl__env_lookup lookup, void *data, const char *name, size_t *out, char *msg,
                              size_t msg_size)
{
    const char *s = lookup(data, name);
    if (!s || !*s)
        return FA_CL_SUCCESS;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < 1024 || v > (unsigned long long)SIZE_MAX || !isdigit((unsigned char)s[0])) {
        snprintf(msg, msg_size, "%s='%s' is not a byte count >= 1024", name, s);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    *out = (size_t)v;
    return FA_CL_SUCCESS;
}

/* name=n, a decimal count in [1, max]; what names the count in the message ("a key count"). */
static fa_cl_status env_count(fa_cl__env_lookup lookup, void *data, const char *name, long max, const char *what,
                             int *out, char *msg, size_t msg_size)
{
    const char *s = lookup(data, name);
    if (!s || !*s)
        return FA_CL_SUCCESS;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > max || !isdigit((unsigned char)s[0])) {
        snprintf(msg, msg_size, "%s='%s' is not %s in 1..%ld", name, s, what, max);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    *out = (int)v;
    return FA_CL_SUCCESS;
}

/* One word of an on/off switch and what it sets. */
typedef struct env_word {
    const char *word;
    int value;
} env_word;

/* Every switch's words (any case): on, then off. */
static const env_word switch_words[] = {{"1", 1},   {"on", 1},  {"yes", 1}, {"true", 1},
                                        {"0", 0},   {"off", 0}, {"no", 0},  {"false", 0}};
#define FA_CL_SWITCH_WORDS "1, on, yes, true (on) or 0, off, no, false (off)"

static int same_word_nocase(const char *a, const char *b)
{
    while (*a && tolower((unsigned char)*a) == tolower((unsigned char)*b))
        a++, b++;
    return *a == '\0' && *b == '\0';
}

/* An on/off switch name=word: *out becomes the word's value; unset or empty leaves it alone.
 * extra: the switch's own further words (nextra of them), named in the message. */
static fa_cl_status env_switch(fa_cl__env_lookup lookup, void *data, const char *name, const env_word *extra,
                               int nextra, int *out, char *msg, size_t msg_size)
{
    const char *s = lookup(data, name);
    if (!s || !*s)
        return FA_CL_SUCCESS;
    for (size_t i = 0; i < sizeof switch_words / sizeof switch_words[0]; i++)
        if (same_word_nocase(s, switch_words[i].word)) {
            *out = switch_words[i].value;
            return FA_CL_SUCCESS;
        }
    for (int i = 0; i < nextra; i++)
        if (same_word_nocase(s, extra[i].word)) {
            *out = extra[i].value;
            return FA_CL_SUCCESS;
        }
    int n = snprintf(msg, msg_size, "%s='%s' is not a switch: %s", name, s, FA_CL_SWITCH_WORDS);
    for (int i = 0; i < nextra && n > 0 && (size_t)n < msg_size; i++)
        n += snprintf(msg + n, msg_size - (size_t)n, "%s%s", i ? ", " : "; or ", extra[i].word);
    return FA_CL_ERROR_INVALID_ARGUMENT;
}

/* FA_CL_BUILD_OPTIONS: -D and -I need an argument (attached or the next word), and -D's must be a
 * macro name: some drivers crash on a bare "-D" (PoCL 3.1 does) rather than report it. Returns 0,
 * or -1 with the offending option named in msg. */
static int check_build_options(const char *s, char *msg, size_t msg_size)
{
    const char *p = s;
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        const size_t n = (size_t)(p - w);
        if (n < 2 || w[0] != '-' || (w[1] != 'D' && w[1] != 'I'))
            continue;
        const char *arg = w + 2, *end = p;
        if (n == 2) { /* the argument is the next word */
            while (isspace((unsigned char)*p))
                p++;
            arg = p;
            while (*p && !isspace((unsigned char)*p))
                p++;
            end = p;
        }
        const int missing = arg == end || arg[0] == '-';
        const int bad_name = !missing && w[1] == 'D' && !(isalpha((unsigned char)arg[0]) || arg[0] == '_');
        if (missing || bad_name) {
            snprintf(msg, msg_size, "FA_CL_BUILD_OPTIONS='%s': %.2s %s", s, w,
                     missing ? "needs an argument" : "needs a macro name (a letter or '_' first)");
            return -1;
        }
    }
    return 0;
}

/* "<a>x<b>[x<c>[x<d>]]" of positive decimal integers, nothing else; returns the field count or 0. */
static int parse_tile(const char *s, int f[4])
{
    int n = 0;
    while (n < 4) {
        if (!isdigit((unsigned char)*s))
            return 0;
        long v = 0;
        while (isdigit((unsigned char)*s) && v <= 100000)
            v = v * 10 + (*s++ - '0');
        if (v <= 0 || v > 100000)
            return 0;
        f[n++] = (int)v;
        if (*s == '\0')
            return n;
        if (*s++ != 'x')
            return 0;
    }
    return 0; /* a fifth field, or a trailing 'x' */
}

/* fa_cl__env_read's lookup: the process environment. */
static const char *process_env(void *data, const char *name)
{
    (void)data;
    return getenv(name);
}

fa_cl_status fa_cl__env_read(fa_cl__env *out, char *msg, size_t msg_size)
{
    return fa_cl__env_parse(out, process_env, NULL, msg, msg_size);
}

fa_cl_status fa_cl__env_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size)
{
    memset(out, 0, sizeof *out);
    fa_cl_status st = env_bytes(lookup, data, "FA_CL_LOCAL_MEM_BYTES", &out->local_mem_cap, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    /* Experiments only: plan for more local memory than the device reports. */
    st = env_bytes(lookup, data, "FA_CL_LOCAL_MEM_OVERRIDE", &out->local_mem_override, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    const char *s;
    st = env_count(lookup, data, "FA_CL_KV_CHUNK", 1L << 30, "a key count", &out->chunk_keys, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_count(lookup, data, "FA_CL_SPLITS", FA_CL_MAX_SPLITS, "a split count", &out->splits, msg,
                       msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_count(lookup, data, "FA_CL_LPT_COLUMNS", 1L << 30, "a head-column count", &out->lpt_columns, msg,
                       msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    s = lookup(data, "FA_CL_MMA_STAGES");
    if (s && *s) {
        if (strlen(s) != 1 || s[0] < '2' || s[0] > '0' + FA_CL_ENV_MAX_STAGES) {
            snprintf(msg, msg_size, "FA_CL_MMA_STAGES='%s' is not a pipeline depth in 2..%d", s, FA_CL_ENV_MAX_STAGES);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->mma_stages = s[0] - '0';
    }
    s = lookup(data, "FA_CL_MMA_KV_WARPS");
    if (s && *s) {
        if (strcmp(s, "1") && strcmp(s, "2") && strcmp(s, "4")) {
            snprintf(msg, msg_size, "FA_CL_MMA_KV_WARPS='%s' is not 1, 2 or 4 (warps sharing a block's keys)", s);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->mma_kv_warps = s[0] - '0';
    }
    /* switches: any of the words of env_switch, nothing else; unset keeps each default */
    int gqa_pack = -1, vendor_path = 1, pad_rows = 1, producer = 1, tma = 1;
    /* FA_CL_TMA's own words: one kind only (values past the on/off ones: 2 + the kind's bit) */
    static const env_word tma_words[] = {{"mask", 2 + FA_CL_TMA_MASK}, {"kv", 2 + FA_CL_TMA_KV}};
    out->nv_tf32 = out->wgmma = -1;
    st = env_switch(lookup, data, "FA_CL_GQA_PACK", NULL, 0, &gqa_pack, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_VENDOR_PATH", NULL, 0, &vendor_path, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_PAD_ROWS", NULL, 0, &pad_rows, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_NV_TF32", NULL, 0, &out->nv_tf32, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_WGMMA", NULL, 0, &out->wgmma, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_WGMMA_PRODUCER", NULL, 0, &producer, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_TMA", tma_words, 2, &tma, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_MMA_EMULATE", NULL, 0, &out->mma_emulate, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_DEBUG_BUILD_LOG", NULL, 0, &out->print_build_log, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    out->gqa_pack = gqa_pack < 0 ? 0 : gqa_pack ? 1 : -1;
    out->vendor_path_off = !vendor_path;
    out->pad_rows_off = !pad_rows;
    out->wgmma_producer_off = !producer;
    out->tma = tma == 1 ? FA_CL_TMA_MASK | FA_CL_TMA_KV : tma == 0 ? 0 : tma - 2;
    s = lookup(data, "FA_CL_TILE");
    if (s && *s) {
        int f[4] = {0, 0, 0, 0};
        int n = parse_tile(s, f);
        int q = f[0], kv = f[1], rows = f[2], cols = f[3];
        if (n < 2 || q > 4096 || kv > 4096 || (n >= 3 && q % rows) || (n == 4 && kv % cols)) {
            snprintf(msg, msg_size, "FA_CL_TILE='%s' is not <B_r>x<B_c>[x<rows>[x<keys>]] per work-item with positive "
                     "sizes (e.g. 64x32 or 64x32x4x4; B_r a multiple of the rows, B_c of the keys)", s);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->tile_q = q;
        out->tile_kv = kv;
        out->tile_rows = rows;
        out->tile_cols = cols;
    }
    s = lookup(data, "FA_CL_KERNEL_DIR");
    if (s && *s) {
        if (strlen(s) >= sizeof out->kernel_dir) {
            snprintf(msg, msg_size, "FA_CL_KERNEL_DIR is longer than %zu characters", sizeof out->kernel_dir - 1);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        strcpy(out->kernel_dir, s);
    }
    s = lookup(data, "FA_CL_BUILD_OPTIONS");
    if (s && *s) {
        if (strlen(s) >= sizeof out->build_options) {
            snprintf(msg, msg_size, "FA_CL_BUILD_OPTIONS is longer than %zu characters",
                     sizeof out->build_options - 1);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (check_build_options(s, msg, msg_size) != 0)
            return FA_CL_ERROR_INVALID_ARGUMENT;
        strcpy(out->build_options, s);
    }
    s = lookup(data, "FA_CL_KERNEL_VARIANT"); /* resolved against the registry by the planner */
    if (s && *s) {
        if (strlen(s) >= sizeof out->variant_name) {
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT is longer than %zu characters", sizeof out->variant_name - 1);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        strcpy(out->variant_name, s);
    }
    s = lookup(data, "FA_CL_PERSISTENT"); /* a count: 0, or at most n work-groups */
    out->persistent_off = s && strcmp(s, "0") == 0;
    if (!out->persistent_off &&
        env_count(lookup, data, "FA_CL_PERSISTENT", 1L << 30, "0 or a work-group count", &out->persistent_groups,
                  msg, msg_size) != FA_CL_SUCCESS)
        return FA_CL_ERROR_INVALID_ARGUMENT;
    s = lookup(data, "FA_CL_CACHE_DIR");
    if (s && *s) {
        if (strlen(s) >= sizeof out->cache_dir - 64) { /* room for "/<entry name>" */
            snprintf(msg, msg_size, "FA_CL_CACHE_DIR is longer than %zu characters", sizeof out->cache_dir - 65);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (fa_cl__contains_nocase(s, "off") && strlen(s) == 3)
            out->cache_off = 1;
        else
            strcpy(out->cache_dir, s);
    }
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__context_open(cl_context context, cl_device_id device, cl_command_queue queue,
                                fa_cl_context **out)
{
    if (!out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_context_create: out is NULL");
    *out = NULL;
    if (!context || !device || !queue)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_context_create: %s is NULL",
                           !context ? "context" : !device ? "device" : "queue");
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    cl_command_queue_properties qprops = 0;
    cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(NULL, err, "fa_cl_context_create: queue is not a valid command queue");
    if (qctx != context || qdev != device)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT,
                           "fa_cl_context_create: the queue belongs to another %s",
                           qctx != context ? "context" : "device");

    fa_cl_context *ctx = (fa_cl_context *)calloc(1, sizeof *ctx);
    if (!ctx)
        return fa_cl__fail(NULL, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_context_create: out of host memory");
    char msg[512];
    fa_cl_status st = fa_cl__env_read(&ctx->env, msg, sizeof msg);
    if (st != FA_CL_SUCCESS) {
        free(ctx);
        return fa_cl__fail(NULL, st, "fa_cl_context_create: %s", msg);
    }
    st = fa_cl__device_query(NULL, device, &ctx->props);
    if (st != FA_CL_SUCCESS) {
        free(ctx);
        return st;
    }
    fa_cl__lock_init(&ctx->lock);
    clRetainContext(context);
    clRetainDevice(device);
    clRetainCommandQueue(queue);
    ctx->cl_ctx = context;
    ctx->device = device;
    ctx->queue = queue;
    ctx->queue_in_order = !(qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    ctx->hold_events = !ctx->queue_in_order || fa_cl__contains_nocase(ctx->props.platform_version, "pocl");
    *out = ctx;
    return FA_CL_SUCCESS;
}

/* FA_CL_ERROR_NO_DEVICE with why there is no platform and what to install. */
static fa_cl_status no_platform(cl_int err, cl_uint count)
{
    char msg[2048];
    fa_cl__no_platform_message(err, count, msg, sizeof msg);
    return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE, "%s", msg);
}

/* A device as fa_cl_info numbers them: platform index p, device index d within it. */
typedef struct device_ref {
    cl_platform_id platform;
    cl_device_id device;
} device_ref;

static fa_cl_status pick_device(device_ref *out)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0)
        return no_platform(err, np);
    cl_platform_id platforms[32];
    if (np > 32)
        np = 32;
    err = clGetPlatformIDs(np, platforms, NULL);
    if (err != CL_SUCCESS)
        return no_platform(err, 0);

    const char *want = getenv("FA_CL_DEVICE");
    int want_p = -1, want_d = -1;
    if (want && *want) {
        char tail = 0;
        if (sscanf(want, "%d:%d%c", &want_p, &want_d, &tail) != 2)
            want_p = want_d = -1;
    } else {
        want = NULL;
    }

    device_ref first = {0}, first_gpu = {0};
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS)
            continue;
        if (nd > 64)
            nd = 64;
        for (cl_uint d = 0; d < nd; d++) {
            cl_device_type type = 0;
            char name[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            device_ref ref = {platforms[p], devs[d]};
            if (want) {
                int match;
                if (want_p >= 0) {
                    match = ((int)p == want_p && (int)d == want_d);
                } else {
                    match = fa_cl__contains_nocase(name, want);
                }
                if (match) {
                    *out = ref;
                    return FA_CL_SUCCESS;
                }
                continue;
            }
            if (!first.device)
                first = ref;
            if (!first_gpu.device && (type & CL_DEVICE_TYPE_GPU))
                first_gpu = ref;
        }
    }
    if (want)
        return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE,
                           "FA_CL_DEVICE='%s' matches no device (use p:d indices or a name substring; "
                           "fa_cl_info lists them)", want);
    *out = first_gpu.device ? first_gpu : first;
    if (!out->device)
        return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE,
                           "OpenCL platforms were found but they list no devices (is the driver loaded?)");
    return FA_CL_SUCCESS;
}

cl_context fa_cl_context_cl_context(const fa_cl_context *ctx) { return ctx ? ctx->cl_ctx : NULL; }
cl_command_queue fa_cl_context_queue(const fa_cl_context *ctx) { return ctx ? ctx->queue : NULL; }
cl_device_id fa_cl_context_device(const fa_cl_context *ctx) { return ctx ? ctx->device : NULL; }

int fa_cl__context_family_off(fa_cl_context *ctx, int id)
{
    const uint64_t bit = (uint64_t)1 << id;
    fa_cl__lock_acquire(&ctx->lock);
    const int first = !(ctx->families_off & bit);
    ctx->families_off |= bit;
    fa_cl__lock_release(&ctx->lock);
    return first;
}

fa_cl_status fa_cl__default_device(cl_platform_id *platform, cl_device_id *device)
{
    device_ref ref;
    fa_cl_status st = pick_device(&ref);
    *platform = st == FA_CL_SUCCESS ? ref.platform : NULL;
    *device = st == FA_CL_SUCCESS ? ref.device : NULL;
    return st;
}

void fa_cl__context_close(fa_cl_context *ctx)
{
    clReleaseCommandQueue(ctx->queue);
    clReleaseDevice(ctx->device);
    clReleaseContext(ctx->cl_ctx);
    fa_cl__lock_destroy(&ctx->lock);
    free(ctx);
}
