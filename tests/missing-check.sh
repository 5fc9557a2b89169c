#!/bin/sh
# configure did not find the Check framework: say so and fail, never pass silently.
echo "make check needs the Check unit-test framework (Debian/Ubuntu: apt-get install check), then re-run ./configure" >&2
exit 1
