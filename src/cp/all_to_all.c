/* SPDX-License-Identifier: Apache-2.0 */
/* All-to-all (DeepSpeed-Ulysses; include/fa_cl_cp.h, FA_CL_CP_ALL_TO_ALL): q, k, v re-sharded from
 * rows to heads through host buffers, one ordinary forward (or backward) over the whole sequence
 * for this rank's heads, and the results re-sharded back to the rows. */
#include "cp/cp_internal.h"

#include <stdlib.h>
#include <string.h>

/* The geometry of one call: heads per rank, and where a shard's local row lies in the sequence. */
typedef struct a2a {
    const fa_cl_cp__call *c;
    int64_t B, L, D, N, hq, hkv; /* hq, hkv: this rank's heads (heads / size) */
    size_t row;                  /* bytes of a row of head_dim elements */
} a2a;

static int64_t global_row(const a2a *x, int r, int64_t l)
{
    const int64_t C = x->c->chunk;
    return (int64_t)fa_cl_cp__chunk_of(x->c, r, (int)(l / C)) * C + l % C;
}

/* Heads [h0, h0 + nh) of a [B, H, L, unit] shard into out as [B, nh, L, unit] (unit: bytes of a
 * row's values: x->row, or 4 for the LSE); put_heads is the inverse. */
static unsigned char *take_heads(const a2a *x, const unsigned char *shard, int64_t H, int64_t h0, int64_t nh,
                                 size_t unit, unsigned char *out)
{
    const size_t head = (size_t)x->L * unit;
    for (int64_t b = 0; b < x->B; b++)
        for (int64_t h = 0; h < nh; h++, out += head)
            memcpy(out, shard + ((size_t)(b * H + h0 + h)) * head, head);
    return out;
}

static const unsigned char *put_heads(const a2a *x, const unsigned char *in, int64_t H, int64_t h0, int64_t nh,
                                      size_t unit, unsigned char *shard)
{
    const size_t head = (size_t)x->L * unit;
    for (int64_t b = 0; b < x->B; b++)
        for (int64_t h = 0; h < nh; h++, in += head)
            memcpy(shard + ((size_t)(b * H + h0 + h)) * head, in, head);
    return in;
}

/* From rank r, [B, nh, L, D] rows of its shard into [B, nh, N, D] at their places in the sequence
 * (unit: bytes of one row's values: x->row, or 4 for the LSE). */
static const unsigned char *place_rows(const a2a *x, int r, const unsigned char *in, int64_t nh, size_t unit,
                                       unsigned char *full)
{
    for (int64_t bh = 0; bh < x->B * nh; bh++)
        for (int64_t l = 0; l < x->L; l++, in += unit)
            memcpy(full + ((size_t)(bh * x->N + global_row(x, r, l))) * unit, in, unit);
    return in;
}

/* The inverse: rank r's rows of [B, nh, N, unit] into [B, nh, L, unit]. */
static unsigned char *take_rows(const a2a *x, int r, const unsigned char *full, int64_t nh, size_t unit,
                                unsigned char *out)
{
    for (int64_t bh = 0; bh < x->B * nh; bh++)
        for (int64_t l = 0; l < x->L; l++, out += unit)
            memcpy(out, full + ((size_t)(bh * x->N + global_row(x, r, l))) * unit, unit);
    return out;
}

/* One all-to-all of per bytes to and from every rank, waited for. */
static fa_cl_status exchange(const fa_cl_cp__call *c, const void *send, void *recv, size_t per, const char *what)
{
    void *req = NULL;
    const int rc = c->t->ialltoall(c->t->user, send, recv, per, &req);
    if (rc != 0)
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): %s: transport error %d", c->rank,
                              what, rc);
    return fa_cl_cp__wait(c, &req, 1, what);
}

/* The forward over the whole sequence for this rank's heads: q, k, v in host [B, h, N, D]; o and
 * the LSE back into host memory of the same layout. */
static fa_cl_status local_forward(const a2a *x, const unsigned char *q, const unsigned char *kv, unsigned char *o,
                                  float *lse, const float *slopes)
{
    const fa_cl_cp__call *c = x->c;
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    cl_command_queue queue = fa_cl_context_queue(c->ctx);
    const size_t qb = (size_t)(x->B * x->hq * x->N) * x->row, kb = (size_t)(x->B * x->hkv * x->N) * x->row;
    const size_t lb = (size_t)(x->B * x->hq * x->N) * 4;
    cl_int err = CL_SUCCESS;
    cl_mem m[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    m[0] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, qb, (void *)q, &err);
    if (err == CL_SUCCESS)
        m[1] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kb, (void *)kv, &err);
    if (err == CL_SUCCESS)
        m[2] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kb, (void *)(kv + kb), &err);
    if (err == CL_SUCCESS)
        m[3] = clCreateBuffer(cl, CL_MEM_READ_WRITE, qb, NULL, &err);
    if (err == CL_SUCCESS)
        m[4] = clCreateBuffer(cl, CL_MEM_READ_WRITE, lb, NULL, &err);
    if (err == CL_SUCCESS && slopes)
        m[5] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)x->hq * 4, (void *)slopes, &err);
    fa_cl_status st = err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl_cp__cl_fail(err, "the re-sharded tensors");
    if (st == FA_CL_SUCCESS) {
        fa_cl_attention_desc d = c->d;
        d.heads_q = x->hq, d.heads_kv = x->hkv, d.seqlen_q = d.seqlen_k = x->N;
        d.q_offset = d.k_offset = d.v_offset = d.o_offset = 0;
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3], a.lse = m[4], a.alibi_slopes = m[5];
        st = fa_cl_attention_run(c->ctx, &d, &a);
        if (st != FA_CL_SUCCESS)
            st = fa_cl_cp__fa_fail(c, st, "the local forward");
    }
    if (st == FA_CL_SUCCESS) {
        err = clEnqueueReadBuffer(queue, m[3], CL_TRUE, 0, qb, o, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(queue, m[4], CL_TRUE, 0, lb, lse, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "reading the local forward's o");
    }
    for (int i = 0; i < 6; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    return st;
}

fa_cl_status fa_cl_cp__all_to_all_forward(const fa_cl_cp__call *c)
{
    const fa_cl_attention_desc *d = &c->d;
    const int P = c->size, r = c->rank;
    if (d->heads_q % P || d->heads_kv % P)
        return fa_cl_cp__fail(FA_CL_ERROR_UNSUPPORTED, "fa_cl_cp_forward: all-to-all needs heads_q (%lld) and heads_kv "
                              "(%lld) divisible by the %d ranks", (long long)d->heads_q, (long long)d->heads_kv, P);
    a2a x = {c, d->batch, d->seqlen_q, d->head_dim, c->full, d->heads_q / P, d->heads_kv / P,
             (size_t)d->head_dim * c->elem};
    cl_command_queue queue = fa_cl_context_queue(c->ctx);
    const size_t shard_q = (size_t)(x.B * d->heads_q * x.L) * x.row, shard_kv = (size_t)(x.B * d->heads_kv * x.L) * x.row;
    /* per rank: its heads of my rows of q, k, v (forward); my heads of its rows of o and the LSE (back) */
    const size_t per_in = (size_t)(x.B * (x.hq + 2 * x.hkv) * x.L) * x.row;
    const size_t per_out = (size_t)(x.B * x.hq * x.L) * (x.row + 4);
    unsigned char *shard = malloc(shard_q + 2 * shard_kv), *send = malloc((size_t)P * per_in),
                  *recv = malloc((size_t)P * per_in);
    unsigned char *full_q = malloc((size_t)(x.B * x.hq * x.N) * x.row), *full_kv = malloc(2 * (size_t)(x.B * x.hkv * x.N) * x.row);
    unsigned char *full_o = malloc((size_t)(x.B * x.hq * x.N) * x.row);
    float *full_lse = malloc((size_t)(x.B * x.hq * x.N) * 4), *slopes = d->alibi ? malloc((size_t)d->heads_q * 4) : NULL;
    float *lse = malloc((size_t)(x.B * d->heads_q * x.L) * 4); /* the local LSE [B, Hq, L] */
    unsigned char *back_send = malloc((size_t)P * per_out), *back_recv = malloc((size_t)P * per_out);
    fa_cl_status st = FA_CL_SUCCESS;
    if (!shard || !send || !recv || !full_q || !full_kv || !full_o || !full_lse || !lse || (d->alibi && !slopes) ||
        !back_send || !back_recv)
        st = fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_forward: out of host memory (all-to-all staging)");
    cl_int err = CL_SUCCESS;
    if (st == FA_CL_SUCCESS) {
        const cl_mem src[3] = {c->a->q, c->a->k, c->a->v};
        const size_t off[3] = {d->q_offset, d->k_offset, d->v_offset}, bytes[3] = {shard_q, shard_kv, shard_kv};
        size_t at = 0;
        for (int i = 0; i < 3 && err == CL_SUCCESS; at += bytes[i], i++)
            err = clEnqueueReadBuffer(queue, src[i], CL_TRUE, off[i] * c->elem, bytes[i], shard + at, 0, NULL, NULL);
        if (err == CL_SUCCESS && slopes)
            err = clEnqueueReadBuffer(queue, c->a->alibi_slopes, CL_TRUE, 0, (size_t)d->heads_q * 4, slopes, 0, NULL,
                                      NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "reading the local shards");
    }
    if (st == FA_CL_SUCCESS) { /* rows to heads */
        for (int p = 0; p < P; p++) {
            unsigned char *out = send + (size_t)p * per_in;
            out = take_heads(&x, shard, d->heads_q, p * x.hq, x.hq, x.row, out);
            out = take_heads(&x, shard + shard_q, d->heads_kv, p * x.hkv, x.hkv, x.row, out);
            take_heads(&x, shard + shard_q + shard_kv, d->heads_kv, p * x.hkv, x.hkv, x.row, out);
        }
        st = exchange(c, send, recv, per_in, "the all-to-all of q, k, v");
    }
    if (st == FA_CL_SUCCESS) {
        const size_t kb = (size_t)(x.B * x.hkv * x.N) * x.row;
        for (int p = 0; p < P; p++) {
            const unsigned char *in = recv + (size_t)p * per_in;
            in = place_rows(&x, p, in, x.hq, x.row, full_q);
            in = place_rows(&x, p, in, x.hkv, x.row, full_kv);
            place_rows(&x, p, in, x.hkv, x.row, full_kv + kb);
        }
        st = local_forward(&x, full_q, full_kv, full_o, full_lse, slopes ? slopes + (size_t)r * (size_t)x.hq : NULL);
    }
    if (st == FA_CL_SUCCESS) { /* heads to rows: o, then the LSE */
        for (int p = 0; p < P; p++) {
            unsigned char *out = back_send + (size_t)p * per_out;
            out = take_rows(&x, p, full_o, x.hq, x.row, out);
            take_rows(&x, p, (const unsigned char *)full_lse, x.hq, 4, out);
        }
        st = exchange(c, back_send, back_recv, per_out, "the all-to-all of o and the LSE");
    }
    if (st == FA_CL_SUCCESS) {
        unsigned char *o = shard; /* the local o [B, Hq, L, D] (q's shard is no longer needed) */
        for (int p = 0; p < P; p++) {
            const unsigned char *in = back_recv + (size_t)p * per_out;
            in = put_heads(&x, in, d->heads_q, p * x.hq, x.hq, x.row, o);
            put_heads(&x, in, d->heads_q, p * x.hq, x.hq, 4, (unsigned char *)lse);
        }
        err = clEnqueueWriteBuffer(queue, c->a->o, CL_TRUE, d->o_offset * c->elem, shard_q, o, 0, NULL, NULL);
        if (err == CL_SUCCESS && c->a->lse)
            err = clEnqueueWriteBuffer(queue, c->a->lse, CL_TRUE, 0, (size_t)(x.B * d->heads_q * x.L) * 4, lse, 0, NULL,
                                       NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "writing o and the LSE");
    }
    /* on a transport failure the staging may still be written by the transport: kept */
    if (st != FA_CL_ERROR_COMMUNICATION) {
        free(send), free(recv), free(back_send), free(back_recv);
    }
    free(shard), free(full_q), free(full_kv), free(full_o), free(full_lse), free(slopes), free(lse);
    return st;
}

/* The backward (fa_cl_cp_backward, FA_CL_CP_ALL_TO_ALL): q, k, v, o, dO and the LSE re-sharded from
 * rows to heads, one ordinary backward over the whole sequence for this rank's heads (each kv head's
 * dK and dV sum over its query heads, all of which this rank holds), and dQ, dK, dV back to rows. */
fa_cl_status fa_cl_cp__all_to_all_backward(const fa_cl_cp__call *c)
{
    const fa_cl_attention_desc *d = &c->d;
    const int P = c->size;
    if (d->heads_q % P || d->heads_kv % P)
        return fa_cl_cp__fail(FA_CL_ERROR_UNSUPPORTED, "fa_cl_cp_backward: all-to-all needs heads_q (%lld) and "
                              "heads_kv (%lld) divisible by the %d ranks", (long long)d->heads_q,
                              (long long)d->heads_kv, P);
    a2a x = {c, d->batch, d->seqlen_q, d->head_dim, c->full, d->heads_q / P, d->heads_kv / P,
             (size_t)d->head_dim * c->elem};
    cl_command_queue queue = fa_cl_context_queue(c->ctx);
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    /* the local shards in order q, k, v, o, dO (rows of x.row bytes), then the LSE (rows of 4) */
    const int64_t heads[6] = {d->heads_q, d->heads_kv, d->heads_kv, d->heads_q, d->heads_q, d->heads_q};
    const int64_t mine[6] = {x.hq, x.hkv, x.hkv, x.hq, x.hq, x.hq};
    const size_t unit[6] = {x.row, x.row, x.row, x.row, x.row, 4};
    const cl_mem src[6] = {c->a->q, c->a->k, c->a->v, c->a->o, c->a->dout, c->a->lse};
    const size_t off[6] = {d->q_offset, d->k_offset, d->v_offset, d->o_offset, d->dout_offset, 0};
    size_t local_at[7] = {0}, full_at[7] = {0}, per_in = 0, per_out = 0;
    for (int i = 0; i < 6; i++) {
        local_at[i + 1] = local_at[i] + (size_t)(x.B * heads[i] * x.L) * unit[i];
        full_at[i + 1] = full_at[i] + (size_t)(x.B * mine[i] * x.N) * unit[i];
        per_in += (size_t)(x.B * mine[i] * x.L) * unit[i];
    }
    per_out = (size_t)(x.B * (x.hq + 2 * x.hkv) * x.L) * x.row; /* dQ, dK, dV of a rank's rows */
    unsigned char *local = malloc(local_at[6]), *full = malloc(full_at[6]), *send = malloc((size_t)P * per_in);
    unsigned char *recv = malloc((size_t)P * per_in), *grads = malloc(full_at[3]);
    unsigned char *back_send = malloc((size_t)P * per_out), *back_recv = malloc((size_t)P * per_out);
    fa_cl_status st = local && full && send && recv && grads && back_send && back_recv
                          ? FA_CL_SUCCESS
                          : fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_backward: out of host memory");
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 6 && st == FA_CL_SUCCESS && err == CL_SUCCESS; i++)
        err = clEnqueueReadBuffer(queue, src[i], CL_TRUE, off[i] * (i < 5 ? c->elem : 4), local_at[i + 1] - local_at[i],
                                  local + local_at[i], 0, NULL, NULL);
    if (st == FA_CL_SUCCESS && err != CL_SUCCESS)
        st = fa_cl_cp__cl_fail(err, "reading the local shards");
    if (st == FA_CL_SUCCESS) { /* rows to heads */
        for (int p = 0; p < P; p++) {
            unsigned char *out = send + (size_t)p * per_in;
            for (int i = 0; i < 6; i++)
                out = take_heads(&x, local + local_at[i], heads[i], p * mine[i], mine[i], unit[i], out);
        }
        st = exchange(c, send, recv, per_in, "the all-to-all of q, k, v, o, dO and the LSE");
    }
    cl_mem m[9] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    if (st == FA_CL_SUCCESS) {
        for (int p = 0; p < P; p++) {
            const unsigned char *in = recv + (size_t)p * per_in;
            for (int i = 0; i < 6; i++)
                in = place_rows(&x, p, in, mine[i], unit[i], full + full_at[i]);
        }
        for (int i = 0; i < 6 && err == CL_SUCCESS; i++)
            m[i] = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, full_at[i + 1] - full_at[i],
                                  full + full_at[i], &err);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
            m[6 + i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, full_at[i + 1] - full_at[i], NULL, &err);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "the re-sharded tensors");
    }
    if (st == FA_CL_SUCCESS) {
        fa_cl_attention_desc bd = c->d;
        bd.heads_q = x.hq, bd.heads_kv = x.hkv, bd.seqlen_q = bd.seqlen_k = x.N;
        bd.q_offset = bd.k_offset = bd.v_offset = bd.o_offset = 0;
        bd.dout_offset = bd.dq_offset = bd.dk_offset = bd.dv_offset = 0;
        fa_cl_backward_args a;
        fa_cl_backward_args_init(&a);
        a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3], a.dout = m[4], a.lse = m[5];
        a.dq = m[6], a.dk = m[7], a.dv = m[8];
        st = fa_cl_attention_backward(c->ctx, &bd, &a);
        if (st != FA_CL_SUCCESS)
            st = fa_cl_cp__fa_fail(c, st, "the local backward");
        for (int i = 0; i < 3 && st == FA_CL_SUCCESS; i++)
            if ((err = clEnqueueReadBuffer(queue, m[6 + i], CL_TRUE, 0, full_at[i + 1] - full_at[i], grads + full_at[i],
                                           0, NULL, NULL)) != CL_SUCCESS)
                st = fa_cl_cp__cl_fail(err, "reading the gradients");
    }
    if (st == FA_CL_SUCCESS) { /* heads to rows: dQ, dK, dV */
        for (int p = 0; p < P; p++) {
            unsigned char *out = back_send + (size_t)p * per_out;
            for (int i = 0; i < 3; i++)
                out = take_rows(&x, p, grads + full_at[i], mine[i], x.row, out);
        }
        st = exchange(c, back_send, back_recv, per_out, "the all-to-all of dQ, dK, dV");
    }
    if (st == FA_CL_SUCCESS) {
        for (int p = 0; p < P; p++) {
            const unsigned char *in = back_recv + (size_t)p * per_out;
            for (int i = 0; i < 3; i++)
                in = put_heads(&x, in, heads[i], p * mine[i], mine[i], x.row, local + local_at[i]);
        }
        const cl_mem dst[3] = {c->a->dq, c->a->dk, c->a->dv};
        const size_t doff[3] = {d->dq_offset, d->dk_offset, d->dv_offset};
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
            err = clEnqueueWriteBuffer(queue, dst[i], CL_TRUE, doff[i] * c->elem, local_at[i + 1] - local_at[i],
                                       local + local_at[i], 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "writing the gradients");
    }
    for (int i = 0; i < 9; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    if (st != FA_CL_ERROR_COMMUNICATION) { /* on a transport failure the staging may still be written: kept */
        free(send), free(recv), free(back_send), free(back_recv);
    }
    free(local), free(full), free(grads);
    return st;
}
