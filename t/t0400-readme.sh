#!/bin/sh
test_description='README.md: the set-up command works as root and with sudo; the tour runs word for word'
. "$(dirname "$0")/test-lib.sh"

readme="$BCG_SRC_DIR/README.md"
commands="$BCG_SRC_DIR/t/readme-commands.sh"
SHELL_PATH=${SHELL_PATH:-/bin/sh}

test_expect_success 'the README has two set-up commands and a tour' '
	sh "$commands" "$readme" "Set-up" >setup &&
	test $(wc -l <setup) = 2 &&
	sed -n 2p setup >second &&
	echo "make -j\"\$(nproc)\" check" >expect &&
	test_cmp expect second &&
	sh "$commands" "$readme" "A tour" >tour &&
	test $(wc -l <tour) -ge 5
'

# The set-up command, run with stand-ins for every program it calls (the
# PATH holds nothing else), records what it ran: apt-get update before
# the install, directly for root with no sudo, through sudo where there
# is one, and make install likewise. The stand-ins live where a path has
# no space, as /usr/bin does.
BIN="$BCG_BUILD_DIR/t/$TEST_NAME.bin"
rm -rf "$BIN"
stub() {
	printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n%s\n' "$1" "$PWD" "${2:-}" >"$BIN/$1" &&
	chmod +x "$BIN/$1"
}

test_expect_success 'stand-ins for apt-get, make, nproc, bootstrap and configure' '
	mkdir -p "$BIN" run &&
	stub apt-get && stub make &&
	printf "#!/bin/sh\necho 2\n" >"$BIN/nproc" && chmod +x "$BIN/nproc" &&
	printf "#!/bin/sh\necho bootstrap >>\"%s/calls\"\n" "$PWD" >run/bootstrap &&
	printf "#!/bin/sh\necho configure >>\"%s/calls\"\n" "$PWD" >run/configure &&
	chmod +x run/bootstrap run/configure &&
	sed -n 1p setup >setup1
'

test_expect_success 'as root without sudo, the set-up runs apt-get itself, update first' '
	rm -f calls &&
	(cd run && PATH="$BIN" "$SHELL_PATH" "$TRASH_DIRECTORY/setup1") &&
	sed "s/ -y .*/ -y .../" calls >actual &&
	cat >expect <<-\EOF &&
	apt-get update
	apt-get install -y ...
	bootstrap
	configure
	make -j2
	make install
	make demo
	EOF
	test_cmp expect actual
'

test_expect_success 'as a user with sudo, the set-up runs apt-get and make install through it' '
	rm -f calls &&
	stub sudo "exec \"\$@\"" &&
	(cd run && PATH="$BIN" "$SHELL_PATH" "$TRASH_DIRECTORY/setup1") &&
	sed "s/ -y .*/ -y .../" calls >actual &&
	cat >expect <<-\EOF &&
	sudo apt-get update
	apt-get update
	sudo apt-get install -y ...
	apt-get install -y ...
	bootstrap
	configure
	make -j2
	sudo make install
	make install
	make demo
	EOF
	test_cmp expect actual &&
	rm -rf "$BIN"
'

test_expect_success 'the set-up installs every package the build needs' '
	for p in build-essential autoconf automake libtool pkg-config \
		libyaml-dev libzstd-dev libjansson-dev libsqlite3-dev; do
		grep -q " $p " setup1 || { echo "missing $p"; return 1; }
	done
'

# The tour, each line as written, with the bcgtool under test first on
# PATH; the samples as the set-up leaves them, in the current directory.
# Every command exits 0, but diff, which says 1 for "different".
test_expect_success 'the tour runs word for word' '
	mkdir -p repo &&
	ln -s "$BCG_SRC_DIR/samples" repo/samples &&
	ln -s "$BCG_SRC_DIR/t" repo/t &&
	(
		cd repo &&
		PATH="$BCG_BUILD_DIR/bcgtool:$PATH" &&
		export PATH &&
		while IFS= read -r line; do
			echo "\$ $line" &&
			"$SHELL_PATH" -c "$line" >>out 2>&1
			rc=$?
			case $line in
			"bcgtool diff "*) test $rc -le 1 ;;
			*) test $rc = 0 ;;
			esac || { echo "exit $rc: $line"; cat out; exit 1; }
		done <../tour
	)
'

test_done
