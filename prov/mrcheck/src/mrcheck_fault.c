/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's fault injection (FI_MRCHECK_FAULT_*, see mrcheck.h): the settings,
 * the seeded decisions, and the close that refuses once. The callers in
 * mrcheck.c, mrcheck_ep.c, mrcheck_post.c and mrcheck_cq.c decide where a
 * fault lands; this file decides whether.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>

#include "mrcheck_int.h"

/* Draws are 53 bits: a rate r is the bound r * 2^53. */
#define CHK_DRAW_RANGE 9007199254740992.0

/* One stream of decisions per kind, so adding faults of one kind does not
 * move the others. */
enum chk_fault_kind {
	CHK_FAULT_REG,
	CHK_FAULT_REG_CODE,
	CHK_FAULT_POST,
	CHK_FAULT_CQ_ERR,
	CHK_FAULT_KINDS
};

/* FI_MRCHECK_FAULT_CLOSE_ONCE classes. */
enum {
	CHK_CLOSE_MR = 1 << 0,
	CHK_CLOSE_MR_REMOTE = 1 << 1,
	CHK_CLOSE_EP = 1 << 2,
	CHK_CLOSE_DOMAIN = 1 << 3,
};

#define CHK_MAX_CODES 16

static const struct {
	const char *name;
	enum mrcheck_fault_code code;
	int err;
} chk_codes[] = {
	{"ENOMEM", MRCHECK_FAULT_ENOMEM, FI_ENOMEM},
	{"EAGAIN", MRCHECK_FAULT_EAGAIN, FI_EAGAIN},
	{"ENOKEY", MRCHECK_FAULT_ENOKEY, FI_ENOKEY},
	{"ENOSPC", MRCHECK_FAULT_ENOSPC, FI_ENOSPC},
};

/* Set once in fi_prov_ini, read-only afterwards. A rate is kept as the
 * bound a 53-bit draw must stay under (0: off). */
static struct {
	uint64_t seed;
	uint64_t rate[CHK_FAULT_KINDS];
	enum mrcheck_fault_code codes[CHK_MAX_CODES];
	size_t ncodes;
	unsigned close_classes;
} chk_fault;

static uint64_t chk_fault_n[CHK_FAULT_KINDS];

static uint64_t
chk_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The next decision of kind: a function of the seed, the kind and how
 * many decisions of that kind came before. */
static uint64_t
chk_draw(enum chk_fault_kind kind)
{
	uint64_t n =
		__atomic_fetch_add(&chk_fault_n[kind], 1, __ATOMIC_RELAXED);

	return chk_mix(chk_mix(chk_fault.seed + (uint64_t) kind) + n);
}

static bool
chk_roll(enum chk_fault_kind kind)
{
	return chk_fault.rate[kind] &&
	       (chk_draw(kind) >> 11) < chk_fault.rate[kind];
}

/* ---- settings ------------------------------------------------------ */

static void
chk_parse_rate(const char *name, enum chk_fault_kind kind)
{
	double r;

	if (chk_param_double(name, 0, 1, &r) > 0)
		chk_fault.rate[kind] = (uint64_t) (r * CHK_DRAW_RANGE);
}

/* The codes FI_MRCHECK_FAULT_REG_CODES names; all four when it is unset,
 * and when it names an unknown code or none (refused as a whole, so a
 * typo never narrows a test to the codes that happened to parse). */
static void
chk_parse_codes(void)
{
	const char *env = chk_param_str("FAULT_REG_CODES");
	char copy[256], *tok, *save = NULL;

	chk_fault.ncodes = 0;
	if (env && strlen(env) < sizeof(copy)) {
		snprintf(copy, sizeof(copy), "%s", env);
		for (tok = strtok_r(copy, ", ", &save); tok;
		     tok = strtok_r(NULL, ", ", &save)) {
			const char *bare =
				strncasecmp(tok, "FI_", 3) ? tok : tok + 3;
			size_t i;

			for (i = 0;
			     i < sizeof(chk_codes) / sizeof(chk_codes[0]); i++)
				if (!strcasecmp(bare, chk_codes[i].name))
					break;
			if (i == sizeof(chk_codes) / sizeof(chk_codes[0]) ||
			    chk_fault.ncodes == CHK_MAX_CODES) {
				chk_fault.ncodes = 0;
				break;
			}
			chk_fault.codes[chk_fault.ncodes++] = chk_codes[i].code;
		}
	}
	if (chk_fault.ncodes)
		return;
	if (env)
		chk_param_refuse("FAULT_REG_CODES", env);
	for (size_t i = 0; i < MRCHECK_FAULT_CODES; i++)
		chk_fault.codes[chk_fault.ncodes++] =
			(enum mrcheck_fault_code) i;
}

/* The classes FI_MRCHECK_FAULT_CLOSE_ONCE names; none when it is unset or
 * 0, and when it names an unknown class (refused as a whole). */
static void
chk_parse_close(void)
{
	static const struct {
		const char *name;
		unsigned classes;
	} names[] = {
		{"1", CHK_CLOSE_MR | CHK_CLOSE_EP | CHK_CLOSE_DOMAIN},
		{"mr", CHK_CLOSE_MR},
		{"mr_remote", CHK_CLOSE_MR_REMOTE},
		{"ep", CHK_CLOSE_EP},
		{"domain", CHK_CLOSE_DOMAIN},
	};
	const char *env = chk_param_str("FAULT_CLOSE_ONCE");
	char copy[256], *tok, *save = NULL;
	unsigned classes = 0;

	if (!env || !strcmp(env, "0"))
		return;
	if (strlen(env) < sizeof(copy)) {
		snprintf(copy, sizeof(copy), "%s", env);
		for (tok = strtok_r(copy, ", ", &save); tok;
		     tok = strtok_r(NULL, ", ", &save)) {
			size_t i;

			for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (!strcasecmp(tok, names[i].name))
					break;
			if (i == sizeof(names) / sizeof(names[0])) {
				classes = 0;
				break;
			}
			classes |= names[i].classes;
		}
	}
	if (!classes)
		chk_param_refuse("FAULT_CLOSE_ONCE", env);
	chk_fault.close_classes = classes;
}

static double
chk_rate_of(enum chk_fault_kind kind)
{
	return (double) chk_fault.rate[kind] / CHK_DRAW_RANGE;
}

void
chk_fault_init(void)
{
	char codes[64] = "";

	chk_fault.seed = chk_param_u64("FAULT_SEED", 1);
	chk_parse_rate("FAULT_REG", CHK_FAULT_REG);
	chk_parse_rate("FAULT_POST", CHK_FAULT_POST);
	chk_parse_rate("FAULT_CQ_ERR", CHK_FAULT_CQ_ERR);
	chk_parse_codes();
	chk_parse_close();
	if (!chk_fault.rate[CHK_FAULT_REG] && !chk_fault.rate[CHK_FAULT_POST] &&
	    !chk_fault.rate[CHK_FAULT_CQ_ERR] && !chk_fault.close_classes)
		return;
	/* Said once, so a log shows which faults a run had. */
	for (size_t i = 0; i < chk_fault.ncodes; i++)
		snprintf(codes + strlen(codes), sizeof(codes) - strlen(codes),
			 "%s%s", i ? "," : "",
			 chk_codes[chk_fault.codes[i]].name);
	fprintf(stderr,
		"mrcheck: fault injection: reg %g (%s), post %g, "
		"cq_err %g, close_once%s%s%s%s%s, seed %llu\n",
		chk_rate_of(CHK_FAULT_REG), codes, chk_rate_of(CHK_FAULT_POST),
		chk_rate_of(CHK_FAULT_CQ_ERR),
		chk_fault.close_classes ? "" : " none",
		chk_fault.close_classes & CHK_CLOSE_MR ? " mr" : "",
		chk_fault.close_classes & CHK_CLOSE_MR_REMOTE ? " mr_remote" :
								"",
		chk_fault.close_classes & CHK_CLOSE_EP ? " ep" : "",
		chk_fault.close_classes & CHK_CLOSE_DOMAIN ? " domain" : "",
		(unsigned long long) chk_fault.seed);
}

/* ---- registrations, posts, completions ----------------------------- */

int
chk_fault_reg(struct chk_domain *dom)
{
	enum mrcheck_fault_code code;

	if (!chk_roll(CHK_FAULT_REG))
		return 0;
	code = chk_fault.codes[chk_draw(CHK_FAULT_REG_CODE) % chk_fault.ncodes];
	chk_count(dom, faults_reg, 1);
	chk_count(dom, faults_reg_by_code[code], 1);
	return -chk_codes[code].err;
}

bool
chk_fault_post(struct chk_domain *dom)
{
	if (!chk_roll(CHK_FAULT_POST))
		return false;
	chk_count(dom, faults_post, 1);
	return true;
}

bool
chk_fault_cq_on(void)
{
	return chk_fault.rate[CHK_FAULT_CQ_ERR] != 0;
}

bool
chk_fault_cq_err(struct chk_domain *dom)
{
	if (!chk_roll(CHK_FAULT_CQ_ERR))
		return false;
	chk_count(dom, faults_cq_err, 1);
	return true;
}

/* ---- closes refused once ------------------------------------------- */

bool
chk_fault_close_mr(struct chk_domain *dom, struct chk_mr *rec)
{
	bool listed = (chk_fault.close_classes & CHK_CLOSE_MR) ||
		      ((chk_fault.close_classes & CHK_CLOSE_MR_REMOTE) &&
		       (rec->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)));

	if (!listed ||
	    __atomic_exchange_n(&rec->close_refused, true, __ATOMIC_RELAXED))
		return false;
	chk_count(dom, faults_close, 1);
	return true;
}

/* The provider object's own fi_ops with a close of ours in front. */
struct chk_close_once {
	struct fi_ops ops;
	struct fi_ops *orig;
	struct chk_domain *dom; /* alive while the object is open */
	bool refused;
};

static int
chk_close_once(struct fid *fid)
{
	struct chk_close_once *w =
		container_of(fid->ops, struct chk_close_once, ops);
	int ret;

	if (!__atomic_exchange_n(&w->refused, true, __ATOMIC_RELAXED)) {
		chk_count(w->dom, faults_close, 1);
		return -FI_EBUSY;
	}
	fid->ops = w->orig;
	ret = w->orig->close(fid);
	if (ret) {
		/* Refused by the provider itself: still ours to follow. */
		fid->ops = &w->ops;
		return ret;
	}
	free(w);
	return 0;
}

int
chk_fault_close_wrap(struct chk_domain *dom, struct fid *inner)
{
	unsigned cls = inner->fclass == FI_CLASS_DOMAIN ? CHK_CLOSE_DOMAIN :
		       inner->fclass == FI_CLASS_EP	? CHK_CLOSE_EP :
							  0;
	struct chk_close_once *w;
	size_t size;

	if (!(chk_fault.close_classes & cls) || !inner->ops->close)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -FI_ENOMEM;
	/* An older provider's table may be shorter: what it lacks stays NULL
	 * and its size says so. */
	size = inner->ops->size < sizeof(w->ops) ? inner->ops->size :
						   sizeof(w->ops);
	memcpy(&w->ops, inner->ops, size);
	w->ops.size = size;
	w->ops.close = chk_close_once;
	w->orig = inner->ops;
	w->dom = dom;
	inner->ops = &w->ops;
	return 0;
}

bool
chk_fault_close_pending(struct fid *inner)
{
	struct chk_close_once *w;

	if (inner->ops->close != chk_close_once)
		return false;
	w = container_of(inner->ops, struct chk_close_once, ops);
	return !__atomic_load_n(&w->refused, __ATOMIC_RELAXED);
}
