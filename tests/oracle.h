/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test suite's oracles: what fa_cl computes, in float64 on the CPU and independently of the
 * library's code. The checks against them are in test_util.h (tu_problem_check), the bar in
 * tolerance.h.
 */
#ifndef FA_CL_TEST_ORACLE_H
#define FA_CL_TEST_ORACLE_H

#include <stdint.h>

#include "fa_cl.h"

/* One attention call: its shape, mask and scale (what the oracle reads), and how the tests lay its
 * tensors out (layout, lse: what tu_problem_init reads). */
typedef struct tu_case {
    int64_t B, Hq, Hkv, Sq, Sk, D;
    fa_cl_dtype dtype;
    int causal;
    int64_t wl, wr;     /* window; -1 unbounded */
    const char *layout; /* four letters for q, k, v, o; NULL = "CCCC" */
    float scale;        /* 0 = default 1/sqrt(D) */
    int lse;            /* pass an LSE buffer */
} tu_case;

/* The scale the semantics use: c->scale, or 1/sqrt(D) when it is 0. */
double tu_case_scale(const tu_case *c);

/*
 * float64 attention over logical [B,H,S,D] float inputs: o [B,Hq,Sq,D] and lse [B,Hq,Sq]
 * (-inf and o = 0 for a row that sees no key, or whose every visible score is -inf). Visibility, independently of the library:
 * with diag = i + Sk - Sq, key j is visible iff (!causal || j <= diag) && (wl < 0 || j >= diag - wl)
 * && (wr < 0 || j <= diag + wr). Query head h reads kv head h / (Hq / Hkv).
 */
void tu_attention_f64(const tu_case *c, const float *q, const float *k, const float *v, double *o, double *lse);

/* Score modifiers (include/fa_cl.h "Score modifiers"), per query head where given (NULL = none). */
typedef struct tu_mods {
    double softcap;       /* > 0: t <- softcap * tanh(t / softcap) on the scaled score t */
    const float *slopes;  /* ALiBi [Hq]: t <- t - slope_h * |diag - j| (after the softcap) */
    const float *sinks;   /* [Hq]: a logit in every row's denominator, without a value */
    const double *mask;   /* dense [B, Hq, Sq, Sk]: added to the scaled score last (-inf masks the key) */
} tu_mods;

/* tu_attention_f64 with the modifiers (mods NULL: none). With a sink a row that sees no key gets
 * o = 0 and lse = sink_h. */
void tu_attention_f64_mods(const tu_case *c, const tu_mods *mods, const float *q, const float *k, const float *v,
                           double *o, double *lse);
/* tu_attention_f64_mods with v [B, Hkv, Sk, dv] and o [B, Hq, Sq, dv] (desc.head_dim_v: the value
 * width; q and k stay c->D wide); dv 0 = c->D. */
void tu_attention_f64_dv(const tu_case *c, int64_t dv, const tu_mods *mods, const float *q, const float *k,
                         const float *v, double *o, double *lse);

/* tu_attention_f64 on double inputs (lse may be NULL): the finite-difference test differentiates it. */
void tu_attention_f64d(const tu_case *c, const double *q, const double *k, const double *v, double *o, double *lse);

/*
 * float64 backward (include/fa_cl.h "Backward"): from dout = dL/do [B,Hq,Sq,D], dq [B,Hq,Sq,D] and
 * dk, dv [B,Hkv,Sk,D] of tu_attention_f64 (no modifiers), with its mask and scale: P the row softmax
 * over the visible keys (0 elsewhere), D_i = dout_i . o_i, dS = P o (dout V^T - D), dq = scale dS K,
 * dk = scale dS^T Q, dv = P^T dout; dk and dv of a kv head sum over its query heads. A row whose
 * o is 0 by the forward's rule (it sees no key) contributes nothing; keys no row sees get 0.
 */
void tu_attention_backward_f64(const tu_case *c, const float *q, const float *k, const float *v, const float *dout,
                               double *dq, double *dk, double *dv);
/* The same on double inputs. */
void tu_attention_backward_f64d(const tu_case *c, const double *q, const double *k, const double *v,
                                const double *dout, double *dq, double *dk, double *dv);

/* tu_attention_f64_mods on double inputs (lse may be NULL): the finite differences of the modifiers. */
void tu_attention_f64d_mods(const tu_case *c, const tu_mods *mods, const double *q, const double *k, const double *v,
                            double *o, double *lse);

/*
 * The backward of tu_attention_f64_mods (mods NULL: tu_attention_backward_f64): S recomputed with
 * the modifiers, dS = P o (dP - D) times the softcap's derivative 1 - tanh^2(t / softcap) (ALiBi
 * and the mask add constants: no factor, and no gradient for the slopes or the mask), and, where
 * dsink is not NULL, the sinks' gradient [Hq]: dsink_h = -sum over the rows b, i of head h of
 * P_sink D_i, P_sink = exp(sink_h - lse_i) (the sink is a key whose dP is 0).
 */
void tu_attention_backward_f64_mods(const tu_case *c, const tu_mods *mods, const float *q, const float *k,
                                    const float *v, const float *dout, double *dq, double *dk, double *dv,
                                    double *dsink);
/* The same on double inputs. */
void tu_attention_backward_f64d_mods(const tu_case *c, const tu_mods *mods, const double *q, const double *k,
                                     const double *v, const double *dout, double *dq, double *dk, double *dv,
                                     double *dsink);

#endif /* FA_CL_TEST_ORACLE_H */
