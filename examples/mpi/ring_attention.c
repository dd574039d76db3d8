/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ring attention over MPI (include/fa_cl_cp.h): run with `mpirun -np P ./ring_attention [rows per
 * rank] [repetitions]`. Each rank holds a zigzag shard of one causal sequence of P x rows tokens (8
 * query heads on 2 kv heads, head_dim 64, f32), the K/V shards travel around the ring, and each rank
 * checks its rows of o against a CPU reference over the whole sequence (the exit status is 0 only
 * if they match; 77: no OpenCL device). With repetitions it also prints the timings the ring's
 * efficiency model uses (docs/ring_attention_model.md): the whole call, one block's attention on this
 * device, and one block's transfer to the next rank.
 */
#include <fa_cl_cp.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, HQ = 8, HKV = 2, D = 64 };

static float value(unsigned *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 9) & 0xffff) / 65536.0f - 0.5f;
}

/* The global position of local row l of rank r (zigzag: chunks r and 2P - 1 - r of L / 2 rows). */
static int global_row(int r, int P, int L, int l)
{
    const int C = L / 2, chunk = l < C ? r : 2 * P - 1 - r;
    return chunk * C + l % C;
}

static int fail(const char *what, fa_cl_status st, int rank)
{
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, fa_cl_status_string(st), fa_cl_cp_last_error());
    return st == FA_CL_ERROR_NO_DEVICE ? 77 : 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const int L = argc > 1 ? atoi(argv[1]) / 2 * 2 : 32, reps = argc > 2 ? atoi(argv[2]) : 0, N = P * L;
    /* the whole sequence on every rank (the same seed), so that each can check its own rows */
    float *q = malloc(sizeof(float) * B * HQ * N * D), *k = malloc(sizeof(float) * B * HKV * N * D);
    float *v = malloc(sizeof(float) * B * HKV * N * D), *shard[3], *o = malloc(sizeof(float) * B * HQ * L * D);
    unsigned seed = 3;
    for (int i = 0; i < B * HQ * N * D; i++)
        q[i] = value(&seed);
    for (int i = 0; i < B * HKV * N * D; i++)
        k[i] = value(&seed), v[i] = value(&seed);
    const float *whole[3] = {q, k, v};
    const int heads[3] = {HQ, HKV, HKV};
    for (int t = 0; t < 3; t++) { /* this rank's rows */
        shard[t] = malloc(sizeof(float) * B * heads[t] * L * D);
        for (int h = 0; h < B * heads[t]; h++)
            for (int l = 0; l < L; l++)
                for (int c = 0; c < D; c++)
                    shard[t][(h * L + l) * D + c] = whole[t][(h * N + global_row(rank, P, L, l)) * D + c];
    }

    fa_cl_context *ctx;
    fa_cl_status st = fa_cl_context_create_default(&ctx);
    if (st != FA_CL_SUCCESS)
        return fail("fa_cl_context_create_default", st, rank);
    fa_cl_cp_transport *t;
    if ((st = fa_cl_cp_transport_mpi(MPI_COMM_WORLD, &t)) != FA_CL_SUCCESS)
        return fail("fa_cl_cp_transport_mpi", st, rank);
    cl_context cl = fa_cl_context_cl_context(ctx);
    cl_int err;
    cl_mem m[4];
    for (int i = 0; i < 3; i++)
        m[i] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(float) * B * heads[i] * L * D,
                              shard[i], &err);
    m[3] = clCreateBuffer(cl, CL_MEM_READ_WRITE, sizeof(float) * B * HQ * L * D, NULL, &err);

    fa_cl_attention_desc d; /* the local shard */
    fa_cl_attention_desc_init(&d, B, HQ, L, L, D, FA_CL_F32);
    d.heads_kv = HKV;
    d.causal = 1;
    fa_cl_cp_args a;
    fa_cl_cp_args_init(&a);
    a.desc = &d, a.strategy = FA_CL_CP_RING, a.layout = FA_CL_CP_ZIGZAG, a.transport = t;
    a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3];
    if ((st = fa_cl_cp_forward(ctx, &a)) != FA_CL_SUCCESS)
        return fail("fa_cl_cp_forward", st, rank);
    clEnqueueReadBuffer(fa_cl_context_queue(ctx), m[3], CL_TRUE, 0, sizeof(float) * B * HQ * L * D, o, 0, NULL, NULL);

    /* the CPU reference for this rank's rows: causal over the whole sequence */
    double worst = 0.0, *s = malloc(sizeof(double) * N);
    for (int h = 0; h < HQ; h++)
        for (int l = 0; l < L; l++) {
            const int i = global_row(rank, P, L, l), kh = h / (HQ / HKV);
            double mx = -INFINITY, sum = 0.0;
            for (int j = 0; j <= i; j++) {
                double dot = 0.0;
                for (int c = 0; c < D; c++)
                    dot += (double)q[(h * N + i) * D + c] * k[(kh * N + j) * D + c];
                s[j] = dot / sqrt((double)D);
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int j = 0; j <= i; j++)
                sum += exp(s[j] - mx);
            for (int c = 0; c < D; c++) {
                double acc = 0.0;
                for (int j = 0; j <= i; j++)
                    acc += exp(s[j] - mx) * v[(kh * N + j) * D + c];
                const double e = fabs(acc / sum - o[(h * L + l) * D + c]);
                worst = e > worst ? e : worst;
            }
        }
    printf("rank %d of %d: rows of a causal sequence of %d tokens: max |o - reference| = %.2e\n", rank, P, N, worst);

    if (reps > 0) { /* the efficiency model's inputs (docs/ring_attention_model.md) */
        double t0 = MPI_Wtime();
        for (int r = 0; r < reps && st == FA_CL_SUCCESS; r++)
            st = fa_cl_cp_forward(ctx, &a);
        const double ring_ms = (MPI_Wtime() - t0) * 1e3 / reps;
        /* one block: this rank's rows against L keys that all are visible (a non-causal partial) */
        fa_cl_attention_desc blk = d;
        blk.causal = 0;
        fa_cl_forward_args f;
        fa_cl_forward_args_init(&f);
        f.q = m[0], f.k = m[1], f.v = m[2], f.o = m[3];
        fa_cl_attention_run(ctx, &blk, &f);
        clFinish(fa_cl_context_queue(ctx));
        t0 = MPI_Wtime();
        for (int r = 0; r < reps; r++)
            fa_cl_attention_run(ctx, &blk, &f);
        clFinish(fa_cl_context_queue(ctx));
        const double block_ms = (MPI_Wtime() - t0) * 1e3 / reps;
        /* one block's K and V to the next rank (and from the previous one), as a ring step moves them */
        const int bytes = (int)(2 * sizeof(float) * B * HKV * L * D);
        char *sbuf = calloc(1, (size_t)bytes), *rbuf = malloc((size_t)bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int r = 0; r < reps; r++)
            MPI_Sendrecv(sbuf, bytes, MPI_BYTE, (rank + 1) % P, 0, rbuf, bytes, MPI_BYTE, (rank + P - 1) % P, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double xfer_ms = (MPI_Wtime() - t0) * 1e3 / reps;
        printf("rank %d of %d: ring %.3f ms, block attention %.3f ms, block transfer %.3f ms (%d bytes)\n", rank, P,
               ring_ms, block_ms, xfer_ms, bytes);
        free(sbuf), free(rbuf);
    }

    for (int i = 0; i < 4; i++)
        clReleaseMemObject(m[i]);
    fa_cl_cp_transport_mpi_release(t);
    fa_cl_context_release(ctx);
    for (int i = 0; i < 3; i++)
        free(shard[i]);
    free(q), free(k), free(v), free(o), free(s);
    MPI_Finalize();
    return st == FA_CL_SUCCESS && worst <= 1e-4 ? 0 : 1;
}
