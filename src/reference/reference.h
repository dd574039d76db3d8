/* SPDX-License-Identifier: Apache-2.0 */
/* The reference paths (src/reference/) as the layer above them sees them. */
#ifndef FA_CL_REFERENCE_H
#define FA_CL_REFERENCE_H

#include "fa_cl_internal.h"

/* Context teardown: drop what CLBlast cached for this context (see fa_cl_context_release). */
void fa_cl__reference_release(fa_cl_context *ctx);

#endif /* FA_CL_REFERENCE_H */
