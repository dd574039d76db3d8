/* SPDX-License-Identifier: Apache-2.0 */
/* AMD GPUs: the registers a work-item holds before the compiler spills. */
#include "devices/devices.h"

void fa_cl__amd_complete(fa_cl__device_traits *t)
{
    /* 256 VGPRs a lane, of which the compiler keeps about a quarter for addresses and loads in
     * flight (clang 19 spills the tiled kernel at d = 256, TM = 4, which the model puts at 228) */
    t->private_floats = 192;
}
