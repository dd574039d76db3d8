/* SPDX-License-Identifier: Apache-2.0 */
/* The score modifiers on the tensor-core forward's accumulators (nvidia-mma, nvidia-wgmma,
 * nvidia-tf32x3; include/fa_cl.h "Score modifiers"): softcap and ALiBi on a block's raw scores where
 * the mask's terms go, before the row maxima (FlashAttention-3 applies its softcap there), and the
 * sinks once a row's maximum and sum are final. The modifiers are the portable kernels' own
 * (cl/fa_fwd_masks.cl: FA_MODS_ROWS_, FA_MODS_INIT_, FA_MODS_SCORE_, fa_sink_join), applied in mma's
 * accumulator layout (cl/fa_nv_softmax.cl): a lane holds rows g and g + 8 of each m16 tile mt, its
 * row state i = 2 mt + r. Statement macros over the kernels' names, as cl/fa_nv_fwd_mask.cl's;
 * nothing at all in builds without the modifiers. */
#if defined(FA_SOFTCAP) || defined(FA_ALIBI)
/* the lane's rows' ALiBi slopes and diagonals, once a tile (one load a row, not one a block): mts
 * m16 tiles from row q0 + wrow */
#define FA_NV_MODS_ROWS(mts)                                                                         \
    FA_MODS_ROWS_(2 * (mts))                                                                         \
    FA_PRAGMA_UNROLL                                                                                 \
    for (int mt = 0; mt < (mts); mt++)                                                               \
        FA_PRAGMA_UNROLL                                                                             \
        for (int r = 0; r < 2; r++)                                                                  \
            FA_MODS_INIT_(2 * mt + r, q0 + wrow + 16 * mt + g + 8 * r);
/* one m16 tile's scores st[0 .. NT) of row states i (row g) and i + 1 (row g + 8), keys kb +
 * FA_S_KEY(nt, 2 t4) and the next (the kernel's order of a block's keys) */
#define FA_NV_MODS_TILE_KEYS(st, i, kb)                                                              \
    FA_PRAGMA_UNROLL                                                                                 \
    for (int nt = 0; nt < NT; nt++) {                                                                \
        const int key_ = (kb) + FA_S_KEY(nt, 2 * t4), key1_ = (kb) + FA_S_KEY(nt, 2 * t4 + 1);      \
        st[nt] = (float4)(FA_MODS_SCORE_(st[nt].x, i, key_), FA_MODS_SCORE_(st[nt].y, i, key1_),     \
                          FA_MODS_SCORE_(st[nt].z, (i) + 1, key_),                                   \
                          FA_MODS_SCORE_(st[nt].w, (i) + 1, key1_));                                 \
    }
#ifdef FA_ALIBI
/* Keys in order (FA_S_KEY_ORDERED: FA_S_KEY(nt, c) = 8 nt + c; the kernel's config says, after
 * this unit): the ALiBi distance |diag - key| as |fd - (8 nt + e)| with fd = diag - kb - 2 t4
 * converted once a row and tile, 8 nt + e a constant: a subtraction and a multiply-add (|.| an
 * operand modifier) a score, where an integer distance converted to float each time (the
 * conversion unit's rate is the exponential's) cost ALiBi a sixth of the plain row's speed. Exact
 * while distances are below 2^24. The softcap (the portable macros' order: softcap, then ALiBi) on
 * the raw score first. Keys in another order (q8_0's FA_Q8_FRAGS): each key's distance. */
#ifdef FA_SOFTCAP
#define FA_NV_SOFTCAP_(s) (softcap_out * fa_tanh((s) * softcap_in))
#else
#define FA_NV_SOFTCAP_(s) (s)
#endif
#define FA_NV_ALIBI_(s, i, fd, c) (FA_NV_SOFTCAP_(s) - mod_alibi[i] * fabs((fd) - (float)(c)))
#define FA_NV_MODS_TILE(st, i, kb)                                                                   \
    if (FA_S_KEY_ORDERED) {                                                                          \
        const float fd0_ = (float)(mod_diag[i] - (kb) - 2 * t4), fd1_ = (float)(mod_diag[(i) + 1] - (kb) - 2 * t4); \
        FA_PRAGMA_UNROLL                                                                             \
        for (int nt = 0; nt < NT; nt++)                                                              \
            st[nt] = (float4)(FA_NV_ALIBI_(st[nt].x, i, fd0_, 8 * nt), FA_NV_ALIBI_(st[nt].y, i, fd0_, 8 * nt + 1), \
                              FA_NV_ALIBI_(st[nt].z, (i) + 1, fd1_, 8 * nt),                         \
                              FA_NV_ALIBI_(st[nt].w, (i) + 1, fd1_, 8 * nt + 1));                    \
    } else {                                                                                         \
        FA_NV_MODS_TILE_KEYS(st, i, kb)                                                              \
    }
#else
#define FA_NV_MODS_TILE(st, i, kb) FA_NV_MODS_TILE_KEYS(st, i, kb)
#endif
/* the mainloops' block s[MT][NT] (this warp's keys koff .. of block kv0) */
#define FA_NV_MODS_TERMS                                                                             \
    FA_PRAGMA_UNROLL                                                                                 \
    for (int mt = 0; mt < MT; mt++) {                                                                \
        FA_NV_MODS_TILE(s[mt], 2 * mt, kv0 + koff)                                                   \
    }
#else
#define FA_NV_MODS_ROWS(mts)
#define FA_NV_MODS_TILE(st, i, kb)
#define FA_NV_MODS_TERMS
#endif

/* The sink of row `row` joins its final maximum m_ and sum l_ (summed over the row's lanes), once:
 * FA_NV_SINK_F(j) is then the factor of the row's O (folded into its 1 / l). Not in a split's
 * partial results: the combine adds it (cl/fa_combine.cl). */
#ifdef FA_APPLY_SINKS
#define FA_NV_SINK_JOIN(j, row, m_, l_)                                                              \
    const float4 j = fa_sink_join(FA_ROW_SINK(row), m_, l_, scale_log2);                             \
    m_ = j.x;                                                                                        \
    l_ = j.y;
#define FA_NV_SINK_F(j) j.z
#else
#define FA_NV_SINK_JOIN(j, row, m_, l_)
#define FA_NV_SINK_F(j) 1.0f
#endif
