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

/* name's text, at most size - 1 characters, into out (unset or empty: left ""). */
static fa_cl_status env_text(fa_cl__env_lookup lookup, void *data, const char *name, char *out, size_t size, char *msg,
                             size_t msg_size)
{
    const char *s = lookup(data, name);
    if (!s || !*s)
        return FA_CL_SUCCESS;
    if (strlen(s) >= size) {
        snprintf(msg, msg_size, "%s is longer than %zu characters", name, size - 1);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    strcpy(out, s);
    return FA_CL_SUCCESS;
}

const char *fa_cl__env_getenv(void *data, const char *name) { return process_env(data, name); }

fa_cl_status fa_cl__env_parse(fa_cl__env *out, fa_cl__env_lookup lookup, void *data, char *msg, size_t msg_size)
{
    memset(out, 0, sizeof *out);
    fa_cl_status st = env_bytes(lookup, data, "FA_CL_LOCAL_MEM_BYTES", &out->local_mem_cap, msg, msg_size);
    /* switches: any of the words of env_switch, nothing else; unset keeps each default */
    int vendor_path = 1;
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_VENDOR_PATH", NULL, 0, &vendor_path, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_switch(lookup, data, "FA_CL_DEBUG_BUILD_LOG", NULL, 0, &out->print_build_log, msg, msg_size);
    out->vendor_path_off = !vendor_path;
    if (st == FA_CL_SUCCESS)
        st = env_text(lookup, data, "FA_CL_KERNEL_DIR", out->kernel_dir, sizeof out->kernel_dir, msg, msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_text(lookup, data, "FA_CL_BUILD_OPTIONS", out->build_options, sizeof out->build_options, msg,
                      msg_size);
    if (st == FA_CL_SUCCESS && check_build_options(out->build_options, msg, msg_size) != 0)
        st = FA_CL_ERROR_INVALID_ARGUMENT;
    /* the planner resolves these against the registry (FA_CL_TUNE: docs/tuning.md) */
    if (st == FA_CL_SUCCESS)
        st = env_text(lookup, data, "FA_CL_KERNEL_VARIANT", out->variant_name, sizeof out->variant_name, msg,
                      msg_size);
    if (st == FA_CL_SUCCESS)
        st = env_text(lookup, data, "FA_CL_TUNE", out->tune_text, sizeof out->tune_text, msg, msg_size);
    const char *s = lookup(data, "FA_CL_CACHE_DIR");
    if (st == FA_CL_SUCCESS && s && *s) {
        if (strlen(s) >= sizeof out->cache_dir - 64) { /* room for "/<entry name>" */
            snprintf(msg, msg_size, "FA_CL_CACHE_DIR is longer than %zu characters", sizeof out->cache_dir - 65);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (fa_cl__contains_nocase(s, "off") && strlen(s) == 3)
            out->cache_off = 1;
        else
            strcpy(out->cache_dir, s);
    }
    return st;
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

void fa_cl__context_close(fa_cl_context *ctx)
{
    clReleaseCommandQueue(ctx->queue);
    clReleaseDevice(ctx->device);
    clReleaseContext(ctx->cl_ctx);
    fa_cl__lock_destroy(&ctx->lock);
    free(ctx);
}
