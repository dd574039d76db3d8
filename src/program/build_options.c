/* SPDX-License-Identifier: Apache-2.0 */
/* The option strings of a program build: the sm_90a build's patch version, then the standard and the
 * user's options around the plan's. */
#include "program/build_options.h"
#include "program/ptx_retarget.h"

#include <stdio.h>

int fa_cl__program_options(const char *options, int sm90a, char *out, size_t n)
{
    /* the sm_90a build's options name the patch's version: the caches keep it apart from a plain
     * build of the same text, and from another version of the patch */
    const int len = sm90a ? snprintf(out, n, "%s -DFA_PTX_SM90A=%d", options, FA_CL_PTX_RETARGET_VERSION)
                          : snprintf(out, n, "%s", options);
    return len < 0 || (size_t)len >= n ? -1 : len;
}

int fa_cl__full_build_options(const char *options, const char *extra, char *out, size_t n)
{
    int len = snprintf(out, n, "%s %s %s", FA_CL_STD_OPTION, options, extra);
    return len < 0 || (size_t)len >= n ? -1 : len;
}
