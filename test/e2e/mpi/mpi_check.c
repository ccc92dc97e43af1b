/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_check: a real MPI job over libfabric, run by test/e2e/mpi.sh under
 * FI_HOOK=mrlease (Open MPI's cm pml and ofi mtl over tcp;ofi_rxm). It moves
 * data the way MPI applications do and verifies every byte it receives:
 *
 *   pt2pt        blocking ping-pong and full-duplex exchanges of four
 *                messages in flight at once (received out of order), at
 *                every size 1..64 B and around each power of two up to
 *                8 MiB, into buffers whose neighbouring bytes must stay
 *                untouched; the sizes cross rxm's eager, segmented and
 *                rendezvous protocols, so leases are taken and dropped on
 *                every path;
 *   mprobe       matched probes: MPI_Mprobe/MPI_Mrecv, and MPI_Improbe/
 *                MPI_Imrecv with two messages claimed before either is
 *                received, 1 B to 1 MiB (the ofi mtl peeks with FI_CLAIM
 *                and receives with FI_CLAIM, the buffer's desc NULL);
 *   collectives  barrier, bcast from every root, reduce, allreduce, gather,
 *                scatter, allgather, alltoall, from 1 element to 8 MiB;
 *   alloc_mem    MPI_Alloc_mem/MPI_Free_mem churn: buffers of changing sizes
 *                freed while others stay live, so addresses come back for
 *                new memory that must not be served a stale registration;
 *   rma          MPI_Put, MPI_Get and MPI_Accumulate on an MPI_Win_allocate
 *                window and on an MPI_Win_create window over malloc'd
 *                memory, in fence epochs and in passive-target lock epochs.
 *
 * Rank 0 prints one line per section: "mpi_check: SECTION ok: ..." or
 * "mpi_check: SECTION FAILED: ...". Mismatches are printed to stderr by the
 * rank that saw them. The exit status is 0 only if every section passed.
 *
 * MPI_CHECK_MRCHECK=1: before MPI_Finalize each rank reads the strict
 * checker's counters from the loaded libmrcheck-fi.so (FI_PROVIDER_PATH)
 * and prints "mpi_check: rank R mrcheck: ...", failing if the checker is
 * absent or checked no post: zero violations prove nothing otherwise.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mrcheck.h"

#define MAX_MSG	     (8u << 20) /* largest point-to-point message */
#define GUARD	     64 /* bytes each side of a receive that must not change */
#define REPORT_LIMIT 20 /* mismatch lines printed per rank */

static int rank, nprocs;
static unsigned long failures; /* failed checks on this rank */
static unsigned long long verified; /* bytes verified on this rank */

/* ---- patterns ------------------------------------------------------- */

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* A seed unique to one message: its section, sizes index, round and sender,
 * so a buffer still holding an earlier message never passes. */
static uint64_t
seed_of(unsigned section, unsigned index, unsigned round, unsigned sender)
{
	return mix(((uint64_t) section << 48) ^ ((uint64_t) index << 28) ^
		   ((uint64_t) round << 12) ^ sender);
}

static void
fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t base = mix(seed);

	for (size_t i = 0; i < len; i += 8) {
		uint64_t word = mix(base + i / 8);

		memcpy(p + i, &word, len - i < 8 ? len - i : 8);
	}
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
fail(const char *fmt, ...)
{
	va_list ap;

	if (failures++ >= REPORT_LIMIT)
		return;
	fprintf(stderr, "mpi_check: rank %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Every byte of buf against fill(len, seed); one report per call. */
static void
verify(const void *buf, size_t len, uint64_t seed, const char *what,
       size_t size)
{
	unsigned char want[8];
	const unsigned char *p = buf;
	uint64_t base = mix(seed);
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t word = mix(base + i / 8);
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(want, &word, n);
		if (memcmp(p + i, want, n) == 0)
			continue;
		for (size_t j = 0; j < n; j++) {
			if (p[i + j] == want[j])
				continue;
			if (!bad++)
				first = i + j;
		}
	}
	verified += len;
	if (bad)
		fail("%s (size %zu): %zu of %zu bytes differ, first at offset "
		     "%zu",
		     what, size, bad, len, first);
}

/* A receive area: GUARD bytes of a pattern each side of [at, at + len). */
static void
guard_fill(unsigned char *at, size_t len, uint64_t seed)
{
	fill(at - GUARD, GUARD, seed ^ 1);
	fill(at + len, GUARD, seed ^ 2);
}

static void
guard_verify(const unsigned char *at, size_t len, uint64_t seed,
	     const char *what)
{
	verify(at - GUARD, GUARD, seed ^ 1, what, len);
	verify(at + len, GUARD, seed ^ 2, what, len);
}

static void *
xmalloc(size_t len)
{
	void *p = malloc(len);

	if (!p) {
		fprintf(stderr,
			"mpi_check: rank %d: out of memory (%zu bytes)\n", rank,
			len);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* Sums the failures of every rank; rank 0 prints the section's verdict. */
static bool
section_end(const char *name, const char *what, double start,
	    unsigned long failures_before, unsigned long long verified_before)
{
	unsigned long mine = failures - failures_before, all = 0;
	unsigned long long bytes = verified - verified_before, all_bytes = 0;

	MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	MPI_Allreduce(&bytes, &all_bytes, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0) {
		if (all)
			printf("mpi_check: %s FAILED: %lu failed checks (%s)\n",
			       name, all, what);
		else
			printf("mpi_check: %s ok: %s, %llu bytes verified, "
			       "%.2f s\n",
			       name, what, all_bytes, MPI_Wtime() - start);
		fflush(stdout);
	}
	return all == 0;
}

/* ---- point to point ---------------------------------------------------- */

/* 1..64 B, then 2^k - 1, 2^k, 2^k + 1 and 3 * 2^(k-1) + 5 up to 8 MiB. */
static size_t
pt2pt_sizes(size_t *sizes)
{
	size_t n = 0;

	for (size_t s = 1; s <= 64; s++)
		sizes[n++] = s;
	for (size_t p = 128; p <= MAX_MSG; p *= 2) {
		sizes[n++] = p - 1;
		sizes[n++] = p;
		if (p < MAX_MSG) {
			sizes[n++] = p + 1;
			sizes[n++] = p + p / 2 + 5;
		}
	}
	return n;
}

#define PIECES 4

static void
pt2pt_exchange(unsigned char *sbuf, unsigned char *rbuf, size_t off,
	       size_t size, unsigned index, int partner)
{
	MPI_Request req[2 * PIECES];
	size_t at[PIECES + 1];
	int pieces = size < PIECES ? 1 : PIECES, nreq = 0;

	for (int i = 0; i <= pieces; i++)
		at[i] = size * (size_t) i / (size_t) pieces;
	guard_fill(rbuf + off, size, seed_of(1, index, 9, (unsigned) rank));
	/* Receives posted last piece first: matching by tag, completing in
	 * any order, each with its own lease. */
	for (int i = pieces - 1; i >= 0; i--)
		MPI_Irecv(rbuf + off + at[i], (int) (at[i + 1] - at[i]),
			  MPI_BYTE, partner, 100 + i, MPI_COMM_WORLD,
			  &req[nreq++]);
	for (int i = 0; i < pieces; i++) {
		fill(sbuf + off + at[i], at[i + 1] - at[i],
		     seed_of(1, index, 10 + (unsigned) i, (unsigned) rank));
		MPI_Isend(sbuf + off + at[i], (int) (at[i + 1] - at[i]),
			  MPI_BYTE, partner, 100 + i, MPI_COMM_WORLD,
			  &req[nreq++]);
	}
	MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
	for (int i = 0; i < pieces; i++)
		verify(rbuf + off + at[i], at[i + 1] - at[i],
		       seed_of(1, index, 10 + (unsigned) i, (unsigned) partner),
		       "pt2pt exchange", size);
	guard_verify(rbuf + off, size, seed_of(1, index, 9, (unsigned) rank),
		     "pt2pt exchange guard");
}

static void
pt2pt_ping_pong(unsigned char *sbuf, unsigned char *rbuf, size_t off,
		size_t size, unsigned index, int partner)
{
	uint64_t mine = seed_of(1, index, 0, (unsigned) rank);
	uint64_t theirs = seed_of(1, index, 0, (unsigned) partner);
	bool first = rank < partner;

	guard_fill(rbuf + off, size, mine);
	fill(sbuf + off, size, mine);
	if (first)
		MPI_Send(sbuf + off, (int) size, MPI_BYTE, partner, 1,
			 MPI_COMM_WORLD);
	MPI_Recv(rbuf + off, (int) size, MPI_BYTE, partner, 1, MPI_COMM_WORLD,
		 MPI_STATUS_IGNORE);
	if (!first)
		MPI_Send(sbuf + off, (int) size, MPI_BYTE, partner, 1,
			 MPI_COMM_WORLD);
	verify(rbuf + off, size, theirs, "pt2pt ping-pong", size);
	guard_verify(rbuf + off, size, mine, "pt2pt ping-pong guard");
}

static bool
section_pt2pt(void)
{
	size_t sizes[64 + 4 * 24], n = pt2pt_sizes(sizes);
	size_t len = MAX_MSG + 2 * GUARD + 64;
	unsigned char *sbuf = xmalloc(len), *rbuf = xmalloc(len);
	unsigned long f0 = failures;
	unsigned long long v0 = verified;
	double start = MPI_Wtime();
	int partner = rank ^ 1;
	char what[128];

	if (partner < nprocs) {
		for (size_t i = 0; i < n; i++) {
			/* Offsets vary so operands start at every alignment. */
			size_t off = GUARD + i % 61;

			pt2pt_ping_pong(sbuf, rbuf, off, sizes[i], (unsigned) i,
					partner);
			pt2pt_exchange(sbuf, rbuf, off, sizes[i], (unsigned) i,
				       partner);
		}
	}
	free(sbuf);
	free(rbuf);
	snprintf(what, sizeof(what), "%zu sizes from %zu B to %zu B", n,
		 sizes[0], sizes[n - 1]);
	return section_end("pt2pt", what, start, f0, v0);
}

/* ---- matched probes --------------------------------------------------- */

/* Around rxm's eager limit (16 KiB) and well above it (rendezvous). */
static const size_t mprobe_sizes[] = {1,	 8,	    64,	     4096,
				      16384, 16384 + 1, 65536 + 3, 1u << 20};
#define MPROBE_MAX (1u << 20)

/* The message a matched probe returned, received into rbuf + off: its
 * count and every byte checked. */
static void
mprobe_check(const unsigned char *rbuf, size_t off, size_t size,
	     MPI_Status *status, uint64_t seed, uint64_t guard,
	     const char *what)
{
	int count = -1;

	MPI_Get_count(status, MPI_BYTE, &count);
	if (count != (int) size)
		fail("%s (size %zu): count %d", what, size, count);
	verify(rbuf + off, size, seed, what, size);
	guard_verify(rbuf + off, size, guard, what);
}

/* MPI_Mprobe then MPI_Mrecv of one message, and MPI_Improbe then
 * MPI_Imrecv of two messages claimed before either is received (two
 * claims in flight), the second tag probed first; full duplex. */
static void
mprobe_round(unsigned char *sbuf, unsigned char *rbuf, size_t off, size_t size,
	     unsigned index, int partner)
{
	uint64_t guard = seed_of(5, index, 9, (unsigned) rank);
	MPI_Request sreq[3], rreq[2];
	MPI_Message msg[2];
	MPI_Status st[2];
	int flag;

	for (int i = 0; i < 3; i++) {
		fill(sbuf + i * (MPROBE_MAX + 2 * GUARD) + off, size,
		     seed_of(5, index, (unsigned) i, (unsigned) rank));
		MPI_Isend(sbuf + i * (MPROBE_MAX + 2 * GUARD) + off, (int) size,
			  MPI_BYTE, partner, 300 + i, MPI_COMM_WORLD, &sreq[i]);
	}
	guard_fill(rbuf + off, size, guard);
	MPI_Mprobe(partner, 300, MPI_COMM_WORLD, &msg[0], &st[0]);
	MPI_Mrecv(rbuf + off, (int) size, MPI_BYTE, &msg[0], &st[0]);
	mprobe_check(rbuf, off, size, &st[0],
		     seed_of(5, index, 0, (unsigned) partner), guard,
		     "mprobe/mrecv");

	for (int i = 1; i >= 0; i--) {
		do
			MPI_Improbe(partner, 301 + i, MPI_COMM_WORLD, &flag,
				    &msg[i], &st[i]);
		while (!flag);
	}
	for (int i = 0; i < 2; i++) {
		guard_fill(rbuf + (size_t) (i + 1) * (MPROBE_MAX + 2 * GUARD) +
				   off,
			   size, guard);
		MPI_Imrecv(rbuf + (size_t) (i + 1) * (MPROBE_MAX + 2 * GUARD) +
				   off,
			   (int) size, MPI_BYTE, &msg[i], &rreq[i]);
	}
	MPI_Waitall(2, rreq, st);
	for (int i = 0; i < 2; i++)
		mprobe_check(rbuf + (size_t) (i + 1) * (MPROBE_MAX + 2 * GUARD),
			     off, size, &st[i],
			     seed_of(5, index, 1 + (unsigned) i,
				     (unsigned) partner),
			     guard, "improbe/imrecv");
	MPI_Waitall(3, sreq, MPI_STATUSES_IGNORE);
}

static bool
section_mprobe(void)
{
	size_t n = sizeof(mprobe_sizes) / sizeof(mprobe_sizes[0]);
	size_t len = 3 * (MPROBE_MAX + 2 * GUARD) + 64;
	unsigned char *sbuf = xmalloc(len), *rbuf = xmalloc(len);
	unsigned long f0 = failures;
	unsigned long long v0 = verified;
	double start = MPI_Wtime();
	int partner = rank ^ 1;

	if (partner < nprocs)
		for (size_t i = 0; i < n; i++)
			mprobe_round(sbuf, rbuf, GUARD + i % 61,
				     mprobe_sizes[i], (unsigned) i, partner);
	free(sbuf);
	free(rbuf);
	return section_end("mprobe",
			   "MPI_Mprobe/MPI_Mrecv and MPI_Improbe/MPI_Imrecv "
			   "(two claims in flight), 1 B to 1 MiB",
			   start, f0, v0);
}

/* ---- collectives ------------------------------------------------------ */

/* Element i of rank r's contribution to a reduction of count elements. */
static uint64_t
contribution(unsigned index, int r, size_t i)
{
	return mix(seed_of(2, index, 0, (unsigned) r) + i);
}

static void
coll_reductions(uint64_t *in, uint64_t *out, size_t count, unsigned index)
{
	int root = (int) (index % (unsigned) nprocs);

	for (size_t i = 0; i < count; i++)
		in[i] = contribution(index, rank, i);
	MPI_Allreduce(in, out, (int) count, MPI_UINT64_T, MPI_SUM,
		      MPI_COMM_WORLD);
	for (size_t i = 0; i < count; i++) {
		uint64_t want = 0;

		for (int r = 0; r < nprocs; r++)
			want += contribution(index, r, i);
		if (out[i] != want) {
			fail("allreduce sum (count %zu): element %zu is "
			     "%" PRIu64 ", want %" PRIu64,
			     count, i, out[i], want);
			break;
		}
	}
	verified += count * sizeof(*out);
	MPI_Reduce(in, out, (int) count, MPI_UINT64_T, MPI_MAX, root,
		   MPI_COMM_WORLD);
	if (rank != root)
		return;
	for (size_t i = 0; i < count; i++) {
		uint64_t want = 0;

		for (int r = 0; r < nprocs; r++)
			if (contribution(index, r, i) > want)
				want = contribution(index, r, i);
		if (out[i] != want) {
			fail("reduce max (count %zu): element %zu is %" PRIu64
			     ", want %" PRIu64,
			     count, i, out[i], want);
			break;
		}
	}
	verified += count * sizeof(*out);
}

static void
coll_bcast(unsigned char *buf, size_t len, unsigned index)
{
	for (int root = 0; root < nprocs; root++) {
		uint64_t seed =
			seed_of(3, index, (unsigned) root, (unsigned) root);

		if (rank == root)
			fill(buf, len, seed);
		else
			memset(buf, 0, len);
		MPI_Bcast(buf, (int) len, MPI_BYTE, root, MPI_COMM_WORLD);
		verify(buf, len, seed, "bcast", len);
	}
}

/* Gather, scatter, allgather and alltoall of len bytes per rank: block j of
 * rank r carries seed_of(section, index, j, r). */
static void
coll_blocks(unsigned char *mine, unsigned char *all, size_t len, unsigned index)
{
	int root = (int) (index % (unsigned) nprocs);

	fill(mine, len, seed_of(4, index, 0, (unsigned) rank));
	memset(all, 0, len * (size_t) nprocs);
	MPI_Gather(mine, (int) len, MPI_BYTE, all, (int) len, MPI_BYTE, root,
		   MPI_COMM_WORLD);
	for (int r = 0; rank == root && r < nprocs; r++)
		verify(all + (size_t) r * len, len,
		       seed_of(4, index, 0, (unsigned) r), "gather", len);

	if (rank == root)
		for (int r = 0; r < nprocs; r++)
			fill(all + (size_t) r * len, len,
			     seed_of(5, index, (unsigned) r, (unsigned) root));
	memset(mine, 0, len);
	MPI_Scatter(all, (int) len, MPI_BYTE, mine, (int) len, MPI_BYTE, root,
		    MPI_COMM_WORLD);
	verify(mine, len, seed_of(5, index, (unsigned) rank, (unsigned) root),
	       "scatter", len);

	fill(mine, len, seed_of(6, index, 0, (unsigned) rank));
	memset(all, 0, len * (size_t) nprocs);
	MPI_Allgather(mine, (int) len, MPI_BYTE, all, (int) len, MPI_BYTE,
		      MPI_COMM_WORLD);
	for (int r = 0; r < nprocs; r++)
		verify(all + (size_t) r * len, len,
		       seed_of(6, index, 0, (unsigned) r), "allgather", len);
}

static void
coll_alltoall(unsigned char *in, unsigned char *out, size_t len, unsigned index)
{
	for (int j = 0; j < nprocs; j++)
		fill(in + (size_t) j * len, len,
		     seed_of(7, index, (unsigned) j, (unsigned) rank));
	memset(out, 0, len * (size_t) nprocs);
	MPI_Alltoall(in, (int) len, MPI_BYTE, out, (int) len, MPI_BYTE,
		     MPI_COMM_WORLD);
	for (int r = 0; r < nprocs; r++)
		verify(out + (size_t) r * len, len,
		       seed_of(7, index, (unsigned) rank, (unsigned) r),
		       "alltoall", len);
}

static bool
section_collectives(void)
{
	static const size_t counts[] = {1, 3, 1025, 16384, 65536, 1u << 20};
	size_t ncounts = sizeof(counts) / sizeof(counts[0]);
	size_t max_bytes = counts[ncounts - 1] * sizeof(uint64_t);
	uint64_t *in = xmalloc(max_bytes), *out = xmalloc(max_bytes);
	unsigned char *all = xmalloc(max_bytes * (size_t) nprocs);
	unsigned char *all2 = xmalloc(max_bytes * (size_t) nprocs);
	unsigned long f0 = failures;
	unsigned long long v0 = verified;
	double start = MPI_Wtime();

	for (size_t i = 0; i < ncounts; i++) {
		size_t bytes = counts[i] * sizeof(uint64_t);

		MPI_Barrier(MPI_COMM_WORLD);
		coll_bcast((unsigned char *) in, bytes, (unsigned) i);
		coll_reductions(in, out, counts[i], (unsigned) i);
		coll_blocks((unsigned char *) in, all, bytes, (unsigned) i);
		coll_alltoall(all2, all, bytes, (unsigned) i);
	}
	free(in);
	free(out);
	free(all);
	free(all2);
	return section_end(
		"collectives",
		"barrier, bcast, reduce, allreduce, gather, scatter, "
		"allgather, alltoall, 8 B to 8 MiB per rank",
		start, f0, v0);
}

/* ---- MPI_Alloc_mem churn -------------------------------------------- */

#define CHURN_ROUNDS 128
#define CHURN_LIVE   4

static bool
section_alloc_mem(void)
{
	static const size_t sizes[] = {1000,   4096,	 16384 + 17,	65536,
				       200000, 1u << 20, 123457,	8191,
				       40000,  300,	 (2u << 20) - 1};
	size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	unsigned char *live[CHURN_LIVE] = {0};
	size_t live_len[CHURN_LIVE] = {0};
	unsigned long f0 = failures;
	unsigned long long v0 = verified;
	double start = MPI_Wtime();
	int partner = rank ^ 1;

	for (unsigned round = 0; partner < nprocs && round < CHURN_ROUNDS;
	     round++) {
		unsigned slot = round % CHURN_LIVE;
		size_t len = sizes[(round * 7) % nsizes];
		uint64_t mine = seed_of(8, 0, round, (unsigned) rank);
		uint64_t theirs = seed_of(8, 0, round, (unsigned) partner);
		unsigned char *buf;
		int sfirst = rank < partner;

		if (live[slot])
			MPI_Free_mem(live[slot]);
		MPI_Alloc_mem((MPI_Aint) len, MPI_INFO_NULL, &buf);
		live[slot] = buf;
		live_len[slot] = len;
		/* Send from the new buffer, receive into it, both ways. */
		fill(buf, len, mine);
		if (sfirst) {
			MPI_Send(buf, (int) len, MPI_BYTE, partner, 2,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int) len, MPI_BYTE, partner, 2,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			unsigned char *tmp = xmalloc(len);

			MPI_Recv(tmp, (int) len, MPI_BYTE, partner, 2,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int) len, MPI_BYTE, partner, 2,
				 MPI_COMM_WORLD);
			memcpy(buf, tmp, len);
			free(tmp);
		}
		verify(buf, len, theirs, "alloc_mem exchange", len);
		/* A buffer from an earlier round, still live, must still carry
		 * what it received then: send it over again. */
		slot = (round + 1) % CHURN_LIVE;
		if (live[slot] && round >= CHURN_LIVE) {
			unsigned char *back = xmalloc(live_len[slot]);

			MPI_Sendrecv(live[slot], (int) live_len[slot], MPI_BYTE,
				     partner, 3, back, (int) live_len[slot],
				     MPI_BYTE, partner, 3, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE);
			verify(back, live_len[slot],
			       seed_of(8, 0, round + 1 - CHURN_LIVE,
				       (unsigned) rank),
			       "alloc_mem older buffer", live_len[slot]);
			free(back);
		}
	}
	for (unsigned i = 0; i < CHURN_LIVE; i++)
		if (live[i])
			MPI_Free_mem(live[i]);
	return section_end(
		"alloc_mem",
		"128 rounds of MPI_Alloc_mem/MPI_Free_mem, 300 B to 2 MiB, "
		"4 live",
		start, f0, v0);
}

/* ---- one-sided --------------------------------------------------------- */

#define WIN_PAYLOAD (4u << 20)
#define WIN_LEN	    (WIN_PAYLOAD + 2 * GUARD)

static void
rma_fence_put_get(MPI_Win win, unsigned char *base, unsigned char *local,
		  size_t size, unsigned index, const char *kind)
{
	int target = (rank + 1) % nprocs, source = (rank + nprocs - 1) % nprocs;
	uint64_t put = seed_of(9, index, 0, (unsigned) rank);
	uint64_t put_in = seed_of(9, index, 0, (unsigned) source);
	uint64_t here = seed_of(10, index, 0, (unsigned) rank);
	uint64_t there = seed_of(10, index, 0, (unsigned) target);
	char what[64];

	/* Put: the previous rank writes [GUARD, GUARD + size) of this window.
	 */
	guard_fill(base + GUARD, size, here);
	fill(local, size, put);
	MPI_Win_fence(0, win);
	MPI_Put(local, (int) size, MPI_BYTE, target, GUARD, (int) size,
		MPI_BYTE, win);
	MPI_Win_fence(0, win);
	snprintf(what, sizeof(what), "put (%s window)", kind);
	verify(base + GUARD, size, put_in, what, size);
	guard_verify(base + GUARD, size, here, what);

	/* Get: read the next rank's window into a guarded local buffer. */
	fill(base + GUARD, size, here);
	guard_fill(local + GUARD, size, put);
	MPI_Win_fence(0, win);
	MPI_Get(local + GUARD, (int) size, MPI_BYTE, target, GUARD, (int) size,
		MPI_BYTE, win);
	MPI_Win_fence(0, win);
	snprintf(what, sizeof(what), "get (%s window)", kind);
	verify(local + GUARD, size, there, what, size);
	guard_verify(local + GUARD, size, put, what);
}

/* Every rank adds its contribution to every rank's window. */
static void
rma_fence_accumulate(MPI_Win win, unsigned char *base, uint64_t *local,
		     size_t count, unsigned index, const char *kind)
{
	uint64_t *target_elems = (uint64_t *) (base + GUARD);
	char what[64];

	for (size_t i = 0; i < count; i++)
		target_elems[i] =
			mix(seed_of(11, index, 1, (unsigned) rank) + i);
	for (size_t i = 0; i < count; i++)
		local[i] = contribution(index + 64, rank, i);
	MPI_Win_fence(0, win);
	for (int t = 0; t < nprocs; t++)
		MPI_Accumulate(local, (int) count, MPI_UINT64_T, t, GUARD,
			       (int) count, MPI_UINT64_T, MPI_SUM, win);
	MPI_Win_fence(0, win);
	snprintf(what, sizeof(what), "accumulate (%s window)", kind);
	for (size_t i = 0; i < count; i++) {
		uint64_t want = mix(seed_of(11, index, 1, (unsigned) rank) + i);

		for (int r = 0; r < nprocs; r++)
			want += contribution(index + 64, r, i);
		if (target_elems[i] != want) {
			fail("%s (count %zu): element %zu is %" PRIu64
			     ", want %" PRIu64,
			     what, count, i, target_elems[i], want);
			break;
		}
	}
	verified += count * sizeof(uint64_t);
}

/* Passive target: Put under an exclusive lock, Get under a shared one. */
static void
rma_lock_put_get(MPI_Win win, unsigned char *base, unsigned char *local,
		 size_t size, unsigned index, const char *kind)
{
	int target = (rank + 1) % nprocs, source = (rank + nprocs - 1) % nprocs;
	uint64_t put = seed_of(12, index, 0, (unsigned) rank);
	uint64_t put_in = seed_of(12, index, 0, (unsigned) source);
	char what[64];

	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
	guard_fill(base + GUARD, size, put);
	MPI_Win_unlock(rank, win);
	fill(local, size, put);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
	MPI_Put(local, (int) size, MPI_BYTE, target, GUARD, (int) size,
		MPI_BYTE, win);
	MPI_Win_unlock(target, win);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
	snprintf(what, sizeof(what), "locked put (%s window)", kind);
	verify(base + GUARD, size, put_in, what, size);
	guard_verify(base + GUARD, size, put, what);
	MPI_Win_unlock(rank, win);

	/* The next rank's window now holds its own source's pattern. */
	guard_fill(local + GUARD, size, put ^ 3);
	MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
	MPI_Get(local + GUARD, (int) size, MPI_BYTE, target, GUARD, (int) size,
		MPI_BYTE, win);
	MPI_Win_unlock(target, win);
	snprintf(what, sizeof(what), "locked get (%s window)", kind);
	verify(local + GUARD, size, put, what, size);
	guard_verify(local + GUARD, size, put ^ 3, what);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void
rma_on_window(MPI_Win win, unsigned char *base, const char *kind)
{
	static const size_t sizes[] = {1,	  7,	    4096,
				       65536 + 3, 1u << 20, WIN_PAYLOAD};
	static const size_t counts[] = {1, 100, 8192, 131072};
	unsigned char *local = xmalloc(WIN_LEN);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		rma_fence_put_get(win, base, local, sizes[i], (unsigned) i,
				  kind);
		rma_lock_put_get(win, base, local, sizes[i], (unsigned) i,
				 kind);
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		rma_fence_accumulate(win, base, (uint64_t *) local, counts[i],
				     (unsigned) i, kind);
	free(local);
}

static bool
section_rma(void)
{
	unsigned long f0 = failures;
	unsigned long long v0 = verified;
	double start = MPI_Wtime();
	unsigned char *base, *heap;
	MPI_Win win;

	MPI_Win_allocate(WIN_LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
			 &win);
	rma_on_window(win, base, "allocated");
	MPI_Win_free(&win);

	heap = xmalloc(WIN_LEN);
	MPI_Win_create(heap, WIN_LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	rma_on_window(win, heap, "created");
	MPI_Win_free(&win);
	free(heap);
	return section_end("rma",
			   "put, get (fence and lock epochs) 1 B to 4 MiB, "
			   "accumulate sum 1 to 131072 elements, allocated and "
			   "created windows",
			   start, f0, v0);
}

/* ---- the strict checker --------------------------------------------- */

static bool
report_mrcheck(void)
{
	struct mrcheck_ops *ops = mrcheck_loaded_ops();
	struct mrcheck_stats st = {0};

	if (!ops || ops->query(ops, &st, sizeof(st))) {
		printf("mpi_check: rank %d mrcheck: not loaded\n", rank);
		return false;
	}
	printf("mpi_check: rank %d mrcheck: strict_domains=%" PRIu64
	       " posts_checked=%" PRIu64 " mr_opened=%" PRIu64
	       " ops_tracked=%" PRIu64 " violations=%" PRIu64 "\n",
	       rank, st.strict_domains, st.posts_checked, st.mr_opened,
	       st.ops_tracked, st.violations);
	return st.strict_domains > 0 && st.posts_checked > 0 &&
	       st.violations == 0;
}

int
main(int argc, char **argv)
{
	const char *check = getenv("MPI_CHECK_MRCHECK");
	bool ok = true;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (nprocs < 2) {
		if (rank == 0)
			printf("mpi_check: needs at least 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	ok &= section_pt2pt();
	ok &= section_mprobe();
	ok &= section_collectives();
	ok &= section_alloc_mem();
	ok &= section_rma();
	if (check && strcmp(check, "1") == 0) {
		fflush(stdout);
		ok &= report_mrcheck();
		fflush(stdout);
	}
	MPI_Finalize();
	return ok ? 0 : 1;
}
