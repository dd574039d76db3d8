/* SPDX-License-Identifier: Apache-2.0 */
/* Ring attention (include/fa_cl_cp.h, FA_CL_CP_RING): the K/V shards travel around the ring through
 * two pinned host buffers while the device attends the local queries to the block it holds; every
 * (query chunk, key chunk) pair is a partial call with its positions, and each query chunk's
 * partials are merged once at the end (fa_cl_merge). */
#include "cp/cp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The call's device and host resources. */
typedef struct ring {
    const fa_cl_cp__call *c;
    cl_command_queue queue;
    size_t kv_elems;       /* elements of one K (or V) shard: B * Hkv * L * D */
    size_t kv_bytes;       /* of K and V together: what one step sends */
    cl_mem host_mem[2];    /* CL_MEM_ALLOC_HOST_PTR, mapped: the staging (pinned where the driver allows) */
    unsigned char *host[2];
    cl_mem dev[2];         /* the received blocks on the device: K, then V */
    cl_event written[2];   /* the last write of host[i] into dev[i] */
    int nslots;            /* partial results: query chunk i, step t, key chunk j */
    fa_cl_attention_desc *slot_desc;
    cl_mem *slot_o, *slot_lse;
    cl_event *slot_done;
    int leak_host;         /* a transport failure: the staging may still be written, keep it */
} ring;

static int slot_index(const fa_cl_cp__call *c, int i, int t, int j)
{
    return (i * c->size + t) * c->nchunks + j;
}

static fa_cl_status ring_alloc(ring *R)
{
    const fa_cl_cp__call *c = R->c;
    const fa_cl_attention_desc *d = &c->d;
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    R->queue = fa_cl_context_queue(c->ctx);
    R->kv_elems = (size_t)(d->batch * d->heads_kv * d->seqlen_k * d->head_dim);
    R->kv_bytes = 2 * R->kv_elems * c->elem;
    R->nslots = c->nchunks * c->size * c->nchunks;
    R->slot_desc = (fa_cl_attention_desc *)calloc((size_t)R->nslots, sizeof *R->slot_desc);
    R->slot_o = (cl_mem *)calloc((size_t)R->nslots, sizeof(cl_mem));
    R->slot_lse = (cl_mem *)calloc((size_t)R->nslots, sizeof(cl_mem));
    R->slot_done = (cl_event *)calloc((size_t)R->nslots, sizeof(cl_event));
    if (!R->slot_desc || !R->slot_o || !R->slot_lse || !R->slot_done)
        return fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_forward: out of host memory");
    if (c->size == 1)
        return FA_CL_SUCCESS;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++) {
        R->host_mem[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, R->kv_bytes, NULL, &err);
        if (err == CL_SUCCESS)
            R->host[i] = (unsigned char *)clEnqueueMapBuffer(R->queue, R->host_mem[i], CL_TRUE,
                                                             CL_MAP_READ | CL_MAP_WRITE, 0, R->kv_bytes, 0, NULL,
                                                             NULL, &err);
        if (err == CL_SUCCESS)
            R->dev[i] = clCreateBuffer(cl, CL_MEM_READ_ONLY, R->kv_bytes, NULL, &err);
    }
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl_cp__cl_fail(err, "the ring's staging buffers");
}

static void ring_free(ring *R)
{
    for (int i = 0; i < 2; i++) {
        if (R->written[i])
            clReleaseEvent(R->written[i]);
        if (R->host_mem[i] && !R->leak_host) {
            if (R->host[i])
                clEnqueueUnmapMemObject(R->queue, R->host_mem[i], R->host[i], 0, NULL, NULL);
            clReleaseMemObject(R->host_mem[i]);
        }
        if (R->dev[i])
            clReleaseMemObject(R->dev[i]);
    }
    for (int s = 0; s < R->nslots && R->slot_o; s++) {
        if (R->slot_o[s])
            clReleaseMemObject(R->slot_o[s]);
        if (R->slot_lse[s])
            clReleaseMemObject(R->slot_lse[s]);
        if (R->slot_done[s])
            clReleaseEvent(R->slot_done[s]);
    }
    free(R->slot_desc), free(R->slot_o), free(R->slot_lse), free(R->slot_done);
}

int fa_cl_cp__pair_skipped(const fa_cl_cp__call *c, int gi, int gj)
{
    return c->d.causal && gj > gi; /* every key after every row: nothing to see */
}

void fa_cl_cp__pair_desc(const fa_cl_cp__call *c, int i, int j, int gi, int gj, int own, size_t v_base,
                         fa_cl_attention_desc *p)
{
    const fa_cl_attention_desc *d = &c->d;
    const int64_t Hq = d->heads_q, Hkv = d->heads_kv, L = d->seqlen_q, D = d->head_dim, C = c->chunk;
    *p = *d;
    p->seqlen_q = p->seqlen_k = C;
    const int64_t qs[3] = {Hq * L * D, L * D, D}, ks[3] = {Hkv * L * D, L * D, D};
    memcpy(p->q_stride, qs, sizeof qs);
    memcpy(p->k_stride, ks, sizeof ks);
    memcpy(p->v_stride, ks, sizeof ks);
    p->q_offset = d->q_offset + (size_t)(i * C * D);
    p->k_offset = (own ? d->k_offset : 0) + (size_t)(j * C * D);
    p->v_offset = (own ? d->v_offset : v_base) + (size_t)(j * C * D);
    p->q_position = gi * C, p->k_position = gj * C;
    p->full_seqlen_q = p->full_seqlen_k = c->full;
}

/* The partial calls of step t: every local query chunk i against every key chunk j of the block
 * that rank src owns (t == 0: the caller's k and v; else dev[t % 2], after the write `after`). */
static fa_cl_status step_partials(ring *R, int t, cl_event after)
{
    const fa_cl_cp__call *c = R->c;
    const fa_cl_attention_desc *d = &c->d;
    const int src = (c->rank - t + c->size) % c->size;
    const int64_t B = d->batch, Hq = d->heads_q, D = d->head_dim, C = c->chunk;
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    for (int i = 0; i < c->nchunks; i++)
        for (int j = 0; j < c->nchunks; j++) {
            const int gi = fa_cl_cp__chunk_of(c, c->rank, i), gj = fa_cl_cp__chunk_of(c, src, j);
            if (fa_cl_cp__pair_skipped(c, gi, gj))
                continue;
            const int s = slot_index(c, i, t, j);
            fa_cl_attention_desc *p = &R->slot_desc[s];
            fa_cl_cp__pair_desc(c, i, j, gi, gj, t == 0, R->kv_elems, p);
            const int64_t os[3] = {Hq * C * D, C * D, D};
            memcpy(p->o_stride, os, sizeof os);
            p->o_offset = 0;
            p->o_type = FA_CL_STORAGE_F32; /* partials at full precision for the merge */
            cl_int err;
            R->slot_o[s] = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)(B * Hq * C * D) * 4, NULL, &err);
            if (err == CL_SUCCESS)
                R->slot_lse[s] = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)(B * Hq * C) * 4, NULL, &err);
            if (err != CL_SUCCESS)
                return fa_cl_cp__cl_fail(err, "a partial result's buffers");
            fa_cl_forward_args fa;
            fa_cl_forward_args_init(&fa);
            fa.q = c->a->q;
            fa.k = t == 0 ? c->a->k : R->dev[t % 2];
            fa.v = t == 0 ? c->a->v : R->dev[t % 2];
            fa.o = R->slot_o[s], fa.lse = R->slot_lse[s];
            fa.alibi_slopes = d->alibi ? c->a->alibi_slopes : NULL;
            fa.num_wait = after ? 1 : 0, fa.wait = after ? &after : NULL;
            fa.done = &R->slot_done[s];
            const fa_cl_status st = fa_cl_attention_run(c->ctx, p, &fa);
            if (st != FA_CL_SUCCESS)
                return fa_cl_cp__fa_fail(c, st, "a partial call");
        }
    return FA_CL_SUCCESS;
}

/* Each query chunk's partials merged into its rows of o and the LSE (through a chunk-sized LSE
 * and a rectangle copy where the rows of a chunk are not the whole shard). */
static fa_cl_status merge_chunks(ring *R)
{
    const fa_cl_cp__call *c = R->c;
    const fa_cl_attention_desc *d = &c->d;
    const int64_t B = d->batch, Hq = d->heads_q, L = d->seqlen_q, D = d->head_dim, C = c->chunk;
    const int per = c->size * c->nchunks;
    const fa_cl_attention_desc **pd = (const fa_cl_attention_desc **)calloc((size_t)per, sizeof *pd);
    cl_mem *po = (cl_mem *)calloc((size_t)per, sizeof *po), *pl = (cl_mem *)calloc((size_t)per, sizeof *pl);
    cl_event *wait = (cl_event *)calloc((size_t)R->nslots, sizeof *wait);
    fa_cl_status st = pd && po && pl && wait ? FA_CL_SUCCESS
                                             : fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_forward: out of "
                                                              "host memory");
    cl_uint nwait = 0;
    for (int s = 0; s < R->nslots && wait; s++)
        if (R->slot_done[s])
            wait[nwait++] = R->slot_done[s];
    cl_context cl = fa_cl_context_cl_context(c->ctx);
    for (int i = 0; i < c->nchunks && st == FA_CL_SUCCESS; i++) {
        cl_uint n = 0;
        for (int t = 0; t < c->size; t++)
            for (int j = 0; j < c->nchunks; j++) {
                const int s = slot_index(c, i, t, j);
                if (R->slot_o[s])
                    pd[n] = &R->slot_desc[s], po[n] = R->slot_o[s], pl[n] = R->slot_lse[s], n++;
            }
        fa_cl_attention_desc out = *d;
        out.seqlen_q = out.seqlen_k = C;
        const int64_t os[3] = {Hq * L * D, L * D, D};
        memcpy(out.o_stride, os, sizeof os);
        out.o_offset = d->o_offset + (size_t)(i * C * D);
        cl_mem lse = c->a->lse;
        cl_int err = CL_SUCCESS;
        if (lse && c->nchunks > 1)
            lse = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)(B * Hq * C) * 4, NULL, &err);
        if (err != CL_SUCCESS) {
            st = fa_cl_cp__cl_fail(err, "a chunk's LSE");
            break;
        }
        fa_cl_merge_args m;
        fa_cl_merge_args_init(&m);
        m.desc = &out, m.num_parts = n, m.part_desc = pd, m.part_o = po, m.part_lse = pl;
        m.o = c->a->o, m.lse = lse, m.num_wait = nwait, m.wait = nwait ? wait : NULL;
        st = fa_cl_merge(c->ctx, &m);
        if (st != FA_CL_SUCCESS)
            st = fa_cl_cp__fa_fail(c, st, "fa_cl_merge");
        if (st == FA_CL_SUCCESS && lse != c->a->lse) { /* rows i C .. of every [b, h] row of the LSE */
            const size_t src_origin[3] = {0, 0, 0}, dst_origin[3] = {(size_t)(i * C) * 4, 0, 0};
            const size_t region[3] = {(size_t)C * 4, (size_t)(B * Hq), 1};
            err = clEnqueueCopyBufferRect(R->queue, lse, c->a->lse, src_origin, dst_origin, region, (size_t)C * 4, 0,
                                          (size_t)L * 4, 0, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                st = fa_cl_cp__cl_fail(err, "clEnqueueCopyBufferRect (the LSE)");
        }
        if (lse && lse != c->a->lse)
            clReleaseMemObject(lse);
    }
    free(pd), free(po), free(pl), free(wait);
    return st;
}

/* Step t's transfer: the block held now (host[t % 2]) to the right, the next one from the left
 * into host[(t + 1) % 2], which the write of step t - 1 must have read first. */
static fa_cl_status post_transfer(ring *R, int t, void **req)
{
    const fa_cl_cp__call *c = R->c;
    const int next = (t + 1) % 2, right = (c->rank + 1) % c->size, left = (c->rank - 1 + c->size) % c->size;
    if (R->written[next]) {
        const cl_int err = clWaitForEvents(1, &R->written[next]);
        clReleaseEvent(R->written[next]);
        R->written[next] = NULL;
        if (err != CL_SUCCESS)
            return fa_cl_cp__cl_fail(err, "a received block's copy to the device");
    }
    int rc = c->t->irecv(c->t->user, R->host[next], R->kv_bytes, left, t, &req[0]);
    if (rc == 0)
        rc = c->t->isend(c->t->user, R->host[t % 2], R->kv_bytes, right, t, &req[1]);
    if (rc != 0) {
        R->leak_host = 1;
        if (req[0])
            c->t->abandon(c->t->user, req[0]);
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): posting step %d's transfer "
                              "failed (transport error %d)", c->rank, t, rc);
    }
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_cp__ring_forward(const fa_cl_cp__call *c)
{
    ring R;
    memset(&R, 0, sizeof R);
    R.c = c;
    fa_cl_status st = ring_alloc(&R);
    const fa_cl_attention_desc *d = &c->d;
    if (st == FA_CL_SUCCESS && c->size > 1) { /* the local block, to send first */
        cl_int err = clEnqueueReadBuffer(R.queue, c->a->k, CL_TRUE, d->k_offset * c->elem, R.kv_bytes / 2, R.host[0],
                                         0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(R.queue, c->a->v, CL_TRUE, d->v_offset * c->elem, R.kv_bytes / 2,
                                      R.host[0] + R.kv_bytes / 2, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "reading the local K/V shard");
    }
    cl_event arrived = NULL; /* the current block's write into dev[t % 2] */
    for (int t = 0; t < c->size && st == FA_CL_SUCCESS; t++) {
        void *req[2] = {NULL, NULL};
        const int more = t < c->size - 1;
        if (more && (st = post_transfer(&R, t, req)) != FA_CL_SUCCESS)
            break;
        st = step_partials(&R, t, arrived);
        clFlush(R.queue); /* the device works while the host waits for the transfer */
        if (st != FA_CL_SUCCESS || !more) {
            if (st != FA_CL_SUCCESS && more) {
                R.leak_host = 1;
                c->t->abandon(c->t->user, req[0]);
                c->t->abandon(c->t->user, req[1]);
            }
            break;
        }
        char what[64];
        snprintf(what, sizeof what, "ring step %d of %d", t + 1, c->size - 1);
        if ((st = fa_cl_cp__wait(c, req, 2, what)) != FA_CL_SUCCESS) {
            R.leak_host = 1;
            break;
        }
        const int next = (t + 1) % 2;
        cl_int err = clEnqueueBarrierWithWaitList(R.queue, 0, NULL, NULL); /* dev[next]'s readers (step t - 1) */
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(R.queue, R.dev[next], CL_FALSE, 0, R.kv_bytes, R.host[next], 0, NULL,
                                       &R.written[next]);
        if (err != CL_SUCCESS)
            st = fa_cl_cp__cl_fail(err, "writing a received block to the device");
        arrived = R.written[next];
    }
    if (st == FA_CL_SUCCESS)
        st = merge_chunks(&R);
    const cl_int fin = clFinish(R.queue);
    if (st == FA_CL_SUCCESS && fin != CL_SUCCESS)
        st = fa_cl_cp__cl_fail(fin, "clFinish");
    ring_free(&R);
    return st;
}
