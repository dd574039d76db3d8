/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Invalid arguments on a real context: each returns its documented status, fa_cl_last_error names
 * the argument, nothing is enqueued (no event comes back) and the outputs keep their poison.
 *
 *   test_invalid args    descriptor fields, buffers, overlaps, wait lists, NULL handles, environment
 *   test_invalid build   a kernel that fails to build (FA_CL_KERNEL_DIR pointing at a broken copy):
 *                        FA_CL_ERROR_BUILD_FAILED with the build log; the context recovers; with only
 *                        one file broken the same context keeps running every other kernel
 *   test_invalid env_trailing  FA_CL_TUNE tile values with trailing characters must be refused
 *   test_invalid env_switches  every on/off switch takes 1/on/yes/true and 0/off/no/false in any
 *                        case (nvidia-wgmma:tma also mask, kv) and refuses anything else, naming it
 */
#include "plan/plan.h" /* the context's switches and tuning keys as read */
#include "test_util.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tu_tally tally = {"invalid", 0, 0};

/* ---- helpers ---------------------------------------------------------------------------------- */

/* Are p's o and lse buffers still all sentinel (and q/k/v unchanged)? */
static int untouched(fa_cl_context *ctx, tu_problem *p)
{
    clFinish(fa_cl_context_queue(ctx));
    if (tu_problem_read(p, ctx) != 0)
        return 0;
    const uint32_t s = tu_sentinel_bits(p->c.dtype), fs = tu_sentinel_bits(FA_CL_F32);
    for (size_t i = 0; i < p->t[3].elems; i++)
        if (tu_load_bits(p->c.dtype, p->t[3].img, i) != s)
            return 0;
    if (p->lse_mem)
        for (size_t i = 0; i < p->lse_elems + p->lse_slack; i++)
            if (tu_load_bits(FA_CL_F32, p->lse_img, i) != fs)
                return 0;
    for (int t = 0; t < 3; t++) {
        size_t bytes = tu_tensor_bytes(&p->t[t]);
        unsigned char *back = (unsigned char *)malloc(bytes);
        int same = back && tu_read(ctx, p->mem[t], bytes, back) == 0 && memcmp(back, p->t[t].img, bytes) == 0;
        free(back);
        if (!same)
            return 0;
    }
    return 1;
}

/* One expectation: status, message naming `word`, no event, outputs untouched (p may be NULL). */
static void expect(fa_cl_context *ctx, tu_problem *p, const char *what, fa_cl_status got, fa_cl_status want,
                   const char *msg, const char *word, cl_event done)
{
    int name_ok = msg && word && strstr(msg, word) != NULL;
    int out_ok = p ? untouched(ctx, p) : 1;
    int ok = got == want && name_ok && done == NULL && out_ok;
    char m[400];
    snprintf(m, sizeof m, "%s", msg ? msg : "(null)");
    for (char *c = m; *c; c++)
        if (*c == '\n')
            *c = ' ';
    tu_expect(&tally, ok, "%-52s -> %s (want %s)%s%s%s msg: \"%s\" (must name \"%s\")", what, fa_cl_status_string(got),
              fa_cl_status_string(want), done ? " [an event came back]" : "", out_ok ? "" : " [outputs/inputs changed]",
              name_ok ? "" : " [message does not name it]", m, word);
    if (done)
        clReleaseEvent(done);
    if (p && !out_ok)
        tu_problem_poison(p, ctx);
}

/* A valid problem on ctx (GQA 2:1, f32, LSE). */
static const tu_case base_case = {2, 4, 2, 33, 47, 64, FA_CL_F32, 1, -1, -1, NULL, 0.0f, 1};

/* Run p through a fresh plan and check it against the float64 reference. */
static int forward_correct(fa_cl_context *ctx, tu_problem *p, char *detail, size_t n)
{
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p->desc, &plan);
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_forward(plan, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL, NULL);
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS) {
        snprintf(detail, n, "%s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        return 0;
    }
    clFinish(fa_cl_context_queue(ctx));
    tu_problem_read(p, ctx);
    tu_result r;
    tu_problem_check(p, p->ref_o, p->ref_lse, &r);
    tu_result_format(&r, p, detail, n);
    tu_problem_poison(p, ctx);
    return r.ok;
}

/* ---- descriptor-level failures: plan_create, the one-shot call, and validate agree ------------ */

static void desc_case(fa_cl_context *ctx, tu_problem *p, const char *what, const fa_cl_attention_desc *d,
                      fa_cl_status want, const char *word)
{
    char label[200];
    fa_cl_plan *plan = (fa_cl_plan *)&label; /* must come back NULL */
    fa_cl_status st = fa_cl_plan_create(ctx, d, &plan);
    snprintf(label, sizeof label, "plan_create %s", what);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", fa_cl_last_error(ctx));
    if (plan) {
        tu_expect(&tally, 0, "%s: *out is not NULL after a failure", label);
        if (st == FA_CL_SUCCESS)
            fa_cl_plan_release(plan);
    }
    expect(ctx, NULL, label, st, want, msg, word, NULL);

    cl_event done = NULL;
    st = fa_cl_attention_forward(ctx, d, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL, &done);
    snprintf(label, sizeof label, "one-shot %s", what);
    expect(ctx, p, label, st, want, fa_cl_last_error(ctx), word, done);

    char vmsg[512] = "";
    fa_cl_status vs = fa_cl_attention_desc_validate(d, vmsg, sizeof vmsg);
    /* validate vs plan_create on heads_q > INT32_MAX is its own test: desc_validate_heads_q_limit */
    if (vs != want && !(d->heads_q > INT32_MAX && want == FA_CL_ERROR_UNSUPPORTED))
        tu_expect(&tally, 0, "validate %s -> %s but plan_create -> %s (the header says they agree): \"%s\"", what,
                  fa_cl_status_string(vs), fa_cl_status_string(want), vmsg);
}

static void descriptor_cases(fa_cl_context *ctx, tu_problem *p)
{
    const fa_cl_status INV = FA_CL_ERROR_INVALID_ARGUMENT, UNS = FA_CL_ERROR_UNSUPPORTED;
#define DCASE(want, word, stmt)                                                                                  \
    do {                                                                                                         \
        fa_cl_attention_desc d = p->desc;                                                                        \
        stmt;                                                                                                    \
        desc_case(ctx, p, #stmt, &d, want, word);                                                                \
    } while (0)
    DCASE(INV, "batch", d.batch = 0);
    DCASE(INV, "heads_q", d.heads_q = -4);
    DCASE(INV, "heads_kv", d.heads_kv = 0);
    DCASE(INV, "seqlen_q", d.seqlen_q = 0);
    DCASE(INV, "seqlen_k", d.seqlen_k = -47);
    DCASE(INV, "head_dim", d.head_dim = 0);
    DCASE(INV, "heads_kv", d.heads_kv = 3);
    DCASE(INV, "dtype", d.dtype = (fa_cl_dtype)5);
    DCASE(INV, "window_left", d.window_left = -2);
    DCASE(INV, "window_right", d.window_right = -3);
    DCASE(INV, "scale", d.scale = NAN);
    DCASE(INV, "scale", d.scale = INFINITY);
    DCASE(INV, "scale", d.scale = -0.5f);
    DCASE(INV, "q_stride", d.q_stride[1] = -1);
    DCASE(INV, "k_stride", d.k_stride[0] = -1);
    DCASE(INV, "v_stride", d.v_stride[2] = -64);
    DCASE(INV, "o_stride", d.o_stride[2] = -64);
    DCASE(INV, "o_stride", (d.o_stride[0] = 0, d.o_stride[1] = 0, d.o_stride[2] = 64));
    DCASE(INV, "overflow", (d.batch = INT64_MAX / 2, d.q_stride[0] = 1 << 16, d.q_stride[1] = 1 << 10,
                            d.q_stride[2] = 64));
    DCASE(INV, "overflow", (d.o_offset = SIZE_MAX / 2));
    DCASE(UNS, "head_dim", d.head_dim = 577);
    DCASE(UNS, "seqlen_k", d.seqlen_k = (int64_t)INT32_MAX);
    DCASE(UNS, "heads_q", (d.heads_q = (int64_t)INT32_MAX + 1, d.heads_kv = 1));
#undef DCASE
}

/* ---- buffer-level failures: plan_forward and the one-shot call -------------------------------- */

typedef struct bufs {
    cl_mem q, k, v, o, lse;
} bufs;

static void buffer_case(fa_cl_context *ctx, tu_problem *p, fa_cl_plan *plan, const char *what, bufs b,
                        fa_cl_status want, const char *word)
{
    char label[200];
    cl_event done = NULL;
    fa_cl_status st = fa_cl_plan_forward(plan, b.q, b.k, b.v, b.o, b.lse, 0, NULL, &done);
    snprintf(label, sizeof label, "plan_forward %s", what);
    expect(ctx, p, label, st, want, fa_cl_last_error(ctx), word, done);
    done = NULL;
    st = fa_cl_attention_forward(ctx, &p->desc, b.q, b.k, b.v, b.o, b.lse, 0, NULL, &done);
    snprintf(label, sizeof label, "one-shot %s", what);
    expect(ctx, p, label, st, want, fa_cl_last_error(ctx), word, done);
}

static void buffer_cases(fa_cl_context *ctx, tu_problem *p, fa_cl_plan *plan)
{
    const fa_cl_status INV = FA_CL_ERROR_INVALID_ARGUMENT, SMALL = FA_CL_ERROR_BUFFER_TOO_SMALL;
    const bufs ok = {p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem};
    bufs b;
    b = ok, b.q = NULL, buffer_case(ctx, p, plan, "q = NULL", b, INV, "buffer q");
    b = ok, b.k = NULL, buffer_case(ctx, p, plan, "k = NULL", b, INV, "buffer k");
    b = ok, b.v = NULL, buffer_case(ctx, p, plan, "v = NULL", b, INV, "buffer v");
    b = ok, b.o = NULL, buffer_case(ctx, p, plan, "o = NULL", b, INV, "buffer o");

    /* one element short: each buffer */
    cl_mem small[5];
    const char *names[5] = {"q", "k", "v", "o", "lse"};
    for (int i = 0; i < 5; i++) {
        size_t bytes = i < 4 ? tu_tensor_bytes(&p->t[i]) - tu_dtype_size(p->c.dtype) : (p->lse_elems - 1) * 4;
        small[i] = tu_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL);
        b = ok;
        cl_mem *slot[5] = {&b.q, &b.k, &b.v, &b.o, &b.lse};
        *slot[i] = small[i];
        char what[64], word[32];
        snprintf(what, sizeof what, "%s one element too small", names[i]);
        snprintf(word, sizeof word, "buffer %s", names[i]);
        buffer_case(ctx, p, plan, what, b, SMALL, word);
    }
    for (int i = 0; i < 5; i++)
        clReleaseMemObject(small[i]);

    /* an offset that pushes an exactly-sized view past the end */
    {
        fa_cl_attention_desc d = p->desc;
        d.k_offset = 1;
        fa_cl_plan *pl = NULL;
        fa_cl_status st = fa_cl_plan_create(ctx, &d, &pl);
        tu_expect(&tally, st == FA_CL_SUCCESS, "plan_create with k_offset 1 (buffers are checked per call): %s",
                  fa_cl_status_string(st));
        cl_event done = NULL;
        if (pl) {
            st = fa_cl_plan_forward(pl, ok.q, ok.k, ok.v, ok.o, ok.lse, 0, NULL, &done);
            expect(ctx, p, "plan_forward k_offset 1 on an exact buffer", st, SMALL, fa_cl_last_error(ctx), "buffer k",
                   done);
            fa_cl_plan_release(pl);
        }
        d = p->desc;
        d.o_offset = 3;
        done = NULL;
        st = fa_cl_attention_forward(ctx, &d, ok.q, ok.k, ok.v, ok.o, ok.lse, 0, NULL, &done);
        expect(ctx, p, "one-shot o_offset 3 on an exact buffer", st, SMALL, fa_cl_last_error(ctx), "buffer o", done);
    }

    /* overlaps */
    b = ok, b.o = ok.q, buffer_case(ctx, p, plan, "o is q's buffer", b, INV, "overlaps input q");
    {
        /* q and o in one buffer: o's view starting 10 elements before q's ends (overlap), then right
         * after it (touching, no overlap: must work) */
        const size_t qe = p->t[0].elems, oe = p->t[3].elems, es = 4;
        unsigned char *img = (unsigned char *)malloc((qe + oe) * es), *back = (unsigned char *)malloc((qe + oe) * es);
        memcpy(img, p->t[0].img, qe * es);
        for (size_t i = qe; i < qe + oe; i++)
            tu_store_bits(FA_CL_F32, img, i, tu_sentinel_bits(FA_CL_F32));
        cl_mem both = tu_buffer(ctx, CL_MEM_READ_WRITE, (qe + oe) * es, img);
        fa_cl_attention_desc d = p->desc;
        d.o_offset = qe - 10;
        cl_event done = NULL;
        fa_cl_status st = fa_cl_attention_forward(ctx, &d, both, ok.k, ok.v, both, NULL, 0, NULL, &done);
        tu_read(ctx, both, (qe - 10 + oe) * es, back);
        int same = memcmp(back, img, (qe - 10 + oe) * es) == 0;
        expect(ctx, NULL, same ? "one-shot o_offset 10 elements inside q (same buffer)"
                               : "one-shot o_offset 10 elements inside q (same buffer) [BUFFER CHANGED]",
               same ? st : FA_CL_ERROR_OPENCL, INV, fa_cl_last_error(ctx), "overlaps input q", done);
        d.o_offset = qe;
        done = NULL;
        st = fa_cl_attention_forward(ctx, &d, both, ok.k, ok.v, both, NULL, 0, NULL, &done);
        if (done) {
            clWaitForEvents(1, &done);
            clReleaseEvent(done);
        }
        tu_read(ctx, both, (qe + oe) * es, back);
        int q_same = memcmp(back, img, qe * es) == 0;
        memcpy(p->t[3].img, back + qe * es, oe * es);
        tu_result r;
        tu_problem_check(p, p->ref_o, p->ref_lse, &r); /* lse not passed: its image still holds the sentinel */
        tu_expect(&tally, st == FA_CL_SUCCESS && q_same && r.bad == 0 && r.unwritten == 0 && r.masked_bad == 0,
                  "one-shot o_offset right after q's view in the same buffer (touching, no overlap) -> %s%s, "
                  "max|err| %.3g", fa_cl_status_string(st), q_same ? "" : " [q changed]", r.max_err);
        clReleaseMemObject(both);
        free(img);
        free(back);
    }
    b = ok, b.lse = ok.o, buffer_case(ctx, p, plan, "lse is o's buffer", b, INV, "lse overlaps");
    b = ok, b.lse = ok.k, buffer_case(ctx, p, plan, "lse is k's buffer", b, INV, "lse overlaps input k");
    {
        /* o as a sub-buffer of the buffer k lives in: overlapping k's extent, then just past it */
        cl_uint align_bits = 0;
        clGetDeviceInfo(fa_cl_context_device(ctx), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL);
        const size_t align = align_bits >= 8 ? align_bits / 8 : 128;
        const size_t kb = tu_tensor_bytes(&p->t[1]), ob = tu_tensor_bytes(&p->t[3]);
        const size_t inside = align, after = (kb + align - 1) / align * align;
        unsigned char *img = (unsigned char *)calloc(after + ob, 1);
        memcpy(img, p->t[1].img, kb);
        cl_mem parent = tu_buffer(ctx, CL_MEM_READ_WRITE, after + ob, img);
        cl_int err = CL_SUCCESS;
        cl_buffer_region r1 = {inside, ob}, r2 = {after, ob};
        cl_mem sub1 = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &err);
        cl_mem sub2 = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r2, &err);
        if (sub1 && sub2) {
            b = ok, b.k = parent, b.o = sub1;
            buffer_case(ctx, p, plan, "o a sub-buffer inside k's buffer", b, INV, "overlaps input k");
            cl_event done = NULL;
            fa_cl_status st = fa_cl_plan_forward(plan, ok.q, parent, ok.v, sub2, NULL, 0, NULL, &done);
            if (done) {
                clWaitForEvents(1, &done);
                clReleaseEvent(done);
            }
            tu_expect(&tally, st == FA_CL_SUCCESS && done != NULL,
                      "plan_forward with o a sub-buffer just past k in the same buffer (no overlap) -> %s %s",
                      fa_cl_status_string(st), st ? fa_cl_last_error(ctx) : "");
        } else {
            tu_expect(&tally, 0, "clCreateSubBuffer failed (%d)", (int)err);
        }
        if (sub1)
            clReleaseMemObject(sub1);
        if (sub2)
            clReleaseMemObject(sub2);
        clReleaseMemObject(parent);
        free(img);
    }

    /* access flags */
    {
        cl_mem ro = tu_buffer(ctx, CL_MEM_READ_ONLY, tu_tensor_bytes(&p->t[3]), NULL);
        cl_mem wo = tu_buffer(ctx, CL_MEM_WRITE_ONLY, tu_tensor_bytes(&p->t[0]), NULL);
        b = ok, b.o = ro, buffer_case(ctx, p, plan, "o created CL_MEM_READ_ONLY", b, INV, "READ_ONLY");
        b = ok, b.q = wo, buffer_case(ctx, p, plan, "q created CL_MEM_WRITE_ONLY", b, INV, "WRITE_ONLY");
        clReleaseMemObject(ro);
        clReleaseMemObject(wo);
    }
    /* a buffer of another OpenCL context */
    {
        cl_device_id dev = fa_cl_context_device(ctx);
        cl_int err = CL_SUCCESS;
        cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        cl_mem foreign = other ? clCreateBuffer(other, CL_MEM_READ_WRITE, tu_tensor_bytes(&p->t[2]), NULL, &err) : NULL;
        if (foreign) {
            b = ok, b.v = foreign, buffer_case(ctx, p, plan, "v from another cl_context", b, INV, "another OpenCL context");
            clReleaseMemObject(foreign);
        } else {
            tu_expect(&tally, 0, "could not create a second cl_context (%d)", (int)err);
        }
        if (other)
            clReleaseContext(other);
    }
    /* wait lists */
    {
        cl_int err;
        cl_event ue = clCreateUserEvent(fa_cl_context_cl_context(ctx), &err);
        clSetUserEventStatus(ue, CL_COMPLETE);
        cl_event done = NULL;
        fa_cl_status st = fa_cl_plan_forward(plan, ok.q, ok.k, ok.v, ok.o, ok.lse, 1, NULL, &done);
        expect(ctx, p, "plan_forward num_wait 1, wait NULL", st, INV, fa_cl_last_error(ctx), "num_wait", done);
        done = NULL;
        st = fa_cl_plan_forward(plan, ok.q, ok.k, ok.v, ok.o, ok.lse, 0, &ue, &done);
        expect(ctx, p, "plan_forward num_wait 0, wait given", st, INV, fa_cl_last_error(ctx), "num_wait", done);
        done = NULL;
        st = fa_cl_attention_forward(ctx, &p->desc, ok.q, ok.k, ok.v, ok.o, ok.lse, 2, NULL, &done);
        expect(ctx, p, "one-shot num_wait 2, wait NULL", st, INV, fa_cl_last_error(ctx), "num_wait", done);
        clReleaseEvent(ue);
    }
}

/* ---- NULL handles ----------------------------------------------------------------------------- */

static void null_cases(fa_cl_context *ctx, tu_problem *p, fa_cl_plan *plan)
{
    const fa_cl_status INV = FA_CL_ERROR_INVALID_ARGUMENT;
    fa_cl_plan *pl = NULL;
    cl_event done = NULL;
    fa_cl_status st = fa_cl_plan_create(NULL, &p->desc, &pl);
    expect(ctx, NULL, "plan_create(ctx NULL)", st, INV, fa_cl_last_error(NULL), "ctx", NULL);
    st = fa_cl_plan_create(ctx, NULL, &pl);
    expect(ctx, NULL, "plan_create(desc NULL)", st, INV, fa_cl_last_error(ctx), "desc", NULL);
    st = fa_cl_plan_create(ctx, &p->desc, NULL);
    expect(ctx, NULL, "plan_create(out NULL)", st, INV, fa_cl_last_error(ctx), "out", NULL);
    st = fa_cl_plan_forward(NULL, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL, &done);
    expect(ctx, p, "plan_forward(plan NULL)", st, INV, fa_cl_last_error(NULL), "plan", done);
    done = NULL;
    st = fa_cl_attention_forward(NULL, &p->desc, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL,
                                 &done);
    expect(ctx, p, "attention_forward(ctx NULL)", st, INV, fa_cl_last_error(NULL), "ctx", done);
    done = NULL;
    st = fa_cl_attention_forward(ctx, NULL, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->lse_mem, 0, NULL, &done);
    expect(ctx, p, "attention_forward(desc NULL)", st, INV, fa_cl_last_error(ctx), "desc", done);
    fa_cl_plan_info info;
    st = fa_cl_plan_get_info(NULL, &info);
    expect(ctx, NULL, "plan_get_info(plan NULL)", st, INV, fa_cl_last_error(NULL), "plan", NULL);
    st = fa_cl_plan_get_info(plan, NULL);
    expect(ctx, NULL, "plan_get_info(out NULL)", st, INV, fa_cl_last_error(NULL), "out", NULL);

    cl_context clctx = fa_cl_context_cl_context(ctx);
    cl_device_id dev = fa_cl_context_device(ctx);
    cl_command_queue queue = fa_cl_context_queue(ctx);
    fa_cl_context *c2 = (fa_cl_context *)&info; /* must come back NULL */
    st = fa_cl_context_create(NULL, dev, queue, &c2);
    expect(ctx, NULL, "context_create(context NULL)", st, INV, fa_cl_last_error(NULL), "context", NULL);
    if (c2)
        tu_expect(&tally, 0, "context_create failure left *out non-NULL");
    st = fa_cl_context_create(clctx, NULL, queue, &c2);
    expect(ctx, NULL, "context_create(device NULL)", st, INV, fa_cl_last_error(NULL), "device", NULL);
    st = fa_cl_context_create(clctx, dev, NULL, &c2);
    expect(ctx, NULL, "context_create(queue NULL)", st, INV, fa_cl_last_error(NULL), "queue", NULL);
    st = fa_cl_context_create(clctx, dev, queue, NULL);
    expect(ctx, NULL, "context_create(out NULL)", st, INV, fa_cl_last_error(NULL), "out", NULL);
    st = fa_cl_context_create_default(NULL);
    expect(ctx, NULL, "context_create_default(out NULL)", st, INV, fa_cl_last_error(NULL), "out", NULL);
    {
        cl_int err;
        cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        cl_command_queue oq = other ? clCreateCommandQueue(other, dev, 0, &err) : NULL;
        if (oq) {
            st = fa_cl_context_create(clctx, dev, oq, &c2);
            expect(ctx, NULL, "context_create(queue of another context)", st, INV, fa_cl_last_error(NULL), "context",
                   NULL);
            if (st == FA_CL_SUCCESS)
                fa_cl_context_release(c2);
            clReleaseCommandQueue(oq);
        }
        if (other)
            clReleaseContext(other);
    }
    /* wrapping the application's objects works, and the wrapper holds its own references */
    {
        fa_cl_context *w = NULL;
        st = fa_cl_context_create(clctx, dev, queue, &w);
        int ok = st == FA_CL_SUCCESS && w && fa_cl_context_cl_context(w) == clctx && fa_cl_context_queue(w) == queue &&
                 fa_cl_context_device(w) == dev && strcmp(fa_cl_last_error(w), "") == 0;
        char detail[600] = "";
        if (ok) {
            tu_problem_poison(p, w);
            ok = forward_correct(w, p, detail, sizeof detail);
        }
        fa_cl_context_release(w);
        tu_expect(&tally, ok, "context_create on the application's objects: accessors, empty last_error, a correct "
                  "forward: %s %s", fa_cl_status_string(st), detail);
    }
    fa_cl_context_release(NULL);
    fa_cl_plan_release(NULL);
    tu_expect(&tally, 1, "context_release(NULL) and plan_release(NULL) are no-ops");
}

/* ---- the environment -------------------------------------------------------------------------- */

static void env_cases(int only_trailing)
{
    static const struct {
        const char *var, *value;
    } bad[] = {{"FA_CL_TUNE", "tile=abc"},      {"FA_CL_TUNE", "tile=64"},       {"FA_CL_TUNE", "tile=0x32"},
               {"FA_CL_TUNE", "tile=64x32x3"},  {"FA_CL_LOCAL_MEM_BYTES", "12"}, {"FA_CL_LOCAL_MEM_BYTES", "-4096"},
               {"FA_CL_LOCAL_MEM_BYTES", "16k"}, {"FA_CL_KERNEL_VARIANT", "fast"},
               /* options a driver would crash on rather than report (PoCL 3.1 does on a bare -D) */
               {"FA_CL_BUILD_OPTIONS", "-D"},   {"FA_CL_BUILD_OPTIONS", "-DX -I"}, {"FA_CL_BUILD_OPTIONS", "-D -w"},
               {"FA_CL_BUILD_OPTIONS", "-D=1"}, {"FA_CL_BUILD_OPTIONS", "-I  "},
               {"FA_CL_TUNE", "kv_chunk=0"},    {"FA_CL_TUNE", "lpt_columns=0"}, {"FA_CL_TUNE", "splits=x"},
               {"FA_CL_TUNE", "nvidia-wgmma:persistent=-1"},
               /* trailing characters: subset env_trailing (test invalid_env_trailing) */
               {"FA_CL_TUNE", "tile=64x32junk"}, {"FA_CL_TUNE", "tile=64x32 "},  {"FA_CL_TUNE", "tile=64x32x2junk"},
               {"FA_CL_TUNE", "tile=64x32x"},   {"FA_CL_TUNE", "lpt_columns=4x"}, {"FA_CL_TUNE", "nvidia-wgmma:persistent=8x"}};
    const size_t first = only_trailing ? 17 : 0, end = only_trailing ? sizeof bad / sizeof bad[0] : 17;
    for (size_t i = first; i < end; i++) {
        setenv(bad[i].var, bad[i].value, 1);
        fa_cl_context *c = NULL;
        fa_cl_status st = fa_cl_context_create_default(&c);
        unsetenv(bad[i].var);
        char what[96];
        snprintf(what, sizeof what, "context_create_default with %s=%s", bad[i].var, bad[i].value);
        expect(NULL, NULL, what, st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(NULL), bad[i].var, NULL);
        if (c) {
            tu_expect(&tally, 0, "%s: a context came back", what);
            fa_cl_context_release(c);
        }
    }
    if (only_trailing)
        return;

    /* a forced tile too big for the budget; a budget too small for head_dim 256; one that holds
     * head_dim 256 (two 8-row tiles: 16384 bytes) but not 512: refused with the head_dim named (the
     * local-memory budgets of the families that use local memory: cpu, which does not, off) */
    static const struct {
        const char *var, *value;
        int64_t d;
        fa_cl_status want;
        const char *word;
    } plan_env[] = {{"FA_CL_TUNE", "tile=1024x256", 128, FA_CL_ERROR_INVALID_ARGUMENT, "tile=1024x256"},
                    {"FA_CL_LOCAL_MEM_BYTES", "8192", 256, FA_CL_ERROR_UNSUPPORTED, "budget"},
                    {"FA_CL_LOCAL_MEM_BYTES", "16384", 512, FA_CL_ERROR_UNSUPPORTED, "head_dim 512"}};
    for (size_t i = 0; i < sizeof plan_env / sizeof plan_env[0]; i++) {
        const int local = strcmp(plan_env[i].var, "FA_CL_LOCAL_MEM_BYTES") == 0;
        setenv(plan_env[i].var, plan_env[i].value, 1);
        if (local)
            setenv("FA_CL_TUNE", "cpu:enabled=0", 1);
        fa_cl_context *c = NULL;
        fa_cl_status st = fa_cl_context_create_default(&c);
        unsetenv(plan_env[i].var);
        if (local)
            unsetenv("FA_CL_TUNE");
        if (st != FA_CL_SUCCESS) {
            tu_expect(&tally, 0, "context with %s=%s: %s", plan_env[i].var, plan_env[i].value,
                      fa_cl_status_string(st));
            continue;
        }
        tu_case cs = base_case;
        cs.D = plan_env[i].d;
        tu_problem p;
        if (tu_problem_init(&p, c, &cs, 5, 0) == 0) {
            char what[128];
            fa_cl_plan *pl = NULL;
            st = fa_cl_plan_create(c, &p.desc, &pl);
            snprintf(what, sizeof what, "plan_create d=%lld with %s=%s", (long long)cs.D, plan_env[i].var,
                     plan_env[i].value);
            expect(c, NULL, what, st, plan_env[i].want, fa_cl_last_error(c), plan_env[i].word, NULL);
            fa_cl_plan_release(pl);
            cl_event done = NULL;
            st = fa_cl_attention_forward(c, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
            snprintf(what, sizeof what, "one-shot d=%lld with %s=%s", (long long)cs.D, plan_env[i].var,
                     plan_env[i].value);
            expect(c, &p, what, st, plan_env[i].want, fa_cl_last_error(c), plan_env[i].word, done);
            tu_problem_free(&p);
        }
        /* the same context still plans what fits the budget: head_dim 32 */
        cs.D = 32;
        if (local && tu_problem_init(&p, c, &cs, 6, 1) == 0) {
            char detail[600];
            int ok = forward_correct(c, &p, detail, sizeof detail);
            tu_expect(&tally, ok, "same context (%s=%s), head_dim 32 afterwards: %s", plan_env[i].var,
                      plan_env[i].value, detail);
            tu_problem_free(&p);
        }
        fa_cl_context_release(c);
    }
}

/* The argument-struct calls (the extension rule): the same checks as the positional ones, plus
 * struct_size; valid calls give the positional calls' result bit for bit. And fa_cl_plan_info's
 * struct_size: an older caller's smaller struct gets only its fields. */
static void args_struct_cases(fa_cl_context *ctx, tu_problem *p, fa_cl_plan *plan)
{
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p->mem[0], a.k = p->mem[1], a.v = p->mem[2], a.o = p->mem[3], a.lse = p->lse_mem;
    cl_event done = NULL;
    a.done = &done;
    /* each call first, then its message: argument evaluation order is unspecified */
    fa_cl_status st = fa_cl_plan_run(NULL, &a);
    expect(ctx, p, "plan_run(NULL plan)", st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(NULL), "plan", done);
    st = fa_cl_plan_run(plan, NULL);
    expect(ctx, p, "plan_run(NULL args)", st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(ctx), "args", done);
    fa_cl_forward_args zero = a;
    zero.struct_size = 0;
    st = fa_cl_plan_run(plan, &zero);
    expect(ctx, p, "plan_run with args.struct_size 0", st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(ctx),
           "struct_size", done);
    struct newer {
        fa_cl_forward_args a;
        void *future_field;
    } n = {a, (void *)&n};
    n.a.struct_size = sizeof n;
    st = fa_cl_plan_run(plan, &n.a);
    expect(ctx, p, "plan_run, a newer struct with an unknown field set", st, FA_CL_ERROR_UNSUPPORTED,
           fa_cl_last_error(ctx), "does not know", done);
    fa_cl_forward_args bad = a;
    bad.o = NULL;
    st = fa_cl_attention_run(ctx, &p->desc, &bad);
    expect(ctx, p, "attention_run with o NULL", st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(ctx), "o", done);
    /* valid: the same bits as the positional call */
    const size_t ob = tu_tensor_bytes(&p->t[3]);
    unsigned char *first = (unsigned char *)malloc(ob), *second = (unsigned char *)malloc(ob);
    int same = first && second;
    fa_cl_status s1 = fa_cl_plan_forward(plan, a.q, a.k, a.v, a.o, a.lse, 0, NULL, NULL);
    same = same && s1 == FA_CL_SUCCESS && tu_read(ctx, a.o, ob, first) == 0;
    n.future_field = NULL; /* the unknown field 0: accepted */
    fa_cl_status s2 = fa_cl_plan_run(plan, &n.a);
    if (done)
        clWaitForEvents(1, &done), clReleaseEvent(done), done = NULL;
    same = same && s2 == FA_CL_SUCCESS && tu_read(ctx, a.o, ob, second) == 0 && memcmp(first, second, ob) == 0;
    fa_cl_status s3 = fa_cl_attention_run(ctx, &p->desc, &a);
    if (done)
        clWaitForEvents(1, &done), clReleaseEvent(done), done = NULL;
    same = same && s3 == FA_CL_SUCCESS && tu_read(ctx, a.o, ob, second) == 0 && memcmp(first, second, ob) == 0;
    tu_expect(&tally, same, "plan_run (a newer struct, its unknown field 0) and attention_run give plan_forward's "
              "bits (%s, %s, %s)", fa_cl_status_string(s1), fa_cl_status_string(s2), fa_cl_status_string(s3));
    free(first);
    free(second);
    tu_problem_poison(p, ctx);

    fa_cl_plan_info info;
    memset(&info, 0x5a, sizeof info);
    st = fa_cl_plan_get_info(plan, &info);
    /* one launch and no scratch, or (a device the grid under-fills: split-KV) the forward and the
     * combine with the partial results' scratch */
    const int one = info.launches == 1 && info.scratch_bytes == 0 && info.splits == 1;
    const int split = info.launches == 2 && info.scratch_bytes > 0 && info.splits > 1;
    tu_expect(&tally, st == FA_CL_SUCCESS && info.struct_size == sizeof info && (one || split) &&
                          info.kernel != NULL,
              "plan_get_info: struct_size %zu, %d launch, %zu scratch bytes, %d splits", info.struct_size,
              info.launches, info.scratch_bytes, info.splits);
    /* an older caller's struct, without launches and scratch_bytes: nothing written past its end */
    const size_t old_size = offsetof(fa_cl_plan_info, launches);
    memset(&info, 0x5a, sizeof info);
    st = fa_cl_plan_get_info_sized(plan, &info, old_size);
    const unsigned char *tail = (const unsigned char *)&info + old_size;
    int untouched = 1;
    for (size_t i = 0; i < sizeof info - old_size; i++)
        untouched &= tail[i] == 0x5a;
    tu_expect(&tally, st == FA_CL_SUCCESS && info.struct_size == old_size && untouched,
              "plan_get_info_sized with the first version's size: struct_size %zu, the rest untouched", info.struct_size);
    st = fa_cl_plan_get_info_sized(plan, &info, old_size - 1);
    tu_expect(&tally, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(fa_cl_last_error(NULL), "struct_size"),
              "plan_get_info_sized below the first version's size: %s", fa_cl_status_string(st));
}

static int subset_args(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    fa_cl_context *ctx = NULL;
    int rc = tu_context(&ctx);
    if (rc != 0)
        return rc;
    tu_expect(&tally, strcmp(fa_cl_last_error(ctx), "") == 0, "fa_cl_last_error on a fresh context is \"\"");
    tu_problem p;
    if (tu_problem_init(&p, ctx, &base_case, 1, 1) != 0)
        return 1;
    /* read-write inputs here, so that an overlap is reported as one (not as o on a read-only buffer) */
    for (int t = 0; t < 3; t++) {
        clReleaseMemObject(p.mem[t]);
        p.mem[t] = tu_buffer(ctx, CL_MEM_READ_WRITE, tu_tensor_bytes(&p.t[t]), p.t[t].img);
    }
    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p.desc, &plan);
    if (st != FA_CL_SUCCESS) {
        printf("cannot plan the valid case: %s %s\n", fa_cl_status_string(st), fa_cl_last_error(ctx));
        return 1;
    }
    char detail[600];
    tu_expect(&tally, forward_correct(ctx, &p, detail, sizeof detail), "the valid case before: %s", detail);

    descriptor_cases(ctx, &p);
    buffer_cases(ctx, &p, plan);
    null_cases(ctx, &p, plan);
    args_struct_cases(ctx, &p, plan);
    env_cases(0);

    /* after all of that the context and the plan still work */
    cl_event done = NULL;
    st = fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
    if (done) {
        clWaitForEvents(1, &done);
        clReleaseEvent(done);
    }
    int ok = st == FA_CL_SUCCESS && tu_problem_read(&p, ctx) == 0;
    tu_result r;
    memset(&r, 0, sizeof r);
    if (ok) {
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        ok = r.ok;
    }
    tu_expect(&tally, ok, "the same plan after every failure above: %s %s", fa_cl_status_string(st), ok ? detail : "");
    tu_problem_poison(&p, ctx);
    tu_expect(&tally, forward_correct(ctx, &p, detail, sizeof detail), "a new plan on the same context: %s", detail);
    fa_cl_plan_release(plan);
    tu_problem_free(&p);
    fa_cl_context_release(ctx);
    return 0;
}

/* ---- kernel build failure --------------------------------------------------------------------- */

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    if (!in || !out) {
        if (in)
            fclose(in);
        printf("cannot copy %s to %s\n", from, to);
        return -1;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out) == 0 ? 0 : -1;
}

#define BROKEN_SYMBOL "fa_cl_test_deliberately_undefined"

/* A kernel directory where only one file is broken: broken_rows = 1 breaks cl/fa_forward.cl (the
 * variant PoCL plans), 0 breaks cl/fa_forward_tiled.cl (the GPU variant). On one context:
 *  - rows broken: plans fail with FA_CL_ERROR_BUILD_FAILED and the log, every time (not cached), and
 *    the same context still runs the reference (cl/fa_reference.cl) correctly, before and after;
 *  - tiled broken: the rows variant plans and computes correctly on the same context, and a context
 *    forcing the tiled variant gets FA_CL_ERROR_BUILD_FAILED, then the reference still works there. */
static int build_one_broken(int broken_rows)
{
    char dir[] = "/tmp/fa_cl_test_kernels1_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    static const char *const files[] = {"fa_common.cl",        "fa_forward_common.cl", "fa_forward.cl",
                                        "fa_forward_tiled.cl", "fa_combine.cl",        "fa_reference.cl",
                                        "fa_fwd_coords.cl",    "fa_fwd_rows.cl",       "fa_fwd_chunks.cl",
                                        "fa_fwd_masks.cl",     "fa_fwd_io.cl"};
    enum { NFILES = sizeof files / sizeof files[0] };
    const int bad = broken_rows ? 2 : 3;
    char path[NFILES][512];
    for (int i = 0; i < NFILES; i++) {
        char src[512];
        snprintf(path[i], sizeof path[i], "%s/%s", dir, files[i]);
        snprintf(src, sizeof src, "%s/cl/%s", FA_CL_SOURCE_DIR, files[i]);
        if (i != bad) {
            if (copy_file(src, path[i]) != 0)
                return 1;
            continue;
        }
        FILE *f = fopen(path[i], "wb");
        if (!f)
            return 1;
        fprintf(f, "__kernel void fa_forward(__global float *x) { x[0] = %s; }\n", BROKEN_SYMBOL);
        fclose(f);
    }
    const char *name = broken_rows ? "fa_forward.cl" : "fa_forward_tiled.cl";
    for (int force_tiled = 0; force_tiled <= (broken_rows ? 0 : 1); force_tiled++) {
        setenv("FA_CL_KERNEL_DIR", dir, 1);
        if (force_tiled)
            setenv("FA_CL_KERNEL_VARIANT", "portable-tiled", 1);
        fa_cl_context *ctx = NULL;
        int rc = tu_context(&ctx);
        unsetenv("FA_CL_KERNEL_DIR");
        unsetenv("FA_CL_KERNEL_VARIANT");
        if (rc != 0)
            return rc;
        tu_problem p;
        if (tu_problem_init(&p, ctx, &base_case, 13, 1) != 0)
            return 1;
        char detail[600] = "";
        const int expect_fail = broken_rows || force_tiled;
        for (int attempt = 0; attempt < 2; attempt++) {
            fa_cl_plan *plan = NULL;
            fa_cl_status st = fa_cl_plan_create(ctx, &p.desc, &plan);
            const char *log = fa_cl_last_error(ctx);
            if (expect_fail) {
                tu_expect(&tally, st == FA_CL_ERROR_BUILD_FAILED && !plan && strstr(log, BROKEN_SYMBOL),
                          "only %s broken%s, attempt %d: plan_create -> %s with the build log", name,
                          force_tiled ? " (variant forced to portable-tiled)" : "", attempt + 1,
                          fa_cl_status_string(st));
                fa_cl_plan_release(plan);
            } else {
                fa_cl_plan_release(plan);
                int ok = st == FA_CL_SUCCESS && forward_correct(ctx, &p, detail, sizeof detail);
                tu_expect(&tally, ok, "only %s broken: the rows variant plans and computes on that context: %s %s",
                          name, fa_cl_status_string(st), detail);
            }
#ifdef FA_CL_TEST_WITH_CLBLAST
            /* the same context runs the reference's kernels (another file) correctly */
            tu_problem_poison(&p, ctx);
            st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL,
                                         NULL);
            int ok = st == FA_CL_SUCCESS && clFinish(fa_cl_context_queue(ctx)) == CL_SUCCESS &&
                     tu_problem_read(&p, ctx) == 0;
            tu_result r;
            memset(&r, 0, sizeof r);
            if (ok) {
                tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
                tu_result_format(&r, &p, detail, sizeof detail);
                ok = r.ok;
            }
            tu_expect(&tally, ok, "only %s broken%s: the reference on the same context afterwards: %s %s", name,
                      force_tiled ? " (tiled forced)" : "", fa_cl_status_string(st), ok ? detail : fa_cl_last_error(ctx));
            tu_problem_poison(&p, ctx);
#endif
        }
        tu_problem_free(&p);
        fa_cl_context_release(ctx);
    }
    for (int i = 0; i < NFILES; i++)
        remove(path[i]);
    rmdir(dir);
    return 0;
}

static int subset_build(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    char dir[] = "/tmp/fa_cl_test_kernels_XXXXXX";
    if (!mkdtemp(dir)) {
        printf("mkdtemp failed\n");
        return 1;
    }
    /* a copy of every kernel file, with both forward variants broken (GPUs plan the tiled one) */
    static const char *const files[] = {"fa_common.cl",        "fa_forward_common.cl", "fa_forward.cl",
                                        "fa_forward_tiled.cl", "fa_combine.cl",        "fa_reference.cl",
                                        "fa_fwd_coords.cl",    "fa_fwd_rows.cl",       "fa_fwd_chunks.cl",
                                        "fa_fwd_masks.cl",     "fa_fwd_io.cl"};
    enum { NFILES = sizeof files / sizeof files[0] };
    static const int broken[NFILES] = {0, 0, 1, 1, 0};
    char path[NFILES][512], src[NFILES][512];
    int present[NFILES];
    for (int i = 0; i < NFILES; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s", dir, files[i]);
        snprintf(src[i], sizeof src[i], "%s/cl/%s", FA_CL_SOURCE_DIR, files[i]);
        FILE *probe = fopen(src[i], "rb");
        present[i] = probe != NULL;
        if (probe)
            fclose(probe);
        if (!present[i])
            continue;
        if (!broken[i]) {
            if (copy_file(src[i], path[i]) != 0)
                return 1;
            continue;
        }
        FILE *f = fopen(path[i], "wb");
        fprintf(f, "/* deliberately broken by tests/test_invalid.c */\n"
                   "__kernel void fa_forward(__global float *x)\n{\n    x[0] = %s;\n}\n", BROKEN_SYMBOL);
        fclose(f);
    }

    setenv("FA_CL_KERNEL_DIR", dir, 1);
    fa_cl_context *ctx = NULL;
    int rc = tu_context(&ctx);
    unsetenv("FA_CL_KERNEL_DIR");
    if (rc != 0)
        return rc;
    tu_problem p;
    if (tu_problem_init(&p, ctx, &base_case, 11, 1) != 0)
        return 1;

    fa_cl_plan *plan = NULL;
    fa_cl_status st = fa_cl_plan_create(ctx, &p.desc, &plan);
    const char *log = fa_cl_last_error(ctx);
    int has_log = strstr(log, BROKEN_SYMBOL) != NULL;
    int names_file = strstr(log, "fa_forward") != NULL;
    tu_expect(&tally, st == FA_CL_ERROR_BUILD_FAILED && !plan && has_log,
              "plan_create with a broken cl/fa_forward.cl -> %s, build log in last_error (%s, %s; %zu characters)",
              fa_cl_status_string(st), has_log ? "names the undefined symbol" : "NO build log",
              names_file ? "names the kernel file" : "does not name the file", strlen(log));
    printf("---- last_error ----\n%.1500s\n--------------------\n", log);
    cl_event done = NULL;
    st = fa_cl_attention_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
    expect(ctx, &p, "one-shot with the broken kernel", st, FA_CL_ERROR_BUILD_FAILED, fa_cl_last_error(ctx),
           BROKEN_SYMBOL, done);
    st = fa_cl_plan_create(ctx, &p.desc, &plan);
    tu_expect(&tally, st == FA_CL_ERROR_BUILD_FAILED && !plan, "plan_create again: %s (a failed build is not cached)",
              fa_cl_status_string(st));

    /* repair the file: the same context builds from the directory and computes correctly */
    char detail[600] = "";
    int ok = copy_file(src[1], path[1]) == 0 && (!present[2] || copy_file(src[2], path[2]) == 0) &&
             forward_correct(ctx, &p, detail, sizeof detail);
    tu_expect(&tally, ok, "the same context after the kernel file was repaired: %s", detail);
    tu_problem_free(&p);
    fa_cl_context_release(ctx);

    /* a missing file */
    remove(path[1]);
    remove(path[2]);
    setenv("FA_CL_KERNEL_DIR", dir, 1);
    rc = tu_context(&ctx);
    unsetenv("FA_CL_KERNEL_DIR");
    if (rc != 0)
        return rc;
    {
        fa_cl_attention_desc d;
        fa_cl_attention_desc_init(&d, 1, 2, 16, 16, 64, FA_CL_F32);
        st = fa_cl_plan_create(ctx, &d, &plan);
        expect(ctx, NULL, "plan_create with FA_CL_KERNEL_DIR lacking fa_forward.cl", st, FA_CL_ERROR_BUILD_FAILED,
               fa_cl_last_error(ctx), "fa_forward", NULL);
    }
    fa_cl_context_release(ctx);
    for (int i = 0; i < NFILES; i++)
        remove(path[i]);
    rmdir(dir);

    /* one broken file only: the context stays usable for every kernel that does not need it */
    if (build_one_broken(0) != 0 || build_one_broken(1) != 0)
        return 1;

    /* a second context without the variable works */
    rc = tu_context(&ctx);
    if (rc != 0)
        return rc;
    if (tu_problem_init(&p, ctx, &base_case, 12, 1) != 0)
        return 1;
    tu_expect(&tally, forward_correct(ctx, &p, detail, sizeof detail),
              "a second context without FA_CL_KERNEL_DIR (embedded kernels): %s", detail);
    tu_problem_free(&p);
    fa_cl_context_release(ctx);
    return 0;
}

static int subset_env_trailing(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    env_cases(1);
    return 0;
}

/* The stable on/off switches: every accepted word reads as what it says, and every other word is
 * refused with the variable, the value and the accepted words named. FA_CL_TUNE: its items read as
 * they say; a malformed item, an unknown family or key, a value out of a key's range are refused
 * naming them and what is accepted; a variable FA_CL_TUNE replaced, still set, is refused naming
 * its keys. */
static int subset_env_switches(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused, (void)argc, (void)argv;
    static const char *const switches[] = {"FA_CL_VENDOR_PATH", "FA_CL_DEBUG_BUILD_LOG"};
    static const char *const bad[] = {"maybe", "2", "10", "-1", "onn", " 1", "1 ", "truee", "y"};
    for (int i = 0; i < TU_COUNT(switches); i++)
        for (int j = 0; j < TU_COUNT(bad); j++) {
            setenv(switches[i], bad[j], 1);
            fa_cl_context *c = NULL;
            const fa_cl_status st = fa_cl_context_create_default(&c);
            unsetenv(switches[i]);
            char what[96], value[64];
            snprintf(what, sizeof what, "context_create_default with %s='%s'", switches[i], bad[j]);
            snprintf(value, sizeof value, "'%s' is not a switch: 1, on, yes, true", bad[j]);
            const char *msg = fa_cl_last_error(NULL);
            expect(NULL, NULL, what, st, FA_CL_ERROR_INVALID_ARGUMENT, msg, switches[i], NULL);
            tu_expect(&tally, strstr(msg, value) != NULL, "%s: the message names the value and the words", what);
            fa_cl_context_release(c);
        }
    /* what each accepted word or item reads as (read back from the context) */
    static const struct {
        const char *var, *value;
        int field, want; /* field 0 print_build_log, 1 vendor_path_off, 2 nvidia-wgmma's tma, 3 gqa_pack,
                            4 nvidia-mma's emulate, 5 nvidia-mma's stages */
    } good[] = {{"FA_CL_DEBUG_BUILD_LOG", "TRUE", 0, 1},  {"FA_CL_DEBUG_BUILD_LOG", "yes", 0, 1},
                {"FA_CL_VENDOR_PATH", "off", 1, 1},       {"FA_CL_VENDOR_PATH", "On", 1, 0},
                {"FA_CL_VENDOR_PATH", "1", 1, 0},         {"FA_CL_TUNE", "nvidia-wgmma:tma=mask", 2, 1},
                {"FA_CL_TUNE", "nvidia-wgmma:tma=kv", 2, 2}, {"FA_CL_TUNE", "nvidia-wgmma:tma=none", 2, 0},
                {"FA_CL_TUNE", "nvidia-wgmma:tma=3", 2, 3}, {"FA_CL_TUNE", "gqa_pack=0", 3, -1},
                {"FA_CL_TUNE", "gqa_pack=1", 3, 1},       {"FA_CL_TUNE", "nvidia-mma:emulate=0", 4, 0},
                {"FA_CL_TUNE", "splits=2,nvidia-mma:stages=3,emulate=1", 4, 1}, /* the current family's key */
                {"FA_CL_TUNE", "nvidia-mma:emulate=1,stages=4", 5, 4}};
    for (int i = 0; i < TU_COUNT(good); i++) {
        setenv(good[i].var, good[i].value, 1);
        fa_cl_context *c = NULL;
        const fa_cl_status st = fa_cl_context_create_default(&c);
        unsetenv(good[i].var);
        int got = -9;
        if (st == FA_CL_SUCCESS) {
            fa_cl__limits lim;
            fa_cl__context_limits(c, &lim);
            const fa_cl__kernel_family *wg = fa_cl__kernel_by_name("nvidia-wgmma"),
                                       *mma = fa_cl__kernel_by_name("nvidia-mma");
            const int fields[6] = {c->env.print_build_log, c->env.vendor_path_off,
                                   fa_cl__tune_value(&lim, wg, fa_cl__tune_key_index(wg, "tma")), c->env.gqa_pack,
                                   fa_cl__family_emulated(&lim, mma),
                                   fa_cl__tune_value(&lim, mma, fa_cl__tune_key_index(mma, "stages"))};
            got = fields[good[i].field];
        }
        tu_expect(&tally, st == FA_CL_SUCCESS && got == good[i].want, "%s='%s' is accepted and reads as %d: %s, %d",
                  good[i].var, good[i].value, good[i].want, fa_cl_status_string(st), got);
        fa_cl_context_release(c);
    }
    /* refused FA_CL_TUNE items: the words each message must hold */
    static const struct {
        const char *value, *words[3];
    } tune_bad[] = {
        {"tile", {"'tile'", "[family:]key=value", NULL}},
        {"nvidia-foo:enabled=0", {"no kernel family 'nvidia-foo'", "nvidia-mma", NULL}},
        {"nvidia-mma:nope=1", {"nvidia-mma has no key 'nope'", "stages", "kv_warps"}},
        {"nope=1", {"the planner has no key 'nope'", "splits", NULL}},
        {"nvidia-mma:stages=9", {"nvidia-mma:stages='9'", "2..4", NULL}},
        {"nvidia-mma:kv_warps=3", {"kv_warps='3'", "1 or 2 or 4", NULL}},
        {"nvidia-wgmma:tma=on", {"tma='on'", "none or mask or kv or both", NULL}},
        {"nvidia-wgmma:producer=maybe", {"producer='maybe'", "0..1", NULL}},
        {"gqa_pack=on", {"gqa_pack='on'", "0..1", NULL}},
        {"combine:enabled=0", {"combine has no key 'enabled'", "none", NULL}},
        {"nvidia-mma:stages=3,nvidia-mma:emulate", {"'nvidia-mma:emulate'", NULL, NULL}},
    };
    for (int i = 0; i < TU_COUNT(tune_bad); i++) {
        setenv("FA_CL_TUNE", tune_bad[i].value, 1);
        fa_cl_context *c = NULL;
        const fa_cl_status st = fa_cl_context_create_default(&c);
        unsetenv("FA_CL_TUNE");
        char what[128];
        snprintf(what, sizeof what, "context_create_default with FA_CL_TUNE='%s'", tune_bad[i].value);
        expect(NULL, NULL, what, st, FA_CL_ERROR_INVALID_ARGUMENT, fa_cl_last_error(NULL), tune_bad[i].words[0], NULL);
        tu_expect(&tally, strstr(fa_cl_last_error(NULL), "FA_CL_TUNE") != NULL, "%s: names FA_CL_TUNE", what);
        for (int w = 1; w < 3 && tune_bad[i].words[w]; w++)
            tu_expect(&tally, strstr(fa_cl_last_error(NULL), tune_bad[i].words[w]) != NULL, "%s: names %s", what,
                      tune_bad[i].words[w]);
        fa_cl_context_release(c);
    }
    /* every variable a tuning key replaced: refused, naming the key (and, where two keys replaced it, both) */
    static const struct {
        const char *var, *value, *key, *key2;
    } removed[] = {
        {"FA_CL_TILE", "64x32", "FA_CL_TUNE=tile=", NULL},
        {"FA_CL_SPLITS", "3", "FA_CL_TUNE=splits=", NULL},
        {"FA_CL_KV_CHUNK", "32", "FA_CL_TUNE=kv_chunk=", NULL},
        {"FA_CL_GQA_PACK", "0", "FA_CL_TUNE=gqa_pack=", NULL},
        {"FA_CL_LPT_COLUMNS", "3", "FA_CL_TUNE=lpt_columns=", NULL},
        {"FA_CL_LOCAL_MEM_OVERRIDE", "65536", "FA_CL_TUNE=local_mem_override=", NULL},
        {"FA_CL_MMA_EMULATE", "1", "nvidia-mma:emulate=", "nvidia-tf32x3-backward:emulate="},
        {"FA_CL_MMA_STAGES", "3", "nvidia-mma:stages=", NULL},
        {"FA_CL_MMA_KV_WARPS", "2", "nvidia-mma:kv_warps=", NULL},
        {"FA_CL_NV_TF32", "0", "nvidia-tf32x3:enabled=", "nvidia-tf32x3-backward:enabled="},
        {"FA_CL_WGMMA", "0", "nvidia-wgmma:enabled=", "nvidia-wgmma-backward:enabled="},
        {"FA_CL_WGMMA_PRODUCER", "0", "nvidia-wgmma:producer=", NULL},
        {"FA_CL_TMA", "kv", "nvidia-wgmma:tma=", NULL},
        {"FA_CL_PERSISTENT", "0", "nvidia-wgmma:persistent=", NULL},
        {"FA_CL_PAD_ROWS", "0", "nvidia-mma:pad_rows=", "nvidia-wgmma:pad_rows="},
    };
    for (int i = 0; i < TU_COUNT(removed); i++) {
        setenv(removed[i].var, removed[i].value, 1);
        fa_cl_context *c = NULL;
        const fa_cl_status st = fa_cl_context_create_default(&c);
        unsetenv(removed[i].var);
        char what[128];
        snprintf(what, sizeof what, "context_create_default with %s=%s (removed)", removed[i].var, removed[i].value);
        const char *msg = fa_cl_last_error(NULL);
        expect(NULL, NULL, what, st, FA_CL_ERROR_INVALID_ARGUMENT, msg, removed[i].key, NULL);
        tu_expect(&tally, strstr(msg, removed[i].var) != NULL, "%s: names %s", what, removed[i].var);
        if (removed[i].key2)
            tu_expect(&tally, strstr(msg, removed[i].key2) != NULL, "%s: names %s too", what, removed[i].key2);
        fa_cl_context_release(c);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"args", subset_args},
        {"build", subset_build},
        {"env_trailing", subset_env_trailing},
        {"env_switches", subset_env_switches},
    };
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, 0);
}
