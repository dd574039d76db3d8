/* SPDX-License-Identifier: Apache-2.0 */
/* The tile planner: the local-memory budget, then the walk over the registry's families of the
 * plan's operation: each is tried where the device meets its needs and it takes the request (data:
 * src/kernels/family.h), the first whose rules give tiles wins (or the one FA_CL_KERNEL_VARIANT
 * forces); then long rows' chunks of keys. */
#include "plan/planner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* What the tiles may use: local memory (a per-core cache share on CPUs), less FA_CL_LOCAL_MEM_BYTES
 * and what a compiled kernel reported using beside its tiles. */
size_t fa_cl__local_budget(const fa_cl__limits *lim, const char **source)
{
    size_t budget = lim->local_mem_size;
    *source = lim->local_mem_source ? lim->local_mem_source : "device local memory";
    if (lim->local_mem_is_global) {
        size_t cache = lim->cache_bytes ? lim->cache_bytes : FA_CL_CPU_CACHE_BUDGET;
        if (cache < budget || budget == 0) {
            budget = cache;
            *source = "cache (local memory is global)";
        }
    }
    if (lim->local_mem_cap && lim->local_mem_cap < budget) {
        budget = lim->local_mem_cap;
        *source = "FA_CL_LOCAL_MEM_BYTES";
    }
    return budget > lim->kernel_other_local ? budget - lim->kernel_other_local : 0;
}

/* The families of op that take feature (or dtype bit / mask bit: which = 0, 1, 2), for messages. */
static void families_taking(fa_cl__operation op, int which, unsigned bit, char *msg, size_t n)
{
    int k = 0;
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        const unsigned have = which == 0 ? f->takes.features : which == 1 ? f->takes.dtypes : f->takes.masks;
        if (f->op == op && (have & bit))
            fa_cl__append(msg, n, "%s%s", k++ ? ", " : ": ", f->name);
    }
    fa_cl__append(msg, n, k ? (k > 1 ? " take it" : " takes it") : ": no family takes it");
}

/* Whether f takes req (data: its fa_cl__takes); else why, in why. */
static int takes(const fa_cl__kernel_family *f, const fa_cl__tile_request *req, char *why, size_t n)
{
    const fa_cl__takes *t = &f->takes;
    static const char *const dtype_names[3] = {"f32", "f16", "bf16"};
    why[0] = '\0';
    if (!(t->dtypes & (1u << req->dtype))) {
        fa_cl__append(why, n, "takes no %s data", (unsigned)req->dtype < 3 ? dtype_names[req->dtype] : "such");
        families_taking(f->op, 1, 1u << req->dtype, why, n);
        return 0;
    }
    const unsigned missing = req->features & ~t->features;
    if (missing) {
        const unsigned bit = missing & (0u - missing);
        fa_cl__append(why, n, "takes no %s", fa_cl__feature_name(bit));
        families_taking(f->op, 0, bit, why, n);
        return 0;
    }
    if (req->mask != FA_CL_MASK_NONE && !(t->masks & (1u << req->mask))) {
        fa_cl__append(why, n, "takes no attention mask of %s entries (desc.mask)",
               fa_cl__mask_entry_size(req->mask) == 1 ? "bool" : fa_cl__mask_entry_size(req->mask) == 4 ? "f32"
               : req->mask == FA_CL_MASK_BF16 ? "bf16" : "f16");
        families_taking(f->op, 2, 1u << req->mask, why, n);
        return 0;
    }
    if (req->head_dim > t->max_head_dim) {
        fa_cl__append(why, n, "takes head_dim up to %d, not head_dim %d", t->max_head_dim, req->head_dim);
        return 0;
    }
    return 1;
}

/* Whether lim's device meets f's needs (data: its fa_cl__needs), emulated where the vendor code may
 * be (FA_CL_TUNE emulate=1); else why, in why. forced: FA_CL_KERNEL_VARIANT names f (a preference
 * for GPUs does not count then). */
/* target ("gfx90a", or with ROCm's feature suffix "gfx90a:sramecc+:xnack-") is a word of list */
static int target_listed(const char *list, const char *target)
{
    const size_t n = strcspn(target, ":");
    for (const char *p = list; *p; p += strcspn(p, " "), p += strspn(p, " "))
        if (strcspn(p, " ") == n && strncmp(p, target, n) == 0)
            return 1;
    return 0;
}

static int device_meets(const fa_cl__limits *lim, const fa_cl__kernel_family *f, int forced, char *why, size_t n)
{
    const fa_cl__needs *nd = &f->needs;
    const fa_cl__device_traits *d = &lim->dev;
    why[0] = '\0';
    if (fa_cl__tune_value(lim, f, 0) == 0) {
        fa_cl__append(why, n, "off (FA_CL_TUNE %s:enabled=0)", f->name);
        return 0;
    }
    if (lim->families_off & ((uint64_t)1 << f->id)) {
        fa_cl__append(why, n, "off: its program did not build on this context");
        return 0;
    }
    if (nd->device == FA_CL_NEEDS_GPU && !d->is_gpu) {
        fa_cl__append(why, n, "needs a GPU");
        return 0;
    }
    if (nd->device == FA_CL_PREFERS_GPU && !d->is_gpu && !forced) {
        fa_cl__append(why, n, "is for GPUs (FA_CL_KERNEL_VARIANT takes it anywhere)");
        return 0;
    }
    if (nd->device == FA_CL_PREFERS_CPU && !d->is_cpu && !forced) {
        fa_cl__append(why, n, "is for CPUs (FA_CL_KERNEL_VARIANT takes it anywhere)");
        return 0;
    }
    if (!fa_cl__family_vendor(f))
        return 1;
    if (lim->vendor_path_off) {
        fa_cl__append(why, n, "off (FA_CL_VENDOR_PATH=0: no vendor kernels)");
        return 0;
    }
    if (fa_cl__family_emulated(lim, f)) /* tests: the vendor code emulated, on any device */
        return 1;
    const int arch = d->arch_major * 10 + d->arch_minor;
    const int ok = d->is_gpu && d->vendor == nd->vendor && (!nd->arch_min || arch >= nd->arch_min) &&
                   (!nd->arch_max || arch <= nd->arch_max) &&
                   (!nd->extension || (d->extensions && fa_cl__has_extension(d->extensions, nd->extension))) &&
                   (!nd->subgroup || (d->min_subgroup && d->min_subgroup <= nd->subgroup)) &&
                   (!nd->targets || (d->target && target_listed(nd->targets, d->target)));
    if (ok)
        return 1;
    fa_cl__append(why, n, "needs an %s GPU", fa_cl__vendor_name(nd->vendor));
    if (nd->arch_min && nd->arch_min == nd->arch_max)
        fa_cl__append(why, n, " of architecture %d.%d", nd->arch_min / 10, nd->arch_min % 10);
    else if (nd->arch_min)
        fa_cl__append(why, n, " of architecture %d.%d or later", nd->arch_min / 10, nd->arch_min % 10);
    if (nd->extension)
        fa_cl__append(why, n, " with %s", nd->extension);
    if (nd->subgroup)
        fa_cl__append(why, n, " with sub-groups of %d", nd->subgroup);
    if (nd->targets)
        fa_cl__append(why, n, " that is one of %s (this one: %s)", nd->targets, d->target ? d->target : "not known");
    fa_cl__append(why, n, " (this device: %s%s, architecture %d.%d)", d->is_gpu ? "a GPU of " : "not a GPU; ",
           fa_cl__vendor_name(d->vendor), d->arch_major, d->arch_minor);
    return 0;
}

int fa_cl__family_available(const fa_cl__limits *lim, const fa_cl__kernel_family *f, char *why, size_t n)
{
    return device_meets(lim, f, 0, why, n);
}

/* The family FA_CL_KERNEL_VARIANT forces for a plan of op, or NULL: a family of op itself; for a
 * backward plan a forward family that needs no vendor forces the backward's family that needs none
 * (the last of the registry); any other name forces nothing here. */
static const fa_cl__kernel_family *forced_family(const fa_cl__limits *lim, fa_cl__operation op)
{
    const fa_cl__kernel_family *f = lim->forced_variant ? fa_cl__kernel_by_id((fa_cl__kernel_id)lim->forced_variant)
                                                        : NULL;
    if (!f || f->op == op)
        return f;
    const fa_cl__kernel_family *portable = NULL;
    for (int i = 0; op == FA_CL_OP_BACKWARD && f->op == FA_CL_OP_FORWARD && !fa_cl__family_vendor(f) &&
                    i < fa_cl__kernel_count();
         i++)
        if (fa_cl__kernel_at(i)->op == op && !fa_cl__family_vendor(fa_cl__kernel_at(i)))
            portable = fa_cl__kernel_at(i);
    return portable;
}

fa_cl_status fa_cl__plan_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    memset(out, 0, sizeof *out);
    if (req->head_dim <= 0 || req->head_dim > FA_CL_MAX_HEAD_DIM) {
        snprintf(msg, msg_size, "head_dim %d is outside 1..%d (the largest any kernel takes)", req->head_dim,
                 FA_CL_MAX_HEAD_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const fa_cl__operation op = req->op ? req->op : FA_CL_OP_FORWARD;
    const fa_cl__kernel_family *forced = forced_family(lim, op);
    fa_cl_status st = FA_CL_ERROR_UNSUPPORTED;
    char why[400] = "", skipped[600] = "";
    int tried = 0;
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        if (f->op != op || (forced && f != forced))
            continue; /* a plan of op: other operations' kernels are helper launches */
        if (!device_meets(lim, f, forced != NULL, why, sizeof why) || !takes(f, req, why, sizeof why)) {
            if (forced)
                break;
            fa_cl__append(skipped, sizeof skipped, "%s%s %s", skipped[0] ? "; " : "", f->name, why);
            continue;
        }
        memset(out, 0, sizeof *out);
        out->head_dim_padded = (req->head_dim + FA_CL_VEC - 1) / FA_CL_VEC * FA_CL_VEC;
        out->elem_bytes = 4; /* the portable kernels hold fp32 in local memory; the tensor-core ones set theirs */
        out->local_mem_budget = fa_cl__local_budget(lim, &out->budget_source);
        out->splits = 1;
        tried = 1;
        st = f->plan(lim, req, out, why, sizeof why);
        if (st == FA_CL_SUCCESS || st == FA_CL_ERROR_INVALID_ARGUMENT || forced)
            break;
    }
    if (st != FA_CL_SUCCESS) {
        if (forced && st == FA_CL_ERROR_UNSUPPORTED)
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=%s%s%s", forced->name, tried ? ": " : " ", why);
        else if (tried)
            snprintf(msg, msg_size, "%s", why);
        else /* every family skipped: why each was */
            snprintf(msg, msg_size, "no kernel family takes this plan: %s", skipped);
        return st;
    }
    /* long rows: chunks of keys, one launch each (cl/fa_forward_common.cl) */
    const int64_t keys = req->row_keys > 0 ? req->row_keys : req->seqlen_k;
    const int most = fa_cl__chunk_keys(req->o_f32 ? FA_CL_F32 : req->dtype);
    const int want = lim->chunk_keys > 0 ? lim->chunk_keys : keys > most ? most : 0;
    if (want > 0 && op == FA_CL_OP_FORWARD) /* whole blocks: a launch's blocks never straddle two chunks */
        out->chunk_keys = want > out->block_kv ? want / out->block_kv * out->block_kv : out->block_kv;
    return FA_CL_SUCCESS;
}

int fa_cl__gqa_pack(int64_t group, int64_t seqlen_q, int env)
{
    if (group <= 1 || env < 0 || group * seqlen_q > INT32_MAX / 2)
        return 1;
    return env > 0 || seqlen_q < FA_CL_GQA_PACK_ROWS ? (int)group : 1;
}

int64_t fa_cl__split_count(const fa_cl__tiles *t, int64_t batch, int64_t head_columns, int64_t column_rows,
                          int64_t row_keys, int64_t seqlen_k, int slots, int forced)
{
    const int64_t blocks = (column_rows + t->block_q - 1) / t->block_q * batch * head_columns;
    const int64_t kv_blocks = (row_keys + t->block_kv - 1) / t->block_kv;
    int64_t n = forced > 0 ? forced : fa_cl__splits_heuristic(blocks, slots, kv_blocks);
    const int64_t chunks = t->chunk_keys > 0 ? (seqlen_k + t->chunk_keys - 1) / t->chunk_keys : 1;
    return n > 1 && chunks > n ? chunks : n; /* long rows: chunks of at most t->chunk_keys keys */
}

int fa_cl__splits_heuristic(int64_t blocks, int slots, int64_t kv_blocks)
{
    if (blocks <= 0 || slots <= 0 || (double)blocks >= 0.8 * slots)
        return 1;
    int64_t most = kv_blocks < slots ? kv_blocks : slots;
    if (most > 128)
        most = 128;
    if (most < 1)
        return 1;
    double eff[129], best = 0.0;
    for (int64_t n = 1; n <= most; n++) {
        const double waves = (double)(blocks * n) / slots;
        eff[n] = waves / ceil(waves);
        if (eff[n] > best)
            best = eff[n];
    }
    for (int64_t n = 1; n <= most; n++) {
        /* a count that gives each chunk as many key blocks as one fewer does is no better */
        const int same = n > 1 && (kv_blocks + n - 1) / n == (kv_blocks + n - 2) / (n - 1);
        if (!same && eff[n] >= 0.85 * best)
            return (int)n;
    }
    return 1;
}
