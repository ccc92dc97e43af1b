/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a registry without leases got wrong, on a real tcp
 * domain: every registration here is an fi_mr_reg and every close an fi_close,
 * through the counting registrar so a double close is caught before it reaches
 * libfabric.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "common/cache_registrar.h"
#include "1-cache/mrl_cache.inl"
#include "mrl_cache.h"
#include "common/mrlt.h"

static size_t page_size;
static struct creg_tcp tcp;
static struct mrl_cache *cache;
static struct creg creg;
static struct mrl_cache_domain *dom;
/* Application-side keys, counting up like an application's own. */
static uint64_t app_key = 1;

static int
fixture_open(void)
{
	struct mrl_domain_config dconf;
	int ret;

	creg_init(&creg, tcp.domain, 0);
	dconf = creg_domain_config(&creg);
	dconf.mr_key_size = tcp.info->domain_attr->mr_key_size;
	dconf.prov_key = !!(tcp.info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	ret = mrl_cache_create(NULL, &cache);
	if (ret)
		return ret;
	return mrl_cache_domain_open(cache, &dconf, &dom);
}

static void
fixture_close(void)
{
	mrl_cache_destroy(cache);
	cache = NULL;
	dom = NULL;
}

static void *
buffer(size_t len, size_t align)
{
	void *p = NULL;

	if (posix_memalign(&p, align, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* What a registry's callers did: register an extent themselves and track it,
 * then drop their own lease so the index is the only holder. */
static struct mrl_registration *
track_extent(void *mem, size_t len)
{
	struct mrl_registration *reg;
	void *mr, *desc;

	if (creg_registrar.reg(&creg, mem, len, MRL_CACHE_ACCESS, app_key++,
			       &mr, &desc))
		return NULL;
	if (mrl_cache_track(dom, (uintptr_t) mem, (uintptr_t) mem + len, mr,
			    desc, &reg)) {
		creg_registrar.close(&creg, mr);
		return NULL;
	}
	mrl_cache_lease_release(reg);
	return reg;
}

static unsigned
refs(struct mrl_registration *reg)
{
	return mrl_registration_refs(reg);
}

/* One registration covers a whole extent; freeing one value in it used to
 * close the registration a neighbour's transfer had on the wire (a fault in
 * fi_writemsg on a closed fid_mr). */
static void
test_invalidate_keeps_inflight_neighbour_open(void)
{
	uint8_t *extent = buffer(64 * 1024, page_size);
	uintptr_t base = (uintptr_t) extent;
	struct mrl_registration *tracked, *lease;

	CHECK(extent);
	CHECK_FI(fixture_open());
	tracked = track_extent(extent, 64 * 1024);
	CHECK(tracked);
	lease = mrl_cache_lookup(dom, base + 4096, base + 8192);
	CHECK(lease == tracked);
	CHECK_FI(mrl_cache_invalidate(cache, base + 32768, base + 36864));
	CHECK(mrl_cache_lookup(dom, base + 4096, base + 8192) == NULL);
	CHECK_EQ(1, refs(lease)); /* the in-flight operand is the sole holder */
	CHECK_EQ(0, atomic_load(&creg.closed));
	/* Still an open fid_mr whose descriptor a post can read. */
	CHECK(fi_mr_desc(creg_fid(mrl_registration_mr(lease))) ==
	      mrl_registration_desc(lease));
	mrl_cache_lease_release(lease);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	free(extent);
}

/* Neighbours in one allocator extent share one fi_mr_reg; a span that does
 * not contain the operand would pin the wrong memory and leave it bare. */
static void
test_span_widens_registration_and_foreign_span_is_refused(void)
{
	enum { EXTENT = 64 * 1024, OPERAND = 4096 };
	uint8_t *mem = buffer(3 * EXTENT, EXTENT);
	uintptr_t start = (uintptr_t) mem, outside = start + 2 * EXTENT;
	struct creg_span ans = {.base = start, .len = EXTENT};
	struct mrl_registration *first, *neighbour, *cached, *fallback;

	CHECK(mem);
	CHECK_FI(fixture_open());
	mrl_cache_set_span(dom, creg_span_fn, &ans);
	CHECK_FI(mrl_cache_acquire(dom, start, start + OPERAND, &first));
	CHECK_EQ(1, ans.calls);
	CHECK_FI(mrl_cache_acquire(dom, start + EXTENT - OPERAND,
				   start + EXTENT, &neighbour));
	CHECK_EQ(1, ans.calls); /* a hit never asks for a span */
	cached = mrl_cache_lookup(dom, start, start + OPERAND);
	CHECK(cached == neighbour && neighbour == first);
	CHECK_EQ(1, atomic_load(&creg.registered));

	ans.base = outside + EXTENT; /* a span past the operand */
	ans.len = OPERAND;
	CHECK_FI(mrl_cache_acquire(dom, outside, outside + OPERAND, &fallback));
	CHECK(fallback->base == outside && fallback->end == outside + OPERAND);
	CHECK(mrl_cache_lookup(dom, outside + EXTENT,
			       outside + EXTENT + OPERAND) == NULL);
	mrl_cache_lease_release(fallback);
	mrl_cache_lease_release(cached);
	mrl_cache_lease_release(neighbour);
	mrl_cache_lease_release(first);
	mrl_cache_set_span(dom, NULL, NULL);
	fixture_close();
	CHECK_EQ(2, atomic_load(&creg.closed));
	free(mem);
}

/* A registry without leases handed out a bare fid_mr after dropping its lock:
 * an invalidate could close it between the lookup and the post using it. */
static void
test_caller_lease_outlives_index_reference(void)
{
	uint8_t *extent = buffer(8192, page_size);
	uintptr_t base = (uintptr_t) extent;
	struct mrl_registration *lease;

	CHECK(extent);
	CHECK_FI(fixture_open());
	CHECK(track_extent(extent, 8192));
	lease = mrl_cache_lookup(dom, base, base + 8192);
	CHECK(lease);
	CHECK_FI(mrl_cache_invalidate(cache, base, base + 8192));
	CHECK(mrl_cache_lookup(dom, base, base + 8192) == NULL);
	CHECK_EQ(1, refs(lease));
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(lease);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	free(extent);
}

/* A pinned arena is one registration up front and no fi_mr_reg on the hot
 * path: an operand inside must reuse it, not register again. */
static void
test_pinned_span_serves_operands_inside_it(void)
{
	uint8_t *arena = buffer(64 * 1024, page_size);
	uintptr_t base = (uintptr_t) arena;
	struct mrl_registration *pin, *lease, *cached;

	CHECK(arena);
	CHECK_FI(fixture_open());
	CHECK_FI(mrl_cache_pin(dom, base, 64 * 1024, &pin));
	CHECK_FI(mrl_cache_acquire(dom, base + 4096, base + 8192, &lease));
	CHECK(lease == pin);
	cached = mrl_cache_lookup(dom, base + 4096, base + 8192);
	CHECK(cached == pin);
	CHECK_EQ(1, atomic_load(&creg.registered));
	mrl_cache_lease_release(cached);
	mrl_cache_lease_release(lease);
	mrl_cache_unpin(pin);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	free(arena);
}

/* Releasing a pin is a retire like invalidate: an operand mid-flight keeps
 * the descriptor valid until it completes. */
static void
test_unpin_retires_while_inflight_lease_keeps_it_open(void)
{
	uint8_t *arena = buffer(8192, page_size);
	uintptr_t base = (uintptr_t) arena, end = base + 8192;
	struct mrl_registration *pin, *lease;

	CHECK(arena);
	CHECK_FI(fixture_open());
	CHECK_FI(mrl_cache_pin(dom, base, 8192, &pin));
	lease = mrl_cache_lookup(dom, base, end);
	CHECK(lease == pin);
	mrl_cache_unpin(pin);
	CHECK(mrl_cache_lookup(dom, base, end) == NULL);
	CHECK_EQ(1, refs(lease));
	CHECK_EQ(0, atomic_load(&creg.closed));
	mrl_cache_lease_release(lease);
	CHECK_EQ(1, atomic_load(&creg.closed));
	fixture_close();
	free(arena);
}

/* The endpoint's domain went first and closed its registrations; the
 * region's own release afterwards must close nothing a second time. */
static void
test_region_outliving_domain_closes_nothing_twice(void)
{
	uint8_t *arena = buffer(8192, page_size);
	uintptr_t base = (uintptr_t) arena, end = base + 8192;
	struct mrl_registration *pin;

	CHECK(arena);
	CHECK_FI(fixture_open());
	CHECK_FI(mrl_cache_pin(dom, base, 8192, &pin));
	mrl_cache_domain_close(dom);
	CHECK(mrl_cache_lookup(dom, base, end) == NULL);
	CHECK_FI(mrl_cache_invalidate(cache, base, end));
	CHECK_EQ(0, atomic_load(&creg.closed)); /* the pin still holds it */
	mrl_cache_unpin(pin);
	CHECK_FI(mrl_cache_invalidate(cache, base, end));
	CHECK_EQ(1, atomic_load(&creg.closed));
	CHECK_EQ(0, atomic_load(&creg.double_closed));
	fixture_close();
	free(arena);
}

/* tcp takes the caller's keys and refuses one in use with -FI_ENOKEY: the
 * cache must neither collide with the application's keys nor give up when
 * one of its own is taken. */
static void
test_cache_keys_avoid_application_keys_on_tcp(void)
{
	uint8_t *mem = buffer(16 * page_size, page_size);
	struct fid_mr *app[4], *squatter;
	struct mrl_registration *r[8];

	CHECK(mem);
	CHECK_FI(fixture_open());
	for (int i = 0; i < 4; i++)
		CHECK_FI(fi_mr_reg(tcp.domain, mem, page_size,
				   FI_READ | FI_WRITE, 0, app_key++, 0, &app[i],
				   NULL));
	/* The cache's first key, taken by someone else. */
	CHECK_FI(fi_mr_reg(tcp.domain, mem, page_size, FI_READ, 0, UINT64_MAX,
			   0, &squatter, NULL));
	for (int i = 0; i < 8; i++)
		CHECK_FI(mrl_cache_acquire(dom, (uintptr_t) mem + i * page_size,
					   (uintptr_t) mem + i * page_size + 8,
					   &r[i]));
	CHECK(atomic_load(&creg.refusals) >= 1);
	for (int i = 0; i < 8; i++)
		mrl_cache_lease_release(r[i]);
	for (int i = 0; i < 4; i++)
		CHECK_FI(fi_close(&app[i]->fid));
	CHECK_FI(fi_close(&squatter->fid));
	fixture_close();
	free(mem);
}

/* rxm rendezvous over tcp (no FI_MR_VIRT_ADDR) reads an iov from offset 0 of
 * its MR: the MR must be a real fi_mr_reg starting exactly at the iov, even
 * inside an extent the cache already covers, and be reused on the next send. */
static void
test_acquire_based_registers_at_the_iov_on_tcp(void)
{
	uint8_t *mem = buffer(4 * page_size, page_size);
	uintptr_t base = (uintptr_t) mem, s = base + page_size + 24,
		  e = s + 1000;
	struct mrl_registration *wide, *r, *again;

	CHECK(mem);
	CHECK_FI(fixture_open());
	CHECK_FI(mrl_cache_acquire(dom, base, base + 4 * page_size, &wide));
	CHECK_FI(mrl_cache_acquire_based(dom, s, e, &r));
	CHECK(r != wide && r->base == s && r->end == e);
	CHECK_EQ(2, atomic_load(&creg.registered));
	CHECK_EQ(s, atomic_load(&creg.last_addr));
	CHECK_EQ(e - s, atomic_load(&creg.last_len));
	CHECK(creg_fid(mrl_registration_mr(r)) != NULL);
	CHECK(mrl_registration_desc(r) ==
	      fi_mr_desc(creg_fid(mrl_registration_mr(r))));
	CHECK_FI(mrl_cache_acquire_based(dom, s, s + 10, &again));
	CHECK(again == r);
	CHECK_EQ(2, atomic_load(&creg.registered));
	mrl_cache_lease_release(again);
	CHECK_FI(mrl_cache_invalidate(cache, s, s + 1));
	CHECK_EQ(0, atomic_load(&creg.closed)); /* both still leased */
	mrl_cache_lease_release(r);
	mrl_cache_lease_release(wide);
	CHECK_EQ(2, atomic_load(&creg.closed));
	fixture_close();
	CHECK_EQ(0, atomic_load(&creg.double_closed));
	free(mem);
}

int
main(int argc, char **argv)
{
	int ret;

	mrlt_select(argc - 1, argv + 1);
	page_size = (size_t) sysconf(_SC_PAGESIZE);
	ret = creg_tcp_open(&tcp);
	if (ret) {
		mrlt_skip("test_cache_tcp", "no tcp provider on loopback");
		return mrlt_done();
	}
	MRLT_RUN(test_invalidate_keeps_inflight_neighbour_open);
	MRLT_RUN(test_span_widens_registration_and_foreign_span_is_refused);
	MRLT_RUN(test_caller_lease_outlives_index_reference);
	MRLT_RUN(test_pinned_span_serves_operands_inside_it);
	MRLT_RUN(test_unpin_retires_while_inflight_lease_keeps_it_open);
	MRLT_RUN(test_region_outliving_domain_closes_nothing_twice);
	MRLT_RUN(test_cache_keys_avoid_application_keys_on_tcp);
	MRLT_RUN(test_acquire_based_registers_at_the_iov_on_tcp);
	MRLT_RUN(test_every_registration_closed_exactly_once);
	ret = creg_tcp_close(&tcp);
	if (ret)
		printf("# closing the tcp domain: %s\n", fi_strerror(-ret));
	return ret ? EXIT_FAILURE : mrlt_done();
}
