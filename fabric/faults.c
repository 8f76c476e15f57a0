// SPDX-License-Identifier: MIT
/* Fault injection (faults.h): the UROCE_FAULTS parser, the seeded decisions, the delay line. */
#include "fabric/faults.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/log.h"
#include "fabric/timer.h"
#include "transport/container.h"
#include "transport/wire.h"

/* A held packet, in the delay line sorted by due time. */
struct held {
	struct held *next;
	uint64_t due;
	bool tx;
	struct roce_ipudp ip;
	size_t len;
	uint8_t roce[];
};

struct uroce_faults {
	struct uroce_faults_cfg cfg;
	const struct uroce_faults_ops *ops;
	void *arg;
	pthread_mutex_t lock; /* rng, line, stats */
	uint64_t rng;
	struct held *line;
	struct uroce_timer timer;
	struct uroce_faults_stats stats;
};

/* A probability 0..1 as parts per million. */
static int parse_prob(const char *v, uint32_t *ppm)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(v, &end);
	if (errno || end == v || *end || !(p >= 0 && p <= 1))
		return EINVAL;
	*ppm = (uint32_t)(p * 1e6 + 0.5);
	return 0;
}

/* A duration with its unit: ns, us, ms or s. */
static int parse_duration(const char *v, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t scale;
	} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	unsigned long long n;
	char *end;

	if (*v < '0' || *v > '9')
		return EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit) && n <= 60ull * 1000000000 / units[i].scale) {
			*ns = n * units[i].scale;
			return 0;
		}
	}
	return EINVAL;
}

static int parse_seed(const char *v, uint64_t *seed)
{
	char *end;

	if (*v < '0' || *v > '9')
		return EINVAL;
	errno = 0;
	*seed = strtoull(v, &end, 0);
	return errno || *end ? EINVAL : 0;
}

static int parse_dir(const char *v, struct uroce_faults_cfg *cfg)
{
	cfg->tx = !strcmp(v, "tx") || !strcmp(v, "both");
	cfg->rx = !strcmp(v, "rx") || !strcmp(v, "both");
	return cfg->tx || cfg->rx ? 0 : EINVAL;
}

static int parse_spare(const char *v, struct uroce_faults_cfg *cfg)
{
	cfg->spare_acks = !strcmp(v, "acks");
	return cfg->spare_acks ? 0 : EINVAL;
}

/* One key=value; EINVAL after saying what is wrong. */
static int parse_one(char *item, struct uroce_faults_cfg *cfg, unsigned int *seen)
{
	static const char *const keys[] = {"loss",  "reorder", "dup", "corrupt",
					   "delay", "seed",    "dir", "spare"};
	static const char *const expect[] = {
		"a probability 0..1",
		"a probability 0..1",
		"a probability 0..1",
		"a probability 0..1",
		"a duration such as 200us (ns, us, ms, s; at most 60 s)",
		"a number",
		"tx, rx or both",
		"acks"};
	char *eq = strchr(item, '=');
	size_t k;
	int err;

	if (eq)
		*eq = '\0';
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (!strcmp(item, keys[k]))
			break;
	if (k == sizeof(keys) / sizeof(keys[0]) || !eq) {
		uroce_log(UROCE_LOG_ERROR,
			  "UROCE_FAULTS: \"%s\" is not KEY=VALUE with a key of loss, reorder, dup, "
			  "corrupt, delay, seed, dir, spare",
			  item);
		return EINVAL;
	}
	if (*seen & (1u << k)) {
		uroce_log(UROCE_LOG_ERROR, "UROCE_FAULTS: %s is given twice", item);
		return EINVAL;
	}
	*seen |= 1u << k;
	switch (k) {
	case 0:
		err = parse_prob(eq + 1, &cfg->loss_ppm);
		break;
	case 1:
		err = parse_prob(eq + 1, &cfg->reorder_ppm);
		break;
	case 2:
		err = parse_prob(eq + 1, &cfg->dup_ppm);
		break;
	case 3:
		err = parse_prob(eq + 1, &cfg->corrupt_ppm);
		break;
	case 4:
		err = parse_duration(eq + 1, &cfg->delay_ns);
		break;
	case 5:
		err = parse_seed(eq + 1, &cfg->seed);
		break;
	case 6:
		err = parse_dir(eq + 1, cfg);
		break;
	default:
		err = parse_spare(eq + 1, cfg);
		break;
	}
	if (err)
		uroce_log(UROCE_LOG_ERROR, "UROCE_FAULTS: %s=\"%s\": expected %s", item, eq + 1,
			  expect[k]);
	return err;
}

int uroce_faults_parse(const char *spec, struct uroce_faults_cfg *cfg)
{
	char *copy = strdup(spec), *rest = copy, *item;
	unsigned int seen = 0;
	int err = 0;

	if (!copy)
		return ENOMEM;
	memset(cfg, 0, sizeof(*cfg));
	cfg->on = true;
	cfg->seed = 1;
	cfg->tx = true;
	if (!*spec) {
		uroce_log(UROCE_LOG_ERROR, "UROCE_FAULTS is empty");
		err = EINVAL;
	}
	while (!err && (item = strsep(&rest, ","))) {
		if (!*item) {
			uroce_log(UROCE_LOG_ERROR, "UROCE_FAULTS=\"%s\" has an empty item", spec);
			err = EINVAL;
		} else {
			err = parse_one(item, cfg, &seen);
		}
	}
	free(copy);
	return err;
}

/* splitmix64, under f->lock. */
static uint64_t next_rand(struct uroce_faults *f)
{
	uint64_t z = (f->rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static bool chance(struct uroce_faults *f, uint32_t ppm)
{
	return ppm && next_rand(f) % 1000000 < ppm;
}

/* On the progress thread: pass on what is due, then wait for the next. */
static void on_due(struct uroce_timer *t, uint64_t now)
{
	struct uroce_faults *f = uroce_container_of(t, struct uroce_faults, timer);

	for (;;) {
		struct held *h;

		pthread_mutex_lock(&f->lock);
		h = f->line;
		if (!h || h->due > now) {
			if (h)
				f->ops->arm(f->arg, &f->timer, h->due);
			pthread_mutex_unlock(&f->lock);
			return;
		}
		f->line = h->next;
		pthread_mutex_unlock(&f->lock);
		f->ops->emit(f->arg, h->tx, &h->ip, h->roce, h->len);
		free(h);
	}
}

struct uroce_faults *uroce_faults_new(const struct uroce_faults_cfg *cfg,
				      const struct uroce_faults_ops *ops, void *arg)
{
	struct uroce_faults *f = calloc(1, sizeof(*f));

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->cfg = *cfg;
	f->ops = ops;
	f->arg = arg;
	f->rng = cfg->seed;
	f->timer.fire = on_due;
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

void uroce_faults_free(struct uroce_faults *f)
{
	if (!f)
		return;
	while (f->line) {
		struct held *h = f->line;

		f->line = h->next;
		free(h);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
}

bool uroce_faults_on(const struct uroce_faults *f, bool tx)
{
	return f && (tx ? f->cfg.tx : f->cfg.rx);
}

/* Queue a copy due at @due (f->lock held); false if there is no memory (the copy is lost). */
static bool hold(struct uroce_faults *f, bool tx, const struct roce_ipudp *ip, const uint8_t *roce,
		 size_t len, uint64_t due)
{
	struct held *h = malloc(sizeof(*h) + len), **p = &f->line;

	if (!h)
		return false;
	h->due = due;
	h->tx = tx;
	h->ip = *ip;
	h->len = len;
	memcpy(h->roce, roce, len);
	while (*p && (*p)->due <= due)
		p = &(*p)->next;
	h->next = *p;
	*p = h;
	if (f->line == h)
		f->ops->arm(f->arg, &f->timer, due);
	return true;
}

/*
 * What befalls one packet (f->lock held): false if it is lost; otherwise the @copies that arrive
 * and the @wait they are held beyond the delay.
 */
static bool decide(struct uroce_faults *f, uint8_t *roce, size_t len, unsigned int *copies,
		   uint64_t *wait)
{
	const struct uroce_faults_cfg *c = &f->cfg;

	*copies = 1;
	*wait = 0;
	if (c->spare_acks && len >= ROCE_BTH_LEN && roce[0] == ROCE_OP_ACK)
		return true;
	if (chance(f, c->loss_ppm)) {
		f->stats.lost++;
		return false;
	}
	if (chance(f, c->corrupt_ppm) && len > ROCE_BTH_LEN) {
		/* Past the BTH, so that it still reaches the QP and fails the ICRC there. */
		size_t at = ROCE_BTH_LEN + next_rand(f) % (len - ROCE_BTH_LEN);

		roce[at] ^= (uint8_t)(1u << next_rand(f) % 8);
		f->stats.corrupted++;
	}
	if (chance(f, c->dup_ppm)) {
		*copies = 2;
		f->stats.duplicated++;
	}
	if (chance(f, c->reorder_ppm)) {
		*wait = UROCE_FAULTS_REORDER_NS;
		f->stats.reordered++;
	}
	return true;
}

unsigned int uroce_faults_apply(struct uroce_faults *f, bool tx, const struct roce_ipudp *ip,
				uint8_t *roce, size_t len)
{
	unsigned int copies;
	uint64_t wait;

	pthread_mutex_lock(&f->lock);
	if (!decide(f, roce, len, &copies, &wait)) {
		copies = 0;
	} else if (wait + f->cfg.delay_ns) {
		uint64_t due = uroce_now() + wait + f->cfg.delay_ns;

		f->stats.delayed++;
		for (unsigned int i = 0; i < copies; i++)
			hold(f, tx, ip, roce, len, due);
		copies = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return copies;
}

void uroce_faults_get_stats(struct uroce_faults *f, struct uroce_faults_stats *out)
{
	if (!f) {
		memset(out, 0, sizeof(*out));
		return;
	}
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
}
