#!/bin/sh
test_description='placeholder'
. "$(dirname "$0")/test-lib.sh"
test_done
