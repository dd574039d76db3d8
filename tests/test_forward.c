/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fused forward correctness on the OpenCL device against the float64 reference computed from the
 * rounded inputs, over a designed matrix (not a cartesian product): every head_dim, sequence
 * length, dtype, mask, GQA ratio and layout appears, and the pairs that interact are combined.
 *
 *   test_forward shapes   head_dim x dtype (all 24 pairs) x (Sq, Sk) pairs, plus 1000x1000
 *   test_forward masks    causal / windows / GQA / batch / scale / LSE, fully masked rows
 *   test_forward layouts  BSHD, padded strides with offsets, mixed and broadcast layouts, q and o in
 *                         one buffer, the one-shot plan cache past its 64 entries
 *   test_forward tiles    head_dim 40, 64, 128 over several shapes; CTest runs it under
 *                         FA_CL_LOCAL_MEM_BYTES=16384 and several FA_CL_TUNE tile values
 *   test_forward wide     head_dim 257..512 (300, 320, 384, 457, 512) x f32/f16/bf16: causal and not,
 *                         tails, GQA/MQA, windows, layouts, a decoding row; the tensor-core kernels
 *                         decline these (CTest runs it emulated too), tiles shrink with the budget
 *   test_forward nan      a NaN in q or k stays in the rows that see it
 *   test_forward nan_v    a NaN in v stays in the rows that see it
 *
 * Every case: o and lse are poisoned first (every element of the buffers, gaps and slack
 * included); afterwards every element inside the view must have been written and every one
 * outside must still hold the sentinel. Cases alternate between fa_cl_plan_create +
 * fa_cl_plan_forward (with a second run that must be bitwise identical) and the one-shot
 * fa_cl_attention_forward (gated by a user event: the kernel must not run before it). Plan info
 * is checked against the planner on this device's limits and the environment.
 */
#include "kernels/intel_xmx.h"   /* the head_dims intel-xmx takes */
#include "kernels/nvidia_mma.h"  /* the head_dims the tensor-core kernels take */
#include "kernels/nvidia_tf32.h"
#include "kernels/nvidia_wgmma.h" /* its producer, its tiles that only copies by TMA feed */
#include "plan/plan.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16

static tu_tally tally = {"forward", 0, 0};
static fa_cl__limits dev_limits; /* this device and the environment, as the library sees them */
static int env_tile_q, env_tile_kv, env_variant;
static size_t env_cap;
static fa_cl__env lib_env; /* the switches as the library read them (any of their words) */
static fa_cl__plan_device lib_device; /* what the library's plans read of the device besides the limits */

/* The limits the library plans with (fa_cl__context_limits), checked against the device's own
 * answers and the environment, so that comparing plans against fa_cl__plan_tiles means something. */
static void read_limits(fa_cl_context *ctx)
{
    cl_device_id dev = fa_cl_context_device(ctx);
    cl_ulong local = 0;
    cl_device_local_mem_type type = CL_LOCAL;
    cl_device_type dtype = 0;
    size_t wg = 0;
    clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof dtype, &dtype, NULL);
    const char *s = getenv("FA_CL_LOCAL_MEM_BYTES");
    if (s && *s)
        env_cap = (size_t)strtoull(s, NULL, 10);
    int rows = 0, cols = 0;
    char tile[64];
    s = tu_tune("tile", tile, sizeof tile);
    if (s && *s && sscanf(s, "%dx%dx%dx%d", &env_tile_q, &env_tile_kv, &rows, &cols) < 2)
        env_tile_q = env_tile_kv = 0;
    s = getenv("FA_CL_KERNEL_VARIANT");
    if (s && *s && fa_cl__kernel_by_name(s))
        env_variant = fa_cl__kernel_by_name(s)->id;
    fa_cl__context_limits(ctx, &dev_limits);
    lib_env = ctx->env;
    lib_device = (fa_cl__plan_device){(ctx->props.type & CL_DEVICE_TYPE_GPU) != 0, ctx->props.compute_units,
                                      ctx->props.max_alloc_size, &lib_env};
    const fa_cl__limits *l = &dev_limits;
    /* the budget is the reported size, or more where the library knows the device gives more
     * (NVIDIA's static local memory), and then it says where the number came from */
    int budget_ok = l->local_mem_size == (size_t)local || (l->local_mem_source && l->local_mem_size > (size_t)local);
    int ok = budget_ok && l->local_mem_is_global == (type == CL_GLOBAL) &&
             l->max_work_group == wg && l->local_mem_cap == env_cap && l->forced_q == env_tile_q &&
             l->forced_kv == env_tile_kv && l->forced_rows == rows &&
             l->forced_variant == env_variant && l->dev.is_gpu == ((dtype & CL_DEVICE_TYPE_GPU) != 0);
    tu_expect(&tally, ok,
              "planner limits of the context: local memory %zu (device %llu, %s), max work-group %zu (device %zu), "
              "cap %zu (FA_CL_LOCAL_MEM_BYTES %zu), tile %dx%dx%d (FA_CL_TUNE tile %dx%dx%dx%d), variant %d (env %d), "
              "prefer tiled %d",
              l->local_mem_size, (unsigned long long)local, l->local_mem_is_global ? "global" : "local",
              l->max_work_group, wg, l->local_mem_cap, env_cap, l->forced_q, l->forced_kv, l->forced_rows,
              env_tile_q, env_tile_kv, rows, cols, l->forced_variant, env_variant, l->dev.is_gpu);
}

/* NULL when the plan info is sane for this case, else what is wrong. */
static const char *info_problem(const fa_cl_plan_info *in, const tu_case *c, const fa_cl_attention_desc *desc)
{
    static char why[256];
    const int dpad = (int)((c->D + 3) / 4 * 4);
    if (!in->kernel || !in->kernel[0])
        return "no kernel name";
    /* FA_CL_TEST_EXPECT_KERNEL=<family> (the emulated vendor families' entries): every case of a
     * dtype and head_dim the family takes is planned on it */
    const char *expect = getenv("FA_CL_TEST_EXPECT_KERNEL");
    const fa_cl__kernel_family *ef = expect && *expect ? fa_cl__kernel_by_name(expect) : NULL;
    if (expect && *expect && !ef)
        return "FA_CL_TEST_EXPECT_KERNEL names no family";
    if (ef && (ef->takes.dtypes >> c->dtype & 1) && c->D <= ef->takes.max_head_dim && strcmp(in->kernel, expect) != 0) {
        snprintf(why, sizeof why, "planned %s, not %s (FA_CL_TEST_EXPECT_KERNEL)", in->kernel, expect);
        return why;
    }
    const int wgmma = strcmp(in->kernel, "nvidia-wgmma") == 0;
    const int xmx = strcmp(in->kernel, "intel-xmx") == 0;
    const int tensor_cores =
        strcmp(in->kernel, "nvidia-mma") == 0 || strcmp(in->kernel, "nvidia-tf32x3") == 0 || wgmma || xmx;
    if (in->head_dim_padded != dpad && !tensor_cores)
        return "head_dim_padded != head_dim rounded up to 4";
    if (in->local_mem_bytes > in->local_mem_budget)
        return "local_mem_bytes > local_mem_budget";
    if (in->work_group_size < 1 || (size_t)in->work_group_size > dev_limits.max_work_group)
        return "work_group_size outside 1..device maximum";
    const int mma_variant = strcmp(in->kernel, "nvidia-mma") == 0;
    /* O lives in the tensor-core kernels' registers: above their head_dim limits the plan must have
     * fallen back to a portable kernel (with nvidia-mma:emulate=1 as on an NVIDIA GPU) */
    if ((mma_variant && c->D > FA_CL_MMA_MAX_DIM) ||
        (strcmp(in->kernel, "nvidia-tf32x3") == 0 && c->D > FA_CL_TF32_MAX_DIM)) {
        snprintf(why, sizeof why, "%s planned at head_dim %lld, beyond what it takes", in->kernel, (long long)c->D);
        return why;
    }
    if (mma_variant && in->head_dim_padded != (c->D + 31) / 32 * 32)
        return "tensor-core plan: head_dim_padded is not head_dim rounded up to 32 (the kernel's k-step pairs)";
    /* FA_CL_TUNE intel-xmx:emulate=1 (the *_xmx_emulated tests): every f16/bf16 case it takes is its */
    const char *tune = getenv("FA_CL_TUNE");
    if (tune && strstr(tune, "intel-xmx:emulate=1") && c->dtype != F32 && c->D <= FA_CL_XMX_MAX_DIM && !xmx)
        return "intel-xmx:emulate=1: an f16/bf16 plan it takes went to another family";
    if (xmx && (c->D > FA_CL_XMX_MAX_DIM || in->head_dim_padded != (c->D + 31) / 32 * 32))
        return "intel-xmx plan: head_dim above its largest, or head_dim_padded not head_dim rounded up to 32";
    if (wgmma && (c->D > 256 || in->head_dim_padded != (c->D <= 64 ? 64 : c->D <= 128 ? 128 : c->D <= 192 ? 192 : 256)))
        return "nvidia-wgmma plan: head_dim above 256, or head_dim_padded not 64, 128, 192 or 256 (the next above it)";
    const int rows_variant = strcmp(in->kernel, "portable") == 0;
    if (rows_variant) {
        if (in->local_mem_bytes != (size_t)4 * (size_t)(in->block_q + in->block_kv) * (size_t)dpad)
            return "local_mem_bytes != 4 * (B_r + B_c) * d_padded";
        if (in->block_q % in->work_group_size != 0)
            return "B_r is not work_group_size * rows_per_item";
    }
    if (env_variant == FA_CL_KERNEL_PORTABLE_TILED && strcmp(in->kernel, "portable-tiled") != 0)
        return "FA_CL_KERNEL_VARIANT=portable-tiled not honoured";
    if (env_variant == FA_CL_KERNEL_PORTABLE && !rows_variant)
        return "FA_CL_KERNEL_VARIANT=portable not honoured";
    const int cpu_variant = strcmp(in->kernel, "cpu") == 0;
    if (cpu_variant && (in->work_group_size != 1 || in->local_mem_bytes != 0 || in->block_q % 4 != 0))
        return "cpu plan: not one work-item a work-group, local memory used, or B_r not a multiple of 4 lanes";
    if (env_variant == FA_CL_KERNEL_CPU && !cpu_variant)
        return "FA_CL_KERNEL_VARIANT=cpu not honoured";
    if (env_tile_q && (in->block_q != env_tile_q || in->block_kv != env_tile_kv))
        return "FA_CL_TUNE tile not honoured";
    if (env_cap && in->local_mem_budget > env_cap)
        return "FA_CL_LOCAL_MEM_BYTES not honoured";
    fa_cl__views views;
    char vmsg[256];
    if (fa_cl__desc_resolve(desc, &views, vmsg, sizeof vmsg) != FA_CL_SUCCESS)
        return "the descriptor of an accepted plan does not resolve";
    /* GQA packing: every query head of a kv head in one work-group where seqlen_q < 64
     * (FA_CL_TUNE gqa_pack=0 never, =1 always) */
    const int64_t group = c->Hq / c->Hkv;
    const int pack = group > 1 && lib_env.gqa_pack >= 0 && (lib_env.gqa_pack > 0 || c->Sq < 64)
                         ? (int)group
                         : 1;
    if (in->gqa_pack != pack) {
        snprintf(why, sizeof why, "plan info: gqa_pack %d, expected %d", in->gqa_pack, pack);
        return why;
    }
    /* the request as the library makes it (the descriptor's features and layout), then the walk */
    fa_cl__backward_views bv;
    memset(&bv, 0, sizeof bv);
    bv.fwd = views;
    fa_cl__limits lim = dev_limits;
    fa_cl__tile_request req;
    fa_cl__tiles t;
    char msg[256];
    if (fa_cl__plan_request(&lib_device, FA_CL_OP_FORWARD, &bv, pack, &lim, &req, msg, sizeof msg) != FA_CL_SUCCESS ||
        fa_cl__plan_tiles(&lim, &req, &t, msg, sizeof msg) != FA_CL_SUCCESS)
        return "the planner refuses what the plan accepted";
    /* head_dim % 8 != 0, dense, more than 64 rows: a tensor-core plan copies q, k, v into zero-padded
     * rows first (3 launches, their copies in the scratch) and takes the aligned kernel's tiles */
    const int padded = t.rows_padded;
    const size_t pad_bytes =
        padded ? (size_t)c->B * (size_t)(c->Hq * c->Sq + 2 * c->Hkv * c->Sk) * (size_t)((c->D + 7) / 8 * 8) * 2 : 0;
    if (padded && (c->D % 8 == 0 || c->dtype == F32 || c->Sq <= 64))
        return "padded rows where head_dim % 8 == 0, f32, or 64 rows or fewer";
    if (padded != (in->scratch_bytes >= pad_bytes && pad_bytes > 0 && in->launches >= 4))
        return "plan info: the padded q/k/v copies (head_dim % 8 != 0) are not as the rules say";
    /* nvidia-wgmma's tiles that only copies by TMA feed (at d_pad 256 the producer and blocks of 80
     * keys): a plan whose copies cannot go by TMA takes the planner's tiles without them */
    int tma_tiles = 0;
    if (t.variant == FA_CL_KERNEL_NVIDIA_WGMMA &&
        ((t.block_kv & (t.block_kv - 1)) || (FA_CL_NV(&t, PRODUCER) && t.head_dim_padded > 128))) {
        fa_cl__tile_request creq = req;
        fa_cl__tiles ct;
        creq.narrowed = FA_CL_WGMMA_NO_TMA_TILES;
        tma_tiles = 1;
        if ((in->block_kv != t.block_kv || in->work_group_size != t.work_group_size) &&
            fa_cl__plan_tiles(&lim, &creq, &ct, msg, sizeof msg) == FA_CL_SUCCESS) {
            t = ct;
            tma_tiles = 0;
        }
    }
    char splits_buf[32];
    const char *splits_env = tu_tune("splits", splits_buf, sizeof splits_buf);
    if (splits_env && *splits_env && atoi(splits_env) > 1 && in->splits < atoi(splits_env)) {
        snprintf(why, sizeof why, "plan info: %d splits, FA_CL_TUNE splits=%s not honoured", in->splits, splits_env);
        return why;
    }
    if (in->splits > 1) /* split-KV: no chunked launches, one forward and the combine */
        t.chunk_keys = 0;
    /* the library may re-plan for a smaller work-group the compiled kernel reports */
    /* the tensor-core plan reports the compiled kernel's local memory (double-buffered copies) */
    int same = in->block_q == t.block_q && in->block_kv == t.block_kv && in->work_group_size == t.work_group_size &&
               in->local_mem_budget == t.local_mem_budget &&
               (in->local_mem_bytes == t.local_mem_bytes || tensor_cores) &&
               strcmp(in->kernel, t.kernel) == 0;
    /* one launch, or one per chunk of keys (FA_CL_TUNE kv_chunk, long rows) with scratch of its own */
    const int launches = 3 * padded + (in->splits > 1           ? 2
                                       : t.chunk_keys > 0 ? (int)((c->Sk + t.chunk_keys - 1) / t.chunk_keys)
                                                          : 1);
    /* Hopper's copies by TMA (dense plans of nvidia-wgmma's producer): one more launch, writing
     * 512 bytes of tensor maps into the plan's scratch; a persistent plan's (head_dim_padded 128,
     * not split, nvidia-wgmma:persistent not 0) 64 more, its tile counter */
    char persistent_buf[32];
    const char *persistent_env = tu_tune("persistent", persistent_buf, sizeof persistent_buf);
    const int persistent = in->head_dim_padded == 128 && in->splits == 1 &&
                           !(persistent_env && strcmp(persistent_env, "0") == 0);
    const size_t tma_bytes = 512 + (persistent ? 64 : 0);
    const int tma = strcmp(in->kernel, "nvidia-wgmma") == 0 && in->launches == launches + 1 &&
                    in->scratch_bytes >= pad_bytes + tma_bytes;
    if (tma_tiles && !tma)
        return "plan info: nvidia-wgmma's tiles for copies by TMA without the launch that writes the tensor maps";
    const size_t own_bytes = in->scratch_bytes - (tma ? tma_bytes : 0);
    if (in->launches != launches + tma || (own_bytes > pad_bytes) != (t.chunk_keys > 0 || in->splits > 1)) {
        snprintf(why, sizeof why, "plan info: %d launches and %zu scratch bytes, the planner's chunks of %d keys want "
                 "%d launches and %s scratch", in->launches, in->scratch_bytes, t.chunk_keys, launches,
                 t.chunk_keys > 0 ? "some" : "no");
        return why;
    }
    if (!same && !(in->work_group_size < t.work_group_size)) {
        snprintf(why, sizeof why, "plan %s %dx%d wg %d bytes %zu budget %zu, planner on this device %s %dx%d wg %d "
                 "bytes %zu budget %zu", in->kernel, in->block_q, in->block_kv, in->work_group_size,
                 in->local_mem_bytes, in->local_mem_budget, t.kernel, t.block_q, t.block_kv, t.work_group_size,
                 t.local_mem_bytes, t.local_mem_budget);
        return why;
    }
    return NULL;
}

/* ---- running one case ------------------------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static cl_int event_status(cl_event e)
{
    cl_int s = -1;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    return s;
}

enum { API_PLAN = 0, API_ONESHOT = 1 };

/* Runs the fused forward on p's buffers. Fills info. Returns 0, or -1 with why filled in. */
static int run_fused(fa_cl_context *ctx, tu_problem *p, int api, fa_cl_plan_info *info, char *why, size_t n)
{
    cl_mem lse = p->c.lse ? p->lse_mem : NULL;
    fa_cl_status st;
    if (api == API_PLAN) {
        fa_cl_plan *plan = NULL;
        st = fa_cl_plan_create(ctx, &p->desc, &plan);
        if (st != FA_CL_SUCCESS) {
            snprintf(why, n, "fa_cl_plan_create: %s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
            return -1;
        }
        fa_cl_plan_get_info(plan, info);
        cl_event done = NULL;
        st = fa_cl_plan_forward(plan, p->mem[0], p->mem[1], p->mem[2], p->mem[3], lse, 0, NULL, &done);
        if (st != FA_CL_SUCCESS || !done) {
            snprintf(why, n, "fa_cl_plan_forward: %s (event %p): %.300s", fa_cl_status_string(st), (void *)done,
                     fa_cl_last_error(ctx));
            fa_cl_plan_release(plan);
            return -1;
        }
        clWaitForEvents(1, &done);
        cl_int es = event_status(done);
        clReleaseEvent(done);
        fa_cl_plan_release(plan);
        if (es != CL_COMPLETE) {
            snprintf(why, n, "the returned event ended with status %d", (int)es);
            return -1;
        }
        return 0;
    }
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(fa_cl_context_cl_context(ctx), &err);
    if (!gate) {
        snprintf(why, n, "clCreateUserEvent: %d", (int)err);
        return -1;
    }
    cl_event done = NULL;
    st = fa_cl_attention_forward(ctx, &p->desc, p->mem[0], p->mem[1], p->mem[2], p->mem[3], lse, 1, &gate, &done);
    int rc = 0;
    if (st != FA_CL_SUCCESS || !done) {
        snprintf(why, n, "fa_cl_attention_forward: %s (event %p): %.300s", fa_cl_status_string(st), (void *)done,
                 fa_cl_last_error(ctx));
        rc = -1;
    } else {
        sleep_ms(2);
        cl_int before = event_status(done);
        clSetUserEventStatus(gate, CL_COMPLETE);
        clWaitForEvents(1, &done);
        if (before == CL_COMPLETE) {
            snprintf(why, n, "the kernel completed before its wait list (a user event) was");
            rc = -1;
        }
    }
    if (rc != 0)
        clSetUserEventStatus(gate, CL_COMPLETE);
    clFinish(fa_cl_context_queue(ctx));
    if (done)
        clReleaseEvent(done);
    clReleaseEvent(gate);
    if (rc == 0) {
        fa_cl_plan *plan = NULL; /* the same descriptor: the plan the one-shot call used */
        st = fa_cl_plan_create(ctx, &p->desc, &plan);
        if (st != FA_CL_SUCCESS) {
            snprintf(why, n, "fa_cl_plan_create after the one-shot call: %s", fa_cl_status_string(st));
            return -1;
        }
        fa_cl_plan_get_info(plan, info);
        fa_cl_plan_release(plan);
    }
    return rc;
}

/* Re-run through a plan and compare both images bitwise with the first run's. */
static int rerun_identical(fa_cl_context *ctx, tu_problem *p, char *why, size_t n)
{
    const size_t ob = tu_tensor_bytes(&p->t[3]), lb = (p->lse_elems + p->lse_slack) * sizeof(float);
    unsigned char *o1 = (unsigned char *)malloc(ob), *l1 = (unsigned char *)malloc(lb);
    int rc = -1;
    fa_cl_plan *plan = NULL;
    if (!o1 || !l1)
        goto out;
    memcpy(o1, p->t[3].img, ob);
    memcpy(l1, p->lse_img, lb);
    if (tu_problem_poison(p, ctx) != 0 || fa_cl_plan_create(ctx, &p->desc, &plan) != FA_CL_SUCCESS ||
        fa_cl_plan_forward(plan, p->mem[0], p->mem[1], p->mem[2], p->mem[3], p->c.lse ? p->lse_mem : NULL, 0, NULL,
                           NULL) != FA_CL_SUCCESS ||
        clFinish(fa_cl_context_queue(ctx)) != CL_SUCCESS || tu_problem_read(p, ctx) != 0) {
        snprintf(why, n, "second run failed: %.300s", fa_cl_last_error(ctx));
        goto out;
    }
    if (memcmp(o1, p->t[3].img, ob) != 0 || (p->c.lse && memcmp(l1, p->lse_img, lb) != 0)) {
        snprintf(why, n, "a second run of the same plan is not bitwise identical");
        goto out;
    }
    rc = 0;
out:
    fa_cl_plan_release(plan);
    free(o1);
    free(l1);
    return rc;
}

static void report(const char *label, int idx, const tu_case *c, int api, const fa_cl_plan_info *info, int ok,
                   const char *detail, double ms)
{
    char cs[256], tiles[64] = "";
    tu_case_format(c, cs, sizeof cs);
    if (info && info->block_q)
        snprintf(tiles, sizeof tiles, " tiles %dx%d wg %d", info->block_q, info->block_kv, info->work_group_size);
    tu_expect(&tally, ok, "%s #%d %s [%s%s] %.0f ms: %s", label, idx, cs, api == API_PLAN ? "plan" : "one-shot", tiles,
              ms, detail);
}

static void run_case(fa_cl_context *ctx, const char *label, int idx, const tu_case *c, int api)
{
    const double t0 = tu_now_ms();
    tu_problem p;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    char why[512] = "", detail[1024] = "";
    if (tu_problem_init(&p, ctx, c, 1000u * (uint64_t)idx + (uint64_t)label[0], 1) != 0) {
        report(label, idx, c, api, NULL, 0, "setup failed", 0);
        return;
    }
    int ok = run_fused(ctx, &p, api, &info, why, sizeof why) == 0;
    if (ok && tu_problem_read(&p, ctx) != 0) {
        ok = 0;
        snprintf(why, sizeof why, "read back failed");
    }
    if (!ok && env_tile_q && strstr(why, "tile=") && strstr(why, "budget")) {
        /* a tile forced for the whole run that this case's head_dim cannot fit: the refusal is the
         * contract (test_planner checks it); the case is not run, and says so */
        printf("[SKIP] %s #%d D=%lld: %s\n", label, idx, (long long)c->D, why);
        tu_problem_free(&p);
        return;
    }
    if (!ok) {
        report(label, idx, c, api, &info, 0, why, tu_now_ms() - t0);
        tu_problem_free(&p);
        return;
    }
    tu_result r;
    tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
    tu_result_format(&r, &p, detail, sizeof detail);
    ok = r.ok;
    const char *bad_info = info_problem(&info, c, &p.desc);
    if (bad_info) {
        ok = 0;
        snprintf(why, sizeof why, "; plan info: %s", bad_info);
        strncat(detail, why, sizeof detail - strlen(detail) - 1);
    }
    /* determinism: plan cases that are not huge run twice */
    if (ok && api == API_PLAN && c->B * c->Hq * c->Sq * c->Sk <= 400000) {
        if (rerun_identical(ctx, &p, why, sizeof why) != 0) {
            ok = 0;
            strncat(detail, "; ", sizeof detail - strlen(detail) - 1);
            strncat(detail, why, sizeof detail - strlen(detail) - 1);
        } else {
            strncat(detail, "; rerun bitwise identical", sizeof detail - strlen(detail) - 1);
        }
    }
    report(label, idx, c, api, &info, ok, detail, tu_now_ms() - t0);
    tu_problem_free(&p);
}

/* ---- the matrix ------------------------------------------------------------------------------- */

/* (Sq, Sk) pairs: every listed length on both sides, unequal both ways */
static const int64_t pairs[][2] = {{113, 203}, {203, 113}, {1, 239}, {65, 17}, {1000, 63},
                                   {63, 1000}, {64, 64},   {17, 65}, {1, 1},   {64, 1}};
/* 160 and 224: the tensor-core kernel pads to multiples of 32 (not to 192 and 256); 59: rows of
 * no 16-byte alignment, which its plans copy into zero-padded rows first (pad-rows) */
static const int64_t head_dims[] = {1, 8, 40, 59, 64, 80, 96, 128, 160, 224, 256};
static const fa_cl_dtype dtypes[] = {F32, F16, BF16};

static int subset_shapes(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    int idx = 0;
    /* all 33 head_dim x dtype pairs; each head_dim meets 3 different (Sq, Sk) pairs, each pair 3-4 head_dims */
    for (int ti = 0; ti < 3; ti++)
        for (int di = 0; di < TU_COUNT(head_dims); di++, idx++) {
            const int64_t *sp = pairs[(di + 4 * ti) % 10];
            tu_case c = {2, 3, 3, sp[0], sp[1], head_dims[di], dtypes[ti], 0, -1, -1, NULL, 0.0f, 1};
            if (sp[0] * sp[1] > 20000) { /* keep the float64 reference cheap */
                c.B = 1;
                c.Hq = c.Hkv = 2;
            }
            if (idx % 4 == 3)
                c.causal = 1;
            if (idx % 5 == 2)
                c.scale = 0.7f;
            if (idx % 5 == 4)
                c.scale = 3.0f; /* a sharp softmax */
            if (idx % 6 == 5)
                c.lse = 0;
            run_case(ctx, "shapes", idx, &c, idx % 2);
        }
    /* long square sequences: many blocks in both directions */
    const tu_case big[] = {
        {1, 1, 1, 1000, 1000, 64, F32, 0, -1, -1, NULL, 0.0f, 1},
        {1, 1, 1, 1000, 1000, 256, F16, 1, -1, -1, NULL, 0.0f, 1},
        {1, 2, 1, 1000, 1000, 128, BF16, 0, -1, -1, NULL, 0.0f, 1},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++, idx++)
        run_case(ctx, "shapes", idx, &big[i], idx % 2);
    return 0;
}

static int subset_masks(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const tu_case cases[] = {
        /* B  Hq Hkv Sq    Sk   D    dtype causal wl  wr  layout scale lse */
        {2, 4, 4, 113, 203, 64, F32, 1, -1, -1, NULL, 0.0f, 1},   /* causal, Sq < Sk: every row sees a prefix */
        {1, 2, 2, 203, 113, 64, F16, 1, -1, -1, NULL, 0.0f, 1},   /* causal, Sq > Sk: 90 rows see nothing */
        {1, 1, 1, 1000, 63, 40, BF16, 1, -1, -1, NULL, 0.0f, 1},  /* causal: 937 rows see nothing */
        {2, 8, 1, 63, 1000, 128, F32, 1, -1, -1, NULL, 0.0f, 0},  /* MQA 8:1, causal, no LSE */
        {3, 4, 2, 64, 64, 64, BF16, 0, 16, 0, NULL, 0.0f, 1},     /* GQA 2:1, batch 3, sliding window (16,0) */
        {1, 2, 2, 113, 203, 40, F16, 0, 8, 8, NULL, 0.0f, 1},     /* symmetric window */
        {1, 2, 2, 203, 113, 128, F32, 0, 0, -1, NULL, 0.0f, 1},   /* keys from the diagonal on; late rows: none */
        {2, 2, 1, 65, 17, 64, F16, 1, 8, 8, NULL, 0.0f, 1},       /* causal + window: right side clamps to 0 */
        {1, 3, 3, 113, 203, 80, BF16, 0, -1, 0, NULL, 0.0f, 1},   /* window (-1,0) == causal */
        {2, 2, 2, 17, 65, 8, F32, 0, 0, 0, NULL, 0.0f, 1},        /* only the diagonal key */
        {1, 4, 4, 1, 239, 96, F16, 1, -1, -1, NULL, 0.0f, 1},     /* causal, one query sees every key */
        {1, 2, 2, 239, 1, 64, F32, 1, -1, -1, NULL, 0.0f, 1},     /* causal, one key: only the last row sees it */
        {1, 1, 1, 1000, 1000, 64, F16, 0, 3, 5, NULL, 0.0f, 1},   /* narrow window, long: most blocks skipped */
        {1, 1, 1, 1000, 1000, 128, BF16, 1, 100, -1, NULL, 0.0f, 1}, /* causal + window (100,-1) */
        {1, 8, 1, 113, 203, 59, F32, 1, -1, -1, NULL, 0.5f, 1},   /* GQA 8:1, causal, scale given, d % 4 = 3 */
        {2, 2, 2, 203, 113, 59, BF16, 1, -1, -1, NULL, 0.0f, 0},  /* masked rows without LSE: still exactly 0 */
        {1, 2, 2, 64, 64, 40, F32, 1, 0, -1, NULL, 0.0f, 1},      /* causal + window (0,-1): diagonal only */
        {1, 2, 1, 65, 17, 96, F16, 0, 5000, 5000, NULL, 0.0f, 1}, /* windows wider than the sequences */
        {1, 1, 1, 113, 17, 256, F32, 0, 16, 0, NULL, 0.0f, 1},    /* window (16,0), Sq > Sk: 96 rows see nothing */
        {2, 2, 2, 17, 65, 1, BF16, 0, 2, -1, NULL, 0.0f, 1},      /* left window only, d = 1 */
        {1, 2, 2, 63, 64, 80, F32, 0, -1, 3, NULL, 0.0f, 1},      /* right window only */
        {1, 8, 1, 1000, 63, 8, F16, 0, -1, -1, NULL, 2.0f, 1},    /* MQA 8:1, long Sq, scale 2 */
        {1, 4, 2, 65, 1000, 128, BF16, 1, 30, 0, NULL, 0.0f, 1},  /* GQA + causal window, Sq < Sk */
        {1, 2, 2, 64, 65, 256, BF16, 1, -1, -1, NULL, 0.0f, 1},   /* causal, off by one: Sk = Sq + 1 */
        /* causal, Sq >> Sk: most work-groups see no key (on the H200 late copies of Q reached the
         * O tile of such a work-group; one run of this shape finds it) */
        {4, 8, 8, 2048, 64, 64, F16, 1, -1, -1, NULL, 0.0f, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_case(ctx, "masks", i, &cases[i], i % 2);
    return 0;
}

/* q and o in ONE buffer at disjoint ranges: allowed, must work. */
static void shared_buffer_case(fa_cl_context *ctx, int idx)
{
    const tu_case c = {1, 2, 2, 65, 33, 64, F16, 1, -1, -1, "CCCH", 0.0f, 1};
    tu_problem p;
    char detail[1024] = "";
    if (tu_problem_init(&p, ctx, &c, 4242, 1) != 0) {
        report("layouts", idx, &c, API_ONESHOT, NULL, 0, "setup failed", 0);
        return;
    }
    const size_t es = tu_dtype_size(c.dtype), qe = p.t[0].elems, gap = 5, oe = p.t[3].elems;
    const size_t total = qe + gap + oe;
    unsigned char *img = (unsigned char *)malloc(total * es);
    memcpy(img, p.t[0].img, qe * es);
    for (size_t i = qe; i < total; i++)
        tu_store_bits(c.dtype, img, i, tu_sentinel_bits(c.dtype));
    cl_mem shared = tu_buffer(ctx, CL_MEM_READ_WRITE, total * es, img);
    fa_cl_attention_desc d = p.desc;
    d.o_offset = qe + gap + p.t[3].offset;
    fa_cl_status st = fa_cl_attention_forward(ctx, &d, shared, p.mem[1], p.mem[2], shared, p.lse_mem, 0, NULL, NULL);
    int ok = st == FA_CL_SUCCESS;
    if (!ok) {
        snprintf(detail, sizeof detail, "fa_cl_attention_forward: %s: %.300s", fa_cl_status_string(st),
                 fa_cl_last_error(ctx));
    } else {
        unsigned char *back = (unsigned char *)malloc(total * es);
        clFinish(fa_cl_context_queue(ctx));
        tu_read(ctx, shared, total * es, back);
        tu_problem_read(&p, ctx); /* lse; o's own buffer is unused and must stay poisoned */
        int q_same = memcmp(back, img, (qe + gap) * es) == 0;
        int o_own_untouched = 1;
        for (size_t i = 0; i < p.t[3].elems; i++)
            o_own_untouched = o_own_untouched && tu_load_bits(c.dtype, p.t[3].img, i) == tu_sentinel_bits(c.dtype);
        memcpy(p.t[3].img, back + (qe + gap) * es, oe * es);
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        ok = r.ok && q_same && o_own_untouched;
        if (!q_same)
            strncat(detail, "; q (or the gap after it) changed in the shared buffer", sizeof detail - strlen(detail) - 1);
        free(back);
    }
    char cs[200];
    tu_case_format(&c, cs, sizeof cs);
    tu_expect(&tally, ok, "layouts #%d q and o in one buffer (o at element %zu, after q's %zu): %s: %s", idx,
              (size_t)d.o_offset, qe, cs, detail);
    clReleaseMemObject(shared);
    free(img);
    tu_problem_free(&p);
}

/* 70 one-shot calls that differ only in o_offset: more descriptors than the plan cache holds (64);
 * each must be correct, and the first again after it was evicted. */
static void plan_cache_case(fa_cl_context *ctx, int idx)
{
    const tu_case c = {1, 2, 2, 17, 17, 8, F32, 0, -1, -1, "CCCH", 0.0f, 0};
    enum { N = 70 };
    tu_problem p;
    if (tu_problem_init(&p, ctx, &c, 777, 1) != 0) {
        report("layouts", idx, &c, API_ONESHOT, NULL, 0, "setup failed", 0);
        return;
    }
    const size_t es = 4, oe = p.t[3].elems, total = oe + N;
    unsigned char *img = (unsigned char *)malloc(total * es);
    cl_mem big = tu_buffer(ctx, CL_MEM_READ_WRITE, total * es, NULL);
    int bad = 0;
    char first[600] = "";
    for (int k = 0; k <= N; k++) {
        const size_t off = (size_t)(k == N ? 0 : k);
        for (size_t i = 0; i < total; i++)
            tu_store_bits(F32, img, i, tu_sentinel_bits(F32));
        tu_write(ctx, big, total * es, img);
        fa_cl_attention_desc d = p.desc;
        d.o_offset = off;
        fa_cl_status st = fa_cl_attention_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], big, NULL, 0, NULL, NULL);
        if (st != FA_CL_SUCCESS) {
            if (!bad++)
                snprintf(first, sizeof first, "o_offset %zu: %s: %.300s", off, fa_cl_status_string(st),
                         fa_cl_last_error(ctx));
            continue;
        }
        tu_read(ctx, big, total * es, img);
        int outside = 1;
        for (size_t i = 0; i < total; i++)
            if ((i < off || i >= off + oe) && tu_load_bits(F32, img, i) != tu_sentinel_bits(F32))
                outside = 0;
        memcpy(p.t[3].img, img + off * es, oe * es);
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        if (!r.ok || !outside) {
            if (!bad++)
                snprintf(first, sizeof first, "o_offset %zu: %s%s", off, outside ? "" : "wrote outside its view; ",
                         r.first);
        }
    }
    char cs[200];
    tu_case_format(&c, cs, sizeof cs);
    tu_expect(&tally, bad == 0, "layouts #%d plan cache: %d one-shot calls with o_offset 0..%d then 0 again (%s): "
              "%d wrong%s%s", idx, N + 1, N - 1, cs, bad, bad ? "; first: " : "", first);
    clReleaseMemObject(big);
    free(img);
    tu_problem_free(&p);
}

static int subset_layouts(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const tu_case cases[] = {
        {2, 4, 2, 113, 203, 64, F16, 1, -1, -1, "SSSS", 0.0f, 1},  /* FlashAttention's [B,S,H,D] */
        {2, 2, 1, 65, 17, 40, F32, 0, -1, -1, "PPPP", 0.0f, 1},    /* padded, offsets, GQA */
        {1, 8, 1, 17, 65, 128, BF16, 1, -1, -1, "QQQQ", 0.0f, 1},  /* padded BSHD, MQA */
        {1, 2, 2, 64, 64, 80, F32, 0, 16, 0, "HSPQ", 0.0f, 1},     /* every tensor its own layout */
        {3, 2, 2, 63, 63, 96, F16, 0, -1, -1, "BBBP", 0.0f, 1},    /* q, k, v broadcast over the batch */
        {2, 2, 2, 113, 203, 1, F32, 0, -1, -1, "CPSQ", 0.0f, 1},   /* d = 1 with strides and offsets */
        {1, 2, 1, 17, 113, 256, BF16, 1, -1, -1, "PQSP", 0.0f, 1}, /* d = 256 padded */
        {1, 2, 2, 1, 239, 8, BF16, 0, -1, -1, "SCCS", 0.0f, 1},
        {1, 1, 1, 1000, 63, 64, F16, 0, -1, -1, "PPPP", 0.0f, 1},  /* odd element offsets: unaligned vector loads */
        {2, 2, 2, 203, 113, 59, F16, 1, -1, -1, "QPHS", 0.0f, 1},  /* d % 4 = 3 with strides */
        {1, 4, 4, 64, 1, 128, F32, 0, -1, -1, "SQPC", 0.0f, 1},
        {2, 4, 1, 65, 65, 64, BF16, 0, 8, 8, "SBBQ", 0.5f, 1},     /* MQA with K/V broadcast over the batch */
        /* head_dim % 8 != 0 with more than 64 rows: tensor-core plans copy q, k, v into zero-padded
         * rows first (pad-rows), from every layout */
        {2, 4, 2, 130, 300, 111, BF16, 0, -1, -1, "PPPP", 0.0f, 1},
        {2, 2, 2, 100, 100, 13, F16, 0, 30, 5, "BBBP", 0.0f, 1},
    };
    int i = 0;
    for (; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_case(ctx, "layouts", i, &cases[i], i % 2);
    shared_buffer_case(ctx, i++);
    plan_cache_case(ctx, i++);
    return 0;
}

static int subset_tiles(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const tu_case cases[] = {
        {1, 2, 1, 113, 203, 40, F16, 1, -1, -1, NULL, 0.0f, 1},
        {2, 2, 2, 203, 113, 40, F16, 0, 8, 8, "SSSS", 0.0f, 1},
        {1, 1, 1, 1, 239, 40, BF16, 0, -1, -1, NULL, 0.0f, 1},
        {1, 4, 2, 65, 17, 64, F32, 1, -1, -1, "PPPP", 0.0f, 1},
        {2, 2, 2, 64, 64, 64, F32, 0, 16, 0, NULL, 0.0f, 1},
        {1, 2, 2, 17, 65, 64, F32, 0, -1, -1, "QQQQ", 0.0f, 0},
        {1, 1, 1, 63, 1000, 64, F32, 1, 0, -1, NULL, 0.0f, 1},
        {1, 2, 1, 113, 203, 128, BF16, 0, -1, -1, NULL, 0.0f, 1},
        {1, 1, 1, 203, 113, 128, BF16, 1, -1, -1, NULL, 0.0f, 1},
        {1, 2, 2, 1000, 63, 128, F32, 0, 30, 2, NULL, 0.0f, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_case(ctx, "tiles", i, &cases[i], i % 2);
    return 0;
}

/* head_dim 257..512 (Gemma-class models): every dtype, causal and not, tails (Sq, Sk not multiples
 * of any tile), GQA/MQA, a window, strided layouts and a decoding row. On PoCL the portable kernel
 * takes them with tiles down to 32x32 at 512 (8x8 under a 32 KiB budget); no tensor-core kernel may. */
static int subset_wide(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    const tu_case cases[] = {
        /* B  Hq Hkv Sq    Sk   D    dtype causal wl  wr  layout scale lse */
        {1, 2, 2, 113, 203, 512, F16, 0, -1, -1, NULL, 0.0f, 1},   /* tails both ways */
        {1, 4, 2, 203, 113, 512, BF16, 1, -1, -1, NULL, 0.0f, 1},  /* causal, Sq > Sk: 90 rows see nothing; GQA 2:1 */
        {2, 2, 1, 65, 130, 512, F32, 1, -1, -1, NULL, 0.0f, 1},    /* causal, Sq < Sk, MQA, batch 2 */
        {1, 4, 1, 1, 300, 512, F16, 1, -1, -1, NULL, 0.0f, 1},     /* decoding: one row sees every key, MQA 4:1 */
        {1, 2, 2, 100, 77, 320, F16, 1, -1, -1, NULL, 0.0f, 1},
        {1, 2, 2, 77, 100, 320, F32, 0, -1, -1, "SSSS", 1.0f, 1},  /* BSHD, a sharper softmax (18x) */
        {1, 3, 1, 77, 150, 384, BF16, 0, 16, 8, NULL, 0.0f, 1},    /* window (16,8), GQA 3:1 */
        {1, 2, 2, 63, 97, 384, F32, 1, -1, -1, NULL, 0.0f, 0},     /* causal, no LSE */
        {1, 2, 1, 90, 70, 457, F16, 1, -1, -1, "PPPP", 0.0f, 1},   /* d % 4 = 1, padded strides with offsets */
        {1, 2, 2, 41, 200, 457, BF16, 0, -1, -1, "QPHS", 0.0f, 1}, /* every tensor its own layout */
        {1, 1, 1, 50, 50, 457, F32, 0, -1, -1, NULL, 0.5f, 1},
        {1, 2, 2, 129, 131, 300, BF16, 1, -1, -1, NULL, 0.0f, 1},
        {1, 1, 1, 700, 700, 512, BF16, 1, -1, -1, NULL, 0.0f, 1},  /* many blocks both ways */
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_case(ctx, "wide", i, &cases[i], i % 2);
    return 0;
}

/* ---- NaN propagation -------------------------------------------------------------------------- */

/* One NaN at tensor t (0 q, 1 k, 2 v), logical (b, h, s, d): rows that see it (all of them for q's
 * own row) must be NaN, every other row and head exactly as without it. */
static void nan_case(fa_cl_context *ctx, int idx, const tu_case *c, int t, int64_t b, int64_t h, int64_t s,
                     int64_t d, const char *what)
{
    tu_problem p;
    char detail[1024] = "", why[512] = "";
    if (tu_problem_init(&p, ctx, c, 99 + (uint64_t)idx, 0) != 0) {
        report("nan", idx, c, API_PLAN, NULL, 0, "setup failed", 0);
        return;
    }
    tu_tensor *tt = &p.t[t];
    const size_t logical = (size_t)(((b * tt->dim[1] + h) * tt->dim[2] + s) * tt->dim[3] + d);
    p.x[t][logical] = NAN;
    tu_store_bits(c->dtype, tt->img, tu_tensor_index(tt, b, h, s, d), tu_nan_bits(c->dtype));
    tu_write(ctx, p.mem[t], tu_tensor_bytes(tt), tt->img);
    const size_t no = (size_t)(c->B * c->Hq * c->Sq * c->D);
    p.ref_o = (double *)malloc(no * sizeof(double));
    p.ref_lse = (double *)malloc(p.lse_elems * sizeof(double));
    tu_attention_f64(&p.c, p.x[0], p.x[1], p.x[2], p.ref_o, p.ref_lse);
    size_t nan_rows = 0;
    for (size_t i = 0; i < p.lse_elems; i++) {
        int any = isnan(p.ref_lse[i]);
        for (int64_t e = 0; e < c->D; e++)
            any = any || isnan(p.ref_o[i * (size_t)c->D + (size_t)e]);
        nan_rows += (size_t)any;
    }
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    int ok = run_fused(ctx, &p, API_PLAN, &info, why, sizeof why) == 0 && tu_problem_read(&p, ctx) == 0;
    if (ok && t == 2 && info.kernel && fa_cl__kernel_by_name(info.kernel) &&
        fa_cl__family_vendor(fa_cl__kernel_by_name(info.kernel))) {
        /* The vendor families (tensor cores, matrix units) multiply whole 16-row tiles (intel-xmx 8-row ones) of P by V there, where
         * 0 * NaN = NaN: rows of the same head that do not see the key may get NaN in that column
         * (as in FlashAttention-2). Documented; everything else must hold as for the portable kernels. */
        const tu_tensor *ot = &p.t[3];
        const int64_t group = c->Hq / c->Hkv;
        for (int64_t hq = h * group; hq < (h + 1) * group; hq++)
            for (int64_t sq = 0; sq < c->Sq; sq++) {
                size_t n = (size_t)(((b * c->Hq + hq) * c->Sq + sq) * c->D + d);
                if (isnan(tu_load(c->dtype, ot->img, tu_tensor_index(ot, b, hq, sq, d))))
                    p.ref_o[n] = NAN;
            }
    }
    if (ok) {
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        ok = r.ok;
    } else {
        snprintf(detail, sizeof detail, "%s", why);
    }
    char cs[256];
    tu_case_format(c, cs, sizeof cs);
    tu_expect(&tally, ok, "nan #%d %s: NaN in %s[%lld,%lld,%lld,%lld] (%s; %zu of %zu rows must be NaN) tiles %dx%d: %s",
              idx, cs, t == 0 ? "q" : t == 1 ? "k" : "v", (long long)b, (long long)h, (long long)s, (long long)d, what,
              nan_rows, p.lse_elems, info.block_q, info.block_kv, detail);
    tu_problem_free(&p);
}

static const tu_case nan_causal = {1, 2, 2, 64, 64, 64, F32, 1, -1, -1, NULL, 0.0f, 1};
static const tu_case nan_window = {1, 2, 1, 113, 203, 40, F16, 0, 8, 8, NULL, 0.0f, 1};

static int subset_nan(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    nan_case(ctx, 0, &nan_causal, 0, 0, 1, 20, 7, "a query row: only that row");
    nan_case(ctx, 1, &nan_causal, 1, 0, 0, 40, 3, "a key: rows 40.. of head 0 see it");
    nan_case(ctx, 2, &nan_window, 1, 0, 0, 150, 0, "a key inside some windows (GQA: both heads)");
    return 0;
}

/* "NaN/Inf in the inputs ... never affect other rows": a NaN in V at key j must not reach rows
 * that do not see key j (their weight for it is 0, and 0 * NaN must not be computed). */
static int subset_nan_v(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    nan_case(ctx, 3, &nan_causal, 2, 0, 0, 40, 3, "a value: rows 40.. of head 0 see it; rows < 40 must not change");
    nan_case(ctx, 4, &nan_window, 2, 0, 0, 150, 5, "a value inside some windows only");
    return 0;
}

static int subset_all(fa_cl_context *ctx, int argc, char **argv)
{
    subset_shapes(ctx, argc, argv);
    subset_masks(ctx, argc, argv);
    subset_layouts(ctx, argc, argv);
    subset_tiles(ctx, argc, argv);
    subset_wide(ctx, argc, argv);
    subset_nan(ctx, argc, argv);
    return subset_nan_v(ctx, argc, argv);
}

/* The context of every subset (none where the emulation would be redundant: tu_context skips), its
 * planner limits checked first (read_limits). */
static int open_forward(fa_cl_context **out)
{
    int rc = tu_context(out);
    if (rc != 0)
        return rc;
    fa_cl_context *ctx = *out;
    read_limits(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"all", subset_all},     {"shapes", subset_shapes}, {"masks", subset_masks}, {"layouts", subset_layouts},
        {"tiles", subset_tiles}, {"wide", subset_wide},     {"nan", subset_nan},
        {"nan_v", subset_nan_v},
    };
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), open_forward, TU_TIMED);
}
