/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mrcheck's remote keys (FI_MRCHECK_FRAMES=1): the open registrations of
 * strict domains that grant remote access, found by their key, so that the
 * target of an RMA or atomic naming a key of this process (two endpoints in
 * one process, what the suite does) has its pages' frames compared with
 * those recorded at registration, as a local operand's are. A pinning
 * provider keeps serving a remote key with the frames it pinned: a peer
 * writing with a key that outlived its memory writes into pages the process
 * no longer has, and nothing fails on either side.
 *
 * Keys are unique per domain only, so a key is looked for in the posting
 * endpoint's domain first; a key found in no such record but in exactly one
 * other domain's is taken as that one's, and a key several other domains
 * use is left alone (the target's domain cannot be told from the post).
 *
 * Lock: chk_keys_lock protects the buckets and each record's key_next; it
 * is taken with no other mrcheck lock held and never across a call into the
 * provider. A record leaves its bucket (chk_keys_remove) before its frames
 * are freed, so frames read under the lock are alive.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>

#include "mrcheck_int.h"

#define CHK_KEY_BITS 10

static pthread_mutex_t chk_keys_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chk_mr *chk_keys[1u << CHK_KEY_BITS];

static size_t
chk_key_bucket(uint64_t key)
{
	return (size_t) ((key * 0x9e3779b97f4a7c15ULL) >> (64 - CHK_KEY_BITS));
}

void
chk_keys_add(struct chk_mr *rec, uint64_t key, bool virt_addr)
{
	size_t b = chk_key_bucket(key);

	rec->key = key;
	rec->virt_addr = virt_addr;
	pthread_mutex_lock(&chk_keys_lock);
	rec->key_next = chk_keys[b];
	chk_keys[b] = rec;
	rec->keyed = true;
	pthread_mutex_unlock(&chk_keys_lock);
}

void
chk_keys_remove(struct chk_mr *rec)
{
	struct chk_mr **pp;

	if (!__atomic_load_n(&rec->keyed, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&chk_keys_lock);
	for (pp = &chk_keys[chk_key_bucket(rec->key)]; *pp;
	     pp = &(*pp)->key_next) {
		if (*pp == rec) {
			*pp = rec->key_next;
			break;
		}
	}
	rec->keyed = false;
	pthread_mutex_unlock(&chk_keys_lock);
}

/*
 * Where [addr, +len) of rec's remote address space lies in the process:
 * addr is a virtual address with FI_MR_VIRT_ADDR, else an offset from the
 * registration's start (its iovs back to back). Clipped to the iov holding
 * its start. False when rec does not hold addr.
 */
static bool
chk_target_of(const struct chk_mr *rec, uint64_t addr, size_t len,
	      uintptr_t *va, size_t *vlen)
{
	uint64_t off = addr;

	for (size_t i = 0; i < rec->iov_count; i++) {
		uintptr_t b = (uintptr_t) rec->iov[i].iov_base;
		size_t l = rec->iov[i].iov_len, at;

		if (rec->virt_addr) {
			if (addr < b || addr - b >= l)
				continue;
			at = (size_t) (addr - b);
		} else if (off >= l) {
			off -= l;
			continue;
		} else {
			at = (size_t) off;
		}
		*va = b + at;
		*vlen = len < l - at ? len : l - at;
		return true;
	}
	return false;
}

/* What a post's target is checked against, copied under chk_keys_lock. */
struct chk_target {
	uintptr_t va;
	size_t len;
	const void *mr_base;
	size_t mr_len;
	uint64_t *then; /* recorded frames of the target's pages */
};

/* Find key's registration holding addr (see above) and copy what the
 * comparison needs; false when none is known or the key is ambiguous. */
static bool
chk_target_find(struct chk_domain *dom, uint64_t key, uint64_t addr, size_t len,
		struct chk_target *t)
{
	struct chk_mr *rec, *found = NULL;
	const uint64_t *then;
	size_t others = 0, n;
	bool own = false;

	pthread_mutex_lock(&chk_keys_lock);
	for (rec = chk_keys[chk_key_bucket(key)]; rec; rec = rec->key_next) {
		uintptr_t va;
		size_t vlen;

		if (rec->key != key ||
		    !chk_target_of(rec, addr, len, &va, &vlen))
			continue;
		if (rec->dom == dom) {
			found = rec;
			own = true;
			break;
		}
		others++;
		found = rec;
	}
	if (!found || (!own && others != 1) ||
	    !chk_target_of(found, addr, len, &t->va, &t->len) ||
	    !(then = chk_frames_at(found, (const void *) t->va, t->len))) {
		pthread_mutex_unlock(&chk_keys_lock);
		return false;
	}
	n = chk_pages_of((const void *) t->va, t->len);
	t->then = malloc(n * sizeof(*t->then));
	if (t->then)
		memcpy(t->then, then, n * sizeof(*t->then));
	t->mr_base = found->iov[0].iov_base;
	t->mr_len = found->iov[0].iov_len;
	pthread_mutex_unlock(&chk_keys_lock);
	return t->then != NULL;
}

void
chk_keys_check(struct chk_domain *dom, const char *what, size_t i,
	       uint64_t addr, size_t len, uint64_t key)
{
	struct chk_target t;
	size_t n, compared = 0;
	uint64_t *now;

	if (!len || !chk_frames_on() ||
	    !chk_target_find(dom, key, addr, len, &t))
		return;
	n = chk_pages_of((const void *) t.va, t.len);
	now = malloc(n * sizeof(*now));
	if (!now) {
		free(t.then);
		return;
	}
	chk_frames_read((const void *) t.va, t.len, now);
	for (size_t p = 0; p < n; p++) {
		if (!t.then[p])
			continue;
		compared++;
		if (now[p] == t.then[p])
			continue;
		chk_violation(dom, MRCHECK_STALE_REMOTE_KEY,
			      "%s: target %zu [%#lx, +%zu) of key %#llx: page "
			      "%zu is on frame %#llx (0: not present), its "
			      "registration [%p, +%zu) on frame %#llx",
			      what, i, (unsigned long) t.va, t.len,
			      (unsigned long long) key, p,
			      (unsigned long long) now[p], t.mr_base, t.mr_len,
			      (unsigned long long) t.then[p]);
		break;
	}
	chk_count(dom, frames_remote_checked, compared);
	free(now);
	free(t.then);
}
