/* SPDX-License-Identifier: MIT */
/*
 * Folder streams of the tree: what opendir() returns for a folder of the kernel's view, read
 * with the C library's own readdir() family, which liburoce-preload.so interposes to tell its
 * streams from the C library's. A stream is a snapshot of the folder when it was opened.
 */
#ifndef UROCE_PRELOAD_DIR_H
#define UROCE_PRELOAD_DIR_H

#include <dirent.h>
#include <stdbool.h>

#include "verbs-shim/sysview.h"

/* A stream of the folder @node (UROCE_SV_DIR) at the resolved @path; NULL with errno ENOMEM. */
DIR *preload_dir_open(const struct uroce_sysview_node *node, const char *path);

/* True if @d is one of ours (a stream preload_dir_open made and preload_dir_close has not
 * closed). Cheap when no stream of ours is open. */
bool preload_dir_is_ours(DIR *d);

/* The next entry ("." and ".." first), or NULL at the end (errno unchanged). */
struct dirent *preload_dir_read(DIR *d);

void preload_dir_rewind(DIR *d);
long preload_dir_tell(DIR *d);
void preload_dir_seek(DIR *d, long pos);
void preload_dir_close(DIR *d);

#endif
