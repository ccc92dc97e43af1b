/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path of the mrlease personality: operand resolution on posts,
 * operation contexts that carry leases from post to completion, and the
 * completion paths (CQ reads, counters, cancel, endpoint close) that give
 * the leases back.
 *
 * What it guarantees.
 * - A post whose local operands need no lease (a descriptor given, an operand
 *   below the endpoint's threshold, an inject) is forwarded with the
 *   application's own arguments and context: no pool entry, no context swap.
 * - A post that takes leases passes the provider an operation context (a
 *   struct mrl_op, first member a struct fi_context2 the provider may write
 *   into) carrying the application's context and the leases; a claiming
 *   receive (FI_CLAIM) passes the application's context instead, the one
 *   its peek gave the provider, and its receive CQ finds its op by that
 *   context (mrl_xfer_claim.c). Each lease is released exactly once: when
 *   the provider reports the operation complete (success, error or cancel;
 *   for FI_MULTI_RECV when it releases the buffer), when the post fails, or
 *   when the endpoint closes (after the inner fi_close returned, so the
 *   provider has let go).
 * - Completion entries are mapped back to the application's context;
 *   completions the application did not ask for are consumed here and never
 *   reach it. A read whose entries were all consumed returns -FI_EAGAIN.
 *
 * How an operation context is recognised. Every struct mrl_op lives in one
 * process-wide reserved address range (mrl_xfer_op_region_base), so a
 * completion's op_context is ours exactly when it falls inside that range
 * (one subtraction and compare per entry), and the op's pool names the hook
 * domain that posted it (the other instance of a stacked pair never
 * mistakes it for its own). Application contexts are never dereferenced.
 * The range is reserved PROT_NONE and committed chunk by chunk, so an
 * application object can never sit inside it.
 *
 * Threading. Pools are per endpoint; completion runs on whichever thread
 * reads the CQ or counter. Under FI_THREAD_DOMAIN and FI_THREAD_COMPLETION
 * the application serialises every object sharing a completion structure,
 * so posts, completions and endpoint close never overlap: such "serial"
 * pools keep a plain free list and the out-of-line completion changes op
 * states with plain stores. Otherwise the free list is a lock-free stack
 * (ABA tag in the head word, ops named by 32-bit offsets in the region)
 * that posters pop and completions push from any thread, and an op's state
 * changes by CAS so that completion and endpoint close release its leases
 * once (the inline completion CASes in every pool: the CAS is also how it
 * tells its case). In front of either, the thread that created the pool
 * (its owner, usually the one posting) keeps the ops it posted and
 * completed itself on a list of its own: plain pop, release-store push. A
 * mutex is taken only to grow a shared pool or scan it (fi_cancel).
 * FI_MULTI_RECV ops, the only ones with several completions, are the
 * exception to "an entry naming an op is read once": on a shared pool
 * another reader may hold an earlier entry of one while its final
 * completion frees it, so the CQ they complete on is "guarded" before the
 * first is posted (reads counted, the op's return to the pool deferred
 * until the readers in flight at its final completion exited:
 * mrl_xfer_cq_guard.c, which also argues why it is safe and what is
 * left).
 *
 * Stacked pairs. Such an inner domain is by default not wrapped at all
 * (mrl_hook_fabric_bypass_domain, FI_MRLEASE_HOOK_INNER). When it is, its
 * endpoints, CQs and counters (a domain that can never lease:
 * mrl_xfer_domain_leases, the inner instance of tcp;ofi_rxm without
 * FI_MR_LOCAL) keep the passthrough's tables, with the CQ reads and RMA
 * calls a utility provider makes per operation forwarded without the
 * passthrough's per-call checks: they pay what the passthrough pays, or
 * less.
 *
 * Cost. A post that needs no lease pays one load of the endpoint's
 * threshold and a compare (or a loop over the iovs) before the inner call;
 * a CQ read with no op entry pays a range check and a load (the claims in
 * flight) per entry, a locked lookup while a claim is in flight.
 *
 * The single-buffer calls (fi_read, fi_write, fi_writedata, fi_send,
 * fi_senddata, fi_recv and the tagged ones) are one row each, in their
 * family's file, and their entry point, counting twin, pop and leased half
 * are made from that row (mrl_xfer_single.h). What the shape buys: a hit on
 * the thread that owns the endpoint's pool runs the entry point (checks,
 * the op off the owner's list, the operands into it) and the leased half
 * (the lease, the inner call) and nothing else: the counting of small
 * operands, the shared pool's pop and the slow path each have a function
 * of their own off that route, and the completion is read inline
 * (mrl_xfer_op_complete_ok). A change to the hit path is made once, in
 * mrl_xfer_single.h, for all nine calls. A post the provider refuses with
 * -FI_EAGAIN runs both halves and gives its op back. bench/xfer_ir.sh
 * counts the hook's instructions per leased operation, per function, and
 * bench/xfer_bench its rate against no hook; bench/README.md has the
 * method and the figures.
 *
 * Not leased (forwarded as is): posts with more than MRL_XFER_IOV_MAX local
 * iovs; peeks (FI_PEEK) and FI_DISCARD, which move no data; claims that
 * cannot be found by their context (mrl_xfer_claim.c); FI_MULTI_RECV
 * buffers where completions carry no flags (FI_CQ_FORMAT_CONTEXT) or the
 * endpoint's rx caps (as opened) lack FI_MULTI_RECV;
 * aliases, shared receive contexts and scalable endpoints themselves (their
 * tx/rx contexts lease). On a selective endpoint, an operation the
 * application asked no completion for has its completion consumed here
 * when the application reads the CQ: an application that watches counters
 * and reads its CQ only for errors holds those leases until it does (or
 * closes the endpoint).
 *
 * Sends on FI_MR_LOCAL domains without FI_MR_VIRT_ADDR. A leased operand
 * of a msg or tagged send longer than rxm's eager limit
 * (FI_OFI_RXM_BUFFER_SIZE, 16 KiB) gets a registration starting exactly at
 * its iov: rxm 1.17's rendezvous has the peer read each iov at offset 0 of
 * its MR (mrl_xfer_msg.c).
 *
 * Lifetime. A pool lives while its endpoint is open, and after the endpoint
 * closed with operations outstanding ("orphans": their leases were released
 * at close) for as long as a CQ the endpoint was bound to might still hold
 * entries naming them: such CQs keep a reference until they close.
 * A shared pool is also kept by those CQs when a thread reading one of them
 * may still be inside a completion of one of its ops: the completer changes
 * the op's state (live -> FREE) and then pushes it back onto the pool (the
 * shared stack or its owner's list; the lease it copied is released after
 * the push, from the copy), and a close in between sees no orphan. Close
 * tells by counting the free stack and the owner's list (only completers
 * push while it runs, nobody pops): every op that is not an orphan must be
 * on one of them; a few sched_yield retries cover the
 * usual few-instruction window, a descheduled completer costs the pool's
 * memory until the CQs close. The hit path pays nothing for it (no
 * per-read or per-entry counter); a completer touches the pool only while
 * its op is LIVE (then close orphans it and the CQs keep the pool) or
 * between its state change and its push (then close does not see the
 * stack settled). Serial pools need none of it (close never overlaps a
 * completion). test_xfer_close_race stalls a completer in that window
 * (MRL_XFER_CTL_TEST_COMPLETING, mrl_xfer_ctl.h) while another thread
 * closes.
 */
#ifndef MRL_XFER_H
#define MRL_XFER_H

#include <stdbool.h>

#include "mrl_hook.h"

/*
 * Whether endpoints of domain can ever lease: it has a cache domain, and
 * FI_MR_LOCAL or it is the outermost instance. Endpoints, CQs and counters
 * of other domains (the inner instance of a stacked pair) keep the
 * passthrough's tables and pay exactly what it pays.
 */
bool mrl_xfer_domain_leases(struct mrl_domain *domain);

/* Personality callbacks (mrl_personality.c puts them in the table). */
int mrl_xfer_ep_open(struct mrl_ep *ep);
int mrl_xfer_ep_control(struct mrl_ep *ep, int command, void *arg);
void mrl_xfer_ep_close(struct mrl_ep *ep);
int mrl_xfer_cq_open(struct mrl_cq *cq);
void mrl_xfer_cq_close(struct mrl_cq *cq);
int mrl_xfer_cntr_open(struct mrl_cntr *cntr);
void mrl_xfer_cntr_close(struct mrl_cntr *cntr);
/* A domain's open and close (mrl_xfer_domain.c): the lease domain, then the MR
 * interception on it; closed in reverse order. */
int mrl_xfer_domain_open(struct mrl_domain *domain);
void mrl_xfer_domain_close(struct mrl_domain *domain);
void mrl_xfer_domain_closed(struct mrl_domain *domain);

/* Whether cq has a completion the application can read, or an error
 * entry: 1, else 0, or -FI_EAGAIN when hidden entries were consumed; the
 * application's are kept for its next reads (personality cq_readable). */
int mrl_xfer_cq_readable(struct mrl_cq *cq);

#endif /* MRL_XFER_H */
