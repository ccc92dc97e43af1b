#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# `make install` into a temporary DESTDIR, then a client compiled only
# against the installed rdma/fi_ext_mrlease.h (no -I into the source tree)
# runs with FI_PROVIDER_PATH at the installed provider directory: it opens
# the extension and reads statistics. Proves the header, the plugin and the
# man page are installed and usable by themselves; likewise mrcheck's plugin
# (beside mrlease's, listed by fi_info -l) and fi_mrcheck(7), and that the
# installed mrcheck below the installed mrlease sees the client's transfers
# with no violation.
set -u
# shellcheck source=test/common/ext_tap.sh
. "$(dirname "$0")/../common/ext_tap.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! make -s -C "$builddir" install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1; then
	not_ok make_install_into_a_temporary_destdir "$(tail -n 20 "$tmp/install.log")"
	finish
fi
header=$(find "$tmp/root" -path '*/include/rdma/fi_ext_mrlease.h' | head -n1)
plugin=$(find "$tmp/root" -name libmrlease-fi.so | head -n1)
manpage=$(find "$tmp/root" -path '*/man7/fi_mrlease.7*' | head -n1)
if [ -n "$header" ] && [ -n "$plugin" ] && [ -n "$manpage" ]; then
	ok make_install_puts_header_plugin_and_man_page_in_place
else
	not_ok make_install_puts_header_plugin_and_man_page_in_place \
		"header '$header' plugin '$plugin' man page '$manpage'"
	finish
fi

checker=$(find "$tmp/root" -name libmrcheck-fi.so | head -n1)
checker_man=$(find "$tmp/root" -path '*/man7/fi_mrcheck.7*' | head -n1)
if [ "$(dirname "$checker")" = "$(dirname "$plugin")" ] && [ -n "$checker_man" ]; then
	ok make_install_puts_mrcheck_beside_mrlease_with_its_man_page
else
	not_ok make_install_puts_mrcheck_beside_mrlease_with_its_man_page \
		"mrcheck '$checker' beside '$plugin'? man page '$checker_man'"
fi
if command -v fi_info >/dev/null 2>&1; then
	listing=$(FI_PROVIDER_PATH=$(dirname "$plugin") LD_PRELOAD="$(sanitizer_preload)" \
		ASAN_OPTIONS=detect_leaks=0 fi_info -l 2>&1 | tr -d '\0')
	grep -q '^mrcheck:' <<<"$listing" && grep -q '^mrlease:' <<<"$listing"
	check fi_info_l_lists_the_installed_mrcheck_and_mrlease $? "$listing"
else
	skip fi_info_l_lists_the_installed_mrcheck_and_mrlease "fi_info (libfabric-bin) is not installed"
fi

sanitize=""
case "${MRL_SANITIZE:-no}" in no | "") ;; *) sanitize="-fsanitize=$MRL_SANITIZE" ;; esac
incdir=${header%/rdma/fi_ext_mrlease.h}
# shellcheck disable=SC2046,SC2086
if ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror $sanitize -I"$incdir" \
	"$srcdir/test/dist/install_client.c" -o "$tmp/client" \
	$(pkg-config --cflags --libs libfabric) >"$tmp/cc.log" 2>&1; then
	ok a_client_compiles_against_the_installed_header_alone
else
	not_ok a_client_compiles_against_the_installed_header_alone "$(cat "$tmp/cc.log")"
	finish
fi

out=$(FI_PROVIDER_PATH=$(dirname "$plugin") FI_HOOK=mrlease "$tmp/client" 2>&1)
status=$?
if [ "$status" -eq 0 ] &&
	printf '%s\n' "$out" | grep -Eq '^pinned registrations=[1-9][0-9]* entries=1 process_registrations=[1-9]'; then
	ok the_installed_plugin_answers_the_extension_and_reports_a_pin
else
	not_ok the_installed_plugin_answers_the_extension_and_reports_a_pin \
		"exit status $status" "$out"
fi

# mrcheck fails a run with violations (exit status 3) and prints them.
out=$(FI_PROVIDER_PATH=$(dirname "$plugin") FI_HOOK='mrcheck;mrlease' \
	FI_MRCHECK_MR_LOCAL=1 "$tmp/client" 2>&1)
status=$?
if [ "$status" -eq 0 ] && ! grep -qE '^mrcheck( violation|:)' <<<"$out" &&
	grep -Eq '^pinned registrations=[1-9]' <<<"$out"; then
	ok the_installed_mrcheck_below_mrlease_sees_no_violation
else
	not_ok the_installed_mrcheck_below_mrlease_sees_no_violation \
		"exit status $status" "$out"
fi

out=$(FI_PROVIDER_PATH=$(dirname "$plugin") "$tmp/client" 2>&1)
status=$?
if [ "$status" -eq 3 ]; then
	ok without_FI_HOOK_the_extension_is_absent
else
	not_ok without_FI_HOOK_the_extension_is_absent "exit status $status" "$out"
fi
finish
