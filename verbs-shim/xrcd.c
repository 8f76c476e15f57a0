// SPDX-License-Identifier: MIT
/* XRC domains (xrcd.h): open/close by file, the domains' target QPs. */
#include "verbs-shim/xrcd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "verbs-shim/export.h"

struct uroce_xrc_domain {
	struct uroce_device *dev;
	bool by_file; /* opened with a file: shared by every open of that inode */
	dev_t st_dev;
	ino_t st_ino;
	unsigned int handles; /* open handles, under registry_lock */
	unsigned int objects; /* XRC SRQs and target QPs, under lock */
	pthread_mutex_t lock;
	struct uroce_qp **tgt; /* target QPs, under lock */
	uint32_t ntgt, tgt_cap;
	struct uroce_xrc_domain *next; /* in the registry when by_file */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_xrc_domain *registry;

static struct uroce_xrc_domain *find_domain(struct uroce_device *dev, const struct stat *st)
{
	for (struct uroce_xrc_domain *d = registry; d; d = d->next)
		if (d->dev == dev && d->st_dev == st->st_dev && d->st_ino == st->st_ino)
			return d;
	return NULL;
}

static struct uroce_xrc_domain *new_domain(struct uroce_device *dev)
{
	struct uroce_xrc_domain *d = calloc(1, sizeof(*d));

	if (d) {
		d->dev = dev;
		pthread_mutex_init(&d->lock, NULL);
	}
	return d;
}

/*
 * The kernel's rules (ib_uverbs_open_xrcd): fd -1 makes a new private domain; a file names the
 * domain of its inode, created only with O_CREAT (else EAGAIN), refused with O_EXCL if it
 * exists (EINVAL). Errors: EINVAL (comp_mask without FD and OFLAGS, or other bits: EOPNOTSUPP),
 * EBADF (fd), ENOMEM.
 */
struct ibv_xrcd *uroce_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	const uint32_t need = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct uroce_device *dev = to_uctx(context)->dev;
	struct uroce_xrc_domain *dom = NULL;
	struct uroce_xrcd *x;
	struct stat st;
	int err = 0;

	if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->fd != -1 && fstat(attr->fd, &st)) {
		errno = EBADF;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	if (attr->fd != -1)
		dom = find_domain(dev, &st);
	if (dom && (attr->oflags & O_EXCL)) {
		err = EINVAL;
	} else if (!dom && attr->fd != -1 && !(attr->oflags & O_CREAT)) {
		err = EAGAIN;
	} else if (!dom) {
		dom = new_domain(dev);
		if (!dom) {
			err = ENOMEM;
		} else if (attr->fd != -1) {
			dom->by_file = true;
			dom->st_dev = st.st_dev;
			dom->st_ino = st.st_ino;
			dom->next = registry;
			registry = dom;
		}
	}
	if (!err)
		dom->handles++;
	pthread_mutex_unlock(&registry_lock);
	if (err) {
		free(x);
		errno = err;
		return NULL;
	}
	x->dom = dom;
	x->xrcd.context = context;
	return &x->xrcd;
}

/* 0, or EBUSY when this is the domain's last handle and SRQs or target QPs remain in it. */
int uroce_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct uroce_xrcd *x = to_uxrcd(xrcd);
	struct uroce_xrc_domain *dom = x->dom;
	bool last;

	pthread_mutex_lock(&registry_lock);
	pthread_mutex_lock(&dom->lock);
	last = dom->handles == 1;
	if (last && dom->objects) {
		pthread_mutex_unlock(&dom->lock);
		pthread_mutex_unlock(&registry_lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&dom->lock);
	dom->handles--;
	if (last && dom->by_file) {
		struct uroce_xrc_domain **p = &registry;

		while (*p != dom)
			p = &(*p)->next;
		*p = dom->next;
	}
	pthread_mutex_unlock(&registry_lock);
	if (last) {
		pthread_mutex_destroy(&dom->lock);
		free(dom->tgt);
		free(dom);
	}
	free(x);
	return 0;
}

void uroce_xrc_domain_get(struct uroce_xrc_domain *dom)
{
	pthread_mutex_lock(&dom->lock);
	dom->objects++;
	pthread_mutex_unlock(&dom->lock);
}

void uroce_xrc_domain_put(struct uroce_xrc_domain *dom)
{
	pthread_mutex_lock(&dom->lock);
	dom->objects--;
	pthread_mutex_unlock(&dom->lock);
}

void uroce_xrc_domain_add_tgt(struct uroce_xrc_domain *dom, struct uroce_qp *qp)
{
	pthread_mutex_lock(&dom->lock);
	if (dom->ntgt == dom->tgt_cap) {
		uint32_t cap = dom->tgt_cap ? 2 * dom->tgt_cap : 8;
		struct uroce_qp **t = realloc(dom->tgt, cap * sizeof(*t));

		if (!t)
			abort(); /* a few pointers: out of memory here is not recoverable */
		dom->tgt = t;
		dom->tgt_cap = cap;
	}
	dom->tgt[dom->ntgt++] = qp;
	dom->objects++;
	pthread_mutex_unlock(&dom->lock);
}

void uroce_xrc_domain_del_tgt(struct uroce_xrc_domain *dom, struct uroce_qp *qp)
{
	pthread_mutex_lock(&dom->lock);
	for (uint32_t i = 0; i < dom->ntgt; i++) {
		if (dom->tgt[i] == qp) {
			dom->tgt[i] = dom->tgt[--dom->ntgt];
			break;
		}
	}
	dom->objects--;
	pthread_mutex_unlock(&dom->lock);
}

void uroce_xrc_domain_forget_srq(struct uroce_xrc_domain *dom, struct uroce_srq *srq)
{
	/* Lock order: domain, then QP (a QP's data path never takes the domain's lock). */
	pthread_mutex_lock(&dom->lock);
	for (uint32_t i = 0; i < dom->ntgt; i++) {
		struct uroce_qp *qp = dom->tgt[i];

		pthread_mutex_lock(&qp->lock);
		if (qp->xrc_cur == srq)
			qp->xrc_cur = NULL;
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_unlock(&dom->lock);
}
