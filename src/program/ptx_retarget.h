/* SPDX-License-Identifier: Apache-2.0 */
/* PTX retargeting for NVIDIA compute capability 9.0 (issue 18's first step; no device needed).
 *
 * NVIDIA's OpenCL compiler emits PTX for `.target sm_90`, where Hopper's warpgroup instructions
 * (wgmma, setmaxnreg) do not assemble, and returns that PTX as the program binary. A kernel leaves
 * such instructions as marked comments, one an inline asm line:
 *     asm volatile("// @sm90a wgmma.fence.sync.aligned;" ::: "memory");
 * (the compiler substitutes operands inside the comment like anywhere else, so the line names the
 * real registers). This turns the PTX into sm_90a PTX with those lines un-commented, to be built
 * again with clCreateProgramWithBinary (../shared/probe: the driver takes it and runs it). */
#ifndef FA_CL_PTX_RETARGET_H
#define FA_CL_PTX_RETARGET_H

#include "fa_cl.h"

#include <stddef.h>

/* The transformation's version: a program built through it carries -DFA_PTX_SM90A=<version>
 * (program.c), so that the program caches tell builds of another version apart. */
#define FA_CL_PTX_RETARGET_VERSION 1

/* The marker a kernel's comment line starts with (after the line's indentation). */
#define FA_CL_PTX_MARK "// @sm90a "

typedef struct fa_cl__ptx_patch {
    int marked;  /* marked lines un-commented */
    int entries; /* .entry directives (kernels) */
} fa_cl__ptx_patch;

/* ptx: len bytes of PTX text (a NUL at len is not needed). On success *out is a malloc'd,
 * NUL-terminated copy with `.target sm_90` changed to `.target sm_90a` (the rest of that line
 * kept), every marked line un-commented (its indentation kept), and, with maxnreg > 0,
 * `.maxnreg maxnreg` declared before each entry's body (setmaxnreg is ignored without it);
 * *out_len its length without the NUL; info (may be NULL) what was done. Everything else is
 * copied byte for byte.
 *
 * The text is refused, FA_CL_ERROR_UNSUPPORTED with msg naming the problem and *out left NULL,
 * unless it is PTX this function knows: exactly one `.version` of at least 8.0 (sm_90a's PTX
 * ISA), exactly one `.target` whose first target is sm_90, `.address_size 64`, at least one
 * `.entry` with a body, no NUL byte; each marked line one instruction ending in ';'; the marker
 * nowhere but at a line's start; with maxnreg > 0, no entry declaring .maxnreg already and
 * maxnreg in 24..256. FA_CL_ERROR_INVALID_ARGUMENT for NULL ptx/out/out_len;
 * FA_CL_ERROR_OUT_OF_MEMORY. */
fa_cl_status fa_cl__ptx_retarget_sm90a(const char *ptx, size_t len, int maxnreg, char **out, size_t *out_len,
                                      fa_cl__ptx_patch *info, char *msg, size_t msg_size);

#endif /* FA_CL_PTX_RETARGET_H */
