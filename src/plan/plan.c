/* SPDX-License-Identifier: Apache-2.0 */
/* The plan engine, one for forward and backward plans: decide the tiles, compile the family's
 * program, re-plan within what the compiled kernels report (or past a family whose build failed),
 * then the operation's launch list; the plan's info, references and release. */
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each operation's plans are called in messages, and the entries of its main program besides
 * the family's own (the backward's three kernels share one program). */
static const char *call_name(fa_cl__operation op)
{
    return op == FA_CL_OP_BACKWARD ? "fa_cl_backward_plan_create" : "fa_cl_plan_create";
}

static const struct {
    int role;
    const char *entry;
    int sinks_only; /* only in plans with sinks (the program has it only then) */
} backward_entries[] = {{FA_CL_PK_DOT, "fa_backward_dot", 0},
                        {FA_CL_PK_DQ, "fa_backward_dq", 0},
                        {FA_CL_PK_DSINK, "fa_backward_dsink", 1}};

fa_cl_status fa_cl__plan_alloc(fa_cl_context *ctx, size_t bytes, cl_mem *out, const char *what)
{
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    return *out ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, what);
}

void fa_cl__helper_launch(fa_cl__launch *l, cl_kernel k, fa_cl__kernel_id id, size_t items, fa_cl__set_args_fn set_args)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(id);
    const size_t wg = (size_t)f->work_group;
    l->kernel = k;
    l->name = f->entry;
    l->global[0] = (items + wg - 1) / wg * wg;
    l->global[1] = 1;
    l->local = wg;
    l->set_args = set_args;
}

/* The family's program for the tiles chosen: sizes and storage types become -D options
 * (plan_decide.c and build_options.c, shared with the offline compile checks). */
fa_cl_status fa_cl__plan_kernel(fa_cl_context *ctx, const fa_cl_plan *plan, const fa_cl__tiles *t, const char *entry,
                                cl_kernel *out)
{
    char options[512];
    const int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    if (fa_cl__plan_options(t, &plan->views.fwd, gpu, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: build options longer than %zu characters",
                           sizeof options - 1);
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, f->ptx_sm90a, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err;
    if (!entry)
        entry = f->entry;
    *out = fa_cl__kernel_take(ctx, prog, entry, &err);
    clReleaseProgram(prog);
    if (!*out)
        return fa_cl__fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                           "clCreateKernel(%s): %s (%d)", entry, fa_cl__cl_error_name(err), (int)err);
    return FA_CL_SUCCESS;
}

/* The device and environment a context's plans are decided for (plan_decide.c). */
static fa_cl__plan_device plan_device(const fa_cl_context *ctx)
{
    const fa_cl__plan_device dev = {(ctx->props.type & CL_DEVICE_TYPE_GPU) != 0, ctx->props.compute_units,
                                    ctx->props.max_alloc_size, &ctx->env};
    return dev;
}

static void release_main(fa_cl_plan *plan)
{
    static const int roles[4] = {FA_CL_PK_MAIN, FA_CL_PK_DOT, FA_CL_PK_DQ, FA_CL_PK_DSINK};
    for (int i = 0; i < 4; i++) {
        fa_cl__kernel_give(plan->ctx, plan->kernels[roles[i]]);
        plan->kernels[roles[i]] = NULL;
    }
}

/* The main program of the tiles: the family's entry, and the backward's other kernels. */
static fa_cl_status build_main(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_status st = fa_cl__plan_kernel(ctx, plan, &plan->tiles, NULL, &plan->kernels[FA_CL_PK_MAIN]);
    for (size_t i = 0; plan->op == FA_CL_OP_BACKWARD && i < sizeof backward_entries / sizeof backward_entries[0] &&
                       st == FA_CL_SUCCESS;
         i++)
        if (!backward_entries[i].sinks_only || plan->tiles.sinks)
            st = fa_cl__plan_kernel(ctx, plan, &plan->tiles, backward_entries[i].entry,
                                    &plan->kernels[backward_entries[i].role]);
    if (st != FA_CL_SUCCESS)
        release_main(plan);
    return st;
}

/* Whether a family of f's operation comes after f in the registry (f is not its last resort). */
static int family_follows(const fa_cl__kernel_family *f)
{
    int after = 0;
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *g = fa_cl__kernel_at(i);
        if (g == f)
            after = 1;
        else if (after && g->op == f->op)
            return 1;
    }
    return 0;
}

/* The one rule for a family whose program did not build here (FA_CL_ERROR_BUILD_FAILED): unless
 * FA_CL_KERNEL_VARIANT forced it, or the build is emulated (tests: its failure is reported, not
 * hidden), or it is the last family of its operation, it is off on this context (one note, the
 * first time) and the plan is re-decided without it: the next family that takes the plan serves.
 * Returns 1 to re-decide. */
static int family_failed(fa_cl_context *ctx, fa_cl__limits *lim, const fa_cl__tiles *t, fa_cl_status st)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
    if (st != FA_CL_ERROR_BUILD_FAILED || lim->forced_variant == (int)t->variant || t->emulated ||
        !family_follows(f))
        return 0;
    if (fa_cl__context_family_off(ctx, (int)f->id))
        fa_cl__note(ctx, "kernel family %s: its program did not build on this driver, off on this context: the next "
                         "family that takes a plan is planned instead (the build log is in fa_cl_last_error)",
                    f->name);
    lim->families_off |= (uint64_t)1 << f->id;
    return 1;
}

/* A forward plan of a verify_first_use family, unless forced (FA_CL_KERNEL_VARIANT, or the check's
 * own plans): its first-use check (verify.c). Returns 0 when the family failed it (off on the
 * context: lim's bit set, re-decide), else 1. */
static int first_use_checked(fa_cl_context *ctx, const fa_cl_plan *plan, fa_cl__limits *lim)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(plan->tiles.variant);
    if (!f->verify_first_use || plan->op != FA_CL_OP_FORWARD || lim->forced_variant == (int)f->id ||
        fa_cl__family_verify(ctx, plan))
        return 1;
    lim->families_off |= (uint64_t)1 << f->id;
    return 0;
}

/* The most work-items and local memory the compiled tiled kernels allow and use (the backward's
 * dkdv and dq; a forward's one), or an OpenCL failure. */
static fa_cl_status compiled_limits(fa_cl_context *ctx, const fa_cl_plan *plan, size_t *kwg, cl_ulong *klocal)
{
    const int roles[2] = {FA_CL_PK_MAIN, FA_CL_PK_DQ};
    *kwg = SIZE_MAX;
    *klocal = 0;
    for (int i = 0; i < (plan->op == FA_CL_OP_BACKWARD ? 2 : 1); i++) {
        cl_kernel k = plan->kernels[roles[i]];
        size_t w = 0;
        cl_ulong l = 0;
        cl_int err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof w, &w, NULL);
        if (err == CL_SUCCESS)
            err = clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof l, &l, NULL);
        if (err != CL_SUCCESS)
            return fa_cl__fail_cl(ctx, err, "clGetKernelWorkGroupInfo");
        if (i == 0 && plan->tiles.main_wg_scale > 1) /* dkdv's work-group is that many times the tile's */
            w /= (size_t)plan->tiles.main_wg_scale;
        *kwg = w < *kwg ? w : *kwg;
        *klocal = l > *klocal ? l : *klocal;
    }
    if (ctx->env.print_build_log)
        fprintf(stderr, "fa_cl: %s: CL_KERNEL_WORK_GROUP_SIZE %zu (planned %d), CL_KERNEL_LOCAL_MEM_SIZE %llu\n",
                plan->tiles.kernel, *kwg, plan->tiles.work_group_size, (unsigned long long)*klocal);
    return FA_CL_SUCCESS;
}

/* Tiles, then the main program. A compiled kernel may get fewer work-items than the device maximum
 * (registers) or report more local memory than the tiles (the compiler's own use): re-plan within
 * what it reports. */
static fa_cl_status plan_and_compile(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const char *call = call_name(plan->op);
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    if (plan->forced)
        lim.forced_variant = (int)plan->forced;
    const fa_cl__plan_device dev = plan_device(ctx);
    fa_cl__tile_request req;
    char msg[512];
    fa_cl_status st = fa_cl__plan_request(&dev, plan->op, &plan->views, plan->pack, &lim, &req, msg, sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, "%s: %s", call, msg);
    fa_cl__tiles *t = &plan->tiles;
    for (int attempt = 0; attempt < 4; attempt++) {
        st = fa_cl__plan_decide(&dev, plan->op, &plan->views, plan->pack, &lim, &req, t, msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, "%s: %s", call, msg);
        st = build_main(ctx, plan);
        if (st != FA_CL_SUCCESS && family_failed(ctx, &lim, t, st)) {
            attempt--; /* a family fewer: the walk ends */
            continue;
        }
        size_t kwg = 0;
        cl_ulong klocal = 0;
        if (st == FA_CL_SUCCESS && (st = compiled_limits(ctx, plan, &kwg, &klocal)) != FA_CL_SUCCESS)
            release_main(plan);
        if (st != FA_CL_SUCCESS)
            return st;
        int wg_ok = (size_t)t->work_group_size <= kwg;
        if (!wg_ok && t->compiled_wg) {
            /* a kernel that moves registers between its work-items (the family says so): the driver
             * may count the most any holds for every work-item; the size the kernel was compiled
             * for decides */
            size_t cwg[3] = {0, 0, 0};
            wg_ok = clGetKernelWorkGroupInfo(plan->kernels[FA_CL_PK_MAIN], ctx->device,
                                             CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof cwg, cwg, NULL) == CL_SUCCESS &&
                    cwg[0] == (size_t)t->work_group_size;
        }
        const int local_ok = klocal <= lim.local_mem_size || ctx->props.local_mem_is_global;
        if (wg_ok && local_ok && !first_use_checked(ctx, plan, &lim)) {
            release_main(plan);
            attempt--; /* a family fewer: the walk ends */
            continue;
        }
        if (wg_ok && local_ok) {
            /* the vendor kernels' local arrays depend on alignment (double-buffered copies): report
             * what they use */
            if (fa_cl__family_vendor(fa_cl__kernel_by_id(t->variant)) && plan->op == FA_CL_OP_FORWARD)
                t->local_mem_bytes = (size_t)klocal;
            return FA_CL_SUCCESS;
        }
        release_main(plan);
        if (t->forced)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               "FA_CL_TUNE tile=%dx%d: the compiled kernel allows %zu work-items and uses %llu bytes of "
                               "local memory (device: %zu work-items, %llu bytes)",
                               t->block_q, t->block_kv, kwg, (unsigned long long)klocal, (size_t)t->work_group_size,
                               (unsigned long long)lim.local_mem_size);
        if (!wg_ok)
            lim.max_work_group = kwg;
        if (!local_ok)
            lim.kernel_other_local += (size_t)(klocal - t->local_mem_bytes);
    }
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "%s: no tile fits what the compiled kernel reports for head_dim %lld",
                       call, (long long)plan->views.fwd.d.head_dim);
}

static void plan_free(fa_cl_plan *plan)
{
    for (int i = 0; i < FA_CL_PLAN_KERNELS; i++)
        fa_cl__kernel_give(plan->ctx, plan->kernels[i]);
    cl_mem mems[6] = {plan->scratch, plan->part_o, plan->part_lse, plan->padded[0], plan->padded[1], plan->padded[2]};
    for (int i = 0; i < 6; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    fa_cl__chain_state_release(&plan->chain);
    free(plan->launches);
    fa_cl__lock_destroy(&plan->lock);
    free(plan);
}

int fa_cl__plan_key(fa_cl__operation op, const fa_cl__backward_views *bv, uint64_t *key)
{
    key[0] = (uint64_t)op;
    if (op == FA_CL_OP_BACKWARD) {
        memcpy(key + 1, bv->key, sizeof bv->key);
        return 1 + FA_CL_BACKWARD_KEY_WORDS;
    }
    memcpy(key + 1, bv->fwd.key, sizeof bv->fwd.key);
    return 1 + FA_CL_DESC_KEY_WORDS;
}

fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, fa_cl__operation op, const fa_cl__backward_views *bv,
                              fa_cl__launches_fn launches, fa_cl_plan **out)
{
    return fa_cl__plan_make_forced(ctx, op, bv, launches, (fa_cl__kernel_id)0, out);
}

fa_cl_status fa_cl__plan_make_forced(fa_cl_context *ctx, fa_cl__operation op, const fa_cl__backward_views *bv,
                                     fa_cl__launches_fn launches, fa_cl__kernel_id forced, fa_cl_plan **out)
{
    *out = NULL;
    /* the public backward plan's size: a backward plan is one (fa_cl_backward_plan holds the plan first) */
    fa_cl_plan *plan = (fa_cl_plan *)calloc(1, sizeof(struct fa_cl_backward_plan));
    if (!plan)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", call_name(op));
    plan->ctx = ctx;
    plan->op = op;
    plan->forced = forced;
    if (op == FA_CL_OP_BACKWARD)
        plan->views = *bv;
    else
        plan->views.fwd = bv->fwd;
    plan->key_words = fa_cl__plan_key(op, &plan->views, plan->key);
    plan->refs = 1;
    const fa_cl__plan_device dev = plan_device(ctx);
    plan->pack = fa_cl__plan_pack(&dev, op, &plan->views.fwd);
    plan->splits = 1;
    fa_cl__lock_init(&plan->lock);
    fa_cl_status st = plan_and_compile(ctx, plan);
    if (st == FA_CL_SUCCESS)
        st = launches(ctx, plan);
    if (st != FA_CL_SUCCESS) {
        plan_free(plan);
        return st;
    }
    *out = plan;
    return FA_CL_SUCCESS;
}

/* A plan's info (either operation's): the caller's struct of struct_size bytes. */
static fa_cl_status plan_info(const char *call, const fa_cl_plan *plan, fa_cl_plan_info *out, size_t struct_size)
{
    if (!plan || !out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", call, !plan ? "plan" : "out");
    if (struct_size < offsetof(fa_cl_plan_info, launches))
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT,
                           "%s: struct_size %zu is smaller than the first version's %zu bytes", call, struct_size,
                           offsetof(fa_cl_plan_info, launches));
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.block_q = plan->tiles.block_q;
    info.block_kv = plan->tiles.block_kv;
    info.work_group_size = plan->tiles.work_group_size;
    info.head_dim_padded = plan->tiles.head_dim_padded;
    info.local_mem_bytes = plan->tiles.local_mem_bytes;
    info.local_mem_budget = plan->tiles.local_mem_budget;
    info.kernel = plan->tiles.kernel;
    info.launches = plan->nlaunches;
    info.scratch_bytes = plan->scratch_bytes;
    info.splits = plan->splits;
    info.gqa_pack = plan->pack;
    /* a caller's newer, larger struct keeps its later fields as they were; an older one gets less */
    info.struct_size = struct_size < sizeof info ? struct_size : sizeof info;
    memcpy(out, &info, info.struct_size);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_plan_get_info_sized(const fa_cl_plan *plan, fa_cl_plan_info *out, size_t struct_size)
{
    return plan_info("fa_cl_plan_get_info", plan, out, struct_size);
}

fa_cl_status fa_cl_backward_plan_get_info_sized(const fa_cl_backward_plan *plan, fa_cl_plan_info *out,
                                                size_t struct_size)
{
    return plan_info("fa_cl_backward_plan_get_info", plan ? &plan->plan : NULL, out, struct_size);
}

/* One call of a plan: its launches (the device checks first where checked) for args. */
typedef struct plan_call {
    const fa_cl_plan *plan;
    const void *args;
    int checked;
} plan_call;

static fa_cl_status plan_step(void *data, int i, fa_cl__chain_step *s)
{
    const plan_call *c = (const plan_call *)data;
    const fa_cl__launch *l = c->checked && i == 0 ? &c->plan->check : &c->plan->launches[i - c->checked];
    s->kernel = l->kernel;
    s->dims = l->global[1] > 1 ? 2 : 1;
    s->global[0] = l->global[0], s->global[1] = l->global[1];
    s->local[0] = l->local, s->local[1] = 1;
    s->name = l->name;
    return l->set_args(c->plan, l, c->args);
}

fa_cl_status fa_cl__plan_enqueue(fa_cl_plan *plan, const void *args, cl_uint num_wait, const cl_event *wait,
                                 cl_event *done, int checked)
{
    plan_call c = {plan, args, checked != 0};
    return fa_cl__enqueue_chain(plan->ctx, &plan->lock, plan->nlaunches + c.checked, plan_step, &c, num_wait, wait,
                                done, &plan->chain, plan->scratch_bytes > 0);
}

void fa_cl__plan_unref(fa_cl_plan *plan)
{
    fa_cl_context *ctx = plan->ctx;
    fa_cl__lock_acquire(&ctx->lock);
    int left = --plan->refs;
    fa_cl__lock_release(&ctx->lock);
    if (left == 0)
        plan_free(plan);
}

void fa_cl_plan_release(fa_cl_plan *plan)
{
    if (plan)
        fa_cl__plan_unref(plan);
}

void fa_cl_backward_plan_release(fa_cl_backward_plan *plan)
{
    if (plan)
        fa_cl__plan_unref(&plan->plan);
}
