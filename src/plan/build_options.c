/* SPDX-License-Identifier: Apache-2.0 */
/* Build options of the planned kernels: what the planner chose, as -D options (pure functions, so
 * that the library and the offline checks, fa_cl_info --emit, pass the compiler the same thing). */
#include "plan/planner.h"

#include <stdio.h>

int fa_cl__kernel_files(fa_cl__kernel_id id, const char *const **files)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(id);
    *files = f ? f->files : NULL;
    return f ? f->nfiles : 0;
}

int fa_cl__tiles_serving(const fa_cl__tiles *t)
{
    return t->splits > 1 || t->paged || t->seqlens || t->packed || t->varlen_q || t->varlen_k || t->append_rows > 0;
}

int fa_cl__tiles_mods(const fa_cl__tiles *t)
{
    return t->softcap || t->alibi || t->sinks;
}

/* Append what fmt gives at out + *len; -1 when it does not fit. */
#define APPEND(call)                                                                                      \
    do {                                                                                                  \
        int k_ = (call);                                                                                  \
        if (k_ < 0 || (size_t)k_ >= n - (size_t)len)                                                      \
            return -1;                                                                                    \
        len += k_;                                                                                        \
    } while (0)

int fa_cl__build_options(const fa_cl__tiles *t, fa_cl_dtype dtype, int head_dim, int is_gpu, char *out, size_t n)
{
    const fa_cl__kernel_family *f = fa_cl__kernel_by_id(t->variant);
    if (!f || n == 0)
        return -1;
    int len = 0;
    APPEND(snprintf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d -DD_PAD=%d -DBLOCK_Q=%d -DBLOCK_KV=%d", (int)dtype, head_dim,
                    t->head_dim_padded, t->block_q, t->block_kv));
    APPEND(f->options(t, out + len, n - (size_t)len)); /* the family's own */
    if (t->head_dim_v > 0)
        APPEND(snprintf(out + len, n - (size_t)len, " -DHEAD_DIM_V=%d", t->head_dim_v));
    if (t->chunk_keys > 0)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_KV_CHUNKED"));
    if (fa_cl__tiles_serving(t))
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_SERVING"));
    if (t->splits > 1)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_SPLIT"));
    if (t->paged > 0)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_PAGED -DFA_PAGE_SIZE=%d", t->paged));
    if (t->seqlens)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_SEQLENS"));
    if (t->packed)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_PACK"));
    if (t->varlen_q)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_VARLEN_Q"));
    if (t->varlen_k)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_VARLEN_K"));
    if (t->append_rows > 0)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_APPEND_ROWS=%d", t->append_rows));
    if (fa_cl__tiles_mods(t))
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_MODS%s%s%s", t->softcap ? " -DFA_SOFTCAP" : "",
                        t->alibi ? " -DFA_ALIBI" : "", t->sinks ? " -DFA_SINKS" : ""));
    static const char tensor[4] = {'Q', 'K', 'V', 'O'};
    for (int i = 0; i < 4; i++)
        if (t->types[i])
            APPEND(snprintf(out + len, n - (size_t)len, " -DFA_%c_DTYPE=%d", tensor[i], t->types[i] - 1));
    for (int i = 0; i < 2; i++)
        if (t->descale[i])
            APPEND(snprintf(out + len, n - (size_t)len, " -DFA_%c_DESCALE=%d", tensor[1 + i], t->descale[i]));
    if (t->mask)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_MASK=%d", t->mask));
    if (t->tree)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_TREE"));
    if (f->late_options)
        APPEND(f->late_options(t, out + len, n - (size_t)len)); /* the family's own, on the mask's */
    if (t->persistent)
        APPEND(snprintf(out + len, n - (size_t)len, " -DFA_PERSISTENT"));
    /* FA_UNROLL unrolls the loops over head_dim so that a work-item's private arrays stay in
     * registers. Beyond the family's limit they cannot, and unrolling costs speed and compile time:
     * on the H200 NVIDIA's compiler took over a minute for one such program, and the tiled kernel ran
     * d = 512 slower unrolled (commit 4ced9f9). */
    if (is_gpu)
        APPEND(snprintf(out + len, n - (size_t)len, "%s -DFA_NATIVE_EXP -cl-mad-enable",
                        t->head_dim_padded <= f->unroll_max_dim ? " -DFA_UNROLL" : ""));
    return len;
}
