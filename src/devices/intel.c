/* SPDX-License-Identifier: Apache-2.0 */
/* Intel GPUs: the sub-group sizes through cl_intel_required_subgroup_size, and the registers a
 * work-item holds before IGC spills. */
#include "devices/devices.h"

#ifndef CL_DEVICE_SUB_GROUP_SIZES_INTEL
#define CL_DEVICE_SUB_GROUP_SIZES_INTEL 0x4108 /* cl_intel_required_subgroup_size */
#endif

void fa_cl__intel_query(cl_device_id device, const fa_cl__device_props *props, fa_cl__device_traits *out)
{
    /* the narrowest SIMD width IGC may compile for: it sets the register budget */
    if (!fa_cl__has_extension(props->extensions, "cl_intel_required_subgroup_size"))
        return;
    size_t sizes[16], bytes = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_SUB_GROUP_SIZES_INTEL, sizeof sizes, sizes, &bytes) != CL_SUCCESS)
        return;
    for (size_t i = 0; i < bytes / sizeof sizes[0] && i < 16; i++)
        if (sizes[i] > 0 && (out->min_subgroup == 0 || (int)sizes[i] < out->min_subgroup))
            out->min_subgroup = (int)sizes[i];
}

void fa_cl__intel_complete(fa_cl__device_traits *t)
{
    /* IGC gives a hardware thread 128 GRFs (no large-GRF mode); it compiles these kernels SIMD8
     * where the device has 8-wide sub-groups (32-byte GRFs: 128 floats a work-item) and SIMD32 on
     * Xe-HPC, whose narrowest sub-group is 16 (64-byte GRFs: 64) */
    t->private_floats = t->min_subgroup >= 16 ? 64 : 128;
}
