/* SPDX-License-Identifier: Apache-2.0 */
/* Finding a device: the one fa_cl_context_create_default takes (FA_CL_DEVICE, else the first GPU,
 * else the first device), and where there is none, why the ICD loader found no OpenCL platform and
 * what to install or register: one text for the library's FA_CL_ERROR_NO_DEVICE message and
 * fa_cl_info's report. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* opendir/stat for the ICD registration check */
#endif

#include "devices/devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dirent.h>
#include <sys/stat.h>
#define HAVE_POSIX_DIRS 1
#endif

#ifdef HAVE_POSIX_DIRS
static int file_mentions(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* Does an ICD file in dir (or the file itself, as OCL_ICD_VENDORS may name one) mention needle? */
static int icd_registered(const char *dir, const char *needle)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return strstr(dir, needle) != NULL || file_mentions(dir, needle);
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(dp)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".icd") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        found = file_mentions(path, needle);
    }
    closedir(dp);
    return found;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
#endif

/* The NVIDIA driver ships its OpenCL library without registering it in some container images. */
static void nvidia_hint(char *buf, size_t size)
{
#ifdef HAVE_POSIX_DIRS
    static const char *const lib_dirs[] = {"/usr/lib/x86_64-linux-gnu/", "/usr/lib/", "/usr/lib64/"};
    const char *lib = "libnvidia-opencl.so.1";
    char path[512] = "";
    for (size_t i = 0; i < sizeof lib_dirs / sizeof lib_dirs[0] && !path[0]; i++) {
        char candidate[512];
        snprintf(candidate, sizeof candidate, "%s%s", lib_dirs[i], lib);
        FILE *probe = fopen(candidate, "rb");
        if (probe) {
            fclose(probe);
            snprintf(path, sizeof path, "%s", candidate);
        }
    }
    if (!path[0])
        return;
    const char *env_dir = getenv("OCL_ICD_VENDORS");
    const char *vendors = env_dir && *env_dir ? env_dir : "/etc/OpenCL/vendors";
    if (icd_registered(vendors, "libnvidia-opencl")) {
        fa_cl__append(buf, size, "\n%s is registered in %s but gave no platform: check that the NVIDIA driver is loaded "
                          "(nvidia-smi) and that the library matches its version.", path, vendors);
        return;
    }
    /* an OCL_ICD_VENDORS that is no directory cannot take the file: register system-wide instead */
    int env_usable = env_dir && *env_dir && is_dir(env_dir);
    const char *target = env_usable ? env_dir : "/etc/OpenCL/vendors";
    fa_cl__append(buf, size, "\n%s exists but no file in %s names it. Register it%s:\n"
                      "  mkdir -p %s && echo %s > %s/nvidia.icd", path, vendors,
           env_usable ? "" : " (as root)", target, path, target);
    if (env_dir && *env_dir && !env_usable)
        fa_cl__append(buf, size, "\n  and unset OCL_ICD_VENDORS, which points the loader elsewhere.");
#else
    (void)buf;
    (void)size;
#endif
}

void fa_cl__no_platform_message(cl_int err, cl_uint count, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    if (err != CL_SUCCESS)
        fa_cl__append(buf, size, "no OpenCL platform found (clGetPlatformIDs: %s (%d)).", fa_cl__cl_error_name(err),
               (int)err);
    else
        fa_cl__append(buf, size, "no OpenCL platform found (clGetPlatformIDs returned %u platforms).", count);
    const char *env_dir = getenv("OCL_ICD_VENDORS");
    if (env_dir && *env_dir)
        fa_cl__append(buf, size, "\nOCL_ICD_VENDORS=%s is set: the ICD loader reads drivers from there instead of "
                          "/etc/OpenCL/vendors.", env_dir);
    fa_cl__append(buf, size, "\nInstall an OpenCL driver and the ICD loader:\n"
                      "  CPU (Debian/Ubuntu): apt-get install pocl-opencl-icd ocl-icd-libopencl1\n"
                      "  GPU: your vendor's ICD (e.g. nvidia-opencl-icd, intel-opencl-icd, mesa-opencl-icd, ROCm)");
    nvidia_hint(buf, size);
}

/* FA_CL_ERROR_NO_DEVICE with why there is no platform and what to install. */
static fa_cl_status no_platform(cl_int err, cl_uint count)
{
    char msg[2048];
    fa_cl__no_platform_message(err, count, msg, sizeof msg);
    return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE, "%s", msg);
}

/* A device as fa_cl_info numbers them: platform index p, device index d within it. */
typedef struct device_ref {
    cl_platform_id platform;
    cl_device_id device;
} device_ref;

static fa_cl_status pick_device(device_ref *out)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0)
        return no_platform(err, np);
    cl_platform_id platforms[32];
    if (np > 32)
        np = 32;
    err = clGetPlatformIDs(np, platforms, NULL);
    if (err != CL_SUCCESS)
        return no_platform(err, 0);

    const char *want = getenv("FA_CL_DEVICE");
    int want_p = -1, want_d = -1;
    if (want && *want) {
        char tail = 0;
        if (sscanf(want, "%d:%d%c", &want_p, &want_d, &tail) != 2)
            want_p = want_d = -1;
    } else {
        want = NULL;
    }

    device_ref first = {0}, first_gpu = {0};
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS)
            continue;
        if (nd > 64)
            nd = 64;
        for (cl_uint d = 0; d < nd; d++) {
            cl_device_type type = 0;
            char name[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            device_ref ref = {platforms[p], devs[d]};
            if (want) {
                int match;
                if (want_p >= 0) {
                    match = ((int)p == want_p && (int)d == want_d);
                } else {
                    match = fa_cl__contains_nocase(name, want);
                }
                if (match) {
                    *out = ref;
                    return FA_CL_SUCCESS;
                }
                continue;
            }
            if (!first.device)
                first = ref;
            if (!first_gpu.device && (type & CL_DEVICE_TYPE_GPU))
                first_gpu = ref;
        }
    }
    if (want)
        return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE,
                           "FA_CL_DEVICE='%s' matches no device (use p:d indices or a name substring; "
                           "fa_cl_info lists them)", want);
    *out = first_gpu.device ? first_gpu : first;
    if (!out->device)
        return fa_cl__fail(NULL, FA_CL_ERROR_NO_DEVICE,
                           "OpenCL platforms were found but they list no devices (is the driver loaded?)");
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__default_device(cl_platform_id *platform, cl_device_id *device)
{
    device_ref ref;
    fa_cl_status st = pick_device(&ref);
    *platform = st == FA_CL_SUCCESS ? ref.platform : NULL;
    *device = st == FA_CL_SUCCESS ? ref.device : NULL;
    return st;
}
