/* SPDX-License-Identifier: Apache-2.0 */
/* FA_CL_TUNE=item,item,... (docs/tuning.md; not a stable interface): an item is family:key=value,
 * which makes family the current one, or key=value for the current family; before any family, the
 * planner's own keys. Each family declares and bounds its keys (src/kernels/); the planner's are
 * here. Every key that replaced an environment variable names it: that variable, still set, is
 * refused with the keys to use instead, so that nobody's experiment silently changes meaning. */
#include "plan/plan.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The planner's keys (family slot 0): they set fields of the environment. */
enum { KEY_TILE, KEY_SPLITS, KEY_KV_CHUNK, KEY_GQA_PACK, KEY_LPT_COLUMNS, KEY_LOCAL_MEM_OVERRIDE };
static const fa_cl__tune_name tile_names[] = {{"BrxBc[xrows[xkeys]]", 0}, {NULL, 0}};
static const fa_cl__tune_key planner_keys[] = {
    {"tile", 0, 1, 0, tile_names,
     "every plan's tiles: B_r x B_c, optionally the rows (and for portable-tiled the keys) a work-item takes "
     "(e.g. 64x32, 64x32x4x4); a family that cannot take it declines, a forced one refuses",
     "FA_CL_TILE"},
    {"splits", 0, 1, FA_CL_MAX_SPLITS, NULL,
     "split-KV: every plan's keys in this many chunks computed in parallel, then combined (1: never split; "
     "default: FlashAttention-2's heuristic)",
     "FA_CL_SPLITS"},
    {"kv_chunk", 0, 1, 1 << 30, NULL,
     "long rows: every plan sums keys in launches of this many (whole blocks; tests), default: only rows longer "
     "than one fp32 sum may add",
     "FA_CL_KV_CHUNK"},
    {"gqa_pack", -1, 0, 1, NULL,
     "GQA packing: 1 wherever query heads share a kv head, 0 never (default: where seqlen_q < 64)",
     "FA_CL_GQA_PACK"},
    {"lpt_columns", 0, 1, 1 << 30, NULL,
     "causal plans: head columns a section of the longest-first order takes (default: compute units / query "
     "blocks)",
     "FA_CL_LPT_COLUMNS"},
    {"local_mem_override", 0, 1024, 1 << 30, NULL,
     "plan for this many bytes of local memory whatever the device reports (experiments)",
     "FA_CL_LOCAL_MEM_OVERRIDE"},
};
#define PLANNER_KEYS ((int)(sizeof planner_keys / sizeof planner_keys[0]))

int fa_cl__planner_tune_keys(const fa_cl__tune_key **keys)
{
    *keys = planner_keys;
    return PLANNER_KEYS;
}

/* msg (n bytes) from fmt; always INVALID_ARGUMENT. */
static fa_cl_status refuse(char *msg, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static fa_cl_status refuse(char *msg, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    return FA_CL_ERROR_INVALID_ARGUMENT;
}

/* The keys of a family (NULL: the planner's) as "a, b, c". */
static void key_list(const fa_cl__kernel_family *f, char *msg, size_t n)
{
    const fa_cl__tune_key *keys = f ? f->tune : planner_keys;
    const int count = f ? f->ntune : PLANNER_KEYS;
    for (int k = 0; k < count; k++)
        fa_cl__append(msg, n, "%s%s", k ? ", " : "", keys[k].key);
    if (!count)
        fa_cl__append(msg, n, "none");
}

/* What key k takes, for a message: its range and its named values. */
static void key_values(const fa_cl__tune_key *k, char *msg, size_t n)
{
    if (k->min <= k->max)
        fa_cl__append(msg, n, "%d..%d", k->min, k->max);
    for (int i = 0; k->names && k->names[i].name; i++)
        fa_cl__append(msg, n, "%s%s", i || k->min <= k->max ? " or " : "", k->names[i].name);
}

/* "<Br>x<Bc>[x<rows>[x<keys>]]" of positive decimal integers, nothing else; the field count or 0. */
static int parse_tile(const char *s, size_t len, int f[4])
{
    int n = 0;
    const char *end = s + len;
    while (n < 4) {
        if (s == end || !isdigit((unsigned char)*s))
            return 0;
        long v = 0;
        while (s < end && isdigit((unsigned char)*s) && v <= 100000)
            v = v * 10 + (*s++ - '0');
        if (v <= 0 || v > 100000)
            return 0;
        f[n++] = (int)v;
        if (s == end)
            return n;
        if (*s++ != 'x')
            return 0;
    }
    return 0; /* a fifth field, or a trailing 'x' */
}

/* The planner's tile key into env. */
static fa_cl_status set_tile(fa_cl__env *env, const char *value, size_t len, char *msg, size_t n)
{
    int f[4] = {0, 0, 0, 0};
    const int fields = parse_tile(value, len, f);
    if (fields < 2 || f[0] > 4096 || f[1] > 4096 || (fields >= 3 && f[0] % f[2]) || (fields == 4 && f[1] % f[3]))
        return refuse(msg, n, "FA_CL_TUNE tile='%.*s' is not <B_r>x<B_c>[x<rows>[x<keys>]] per work-item with "
                      "positive sizes (e.g. 64x32 or 64x32x4x4; B_r a multiple of the rows, B_c of the keys)",
                      (int)len, value);
    env->tile_q = f[0], env->tile_kv = f[1], env->tile_rows = f[2], env->tile_cols = f[3];
    return FA_CL_SUCCESS;
}

/* value (len bytes) for key k of who ("planner" or a family's name): a named value, or a decimal
 * integer in the key's range. */
static fa_cl_status key_value(const char *who, const fa_cl__tune_key *k, const char *value, size_t len, int *out,
                              char *msg, size_t n)
{
    for (int i = 0; k->names && k->names[i].name; i++)
        if (strlen(k->names[i].name) == len && strncmp(k->names[i].name, value, len) == 0) {
            *out = k->names[i].value;
            return FA_CL_SUCCESS;
        }
    long v = 0;
    int ok = len > 0 && len < 12 && k->min <= k->max;
    for (size_t i = 0; ok && i < len; i++)
        ok = isdigit((unsigned char)value[i]);
    for (size_t i = 0; ok && i < len; i++)
        v = v * 10 + (value[i] - '0');
    if (ok && v >= k->min && v <= k->max) {
        *out = (int)v;
        return FA_CL_SUCCESS;
    }
    refuse(msg, n, "FA_CL_TUNE %s:%s='%.*s' is not ", who, k->key, (int)len, value);
    key_values(k, msg, n);
    return FA_CL_ERROR_INVALID_ARGUMENT;
}

/* One planner key's value into env. */
static fa_cl_status set_planner(fa_cl__env *env, int k, const char *value, size_t len, char *msg, size_t n)
{
    if (k == KEY_TILE)
        return set_tile(env, value, len, msg, n);
    int v = 0;
    const fa_cl_status st = key_value("planner", &planner_keys[k], value, len, &v, msg, n);
    if (st != FA_CL_SUCCESS)
        return st;
    switch (k) {
    case KEY_SPLITS: env->splits = v; break;
    case KEY_KV_CHUNK: env->chunk_keys = v; break;
    case KEY_GQA_PACK: env->gqa_pack = v ? 1 : -1; break;
    case KEY_LPT_COLUMNS: env->lpt_columns = v; break;
    case KEY_LOCAL_MEM_OVERRIDE: env->local_mem_override = (size_t)v; break;
    }
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__tune_parse(fa_cl__env *env, const char *text, char *msg, size_t n)
{
    memset(&env->tune, 0, sizeof env->tune);
    const fa_cl__kernel_family *family = NULL; /* the current one; NULL: the planner */
    for (const char *p = text; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p)), *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq || (colon && colon > eq))
            return refuse(msg, n, "FA_CL_TUNE item '%.*s' is not [family:]key=value (docs/tuning.md)", (int)(end - p),
                          p);
        if (colon) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(colon - p), p);
            family = fa_cl__kernel_by_name(name);
            if (!family) {
                refuse(msg, n, "FA_CL_TUNE: no kernel family '%s' (", name);
                for (int i = 0; i < fa_cl__kernel_count(); i++)
                    fa_cl__append(msg, n, "%s%s", i ? ", " : "", fa_cl__kernel_at(i)->name);
                fa_cl__append(msg, n, ")");
                return FA_CL_ERROR_INVALID_ARGUMENT;
            }
            p = colon + 1;
        }
        const size_t key_len = (size_t)(eq - p);
        const fa_cl__tune_key *keys = family ? family->tune : planner_keys;
        const int count = family ? family->ntune : PLANNER_KEYS;
        int k = 0;
        while (k < count && !(strlen(keys[k].key) == key_len && strncmp(keys[k].key, p, key_len) == 0))
            k++;
        const char *who = family ? family->name : "the planner";
        if (k == count) {
            refuse(msg, n, "FA_CL_TUNE: %s has no key '%.*s' (its keys: ", who, (int)key_len, p);
            key_list(family, msg, n);
            fa_cl__append(msg, n, "%s)", family ? "" : "; a family's keys follow 'family:'");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        const char *value = eq + 1;
        const size_t len = (size_t)(end - value);
        fa_cl_status st;
        if (!family) {
            st = set_planner(env, k, value, len, msg, n);
        } else {
            int v = 0;
            st = key_value(family->name, &keys[k], value, len, &v, msg, n);
            env->tune.value[family->id][k] = v;
            env->tune.set[family->id] |= (unsigned char)(1u << k);
        }
        if (st != FA_CL_SUCCESS)
            return st;
        p = *end ? end + 1 : end;
    }
    return FA_CL_SUCCESS;
}

/* The keys (the planner's, then every family's) that replaced variable `name`, appended to msg as
 * "FA_CL_TUNE=family:key=...,family:key=...". */
static void replacements(const char *name, char *msg, size_t n)
{
    int found = 0;
    for (int i = -1; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = i < 0 ? NULL : fa_cl__kernel_at(i);
        const fa_cl__tune_key *keys = f ? f->tune : planner_keys;
        const int count = f ? f->ntune : PLANNER_KEYS;
        for (int k = 0; k < count; k++)
            if (keys[k].replaces && strcmp(keys[k].replaces, name) == 0)
                fa_cl__append(msg, n, "%s%s%s%s=...", found++ ? "," : "FA_CL_TUNE=", f ? f->name : "", f ? ":" : "",
                       keys[k].key);
    }
}

fa_cl_status fa_cl__removed_variables(fa_cl__env_lookup lookup, void *data, char *msg, size_t n)
{
    for (int i = -1; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = i < 0 ? NULL : fa_cl__kernel_at(i);
        const fa_cl__tune_key *keys = f ? f->tune : planner_keys;
        const int count = f ? f->ntune : PLANNER_KEYS;
        for (int k = 0; k < count; k++) {
            const char *value = keys[k].replaces ? lookup(data, keys[k].replaces) : NULL;
            if (!value || !*value)
                continue;
            refuse(msg, n, "%s='%s' is no longer read: set ", keys[k].replaces, value);
            replacements(keys[k].replaces, msg, n);
            fa_cl__append(msg, n, " instead (docs/tuning.md; not a stable interface)");
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
    }
    return FA_CL_SUCCESS;
}

int fa_cl__tune_key_line(const char *family, const fa_cl__tune_key *k, char *out, size_t n)
{
    out[0] = '\0';
    fa_cl__append(out, n, "- `%s%s%s=`: ", family ? family : "", family ? ":" : "", k->key);
    key_values(k, out, n);
    const char *def = NULL;
    for (int i = 0; k->names && k->names[i].name && !def; i++)
        if (k->names[i].value == k->def && k->min <= k->max)
            def = k->names[i].name;
    if (def)
        fa_cl__append(out, n, "; default %s", def);
    else if (k->min <= k->max && k->def >= k->min && k->def <= k->max)
        fa_cl__append(out, n, "; default %d", k->def);
    else
        fa_cl__append(out, n, "; default: the planner's choice");
    fa_cl__append(out, n, "%s%s. %s", k->replaces ? "; was " : "", k->replaces ? k->replaces : "", k->doc);
    return (int)strlen(out);
}
