/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-safety contract (include/fa_cl.h), on the device:
 *
 *   test_threads shared    8 threads x 50 calls sharing ONE context: one-shot calls (through the
 *                          plan cache: 3 shapes, and o_offsets that push the cache past its 64
 *                          entries so it evicts while other threads use its plans), a plan shared by
 *                          all threads, a plan of the thread's own, and calls that fail (a buffer too
 *                          small) while others succeed; every result checked against float64, every
 *                          failure's status and message checked
 *   test_threads contexts  4 threads, each creating its own context on the device (twice), planning
 *                          and running; their results checked
 *   test_threads out_of_order  two calls of one plan that owns scratch in flight together on an
 *                          out-of-order queue (the plan orders them), 20 rounds, each result checked
 *
 * Inputs are shared (read-only); each thread has its own output buffers.
 */
#include "test_util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 8
#define NCALLS 50
#define OFFSETS 80 /* distinct o_offsets of the one-shot calls: more than the cache's 64 */

static tu_tally tally = {"threads", 0, 0};

static const tu_case shapes[3] = {
    {1, 4, 2, 37, 53, 32, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 1},
    {2, 2, 2, 19, 70, 16, FA_CL_F16, 0, 8, 4, NULL, 0.0f, 1},
    {1, 2, 1, 64, 33, 40, FA_CL_BF16, 0, -1, -1, NULL, 0.0f, 1},
};

typedef struct shared_state {
    fa_cl_context *ctx;
    tu_problem p[3];        /* inputs and the float64 reference of each shape */
    fa_cl_plan *shared_plan; /* shape 0, used by every thread */
} shared_state;

typedef struct worker {
    shared_state *s;
    int id;
    int calls, bad;
    char first[600];
} worker;

static void note(worker *w, const char *fmt, const char *a, const char *b)
{
    if (!w->bad++)
        snprintf(w->first, sizeof w->first, fmt, a, b);
}

/* Run one call of kind `kind` (0 one-shot, 1 shared plan, 2 own plan, 3 failing) on shape `si` into
 * the thread's buffers and check it. */
static void one_call(worker *w, int kind, int si, size_t o_off, cl_mem o, cl_mem lse, unsigned char *img,
                     size_t o_elems)
{
    shared_state *s = w->s;
    fa_cl_context *ctx = s->ctx;
    tu_problem *p = &s->p[si];
    const fa_cl_dtype dt = p->c.dtype;
    const size_t es = tu_dtype_size(dt), ob = tu_tensor_bytes(&p->t[3]);
    fa_cl_attention_desc d = p->desc;
    d.o_offset = o_off;
    /* poison this thread's o */
    for (size_t i = 0; i < o_elems; i++)
        tu_store_bits(dt, img, i, tu_sentinel_bits(dt));
    cl_command_queue queue = fa_cl_context_queue(ctx);
    clEnqueueWriteBuffer(queue, o, CL_TRUE, 0, o_elems * es, img, 0, NULL, NULL);
    const size_t lse_n = p->lse_elems + p->lse_slack;
    float *lse_img = (float *)malloc(lse_n * sizeof(float)); /* this thread's: p's is shared */
    for (size_t i = 0; i < lse_n; i++)
        tu_store_bits(FA_CL_F32, lse_img, i, tu_sentinel_bits(FA_CL_F32));
    if (lse)
        clEnqueueWriteBuffer(queue, lse, CL_TRUE, 0, lse_n * sizeof(float), lse_img, 0, NULL, NULL);
    cl_event done = NULL;
    fa_cl_status st;
    fa_cl_plan *own = NULL;
    switch (kind) {
    case 0:
        st = fa_cl_attention_forward(ctx, &d, p->mem[0], p->mem[1], p->mem[2], o, lse, 0, NULL, &done);
        break;
    case 1:
        st = fa_cl_plan_forward(s->shared_plan, p->mem[0], p->mem[1], p->mem[2], o, lse, 0, NULL, &done);
        break;
    case 2:
        st = fa_cl_plan_create(ctx, &d, &own);
        if (st == FA_CL_SUCCESS)
            st = fa_cl_plan_forward(own, p->mem[0], p->mem[1], p->mem[2], o, lse, 0, NULL, &done);
        fa_cl_plan_release(own);
        break;
    default: { /* v one element short: refused, nothing enqueued */
        cl_mem tiny = tu_buffer(ctx, CL_MEM_READ_ONLY, tu_tensor_bytes(&p->t[2]) - es, NULL);
        st = fa_cl_attention_forward(ctx, &d, p->mem[0], p->mem[1], tiny, o, lse, 0, NULL, &done);
        const char *msg = fa_cl_last_error(ctx);
        /* another thread may have failed in between; every failure here names a buffer */
        if (st != FA_CL_ERROR_BUFFER_TOO_SMALL || done || !strstr(msg, "buffer"))
            note(w, "a failing call: %s, message \"%.300s\"", fa_cl_status_string(st), msg);
        clReleaseMemObject(tiny);
        if (done)
            clReleaseEvent(done);
        free(lse_img);
        w->calls++;
        return;
    }
    }
    if (st != FA_CL_SUCCESS || !done) {
        note(w, "a call failed: %s: %.400s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        if (done)
            clReleaseEvent(done);
        free(lse_img);
        return;
    }
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
    clEnqueueReadBuffer(queue, o, CL_TRUE, 0, o_elems * es, img, 0, NULL, NULL);
    if (lse)
        clEnqueueReadBuffer(queue, lse, CL_TRUE, 0, lse_n * sizeof(float), lse_img, 0, NULL, NULL);
    /* compare: the view at o_off against the reference; nothing else of the buffer written */
    tu_problem local = *p; /* shares the reference arrays; its own o image */
    local.t[3].img = (unsigned char *)malloc(ob);
    local.lse_img = lse_img;
    memcpy(local.t[3].img, img + o_off * es, ob);
    local.c.lse = lse != NULL;
    tu_result r;
    tu_problem_check(&local, p->ref_o, p->ref_lse, &r);
    int outside_ok = 1;
    for (size_t i = 0; i < o_elems; i++)
        if ((i < o_off || i >= o_off + ob / es) && tu_load_bits(dt, img, i) != tu_sentinel_bits(dt))
            outside_ok = 0;
    if (!r.ok || !outside_ok)
        note(w, "a wrong result: %s%.400s", outside_ok ? "" : "wrote outside its view; ", r.first);
    free(local.t[3].img);
    free(lse_img);
    w->calls++;
}

static void *worker_main(void *arg)
{
    worker *w = (worker *)arg;
    shared_state *s = w->s;
    fa_cl_context *ctx = s->ctx;
    /* this thread's outputs: big enough for every shape at every offset */
    size_t o_elems = 0;
    for (int i = 0; i < 3; i++) {
        size_t e = s->p[i].t[3].elems + OFFSETS;
        o_elems = e > o_elems ? e : o_elems;
    }
    cl_mem o = tu_buffer(ctx, CL_MEM_READ_WRITE, o_elems * 4, NULL);
    cl_mem lse = tu_buffer(ctx, CL_MEM_READ_WRITE, 4096 * 4, NULL);
    unsigned char *img = (unsigned char *)malloc(o_elems * 4);
    for (int i = 0; i < NCALLS && o && lse && img; i++) {
        const int kind = (w->id + i) % 4;
        const int si = kind == 1 ? 0 : (w->id * 7 + i) % 3;
        const size_t off = kind == 1 ? 0 : (size_t)((w->id * NCALLS + i) % OFFSETS);
        one_call(w, kind, si, off, o, (i % 3) ? lse : NULL, img, s->p[si].t[3].elems + OFFSETS);
    }
    free(img);
    if (o)
        clReleaseMemObject(o);
    if (lse)
        clReleaseMemObject(lse);
    return NULL;
}

static int subset_shared(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    shared_state s;
    memset(&s, 0, sizeof s);
    int rc = tu_context(&s.ctx);
    if (rc != 0)
        return rc;
    for (int i = 0; i < 3; i++)
        if (tu_problem_init(&s.p[i], s.ctx, &shapes[i], 40 + (uint64_t)i, 1) != 0)
            return 1;
    if (fa_cl_plan_create(s.ctx, &s.p[0].desc, &s.shared_plan) != FA_CL_SUCCESS) {
        printf("plan: %s\n", fa_cl_last_error(s.ctx));
        return 1;
    }
    worker w[NTHREADS];
    pthread_t th[NTHREADS];
    memset(w, 0, sizeof w);
    const double t0 = tu_now_ms();
    for (int i = 0; i < NTHREADS; i++) {
        w[i].s = &s;
        w[i].id = i;
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    int calls = 0, bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        calls += w[i].calls;
        bad += w[i].bad;
        if (w[i].bad)
            printf("thread %d: %d bad; first: %s\n", i, w[i].bad, w[i].first);
    }
    tu_expect(&tally, bad == 0 && calls == NTHREADS * NCALLS,
              "%d threads x %d calls on one context (one-shot over 3 shapes x %d o_offsets, a shared plan, own "
              "plans, failing calls): %d checked, %d bad (%.1f s)",
              NTHREADS, NCALLS, OFFSETS, calls, bad, (tu_now_ms() - t0) / 1e3);
    fa_cl_plan_release(s.shared_plan);
    for (int i = 0; i < 3; i++)
        tu_problem_free(&s.p[i]);
    fa_cl_context_release(s.ctx);
    return 0;
}

/* ---- independent contexts --------------------------------------------------------------------- */

typedef struct ctx_worker {
    int id, ok, rounds;
    char why[600];
} ctx_worker;

static void *ctx_worker_main(void *arg)
{
    ctx_worker *w = (ctx_worker *)arg;
    w->ok = 1;
    for (int round = 0; round < 2 && w->ok; round++) {
        fa_cl_context *ctx = NULL;
        fa_cl_status st = fa_cl_context_create_default(&ctx);
        if (st != FA_CL_SUCCESS) {
            snprintf(w->why, sizeof w->why, "context: %s", fa_cl_last_error(NULL));
            w->ok = 0;
            break;
        }
        tu_problem p;
        const tu_case *c = &shapes[(w->id + round) % 3];
        if (tu_problem_init(&p, ctx, c, 90 + (uint64_t)w->id, 1) != 0) {
            w->ok = 0;
            fa_cl_context_release(ctx);
            break;
        }
        for (int i = 0; i < 5 && w->ok; i++) {
            fa_cl_plan *plan = NULL;
            st = (i % 2) ? fa_cl_attention_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem,
                                                   0, NULL, NULL)
                         : fa_cl_plan_create(ctx, &p.desc, &plan);
            if (st == FA_CL_SUCCESS && plan)
                st = fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, NULL);
            fa_cl_plan_release(plan);
            if (st != FA_CL_SUCCESS) {
                snprintf(w->why, sizeof w->why, "%s: %.400s", fa_cl_status_string(st), fa_cl_last_error(ctx));
                w->ok = 0;
                break;
            }
            clFinish(fa_cl_context_queue(ctx));
            tu_problem_read(&p, ctx);
            tu_result r;
            tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
            if (!r.ok) {
                snprintf(w->why, sizeof w->why, "%.500s", r.first);
                w->ok = 0;
            }
            tu_problem_poison(&p, ctx);
            w->rounds++;
        }
        tu_problem_free(&p);
        fa_cl_context_release(ctx);
    }
    return NULL;
}

static int subset_contexts(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    fa_cl_context *probe = NULL;
    int rc = tu_context(&probe);
    if (rc != 0)
        return rc;
    fa_cl_context_release(probe);
    enum { N = 4 };
    ctx_worker w[N];
    pthread_t th[N];
    memset(w, 0, sizeof w);
    for (int i = 0; i < N; i++) {
        w[i].id = i;
        pthread_create(&th[i], NULL, ctx_worker_main, &w[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        tu_expect(&tally, w[i].ok && w[i].rounds == 10,
                  "thread %d: its own contexts (created twice), 10 checked calls: %d done %s", i, w[i].rounds,
                  w[i].why);
    }
    return 0;
}

/* Calls of one plan back to back on an out-of-order queue, nothing between them: a plan that owns
 * scratch (split-KV's partial results here, FA_CL_TUNE splits in the test's environment; long rows'
 * chunk state; Hopper's tensor maps) must not let the second call's launches use it while the
 * first's still do. Each call's output is checked against float64. */
static int subset_out_of_order(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    fa_cl_context *probe = NULL;
    int rc = tu_context(&probe);
    if (rc != 0)
        return rc;
    cl_int err;
    cl_command_queue queue = clCreateCommandQueue(fa_cl_context_cl_context(probe), fa_cl_context_device(probe),
                                                  CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
    if (!queue) {
        printf("SKIP: the device takes no out-of-order queue (%d)\n", (int)err);
        fa_cl_context_release(probe);
        return TU_EXIT_SKIP;
    }
    fa_cl_context *ctx = NULL;
    fa_cl_status st = fa_cl_context_create(fa_cl_context_cl_context(probe), fa_cl_context_device(probe), queue, &ctx);
    clReleaseCommandQueue(queue);
    fa_cl_context_release(probe);
    if (!tu_expect(&tally, st == FA_CL_SUCCESS, "a context on an out-of-order queue: %s", fa_cl_status_string(st)))
        return 0;
    const tu_case c = {2, 4, 2, 3, 300, 32, FA_CL_F32, 0, -1, -1, NULL, 0.0f, 1};
    tu_problem p[2];
    memset(p, 0, sizeof p);
    fa_cl_plan *plan = NULL;
    int ok = tu_problem_init(&p[0], ctx, &c, 501, 1) == 0 && tu_problem_init(&p[1], ctx, &c, 502, 1) == 0 &&
             fa_cl_plan_create(ctx, &p[0].desc, &plan) == FA_CL_SUCCESS;
    fa_cl_plan_info info;
    ok = ok && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS;
    tu_expect(&tally, ok && info.scratch_bytes > 0, "a plan that owns scratch: %zu bytes (%s)",
              ok ? info.scratch_bytes : 0, ok ? info.kernel : fa_cl_last_error(ctx));
    for (int round = 0; ok && round < 20; round++) {
        for (int i = 0; i < 2 && ok; i++)
            ok = tu_problem_poison(&p[i], ctx) == 0;
        for (int i = 0; i < 2 && ok; i++)
            ok = fa_cl_plan_forward(plan, p[i].mem[0], p[i].mem[1], p[i].mem[2], p[i].mem[3], p[i].lse_mem, 0, NULL,
                                    NULL) == FA_CL_SUCCESS;
        ok = ok && clFinish(fa_cl_context_queue(ctx)) == CL_SUCCESS;
        for (int i = 0; i < 2 && ok; i++) {
            tu_result r;
            ok = tu_problem_read(&p[i], ctx) == 0;
            if (ok)
                tu_problem_check(&p[i], p[i].ref_o, p[i].ref_lse, &r);
            ok = ok && r.ok;
            if (!ok) {
                char buf[400];
                tu_result_format(&r, &p[i], buf, sizeof buf);
                tu_expect(&tally, 0, "round %d, call %d of 2: %s", round, i, buf);
            }
        }
    }
    tu_expect(&tally, ok, "20 rounds of two calls of one plan in flight together, each checked");
    fa_cl_plan_release(plan);
    tu_problem_free(&p[0]);
    tu_problem_free(&p[1]);
    fa_cl_context_release(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {{"shared", subset_shared}, {"contexts", subset_contexts},
                                        {"out_of_order", subset_out_of_order}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, 0);
}
