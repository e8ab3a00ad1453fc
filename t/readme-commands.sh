#!/bin/sh
# readme-commands.sh FILE SECTION - print the commands of the ```sh blocks
# in the README section whose heading starts with "## SECTION", one a
# line, as written. Tests and .ci/run take the set-up commands and the
# tour from README.md this way, so that what they run is what users read.
awk -v want="## $2" '
	/^## / { inside = index($0, want) == 1; next }
	inside && /^```sh$/ { block = 1; next }
	block && /^```/ { block = 0; next }
	block && NF > 0 { print }
' "$1"
