/* SPDX-License-Identifier: Apache-2.0 */
/* The float64 oracles of the fa_cl test suite (see oracle.h). */
#include "oracle.h"

#include <math.h>
#include <stdlib.h>

double tu_case_scale(const tu_case *c) { return c->scale > 0.0f ? (double)c->scale : 1.0 / sqrt((double)c->D); }

/* The mask of oracle.h, in one place: the forward and the backward must agree on it. */
static int key_visible(const tu_case *c, int64_t diag, int64_t j)
{
    return (!c->causal || j <= diag) && (c->wl < 0 || j >= diag - c->wl) && (c->wr < 0 || j <= diag + c->wr);
}

/* A float array as doubles (exact), so that one core serves the float and the double entry points. */
static double *widen(const float *x, size_t n)
{
    double *y = (double *)malloc((n ? n : 1) * sizeof *y);
    if (!y)
        abort(); /* a test oracle: nothing to recover */
    for (size_t i = 0; i < n; i++)
        y[i] = (double)x[i];
    return y;
}

static size_t q_elems(const tu_case *c) { return (size_t)(c->B * c->Hq * c->Sq * c->D); }
static size_t kv_elems(const tu_case *c) { return (size_t)(c->B * c->Hkv * c->Sk * c->D); }


static void attention_core(const tu_case *c, int64_t Dv, const tu_mods *mods, const double *q, const double *k,
                           const double *v, double *o, double *lse);

void tu_attention_f64(const tu_case *c, const float *q, const float *k, const float *v, double *o, double *lse)
{
    tu_attention_f64_mods(c, NULL, q, k, v, o, lse);
}

void tu_attention_f64d(const tu_case *c, const double *q, const double *k, const double *v, double *o, double *lse)
{
    attention_core(c, c->D, NULL, q, k, v, o, lse);
}

void tu_attention_f64_mods(const tu_case *c, const tu_mods *mods, const float *q, const float *k, const float *v,
                           double *o, double *lse)
{
    tu_attention_f64_dv(c, 0, mods, q, k, v, o, lse);
}

void tu_attention_f64_dv(const tu_case *c, int64_t dv, const tu_mods *mods, const float *q, const float *k,
                         const float *v, double *o, double *lse)
{
    const int64_t Dv = dv > 0 ? dv : c->D;
    double *qd = widen(q, q_elems(c)), *kd = widen(k, kv_elems(c)), *vd = widen(v, kv_elems(c) / (size_t)c->D * (size_t)Dv);
    attention_core(c, Dv, mods, qd, kd, vd, o, lse);
    free(qd);
    free(kd);
    free(vd);
}

/* Every input was a float widened exactly, so the results are those of the float arithmetic's
 * (double)x[d] reads that this replaced, bit for bit. */
static void attention_core(const tu_case *c, int64_t Dv, const tu_mods *mods, const double *q, const double *k,
                           const double *v, double *o, double *lse)
{
    const double softcap = mods ? mods->softcap : 0.0;
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, Sq = c->Sq, Sk = c->Sk, D = c->D;
    const int64_t group = Hq / Hkv;
    const double scale = tu_case_scale(c);
    double *s = (double *)malloc((size_t)Sk * sizeof *s);
    double *acc = (double *)malloc((size_t)Dv * sizeof *acc);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const int64_t hk = h / group;
            const double *kh = k + (size_t)((b * Hkv + hk) * Sk) * (size_t)D;
            const double *vh = v + (size_t)((b * Hkv + hk) * Sk) * (size_t)Dv;
            for (int64_t i = 0; i < Sq; i++) {
                const size_t row = (size_t)((b * Hq + h) * Sq + i);
                const double *qi = q + row * (size_t)D;
                const int64_t diag = i + Sk - Sq;
                double m = -INFINITY;
                int64_t seen = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    if (!key_visible(c, diag, j)) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    const double *kj = kh + (size_t)j * (size_t)D;
                    double t = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        t += qi[d] * kj[d];
                    t *= scale;
                    if (softcap > 0.0)
                        t = softcap * tanh(t / softcap);
                    if (mods && mods->slopes)
                        t -= (double)mods->slopes[h] * (double)llabs(diag - j);
                    if (mods && mods->mask)
                        t += mods->mask[row * (size_t)Sk + (size_t)j];
                    s[j] = t;
                    seen++;
                    if (s[j] > m)
                        m = s[j];
                }
                double *oi = o + row * (size_t)Dv;
                /* a sink: a key without a value, in the maximum and the sum */
                const double sink = mods && mods->sinks ? (double)mods->sinks[h] : -INFINITY;
                if (sink > m || isnan(sink))
                    m = sink;
                if (seen == 0 && !(sink > -INFINITY)) {
                    for (int64_t d = 0; d < Dv; d++)
                        oi[d] = 0.0;
                    if (lse)
                        lse[row] = -INFINITY;
                    continue;
                }
                double l = 0.0;
                for (int64_t d = 0; d < Dv; d++)
                    acc[d] = 0.0;
                if (sink > -INFINITY || isnan(sink))
                    l += exp(sink - m);
                for (int64_t j = 0; j < Sk; j++) {
                    if (s[j] == -INFINITY)
                        continue; /* not visible (a NaN score is kept and makes the row NaN) */
                    const double p = exp(s[j] - m);
                    l += p;
                    const double *vj = vh + (size_t)j * (size_t)Dv;
                    for (int64_t d = 0; d < Dv; d++)
                        acc[d] += p * vj[d];
                }
                /* every visible score -inf (e.g. a -Inf in q against positive k): as a row that sees no key */
                for (int64_t d = 0; d < Dv; d++)
                    oi[d] = l == 0.0 ? 0.0 : acc[d] / l;
                if (lse)
                    lse[row] = l == 0.0 ? -INFINITY : m + log(l);
            }
        }
    free(s);
    free(acc);
}

void tu_attention_f64d_mods(const tu_case *c, const tu_mods *mods, const double *q, const double *k, const double *v,
                            double *o, double *lse)
{
    attention_core(c, c->D, mods, q, k, v, o, lse);
}

/* The backward of attention_core: the modified scores recomputed as it computes them, dS through
 * the softcap's derivative (1 - tanh^2; ALiBi and the mask add constants), and the sinks' gradient
 * -P_sink D_i summed over each head's rows (dsink NULL: not wanted). */
static void backward_core(const tu_case *c, const tu_mods *mods, const double *q, const double *k, const double *v,
                          const double *dout, double *dq, double *dk, double *dv, double *dsink)
{
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, Sq = c->Sq, Sk = c->Sk, D = c->D;
    const int64_t group = Hq / Hkv;
    const double scale = tu_case_scale(c);
    const double softcap = mods ? mods->softcap : 0.0;
    for (size_t x = 0; x < kv_elems(c); x++)
        dk[x] = dv[x] = 0.0; /* summed into: over the rows, and over the query heads of a kv head */
    for (int64_t h = 0; dsink && h < Hq; h++)
        dsink[h] = 0.0;
    double *s = (double *)malloc((size_t)(Sk ? Sk : 1) * sizeof *s);
    double *p = (double *)malloc((size_t)(Sk ? Sk : 1) * sizeof *p);
    double *g = (double *)malloc((size_t)(Sk ? Sk : 1) * sizeof *g);
    double *oi = (double *)malloc((size_t)(D ? D : 1) * sizeof *oi);
    if (!s || !p || !g || !oi)
        abort();
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const size_t kv0 = (size_t)((b * Hkv + h / group) * Sk) * (size_t)D;
            const double *kh = k + kv0, *vh = v + kv0;
            double *dkh = dk + kv0, *dvh = dv + kv0;
            const double sink = mods && mods->sinks ? (double)mods->sinks[h] : -INFINITY;
            for (int64_t i = 0; i < Sq; i++) {
                const size_t row = (size_t)((b * Hq + h) * Sq + i);
                const double *qi = q + row * (size_t)D, *doi = dout + row * (size_t)D;
                double *dqi = dq + row * (size_t)D;
                const int64_t diag = i + Sk - Sq;
                for (int64_t d = 0; d < D; d++)
                    dqi[d] = 0.0;
                /* S and P recomputed as the forward does (-inf: not visible, skipped below); g the
                 * modified score's derivative by the scaled one */
                double m = sink;
                int64_t seen = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    s[j] = -INFINITY;
                    g[j] = 1.0;
                    if (!key_visible(c, diag, j))
                        continue;
                    const double *kj = kh + (size_t)j * (size_t)D;
                    double t = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        t += qi[d] * kj[d];
                    t *= scale;
                    if (softcap > 0.0) {
                        const double th = tanh(t / softcap);
                        t = softcap * th;
                        g[j] = 1.0 - th * th;
                    }
                    if (mods && mods->slopes)
                        t -= (double)mods->slopes[h] * (double)llabs(diag - j);
                    if (mods && mods->mask)
                        t += mods->mask[row * (size_t)Sk + (size_t)j];
                    s[j] = t;
                    seen++;
                    if (s[j] > m)
                        m = s[j];
                }
                if (seen == 0 && !(sink > -INFINITY))
                    continue; /* o = 0 whatever q, k, v (no key, no sink): the row contributes nothing */
                double l = sink > -INFINITY ? exp(sink - m) : 0.0;
                for (int64_t j = 0; j < Sk; j++)
                    if (s[j] != -INFINITY)
                        l += exp(s[j] - m);
                if (l == 0.0)
                    continue; /* every visible score -inf: as a row that sees no key */
                for (int64_t d = 0; d < D; d++)
                    oi[d] = 0.0;
                for (int64_t j = 0; j < Sk; j++) {
                    if (s[j] == -INFINITY)
                        continue;
                    p[j] = exp(s[j] - m) / l;
                    const double *vj = vh + (size_t)j * (size_t)D;
                    for (int64_t d = 0; d < D; d++)
                        oi[d] += p[j] * vj[d];
                }
                double Di = 0.0; /* dO_i . O_i: the softmax's Jacobian folded into one number per row */
                for (int64_t d = 0; d < D; d++)
                    Di += doi[d] * oi[d];
                if (dsink && sink > -INFINITY)
                    dsink[h] -= exp(sink - m) / l * Di; /* the sink: a key whose dP is 0 */
                for (int64_t j = 0; j < Sk; j++) {
                    if (s[j] == -INFINITY)
                        continue;
                    const double *kj = kh + (size_t)j * (size_t)D, *vj = vh + (size_t)j * (size_t)D;
                    double *dkj = dkh + (size_t)j * (size_t)D, *dvj = dvh + (size_t)j * (size_t)D;
                    double dp = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        dp += doi[d] * vj[d];
                    const double ds = p[j] * (dp - Di) * g[j];
                    for (int64_t d = 0; d < D; d++) {
                        dqi[d] += ds * kj[d];
                        dkj[d] += scale * ds * qi[d];
                        dvj[d] += p[j] * doi[d];
                    }
                }
                for (int64_t d = 0; d < D; d++)
                    dqi[d] *= scale;
            }
        }
    free(s);
    free(p);
    free(g);
    free(oi);
}

void tu_attention_backward_f64d(const tu_case *c, const double *q, const double *k, const double *v,
                                const double *dout, double *dq, double *dk, double *dv)
{
    backward_core(c, NULL, q, k, v, dout, dq, dk, dv, NULL);
}

void tu_attention_backward_f64d_mods(const tu_case *c, const tu_mods *mods, const double *q, const double *k,
                                     const double *v, const double *dout, double *dq, double *dk, double *dv,
                                     double *dsink)
{
    backward_core(c, mods, q, k, v, dout, dq, dk, dv, dsink);
}

void tu_attention_backward_f64(const tu_case *c, const float *q, const float *k, const float *v, const float *dout,
                               double *dq, double *dk, double *dv)
{
    tu_attention_backward_f64_mods(c, NULL, q, k, v, dout, dq, dk, dv, NULL);
}

void tu_attention_backward_f64_mods(const tu_case *c, const tu_mods *mods, const float *q, const float *k,
                                    const float *v, const float *dout, double *dq, double *dk, double *dv,
                                    double *dsink)
{
    double *qd = widen(q, q_elems(c)), *kd = widen(k, kv_elems(c)), *vd = widen(v, kv_elems(c));
    double *dod = widen(dout, q_elems(c));
    backward_core(c, mods, qd, kd, vd, dod, dq, dk, dv, dsink);
    free(qd);
    free(kd);
    free(vd);
    free(dod);
}
