/* SPDX-License-Identifier: Apache-2.0 */
/* The option strings of a program build around the planner's -D options (src/plan/build_options.c):
 * pure functions, so that the library and the offline compile checks (fa_cl_info --emit) pass the
 * compiler exactly the same thing. */
#ifndef FA_CL_BUILD_OPTIONS_H
#define FA_CL_BUILD_OPTIONS_H

#include "fa_cl.h"

#include <stddef.h>

/* include/fa_cl.h's FA_CL_DEVICE_STATUS_* bits as the -D options of the kernels that set them
 * (cl/fa_check_serving.cl, cl/fa_append.cl): one definition of their values. */
#define FA_CL_STR_(x) #x
#define FA_CL_STR(x) FA_CL_STR_(x)
#define FA_CL_STATUS_OPTIONS                                                                              \
    " -DFA_STATUS_BAD_SEQLEN=" FA_CL_STR(FA_CL_DEVICE_STATUS_BAD_SEQLEN) " -DFA_STATUS_BAD_PAGE="          \
    FA_CL_STR(FA_CL_DEVICE_STATUS_BAD_PAGE) " -DFA_STATUS_DROPPED_ROWS=" FA_CL_STR(FA_CL_DEVICE_STATUS_DROPPED_ROWS)

/* Every kernel is OpenCL C 1.2; program.c puts this first. */
#define FA_CL_STD_OPTION "-cl-std=CL1.2"

/* The options a family's program is built with (fa_cl__program_get): options, and for a family
 * built through the sm_90a PTX retargeting (its ptx_sm90a) -DFA_PTX_SM90A=<the patch's version>.
 * Returns the length written, or -1 when out (n bytes) is too small. */
int fa_cl__program_options(const char *options, int sm90a, char *out, size_t n);

/* The whole string clBuildProgram gets: FA_CL_STD_OPTION, the options, then FA_CL_BUILD_OPTIONS
 * (extra, may be ""). Returns the length written, or -1 when out is too small. */
int fa_cl__full_build_options(const char *options, const char *extra, char *out, size_t n);

#endif /* FA_CL_BUILD_OPTIONS_H */
