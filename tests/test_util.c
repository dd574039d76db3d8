/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the fa_cl test suite (see test_util.h). */
#include "test_util.h"

#include "plan/plan.h" /* fa_cl__dtype_name, the device's vendor, the tuning keys set */

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- reporting -------------------------------------------------------------------------------- */

int tu_expect(tu_tally *t, int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("[%s] ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    if (ok)
        t->passed++;
    else
        t->failed++;
    return ok;
}

/* cases a forced kernel refused by design (tu_refused_by_design) */
static int refused_cases;

int tu_finish(const tu_tally *t)
{
    printf("%s: %d passed, %d failed\n", t->name, t->passed, t->failed);
    fflush(stdout);
    if (t->failed == 0 && t->passed == 0 && refused_cases > 0) { /* CTest: skipped, the reason above */
        printf("%s: every case was refused by design on this device (%d)\n", t->name, refused_cases);
        return TU_EXIT_SKIP;
    }
    return (t->failed == 0 && t->passed > 0) ? 0 : 1;
}

/* ---- contexts --------------------------------------------------------------------------------- */

int tu_context(fa_cl_context **out)
{
    fa_cl_status st = fa_cl_context_create_default(out);
    if (st != FA_CL_SUCCESS) {
        printf("fa_cl_context_create_default: %s: %s\n", fa_cl_status_string(st), fa_cl_last_error(NULL));
        return st == FA_CL_ERROR_NO_DEVICE ? TU_EXIT_SKIP : 1;
    }
    char name[256] = "", version[256] = "";
    clGetDeviceInfo(fa_cl_context_device(*out), CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(fa_cl_context_device(*out), CL_DEVICE_VERSION, sizeof version, version, NULL);
    printf("device: %s (%s)\n", name, version);
    /* The emulated tensor-core build exists to test those kernels where they cannot run natively;
     * on a GPU that runs them natively the other device tests cover them, ~100x faster. */
    fa_cl_context *ctx = *out;
    fa_cl__device_traits dev;
    fa_cl__device_traits_query(ctx->device, &ctx->props, &dev);
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    int emulated = 0;
    for (int i = 0; i < fa_cl__kernel_count(); i++)
        emulated |= fa_cl__family_emulated(&lim, fa_cl__kernel_at(i));
    if (emulated && dev.vendor == FA_CL_VENDOR_NVIDIA && dev.arch_major >= 8) {
        printf("SKIP: the tensor-core kernels run natively on %s (compute capability %d.%d); the PTX "
               "emulation (FA_CL_TUNE emulate=1) is tested on devices without them\n", name, dev.arch_major,
               dev.arch_minor);
        fa_cl_context_release(*out);
        *out = NULL;
        return TU_EXIT_SKIP;
    }
    /* nvidia-wgmma:persistent= changes only Hopper's plans: elsewhere a run would repeat another */
    const fa_cl__kernel_family *wgmma = fa_cl__kernel_by_name("nvidia-wgmma");
    if (wgmma && fa_cl__tune_given(&lim, wgmma, fa_cl__tune_key_index(wgmma, "persistent")) &&
        !(dev.vendor == FA_CL_VENDOR_NVIDIA && dev.arch_major == 9)) {
        printf("SKIP: FA_CL_TUNE nvidia-wgmma:persistent= changes only Hopper's plans\n");
        fa_cl_context_release(*out);
        *out = NULL;
        return TU_EXIT_SKIP;
    }
    return 0;
}

/* ---- subsets ---------------------------------------------------------------------------------- */

void tu_kernel_dir_default(const char *dir)
{
    const char *set = getenv("FA_CL_KERNEL_DIR");
    if (!set || !set[0])
        setenv("FA_CL_KERNEL_DIR", dir, 1);
}

int tu_main(tu_tally *t, int argc, char **argv, const tu_subset *subsets, int count,
            int (*open)(fa_cl_context **ctx), int flags)
{
    const char *want = argc > 1 ? argv[1] : subsets[0].name;
    const tu_subset *s = NULL;
    for (int i = 0; i < count && !s; i++)
        if (strcmp(subsets[i].name, want) == 0)
            s = &subsets[i];
    if (!s) {
        printf("unknown subset '%s' (", want);
        for (int i = 0; i < count; i++)
            printf("%s%s", i ? ", " : "", subsets[i].name);
        printf(")\n");
        return 2;
    }
    static char name[128];
    snprintf(name, sizeof name, "%s[%s]", t->name, s->name);
    t->name = name;
    fa_cl_context *ctx = NULL;
    int rc = open ? open(&ctx) : 0;
    if (rc != 0)
        return rc;
    const double t0 = tu_now_ms();
    const int words = argc > 2 ? 2 : argc; /* the program's name and the subset's */
    rc = s->run(ctx, argc - words, argv + words);
    if (flags & TU_TIMED)
        printf("%s took %.1f s\n", t->name, (tu_now_ms() - t0) / 1e3);
    fa_cl_context_release(ctx);
    return rc != 0 ? rc : tu_finish(t);
}

/* ---- storage types ---------------------------------------------------------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t tu_f32_to_f16(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x1ffu)); /* quiet NaN, payload kept */
    if (ax >= 0x477ff000u)                                           /* >= 65520 rounds past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal f16 (units of 2^-24) or zero */
        const uint32_t e = ax >> 23;
        if (e < 102) /* < 2^-25: rounds to zero */
            return sign;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e; /* value = m * 2^(e - 150) = (m >> shift) units of 2^-24 */
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r); /* r == 0x400 is the smallest normal: still the right bits */
    }
    /* normal: rebias 127 -> 15 and round 23 -> 10 mantissa bits; a carry moves into the exponent */
    const uint32_t r = (ax - (112u << 23) + 0x0fffu + ((ax >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | r);
}

float tu_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t tu_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tu_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

float tu_round(fa_cl_dtype t, float x)
{
    switch (t) {
    case FA_CL_F16: return tu_f16_to_f32(tu_f32_to_f16(x));
    case FA_CL_BF16: return tu_bf16_to_f32(tu_f32_to_bf16(x));
    default: return x;
    }
}

size_t tu_dtype_size(fa_cl_dtype t) { return t == FA_CL_F32 ? 4 : tu_is_fp8(t) ? 1 : 2; }

const char *tu_dtype_name(fa_cl_dtype t)
{
    return t == TU_Q8_0 ? "q8_0" : t == TU_E4M3 ? "e4m3" : t == TU_E5M2 ? "e5m2" : fa_cl__dtype_name(t);
}

int tu_is_fp8(fa_cl_dtype t) { return t == TU_E4M3 || t == TU_E5M2; }

double tu_fp8_value(fa_cl_dtype t, unsigned code)
{
    const int mbits = t == TU_E4M3 ? 3 : 2, ebits = 7 - mbits, bias = t == TU_E4M3 ? 7 : 15;
    const unsigned e = (code >> mbits) & ((1u << ebits) - 1u), m = code & ((1u << mbits) - 1u);
    const double sign = (code & 0x80u) ? -1.0 : 1.0;
    if (t == TU_E4M3 && e == 15 && m == 7)
        return NAN;
    if (t == TU_E5M2 && e == 31)
        return m ? NAN : sign * INFINITY;
    if (e == 0) /* subnormal: 0.m x 2^(1 - bias) */
        return sign * ldexp((double)m, 1 - bias - mbits);
    return sign * ldexp((double)((1u << mbits) + m), (int)e - bias - mbits);
}

unsigned tu_fp8_nearest(fa_cl_dtype t, float x)
{
    const unsigned sign = signbit(x) ? 0x80u : 0u;
    if (isnan(x) || (isinf(x) && t == TU_E4M3))
        return sign | 0x7fu;
    if (isinf(x))
        return sign | 0x7cu;
    const double a = fabs((double)x);
    const unsigned top = t == TU_E4M3 ? 0x7eu : 0x7bu; /* the largest finite code */
    if (a >= tu_fp8_value(t, top)) /* saturation (and no distances too large for a double's digits) */
        return sign | top;
    unsigned best = 0;
    double best_d = INFINITY;
    for (unsigned c = 0; c < 0x80u; c++) { /* the magnitudes, in increasing order */
        const double v = tu_fp8_value(t, c);
        if (!isfinite(v))
            break;
        const double d = fabs(v - a);
        if (d < best_d || (d == best_d && (c & 1u) == 0)) /* a tie goes to the even code */
            best = c, best_d = d;
    }
    return sign | best;
}

uint32_t tu_load_bits(fa_cl_dtype t, const void *img, size_t i)
{
    if (tu_is_fp8(t))
        return ((const unsigned char *)img)[i];
    if (t == FA_CL_F32) {
        uint32_t u;
        memcpy(&u, (const unsigned char *)img + 4 * i, 4);
        return u;
    }
    uint16_t h;
    memcpy(&h, (const unsigned char *)img + 2 * i, 2);
    return h;
}

void tu_store_bits(fa_cl_dtype t, void *img, size_t i, uint32_t bits)
{
    if (tu_is_fp8(t)) {
        ((unsigned char *)img)[i] = (unsigned char)bits;
    } else if (t == FA_CL_F32) {
        memcpy((unsigned char *)img + 4 * i, &bits, 4);
    } else {
        uint16_t h = (uint16_t)bits;
        memcpy((unsigned char *)img + 2 * i, &h, 2);
    }
}

float tu_load(fa_cl_dtype t, const void *img, size_t i)
{
    uint32_t b = tu_load_bits(t, img, i);
    if (tu_is_fp8(t))
        return (float)tu_fp8_value(t, b);
    switch (t) {
    case FA_CL_F16: return tu_f16_to_f32((uint16_t)b);
    case FA_CL_BF16: return tu_bf16_to_f32((uint16_t)b);
    default: return bits_f32(b);
    }
}

void tu_store(fa_cl_dtype t, void *img, size_t i, float x)
{
    if (tu_is_fp8(t)) {
        tu_store_bits(t, img, i, tu_fp8_nearest(t, x));
        return;
    }
    switch (t) {
    case FA_CL_F16: tu_store_bits(t, img, i, tu_f32_to_f16(x)); break;
    case FA_CL_BF16: tu_store_bits(t, img, i, tu_f32_to_bf16(x)); break;
    default: tu_store_bits(t, img, i, f32_bits(x)); break;
    }
}

uint32_t tu_sentinel_bits(fa_cl_dtype t)
{
    switch (t) {
    case FA_CL_F16: return 0x7d5au;  /* signalling-pattern NaN, payload 0x15a */
    case FA_CL_BF16: return 0x7f3au; /* signalling-pattern NaN, payload 0x3a */
    default: return 0x7fa5dead;      /* signalling-pattern NaN, payload 0x25dead */
    }
}

uint32_t tu_nan_bits(fa_cl_dtype t)
{
    if (tu_is_fp8(t))
        return 0x7fu; /* NaN in both formats */
    switch (t) {
    case FA_CL_F16: return 0x7e00u;
    case FA_CL_BF16: return 0x7fc0u;
    default: return 0x7fc00000u;
    }
}

/* ---- random numbers (splitmix64) -------------------------------------------------------------- */

void tu_rng_seed(tu_rng *r, uint64_t seed) { r->s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull; }

uint64_t tu_rng_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_rng_uniform(tu_rng *r) { return (double)(tu_rng_next(r) >> 11) * 0x1p-53; }

float tu_rng_nonzero(tu_rng *r)
{
    double u = tu_rng_uniform(r);
    double mag = 0.0625 + 0.9375 * u;
    return (float)((tu_rng_next(r) & 1) ? -mag : mag);
}

/* ---- strided tensors -------------------------------------------------------------------------- */

int tu_tensor_init(tu_tensor *t, char layout, fa_cl_dtype dtype, int64_t B, int64_t H, int64_t S, int64_t D,
                   size_t salt, size_t slack)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->layout = layout;
    t->dim[0] = B;
    t->dim[1] = H;
    t->dim[2] = S;
    t->dim[3] = D;
    int64_t *st = t->stride;
    switch (layout) {
    case 'C':
    case 'H':
        st[2] = D;
        st[1] = S * D;
        st[0] = H * S * D;
        break;
    case 'S':
        st[1] = D;
        st[2] = H * D;
        st[0] = S * H * D;
        break;
    case 'P':
        st[2] = D + 3;
        st[1] = S * st[2] + 5;
        st[0] = H * st[1] + 7;
        t->offset = 5 + 6 * salt;
        break;
    case 'Q':
        st[1] = D + 3;
        st[2] = H * st[1] + 5;
        st[0] = S * st[2] + 7;
        t->offset = 7 + 6 * salt;
        break;
    case 'B':
        st[2] = D;
        st[1] = S * D;
        st[0] = 0;
        t->offset = 3;
        break;
    default:
        return -1;
    }
    if (layout != 'C')
        memcpy(t->desc_stride, st, sizeof t->desc_stride);
    size_t last = t->offset + (size_t)(D - 1);
    for (int i = 0; i < 3; i++)
        last += (size_t)(t->dim[i] - 1) * (size_t)st[i];
    t->elems = last + 1 + slack;
    if (dtype == TU_Q8_0 && (t->elems % 32 || D % 32 || t->offset % 32 || st[0] % 32 || st[1] % 32 || st[2] % 32))
        return -1; /* q8_0: whole blocks only */
    t->img = (unsigned char *)malloc(tu_tensor_bytes(t));
    t->inview = (unsigned char *)calloc(t->elems, 1);
    if (!t->img || !t->inview) {
        tu_tensor_free(t);
        return -1;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                memset(t->inview + tu_tensor_index(t, b, h, s, 0), 1, (size_t)D);
    return 0;
}

void tu_tensor_free(tu_tensor *t)
{
    free(t->img);
    free(t->inview);
    t->img = NULL;
    t->inview = NULL;
}

size_t tu_tensor_index(const tu_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d)
{
    return t->offset + (size_t)(b * t->stride[0] + h * t->stride[1] + s * t->stride[2] + d);
}

void tu_tensor_fill_bits(tu_tensor *t, uint32_t bits)
{
    if (t->dtype == TU_Q8_0) { /* every block's scale a NaN (the pattern's low half), its values 0x5a */
        for (size_t blk = 0; blk < t->elems / 32; blk++) {
            const uint16_t h = (uint16_t)(0x7e00u | (bits & 0xffu));
            memcpy(t->img + 34 * blk, &h, 2);
            memset(t->img + 34 * blk + 2, 0x5a, 32);
        }
        return;
    }
    for (size_t i = 0; i < t->elems; i++)
        tu_store_bits(t->dtype, t->img, i, bits);
}

void tu_q8_encode(float *x, int64_t n, unsigned char *dst)
{
    for (int64_t blk = 0; blk < n / 32; blk++) {
        float *v = x + 32 * blk;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++)
            amax = fmaxf(amax, fabsf(v[i]));
        const uint16_t d16 = tu_f32_to_f16(amax / 127.0f);
        const float d = tu_f16_to_f32(d16);
        memcpy(dst + 34 * blk, &d16, 2);
        for (int i = 0; i < 32; i++) {
            const float q = d > 0.0f ? fminf(fmaxf(roundf(v[i] / d), -127.0f), 127.0f) : 0.0f;
            const signed char c = (signed char)q;
            memcpy(dst + 34 * blk + 2 + i, &c, 1);
            v[i] = d * q;
        }
    }
}

float tu_q8_load(const unsigned char *img, size_t e)
{
    uint16_t d16;
    signed char c;
    memcpy(&d16, img + e / 32 * 34, 2);
    memcpy(&c, img + e / 32 * 34 + 2 + e % 32, 1);
    return tu_f16_to_f32(d16) * (float)c;
}

/* q8_0 (ggml's): each block of 32 elements in the view is encoded (tu_q8_encode); x becomes the
 * dequantised values, what the kernels read. */
static void q8_put(tu_tensor *t, float *x)
{
    const int64_t B = t->dim[0], H = t->dim[1], S = t->dim[2], D = t->dim[3];
    float *img = (float *)malloc(t->elems * sizeof(float));
    if (!img)
        return;
    size_t n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    img[tu_tensor_index(t, b, h, s, d)] = x[n++];
    for (size_t blk = 0; blk < t->elems / 32; blk++)
        if (t->inview[32 * blk])
            tu_q8_encode(img + 32 * blk, 32, t->img + 34 * blk);
    n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    x[n++] = img[tu_tensor_index(t, b, h, s, d)];
    free(img);
}

void tu_tensor_put(tu_tensor *t, float *x)
{
    if (t->dtype == TU_Q8_0) {
        q8_put(t, x);
        return;
    }
    const int64_t B = t->dim[0], H = t->dim[1], S = t->dim[2], D = t->dim[3];
    size_t n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    tu_store(t->dtype, t->img, tu_tensor_index(t, b, h, s, d), x[n++]);
    n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    x[n++] = tu_load(t->dtype, t->img, tu_tensor_index(t, b, h, s, d));
}

size_t tu_tensor_bytes(const tu_tensor *t)
{
    return t->dtype == TU_Q8_0 ? t->elems / 32 * 34 : t->elems * tu_dtype_size(t->dtype);
}

/* ---- device buffers --------------------------------------------------------------------------- */

cl_mem tu_buffer(fa_cl_context *ctx, cl_mem_flags flags, size_t bytes, const void *host)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(fa_cl_context_cl_context(ctx), flags | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)host, &err);
    if (!m)
        printf("clCreateBuffer(%zu bytes) failed: %d\n", bytes, (int)err);
    return m;
}

int tu_gemm16(fa_cl_context *ctx, cl_kernel k, const uint16_t *a, const uint16_t *b, const float *af, const float *bf,
              int m, int kdim, int n, size_t global, size_t local, float *c, int *first)
{
    cl_mem ma = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof(uint16_t) * (size_t)(m * kdim), a);
    cl_mem mb = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof(uint16_t) * (size_t)(kdim * n), b);
    cl_mem mc = tu_buffer(ctx, CL_MEM_WRITE_ONLY, sizeof(float) * (size_t)(m * n), NULL);
    const cl_int kk = kdim, nn = n;
    cl_int err = k && ma && mb && mc ? CL_SUCCESS : CL_OUT_OF_RESOURCES;
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, 0, sizeof ma, &ma) | clSetKernelArg(k, 1, sizeof mb, &mb) |
              clSetKernelArg(k, 2, sizeof mc, &mc) | clSetKernelArg(k, 3, sizeof kk, &kk) |
              clSetKernelArg(k, 4, sizeof nn, &nn);
    cl_command_queue q = fa_cl_context_queue(ctx);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(q, mc, CL_TRUE, 0, sizeof(float) * (size_t)(m * n), c, 0, NULL, NULL);
    int bad = 0;
    *first = -1;
    for (int i = 0; err == CL_SUCCESS && i < m * n; i++) {
        double want = 0.0;
        for (int j = 0; j < kdim; j++)
            want += (double)af[(i / n) * kdim + j] * bf[j * n + i % n];
        if ((double)c[i] != want && bad++ == 0)
            *first = i;
    }
    cl_mem mems[3] = {ma, mb, mc};
    for (int i = 0; i < 3; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (err != CL_SUCCESS)
        printf("the GEMM check kernel: OpenCL error %d\n", (int)err);
    return err == CL_SUCCESS ? bad : -1;
}

int tu_write(fa_cl_context *ctx, cl_mem m, size_t bytes, const void *host)
{
    cl_int err = clEnqueueWriteBuffer(fa_cl_context_queue(ctx), m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        printf("clEnqueueWriteBuffer(%zu bytes) failed: %d\n", bytes, (int)err);
    return err == CL_SUCCESS ? 0 : -1;
}

int tu_read(fa_cl_context *ctx, cl_mem m, size_t bytes, void *host)
{
    cl_int err = clEnqueueReadBuffer(fa_cl_context_queue(ctx), m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        printf("clEnqueueReadBuffer(%zu bytes) failed: %d\n", bytes, (int)err);
    return err == CL_SUCCESS ? 0 : -1;
}

/* ---- problems --------------------------------------------------------------------------------- */

void tu_case_format(const tu_case *c, char *buf, size_t size)
{
    char win[64] = "", sc[32] = "dflt";
    if (c->wl != -1 || c->wr != -1)
        snprintf(win, sizeof win, " win=(%lld,%lld)", (long long)c->wl, (long long)c->wr);
    if (c->scale > 0.0f)
        snprintf(sc, sizeof sc, "%g", (double)c->scale);
    snprintf(buf, size, "B=%lld H=%lld/%lld S=%lldx%lld D=%lld %s%s%s layout=%s scale=%s%s", (long long)c->B,
             (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq, (long long)c->Sk, (long long)c->D,
             tu_dtype_name(c->dtype), c->causal ? " causal" : "", win, c->layout ? c->layout : "CCCC", sc,
             c->lse ? " lse" : "");
}

void tu_problem_free(tu_problem *p)
{
    for (int i = 0; i < 4; i++) {
        tu_tensor_free(&p->t[i]);
        if (p->mem[i])
            clReleaseMemObject(p->mem[i]);
        p->mem[i] = NULL;
    }
    for (int i = 0; i < 3; i++) {
        free(p->x[i]);
        p->x[i] = NULL;
    }
    if (p->lse_mem)
        clReleaseMemObject(p->lse_mem);
    p->lse_mem = NULL;
    free(p->ref_o);
    free(p->ref_lse);
    free(p->lse_img);
    p->ref_o = p->ref_lse = NULL;
    p->lse_img = NULL;
}

int tu_problem_init(tu_problem *p, fa_cl_context *ctx, const tu_case *c, uint64_t seed, int want_ref)
{
    const fa_cl_dtype types[4] = {c->dtype, c->dtype, c->dtype, c->dtype};
    return tu_problem_init_types(p, ctx, c, types, seed, want_ref);
}

int tu_problem_init_types(tu_problem *p, fa_cl_context *ctx, const tu_case *c, const fa_cl_dtype types[4],
                          uint64_t seed, int want_ref)
{
    return tu_problem_init_dv(p, ctx, c, types, 0, seed, want_ref);
}

int tu_problem_init_dv(tu_problem *p, fa_cl_context *ctx, const tu_case *c, const fa_cl_dtype types[4], int64_t dv,
                       uint64_t seed, int want_ref)
{
    memset(p, 0, sizeof *p);
    p->c = *c;
    p->dv = dv > 0 ? dv : c->D;
    snprintf(p->layout, sizeof p->layout, "%s", c->layout ? c->layout : "CCCC");
    p->c.layout = p->layout;
    const int64_t heads[4] = {c->Hq, c->Hkv, c->Hkv, c->Hq};
    const int64_t seqs[4] = {c->Sq, c->Sk, c->Sk, c->Sq};
    const int64_t widths[4] = {c->D, c->D, p->dv, p->dv}; /* v and o: head_dim_v */
    for (int i = 0; i < 4; i++) {
        char l = p->layout[i];
        size_t slack = (i == 3 && (l == 'P' || l == 'Q')) ? 9 : 0;
        if (tu_tensor_init(&p->t[i], l, types[i], c->B, heads[i], seqs[i], widths[i], (size_t)i, slack) != 0) {
            printf("bad layout '%c' or out of memory\n", l);
            tu_problem_free(p);
            return -1;
        }
    }
    tu_rng rng;
    tu_rng_seed(&rng, seed);
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)(c->B * heads[i] * seqs[i] * widths[i]);
        p->x[i] = (float *)malloc(n * sizeof(float));
        if (!p->x[i]) {
            tu_problem_free(p);
            return -1;
        }
        for (size_t e = 0; e < n; e++)
            p->x[i][e] = tu_rng_nonzero(&rng);
        tu_tensor_fill_bits(&p->t[i], tu_nan_bits(types[i]));
        tu_tensor_put(&p->t[i], p->x[i]);
    }
    tu_tensor_fill_bits(&p->t[3], tu_sentinel_bits(types[3]));

    fa_cl_attention_desc *d = &p->desc;
    fa_cl_attention_desc_init(d, c->B, c->Hq, c->Sq, c->Sk, c->D, c->dtype);
    d->heads_kv = c->Hkv;
    d->causal = c->causal;
    d->window_left = c->wl;
    d->window_right = c->wr;
    d->scale = c->scale;
    d->head_dim_v = dv > 0 ? dv : 0;
    fa_cl_storage *dt[4] = {&d->q_type, &d->k_type, &d->v_type, &d->o_type};
    for (int i = 0; i < 4; i++)
        *dt[i] = types[i] == c->dtype ? FA_CL_STORAGE_DTYPE : (fa_cl_storage)((int)types[i] + 1);
    int64_t *ds[4] = {d->q_stride, d->k_stride, d->v_stride, d->o_stride};
    size_t *off[4] = {&d->q_offset, &d->k_offset, &d->v_offset, &d->o_offset};
    for (int i = 0; i < 4; i++) {
        memcpy(ds[i], p->t[i].desc_stride, sizeof p->t[i].desc_stride);
        *off[i] = p->t[i].offset;
    }

    const size_t no = (size_t)(c->B * c->Hq * c->Sq * p->dv);
    p->lse_elems = (size_t)(c->B * c->Hq * c->Sq);
    p->lse_slack = 7;
    p->lse_img = (float *)malloc((p->lse_elems + p->lse_slack) * sizeof(float));
    if (!p->lse_img) {
        tu_problem_free(p);
        return -1;
    }
    if (want_ref) {
        p->ref_o = (double *)malloc(no * sizeof(double));
        p->ref_lse = (double *)malloc(p->lse_elems * sizeof(double));
        if (!p->ref_o || !p->ref_lse) {
            tu_problem_free(p);
            return -1;
        }
        tu_attention_f64_dv(&p->c, p->dv, NULL, p->x[0], p->x[1], p->x[2], p->ref_o, p->ref_lse);
    }
    if (ctx) {
        for (int i = 0; i < 4; i++) {
            p->mem[i] = tu_buffer(ctx, i < 3 ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE, tu_tensor_bytes(&p->t[i]),
                                  p->t[i].img);
            if (!p->mem[i]) {
                tu_problem_free(p);
                return -1;
            }
        }
        if (c->lse) {
            p->lse_mem = tu_buffer(ctx, CL_MEM_WRITE_ONLY, (p->lse_elems + p->lse_slack) * sizeof(float), NULL);
            if (!p->lse_mem) {
                tu_problem_free(p);
                return -1;
            }
        }
        if (tu_problem_poison(p, ctx) != 0) {
            tu_problem_free(p);
            return -1;
        }
    }
    return 0;
}

void tu_run_and_check(tu_tally *t, fa_cl_context *ctx, tu_problem *p, const fa_cl_forward_args *a, const double *ref_o,
                      const double *ref_lse, const char *name, int reference)
{
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.kernel = "reference";
    fa_cl_status st;
    if (reference) {
        st = fa_cl_reference_run(ctx, &p->desc, a);
    } else {
        fa_cl_plan *plan = NULL;
        st = fa_cl_plan_create(ctx, &p->desc, &plan);
        if (tu_refused_by_design(ctx, st, name))
            return;
        if (st == FA_CL_SUCCESS) {
            fa_cl_plan_get_info(plan, &info);
            st = fa_cl_plan_run(plan, a);
        }
        fa_cl_plan_release(plan);
        if (st == FA_CL_SUCCESS && !tu_kernel_as_expected(t, p->desc.dtype, info.kernel, name))
            return;
    }
    p->kernel = info.kernel;
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        return;
    }
    if (tu_problem_read(p, ctx) != 0) {
        tu_expect(t, 0, "%s: read failed", name);
        return;
    }
    tu_problem_set_bar(p, info.kernel);
    tu_result res;
    tu_problem_check(p, ref_o, ref_lse, &res);
    char detail[400];
    tu_result_format(&res, p, detail, sizeof detail);
    tu_expect(t, res.ok, "%s [%s %dx%d splits %d launches %d]: %s", name, info.kernel, info.block_q, info.block_kv,
              info.splits, info.launches, detail);
}

int tu_problem_poison(tu_problem *p, fa_cl_context *ctx)
{
    tu_tensor_fill_bits(&p->t[3], tu_sentinel_bits(p->t[3].dtype));
    for (size_t i = 0; i < p->lse_elems + p->lse_slack; i++)
        tu_store_bits(FA_CL_F32, p->lse_img, i, tu_sentinel_bits(FA_CL_F32));
    if (tu_write(ctx, p->mem[3], tu_tensor_bytes(&p->t[3]), p->t[3].img) != 0)
        return -1;
    if (p->lse_mem && tu_write(ctx, p->lse_mem, (p->lse_elems + p->lse_slack) * sizeof(float), p->lse_img) != 0)
        return -1;
    return 0;
}

int tu_problem_read(tu_problem *p, fa_cl_context *ctx)
{
    if (tu_read(ctx, p->mem[3], tu_tensor_bytes(&p->t[3]), p->t[3].img) != 0)
        return -1;
    if (p->lse_mem && tu_read(ctx, p->lse_mem, (p->lse_elems + p->lse_slack) * sizeof(float), p->lse_img) != 0)
        return -1;
    return 0;
}

void tu_problem_output(const tu_problem *p, double *o, double *lse)
{
    const tu_tensor *t = &p->t[3];
    size_t n = 0;
    for (int64_t b = 0; b < t->dim[0]; b++)
        for (int64_t h = 0; h < t->dim[1]; h++)
            for (int64_t s = 0; s < t->dim[2]; s++)
                for (int64_t d = 0; d < t->dim[3]; d++)
                    o[n++] = tu_load(t->dtype, t->img, tu_tensor_index(t, b, h, s, d));
    if (lse)
        for (size_t i = 0; i < p->lse_elems; i++)
            lse[i] = p->lse_img[i];
}

static void note_first(tu_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note_first(tu_result *r, const char *fmt, ...)
{
    if (r->first[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->first, sizeof r->first, fmt, ap);
    va_end(ap);
}

void tu_problem_check(const tu_problem *p, const double *ref_o, const double *ref_lse, tu_result *r)
{
    memset(r, 0, sizeof *r);
    const tu_tensor *t = &p->t[3];
    const fa_cl_dtype dt = t->dtype; /* o's storage: its sentinel and (unless p->bar) the accuracy bar */
    const fa_cl_dtype bar = p->bar ? (fa_cl_dtype)(p->bar - 1) : dt;
    const uint32_t sentinel = tu_sentinel_bits(dt);
    for (size_t e = 0; e < t->elems; e++) {
        uint32_t bits = tu_load_bits(dt, t->img, e);
        if (t->inview[e] && bits == sentinel) {
            r->unwritten++;
            note_first(r, "o element %zu of the buffer (inside the view) was never written", e);
        } else if (!t->inview[e] && bits != sentinel) {
            r->clobbered++;
            note_first(r, "o element %zu of the buffer (outside the view) was overwritten with bits 0x%x", e,
                       (unsigned)bits);
        }
    }
    const int64_t D = t->dim[3];
    size_t row = 0, n = 0;
    for (int64_t b = 0; b < t->dim[0]; b++)
        for (int64_t h = 0; h < t->dim[1]; h++)
            for (int64_t s = 0; s < t->dim[2]; s++, row++) {
                const int masked = isinf(ref_lse[row]) && ref_lse[row] < 0;
                r->masked_rows += (size_t)masked;
                int row_bad = 0;
                for (int64_t d = 0; d < D; d++, n++) {
                    size_t idx = tu_tensor_index(t, b, h, s, d);
                    if (tu_load_bits(dt, t->img, idx) == sentinel)
                        continue; /* counted as unwritten */
                    const double got = tu_load(dt, t->img, idx), ref = ref_o[n];
                    if (isnan(ref)) { /* NaN inputs: NaN must come out exactly where the math puts it */
                        if (!isnan(got)) {
                            r->bad++;
                            note_first(r, "o[%lld,%lld,%lld,%lld] = %g, reference NaN", (long long)b, (long long)h,
                                       (long long)s, (long long)d, got);
                        }
                        continue;
                    }
                    if (masked) {
                        if (got != 0.0) {
                            row_bad = 1;
                            note_first(r, "o[%lld,%lld,%lld,%lld] = %g but the row sees no key (must be 0)",
                                       (long long)b, (long long)h, (long long)s, (long long)d, got);
                        }
                        continue;
                    }
                    const double err = fabs(got - ref), bound = fa_cl_tolerance_bound(bar, ref);
                    if (!(err <= r->max_err))
                        r->max_err = err; /* NaN sticks */
                    const double ratio = err / bound;
                    if (!(ratio <= r->max_ratio)) {
                        r->max_ratio = ratio;
                        r->bound_at_max = bound;
                    }
                    if (!fa_cl_tolerance_ok(bar, got, ref)) {
                        r->bad++;
                        note_first(r, "o[%lld,%lld,%lld,%lld] = %.9g, reference %.9g, |err| %.3g > %.3g",
                                   (long long)b, (long long)h, (long long)s, (long long)d, got, ref, err, bound);
                    }
                }
                r->masked_bad += (size_t)row_bad;
            }
    if (p->c.lse) {
        const uint32_t fs = tu_sentinel_bits(FA_CL_F32);
        for (size_t i = 0; i < p->lse_elems + p->lse_slack; i++) {
            uint32_t bits = tu_load_bits(FA_CL_F32, p->lse_img, i);
            if (i < p->lse_elems && bits == fs) {
                r->lse_unwritten++;
                note_first(r, "lse[%zu] was never written", i);
                continue;
            }
            if (i >= p->lse_elems) {
                if (bits != fs) {
                    r->lse_clobbered++;
                    note_first(r, "lse element %zu (past the %zu of the view) was overwritten", i, p->lse_elems);
                }
                continue;
            }
            const double got = p->lse_img[i], ref = ref_lse[i];
            const fa_cl_dtype q_rounded = (fa_cl_dtype)(p->lse_bar - 1);
            const double lse_bound =
                p->lse_bar ? fa_cl_tolerance_lse_rounded_q_bound(q_rounded, ref) : fa_cl_tolerance_lse_bound(ref);
            const int lse_ok = p->lse_bar ? (isinf(ref) || isinf(got) ? got == ref : fabs(got - ref) <= lse_bound)
                                          : fa_cl_tolerance_lse_ok(got, ref);
            if (isnan(ref) ? !isnan(got) : !lse_ok) {
                r->lse_bad++;
                note_first(r, "lse[%zu] = %.9g, reference %.9g", i, got, ref);
            }
            if (isfinite(ref)) {
                const double err = fabs(got - ref), ratio = err / lse_bound;
                if (!(err <= r->lse_max_err))
                    r->lse_max_err = err;
                if (!(ratio <= r->lse_max_ratio))
                    r->lse_max_ratio = ratio;
            }
        }
    }
    r->ok = r->bad == 0 && r->unwritten == 0 && r->clobbered == 0 && r->masked_bad == 0 && r->lse_bad == 0 &&
            r->lse_unwritten == 0 && r->lse_clobbered == 0;
}

void tu_result_format(const tu_result *r, const tu_problem *p, char *buf, size_t size)
{
    const fa_cl_dtype bar = p->bar ? (fa_cl_dtype)(p->bar - 1) : p->t[3].dtype;
    int n = snprintf(buf, size, "max|err| %.3g (tol %.3g+%.3g|ref|, worst ratio %.3f)", r->max_err,
                     fa_cl_tolerance_abs(bar), fa_cl_tolerance_rel(bar), r->max_ratio);
    if (n > 0 && (size_t)n < size && p->c.lse && p->lse_bar) /* q rounded to the compute type */
        n += snprintf(buf + n, size - (size_t)n, " lse max|err| %.3g (tol %.3g+%.3g|ref|: q rounded, ratio %.3f)",
                      r->lse_max_err, fa_cl_tolerance_abs((fa_cl_dtype)(p->lse_bar - 1)),
                      fa_cl_tolerance_rel((fa_cl_dtype)(p->lse_bar - 1)), r->lse_max_ratio);
    else if (n > 0 && (size_t)n < size && p->c.lse)
        n += snprintf(buf + n, size - (size_t)n, " lse max|err| %.3g (tol rel %.0e, ratio %.3f)", r->lse_max_err,
                      fa_cl_tolerance_lse_rel(), r->lse_max_ratio);
    if (n > 0 && (size_t)n < size && r->masked_rows)
        n += snprintf(buf + n, size - (size_t)n, " masked rows %zu", r->masked_rows);
    if (n > 0 && (size_t)n < size && !r->ok)
        snprintf(buf + n, size - (size_t)n,
                 " | bad %zu unwritten %zu clobbered %zu masked_bad %zu lse_bad %zu lse_unwritten %zu "
                 "lse_clobbered %zu; first: %s",
                 r->bad, r->unwritten, r->clobbered, r->masked_bad, r->lse_bad, r->lse_unwritten, r->lse_clobbered,
                 r->first);
}

int tu_refused_by_design(fa_cl_context *ctx, fa_cl_status st, const char *name)
{
    const char *why = fa_cl_last_error(ctx);
    if (st != FA_CL_ERROR_UNSUPPORTED ||
        !(strstr(why, "takes no") || strstr(why, "takes one storage type") || strstr(why, "not verified")))
        return 0;
    /* logged, not counted (nor CTest's "SKIP: ": the suite's other cases count); a suite with
     * nothing that ran fails (tu_finish) */
    printf("skipped, refused by design: %s: %s\n", name, why);
    refused_cases++;
    return 1;
}

int tu_kernel_as_expected(tu_tally *t, fa_cl_dtype dtype, const char *kernel, const char *name)
{
    const char *list = getenv("TU_EXPECT_KERNEL"), *type = tu_dtype_name(dtype);
    const size_t n = strlen(type);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > n && strncmp(p, type, n) == 0 && p[n] == ':') {
            const char *want = p + n + 1;
            const size_t len = (size_t)(end - want);
            if (strlen(kernel) == len && strncmp(kernel, want, len) == 0)
                return 1;
            tu_expect(t, 0, "%s: planned on %s, TU_EXPECT_KERNEL wants %.*s", name, kernel, (int)len, want);
            return 0;
        }
        p = *end ? end + 1 : end;
    }
    return 1;
}

const char *tu_tune(const char *key, char *buf, size_t size)
{
    const char *text = getenv("FA_CL_TUNE");
    const size_t n = strlen(key);
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p));
        const char *k = colon ? colon + 1 : p;
        if ((size_t)(end - k) > n && strncmp(k, key, n) == 0 && k[n] == '=') {
            snprintf(buf, size, "%.*s", (int)(end - k - (ptrdiff_t)n - 1), k + n + 1);
            return buf;
        }
        p = *end ? end + 1 : end;
    }
    return NULL;
}

void tu_problem_set_bar(tu_problem *p, const char *kernel)
{
    /* a tensor-core kernel computing in a 16-bit type narrower than q or o (tolerance.h) */
    const int tc = p->tc_compute && tu_tensor_core_kernel(kernel);
    const fa_cl_dtype compute = (fa_cl_dtype)(p->tc_compute - 1);
    p->bar = tc ? 1 + (int)fa_cl_tolerance_mixed_dtype(p->t[3].dtype, compute) : 0;
    p->lse_bar = tc && p->t[0].dtype != compute ? 1 + (int)compute : 0;
}

int tu_tensor_core_skip(fa_cl_context *ctx)
{
    fa_cl__limits lim;
    char why[300];
    fa_cl__context_limits(ctx, &lim);
    if (fa_cl__family_available(&lim, fa_cl__kernel_by_name("nvidia-mma"), why, sizeof why))
        return 0;
    printf("SKIP: nvidia-mma %s (FA_CL_TUNE nvidia-mma:emulate=1 plans it on any device)\n", why);
    return 1;
}

int tu_tensor_core_kernel(const char *kernel)
{
    return kernel && (strcmp(kernel, "nvidia-mma") == 0 || strcmp(kernel, "nvidia-wgmma") == 0);
}

int tu_nvidia(fa_cl_context *ctx)
{
    fa_cl__device_traits dev;
    fa_cl__device_traits_query(ctx->device, &ctx->props, &dev);
    return dev.vendor == FA_CL_VENDOR_NVIDIA;
}

int tu_hopper(fa_cl_context *ctx)
{
    fa_cl__device_traits dev;
    fa_cl__device_traits_query(ctx->device, &ctx->props, &dev);
    return dev.vendor == FA_CL_VENDOR_NVIDIA && dev.arch_major == 9 && dev.arch_minor == 0;
}

double tu_now_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
