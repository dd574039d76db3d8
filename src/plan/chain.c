/* SPDX-License-Identifier: Apache-2.0 */
/* Running a plan's launches: one chain of enqueues per call, ordered after each other and after the
 * previous call where the plan's scratch is shared, and the events some queues need held. */
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One call's launch events, held until its last launch has ended (fa_cl__chain_state). */
struct fa_cl__held_chain {
    fa_cl__held_chain *next;
    int count;
    cl_event events[];
};

static void CL_CALLBACK held_chain_free(cl_event ended, cl_int status, void *data)
{
    (void)ended, (void)status;
    fa_cl__held_chain *c = (fa_cl__held_chain *)data;
    for (int i = 0; i < c->count; i++)
        clReleaseEvent(c->events[i]);
    free(c);
}

/* An event whose command has ended: complete, or failed (a negative status); a failed query counts
 * as ended (the event is then no use to wait for). */
static int event_ended(cl_event e)
{
    cl_int status = CL_COMPLETE;
    return clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS ||
           status <= CL_COMPLETE;
}

/* Release the held chains whose last launch has ended. */
static void held_chains_sweep(fa_cl__chain_state *state)
{
    for (fa_cl__held_chain **p = &state->held; *p;) {
        fa_cl__held_chain *c = *p;
        if (event_ended(c->events[c->count - 1])) {
            *p = c->next;
            held_chain_free(NULL, CL_COMPLETE, c);
        } else {
            p = &c->next;
        }
    }
}

void fa_cl__chain_state_release(fa_cl__chain_state *state)
{
    held_chains_sweep(state);
    /* calls still running: their events go when their last launch ends (PoCL 3.1 calls no callback
     * for a failed one: those few events stay) */
    while (state->held) {
        fa_cl__held_chain *c = state->held;
        state->held = c->next;
        if (clSetEventCallback(c->events[c->count - 1], CL_COMPLETE, held_chain_free, c) != CL_SUCCESS)
            held_chain_free(NULL, CL_COMPLETE, c);
    }
    if (state->last)
        clReleaseEvent(state->last);
    state->last = NULL;
}

fa_cl_status fa_cl__enqueue_chain(fa_cl_context *ctx, fa_cl__lock *lock, int count, fa_cl__chain_fn prepare,
                                  void *data, cl_uint num_wait, const cl_event *wait, cl_event *done,
                                  fa_cl__chain_state *state, int serial)
{
    const int ordered = ctx->queue_in_order, hold = ctx->hold_events;
    fa_cl__lock_acquire(lock);
    held_chains_sweep(state);
    fa_cl__held_chain *held = NULL;
    if (hold && !(held = (fa_cl__held_chain *)calloc(1, sizeof *held + (size_t)count * sizeof(cl_event)))) {
        fa_cl__lock_release(lock);
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "enqueue: out of host memory");
    }
    /* the first launch's wait list: the caller's, and (out of order, a plan with scratch) the
     * previous call's last launch unless that has ended: a failed one no longer runs, and in a
     * wait list it would fail every later call */
    if (state->last && (ordered || !serial || event_ended(state->last))) {
        clReleaseEvent(state->last);
        state->last = NULL;
    }
    cl_event few[8], *first_wait = (cl_event *)wait;
    cl_uint first_num = num_wait;
    if (state->last) {
        first_wait = num_wait < 8 ? few : (cl_event *)malloc(((size_t)num_wait + 1) * sizeof *first_wait);
        if (!first_wait) {
            free(held);
            fa_cl__lock_release(lock);
            return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "enqueue: out of host memory");
        }
        for (cl_uint i = 0; i < num_wait; i++)
            first_wait[i] = wait[i];
        first_wait[first_num++] = state->last;
    }
    fa_cl_status st = FA_CL_SUCCESS;
    for (int i = 0; i < count; i++) {
        fa_cl__chain_step s;
        memset(&s, 0, sizeof s);
        if ((st = prepare(data, i, &s)) != FA_CL_SUCCESS)
            break;
        /* In order the queue runs the launches one after another and each waits for the caller's
         * list only: whatever an implementation does with a failure in queue order, no launch of a
         * call runs after a failed event of its list, and done reports it. Out of order, each
         * launch waits for the previous one's event. */
        const int last = i == count - 1;
        cl_uint n = i == 0 ? first_num : num_wait;
        const cl_event *list = i == 0 ? first_wait : wait;
        if (i > 0 && !ordered)
            n = 1, list = &held->events[i - 1];
        cl_event *ev = held ? &held->events[i] : last ? done : NULL;
        const cl_int err = clEnqueueNDRangeKernel(ctx->queue, s.kernel, s.dims, NULL, s.global,
                                                  s.local[0] ? s.local : NULL, n, n ? list : NULL, ev);
        if (err != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", s.name);
            st = fa_cl__fail_cl(ctx, err, what);
            break;
        }
        if (held)
            held->count = i + 1;
    }
    if (held && held->count > 0) {
        const cl_event tail = held->events[held->count - 1];
        if (st == FA_CL_SUCCESS && serial && !ordered && clRetainEvent(tail) == CL_SUCCESS) {
            if (state->last)
                clReleaseEvent(state->last);
            state->last = tail; /* the next call's first launch waits for this one */
        }
        if (st == FA_CL_SUCCESS && done && clRetainEvent(tail) == CL_SUCCESS)
            *done = tail;
        held->next = state->held;
        state->held = held;
    } else {
        free(held);
    }
    if (first_wait != wait && first_wait != few)
        free(first_wait);
    fa_cl__lock_release(lock);
    return st;
}
