/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context parallelism over MPI (include/fa_cl_cp.h), run with mpirun -np 2, 3, 4: every rank makes
 * the same whole problem (the same seed), takes its shard (contiguous or zigzag), runs
 * fa_cl_cp_forward, and compares its rows of o and the LSE with the float64 oracle of the whole
 * problem (tests/tolerance.h's bar) and with the single-device forward of the whole problem on its
 * own device (the same bar). Usage: test_cp ring|a2a MODE, MODE one of
 *   cases      the cases below, contiguous and zigzag shards
 *   backward   the backward after the forward (f32 cases): dQ, dK, dV rows against the oracle's
 *              gradients, and a second call bitwise equal
 *   mismatch   rank 1 calls with another head_dim: every rank must get INVALID_ARGUMENT, nothing sent;
 *              then calls every rank refuses alike (no args, the ring's backward in f16)
 *   die        the last rank kills itself (SIGKILL) when it starts its second transfer: every other
 *              rank must return FA_CL_ERROR_COMMUNICATION within the timeout (1 s) and says so
 *              ("survivor rank R: ..."); tests/cp_die.sh runs it under a watchdog and reads that
 * Exit 0 when every check of this rank passed (77: no OpenCL device).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fa_cl_cp.h"
#include "oracle.h"
#include "test_util.h"

static tu_tally cp_tally = {"cp", 0, 0};
static int g_rank, g_size;

typedef struct cp_case {
    int64_t B, hq_per_rank, hkv_per_rank, L, D; /* heads = per-rank heads x ranks (all-to-all divides them) */
    fa_cl_dtype dtype;
    int causal;
    int64_t wl, wr;
    int alibi;
} cp_case;

static const cp_case cases[] = {
    {1, 2, 1, 8, 32, FA_CL_F32, 0, -1, -1, 0},  /* GQA, no mask */
    {2, 2, 2, 12, 16, FA_CL_F32, 1, -1, -1, 0}, /* causal */
    {1, 2, 1, 10, 64, FA_CL_F16, 1, 9, -1, 1},  /* causal, a window, ALiBi, f16, GQA */
};

/* The rows of rank r's shard: global row of local row l. */
static int64_t global_row(int zigzag, int r, int64_t L, int64_t l)
{
    if (!zigzag)
        return (int64_t)r * L + l;
    const int64_t C = L / 2;
    const int64_t chunk = l < C ? r : 2 * g_size - 1 - r;
    return chunk * C + l % C;
}

/* The shard's rows of x [B, H, N, D] into [B, H, L, D] of dtype t. */
static void *shard_of(const float *x, const cp_case *k, int64_t H, int zigzag, fa_cl_dtype t)
{
    const int64_t L = k->L, N = L * g_size, D = k->D;
    unsigned char *out = malloc((size_t)(k->B * H * L * D) * tu_dtype_size(t));
    size_t e = 0;
    for (int64_t bh = 0; bh < k->B * H; bh++)
        for (int64_t l = 0; l < L; l++)
            for (int64_t d = 0; d < D; d++)
                tu_store(t, out, e++, x[(bh * N + global_row(zigzag, g_rank, L, l)) * D + d]);
    return out;
}

static fa_cl_attention_desc desc_of(const cp_case *k, int64_t seq)
{
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, k->B, k->hq_per_rank * g_size, seq, seq, k->D, k->dtype);
    d.heads_kv = k->hkv_per_rank * g_size;
    d.causal = k->causal, d.window_left = k->wl, d.window_right = k->wr, d.alibi = k->alibi;
    return d;
}

/* A transport that wraps the MPI one and kills this process when it starts its second send. */
static fa_cl_cp_transport g_dying;
static int g_sends;
static int dying_isend(void *user, const void *buf, size_t bytes, int peer, int tag, void **request)
{
    if (++g_sends == 2) {
        fprintf(stderr, "rank %d: killing itself mid-call\n", g_rank);
        raise(SIGKILL);
    }
    return g_dying.isend(user, buf, bytes, peer, tag, request);
}

static void run_case(fa_cl_context *ctx, const fa_cl_cp_transport *t, const cp_case *k, fa_cl_cp_strategy strategy,
                     int zigzag, int index)
{
    const int64_t Hq = k->hq_per_rank * g_size, Hkv = k->hkv_per_rank * g_size, L = k->L, N = L * g_size, D = k->D;
    const size_t nq = (size_t)(k->B * Hq * N * D), nk = (size_t)(k->B * Hkv * N * D), rows = (size_t)(k->B * Hq * N);
    float *x[3] = {malloc(nq * 4), malloc(nk * 4), malloc(nk * 4)};
    double *ref_o = malloc(nq * 8), *ref_lse = malloc(rows * 8);
    float *slopes = malloc((size_t)Hq * 4), *one_lse = malloc(rows * 4);
    void *one_o = malloc(nq * tu_dtype_size(k->dtype));
    tu_rng r;
    tu_rng_seed(&r, 0xc0ffeeu + (uint64_t)index);
    const size_t n[3] = {nq, nk, nk};
    for (int i = 0; i < 3; i++)
        for (size_t e = 0; e < n[i]; e++)
            x[i][e] = tu_round(k->dtype, tu_rng_nonzero(&r));
    for (int64_t h = 0; h < Hq; h++)
        slopes[h] = (float)(0.25 / (double)(h + 1));
    const tu_case tc = {k->B, Hq, Hkv, N, N, D, k->dtype, k->causal, k->wl, k->wr, NULL, 0.0f, 1};
    const tu_mods mods = {0.0, k->alibi ? slopes : NULL, NULL, NULL};
    tu_attention_f64_mods(&tc, &mods, x[0], x[1], x[2], ref_o, ref_lse);
    const size_t es = tu_dtype_size(k->dtype);
    cl_mem sl = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)Hq * 4, slopes);
    /* the single-device forward of the whole problem */
    void *full[3];
    for (int i = 0; i < 3; i++) {
        full[i] = malloc(n[i] * es);
        for (size_t e = 0; e < n[i]; e++)
            tu_store(k->dtype, full[i], e, x[i][e]);
    }
    cl_mem fq = tu_buffer(ctx, CL_MEM_READ_ONLY, nq * es, full[0]), fk = tu_buffer(ctx, CL_MEM_READ_ONLY, nk * es, full[1]);
    cl_mem fv = tu_buffer(ctx, CL_MEM_READ_ONLY, nk * es, full[2]), fo = tu_buffer(ctx, CL_MEM_READ_WRITE, nq * es, NULL);
    cl_mem fl = tu_buffer(ctx, CL_MEM_READ_WRITE, rows * 4, NULL);
    fa_cl_attention_desc whole = desc_of(k, N);
    fa_cl_forward_args fa;
    fa_cl_forward_args_init(&fa);
    fa.q = fq, fa.k = fk, fa.v = fv, fa.o = fo, fa.lse = fl, fa.alibi_slopes = k->alibi ? sl : NULL;
    fa_cl_status st = fa_cl_attention_run(ctx, &whole, &fa);
    if (st == FA_CL_SUCCESS && (tu_read(ctx, fo, nq * es, one_o) || tu_read(ctx, fl, rows * 4, one_lse)))
        st = FA_CL_ERROR_OPENCL;
    /* this rank's shard through the context-parallel call */
    void *sq = shard_of(x[0], k, Hq, zigzag, k->dtype), *sk = shard_of(x[1], k, Hkv, zigzag, k->dtype);
    void *sv = shard_of(x[2], k, Hkv, zigzag, k->dtype);
    const size_t lq = (size_t)(k->B * Hq * L * D), lk = (size_t)(k->B * Hkv * L * D), lrows = (size_t)(k->B * Hq * L);
    cl_mem q = tu_buffer(ctx, CL_MEM_READ_ONLY, lq * es, sq), kk = tu_buffer(ctx, CL_MEM_READ_ONLY, lk * es, sk);
    cl_mem v = tu_buffer(ctx, CL_MEM_READ_ONLY, lk * es, sv), o = tu_buffer(ctx, CL_MEM_READ_WRITE, lq * es, NULL);
    cl_mem lse = tu_buffer(ctx, CL_MEM_READ_WRITE, lrows * 4, NULL);
    fa_cl_attention_desc local = desc_of(k, L);
    fa_cl_cp_args a;
    fa_cl_cp_args_init(&a);
    a.desc = &local, a.strategy = strategy, a.layout = zigzag ? FA_CL_CP_ZIGZAG : FA_CL_CP_CONTIGUOUS;
    a.transport = t, a.q = q, a.k = kk, a.v = v, a.o = o, a.lse = lse, a.alibi_slopes = k->alibi ? sl : NULL;
    a.timeout_ms = 30000;
    const double t0 = tu_now_ms();
    fa_cl_status cs = st == FA_CL_SUCCESS ? fa_cl_cp_forward(ctx, &a) : st;
    const double ms = tu_now_ms() - t0;
    void *got = malloc(lq * es);
    float *got_lse = malloc(lrows * 4);
    char why[256] = "";
    int ok = cs == FA_CL_SUCCESS && !tu_read(ctx, o, lq * es, got) && !tu_read(ctx, lse, lrows * 4, got_lse);
    if (cs != FA_CL_SUCCESS)
        snprintf(why, sizeof why, "%s: %s / %s", fa_cl_status_string(cs), fa_cl_cp_last_error(), fa_cl_last_error(ctx));
    double worst = 0.0;
    for (int64_t bh = 0; ok && bh < k->B * Hq; bh++)
        for (int64_t l = 0; ok && l < L; l++) {
            const int64_t grow = bh * N + global_row(zigzag, g_rank, L, l), lrow = bh * L + l;
            const double rl = ref_lse[grow], gl = got_lse[lrow];
            if (isinf(rl) ? gl != rl : fabs(gl - rl) > 1e-4 * fmax(fabs(rl), 1.0)) {
                ok = 0;
                snprintf(why, sizeof why, "row %lld: lse %.9g, oracle %.9g", (long long)grow, gl, rl);
            }
            for (int64_t d = 0; ok && d < D; d++) {
                const double g = tu_load(k->dtype, got, (size_t)(lrow * D + d)), ref = ref_o[grow * D + d];
                const double one = tu_load(k->dtype, one_o, (size_t)(grow * D + d));
                if (!fa_cl_tolerance_ok(k->dtype, g, ref) || !fa_cl_tolerance_ok(k->dtype, g, one)) {
                    ok = 0;
                    snprintf(why, sizeof why, "row %lld col %lld: %.9g, oracle %.9g, single device %.9g",
                             (long long)grow, (long long)d, g, ref, one);
                }
                worst = fmax(worst, fabs(g - ref) / fa_cl_tolerance_bound(k->dtype, ref));
            }
        }
    tu_expect(&cp_tally, ok, "rank %d/%d %s %s case %d (B=%lld H=%lld/%lld N=%lld D=%lld %s%s%s): %s%.2f of the bar, "
              "%.0f ms", g_rank, g_size, strategy == FA_CL_CP_RING ? "ring" : "all-to-all",
              zigzag ? "zigzag" : "contiguous", index, (long long)k->B, (long long)Hq, (long long)Hkv, (long long)N,
              (long long)D, tu_dtype_name(k->dtype), k->causal ? " causal" : "", k->alibi ? " alibi" : "", why,
              worst, ms);
    cl_mem mems[] = {sl, fq, fk, fv, fo, fl, q, kk, v, o, lse};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    for (int i = 0; i < 3; i++)
        free(x[i]), free(full[i]);
    free(ref_o), free(ref_lse), free(slopes), free(one_lse), free(one_o), free(sq), free(sk), free(sv), free(got);
    free(got_lse);
}

/* The backward after the forward (ring or all-to-all): this rank's rows of dQ, dK, dV against the
 * oracle's gradients of the whole problem (f32 cases), and the same bits from a second call. */
static void run_backward_case(fa_cl_context *ctx, const fa_cl_cp_transport *t, const cp_case *k,
                              fa_cl_cp_strategy strategy, int zigzag, int index)
{
    const int64_t Hq = k->hq_per_rank * g_size, Hkv = k->hkv_per_rank * g_size, L = k->L, N = L * g_size, D = k->D;
    const size_t nq = (size_t)(k->B * Hq * N * D), nk = (size_t)(k->B * Hkv * N * D);
    float *x[4] = {malloc(nq * 4), malloc(nk * 4), malloc(nk * 4), malloc(nq * 4)}; /* q, k, v, dout */
    double *ref[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nk * 8)};
    tu_rng r;
    tu_rng_seed(&r, 0xbadc0deu + (uint64_t)index);
    const size_t n[4] = {nq, nk, nk, nq};
    for (int i = 0; i < 4; i++)
        for (size_t e = 0; e < n[i]; e++)
            x[i][e] = tu_rng_nonzero(&r);
    const tu_case tc = {k->B, Hq, Hkv, N, N, D, FA_CL_F32, k->causal, k->wl, k->wr, NULL, 0.0f, 1};
    tu_attention_backward_f64(&tc, x[0], x[1], x[2], x[3], ref[0], ref[1], ref[2]);
    const int64_t heads[4] = {Hq, Hkv, Hkv, Hq};
    void *sh[4];
    for (int i = 0; i < 4; i++)
        sh[i] = shard_of(x[i], k, heads[i], zigzag, FA_CL_F32);
    const size_t lq = (size_t)(k->B * Hq * L * D), lk = (size_t)(k->B * Hkv * L * D), lrows = (size_t)(k->B * Hq * L);
    cl_mem m[10] = {tu_buffer(ctx, CL_MEM_READ_ONLY, lq * 4, sh[0]), tu_buffer(ctx, CL_MEM_READ_ONLY, lk * 4, sh[1]),
                    tu_buffer(ctx, CL_MEM_READ_ONLY, lk * 4, sh[2]), tu_buffer(ctx, CL_MEM_READ_WRITE, lq * 4, NULL),
                    tu_buffer(ctx, CL_MEM_READ_WRITE, lrows * 4, NULL), tu_buffer(ctx, CL_MEM_READ_ONLY, lq * 4, sh[3]),
                    tu_buffer(ctx, CL_MEM_READ_WRITE, lq * 4, NULL), tu_buffer(ctx, CL_MEM_READ_WRITE, lk * 4, NULL),
                    tu_buffer(ctx, CL_MEM_READ_WRITE, lk * 4, NULL), NULL};
    fa_cl_attention_desc local = desc_of(k, L);
    fa_cl_cp_args a;
    fa_cl_cp_args_init(&a);
    a.desc = &local, a.layout = zigzag ? FA_CL_CP_ZIGZAG : FA_CL_CP_CONTIGUOUS, a.transport = t, a.strategy = strategy;
    a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3], a.lse = m[4], a.dout = m[5], a.dq = m[6], a.dk = m[7], a.dv = m[8];
    a.timeout_ms = 30000;
    fa_cl_status st = fa_cl_cp_forward(ctx, &a);
    if (st == FA_CL_SUCCESS)
        st = fa_cl_cp_backward(ctx, &a);
    float *got[3] = {malloc(lq * 4), malloc(lk * 4), malloc(lk * 4)}, *again = malloc(lq * 4);
    char why[256] = "";
    int ok = st == FA_CL_SUCCESS;
    for (int g = 0; ok && g < 3; g++)
        ok = tu_read(ctx, m[6 + g], (g ? lk : lq) * 4, got[g]) == 0;
    if (st != FA_CL_SUCCESS)
        snprintf(why, sizeof why, "%s: %s", fa_cl_status_string(st), fa_cl_cp_last_error());
    static const char *const gname[3] = {"dq", "dk", "dv"};
    for (int g = 0; ok && g < 3; g++) {
        const int64_t H = g ? Hkv : Hq;
        for (int64_t bh = 0; ok && bh < k->B * H; bh++)
            for (int64_t l = 0; ok && l < L; l++)
                for (int64_t d = 0; ok && d < D; d++) {
                    const double want = ref[g][(bh * N + global_row(zigzag, g_rank, L, l)) * D + d];
                    const double have = got[g][(bh * L + l) * D + d];
                    if (!fa_cl_tolerance_ok(FA_CL_F32, have, want)) {
                        ok = 0;
                        snprintf(why, sizeof why, "%s row %lld col %lld: %.9g, oracle %.9g", gname[g],
                                 (long long)(bh * N + global_row(zigzag, g_rank, L, l)), (long long)d, have, want);
                    }
                }
    }
    /* deterministic: a second backward gives the same bits */
    if (ok && (fa_cl_cp_backward(ctx, &a) != FA_CL_SUCCESS || tu_read(ctx, m[6], lq * 4, again) != 0 ||
               memcmp(again, got[0], lq * 4) != 0)) {
        ok = 0;
        snprintf(why, sizeof why, "a second backward gave other bits (or failed: %s)", fa_cl_cp_last_error());
    }
    tu_expect(&cp_tally, ok, "rank %d/%d %s backward %s case %d (B=%lld H=%lld/%lld N=%lld D=%lld%s): %s", g_rank,
              g_size, strategy == FA_CL_CP_RING ? "ring" : "all-to-all", zigzag ? "zigzag" : "contiguous", index, (long long)k->B, (long long)Hq, (long long)Hkv,
              (long long)N, (long long)D, k->causal ? " causal" : "", ok ? "dq, dk, dv match, bitwise repeatable" : why);
    for (int i = 0; i < 10; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    for (int i = 0; i < 4; i++)
        free(x[i]), free(sh[i]);
    for (int i = 0; i < 3; i++)
        free(ref[i]), free(got[i]);
    free(again);
}

/* rank 1 with another head_dim: every rank refused before any data moves */
static void run_mismatch(fa_cl_context *ctx, const fa_cl_cp_transport *t)
{
    cp_case k = cases[0];
    if (g_rank == 1)
        k.D = 16;
    const size_t lq = (size_t)(k.B * k.hq_per_rank * g_size * k.L * k.D) * 4;
    cl_mem b[4];
    for (int i = 0; i < 4; i++)
        b[i] = tu_buffer(ctx, CL_MEM_READ_WRITE, lq, NULL);
    fa_cl_attention_desc local = desc_of(&k, k.L);
    fa_cl_cp_args a;
    fa_cl_cp_args_init(&a);
    a.desc = &local, a.transport = t, a.q = b[0], a.k = b[1], a.v = b[2], a.o = b[3], a.timeout_ms = 20000;
    const fa_cl_status st = fa_cl_cp_forward(ctx, &a);
    tu_expect(&cp_tally, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_cp_last_error(), "disagree"),
              "rank %d: ranks with different head_dims: %s (%s)", g_rank, fa_cl_status_string(st),
              fa_cl_cp_last_error());
    /* refused locally (every rank alike): no args; the ring's backward in f16 */
    fa_cl_status st2 = fa_cl_cp_forward(ctx, NULL);
    tu_expect(&cp_tally, st2 == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_cp_last_error(), "args is NULL"),
              "rank %d: no args: %s (%s)", g_rank, fa_cl_status_string(st2), fa_cl_cp_last_error());
    k = cases[0];
    k.dtype = FA_CL_F16;
    local = desc_of(&k, k.L);
    a.dout = a.dq = b[0], a.dk = a.dv = b[1], a.lse = b[2];
    st2 = fa_cl_cp_backward(ctx, &a);
    tu_expect(&cp_tally, st2 == FA_CL_ERROR_UNSUPPORTED && strstr(fa_cl_cp_last_error(), "fa_cl_cp_backward: the ring"),
              "rank %d: the ring's backward in f16: %s (%s)", g_rank, fa_cl_status_string(st2), fa_cl_cp_last_error());
    for (int i = 0; i < 4; i++)
        clReleaseMemObject(b[i]);
}

/* the last rank dies when it starts its second transfer; the others return an error in time */
static int run_die(fa_cl_context *ctx, fa_cl_cp_transport *t)
{
    cp_case k = cases[1];
    const int64_t Hq = k.hq_per_rank * g_size, Hkv = k.hkv_per_rank * g_size;
    const size_t lq = (size_t)(k.B * Hq * k.L * k.D) * 4, lk = (size_t)(k.B * Hkv * k.L * k.D) * 4;
    cl_mem b[4] = {tu_buffer(ctx, CL_MEM_READ_WRITE, lq, NULL), tu_buffer(ctx, CL_MEM_READ_WRITE, lk, NULL),
                   tu_buffer(ctx, CL_MEM_READ_WRITE, lk, NULL), tu_buffer(ctx, CL_MEM_READ_WRITE, lq, NULL)};
    fa_cl_attention_desc local = desc_of(&k, k.L);
    fa_cl_cp_transport dying = *t;
    g_dying = *t;
    if (g_rank == g_size - 1)
        dying.isend = dying_isend;
    fa_cl_cp_args a;
    fa_cl_cp_args_init(&a);
    a.desc = &local, a.transport = &dying, a.q = b[0], a.k = b[1], a.v = b[2], a.o = b[3], a.timeout_ms = 1000;
    const double t0 = tu_now_ms();
    const fa_cl_status st = fa_cl_cp_forward(ctx, &a);
    const double ms = tu_now_ms() - t0;
    const int ok = st == FA_CL_ERROR_COMMUNICATION && ms < 20000;
    printf("survivor rank %d: %s after %.0f ms: %s\n", g_rank, fa_cl_status_string(st), ms, fa_cl_cp_last_error());
    fflush(stdout);
    /* stay until every survivor's last wait has ended: a survivor that exits first may have mpirun
     * end the job before the others print */
    const struct timespec rest = {2 * a.timeout_ms / 1000 + 1, 0};
    nanosleep(&rest, NULL);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const char *strategy = argc > 1 ? argv[1] : "ring", *mode = argc > 2 ? argv[2] : "cases";
    fa_cl_context *ctx = NULL;
    const int rc = tu_context(&ctx);
    if (rc != 0) {
        MPI_Finalize();
        return rc;
    }
    fa_cl_cp_transport *t = NULL;
    if (fa_cl_cp_transport_mpi(MPI_COMM_WORLD, &t) != FA_CL_SUCCESS) {
        fprintf(stderr, "fa_cl_cp_transport_mpi: %s\n", fa_cl_cp_last_error());
        MPI_Finalize();
        return 1;
    }
    const fa_cl_cp_strategy s = strcmp(strategy, "a2a") == 0 ? FA_CL_CP_ALL_TO_ALL : FA_CL_CP_RING;
    if (strcmp(mode, "die") == 0) {
        const int die_rc = run_die(ctx, t);
        _exit(die_rc); /* a peer is gone: no collective teardown (MPI_Finalize could wait for it) */
    }
    if (strcmp(mode, "mismatch") == 0)
        run_mismatch(ctx, t);
    else if (strcmp(mode, "backward") == 0)
        for (int zigzag = 0; zigzag < 2; zigzag++)
            for (int i = 0; i < 2; i++) /* the f32 cases */
                run_backward_case(ctx, t, &cases[i], s, zigzag, i);
    else
        for (int zigzag = 0; zigzag < 2; zigzag++)
            for (int i = 0; i < TU_COUNT(cases); i++)
                run_case(ctx, t, &cases[i], s, zigzag, i);
    fa_cl_cp_transport_mpi_release(t);
    fa_cl_context_release(ctx);
    MPI_Finalize();
    return tu_finish(&cp_tally);
}
