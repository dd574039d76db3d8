/* SPDX-License-Identifier: Apache-2.0 */
/* intel-xmx: FlashAttention-2 on Intel's matrix engines (XMX, the DPAS instruction) through
 * cl_intel_subgroup_matrix_multiply_accumulate, f16/bf16 storage (cl/fa_forward_intel_xmx.cl): what
 * it takes, its tuning keys, its rules. Sub-groups of 8 on Xe-HPG (DG2), 16 on Xe-HPC and Xe2. */
#include "kernels/intel_xmx.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_xmx.cl",
                                    "fa_forward_intel_xmx.cl"};

size_t fa_cl__xmx_local_bytes(int block_q, int block_kv, int dim_padded, int work_group, int emulated)
{
    const size_t qk_pitch = (size_t)dim_padded + 8, vt_pitch = (size_t)block_kv + 8;
    const size_t k_elems = (size_t)block_kv * qk_pitch, vt_elems = (size_t)dim_padded * vt_pitch;
    return 2 * (size_t)block_q * qk_pitch + 2 * (k_elems > vt_elems ? k_elems : vt_elems) +
           4 * (size_t)block_q * ((size_t)block_kv + 1) + 2 * (size_t)block_q * vt_pitch + 8 * (size_t)block_q +
           (emulated ? 32 * (size_t)work_group : 0);
}

/* Its tuning keys (FA_CL_TUNE=intel-xmx:key=value; docs/tuning.md). */
enum { KEY_ENABLED, KEY_SUBGROUP, KEY_EMULATE };
static const fa_cl__tune_name subgroup_names[] = {{"8", 8}, {"16", 16}, {NULL, 0}};
static const fa_cl__tune_key tune[] = {
    FA_CL_TUNE_ENABLED,
    {"subgroup", 0, 1, 0, subgroup_names,
     "the sub-group size its products are built for: the planner's is the device's narrowest (8 on Xe-HPG, 16 on "
     "Xe-HPC and Xe2; 16 where none is reported, as in emulation)", NULL},
    FA_CL_TUNE_EMULATE_REPLACING(NULL),
};

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const fa_cl__kernel_family *f = &fa_cl__kernel_intel_xmx;
    const int forced_here = lim->forced_variant == FA_CL_KERNEL_INTEL_XMX;
    const int emulated = fa_cl__family_emulated(lim, f);
    int sg = fa_cl__tune_value(lim, f, KEY_SUBGROUP);
    if (sg == 0)
        sg = lim->dev.min_subgroup == 8 || lim->dev.min_subgroup == 16 ? lim->dev.min_subgroup : 16;
    const int nc = FA_CL_XMX_SPAN / sg;
    const int dp = (int)round_up(req->head_dim, FA_CL_XMX_SPAN);
    const size_t budget = out->local_mem_budget;
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    int br, bc, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if (br % 8 || br > 256 || bc % FA_CL_XMX_SPAN || bc > 256 || lim->forced_rows > 0 || lim->forced_cols > 0) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for intel-xmx: B_r a multiple of 8 up to 256, B_c a multiple "
                     "of %d up to 256, no third or fourth field", br, bc, FA_CL_XMX_SPAN);
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    } else {
        /* 64 x 64 where the rows fill it; a smaller budget takes 32 keys, then fewer rows */
        br = (int)(round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, 8) < FA_CL_XMX_BLOCK_Q
                       ? round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, 8)
                       : FA_CL_XMX_BLOCK_Q);
        bc = req->seqlen_k > FA_CL_XMX_SPAN ? FA_CL_XMX_BLOCK_KV : FA_CL_XMX_SPAN;
        while ((fa_cl__xmx_local_bytes(br, bc, dp, br / 8 * FA_CL_XMX_SPAN, emulated) > budget ||
                (size_t)(br / 8 * FA_CL_XMX_SPAN) > max_wg) &&
               (bc > FA_CL_XMX_SPAN || br > 8)) {
            if (bc > FA_CL_XMX_SPAN)
                bc = FA_CL_XMX_SPAN;
            else
                br = br > 8 ? (br / 2 + 7) / 8 * 8 : 8;
        }
    }
    const int wg = br / 8 * FA_CL_XMX_SPAN;
    const size_t bytes = fa_cl__xmx_local_bytes(br, bc, dp, wg, emulated);
    if (bytes > budget || (size_t)wg > max_wg) {
        snprintf(msg, msg_size, "%s%dx%d: intel-xmx needs %zu bytes of local memory and %d work-items at head_dim %d; "
                 "the budget is %zu bytes (%s), the device takes %zu work-items", forced ? "FA_CL_TUNE tile=" : "", br,
                 bc, bytes, wg, req->head_dim, budget, out->budget_source, max_wg);
        return forced ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tiles_set(out, f, br, bc, 8, sg, wg, bytes);
    out->head_dim_padded = dp;
    out->elem_bytes = 2;
    out->item_rows = 1; /* a row owner a row: the long rows' state slots (cl/fa_fwd_chunks.cl) */
    out->forced = forced;
    out->emulated = emulated;
    FA_CL_XMX(out, SG) = sg;
    FA_CL_XMX(out, NC) = nc;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return fa_cl__options_printf(out, n, " -DFA_XMX_SG=%d -DXMX_NC=%d%s", FA_CL_XMX(t, SG), FA_CL_XMX(t, NC),
                                 t->emulated ? " -DFA_XMX_EMULATE" : "");
}

const fa_cl__kernel_family fa_cl__kernel_intel_xmx = {
    .name = "intel-xmx",
    .id = FA_CL_KERNEL_INTEL_XMX,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f16/bf16 on Intel XMX (cl_intel_subgroup_matrix_multiply_accumulate, sub-groups of 8 or 16)",
    /* the masks and modifiers are the row owners' (the portable units'), the serving features the
     * shared coordinates and loaders'; O lives in registers: head_dim up to FA_CL_XMX_MAX_DIM */
    .takes = {FA_CL_DTYPES_16, FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING | FA_CL_FEAT_TREE_MASK, FA_CL_MASKS_ALL,
              FA_CL_XMX_MAX_DIM},
    /* a vendor's family needs a GPU of it (src/plan/planner.c), or its emulate key */
    .needs = {.vendor = FA_CL_VENDOR_INTEL,
              .extension = "cl_intel_subgroup_matrix_multiply_accumulate", .subgroup = 16},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    /* no Intel device has run it yet: checked against the portable kernel at first use */
    .verify_first_use = 1,
};
