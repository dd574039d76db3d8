/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON string writer fa_cl_info and fa_cl_bench share (tools/json.c). */
#ifndef FA_CL_TOOLS_JSON_H
#define FA_CL_TOOLS_JSON_H

#include <stdio.h>

/* s as a quoted JSON string; bytes that are not valid UTF-8 become U+FFFD so the document always parses. */
void json_string(FILE *f, const char *s);

#endif /* FA_CL_TOOLS_JSON_H */
