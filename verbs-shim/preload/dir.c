// SPDX-License-Identifier: MIT
/* Folder streams of the tree (dir.h). */
#include "verbs-shim/preload/dir.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs-shim/preload/view.h"

struct stream {
	struct stream *next;
	struct uroce_sysview_node node; /* the folder's entries, as read when it was opened */
	char path[PATH_MAX];
	size_t off; /* next entry's offset in node.text; "." and ".." come first */
	long pos;   /* entries returned so far (telldir) */
	struct dirent ent;
};

static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream *streams;
static unsigned int nstreams; /* read without the lock for the quick "none of ours" answer */

DIR *preload_dir_open(const struct uroce_sysview_node *node, const char *path)
{
	struct stream *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->node = *node;
	snprintf(s->path, sizeof(s->path), "%s", path);
	pthread_mutex_lock(&streams_lock);
	s->next = streams;
	streams = s;
	__atomic_add_fetch(&nstreams, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&streams_lock);
	return (DIR *)s;
}

bool preload_dir_is_ours(DIR *d)
{
	bool found = false;

	if (!__atomic_load_n(&nstreams, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&streams_lock);
	for (struct stream *s = streams; s && !found; s = s->next)
		found = (DIR *)s == d;
	pthread_mutex_unlock(&streams_lock);
	return found;
}

struct dirent *preload_dir_read(DIR *d)
{
	struct stream *s = (struct stream *)d;
	const char *name;
	unsigned char type;
	char child[PATH_MAX + NAME_MAX + 2];

	if (s->pos < 2) {
		name = s->pos ? ".." : ".";
		type = DT_DIR;
	} else {
		if (s->off >= s->node.len)
			return NULL;
		type = (unsigned char)s->node.text[s->off];
		name = s->node.text + s->off + 1;
		s->off += 1 + strlen(name) + 1;
	}
	s->pos++;
	memset(&s->ent, 0, sizeof(s->ent));
	snprintf(child, sizeof(child), "%s/%s", s->path, name);
	s->ent.d_ino = preload_ino(child);
	s->ent.d_off = s->pos;
	s->ent.d_reclen = sizeof(s->ent);
	s->ent.d_type = type;
	snprintf(s->ent.d_name, sizeof(s->ent.d_name), "%s", name);
	return &s->ent;
}

void preload_dir_rewind(DIR *d)
{
	struct stream *s = (struct stream *)d;

	s->off = 0;
	s->pos = 0;
}

long preload_dir_tell(DIR *d)
{
	return ((struct stream *)d)->pos;
}

void preload_dir_seek(DIR *d, long pos)
{
	preload_dir_rewind(d);
	while (((struct stream *)d)->pos < pos && preload_dir_read(d))
		;
}

void preload_dir_close(DIR *d)
{
	struct stream *s = (struct stream *)d;

	pthread_mutex_lock(&streams_lock);
	for (struct stream **p = &streams; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			__atomic_sub_fetch(&nstreams, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&streams_lock);
	free(s);
}
