#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/xfer_ir.sh [BUILDDIR]: instructions the mrlease hook adds per leased
# fi_write (hit path), with the callgrind recipe of bench/README.md, as a
# table per function and one RESULT line.
#
# bench/xfer_bench --child MODE --sizes 16384 --window 1 runs under
# valgrind --tool=callgrind for N1 and N2 writes (default 2000 and 6000;
# XFER_IR_N1, XFER_IR_N2), in three modes:
#   2 FI_HOOK=mrlease, desc NULL (16 KiB >= FI_MRLEASE_MIN_SIZE: every write
#     after the first is a cache hit)
#   4 FI_HOOK=noop (libfabric's passthrough hook), application descriptors
#   1 no hook, application descriptors
# Per op = (cost in the N2 run - cost in the N1 run) / (ops2 - ops1), where
# ops counts every write the child made (warm-up included), which removes
# set-up and teardown.
#
# hook_ir_per_op: the SELF cost of every function in libmrlease-fi.so (over
#   tcp;ofi_rxm the outer instance over rxm; the inner one over the tcp
#   domain rxm opens too when FI_MRLEASE_HOOK_INNER=1 keeps it, which the
#   environment passes through), from the callgrind output itself (the same
#   numbers as `callgrind_annotate --inclusive=no` filtered on the object,
#   with a function's inlined parts from other files folded into it).
#   Program totals are not used for it: tcp progress polling spins a
#   variable number of times and drowns a hundred instructions.
# cache_ir_per_op: the part of it in the lease cache: code of its units
#   (src/1-cache/mrl_cache*.[ch], mrl_btree, mrl_filter, mrl_readers,
#   mrl_slab) and mrl_cache.inl (its inline hit path, counted where it is
#   inlined).
# datapath_ir_per_op: the rest (posts, op contexts, completions, both
#   instances' wrappers).
# noop_added_ir / lease_added_ir: whole-program totals per op of modes 4 and
#   2 minus mode 1 (libfabric is stripped here, so the noop hook's own
#   functions cannot be told apart; these are the noisy figures: a mode's
#   whole-program figure moves by tens of instructions from one pair of runs
#   to the next, so each is the median over XFER_IR_REPEAT pairs, default 3).
# polls_per_op: fi_cq_read calls per write of the N2 run, mode 2 (window 1:
#   1.0 means no empty polls).
#
# XFER_IR_OP=send measures fi_send + a pre-posted fi_recv (both leased in
#   mode 2) with their two completions per op instead of fi_write
#   (xfer_bench --op send); the RESULT line then says op=send.
#
# live_added_ir: what live statistics add per leased write: mode 5 is mode 2
#   with FI_MRLEASE_STATS_LIVE=1 (its mrl-stats publisher thread running),
#   under callgrind --separate-threads=yes; its hook cost counts every
#   thread but the publisher's (the thread running live_thread, whose work
#   is per round, not per write). Posts the provider refuses with
#   -FI_EAGAIN, which vary from run to run, are fitted out: each mode's
#   hook cost per write is a in the least squares fit hook = a * ops +
#   b * retries + c over its 2 * XFER_IR_REPEAT runs (retries: calls of
#   mrl_op_release_leases), and live_added_ir = mode 5's a - mode 2's;
#   live_hook_ir_per_op is mode 5's. With no retries to fit (none in any
#   run, or as many in each) the fit drops b: the plain per-op difference.
#
# XFER_IR_LEASE_ENV: space-separated NAME=value settings added to mode 2's
#   (and mode 5's) environment only (bench/monitor_bench compares hook_ir_per_op with
#   FI_MRLEASE_MONITOR=userfaultfd against FI_MRLEASE_MONITOR=none this way).
#
# Needs valgrind; prints "RESULT skipped=1" without it. Takes about two
# minutes (six callgrind runs per repetition).
set -u

self_dir=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 1 ]; then
	builddir=$1
elif [ -n "${MRL_TOP_BUILDDIR:-}" ]; then
	builddir=$MRL_TOP_BUILDDIR
elif [ -x "$self_dir/xfer_bench" ]; then
	builddir=$(dirname "$self_dir")
else
	builddir=$PWD
fi
builddir=$(cd "$builddir" && pwd)
bench=$builddir/bench/xfer_bench
if [ ! -x "$bench" ]; then
	echo "# $bench not built (make in $builddir)" >&2
	echo "RESULT skipped=1"
	exit 0
fi
if ! valgrind --version >/dev/null 2>&1; then
	echo "# valgrind not installed"
	echo "RESULT skipped=1"
	exit 0
fi

op=${XFER_IR_OP:-write}
repeat=${XFER_IR_REPEAT:-3}
n1=${XFER_IR_N1:-2000}
n2=${XFER_IR_N2:-6000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xfer_ir.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

export FI_PROVIDER_PATH=$builddir/prov/mrlease/.libs
export FI_TCP_IFACE=${FI_TCP_IFACE:-lo}
export XFER_BENCH_PROV=${XFER_BENCH_PROV:-tcp;ofi_rxm}
unset FI_MRLEASE_MIN_SIZE FI_HOOK

# callgrind's compressed names: "(id) name" defines id, "(id)" names it.
cg_names='
function nm(s, tbl,    id, rest) {
	if (s ~ /^\(/) {
		id = substr(s, 2, index(s, ")") - 2)
		rest = substr(s, index(s, ")") + 1)
		sub(/^ +/, "", rest)
		if (rest != "")
			tbl[id] = rest
		return tbl[id]
	}
	return s
}
'

# Self cost per (function, object, source file) of one callgrind output:
# "<Ir> TAB <function> TAB <object> TAB <file>". Cost lines right after
# calls= are a call's inclusive cost and are skipped; fi=/fe= (code inlined
# from another file) keep the function but change the file, which is how
# the lease cache's inline hit path (mrl_cache.inl) is told apart.
self_cost() {
	awk "$cg_names"'
	/^ob=/ { ob = nm(substr($0, 4), obn); next }
	/^fl=/ { fl = nm(substr($0, 4), fln); file = fl; next }
	/^f[ie]=/ { file = nm(substr($0, 4), fln); next }
	/^fn=/ { fn = nm(substr($0, 4), fnn); file = fl; next }
	/^cob=/ { nm(substr($0, 5), obn); next }
	/^cf[il]=/ { nm(substr($0, 5), fln); next }
	/^cfn=/ { nm(substr($0, 5), fnn); next }
	/^calls=/ { skip = 1; next }
	/^[0-9+*-]/ {
		if (skip) { skip = 0; next }
		cost[fn "\t" ob "\t" file] += $2
		next
	}
	END { for (k in cost) if (cost[k]) printf "%d\t%s\n", cost[k], k }
	' "$1"
}

# run MODE N [REP]: callgrind output in $tmp/cg.MODE.N[.REP], child report
# in .out
run() {
	local mode=$1 n=$2 rep=${3:+.$3} hook= extra= child=$1 threads=no
	case $mode in
	2) hook=mrlease extra=${XFER_IR_LEASE_ENV:-} ;;
	4) hook=noop ;;
	5)
		hook=mrlease child=2 threads=yes
		mkdir -p "$tmp/live"
		extra="${XFER_IR_LEASE_ENV:-} FI_MRLEASE_STATS_LIVE=1 FI_MRLEASE_STATS_DIR=$tmp/live"
		;;
	esac
	# $extra unquoted: one word per setting.
	if ! env ${hook:+FI_HOOK=$hook} $extra \
		valgrind --tool=callgrind --quiet --separate-threads=$threads \
		--callgrind-out-file="$tmp/cg.$mode.$n$rep" "$bench" --child "$child" \
		--sizes 16384 --iters "$n" --window 1 --op "$op" \
		>"$tmp/out.$mode.$n$rep"; then
		echo "# xfer_bench --child $mode under callgrind failed" >&2
		return 1
	fi
}

ops() { awk '/^totals polls/ { print $5 }' "$tmp/out.$1.$2"; }
polls() { awk '/^totals polls/ { print $3 }' "$tmp/out.$1.$2"; }
total() { awk '/^(summary|totals):/ { t = $2 } END { print t }' "$tmp/cg.$1.$2"; }

modes=${XFER_IR_MODES:-2 4 1 5}
for mode in $modes; do
	for n in "$n1" "$n2"; do
		run "$mode" "$n" || { echo "RESULT skipped=1"; exit 1; }
		for r in $(seq 2 "$repeat"); do
			run "$mode" "$n" "$r" || { echo "RESULT skipped=1"; exit 1; }
		done
	done
done

has() { case " $modes " in *" $1 "*) return 0 ;; esac; return 1; }
has 2 || { echo "# XFER_IR_MODES must include 2" >&2; exit 1; }
d2=$(( $(ops 2 "$n2") - $(ops 2 "$n1") ))
if [ "$d2" -le 0 ]; then
	echo "# no op difference between the runs" >&2
	echo "RESULT skipped=1"
	exit 1
fi

# Per-function table of the hook object, mode 2: "function TAB all TAB
# cache part" per run, joined on the function.
for n in "$n1" "$n2"; do
	self_cost "$tmp/cg.2.$n" | awk -F'\t' '$3 ~ /libmrlease-fi/ {
		all[$2] += $1; if ($4 ~ /(mrl_cache[a-z_]*|mrl_btree|mrl_filter|mrl_readers|mrl_slab)\.([ch]|inl)$/)
			cache[$2] += $1 }
		END { for (f in all) printf "%s\t%d\t%d\n", f, all[f], cache[f] }' |
		sort -t '	' -k1,1 >"$tmp/fn.$n"
done
echo "#  Ir/op  (cache)  function (self cost in libmrlease-fi.so, mode 2)"
join -t '	' -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$tmp/fn.$n1" "$tmp/fn.$n2" |
	awk -F'\t' -v ops="$d2" '
	{ d = ($4 - $2) / ops; c = ($5 - $3) / ops; t += d; tc += c
	  if (d >= 0.05 || d <= -0.05) printf "%8.1f %8.1f  %s\n", d, c, $1 }
	END { printf "%8.1f %8.1f  TOTAL\n", t, tc
	      printf "HOOK %.1f %.1f\n", t, tc > "/dev/stderr" }' 2>"$tmp/hook" |
	sort -rn | sed 's/^/# /'
read -r _ hook cache <"$tmp/hook"

# Whole-program Ir per op of a mode, "na" if it did not run: the median
# over the repetitions (the first is the unsuffixed pair).
pair_per_op() {
	local mode=$1 rep=${2:+.$2}
	awk -v a="$(awk '/^(summary|totals):/ { t = $2 } END { print t }' "$tmp/cg.$mode.$n1$rep")" \
		-v b="$(awk '/^(summary|totals):/ { t = $2 } END { print t }' "$tmp/cg.$mode.$n2$rep")" \
		-v d="$(( $(awk '/^totals polls/ { print $5 }' "$tmp/out.$mode.$n2$rep") - \
			  $(awk '/^totals polls/ { print $5 }' "$tmp/out.$mode.$n1$rep") ))" \
		'BEGIN { printf "%.1f\n", (b - a) / d }'
}
# Every repetition's pair figure of a mode, one per line.
pairs_per_op() {
	pair_per_op "$1"
	for r in $(seq 2 "$repeat"); do
		pair_per_op "$1" "$r"
	done
}
per_op() {
	has "$1" || { echo na; return; }
	pairs_per_op "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
app=$(per_op 1)
noop=$(per_op 4)
lease=$(per_op 2)

# Self cost in libmrlease-fi.so of callgrind outputs (a run's file, or its
# per-thread files), leaving out the live statistics publisher's thread.
hook_of() {
	local f
	for f in "$@"; do
		[ -f "$f" ] || continue
		grep -Eq '^fn=(\([0-9]+\) )?live_thread$' "$f" && continue
		self_cost "$f"
	done | awk -F'\t' '$3 ~ /libmrlease-fi/ { t += $1 } END { printf "%d\n", t }'
}
# Calls of function $1 in callgrind outputs $2...: the posts the hook gave
# back on -FI_EAGAIN are the calls of mrl_op_release_leases.
calls_of() {
	local want=$1
	shift
	cat "$@" 2>/dev/null | awk -v want="$want" "$cg_names"'
	/^fn=/ { nm(substr($0, 4), fnn); next }
	/^cfn=/ { cur = nm(substr($0, 5), fnn); next }
	/^calls=/ { if (cur == want) { split(substr($0, 7), a, " "); n += a[1] } next }
	END { printf "%d\n", n }'
}
# "ops retries hook" of every run of a mode (both sizes, every repetition).
mode_runs() {
	local mode=$1 n r rep files
	for r in $(seq 1 "$repeat"); do
		rep=
		[ "$r" -gt 1 ] && rep=.$r
		for n in "$n1" "$n2"; do
			files=("$tmp/cg.$mode.$n$rep" "$tmp/cg.$mode.$n$rep"-*)
			echo "$(ops "$mode" "$n$rep") $(calls_of mrl_op_release_leases "${files[@]}") $(hook_of "${files[@]}")"
		done
	done
}
# A mode's hook cost per op with the retried posts taken out: the least
# squares fit of hook = a * ops + b * retries + c over its runs; prints a
# ("na" if the mode did not run). Where the runs cannot tell b from c (no
# post retried in any run, or the same number in every run: the retries
# column is zero or constant), the fit is hook = a * ops + c, which over
# runs of two lengths is the plain per-op difference of their means.
hook_fit() {
	has "$1" || { echo na; return; }
	mode_runs "$1" | awk '
	function abs(v) { return v < 0 ? -v : v }
	# Solves the normal equations over the columns listed in col[1..n]
	# (1 ops, 2 retries, 3 constant); returns 0 if they are singular.
	function solve(n,    i, j, k, p, t, f, v, M, R) {
		for (i = 1; i <= n; i++) {
			R[i] = B[col[i]]
			for (j = 1; j <= n; j++) M[i, j] = A[col[i], col[j]]
		}
		for (k = 1; k <= n; k++) {
			p = k
			for (i = k + 1; i <= n; i++) if (abs(M[i, k]) > abs(M[p, k])) p = i
			for (j = 1; j <= n; j++) { t = M[k, j]; M[k, j] = M[p, j]; M[p, j] = t }
			t = R[k]; R[k] = R[p]; R[p] = t
			if (abs(M[k, k]) < 1e-9) return 0
			for (i = k + 1; i <= n; i++) {
				f = M[i, k] / M[k, k]
				for (j = k; j <= n; j++) M[i, j] -= f * M[k, j]
				R[i] -= f * R[k]
			}
		}
		for (i = n; i >= 1; i--) { v = R[i]; for (j = i + 1; j <= n; j++) v -= M[i, j] * X[j]; X[i] = v / M[i, i] }
		return 1
	}
	NR == 1 { rmin = rmax = $2 }
	{ if ($2 < rmin) rmin = $2; if ($2 > rmax) rmax = $2 }
	{ x[1] = $1; x[2] = $2; x[3] = 1
	  for (i = 1; i <= 3; i++) { for (j = 1; j <= 3; j++) A[i, j] += x[i] * x[j]; B[i] += x[i] * $3 } }
	END {
		col[1] = 1; col[2] = 2; col[3] = 3
		if (rmin < rmax && solve(3)) { printf "%.1f\n", X[1]; exit }
		col[2] = 3
		if (solve(2)) { printf "%.1f\n", X[1]; exit }
		print "na"
	}'
}
lease_hook_fit=$(hook_fit 2)
live_hook=$(hook_fit 5)
echo "# hook cost per write, retried posts fitted out over $repeat pairs: live statistics off $lease_hook_fit, on $live_hook (Ir)"
for m in 2 5; do
	has "$m" && mode_runs "$m" | sed "s/^/# mode $m runs (ops retries hook_ir): /"
done
ppo=$(awk -v p="$(polls 2 "$n2")" -v o="$(ops 2 "$n2")" 'BEGIN { printf "%.2f", p / o }')
load1=$(cut -d' ' -f1 /proc/loadavg)
all_per_op() {
	has "$1" || { echo na; return; }
	pairs_per_op "$1" | tr '\n' ' ' | sed 's/ $//'
}
echo "# whole program per fi_write + completion (median of $repeat pairs): no hook $app, noop $noop, mrlease $lease (Ir)"
echo "# each pair: no hook $(all_per_op 1); noop $(all_per_op 4); mrlease $(all_per_op 2)"
echo "# ops per run: $(ops 2 "$n1") / $(ops 2 "$n2"); load average $load1"
awk -v op="$op" -v h="$hook" -v c="$cache" -v a="$app" -v n="$noop" -v l="$lease" -v p="$ppo" \
	-v load="$load1" -v lh="$live_hook" -v lm="$lease_hook_fit" \
	'function diff(x, y) { return x == "na" || y == "na" ? "na" : sprintf("%.1f", x - y) }
	BEGIN {
	printf "RESULT op=%s hook_ir_per_op=%.1f cache_ir_per_op=%.1f datapath_ir_per_op=%.1f " \
	       "noop_added_ir=%s lease_added_ir=%s app_ir_per_op=%s polls_per_op=%s " \
	       "live_hook_ir_per_op=%s live_added_ir=%s load1=%s\n",
	       op, h, c, h - c, diff(n, a), diff(l, a), a, p, lh, diff(lh, lm), load }'
