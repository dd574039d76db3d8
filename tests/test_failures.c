/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Failed events: a call whose wait list holds an event that fails (a user event set to a negative
 * status) fails itself (its done event reports it), and leaves the plan usable: the clean calls
 * after it complete and are correct against the float64 oracle. Every plan kind: plain, split-KV
 * (FA_CL_TUNE=splits=3), long rows in chunks (FA_CL_TUNE=kv_chunk=32,splits=1), the one-shot call
 * through the context's plan cache, dense f16 prefill (on Hopper a plan with tensor maps), the
 * backward plan and the one-shot backward.
 *
 *   test_failures in_order       on the context's own (in-order) queue
 *   test_failures out_of_order   on an out-of-order queue (skipped where the device has none)
 *
 * Every wait is bounded by a watchdog: a call that never completes prints "FAIL: hang" and ends the
 * process with 1, so a regression fails instead of hanging CI.
 */
#include "test_util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tu_tally tally = {"failures", 0, 0};

/* ---- the watchdog ------------------------------------------------------------------------------ */

#define WATCHDOG_S 60 /* one small call on PoCL takes well under a second */
static const char *volatile waiting_for = "";

static void on_alarm(int sig)
{
    (void)sig;
    static const char head[] = "FAIL: hang: no completion within the watchdog's time while waiting for ";
    ssize_t n = write(1, head, sizeof head - 1);
    n = write(1, (const char *)waiting_for, strlen((const char *)waiting_for));
    n = write(1, "\n", 1);
    (void)n;
    _exit(1);
}

static void watch(const char *what)
{
    waiting_for = what;
    alarm(WATCHDOG_S);
}

static void unwatch(void) { alarm(0); }

/* ---- contexts ---------------------------------------------------------------------------------- */

/* A context read with the environment env ("NAME=value" words, NULL: none), on the default queue or
 * an out-of-order one. Returns 0, TU_EXIT_SKIP (no device, or no out-of-order queue) or 1. */
static int open_context(int out_of_order, const char *const env[2], fa_cl_context **out)
{
    *out = NULL;
    for (int i = 0; i < 2 && env && env[i]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(env[i], "="), env[i]);
        setenv(name, strchr(env[i], '=') + 1, 1);
    }
    fa_cl_context *probe = NULL;
    fa_cl_status st = fa_cl_context_create_default(&probe);
    int rc = 0;
    if (st != FA_CL_SUCCESS) {
        printf("fa_cl_context_create_default: %s: %s\n", fa_cl_status_string(st), fa_cl_last_error(NULL));
        rc = st == FA_CL_ERROR_NO_DEVICE ? TU_EXIT_SKIP : 1;
    } else if (!out_of_order) {
        *out = probe;
        probe = NULL;
    } else {
        cl_int err;
        cl_command_queue q = clCreateCommandQueue(fa_cl_context_cl_context(probe), fa_cl_context_device(probe),
                                                  CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
        if (!q) {
            printf("SKIP: the device takes no out-of-order queue (%d)\n", (int)err);
            rc = TU_EXIT_SKIP;
        } else {
            st = fa_cl_context_create(fa_cl_context_cl_context(probe), fa_cl_context_device(probe), q, out);
            clReleaseCommandQueue(q);
            if (st != FA_CL_SUCCESS) {
                printf("fa_cl_context_create (out-of-order queue): %s\n", fa_cl_last_error(NULL));
                rc = 1;
            }
        }
    }
    fa_cl_context_release(probe);
    for (int i = 0; i < 2 && env && env[i]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(env[i], "="), env[i]);
        unsetenv(name);
    }
    return rc;
}

/* ---- one exercise: a failing call, then clean ones --------------------------------------------- */

/* What an exercise runs: a call with a wait list (done receives its event), outputs filled with
 * the sentinel before a call, and the check of a clean call's outputs. */
typedef struct call_ops {
    fa_cl_status (*call)(void *data, cl_uint num_wait, const cl_event *wait, cl_event *done);
    int (*poison)(void *data);
    int (*check)(void *data, char *why, size_t why_size);
} call_ops;

static cl_int event_status(cl_event e)
{
    cl_int s = CL_QUEUED;
    return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL) == CL_SUCCESS ? s : CL_QUEUED;
}

/* One call whose wait list holds a user event that fails after the call is enqueued: the call is
 * enqueued, its done event ends with a negative status, and the queue drains. A call enqueued
 * behind it before the failure ends one way or the other (implementation-defined: PoCL's in-order
 * queue fails it too), without a crash or a hang. Then two clean calls: each completes (done
 * CL_COMPLETE) and passes the check. */
static void exercise(fa_cl_context *ctx, const char *name, void *data, const call_ops *ops)
{
    cl_command_queue queue = fa_cl_context_queue(ctx);
    cl_int err;
    cl_event user = clCreateUserEvent(fa_cl_context_cl_context(ctx), &err), done = NULL, behind = NULL;
    if (!user || ops->poison(data) != 0) {
        tu_expect(&tally, 0, "%s: setup failed (%d)", name, (int)err);
        if (user)
            clReleaseEvent(user);
        return;
    }
    fa_cl_status st = ops->call(data, 1, &user, &done);
    tu_expect(&tally, st == FA_CL_SUCCESS && done, "%s: a call waiting for a user event is enqueued: %s %s", name,
              fa_cl_status_string(st), st == FA_CL_SUCCESS ? "" : fa_cl_last_error(ctx));
    st = ops->call(data, 0, NULL, &behind);
    tu_expect(&tally, st == FA_CL_SUCCESS && behind, "%s: a call behind it is enqueued: %s", name,
              fa_cl_status_string(st));
    clSetUserEventStatus(user, -1); /* the upstream work failed */
    watch("the failed call's done event");
    if (done)
        clWaitForEvents(1, &done); /* returns the failure: only the status counts */
    watch("the call enqueued behind the failed one");
    if (behind)
        clWaitForEvents(1, &behind);
    watch("clFinish after the failed call");
    err = clFinish(queue);
    unwatch();
    if (done) {
        const cl_int s = event_status(done);
        tu_expect(&tally, s < 0, "%s: the call's done event reports the failure (status %d)", name, (int)s);
        clReleaseEvent(done);
    }
    if (behind) {
        const cl_int s = event_status(behind);
        tu_expect(&tally, s <= CL_COMPLETE, "%s: the call behind it has ended (status %d)", name, (int)s);
        clReleaseEvent(behind);
    }
    clReleaseEvent(user);
    tu_expect(&tally, err == CL_SUCCESS, "%s: the queue drains after the failure (clFinish %d)", name, (int)err);

    for (int i = 0; i < 2; i++) {
        char why[400] = "";
        done = NULL;
        int ok = ops->poison(data) == 0;
        st = ok ? ops->call(data, 0, NULL, &done) : FA_CL_ERROR_OPENCL;
        ok = st == FA_CL_SUCCESS && done;
        if (!ok)
            snprintf(why, sizeof why, "%s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        watch("a clean call after the failed one");
        if (done)
            clWaitForEvents(1, &done);
        clFinish(queue);
        unwatch();
        const cl_int s = done ? event_status(done) : CL_QUEUED;
        if (ok && s != CL_COMPLETE) {
            ok = 0;
            snprintf(why, sizeof why, "done status %d", (int)s);
        }
        if (done)
            clReleaseEvent(done);
        ok = ok && ops->check(data, why, sizeof why);
        tu_expect(&tally, ok, "%s: clean call %d after the failed one completes and is correct %s", name, i + 1, why);
    }
}

/* ---- the forward ------------------------------------------------------------------------------- */

typedef struct forward_run {
    fa_cl_context *ctx;
    fa_cl_plan *plan; /* NULL: the one-shot call */
    tu_problem p;
} forward_run;

static fa_cl_status forward_call(void *data, cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    forward_run *r = (forward_run *)data;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = r->p.mem[0], a.k = r->p.mem[1], a.v = r->p.mem[2], a.o = r->p.mem[3], a.lse = r->p.lse_mem;
    a.num_wait = num_wait, a.wait = wait, a.done = done;
    return r->plan ? fa_cl_plan_run(r->plan, &a) : fa_cl_attention_run(r->ctx, &r->p.desc, &a);
}

static int forward_poison(void *data)
{
    forward_run *r = (forward_run *)data;
    return tu_problem_poison(&r->p, r->ctx);
}

static int forward_check(void *data, char *why, size_t why_size)
{
    forward_run *r = (forward_run *)data;
    if (tu_problem_read(&r->p, r->ctx) != 0) {
        snprintf(why, why_size, "read failed");
        return 0;
    }
    tu_result res;
    tu_problem_check(&r->p, r->p.ref_o, r->p.ref_lse, &res);
    tu_result_format(&res, &r->p, why, why_size);
    return res.ok;
}

static const call_ops forward_ops = {forward_call, forward_poison, forward_check};

typedef struct forward_kind {
    const char *name;
    const char *env[2]; /* the environment the context is read with */
    tu_case c;
    int one_shot;
    int min_launches; /* the plan kind is what it says: launches per call at least */
    int splits;       /* fa_cl_plan_info.splits expected (0: any) */
} forward_kind;

#define F32_CASE(B, Hq, Hkv, Sq, Sk, causal) {B, Hq, Hkv, Sq, Sk, 16, FA_CL_F32, causal, -1, -1, NULL, 0.0f, 1}
static const forward_kind forward_kinds[] = {
    {"plain", {"FA_CL_TUNE=splits=1", NULL}, F32_CASE(1, 2, 2, 21, 45, 0), 0, 1, 1},
    {"split-KV", {"FA_CL_TUNE=splits=3", NULL}, F32_CASE(2, 4, 2, 2, 150, 0), 0, 2, 3},
    {"long rows in chunks", {"FA_CL_TUNE=kv_chunk=32,splits=1", NULL}, F32_CASE(1, 2, 1, 19, 100, 1), 0, 3, 1},
    {"one-shot split-KV", {"FA_CL_TUNE=splits=3", NULL}, F32_CASE(2, 4, 2, 2, 150, 0), 1, 2, 3},
    {"one-shot chunks", {"FA_CL_TUNE=kv_chunk=32,splits=1", NULL}, F32_CASE(1, 2, 1, 19, 100, 1), 1, 3, 1},
    /* on Hopper a plan with tensor maps (nvidia-wgmma at head_dim 128: scratch, two launches);
     * elsewhere plain (small grids split on a GPU unless told not to) */
    {"dense f16 prefill", {"FA_CL_TUNE=splits=1", NULL}, {1, 2, 2, 128, 128, 128, FA_CL_F16, 1, -1, -1, NULL, 0.0f, 1}, 0, 1,
     1},
};

static int forward_kind_run(int out_of_order, const forward_kind *k)
{
    forward_run r;
    memset(&r, 0, sizeof r);
    int rc = open_context(out_of_order, k->env, &r.ctx);
    if (rc != 0)
        return rc;
    char name[160];
    snprintf(name, sizeof name, "%s (%s queue)", k->name, out_of_order ? "out-of-order" : "in-order");
    if (tu_problem_init(&r.p, r.ctx, &k->c, 4400 + (uint64_t)k->c.Sk, 1) != 0) {
        tu_expect(&tally, 0, "%s: problem setup failed", name);
        fa_cl_context_release(r.ctx);
        return 0;
    }
    /* the plan the one-shot call takes from the cache is this one: its kind is checked here too */
    fa_cl_plan *plan = NULL;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    fa_cl_status st = fa_cl_plan_create(r.ctx, &r.p.desc, &plan);
    if (st == FA_CL_SUCCESS)
        fa_cl_plan_get_info(plan, &info);
    const int kind_ok =
        st == FA_CL_SUCCESS && info.launches >= k->min_launches && (!k->splits || info.splits == k->splits);
    tu_expect(&tally, kind_ok, "%s: the plan is of its kind: %s, %d launches, %d splits, %zu bytes of scratch %s", name,
              info.kernel ? info.kernel : "-", info.launches, info.splits, info.scratch_bytes,
              st == FA_CL_SUCCESS ? "" : fa_cl_last_error(r.ctx));
    if (kind_ok) {
        r.plan = k->one_shot ? NULL : plan;
        exercise(r.ctx, name, &r, &forward_ops);
    }
    fa_cl_plan_release(plan);
    tu_problem_free(&r.p);
    fa_cl_context_release(r.ctx);
    return 0;
}

/* ---- the backward ------------------------------------------------------------------------------ */

typedef struct backward_run {
    fa_cl_context *ctx;
    fa_cl_backward_plan *plan; /* NULL: the one-shot call */
    tu_problem p;              /* q, k, v; o and the LSE written by the forward */
    float *dout;
    double *ref[3];            /* dq, dk, dv from the oracle */
    size_t n[3];
    cl_mem mem[4];             /* dout, dq, dk, dv: contiguous f32 */
    float *img;                /* a gradient read back */
} backward_run;

static fa_cl_status backward_call(void *data, cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    backward_run *r = (backward_run *)data;
    fa_cl_backward_args a;
    fa_cl_backward_args_init(&a);
    a.q = r->p.mem[0], a.k = r->p.mem[1], a.v = r->p.mem[2], a.o = r->p.mem[3], a.lse = r->p.lse_mem;
    a.dout = r->mem[0], a.dq = r->mem[1], a.dk = r->mem[2], a.dv = r->mem[3];
    a.num_wait = num_wait, a.wait = wait, a.done = done;
    return r->plan ? fa_cl_backward_plan_run(r->plan, &a) : fa_cl_attention_backward(r->ctx, &r->p.desc, &a);
}

static int backward_poison(void *data)
{
    backward_run *r = (backward_run *)data;
    for (int g = 0; g < 3; g++) {
        for (size_t i = 0; i < r->n[g]; i++)
            tu_store_bits(FA_CL_F32, r->img, i, tu_sentinel_bits(FA_CL_F32));
        if (tu_write(r->ctx, r->mem[g + 1], r->n[g] * sizeof(float), r->img) != 0)
            return -1;
    }
    return 0;
}

static int backward_check(void *data, char *why, size_t why_size)
{
    backward_run *r = (backward_run *)data;
    static const char *const names[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        if (tu_read(r->ctx, r->mem[g + 1], r->n[g] * sizeof(float), r->img) != 0) {
            snprintf(why, why_size, "read failed");
            return 0;
        }
        double max_ref = 0.0;
        for (size_t i = 0; i < r->n[g]; i++)
            max_ref = fabs(r->ref[g][i]) > max_ref ? fabs(r->ref[g][i]) : max_ref;
        for (size_t i = 0; i < r->n[g]; i++)
            if (!fa_cl_tolerance_grad_ok(FA_CL_F32, r->img[i], r->ref[g][i], max_ref)) {
                snprintf(why, why_size, "%s[%zu] = %g, oracle %g", names[g], i, (double)r->img[i], r->ref[g][i]);
                return 0;
            }
    }
    return 1;
}

static const call_ops backward_ops = {backward_call, backward_poison, backward_check};

static void backward_free(backward_run *r)
{
    for (int i = 0; i < 4; i++)
        if (r->mem[i])
            clReleaseMemObject(r->mem[i]);
    for (int g = 0; g < 3; g++)
        free(r->ref[g]);
    free(r->dout);
    free(r->img);
    fa_cl_backward_plan_release(r->plan);
    tu_problem_free(&r->p);
}

/* q, k, v, the forward's o and LSE, dout and the oracle's gradients. Returns 0 or -1. */
static int backward_setup(backward_run *r, const tu_case *c)
{
    if (tu_problem_init(&r->p, r->ctx, c, 4501, 0) != 0)
        return -1;
    /* the backward reads the LSE the forward writes: a buffer both may use */
    clReleaseMemObject(r->p.lse_mem);
    r->p.lse_mem = tu_buffer(r->ctx, CL_MEM_READ_WRITE, (r->p.lse_elems + r->p.lse_slack) * sizeof(float), NULL);
    fa_cl_forward_args fa;
    fa_cl_forward_args_init(&fa);
    fa.q = r->p.mem[0], fa.k = r->p.mem[1], fa.v = r->p.mem[2], fa.o = r->p.mem[3], fa.lse = r->p.lse_mem;
    if (!r->p.lse_mem || fa_cl_attention_run(r->ctx, &r->p.desc, &fa) != FA_CL_SUCCESS)
        return -1;
    r->n[0] = (size_t)(c->B * c->Hq * c->Sq * c->D);
    r->n[1] = r->n[2] = (size_t)(c->B * c->Hkv * c->Sk * c->D);
    r->dout = (float *)malloc(r->n[0] * sizeof(float));
    r->img = (float *)malloc((r->n[0] > r->n[1] ? r->n[0] : r->n[1]) * sizeof(float));
    for (int g = 0; g < 3; g++)
        r->ref[g] = (double *)malloc(r->n[g] * sizeof(double));
    if (!r->dout || !r->img || !r->ref[0] || !r->ref[1] || !r->ref[2])
        return -1;
    tu_rng rng;
    tu_rng_seed(&rng, 4502);
    for (size_t i = 0; i < r->n[0]; i++)
        r->dout[i] = tu_rng_nonzero(&rng);
    tu_attention_backward_f64(&r->p.c, r->p.x[0], r->p.x[1], r->p.x[2], r->dout, r->ref[0], r->ref[1], r->ref[2]);
    r->mem[0] = tu_buffer(r->ctx, CL_MEM_READ_ONLY, r->n[0] * sizeof(float), r->dout);
    for (int g = 0; g < 3; g++)
        r->mem[g + 1] = tu_buffer(r->ctx, CL_MEM_READ_WRITE, r->n[g] * sizeof(float), NULL);
    return r->mem[0] && r->mem[1] && r->mem[2] && r->mem[3] && clFinish(fa_cl_context_queue(r->ctx)) == CL_SUCCESS
               ? 0
               : -1;
}

static int backward_kind_run(int out_of_order, int one_shot)
{
    backward_run r;
    memset(&r, 0, sizeof r);
    int rc = open_context(out_of_order, NULL, &r.ctx);
    if (rc != 0)
        return rc;
    char name[160];
    snprintf(name, sizeof name, "%s (%s queue)", one_shot ? "one-shot backward" : "backward",
             out_of_order ? "out-of-order" : "in-order");
    const tu_case c = {1, 2, 1, 24, 40, 16, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 1};
    if (backward_setup(&r, &c) != 0) {
        tu_expect(&tally, 0, "%s: setup failed: %s", name, fa_cl_last_error(r.ctx));
    } else if (!one_shot && fa_cl_backward_plan_create(r.ctx, &r.p.desc, &r.plan) != FA_CL_SUCCESS) {
        tu_expect(&tally, 0, "%s: plan: %s", name, fa_cl_last_error(r.ctx));
    } else {
        exercise(r.ctx, name, &r, &backward_ops);
    }
    backward_free(&r);
    fa_cl_context_release(r.ctx);
    return 0;
}

/* ---- subsets ----------------------------------------------------------------------------------- */

static int run_all(int out_of_order)
{
    signal(SIGALRM, on_alarm);
    for (int i = 0; i < TU_COUNT(forward_kinds); i++) {
        const int rc = forward_kind_run(out_of_order, &forward_kinds[i]);
        if (rc != 0)
            return rc;
    }
    for (int one_shot = 0; one_shot < 2; one_shot++) {
        const int rc = backward_kind_run(out_of_order, one_shot);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int subset_in_order(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    return run_all(0);
}

static int subset_out_of_order(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    return run_all(1);
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {{"in_order", subset_in_order}, {"out_of_order", subset_out_of_order}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, TU_TIMED);
}
