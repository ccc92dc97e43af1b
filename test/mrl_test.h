/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by every test program: TAP output, assertions, and
 * real-provider set-up on loopback.
 *
 * A test is a void function; MRL_RUN(fn) runs it and prints "ok N - fn" or
 * "not ok N - fn". CHECK* macros record the first failure with its location
 * and return from the test. mrl_test_done() returns the exit status.
 *
 * Resources: every fid, fi_info and buffer a test obtains through the
 * helpers below (or hands to mrl_track_fid) is tracked. When the test
 * function returns, however it returns, MRL_RUN closes the tracked fids
 * newest first, fails the test if any fi_close returns non-zero, then frees
 * the tracked buffers and infos. So a test can CHECK and return early and
 * still leave nothing open; a test that must close something itself calls
 * mrl_close(), which also untracks it.
 *
 * Provider helpers report what went wrong through mrl_test_fail() (with the
 * call and its error) and return a negative fi_errno, so a test only needs
 * CHECK_FI(helper(...)).
 */
#ifndef MRL_TEST_H
#define MRL_TEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* Wait sets, poll sets and fi_av_bind are deprecated in libfabric 2.x, yet
 * applications still call them and the hook must forward them: the tests
 * keep calling them, without the warning under 2.x headers. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

void mrl_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool mrl_test_failed(void);
void mrl_test_run(const char *name, void (*fn)(void));
void mrl_test_skip(const char *name, const char *why);
int mrl_test_done(void);
/* Text put in front of every test name from now on ("" or NULL for none),
 * so a program run once per provider prints unique names. */
void mrl_test_set_prefix(const char *prefix);
/* Mark the running test skipped with a reason (printf format): MRL_RUN then
 * prints "ok N - name # SKIP why" unless the test also failed. The test
 * should return right after. */
void mrl_test_skip_current(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define MRL_RUN(fn) mrl_test_run(#fn, fn)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			mrl_test_fail(__FILE__, __LINE__, "%s", #cond);        \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			mrl_test_fail(__FILE__, __LINE__, __VA_ARGS__);        \
			return;                                                \
		}                                                              \
	} while (0)

/* A libfabric call expected to return 0 (or a count >= 0). */
#define CHECK_FI(expr)                                                         \
	do {                                                                   \
		long long check_rc_ = (long long)(expr);                       \
		if (check_rc_ < 0) {                                           \
			mrl_test_fail(__FILE__, __LINE__, "%s = %lld (%s)",    \
				      #expr, check_rc_,                        \
				      fi_strerror((int)-check_rc_));           \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_EQ(expected, actual)                                             \
	do {                                                                   \
		long long check_e_ = (long long)(expected);                    \
		long long check_a_ = (long long)(actual);                      \
		if (check_e_ != check_a_) {                                    \
			mrl_test_fail(__FILE__, __LINE__,                      \
				      "%s == %s: expected %lld, got %lld",     \
				      #expected, #actual, check_e_, check_a_); \
			return;                                                \
		}                                                              \
	} while (0)

/* Two pointers must be equal (fids, contexts). */
#define CHECK_PTR(expected, actual)                                            \
	do {                                                                   \
		const void *check_pe_ = (const void *)(expected);              \
		const void *check_pa_ = (const void *)(actual);                \
		if (check_pe_ != check_pa_) {                                  \
			mrl_test_fail(__FILE__, __LINE__,                      \
				      "%s == %s: expected %p, got %p",         \
				      #expected, #actual, check_pe_,           \
				      check_pa_);                              \
			return;                                                \
		}                                                              \
	} while (0)

/* ------------------------------------------------------------------------
 * Resource tracking (see the top of this file).
 */

/* Close fid when the running test returns (newest first). NULL is ignored. */
void mrl_track_fid(struct fid *fid);
/* Close fid now and stop tracking it; records a failure naming `what` if
 * fi_close does not return 0. Returns fi_close's result. */
int mrl_close(struct fid *fid, const char *what);
/* Zeroed memory freed after the test's fids are closed (aborts on ENOMEM). */
void *mrl_alloc(size_t size);
/* Free info (fi_freeinfo) after the test's fids are closed; returns info. */
struct fi_info *mrl_track_info(struct fi_info *info);
/* Close every tracked fid newest first, then free buffers and infos.
 * Returns 0 or the first fi_close error (also recorded as a failure).
 * MRL_RUN calls it after each test; a test may call it too, to have
 * everything closed at a given point (e.g. before reading counts). */
int mrl_close_all(void);

/* ------------------------------------------------------------------------
 * Real providers.
 */

/* The API version the tests ask for. */
#define MRL_FI_VERSION FI_VERSION(1, 17)

/*
 * Bound of every wait loop (posts retried on -FI_EAGAIN, completion, counter
 * and EQ waits): iterations of one non-blocking poll of each side. Also
 * bounded by MRL_WAIT_SECONDS of wall time. Overridable with the
 * environment variables MRL_TEST_SPIN and MRL_TEST_WAIT_SECONDS. A wait
 * that hits the bound fails the test naming what it waited for.
 */
#define MRL_SPIN_MAX 50000000UL
#define MRL_WAIT_SECONDS 20

/* State of one bounded wait: mrl_wait_init(), then mrl_wait_over() once per
 * poll iteration; it returns true when the bound is hit. */
struct mrl_wait {
	unsigned long spins;
	unsigned long max_spins;
	double deadline;
};
void mrl_wait_init(struct mrl_wait *w);
/* The same with a wall bound of `seconds` (or the usual one if smaller):
 * for a look at something a provider may never do, before skipping it. */
void mrl_wait_init_for(struct mrl_wait *w, double seconds);
bool mrl_wait_over(struct mrl_wait *w);
/* Wait, yielding the CPU, until another thread stores `want` in *v; bounded
 * like mrl_wait_over. Returns whether *v reached it. */
bool mrl_wait_until_int(atomic_int *v, int want);

/*
 * Hints for provider `prov` (exact fabric_attr->prov_name such as
 * "tcp;ofi_rxm", or NULL for any) and endpoint type, asking for `caps`.
 * mode is FI_CONTEXT (pass a struct fi_context2 as every op's context),
 * mr_mode is every basic bit except FI_MR_LOCAL (VIRT_ADDR, ALLOCATED,
 * PROV_KEY, ENDPOINT: handle them with mrl_mr_reg/mrl_rma_addr), so desc
 * NULL is always legal. The caller may adjust the hints before mrl_getinfo.
 */
struct fi_info *mrl_hints(const char *prov, enum fi_ep_type type, uint64_t caps);
/*
 * fi_getinfo(MRL_FI_VERSION, node, service, flags, hints) keeping the first
 * result whose prov_name is exactly the hinted one, preferring
 * FI_SOCKADDR_IN addresses. Frees hints; *info is one tracked fi_info (its
 * next is NULL). Returns -FI_ENODATA without recording a failure when the
 * provider offers nothing matching (so callers can turn it into a skip).
 */
int mrl_getinfo(struct fi_info *hints, const char *node, const char *service,
		uint64_t flags, struct fi_info **info);

/* A fabric and a domain opened from one info; all tracked. */
struct mrl_domain {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};
int mrl_domain_open(struct fi_info *info, struct mrl_domain *d);

/* How mrl_peer_open builds an endpoint's companions. */
struct mrl_peer_opts {
	enum fi_cq_format cq_format;  /* 0: FI_CQ_FORMAT_TAGGED */
	enum fi_wait_obj cq_wait;     /* 0 (FI_WAIT_NONE) or e.g. FI_WAIT_UNSPEC */
	bool cntrs;                   /* open and bind tx_cntr, rx_cntr and
				       * rma_cntr (see struct mrl_peer) */
	enum fi_wait_obj cntr_wait;
	bool remote_cntr;             /* with cntrs: also remote_cntr
				       * (needs FI_RMA_EVENT in the info) */
};

/* One RDM/DGRAM endpoint with its CQ (bound FI_TRANSMIT|FI_RECV), AV,
 * optional counters, and the address of the peer it talks to. */
struct mrl_peer {
	struct mrl_domain *dom;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *tx_cntr;     /* FI_SEND */
	struct fid_cntr *rx_cntr;     /* FI_RECV */
	struct fid_cntr *rma_cntr;    /* FI_READ | FI_WRITE */
	struct fid_cntr *remote_cntr; /* FI_REMOTE_WRITE | FI_REMOTE_READ */
	struct fid_eq *eq;            /* optional: peeked by mrl_progress (the
				       * connection manager progresses there) */
	fi_addr_t peer;               /* the other endpoint in av */
	char name[256];               /* fi_getname of ep */
	size_t namelen;
};

/*
 * Open an endpoint on d with its companions (see mrl_peer_opts; opts may be
 * NULL) and enable it. For providers with FI_ADDR_STR names (shm) the
 * endpoint gets a name unique to this process and call, since two
 * endpoints opened from one info would otherwise collide.
 */
int mrl_peer_open(struct mrl_domain *d, const struct mrl_peer_opts *opts,
		  struct mrl_peer *p);
/* Insert each peer's name into the other's AV (synchronously). */
int mrl_peers_connect(struct mrl_peer *a, struct mrl_peer *b);
/* Both of the above for two endpoints on one domain. */
int mrl_rdm_pair_open(struct mrl_domain *d, const struct mrl_peer_opts *opts,
		      struct mrl_peer *a, struct mrl_peer *b);

/* Drive p's progress without consuming completions or events (CQ read of
 * 0 entries, counter reads, FI_PEEK read of p->eq). NULL is ignored. */
void mrl_progress(struct mrl_peer *p);

/*
 * Post expr, retrying while it returns -FI_EAGAIN and progressing peers a
 * and b (either may be NULL), within the wait bound. Evaluates to the
 * post's last return value (-FI_EAGAIN if the bound was hit).
 */
#define MRL_POST(expr, a, b)                                                   \
	({                                                                     \
		ssize_t post_rc_;                                              \
		struct mrl_wait post_w_;                                       \
		mrl_wait_init(&post_w_);                                       \
		while ((post_rc_ = (ssize_t)(expr)) == -FI_EAGAIN &&          \
		       !mrl_wait_over(&post_w_)) {                             \
			mrl_progress(a);                                       \
			mrl_progress(b);                                       \
		}                                                              \
		post_rc_;                                                      \
	})

/*
 * Read one completion from p->cq into entry (sized for p's CQ format),
 * progressing `other` meanwhile; src_addr non-NULL uses fi_cq_readfrom.
 * An error entry, a read error or hitting the wait bound records a failure
 * (naming `what`) and returns a negative fi_errno; returns 0 on success.
 */
int mrl_cq_wait(struct mrl_peer *p, struct mrl_peer *other, void *entry,
		fi_addr_t *src_addr, const char *what);
/*
 * Wait for an error entry on p->cq and read it with fi_cq_readerr into err
 * (zeroed first). A successful completion instead records a failure.
 * Returns 0 when an error entry was read.
 */
int mrl_cq_wait_err(struct mrl_peer *p, struct mrl_peer *other,
		    struct fi_cq_err_entry *err, const char *what);
/* Wait until fi_cntr_read(cntr) >= value, progressing `self` and `other`
 * meanwhile. A counter error (fi_cntr_readerr grows) records a failure. */
int mrl_cntr_wait(struct fid_cntr *cntr, uint64_t value, struct mrl_peer *self,
		  struct mrl_peer *other, const char *what);

/*
 * Register buf for `access` on d (tracked), binding and enabling it on ep
 * when the domain has FI_MR_ENDPOINT (ep may be NULL otherwise). Without
 * FI_MR_PROV_KEY keys are the application's and must be unique per
 * domain: the requested key comes from mrl_next_key(). Read the real key
 * with fi_mr_key.
 */
int mrl_mr_reg(struct mrl_domain *d, struct fid_ep *ep, void *buf, size_t len,
	       uint64_t access, struct fid_mr **mr);
/* A requested key no other helper call in this process used (from 0x1000
 * up; keys below are free for tests that pick their own). */
uint64_t mrl_next_key(void);
/* The address a peer names for offset 0 of buf registered in d: buf itself
 * under FI_MR_VIRT_ADDR, 0 otherwise. */
uint64_t mrl_rma_addr(const struct mrl_domain *d, const void *buf);

/* Read one event from eq without blocking; returns the event number (>= 0),
 * -FI_EAGAIN, or records a failure for an error entry (read with
 * fi_eq_readerr and described) and returns -FI_EAVAIL. */
ssize_t mrl_eq_poll(struct fid_eq *eq, uint32_t *event, void *buf, size_t len);
/* Wait (bounded) for one event on eq, progressing `a` and `b` (either may be
 * NULL: some providers, tcp for one, notice a peer's shutdown only while
 * their CQ is read); the event must be `expected`. */
int mrl_eq_wait(struct fid_eq *eq, uint32_t expected, void *buf, size_t len,
		struct mrl_peer *a, struct mrl_peer *b, const char *what);

/* Wait (bounded) for an error entry on eq and read it with fi_eq_readerr
 * into err (zeroed first); a regular event instead is a failure. */
int mrl_eq_wait_err(struct fid_eq *eq, struct fi_eq_err_entry *err,
		    struct mrl_peer *a, struct mrl_peer *b, const char *what);

/* A passive endpoint from d->info bound to a new EQ (*eq) and listening;
 * its address in addr (*addrlen bytes, in: the buffer's size). */
int mrl_pep_listen(struct mrl_domain *d, struct fid_eq **eq,
		   struct fid_pep **pep, void *addr, size_t *addrlen);
/*
 * An FI_EP_MSG endpoint from (a copy of) info with its own new EQ and CQ
 * (FI_CQ_FORMAT_DATA, bound FI_TRANSMIT|FI_RECV), enabled. dest non-NULL
 * sets the copy's dest_addr (the client side, before fi_connect); for the
 * server side pass the FI_CONNREQ info (its handle) and dest NULL. srx
 * non-NULL: opened with rx_ctx_cnt FI_SHARED_CONTEXT and bound to srx.
 */
int mrl_msg_ep_open(struct mrl_domain *d, struct fi_info *info,
		    const void *dest, size_t destlen, struct fid_ep *srx,
		    struct fid_eq **eq, struct fid_ep **ep, struct fid_cq **cq);

/*
 * A connected FI_EP_MSG pair in one domain (e.g. plain "tcp"): a passive
 * endpoint listening on the loopback, a client that fi_connect()s to it and
 * a server endpoint opened from the FI_CONNREQ info (info->handle) and
 * fi_accept()ed. Each side has its own EQ and CQ (bound FI_TRANSMIT|
 * FI_RECV). The fids the EQ events carried are recorded so tests can check
 * them against the objects they opened.
 */
struct mrl_msg_pair {
	struct mrl_domain *dom;
	struct fid_eq *pep_eq, *srv_eq, *cli_eq;
	struct fid_pep *pep;
	struct fid_ep *srv, *cli;
	struct fid_cq *srv_cq, *cli_cq;
	fid_t connreq_fid;       /* fid of the FI_CONNREQ event (want: pep) */
	fid_t srv_connected_fid; /* FI_CONNECTED on the server side (want: srv) */
	fid_t cli_connected_fid; /* FI_CONNECTED on the client side (want: cli) */
	void *connreq_handle;    /* info->handle of the FI_CONNREQ */
	struct mrl_peer cli_side, srv_side; /* views of the CQs and EQs for
					     * mrl_cq_wait/mrl_progress/MRL_POST */
};
/* srx non-NULL: the server endpoint is opened with rx_ctx_cnt
 * FI_SHARED_CONTEXT and bound to it. */
int mrl_msg_pair_open(struct mrl_domain *d, struct fid_ep *srx,
		      struct mrl_msg_pair *p);

#endif /* MRL_TEST_H */
