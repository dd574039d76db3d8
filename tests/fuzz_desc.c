/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: fa_cl_attention_desc fields and buffer sizes/flags/aliasing (libFuzzer; built with
 * -DFA_CL_FUZZ=ON and clang: -fsanitize=fuzzer,address,undefined). Without libFuzzer the same file
 * builds a replay tool (FA_CL_FUZZ_REPLAY) that runs every file of the directories it is given:
 * CTest's fuzz_corpus_replay runs tests/fuzz_corpus/ that way on every build.
 *
 * For each input:
 *  - fa_cl_attention_desc_validate with a fuzzed message size: the status is a defined one; a
 *    refusal has a non-empty, NUL-terminated message; the same status with msg == NULL.
 *  - the descriptor's byte extents recomputed in 128-bit arithmetic: an extent past 2^64 - 1 (or
 *    SIZE_MAX) must be refused, and an accepted descriptor's extents (fa_cl__desc_resolve) must equal
 *    the exact values (nothing wrapped).
 *  - accepted descriptors small enough (B*Hq*Sq*Sk*D <= 2^14, head_dim 3, 4, 5, 8, 12 or 16, buffers
 *    <= 256 KiB):
 *    fa_cl_plan_create + fa_cl_plan_forward (or the one-shot call) on the default device with buffers
 *    of fuzzed sizes and flags, q/k/v/o possibly in one buffer or o a sub-buffer of k's buffer, or v
 *    from another OpenCL context. The expected verdict is computed independently: too small, wrong
 *    flags, another context, overlapping o → refused with a message; otherwise success, and then
 *    (inputs are all 0.25) every output element in the view is 0.25 or 0 (a row that sees no key) and
 *    every byte of o's buffer outside the view is unchanged.
 *
 * Input format: a byte stream read field by field (selector byte, then maybe raw bytes); running out
 * reads zeros. tests/fuzz_corpus/ holds seeds (tests/fuzz_corpus/README.md).
 */
#include "fa_cl_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static uint8_t u8(rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static uint64_t raw64(rd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)u8(r) << (8 * i);
    return v;
}

/* A size-like int64: mostly small, often a boundary. */
static int64_t pick(rd *r)
{
    const uint8_t s = u8(r);
    switch (s % 16) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: case 4: case 5: return 1 + u8(r) % 24;
    case 6: return 1 + u8(r) % 256;
    case 7: return INT32_MAX;
    case 8: return (int64_t)INT32_MAX + 1;
    case 9: return INT32_MAX / 2 + (int64_t)(u8(r) % 3) - 1;
    case 10: return INT64_MAX - (int64_t)(u8(r) % 2);
    case 11: return INT64_MIN;
    case 12: return (int64_t)1 << (u8(r) % 63);
    case 13: return -2 - (int64_t)u8(r);
    case 14: return (int64_t)((uint64_t)1 << 32) + (int64_t)u8(r);
    default: return (int64_t)raw64(r);
    }
}

static float pick_scale(rd *r)
{
    const uint8_t s = u8(r);
    uint32_t bits;
    switch (s % 8) {
    case 0: return 0.0f;
    case 1: return 0.125f;
    case 2: return 1.0f;
    case 3: return -1.0f;
    case 4: return NAN;
    case 5: return INFINITY;
    case 6: return 1e30f;
    default:
        bits = (uint32_t)raw64(r);
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
}

static const char *const status_names[] = {"SUCCESS", "INVALID_ARGUMENT", "UNSUPPORTED", "BUFFER_TOO_SMALL",
                                           "BUILD_FAILED", "OPENCL", "OUT_OF_MEMORY", "NO_DEVICE"};

static void fail(const char *what, const fa_cl_attention_desc *d, fa_cl_status st, const char *msg)
{
    fprintf(stderr,
            "fuzz_desc: %s (status %d %s, message \"%s\")\n  desc: B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld "
            "dtype=%d scale=%g causal=%d win=(%lld,%lld) offsets %zu %zu %zu %zu\n",
            what, (int)st, (unsigned)st < 8 ? status_names[st] : "?", msg ? msg : "(null)", (long long)d->batch,
            (long long)d->heads_q, (long long)d->heads_kv, (long long)d->seqlen_q, (long long)d->seqlen_k,
            (long long)d->head_dim, (int)d->dtype, (double)d->scale, d->causal, (long long)d->window_left,
            (long long)d->window_right, d->q_offset, d->k_offset, d->v_offset, d->o_offset);
    abort();
}

typedef unsigned __int128 u128;

/* Exact byte extent [begin, end) of one view, in 128 bits, and its strides made explicit (all zero:
 * contiguous; st is meaningful only for an accepted descriptor). */
static void exact_extent(const fa_cl_attention_desc *d, int t, size_t elem, u128 *begin, u128 *end, int64_t st[3])
{
    const int is_q = t == 0 || t == 3;
    const uint64_t B = (uint64_t)d->batch, H = (uint64_t)(is_q ? d->heads_q : d->heads_kv),
                   S = (uint64_t)(is_q ? d->seqlen_q : d->seqlen_k), D = (uint64_t)d->head_dim;
    const int64_t *s = t == 0 ? d->q_stride : t == 1 ? d->k_stride : t == 2 ? d->v_stride : d->o_stride;
    const size_t off = t == 0 ? d->q_offset : t == 1 ? d->k_offset : t == 2 ? d->v_offset : d->o_offset;
    u128 last;
    if (s[0] == 0 && s[1] == 0 && s[2] == 0) {
        st[2] = (int64_t)D;
        st[1] = (int64_t)(S * D); /* unsigned: wraps harmlessly where the descriptor is refused anyway */
        st[0] = (int64_t)(S * D * H);
        last = (u128)off + (u128)B * H * S * D - 1;
    } else {
        memcpy(st, s, 3 * sizeof *st);
        last = (u128)off + (D - 1) + (u128)(B - 1) * (uint64_t)s[0] + (u128)(H - 1) * (uint64_t)s[1] +
               (u128)(S - 1) * (uint64_t)s[2];
    }
    *begin = (u128)off * elem;
    *end = (last + 1) * elem;
}

/* ---- the device part -------------------------------------------------------------------------- */

static int g_verbose;         /* replay: one line per input */
static fa_cl_context *g_ctx;
static int g_ctx_tried;
static cl_context g_other; /* a second OpenCL context on the same device */

static cl_mem make_buffer(cl_context c, cl_mem_flags flags, size_t bytes, uint8_t fill_byte_pattern, size_t elem)
{
    if (bytes == 0)
        bytes = 1;
    unsigned char *img = (unsigned char *)malloc(bytes);
    if (!img)
        return NULL;
    if (fill_byte_pattern) { /* inputs: 0.25 in the storage type, everywhere */
        for (size_t i = 0; i + elem <= bytes; i += elem) {
            if (elem == 4) {
                const float q = 0.25f;
                memcpy(img + i, &q, 4);
            } else {
                const uint16_t h = fill_byte_pattern == 1 ? 0x3400u : 0x3e80u; /* f16 / bf16 0.25 */
                memcpy(img + i, &h, 2);
            }
        }
        for (size_t i = bytes / elem * elem; i < bytes; i++)
            img[i] = 0;
    } else {
        memset(img, 0xff, bytes); /* outputs: a NaN pattern the kernel never writes */
    }
    cl_int err;
    cl_mem m = clCreateBuffer(c, flags | CL_MEM_COPY_HOST_PTR, bytes, img, &err);
    free(img);
    return m;
}

static void device_part(rd *r, const fa_cl_attention_desc *d, const fa_cl__views *v)
{
    if (!g_ctx_tried) {
        g_ctx_tried = 1;
        if (fa_cl_context_create_default(&g_ctx) != FA_CL_SUCCESS)
            g_ctx = NULL;
        if (g_ctx) {
            cl_device_id dev = fa_cl_context_device(g_ctx);
            g_other = clCreateContext(NULL, 1, &dev, NULL, NULL, NULL);
        }
    }
    if (!g_ctx)
        return;
    fa_cl_context *ctx = g_ctx;
    const size_t elem = v->elem_size;
    const uint8_t pattern = d->dtype == FA_CL_F32 ? 2 : d->dtype == FA_CL_F16 ? 1 : 3;
    const uint64_t need[5] = {v->q_bytes, v->k_bytes, v->v_bytes, v->o_bytes, v->lse_bytes};
    const uint8_t mode = u8(r) % 6; /* 0 separate, 1 o in q's buffer, 2 o a sub-buffer of k's, 3 v foreign,
                                       4 q WRITE_ONLY, 5 o READ_ONLY */
    const int with_lse = u8(r) & 1, oneshot = u8(r) & 1;
    int64_t delta[5];
    for (int i = 0; i < 5; i++) {
        const uint8_t s = u8(r) % 8;
        delta[i] = s == 0 ? -1 : s == 1 ? -(int64_t)need[i] : s == 2 ? (int64_t)(u8(r) % 64) : 0;
    }
    size_t size[5];
    for (int i = 0; i < 5; i++) {
        int64_t b = (int64_t)need[i] + delta[i];
        size[i] = b < 1 ? 1 : (size_t)b;
    }
    int expect_ok = 1; /* the sizes are checked below, once the modes have set them */
    cl_context c = fa_cl_context_cl_context(ctx);
    cl_mem mq = NULL, mk = NULL, mv = NULL, mo = NULL, ml = NULL, parent = NULL;
    unsigned char *before = NULL; /* o's buffer before the call */
    size_t o_origin = 0; /* where o's buffer starts in its root (mode 2) */
    if (mode == 1) {                /* one buffer for q and o: q's size covers both */
        size[0] = size[0] > size[3] ? size[0] : size[3];
        size[3] = size[0];
        mq = make_buffer(c, CL_MEM_READ_WRITE, size[0], pattern, elem);
        mo = mq;
        clRetainMemObject(mo);
        if (v->o_begin < v->q_bytes && v->q_begin < v->o_bytes)
            expect_ok = 0;
    } else {
        mq = make_buffer(c, mode == 4 ? CL_MEM_WRITE_ONLY : CL_MEM_READ_ONLY, size[0], pattern, elem);
        if (mode == 4)
            expect_ok = 0;
    }
    if (mode == 2) { /* k's buffer extended; o a sub-buffer of it at an aligned origin */
        cl_uint align_bits = 1024;
        clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL);
        const size_t align = align_bits / 8 ? align_bits / 8 : 128;
        o_origin = (size_t)(u8(r) % 8) * align;
        const size_t total = (size[1] > o_origin + size[3] ? size[1] : o_origin + size[3]);
        parent = make_buffer(c, CL_MEM_READ_WRITE, total, pattern, elem);
        size[1] = total;
        mk = parent;
        clRetainMemObject(mk);
        cl_buffer_region reg = {o_origin, size[3]};
        cl_int err;
        mo = parent ? clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err) : NULL;
        if (o_origin + v->o_begin < v->k_bytes && v->k_begin < o_origin + v->o_bytes)
            expect_ok = 0;
    } else {
        mk = make_buffer(c, CL_MEM_READ_ONLY, size[1], pattern, elem);
    }
    mv = make_buffer(mode == 3 && g_other ? g_other : c, CL_MEM_READ_ONLY, size[2], pattern, elem);
    if (mode == 3 && g_other)
        expect_ok = 0;
    if (!mo)
        mo = make_buffer(c, mode == 5 ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE, size[3], 0, elem);
    if (mode == 5)
        expect_ok = 0;
    if (with_lse)
        ml = make_buffer(c, CL_MEM_READ_WRITE, size[4], 0, 4);
    if (!mq || !mk || !mv || !mo || (with_lse && !ml))
        goto out; /* the driver could not allocate: nothing to check */
    for (int i = 0; i < 5; i++)
        if (size[i] < need[i] && (i < 4 || with_lse))
            expect_ok = 0;
    before = (unsigned char *)malloc(size[3]);
    if (!before || clEnqueueReadBuffer(fa_cl_context_queue(ctx), mo, CL_TRUE, 0, size[3], before, 0, NULL, NULL) !=
                       CL_SUCCESS)
        goto out;
    {
        fa_cl_status st;
        fa_cl_plan *plan = NULL;
        if (oneshot) {
            st = fa_cl_attention_forward(ctx, d, mq, mk, mv, mo, ml, 0, NULL, NULL);
        } else {
            st = fa_cl_plan_create(ctx, d, &plan);
            if (st == FA_CL_SUCCESS)
                st = fa_cl_plan_forward(plan, mq, mk, mv, mo, ml, 0, NULL, NULL);
            fa_cl_plan_release(plan);
        }
        const char *msg = fa_cl_last_error(ctx);
        if (st != FA_CL_SUCCESS && (!msg || !msg[0]))
            fail("a refused call has no message", d, st, msg);
        if ((unsigned)st > FA_CL_ERROR_NO_DEVICE)
            fail("undefined status", d, st, msg);
        if (st == FA_CL_ERROR_OUT_OF_MEMORY || st == FA_CL_ERROR_OPENCL)
            goto out; /* the driver's limits, not an argument check */
        if (expect_ok && st != FA_CL_SUCCESS)
            fail("a valid call was refused", d, st, msg);
        if (g_verbose)
            printf("  device: mode %d %s -> %s (expected %s)\n", mode, oneshot ? "one-shot" : "plan",
                   fa_cl_status_string(st), expect_ok ? "success" : "a refusal");
        if (!expect_ok && st == FA_CL_SUCCESS)
            fail("an invalid call (buffer size, flags, context or overlap) was accepted", d, st, msg);
        if (st != FA_CL_SUCCESS)
            goto out;
        if (clFinish(fa_cl_context_queue(ctx)) != CL_SUCCESS)
            fail("clFinish failed after an accepted call", d, st, msg);
        /* o: in the view 0.25 or 0; outside untouched */
        unsigned char *img = (unsigned char *)malloc(size[3]), *inview = (unsigned char *)calloc(size[3] / elem + 1, 1);
        clEnqueueReadBuffer(fa_cl_context_queue(ctx), mo, CL_TRUE, 0, size[3], img, 0, NULL, NULL);
        u128 b0, e0;
        int64_t os[3];
        exact_extent(d, 3, elem, &b0, &e0, os);
        for (int64_t b = 0; b < d->batch; b++)
            for (int64_t h = 0; h < d->heads_q; h++)
                for (int64_t s = 0; s < d->seqlen_q; s++)
                    for (int64_t e = 0; e < d->head_dim; e++)
                        inview[d->o_offset + (size_t)(b * os[0] + h * os[1] + s * os[2] + e)] = 1;
        for (size_t i = 0; i + elem <= size[3]; i += elem) {
            float x = 0.0f;
            uint16_t hbits = 0;
            if (elem == 4) {
                memcpy(&x, img + i, 4);
            } else {
                memcpy(&hbits, img + i, 2);
                if (d->dtype == FA_CL_BF16) {
                    uint32_t u = (uint32_t)hbits << 16;
                    memcpy(&x, &u, 4);
                } else {
                    x = hbits == 0x3400u ? 0.25f : hbits == 0 ? 0.0f : hbits == 0xffffu ? NAN : 1.0f;
                }
            }
            if (inview[i / elem]) {
                if (!(x == 0.0f || fabsf(x - 0.25f) < 1e-3f))
                    fail("an output element in the view is neither 0.25 nor 0", d, st, "");
            } else if (memcmp(img + i, before + i, elem) != 0) {
                fail("an element of o's buffer outside the view was written", d, st, "");
            }
        }
        free(img);
        free(inview);
    }
out:
    free(before);
    if (mq) clReleaseMemObject(mq);
    if (mk) clReleaseMemObject(mk);
    if (mv) clReleaseMemObject(mv);
    if (mo) clReleaseMemObject(mo);
    if (ml) clReleaseMemObject(ml);
    if (parent) clReleaseMemObject(parent);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = {data, size};
    fa_cl_attention_desc d;
    memset(&d, 0, sizeof d);
    d.batch = pick(&r);
    d.heads_q = pick(&r);
    d.heads_kv = pick(&r);
    d.seqlen_q = pick(&r);
    d.seqlen_k = pick(&r);
    d.head_dim = pick(&r);
    d.dtype = (fa_cl_dtype)((int)(u8(&r) % 5) - 1);
    d.scale = pick_scale(&r);
    d.causal = (int)(u8(&r) % 3) - (int)(u8(&r) == 255);
    d.window_left = pick(&r);
    d.window_right = pick(&r);
    int64_t *st[4] = {d.q_stride, d.k_stride, d.v_stride, d.o_stride};
    for (int t = 0; t < 4; t++)
        if (u8(&r) & 1) /* else contiguous */
            for (int i = 0; i < 3; i++)
                st[t][i] = pick(&r);
    size_t *off[4] = {&d.q_offset, &d.k_offset, &d.v_offset, &d.o_offset};
    for (int t = 0; t < 4; t++) {
        const uint8_t s = u8(&r) % 4;
        *off[t] = s == 0 ? 0 : s == 1 ? (size_t)(u8(&r) % 64) : (size_t)(uint64_t)pick(&r);
    }

    /* validate: a defined status, a message on refusal, the same status without a message buffer */
    char msg[600];
    const uint8_t ms = u8(&r);
    const size_t msg_size = ms % 4 == 0 ? (size_t)(ms / 4 % 8) : sizeof msg;
    memset(msg, 'x', sizeof msg);
    fa_cl_status vs = fa_cl_attention_desc_validate(&d, msg, msg_size);
    if (g_verbose)
        printf("  validate -> %s: %s\n", fa_cl_status_string(vs), msg_size == sizeof msg ? msg : "(short buffer)");
    if ((unsigned)vs > FA_CL_ERROR_NO_DEVICE)
        fail("validate returned an undefined status", &d, vs, NULL);
    if (msg_size > 0 && !memchr(msg, '\0', msg_size))
        fail("validate's message is not NUL-terminated within msg_size", &d, vs, NULL);
    if (msg_size < sizeof msg && msg[msg_size] != 'x')
        fail("validate wrote past msg_size", &d, vs, NULL);
    if (vs != FA_CL_SUCCESS && msg_size > 1 && msg[0] == '\0')
        fail("a refused descriptor has an empty message", &d, vs, msg);
    if (fa_cl_attention_desc_validate(&d, NULL, 0) != vs)
        fail("validate's status depends on the message buffer", &d, vs, NULL);
    char full[600];
    fa_cl__views v;
    fa_cl_status rs = fa_cl__desc_resolve(&d, &v, full, sizeof full);
    if (rs != vs)
        fail("fa_cl__desc_resolve and validate disagree", &d, rs, full);
    if (vs != FA_CL_SUCCESS && !full[0])
        fail("a refused descriptor has an empty message", &d, vs, full);

    /* extents in exact arithmetic: past 64 bits must be refused; accepted ones must be exact */
    const size_t elem = fa_cl__dtype_size(d.dtype);
    const int sizes_ok = d.batch > 0 && d.heads_q > 0 && d.heads_kv > 0 && d.seqlen_q > 0 && d.seqlen_k > 0 &&
                         d.head_dim > 0 && elem > 0;
    int strides_ok = 1;
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 3; i++)
            strides_ok = strides_ok && st[t][i] >= 0;
    if (sizes_ok && strides_ok) {
        const uint64_t *got_end[4] = {&v.q_bytes, &v.k_bytes, &v.v_bytes, &v.o_bytes};
        const uint64_t *got_begin[4] = {&v.q_begin, &v.k_begin, &v.v_begin, &v.o_begin};
        for (int t = 0; t < 4; t++) {
            u128 b, e;
            int64_t ns[3];
            exact_extent(&d, t, elem, &b, &e, ns);
            if (e > (u128)SIZE_MAX && vs == FA_CL_SUCCESS)
                fail("a byte extent past SIZE_MAX was accepted (it would wrap)", &d, vs, "");
            if (vs == FA_CL_SUCCESS && (e != (u128)*got_end[t] || b != (u128)*got_begin[t]))
                fail("an accepted descriptor's extent differs from the exact value", &d, vs, "");
        }
        const u128 lse = (u128)(uint64_t)d.batch * (uint64_t)d.heads_q * (uint64_t)d.seqlen_q * 4u;
        if (vs == FA_CL_SUCCESS && lse != (u128)v.lse_bytes)
            fail("the LSE's byte count differs from the exact value", &d, vs, "");
    }

    /* accepted and small: through the device */
    if (vs == FA_CL_SUCCESS) {
        const u128 work = (u128)(uint64_t)d.batch * (uint64_t)d.heads_q * (uint64_t)d.seqlen_q *
                          (uint64_t)d.seqlen_k * (uint64_t)d.head_dim;
        const uint64_t biggest = v.q_bytes > v.k_bytes ? v.q_bytes : v.k_bytes;
        const uint64_t big2 = v.v_bytes > v.o_bytes ? v.v_bytes : v.o_bytes;
        /* a few head_dims only: each new (head_dim, dtype, tile) compiles a program (~1 s on PoCL) */
        const int dim_ok = d.head_dim == 3 || d.head_dim == 4 || d.head_dim == 5 || d.head_dim == 8 ||
                           d.head_dim == 12 || d.head_dim == 16;
        if (work <= (1u << 14) && dim_ok && biggest <= (256u << 10) && big2 <= (256u << 10) &&
            v.lse_bytes <= (256u << 10))
            device_part(&r, &d, &v);
    }
    return 0;
}

#ifdef FA_CL_FUZZ_REPLAY
/* Replay: run every file of the directories (or files) given, as libFuzzer would. */
#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0;
    g_verbose = getenv("FA_CL_FUZZ_VERBOSE") != NULL;
    for (int a = 1; a < argc; a++) {
        struct stat sb;
        if (stat(argv[a], &sb) != 0)
            continue;
        if (!S_ISDIR(sb.st_mode)) {
            files += run_file(argv[a]) == 0;
            continue;
        }
        DIR *dir = opendir(argv[a]);
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.' || strchr(e->d_name, '.')) /* seeds have no extension */
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            if (g_verbose)
                printf("%s\n", e->d_name);
            files += run_file(path) == 0;
        }
        if (dir)
            closedir(dir);
    }
    if (g_ctx)
        fa_cl_context_release(g_ctx);
    if (g_other)
        clReleaseContext(g_other);
    printf("fuzz_desc replay: %d passed, 0 failed\n", files);
    return files > 0 ? 0 : 1;
}
#endif
