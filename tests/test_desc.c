/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fa_cl_attention_desc_init / fa_cl_attention_desc_validate, no device: every invalid field gives
 * its documented status with a message naming the field; valid descriptors (incl. strided,
 * broadcast and offset views) pass with an empty message.
 */
#include "test_util.h"

#include <math.h>
#include <string.h>

static tu_tally tally = {"desc_validate", 0, 0};

static void check(const char *what, const fa_cl_attention_desc *d, fa_cl_status want, const char *word)
{
    char msg[512];
    memset(msg, 'x', sizeof msg);
    fa_cl_status st = fa_cl_attention_desc_validate(d, msg, sizeof msg);
    int ok = st == want && memchr(msg, '\0', sizeof msg) != NULL;
    if (ok && want == FA_CL_SUCCESS)
        ok = msg[0] == '\0';
    if (ok && want != FA_CL_SUCCESS)
        ok = word && strstr(msg, word) != NULL;
    tu_expect(&tally, ok, "%-58s -> %s (want %s%s%s) msg: \"%s\"", what, fa_cl_status_string(st),
              fa_cl_status_string(want), word ? ", naming " : "", word ? word : "", msg);
    /* msg == NULL is allowed and must give the same status */
    fa_cl_status st2 = fa_cl_attention_desc_validate(d, NULL, 0);
    if (st2 != st)
        tu_expect(&tally, 0, "%s: status with msg == NULL is %s, with a buffer %s", what, fa_cl_status_string(st2),
                  fa_cl_status_string(st));
}

/* CASE(status, word, statement on d): base descriptor modified by the statement. */
#define CASE(want, word, stmt)                                                                                   \
    do {                                                                                                         \
        fa_cl_attention_desc d = base;                                                                           \
        stmt;                                                                                                    \
        check(#stmt, &d, want, word);                                                                            \
    } while (0)

static const fa_cl_status OK = FA_CL_SUCCESS, INV = FA_CL_ERROR_INVALID_ARGUMENT, UNS = FA_CL_ERROR_UNSUPPORTED;

static fa_cl_attention_desc base; /* what every CASE modifies (init_base) */

/* fa_cl_attention_desc_init over garbage, checked: the base of every CASE. */
static void init_base(void)
{
    memset(&base, 0x5a, sizeof base);
    fa_cl_attention_desc_init(&base, 2, 4, 33, 47, 64, FA_CL_F16);
    const fa_cl_attention_desc *d = &base;
    int ok = d->batch == 2 && d->heads_q == 4 && d->heads_kv == 4 && d->seqlen_q == 33 && d->seqlen_k == 47 &&
             d->head_dim == 64 && d->dtype == FA_CL_F16 && d->scale == 0.0f && d->causal == 0 &&
             d->window_left == -1 && d->window_right == -1 && d->q_offset == 0 && d->k_offset == 0 &&
             d->v_offset == 0 && d->o_offset == 0;
    for (int i = 0; i < 3; i++)
        ok = ok && d->q_stride[i] == 0 && d->k_stride[i] == 0 && d->v_stride[i] == 0 && d->o_stride[i] == 0;
    tu_expect(&tally, ok, "fa_cl_attention_desc_init: contiguous, heads_kv = heads, windows -1, scale 0, "
              "offsets 0, not causal");
    fa_cl_attention_desc_init(NULL, 1, 1, 1, 1, 1, FA_CL_F32); /* must not crash */
}

/* heads_q beyond what plan_create launches (it returns UNSUPPORTED "heads_q ... exceeds 2147483647"):
 * the header says validate returns the status plan_create would, before any *device* limit, and
 * this limit is not a device's (the kernel takes heads_q as an int) */
static int subset_heads_q_limit(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    init_base();
    CASE(UNS, "heads_q", (d.heads_q = (int64_t)INT32_MAX + 1, d.heads_kv = 1));
    CASE(UNS, "heads_q", (d.heads_q = (int64_t)1 << 33, d.heads_kv = 1, d.seqlen_q = 1, d.head_dim = 1));
    CASE(OK, NULL, (d.heads_q = (int64_t)INT32_MAX, d.heads_kv = 1, d.seqlen_q = 1, d.head_dim = 1));
    return 0;
}

/* The extension rule (include/fa_cl.h): struct_size records the caller's sizeof; a smaller struct
 * than the first version, or 0 (never initialised), is refused; a newer caller's larger struct is
 * accepted when the fields this library does not know are zero, refused when one is set. */
static int subset_struct_size(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    init_base();
    tu_expect(&tally, base.struct_size == sizeof base, "fa_cl_attention_desc_init records sizeof: %zu (want %zu)",
              base.struct_size, sizeof base);
    CASE(INV, "struct_size", d.struct_size = 0);
    /* 0.2's descriptor (before the serving fields) is an older caller's: accepted, serving off */
    CASE(INV, "struct_size", d.struct_size = offsetof(fa_cl_attention_desc, o_offset) + sizeof(size_t) - 1);
    CASE(OK, NULL, d.struct_size = offsetof(fa_cl_attention_desc, o_offset) + sizeof(size_t));
    /* a newer header's struct: this one followed by fields this library does not know */
    struct newer {
        fa_cl_attention_desc d;
        int64_t future_field;
    } n;
    fa_cl_attention_desc_init_sized(&n.d, sizeof n, 2, 4, 33, 47, 64, FA_CL_F16);
    tu_expect(&tally, n.d.struct_size == sizeof n && n.future_field == 0,
              "fa_cl_attention_desc_init_sized with a larger size zeroes the unknown tail");
    check("a newer header's struct, its unknown field 0", &n.d, OK, NULL);
    n.future_field = 1;
    check("a newer header's struct, its unknown field set", &n.d, UNS, "does not know");
    tu_expect(&tally, strcmp(fa_cl_version(), FA_CL_VERSION_STRING) == 0, "fa_cl_version() '%s' is the header's '%s'",
              fa_cl_version(), FA_CL_VERSION_STRING);
    return 0;
}

/* Every field, the NULL descriptor, a small message buffer, the status strings. */
static int subset_fields(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    init_base();

    /* valid */
    CASE(OK, NULL, (void)0);
    CASE(OK, NULL, d.heads_kv = 1);
    CASE(OK, NULL, d.heads_kv = 2);
    CASE(OK, NULL, (d.causal = 1, d.window_left = 16, d.window_right = 0));
    CASE(OK, NULL, (d.window_left = 0, d.window_right = 0));
    CASE(OK, NULL, d.scale = 0.125f);
    CASE(OK, NULL, d.scale = -0.0f);
    CASE(OK, NULL, d.head_dim = 1);
    CASE(OK, NULL, d.head_dim = 256);
    CASE(OK, NULL, d.head_dim = 257);
    CASE(OK, NULL, d.head_dim = 457);
    CASE(OK, NULL, d.head_dim = 512);
    CASE(OK, NULL, d.head_dim = 576);
    CASE(OK, NULL, (d.seqlen_q = 1, d.seqlen_k = 1));
    CASE(OK, NULL, (d.dtype = FA_CL_F32));
    CASE(OK, NULL, (d.dtype = FA_CL_BF16));
    CASE(OK, NULL, (d.q_stride[0] = 4 * 47 * 64, d.q_stride[1] = 64, d.q_stride[2] = 4 * 64)); /* BSHD */
    CASE(OK, NULL, (d.o_stride[0] = 4 * 33 * 64, d.o_stride[1] = 64, d.o_stride[2] = 4 * 64));
    CASE(OK, NULL, (d.k_stride[0] = 0, d.k_stride[1] = 0, d.k_stride[2] = 64)); /* K broadcast over b, h */
    CASE(OK, NULL, (d.q_offset = 7, d.k_offset = 11, d.v_offset = 13, d.o_offset = 17));
    CASE(OK, NULL, (d.batch = 1, d.o_stride[0] = 0, d.o_stride[1] = 33 * 64, d.o_stride[2] = 64));

    /* sizes: each field zero and negative */
    CASE(INV, "batch", d.batch = 0);
    CASE(INV, "batch", d.batch = -1);
    CASE(INV, "heads_q", d.heads_q = 0);
    CASE(INV, "heads_q", d.heads_q = -4);
    CASE(INV, "heads_kv", d.heads_kv = 0);
    CASE(INV, "heads_kv", d.heads_kv = -2);
    CASE(INV, "seqlen_q", d.seqlen_q = 0);
    CASE(INV, "seqlen_q", d.seqlen_q = -33);
    CASE(INV, "seqlen_k", d.seqlen_k = 0);
    CASE(INV, "seqlen_k", d.seqlen_k = INT64_MIN);
    CASE(INV, "head_dim", d.head_dim = 0);
    CASE(INV, "head_dim", d.head_dim = -64);
    /* divisibility */
    CASE(INV, "heads_kv", d.heads_kv = 3);
    CASE(INV, "heads_kv", d.heads_kv = 8);
    /* dtype */
    CASE(INV, "dtype", d.dtype = (fa_cl_dtype)3);
    CASE(INV, "dtype", d.dtype = (fa_cl_dtype)-1);
    /* windows */
    CASE(INV, "window_left", d.window_left = -2);
    CASE(INV, "window_right", d.window_right = -2);
    CASE(INV, "window_right", (d.window_left = 4, d.window_right = INT64_MIN));
    /* scale */
    CASE(INV, "scale", d.scale = NAN);
    CASE(INV, "scale", d.scale = INFINITY);
    CASE(INV, "scale", d.scale = -INFINITY);
    CASE(INV, "scale", d.scale = -1.0f);
    CASE(INV, "scale", d.scale = -1e-30f);
    /* strides: each tensor, each dimension */
    CASE(INV, "q_stride", d.q_stride[0] = -1);
    CASE(INV, "q_stride", (d.q_stride[0] = 1, d.q_stride[1] = -64, d.q_stride[2] = 64));
    CASE(INV, "k_stride", d.k_stride[2] = -64);
    CASE(INV, "k_stride", d.k_stride[1] = -1);
    CASE(INV, "v_stride", d.v_stride[1] = -1);
    CASE(INV, "v_stride", d.v_stride[0] = INT64_MIN);
    CASE(INV, "o_stride", d.o_stride[2] = -1);
    CASE(INV, "o_stride", d.o_stride[0] = -4);
    /* output rows overlapping each other */
    CASE(INV, "o_stride", (d.o_stride[0] = 0, d.o_stride[1] = 0, d.o_stride[2] = 64));
    CASE(INV, "o_stride", (d.o_stride[0] = 4 * 33 * 64, d.o_stride[1] = 33 * 64, d.o_stride[2] = 32));
    /* head_dim / seqlen beyond what the kernels support */
    CASE(UNS, "head_dim", d.head_dim = 577);
    CASE(UNS, "head_dim", d.head_dim = 1024);
    CASE(UNS, "seqlen_q", d.seqlen_q = (int64_t)INT32_MAX);
    CASE(UNS, "seqlen_k", d.seqlen_k = (int64_t)1 << 40);
    /* byte extents that overflow 64 bits */
    CASE(INV, "overflow", (d.batch = INT64_MAX / 2, d.q_stride[0] = 1 << 20, d.q_stride[1] = 1 << 12,
                           d.q_stride[2] = 64));
    CASE(INV, "overflow", (d.batch = INT64_MAX / 2));
    CASE(INV, "overflow", (d.k_offset = SIZE_MAX - 8));
    CASE(INV, "overflow", (d.heads_q = (int64_t)1 << 40, d.heads_kv = 1, d.seqlen_q = 1 << 20));
    CASE(INV, "overflow", (d.v_stride[0] = INT64_MAX, d.v_stride[1] = 64 * 47, d.v_stride[2] = 64));


    /* NULL descriptor */
    {
        char msg[256] = "";
        fa_cl_status st = fa_cl_attention_desc_validate(NULL, msg, sizeof msg);
        tu_expect(&tally, st == INV && strstr(msg, "desc") != NULL, "desc == NULL -> %s msg: \"%s\"",
                  fa_cl_status_string(st), msg);
    }
    /* a tiny message buffer: truncated and NUL-terminated */
    {
        fa_cl_attention_desc d = base;
        d.heads_q = -1;
        char msg[16];
        memset(msg, 'x', sizeof msg);
        fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, 5);
        tu_expect(&tally, st == INV && strlen(msg) == 4 && msg[5] == 'x',
                  "msg_size 5: %s, \"%s\" (4 characters, nothing written past 5 bytes)", fa_cl_status_string(st),
                  msg);
    }
    /* status strings */
    {
        int ok = 1;
        for (int s = 0; s <= 7; s++) {
            const char *name = fa_cl_status_string((fa_cl_status)s);
            ok = ok && name && strncmp(name, "FA_CL_", 6) == 0;
            for (int u = 0; u < s; u++)
                ok = ok && strcmp(name, fa_cl_status_string((fa_cl_status)u)) != 0;
        }
        const char *unknown = fa_cl_status_string((fa_cl_status)99);
        ok = ok && unknown != NULL && strcmp(fa_cl_status_string(FA_CL_ERROR_BUFFER_TOO_SMALL),
                                             "FA_CL_ERROR_BUFFER_TOO_SMALL") == 0;
        tu_expect(&tally, ok, "fa_cl_status_string: 8 distinct FA_CL_* names, never NULL (99 -> %s)",
                  unknown ? unknown : "(null)");
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"fields", subset_fields}, {"heads_q_limit", subset_heads_q_limit}, {"struct_size", subset_struct_size}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, 0);
}
