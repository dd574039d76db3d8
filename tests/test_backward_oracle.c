/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The float64 backward oracle (tu_attention_backward_f64) against central finite differences of the
 * float64 forward, no device: the device tests of the backward trust it, so it is checked here
 * against nothing but the forward's own definition. For L = sum(w o O) (so dout = w), every element
 * x of q, k and v: dL/dx from the oracle against (L(x + h) - L(x - h)) / (2h) of tu_attention_f64d.
 * The cases cover GQA/MQA sums, causal masks, windows, rows that see no key, keys no row sees and
 * large scores (a nearly one-hot softmax); each also checks that the float and double entry points
 * agree bit for bit, and that scores shifted to 800 leave the gradients alone (shift_check).
 * The modifiers' cases (softcap, ALiBi, sinks, an additive mask, alone and together) check dq, dk,
 * dv and the sinks' gradient dsink the same way (tu_attention_backward_f64_mods).
 */
#include "oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The step: absolute, as every input lies in [-3, 3]. The central difference's error is about
 * h^2 |L'''| / 6 (truncation) + eps |L| / h (rounding of L, |L| of order 1). Measured over these
 * cases: h = 1e-4 leaves up to 2.4e-8 (truncation, in the large-score cases), 1e-6 up to 1.6e-9 and
 * 1e-7 up to 1.6e-8 (rounding); 1e-5 balances the two at 2.6e-10.
 */
static const double fd_step = 1e-5;

/*
 * The bar: |analytic - numeric| <= fd_tol * (1 + |numeric|). The oracle itself is float64 to a few
 * ulps; what the bar absorbs is the difference's own error above: at most 2.6e-10 measured (the
 * large-score cases; 8e-11 in the others), so 2e-9 leaves a margin of about 8 for another libm or
 * contracted multiply-adds, while a wrong term (a missing D_i, a lost GQA sum, a wrong scale or
 * mask) moves some gradient by far more.
 */
static const double fd_tol = 2e-9;

typedef struct bo_case {
    const char *name;
    tu_case c;
    double range; /* inputs uniform in [-range, range] */
} bo_case;

/* splitmix64: fixed seed, the same values everywhere */
static uint64_t rng = 0x5eed0fbac4a4dULL;

static double uniform(double range)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const double u = (double)(z >> 11) * 0x1p-53; /* [0, 1) */
    /* rounded to float: the float entry points then see the very same values */
    return (double)(float)((2.0 * u - 1.0) * range);
}

static double loss(const tu_case *c, const tu_mods *mods, const double *q, const double *k, const double *v,
                   const double *w, double *o)
{
    const size_t n = (size_t)(c->B * c->Hq * c->Sq * c->D);
    tu_attention_f64d_mods(c, mods, q, k, v, o, NULL);
    double l = 0.0;
    for (size_t i = 0; i < n; i++)
        l += w[i] * o[i];
    return l;
}

/* The largest error of grad against the finite differences over x[0..n) (x is restored). */
static double fd_check(const tu_case *c, const tu_mods *mods, double *x, size_t n, const double *grad, const double *q,
                       const double *k, const double *v, const double *w, double *o, double *worst_abs)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double x0 = x[i];
        /* the steps as represented: x0 + h - (x0 - h) need not be 2h exactly */
        const double xp = x0 + fd_step, xm = x0 - fd_step;
        x[i] = xp;
        const double lp = loss(c, mods, q, k, v, w, o);
        x[i] = xm;
        const double lm = loss(c, mods, q, k, v, w, o);
        x[i] = x0;
        const double numeric = (lp - lm) / (xp - xm);
        const double err = fabs(grad[i] - numeric);
        const double rel = err / (1.0 + fabs(numeric));
        if (!(rel <= worst)) /* NaN counts as the worst */
            worst = rel;
        if (err > *worst_abs)
            *worst_abs = err;
    }
    return worst;
}

static double *alloc(size_t n)
{
    double *p = (double *)calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "test_backward_oracle: out of memory\n");
        exit(1);
    }
    return p;
}

/*
 * The softmax's stability, which the differences cannot see (below exp's overflow at 709 a softmax
 * without the row maximum is as exact in double): the same case with one more column, q_i = shift
 * and k_j = 1 there (v and w 0), adds scale * shift to every score of a row, which leaves P and so
 * the gradients of the other columns as they were. At scale * shift = 800 a softmax without the
 * row maximum overflows (exp(800) = inf) and gives NaN. What remains is the scores' rounding at
 * 800 (an ulp is 1.1e-13): at most 3.2e-14 measured, against the bar shift_tol * (1 + |gradient|).
 */
static const double shift_tol = 1e-12;

static double shift_check(const tu_case *c, const double *q, const double *k, const double *v, const double *w)
{
    /* both with the scale as a float (the default would follow D + 1, and 1/sqrt(3) is no float) */
    tu_case cb = *c, cs = *c;
    cb.scale = cs.scale = (float)tu_case_scale(c);
    cs.D = c->D + 1;
    const double shift = 800.0 / (double)cs.scale;
    const int64_t D = c->D, rq = c->B * c->Hq * c->Sq, rkv = c->B * c->Hkv * c->Sk;
    double *dq = alloc((size_t)(rq * D)), *dk = alloc((size_t)(rkv * D)), *dv = alloc((size_t)(rkv * D));
    tu_attention_backward_f64d(&cb, q, k, v, w, dq, dk, dv);
    double *q2 = alloc((size_t)(rq * (D + 1))), *w2 = alloc((size_t)(rq * (D + 1)));
    double *dq2 = alloc((size_t)(rq * (D + 1)));
    double *k2 = alloc((size_t)(rkv * (D + 1))), *v2 = alloc((size_t)(rkv * (D + 1)));
    double *dk2 = alloc((size_t)(rkv * (D + 1))), *dv2 = alloc((size_t)(rkv * (D + 1)));
    for (int64_t r = 0; r < rq; r++) {
        for (int64_t d = 0; d < D; d++)
            q2[r * (D + 1) + d] = q[r * D + d], w2[r * (D + 1) + d] = w[r * D + d];
        q2[r * (D + 1) + D] = shift; /* w2 there: 0 (calloc) */
    }
    for (int64_t r = 0; r < rkv; r++) {
        for (int64_t d = 0; d < D; d++)
            k2[r * (D + 1) + d] = k[r * D + d], v2[r * (D + 1) + d] = v[r * D + d];
        k2[r * (D + 1) + D] = 1.0; /* v2 there: 0 */
    }
    tu_attention_backward_f64d(&cs, q2, k2, v2, w2, dq2, dk2, dv2);
    double worst = 0.0;
    for (int64_t r = 0; r < rq + 2 * rkv; r++)
        for (int64_t d = 0; d < D; d++) {
            const double *g = r < rq ? dq2 : r < rq + rkv ? dk2 : dv2;
            const double *ref = r < rq ? dq : r < rq + rkv ? dk : dv;
            const int64_t rr = r < rq ? r : r < rq + rkv ? r - rq : r - rq - rkv;
            const double e = fabs(g[rr * (D + 1) + d] - ref[rr * D + d]) / (1.0 + fabs(ref[rr * D + d]));
            if (!(e <= worst))
                worst = e;
        }
    free(q2), free(w2), free(dq2), free(k2), free(v2), free(dk2), free(dv2), free(dq), free(dk), free(dv);
    return worst;
}

/* 1 when the case passes. */
static int run_case(const bo_case *bc)
{
    const tu_case *c = &bc->c;
    const size_t nq = (size_t)(c->B * c->Hq * c->Sq * c->D), nkv = (size_t)(c->B * c->Hkv * c->Sk * c->D);
    double *q = alloc(nq), *k = alloc(nkv), *v = alloc(nkv), *w = alloc(nq), *o = alloc(nq);
    double *dq = alloc(nq), *dk = alloc(nkv), *dv = alloc(nkv);
    double *dq2 = alloc(nq), *dk2 = alloc(nkv), *dv2 = alloc(nkv), *o2 = alloc(nq);
    double *lse = alloc((size_t)(c->B * c->Hq * c->Sq)), *lse2 = alloc((size_t)(c->B * c->Hq * c->Sq));
    float *qf = (float *)calloc(nq + 1, sizeof *qf), *kf = (float *)calloc(nkv + 1, sizeof *kf);
    float *vf = (float *)calloc(nkv + 1, sizeof *vf), *wf = (float *)calloc(nq + 1, sizeof *wf);
    if (!qf || !kf || !vf || !wf) {
        fprintf(stderr, "test_backward_oracle: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < nq; i++)
        q[i] = uniform(bc->range);
    for (size_t i = 0; i < nkv; i++)
        k[i] = uniform(bc->range);
    for (size_t i = 0; i < nkv; i++)
        v[i] = uniform(bc->range);
    for (size_t i = 0; i < nq; i++)
        w[i] = uniform(1.0);
    for (size_t i = 0; i < nq; i++)
        qf[i] = (float)q[i], wf[i] = (float)w[i];
    for (size_t i = 0; i < nkv; i++)
        kf[i] = (float)k[i], vf[i] = (float)v[i];

    /* the analytic gradients through the float entry point, the one the device tests call */
    tu_attention_backward_f64(c, qf, kf, vf, wf, dq, dk, dv);

    /* the double entry points are the float ones on the same values, bit for bit */
    int same = 1;
    tu_attention_backward_f64d(c, q, k, v, w, dq2, dk2, dv2);
    same &= !memcmp(dq, dq2, nq * sizeof *dq) && !memcmp(dk, dk2, nkv * sizeof *dk) &&
            !memcmp(dv, dv2, nkv * sizeof *dv);
    tu_attention_f64(c, qf, kf, vf, o, lse);
    tu_attention_f64d(c, q, k, v, o2, lse2);
    same &= !memcmp(o, o2, nq * sizeof *o) && !memcmp(lse, lse2, (size_t)(c->B * c->Hq * c->Sq) * sizeof *lse);

    double worst_abs = 0.0;
    const double eq = fd_check(c, NULL, q, nq, dq, q, k, v, w, o, &worst_abs);
    const double ek = fd_check(c, NULL, k, nkv, dk, q, k, v, w, o, &worst_abs);
    const double ev = fd_check(c, NULL, v, nkv, dv, q, k, v, w, o, &worst_abs);
    const double es = shift_check(c, q, k, v, w);
    const int ok = same && eq <= fd_tol && ek <= fd_tol && ev <= fd_tol && es <= shift_tol;
    printf("%s %-30s B%lld Hq%lld Hkv%lld Sq%lld Sk%lld D%lld: max err/(1+|num|) dq %.2e dk %.2e dv %.2e "
           "(abs %.2e), shifted %.2e%s\n",
           ok ? "ok  " : "FAIL", bc->name, (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq,
           (long long)c->Sk, (long long)c->D, eq, ek, ev, worst_abs, es,
           same ? "" : "; the float and double entry points differ");

    free(q), free(k), free(v), free(w), free(o), free(dq), free(dk), free(dv);
    free(dq2), free(dk2), free(dv2), free(o2), free(lse), free(lse2);
    free(qf), free(kf), free(vf), free(wf);
    return ok;
}

/* ---- the score modifiers (tu_attention_backward_f64_mods) ------------------------------------- */

typedef struct bo_mods_case {
    const char *name;
    tu_case c;
    double softcap;
    int alibi, sinks, mask; /* mask: additive, a fifth of the entries -inf */
} bo_mods_case;

/*
 * The sinks' step: sinks are floats (tu_mods), so the step must be exact in float: sinks are
 * multiples of 2^-10 in [-2, 2] and the step 2^-17 (7.6e-6, near fd_step), so x +- h and their
 * difference are exact.
 */
static const double sink_step = 0x1p-17;

/* 1 when the case passes: dq, dk, dv and dsink against central differences of the forward with the
 * same modifiers, and the float entry point against the double one bit for bit. */
static int run_mods_case(const bo_mods_case *mc)
{
    const tu_case *c = &mc->c;
    const size_t nq = (size_t)(c->B * c->Hq * c->Sq * c->D), nkv = (size_t)(c->B * c->Hkv * c->Sk * c->D);
    const size_t nm = (size_t)(c->B * c->Hq * c->Sq * c->Sk), hq = (size_t)c->Hq;
    double *q = alloc(nq), *k = alloc(nkv), *v = alloc(nkv), *w = alloc(nq), *o = alloc(nq);
    double *dq = alloc(nq), *dk = alloc(nkv), *dv = alloc(nkv), *dsink = alloc(hq);
    double *dq2 = alloc(nq), *dk2 = alloc(nkv), *dv2 = alloc(nkv), *dsink2 = alloc(hq), *mask = alloc(nm);
    float *qf = (float *)calloc(nq + 1, sizeof *qf), *kf = (float *)calloc(nkv + 1, sizeof *kf);
    float *vf = (float *)calloc(nkv + 1, sizeof *vf), *wf = (float *)calloc(nq + 1, sizeof *wf);
    float *slopes = (float *)calloc(hq, sizeof *slopes), *sinks = (float *)calloc(hq, sizeof *sinks);
    if (!qf || !kf || !vf || !wf || !slopes || !sinks) {
        fprintf(stderr, "test_backward_oracle: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < nq; i++)
        q[i] = uniform(1.5), w[i] = uniform(1.0);
    for (size_t i = 0; i < nkv; i++)
        k[i] = uniform(1.5), v[i] = uniform(1.0);
    for (size_t i = 0; i < nq; i++)
        qf[i] = (float)q[i], wf[i] = (float)w[i];
    for (size_t i = 0; i < nkv; i++)
        kf[i] = (float)k[i], vf[i] = (float)v[i];
    for (size_t h = 0; h < hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)hq) * 2.0f;
        sinks[h] = (float)(ldexp(floor(uniform(2.0) * 1024.0), -10));
    }
    for (size_t i = 0; i < nm; i++) {
        const double u = uniform(1.0);
        mask[i] = u < -0.6 ? -INFINITY : 1.5 * u;
    }
    const tu_mods mods = {mc->softcap, mc->alibi ? slopes : NULL, mc->sinks ? sinks : NULL, mc->mask ? mask : NULL};

    tu_attention_backward_f64_mods(c, &mods, qf, kf, vf, wf, dq, dk, dv, dsink);
    tu_attention_backward_f64d_mods(c, &mods, q, k, v, w, dq2, dk2, dv2, dsink2);
    const int same = !memcmp(dq, dq2, nq * sizeof *dq) && !memcmp(dk, dk2, nkv * sizeof *dk) &&
                     !memcmp(dv, dv2, nkv * sizeof *dv) && !memcmp(dsink, dsink2, hq * sizeof *dsink);

    double worst_abs = 0.0;
    const double eq = fd_check(c, &mods, q, nq, dq, q, k, v, w, o, &worst_abs);
    const double ek = fd_check(c, &mods, k, nkv, dk, q, k, v, w, o, &worst_abs);
    const double ev = fd_check(c, &mods, v, nkv, dv, q, k, v, w, o, &worst_abs);
    double es = 0.0, dsink_max = 0.0;
    for (size_t h = 0; h < hq; h++) {
        if (!mc->sinks) {
            es = dsink[h] != 0.0 ? 1.0 : es; /* no sink, no gradient */
            continue;
        }
        const float x0 = sinks[h];
        sinks[h] = (float)(x0 + sink_step);
        const double lp = loss(c, &mods, q, k, v, w, o);
        sinks[h] = (float)(x0 - sink_step);
        const double lm = loss(c, &mods, q, k, v, w, o);
        sinks[h] = x0;
        const double numeric = (lp - lm) / (2.0 * sink_step);
        const double rel = fabs(dsink[h] - numeric) / (1.0 + fabs(numeric));
        if (!(rel <= es))
            es = rel;
        dsink_max = fabs(dsink[h]) > dsink_max ? fabs(dsink[h]) : dsink_max;
    }
    /* a sink gradient that is 0 everywhere would pass the differences of a loss it does not move */
    const int moved = !mc->sinks || dsink_max > 1e-3;
    const int ok = same && moved && eq <= fd_tol && ek <= fd_tol && ev <= fd_tol && es <= fd_tol;
    printf("%s %-30s B%lld Hq%lld Hkv%lld Sq%lld Sk%lld D%lld softcap %g%s%s%s: max err/(1+|num|) dq %.2e dk %.2e "
           "dv %.2e dsink %.2e (max |dsink| %.2e)%s\n",
           ok ? "ok  " : "FAIL", mc->name, (long long)c->B, (long long)c->Hq, (long long)c->Hkv, (long long)c->Sq,
           (long long)c->Sk, (long long)c->D, mc->softcap, mc->alibi ? " alibi" : "", mc->sinks ? " sinks" : "",
           mc->mask ? " mask" : "", eq, ek, ev, es, dsink_max, same ? "" : "; the float and double entry points differ");
    free(q), free(k), free(v), free(w), free(o), free(dq), free(dk), free(dv), free(dsink);
    free(dq2), free(dk2), free(dv2), free(dsink2), free(mask);
    free(qf), free(kf), free(vf), free(wf), free(slopes), free(sinks);
    return ok;
}

int main(void)
{
    /* tu_case: B, Hq, Hkv, Sq, Sk, D, dtype, causal, wl, wr, layout, scale, lse */
    static const bo_case cases[] = {
        {"plain", {1, 1, 1, 3, 5, 4, FA_CL_F32, 0, -1, -1, NULL, 0.0f, 0}, 1.0},
        {"gqa causal", {2, 4, 2, 5, 5, 3, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 0}, 1.0},
        /* diag = i - 2: rows 0 and 1 see no key */
        {"mqa window (1,0), Sq > Sk", {1, 2, 1, 6, 4, 3, FA_CL_F32, 0, 1, 0, NULL, 0.0f, 0}, 1.0},
        /* diag = i + 3: no row sees key 0 */
        {"window (2,1), Sq < Sk", {1, 2, 2, 4, 7, 2, FA_CL_F32, 0, 2, 1, NULL, 0.0f, 0}, 1.0},
        /* bottom-right: rows 0..3 see no key */
        {"mqa causal, Sq > Sk", {1, 3, 1, 7, 3, 4, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 0}, 1.0},
        {"window (-1,1), Sq < Sk", {2, 2, 1, 5, 8, 5, FA_CL_F32, 0, -1, 1, NULL, 0.0f, 0}, 1.0},
        {"gqa causal window (2,-1)", {1, 4, 2, 6, 6, 2, FA_CL_F32, 1, 2, -1, NULL, 0.0f, 0}, 1.0},
        /* scores up to 2 * 4 * 9 = 72: nearly one-hot rows, and the largest third derivatives */
        {"large scores (scale 2, [-3,3])", {1, 2, 1, 4, 6, 4, FA_CL_F32, 1, -1, -1, NULL, 2.0f, 0}, 3.0},
        {"large scores, gqa non-causal", {2, 4, 2, 3, 5, 3, FA_CL_F32, 0, -1, -1, NULL, 2.0f, 0}, 3.0},
    };
    /* the modifiers: each alone, together, with causal masks, windows (rows that see no key: with a
     * sink they have o = 0 and a sink gradient of 0), GQA sums */
    static const bo_mods_case mods_cases[] = {
        {"softcap 2", {1, 2, 1, 4, 6, 4, FA_CL_F32, 0, -1, -1, NULL, 1.5f, 0}, 2.0, 0, 0, 0},
        {"alibi causal", {1, 2, 2, 5, 5, 3, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 0}, 0.0, 1, 0, 0},
        {"sinks", {2, 2, 1, 3, 5, 4, FA_CL_F32, 0, -1, -1, NULL, 0.0f, 0}, 0.0, 0, 1, 0},
        {"sinks, Sq > Sk causal", {1, 2, 2, 6, 3, 3, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 0}, 0.0, 0, 1, 0},
        {"mask", {2, 2, 1, 4, 5, 3, FA_CL_F32, 0, -1, -1, NULL, 0.0f, 0}, 0.0, 0, 0, 1},
        {"everything, gqa window", {1, 4, 2, 5, 7, 3, FA_CL_F32, 0, 2, 1, NULL, 1.0f, 0}, 1.5, 1, 1, 1},
    };
    const int n = (int)(sizeof cases / sizeof cases[0]), nm = (int)(sizeof mods_cases / sizeof mods_cases[0]);
    int failed = 0;
    printf("backward oracle vs central differences: step %g (sinks %g), bar %g * (1 + |numeric|); shifted scores: "
           "bar %g\n", fd_step, sink_step, fd_tol, shift_tol);
    for (int i = 0; i < n; i++)
        failed += !run_case(&cases[i]);
    for (int i = 0; i < nm; i++)
        failed += !run_mods_case(&mods_cases[i]);
    printf("%d of %d cases failed\n", failed, n + nm);
    return failed ? 1 : 0;
}
