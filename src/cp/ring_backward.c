/* SPDX-License-Identifier: Apache-2.0 */
/* The ring's backward (include/fa_cl_cp.h, fa_cl_cp_backward): the K/V blocks travel the ring
 * again, each followed by its dK/dV accumulators (fp32, host); every rank adds the gradients of its
 * query chunks against the block it holds (partial backward calls with positions and the whole
 * problem's o and LSE) to the block's accumulators and to its own dQ, in a fixed order. */
#include "cp/cp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ring_bwd {
    const fa_cl_cp__call *c;
    cl_command_queue queue;
    size_t kv_elems;       /* of one K (or V) shard */
    size_t q_elems;        /* of the q shard */
    float *kv[2];          /* K then V of the block held now and of the next (received) */
    float *acc[2];         /* dK then dV of the block held now, and the next one's (received) */
    float *dq;             /* this rank's dQ, summed over the steps */
    cl_mem dev;            /* the block held now on the device (t > 0) */
    cl_mem lse[2];         /* each query chunk's LSE (zigzag: copies of the caller's rows) */
    cl_mem grad[3];        /* one pair's dQ, dK, dV */
    int keep_host;         /* a transport failure: the transport may still write kv / acc */
} ring_bwd;

static fa_cl_status setup(ring_bwd *R)
{
    const fa_cl_cp__call *c = R->c;
    const fa_cl_attention_desc *d = &c->d;
    const int64_t B = d->batch, Hq = d->heads_q, Hkv = d->heads_kv, L = d->seqlen_q, D = d->head_dim, C = c->chunk;
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    R->queue = fa_cl_context_queue(c->ctx);
    R->kv_elems = (size_t)(B * Hkv * L * D);
    R->q_elems = (size_t)(B * Hq * L * D);
    for (int i = 0; i < 2; i++) {
        R->kv[i] = (float *)malloc(2 * R->kv_elems * sizeof(float));
        R->acc[i] = (float *)calloc(2 * R->kv_elems, sizeof(float));
    }
    R->dq = (float *)calloc(R->q_elems, sizeof(float));
    if (!R->kv[0] || !R->kv[1] || !R->acc[0] || !R->acc[1] || !R->dq)
        return fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_backward: out of host memory");
    cl_int err = CL_SUCCESS;
    R->dev = clCreateBuffer(cl, CL_MEM_READ_ONLY, 2 * R->kv_elems * sizeof(float), NULL, &err);
    const size_t gsz[3] = {(size_t)(B * Hq * C * D), (size_t)(B * Hkv * C * D), (size_t)(B * Hkv * C * D)};
    for (int g = 0; g < 3 && err == CL_SUCCESS; g++)
        R->grad[g] = clCreateBuffer(cl, CL_MEM_READ_WRITE, gsz[g] * sizeof(float), NULL, &err);
    for (int i = 0; i < c->nchunks && err == CL_SUCCESS; i++) {
        if (c->nchunks == 1) { /* the caller's LSE is the chunk's */
            R->lse[i] = c->a->lse;
            clRetainMemObject(R->lse[i]);
            break;
        }
        R->lse[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)(B * Hq * C) * 4, NULL, &err);
        const size_t src_origin[3] = {(size_t)(i * C) * 4, 0, 0}, dst_origin[3] = {0, 0, 0};
        const size_t region[3] = {(size_t)C * 4, (size_t)(B * Hq), 1};
        if (err == CL_SUCCESS)
            err = clEnqueueCopyBufferRect(R->queue, c->a->lse, R->lse[i], src_origin, dst_origin, region,
                                          (size_t)L * 4, 0, (size_t)C * 4, 0, 0, NULL, NULL);
    }
    /* the local block, to send first */
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(R->queue, c->a->k, CL_TRUE, d->k_offset * 4, R->kv_elems * 4, R->kv[0], 0, NULL,
                                  NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(R->queue, c->a->v, CL_TRUE, d->v_offset * 4, R->kv_elems * 4, R->kv[0] + R->kv_elems,
                                  0, NULL, NULL);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl_cp__cl_fail(err, "the ring backward's buffers");
}

static void teardown(ring_bwd *R)
{
    if (!R->keep_host)
        for (int i = 0; i < 2; i++)
            free(R->kv[i]), free(R->acc[i]);
    free(R->dq);
    cl_mem m[6] = {R->dev, R->lse[0], R->lse[1], R->grad[0], R->grad[1], R->grad[2]};
    for (int i = 0; i < 6; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
}

/* Rows [i C, (i + 1) C) of every [b, h] of a [B, H, L, D] shard += a pair's [B, H, C, D]. */
static void add_rows(float *shard, const float *part, int64_t BH, int64_t L, int64_t C, int64_t D, int i)
{
    for (int64_t bh = 0; bh < BH; bh++)
        for (int64_t e = 0; e < C * D; e++)
            shard[(bh * L + i * C) * D + e] += part[bh * C * D + e];
}

/* Step t: the gradients of every query chunk against every key chunk of the block held (the
 * caller's k, v at t == 0, else R->dev), into R->dq and the block's accumulators R->acc[0]. */
static fa_cl_status step_gradients(ring_bwd *R, int t, float *host_grad)
{
    const fa_cl_cp__call *c = R->c;
    const fa_cl_attention_desc *d = &c->d;
    const int64_t B = d->batch, Hq = d->heads_q, Hkv = d->heads_kv, L = d->seqlen_q, D = d->head_dim, C = c->chunk;
    const int src = (c->rank - t + c->size) % c->size;
    for (int i = 0; i < c->nchunks; i++)
        for (int j = 0; j < c->nchunks; j++) {
            const int gi = fa_cl_cp__chunk_of(c, c->rank, i), gj = fa_cl_cp__chunk_of(c, src, j);
            if (fa_cl_cp__pair_skipped(c, gi, gj))
                continue;
            fa_cl_attention_desc p;
            fa_cl_cp__pair_desc(c, i, j, gi, gj, t == 0, R->kv_elems, &p);
            const int64_t os[3] = {Hq * L * D, L * D, D}, qs[3] = {Hq * C * D, C * D, D}, ks[3] = {Hkv * C * D, C * D, D};
            memcpy(p.o_stride, os, sizeof os); /* the forward's o and dO: the caller's rows of chunk i */
            p.o_offset = d->o_offset + (size_t)(i * C * D);
            memcpy(p.dout_stride, os, sizeof os);
            p.dout_offset = d->dout_offset + (size_t)(i * C * D);
            memcpy(p.dq_stride, qs, sizeof qs); /* the pair's gradients: contiguous, of their own */
            memcpy(p.dk_stride, ks, sizeof ks);
            memcpy(p.dv_stride, ks, sizeof ks);
            p.dq_offset = p.dk_offset = p.dv_offset = 0;
            fa_cl_backward_args a;
            fa_cl_backward_args_init(&a);
            a.q = c->a->q, a.o = c->a->o, a.lse = R->lse[i], a.dout = c->a->dout;
            a.k = t == 0 ? c->a->k : R->dev; /* a staged block: K at 0, V after it */
            a.v = t == 0 ? c->a->v : R->dev;
            a.dq = R->grad[0], a.dk = R->grad[1], a.dv = R->grad[2];
            fa_cl_status st = fa_cl_attention_backward(c->ctx, &p, &a);
            if (st != FA_CL_SUCCESS)
                return fa_cl_cp__fa_fail(c, st, "a partial backward");
            const size_t n[3] = {(size_t)(B * Hq * C * D), (size_t)(B * Hkv * C * D), (size_t)(B * Hkv * C * D)};
            for (int g = 0; g < 3; g++) {
                const cl_int err = clEnqueueReadBuffer(R->queue, R->grad[g], CL_TRUE, 0, n[g] * 4, host_grad, 0, NULL,
                                                       NULL);
                if (err != CL_SUCCESS)
                    return fa_cl_cp__cl_fail(err, "reading a partial gradient");
                if (g == 0)
                    add_rows(R->dq, host_grad, B * Hq, L, C, D, i);
                else
                    add_rows(R->acc[0] + (g - 1) * R->kv_elems, host_grad, B * Hkv, L, C, D, j);
            }
        }
    return FA_CL_SUCCESS;
}

/* One transfer to the right and from the left: bytes of send out, into recv, waited for. */
static fa_cl_status pass_on(ring_bwd *R, void *send, void *recv, size_t bytes, int tag, void **pending, int npending,
                            const char *what)
{
    const fa_cl_cp__call *c = R->c;
    const int right = (c->rank + 1) % c->size, left = (c->rank - 1 + c->size) % c->size;
    void *req[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < npending; i++)
        req[2 + i] = pending[i], pending[i] = NULL;
    int rc = c->t->irecv(c->t->user, recv, bytes, left, tag, &req[0]);
    if (rc == 0)
        rc = c->t->isend(c->t->user, send, bytes, right, tag, &req[1]);
    if (rc != 0) {
        for (int i = 0; i < 4; i++)
            if (req[i])
                c->t->abandon(c->t->user, req[i]);
        R->keep_host = 1;
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_backward (rank %d): %s: transport error %d",
                              c->rank, what, rc);
    }
    const fa_cl_status st = fa_cl_cp__wait(c, req, 4, what);
    if (st != FA_CL_SUCCESS)
        R->keep_host = 1;
    return st;
}

fa_cl_status fa_cl_cp__ring_backward(const fa_cl_cp__call *c)
{
    ring_bwd R;
    memset(&R, 0, sizeof R);
    R.c = c;
    const fa_cl_attention_desc *d = &c->d;
    fa_cl_status st = setup(&R);
    const size_t pair_max = (size_t)(d->batch * d->heads_q * c->chunk * d->head_dim);
    float *host_grad = st == FA_CL_SUCCESS ? (float *)malloc(pair_max * sizeof(float)) : NULL;
    if (st == FA_CL_SUCCESS && !host_grad)
        st = fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_backward: out of host memory");
    const size_t kv_bytes = 2 * R.kv_elems * sizeof(float);
    for (int t = 0; t < c->size && st == FA_CL_SUCCESS; t++) {
        void *kv_req[2] = {NULL, NULL};
        const int more = t < c->size - 1;
        if (more) { /* the block's K/V on to the right while this rank computes with them */
            const int right = (c->rank + 1) % c->size, left = (c->rank - 1 + c->size) % c->size;
            int rc = c->t->irecv(c->t->user, R.kv[1], kv_bytes, left, 2 * t, &kv_req[0]);
            if (rc == 0)
                rc = c->t->isend(c->t->user, R.kv[0], kv_bytes, right, 2 * t, &kv_req[1]);
            if (rc != 0) {
                R.keep_host = 1;
                if (kv_req[0])
                    c->t->abandon(c->t->user, kv_req[0]);
                st = fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_backward (rank %d): posting step %d's "
                                    "K/V failed (transport error %d)", c->rank, t, rc);
                break;
            }
        }
        st = step_gradients(&R, t, host_grad);
        if (st != FA_CL_SUCCESS) {
            for (int i = 0; i < 2; i++)
                if (kv_req[i])
                    c->t->abandon(c->t->user, kv_req[i]);
            R.keep_host = kv_req[0] != NULL;
            break;
        }
        if (c->size > 1) { /* the block's gradients after it (the last step: home to its owner) */
            char what[64];
            snprintf(what, sizeof what, "ring backward step %d of %d", t + 1, c->size);
            st = pass_on(&R, R.acc[0], R.acc[1], kv_bytes, 2 * t + 1, kv_req, 2, what);
            float *swap = R.acc[0];
            R.acc[0] = R.acc[1], R.acc[1] = swap;
        }
        if (st == FA_CL_SUCCESS && more) {
            float *swap = R.kv[0];
            R.kv[0] = R.kv[1], R.kv[1] = swap;
            const cl_int err = clEnqueueWriteBuffer(R.queue, R.dev, CL_TRUE, 0, kv_bytes, R.kv[0], 0, NULL, NULL);
            if (err != CL_SUCCESS)
                st = fa_cl_cp__cl_fail(err, "writing a received block to the device");
        }
    }
    /* R.acc[0]: this rank's own block's dK, dV, summed around the ring */
    if (st == FA_CL_SUCCESS) {
        cl_int err = clEnqueueWriteBuffer(R.queue, c->a->dq, CL_TRUE, d->dq_offset * 4, R.q_elems * 4, R.dq, 0, NULL,
                                          NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(R.queue, c->a->dk, CL_TRUE, d->dk_offset * 4, R.kv_elems * 4, R.acc[0], 0, NULL,
                                       NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(R.queue, c->a->dv, CL_TRUE, d->dv_offset * 4, R.kv_elems * 4,
                                       R.acc[0] + R.kv_elems, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "writing the gradients");
    }
    clFinish(R.queue);
    free(host_grad);
    teardown(&R);
    return st;
}
