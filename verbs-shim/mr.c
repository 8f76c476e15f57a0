// SPDX-License-Identifier: MIT
/* Memory regions: registration, re-registration, deregistration, key lookup (mr.h). */
#include "verbs-shim/mr.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "verbs-shim/caps.h"
#include "verbs-shim/engine.h"
#include "verbs-shim/export.h"
#include "verbs-shim/table.h"

/* verbs.h turns these into calls of ibv_reg_mr_iova2 when the flags allow; define the symbols. */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static struct uroce_table mr_table = UROCE_TABLE_INIT(UROCE_MAX_MR);

/* The access bits uroce knows; the optional range (bits 20-29) is ignored (verbs.h). */
#define KNOWN_ACCESS                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |                   \
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)

/* 0, EINVAL or EOPNOTSUPP for access flags, as the kernel's ib_check_mr_access. */
static int check_access(int access)
{
	if (access & ~(KNOWN_ACCESS | IBV_ACCESS_OPTIONAL_RANGE))
		return EINVAL;
	/* IBA 10.6.3.1: remote write or atomic access needs local write access. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	/* On-demand paging is not advertised (odp_caps are zero). */
	if (access & IBV_ACCESS_ON_DEMAND)
		return EOPNOTSUPP;
	return 0;
}

/*
 * 0 if [addr, addr + length) is mapped, EFAULT if a page of it is not (the kernel fails to
 * pin it), EINVAL if it wraps around. mincore() answers without touching the pages.
 */
static int check_mapped(const void *addr, size_t length)
{
	uintptr_t page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(page - 1);
	uintptr_t end;
	unsigned char vec[256];

	if (length == 0)
		return 0;
	if (__builtin_add_overflow((uintptr_t)addr, length, &end) || end > UINTPTR_MAX - page)
		return EINVAL;
	end = (end + page - 1) & ~(page - 1);
	while (start < end) {
		size_t chunk = end - start;

		if (chunk > sizeof(vec) * page)
			chunk = sizeof(vec) * page;
		if (mincore((void *)start, chunk, vec))
			return errno == ENOMEM ? EFAULT : errno;
		start += chunk;
	}
	return 0;
}

uint8_t uroce_key_byte(void)
{
	static atomic_uint fallback;
	uint8_t b;

	if (getrandom(&b, 1, GRND_NONBLOCK) != 1)
		b = atomic_fetch_add(&fallback, 0x9d);
	return b;
}

static struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
			     int access)
{
	struct uroce_mr *mr;
	uint32_t index;
	int err;

	err = check_access(access);
	if (!err && !(access & IBV_ACCESS_ZERO_BASED) &&
	    ((uintptr_t)addr & (sysconf(_SC_PAGESIZE) - 1)) != (iova & (sysconf(_SC_PAGESIZE) - 1)))
		err = EINVAL; /* kernel ib_uverbs_reg_mr: addr and iova share the page offset */
	if (!err)
		err = check_mapped(addr, length);
	if (err) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	err = uroce_table_insert(&mr_table, NULL, &index); /* shown once complete */
	if (err) {
		free(mr);
		errno = err;
		return NULL;
	}
	mr->pd = to_upd(ibpd);
	atomic_fetch_add(&mr->pd->usecnt, 1);
	mr->index = index;
	mr->access = access & KNOWN_ACCESS;
	/* A zero-based region is addressed by offset (ibv_reg_mr(3), IBV_ACCESS_ZERO_BASED). */
	mr->iova = access & IBV_ACCESS_ZERO_BASED ? 0 : iova;
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = index;
	mr->mr.lkey = index << 8 | uroce_key_byte();
	mr->mr.rkey = mr->mr.lkey;
	uroce_table_show(&mr_table, index, mr);
	mr->res_tag = uroce_res_add(ibpd->context, UROCE_RES_MR);
	return &mr->mr;
}

UROCE_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, access);
}

UROCE_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					    uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

UROCE_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					     uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

/*
 * ibv_dereg_mr(3): 0, or EINVAL while a memory window is bound to the region (rxe_dereg_mr,
 * IBA 10.6.7.2.6: the windows go first), which then stays registered.
 */
UROCE_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct uroce_mr *mr = to_umr(ibmr);

	if (atomic_load(&mr->windows))
		return EINVAL;
	uroce_table_hide(&mr_table, mr->index);
	/* A packet that found the MR before it left the table is done with it (mr.h); so is a
	 * bind (binds run under a QP's lock), which may have bound a window to it meanwhile. */
	uroce_engine_quiesce();
	if (atomic_load(&mr->windows)) {
		uroce_table_show(&mr_table, mr->index, mr);
		return EINVAL;
	}
	uroce_table_remove(&mr_table, mr->index);
	atomic_fetch_sub(&mr->pd->usecnt, 1);
	uroce_res_del(ibmr->context, UROCE_RES_MR, mr->res_tag);
	free(mr);
	return 0;
}

/*
 * ibv_rereg_mr(3): returns 0, or IBV_REREG_MR_ERR_INPUT (bad flags or arguments) or
 * IBV_REREG_MR_ERR_CMD (the new translation or access is refused) with errno set.
 * Keys stay the same. Once it returns, no packet uses the old translation, access or PD.
 */
UROCE_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr,
			      size_t length, int access)
{
	struct uroce_mr *mr = to_umr(ibmr);
	int err = 0;

	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		err = check_access(access);
	if (!err && (flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		err = check_mapped(addr, length);
	if (err) {
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}
	/* Out of the data path's sight while it changes (mr.h). */
	uroce_table_hide(&mr_table, mr->index);
	uroce_engine_quiesce();
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->mr.addr = addr;
		mr->mr.length = length;
		mr->iova = mr->access & IBV_ACCESS_ZERO_BASED ? 0 : (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access & KNOWN_ACCESS;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		atomic_fetch_sub(&mr->pd->usecnt, 1);
		mr->pd = to_upd(pd);
		atomic_fetch_add(&mr->pd->usecnt, 1);
		mr->mr.pd = pd;
	}
	uroce_table_show(&mr_table, mr->index, mr);
	return 0;
}

struct uroce_mr *uroce_mr_lookup(uint32_t key)
{
	struct uroce_mr *mr = uroce_table_peek(&mr_table, key >> 8);

	return mr && mr->mr.lkey == key ? mr : NULL;
}
