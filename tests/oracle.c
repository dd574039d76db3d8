/* SPDX-License-Identifier: Apache-2.0 */
/* The float64 oracles of the fa_cl test suite (see oracle.h). */
#include "oracle.h"

#include <math.h>
#include <stdlib.h>

double tu_case_scale(const tu_case *c) { return c->scale > 0.0f ? (double)c->scale : 1.0 / sqrt((double)c->D); }

void tu_attention_f64(const tu_case *c, const float *q, const float *k, const float *v, double *o, double *lse)
{
    tu_attention_f64_mods(c, NULL, q, k, v, o, lse);
}

void tu_attention_f64_mods(const tu_case *c, const tu_mods *mods, const float *q, const float *k, const float *v,
                           double *o, double *lse)
{
    const double softcap = mods ? mods->softcap : 0.0;
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, Sq = c->Sq, Sk = c->Sk, D = c->D;
    const int64_t group = Hq / Hkv;
    const double scale = tu_case_scale(c);
    double *s = (double *)malloc((size_t)Sk * sizeof *s);
    double *acc = (double *)malloc((size_t)D * sizeof *acc);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            const int64_t hk = h / group;
            const float *kh = k + (size_t)((b * Hkv + hk) * Sk) * (size_t)D;
            const float *vh = v + (size_t)((b * Hkv + hk) * Sk) * (size_t)D;
            for (int64_t i = 0; i < Sq; i++) {
                const size_t row = (size_t)((b * Hq + h) * Sq + i);
                const float *qi = q + row * (size_t)D;
                const int64_t diag = i + Sk - Sq;
                double m = -INFINITY;
                int64_t seen = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    int visible = (!c->causal || j <= diag) && (c->wl < 0 || j >= diag - c->wl) &&
                                  (c->wr < 0 || j <= diag + c->wr);
                    if (!visible) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    const float *kj = kh + (size_t)j * (size_t)D;
                    double t = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        t += (double)qi[d] * (double)kj[d];
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
                double *oi = o + row * (size_t)D;
                /* a sink: a key without a value, in the maximum and the sum */
                const double sink = mods && mods->sinks ? (double)mods->sinks[h] : -INFINITY;
                if (sink > m || isnan(sink))
                    m = sink;
                if (seen == 0 && !(sink > -INFINITY)) {
                    for (int64_t d = 0; d < D; d++)
                        oi[d] = 0.0;
                    lse[row] = -INFINITY;
                    continue;
                }
                double l = 0.0;
                for (int64_t d = 0; d < D; d++)
                    acc[d] = 0.0;
                if (sink > -INFINITY || isnan(sink))
                    l += exp(sink - m);
                for (int64_t j = 0; j < Sk; j++) {
                    if (s[j] == -INFINITY)
                        continue; /* not visible (a NaN score is kept and makes the row NaN) */
                    const double p = exp(s[j] - m);
                    l += p;
                    const float *vj = vh + (size_t)j * (size_t)D;
                    for (int64_t d = 0; d < D; d++)
                        acc[d] += p * (double)vj[d];
                }
                /* every visible score -inf (e.g. a -Inf in q against positive k): as a row that sees no key */
                for (int64_t d = 0; d < D; d++)
                    oi[d] = l == 0.0 ? 0.0 : acc[d] / l;
                lse[row] = l == 0.0 ? -INFINITY : m + log(l);
            }
        }
    free(s);
    free(acc);
}
