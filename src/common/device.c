/* SPDX-License-Identifier: Apache-2.0 */
/* Device properties the planner, the kernels' build options and fa_cl_info need: the generic facts
 * every OpenCL device reports (src/devices/ adds what a vendor's device is). */
#include "fa_cl_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int fa_cl__contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

int fa_cl__has_extension(const char *list, const char *ext)
{
    size_t n = strlen(ext);
    for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n) {
        int starts = (p == list || p[-1] == ' ');
        int ends = (p[n] == ' ' || p[n] == '\0');
        if (starts && ends)
            return 1;
    }
    return 0;
}

/* String query into a fixed buffer; a value longer than the buffer is truncated, not an error. */
static cl_int device_string(cl_device_id dev, cl_device_info what, char *buf, size_t size)
{
    size_t need = 0;
    cl_int err = clGetDeviceInfo(dev, what, 0, NULL, &need);
    if (err != CL_SUCCESS)
        return err;
    if (need <= size)
        return clGetDeviceInfo(dev, what, size, buf, NULL);
    char *tmp = (char *)malloc(need);
    if (!tmp)
        return CL_OUT_OF_HOST_MEMORY;
    err = clGetDeviceInfo(dev, what, need, tmp, NULL);
    if (err == CL_SUCCESS) {
        memcpy(buf, tmp, size - 1);
        buf[size - 1] = '\0';
    }
    free(tmp);
    return err;
}

fa_cl_status fa_cl__device_query(fa_cl_context *ctx, cl_device_id device, fa_cl__device_props *out)
{
    memset(out, 0, sizeof *out);
    cl_platform_id platform = NULL;
    cl_device_local_mem_type local_type = CL_LOCAL;
    cl_int err;
#define FA_CL_QUERY(what, var)                                                            \
    do {                                                                                  \
        err = clGetDeviceInfo(device, what, sizeof(var), &(var), NULL);                   \
        if (err != CL_SUCCESS)                                                            \
            return fa_cl__fail_cl(ctx, err, "clGetDeviceInfo(" #what ")");                \
    } while (0)
#define FA_CL_QUERY_STRING(what, buf)                                                     \
    do {                                                                                  \
        err = device_string(device, what, buf, sizeof(buf));                              \
        if (err != CL_SUCCESS)                                                            \
            return fa_cl__fail_cl(ctx, err, "clGetDeviceInfo(" #what ")");                \
    } while (0)

    FA_CL_QUERY_STRING(CL_DEVICE_NAME, out->name);
    FA_CL_QUERY_STRING(CL_DEVICE_VENDOR, out->vendor);
    FA_CL_QUERY_STRING(CL_DRIVER_VERSION, out->driver_version);
    FA_CL_QUERY_STRING(CL_DEVICE_VERSION, out->device_version);
    FA_CL_QUERY_STRING(CL_DEVICE_OPENCL_C_VERSION, out->c_version);
    FA_CL_QUERY_STRING(CL_DEVICE_EXTENSIONS, out->extensions);
    FA_CL_QUERY(CL_DEVICE_TYPE, out->type);
    FA_CL_QUERY(CL_DEVICE_MAX_COMPUTE_UNITS, out->compute_units);
    FA_CL_QUERY(CL_DEVICE_MAX_WORK_GROUP_SIZE, out->max_work_group_size);
    FA_CL_QUERY(CL_DEVICE_LOCAL_MEM_SIZE, out->local_mem_size);
    FA_CL_QUERY(CL_DEVICE_LOCAL_MEM_TYPE, local_type);
    FA_CL_QUERY(CL_DEVICE_GLOBAL_MEM_SIZE, out->global_mem_size);
    FA_CL_QUERY(CL_DEVICE_MAX_MEM_ALLOC_SIZE, out->max_alloc_size);
    FA_CL_QUERY(CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, out->global_cache_size);
    FA_CL_QUERY(CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, out->cacheline_bytes);
    FA_CL_QUERY(CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, out->native_float_width);
    cl_device_fp_config fp_config = 0;
    FA_CL_QUERY(CL_DEVICE_SINGLE_FP_CONFIG, fp_config);
    out->has_fma = (fp_config & CL_FP_FMA) != 0;
    FA_CL_QUERY(CL_DEVICE_MEM_BASE_ADDR_ALIGN, out->mem_base_addr_align_bits);
    FA_CL_QUERY(CL_DEVICE_PLATFORM, platform);
#undef FA_CL_QUERY
#undef FA_CL_QUERY_STRING
    out->local_mem_is_global = (local_type == CL_GLOBAL);

    err = clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof out->platform_name, out->platform_name, NULL);
    if (err == CL_SUCCESS)
        err = clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof out->platform_version, out->platform_version,
                                NULL);
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(ctx, err, "clGetPlatformInfo");

    out->has_fp16 = fa_cl__has_extension(out->extensions, "cl_khr_fp16");
    out->has_fp64 = fa_cl__has_extension(out->extensions, "cl_khr_fp64");
    out->has_subgroups = fa_cl__has_extension(out->extensions, "cl_khr_subgroups") ||
                         fa_cl__has_extension(out->extensions, "cl_intel_subgroups");
    return FA_CL_SUCCESS;
}
