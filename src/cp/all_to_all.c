/* SPDX-License-Identifier: Apache-2.0 */
/* All-to-all (DeepSpeed-Ulysses; include/fa_cl_cp.h, FA_CL_CP_ALL_TO_ALL): q, k, v re-sharded from
 * rows to heads through host buffers, one ordinary forward over the whole sequence for this
 * rank's heads, and o and the LSE re-sharded back to the rows. */
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

/* Heads [h0, h0 + nh) of a [B, H, L, D] shard into out as [B, nh, L, D]. */
static unsigned char *take_heads(const a2a *x, const unsigned char *shard, int64_t H, int64_t h0, int64_t nh,
                                 unsigned char *out)
{
    const size_t head = (size_t)x->L * x->row;
    for (int64_t b = 0; b < x->B; b++)
        for (int64_t h = 0; h < nh; h++, out += head)
            memcpy(out, shard + ((size_t)(b * H + h0 + h)) * head, head);
    return out;
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
            out = take_heads(&x, shard, d->heads_q, p * x.hq, x.hq, out);
            out = take_heads(&x, shard + shard_q, d->heads_kv, p * x.hkv, x.hkv, out);
            take_heads(&x, shard + shard_q + shard_kv, d->heads_kv, p * x.hkv, x.hkv, out);
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
        const size_t head = (size_t)x.L * x.row;
        for (int p = 0; p < P; p++) {
            const unsigned char *in = back_recv + (size_t)p * per_out;
            for (int64_t b = 0; b < x.B; b++)
                for (int64_t h = 0; h < x.hq; h++, in += head)
                    memcpy(o + ((size_t)(b * d->heads_q + p * x.hq + h)) * head, in, head);
            for (int64_t b = 0; b < x.B; b++)
                for (int64_t h = 0; h < x.hq; h++, in += (size_t)x.L * 4)
                    memcpy(lse + (size_t)(b * d->heads_q + p * x.hq + h) * (size_t)x.L, in, (size_t)x.L * 4);
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
