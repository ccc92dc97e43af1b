#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The build keeps the layers (CONTRIBUTING.md, "Where things live"): no
# object of a layer's library (prov/mrlease/libmrl-<layer>.la) leaves
# undefined a symbol that only a layer it may not use defines, and
# libmrcheck-fi.so, a provider on the passthrough layer, links no object of
# another layer and calls none. A call up compiles and links (every test
# and the plugin link all the layers), so only the objects can tell.
# Reads what the build made with nm: any build directory, any sanitizer.
set -u
export LC_ALL=C # sort and join agree
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"
# Run by hand from a build directory: the sources are the script's.
[ -n "${MRL_TOP_SRCDIR:-}" ] || srcdir=$(cd "$(dirname "$0")/../.." && pwd)

nm=${NM:-nm}
# The layers bottom-up and what each may use: CONTRIBUTING.md's table (the
# cache, the monitor and the passthrough use nothing of each other; the
# parameters fill the cache's configuration). mrcheck is the checker.
layers="1-cache 2-monitor 3-hook 4-params 5-live 6-bind 7-xfer 8-plugin"
declare -A may_use=(
	[1-cache]=""
	[2-monitor]=""
	[3-hook]=""
	[4-params]="1-cache"
	[5-live]="1-cache 2-monitor 3-hook 4-params"
	[6-bind]="1-cache 2-monitor 3-hook 4-params 5-live"
	[7-xfer]="1-cache 2-monitor 3-hook 4-params 5-live 6-bind"
	[8-plugin]="1-cache 2-monitor 3-hook 4-params 5-live 6-bind 7-xfer"
	[mrcheck]="3-hook"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Where libtool puts what it builds, beside each .la (.libs on Linux).
objdir=$(sed -n 's/^objdir=//p' "$builddir/libtool" 2>/dev/null)
objdir=${objdir:-.libs}

# archive LA: the static archive of a libtool library (its objects, PIC).
archive() {
	local la=$1 old
	old=$(sed -n "s/^old_library='\(.*\)'\$/\1/p" "$la" 2>/dev/null)
	[ -n "$old" ] && printf '%s/%s/%s' "$(dirname "$la")" "$objdir" "$old"
}

# The symbols of every layer's objects, one line each:
# "D layer object symbol" (defined, global) or "U layer object symbol".
for layer in $layers; do
	la=$builddir/prov/mrlease/libmrl-${layer#*-}.la
	a=$(archive "$la")
	if [ -z "$a" ] || [ ! -f "$a" ]; then
		not_ok "${la#"$builddir/"} is built" "no archive named in $la"
		finish
	fi
	# nm -A -P: "ARCHIVE[OBJECT]: SYMBOL TYPE [VALUE SIZE]".
	{
		"$nm" -A -P -g --defined-only "$a" | sed 's/^/D /'
		"$nm" -A -P -u "$a" | sed 's/^/U /'
	} | sed -E "s|^([DU]) .*\[([^]]*)\]: ([^ ]+) .*|\1 $layer \2 \3|" \
		>>"$tmp/symbols"

	# Each object is compiled from a source of its layer's folder, so the
	# library checked as the layer is the layer.
	strays=""
	for o in $(${AR:-ar} t "$a"); do
		[ -f "$srcdir/prov/mrlease/src/$layer/${o%.o}.c" ] || strays="$strays $o"
	done
	if [ -z "$strays" ]; then
		ok "libmrl-${layer#*-}.la holds only objects of src/$layer/"
	else
		not_ok "libmrl-${layer#*-}.la holds only objects of src/$layer/" \
			"objects from no source of src/$layer/:$strays"
	fi
done

# violations: one line "layer object symbol definers" per symbol an object
# leaves undefined that is defined by layers it may not use only (nor by
# its own layer). A symbol no layer defines is libfabric's or libc's.
allowed=""
for layer in $layers mrcheck; do
	allowed="$allowed $layer=${may_use[$layer]// /,}"
done
awk -v allowed="$allowed" '
	BEGIN {
		n = split(allowed, a, " ")
		for (i = 1; i <= n; i++) {
			split(a[i], kv, "=")
			may[kv[1]] = "," kv[2] ","
		}
	}
	$1 == "D" && index(" " def[$4] " ", " " $2 " ") == 0 {
		def[$4] = def[$4] (def[$4] == "" ? "" : " ") $2
	}
	$1 == "U" { u[++nu] = $2 " " $3 " " $4 }
	END {
		for (i = 1; i <= nu; i++) {
			split(u[i], f, " ")
			if (!(f[3] in def))
				continue
			m = split(def[f[3]], d, " ")
			fine = 0
			for (j = 1; j <= m; j++)
				if (d[j] == f[1] || index(may[f[1]], "," d[j] ","))
					fine = 1
			if (!fine)
				print f[1], f[2], f[3], def[f[3]]
		}
	}' "$tmp/symbols" >"$tmp/violations"

for layer in $layers; do
	uses=${may_use[$layer]:-nothing}
	name="$layer calls nothing outside itself${may_use[$layer]:+ and $uses}"
	if ! grep -q "^$layer " "$tmp/violations"; then
		ok "$name"
		continue
	fi
	while read -r _ object symbol definers; do
		not_ok "$layer/$object calls $symbol of $definers" \
			"$layer may use: $uses"
	done < <(grep "^$layer " "$tmp/violations" | sort -u)
done

# The headers: a call to an inline function leaves no symbol, so a layer's
# sources (and its header in prov/mrlease/include/) include no header of a
# layer it may not use either: a layer's header by name (CONTRIBUTING.md's
# table), a private one by its folder ("1-cache/mrl_cache.inl"). The
# helpers every layer may use (mrl_assert.h, mrl_compat.h, mrl_class.h) and
# a layer's own private headers are no layer's here.
declare -A header_layer=(
	[mrl_cache.h]=1-cache
	[mrl_monitor.h]=2-monitor
	[mrl_hook.h]=3-hook
	[mrl_params.h]=4-params
	[mrl_live.h]=5-live
	[mrl_live_file.h]=5-live
	[mrl_bind.h]=6-bind
	[mrl_xfer.h]=7-xfer
	[mrl_plugin.h]=8-plugin
)
for layer in $layers mrcheck; do
	if [ "$layer" = mrcheck ]; then
		files=$(find "$srcdir/prov/mrcheck" -name '*.[ch]')
	else
		files=$(find "$srcdir/prov/mrlease/src/$layer" -name '*.[ch]' -o -name '*.inl')
		for h in "${!header_layer[@]}"; do
			[ "${header_layer[$h]}" != "$layer" ] ||
				files="$files $srcdir/prov/mrlease/include/$h"
		done
	fi
	bad=""
	# shellcheck disable=SC2086 # one path a word
	while IFS=: read -r file header; do
		header=${header#*\"}
		header=${header%\"*}
		case "$header" in
		[1-8]-*/*) of=${header%%/*} ;;
		*) of=${header_layer[$header]:-} ;;
		esac
		if [ -z "$of" ] || [ "$of" = "$layer" ]; then continue; fi
		case " ${may_use[$layer]} " in *" $of "*) continue ;; esac
		bad="$bad${file#"$srcdir/"} includes $header of $of
"
	done < <(grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files)
	if [ -z "$bad" ]; then
		ok "$layer includes no header of a layer it may not use"
	else
		while read -r line; do
			not_ok "$line" "$layer may use: ${may_use[$layer]:-nothing}"
		done <<<"${bad%?}"
	fi
done

# The checker: libmrcheck-fi.so links no object of a layer but those it may
# use (an object linked in shows as its symbols, hidden ones included, in
# the library's symbol table), and leaves undefined no symbol a layer
# defines (the loader would find it nowhere: the library links no other).
la=$builddir/prov/mrcheck/libmrcheck-fi.la
so=$(sed -n "s/^dlname='\(.*\)'\$/\1/p" "$la" 2>/dev/null)
so=${so:+$(dirname "$la")/$objdir/$so}
if [ -z "$so" ] || [ ! -f "$so" ]; then
	not_ok "libmrcheck-fi.so is built" "no shared library named in $la"
	finish
fi
"$nm" -P --defined-only "$so" 2>/dev/null | awk '{ print $1 }' | sort -u >"$tmp/so-defined"
if ! grep -qx 'mrl_hook_prov' "$tmp/so-defined"; then
	skip "libmrcheck-fi.so links the passthrough layer alone" \
		"no symbol table in $so (stripped?)"
	finish
fi
mrcheck_uses=${may_use[mrcheck]}
# An object of a layer mrcheck may not use, by a symbol no layer it may use
# also defines (a symbol of the sanitizers' is in every object).
awk -v uses=" $mrcheck_uses " '
	$1 == "D" { layers[$4] = layers[$4] " " $2 " "; obj[$4] = $2 "/" $3 }
	END {
		for (s in obj) {
			n = split(layers[s], l, " ")
			mine = 0
			for (i = 1; i <= n; i++)
				if (index(uses, " " l[i] " "))
					mine = 1
			if (!mine)
				print s, obj[s]
		}
	}' "$tmp/symbols" | sort >"$tmp/layer-symbols"
linked=$(join "$tmp/so-defined" "$tmp/layer-symbols" |
	awk '!seen[$2]++ { print $2 " (" $1 ")" }')
if [ -z "$linked" ]; then
	ok "libmrcheck-fi.so links no object of a layer but $mrcheck_uses"
else
	while read -r line; do
		not_ok "libmrcheck-fi.so links ${line% (*} ${line##* }" \
			"mrcheck may use: $mrcheck_uses"
	done <<<"$linked"
fi

awk '$1 == "D" { print $4, $2 }' "$tmp/symbols" | sort -u >"$tmp/defined-by"
"$nm" -D -P --undefined-only "$so" | awk '{ print $1 }' | sort -u >"$tmp/so-undefined"
called=$(join "$tmp/so-undefined" "$tmp/defined-by")
if [ -z "$called" ]; then
	ok "libmrcheck-fi.so calls no symbol of a layer it does not link"
else
	while read -r symbol layer; do
		# Which objects call it: mrcheck's (where libtool left them), or
		# those of the layers it links.
		by=$({
			"$nm" -A -P -u "$builddir/prov/mrcheck/src/$objdir"/*.o 2>/dev/null |
				awk -v s="$symbol" '$2 == s { sub(/:$/, "", $1); print $1 }' |
				xargs -r -n1 basename
			for l in $mrcheck_uses; do
				awk -v l="$l" -v s="$symbol" \
					'$1 == "U" && $2 == l && $4 == s { print l "/" $3 }' \
					"$tmp/symbols"
			done
		} | sort -u | paste -sd ' ')
		not_ok "libmrcheck-fi.so calls $symbol of $layer" \
			"called by: ${by:-(not found)}" \
			"mrcheck may use: $mrcheck_uses"
	done <<<"$called"
fi
finish
