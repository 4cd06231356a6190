#!/usr/bin/env bash
# Runs one test and removes its work folder when it passed or was skipped,
# so that a full ctest run (CI runs two: build and build-asan) holds only
# the folders of failed tests on disk, not a checkpoint tree per test. A
# failed test keeps its folder for inspection (named on the last line);
# GPT2_KEEP_TEST_WORK=1 keeps every folder.
#   tidy_work_dir.sh WORK_DIR COMMAND [ARG ...]
set -u
work=$1
shift
"$@"
status=$?
if ((status == 0 || status == 77)); then
  [[ ${GPT2_KEEP_TEST_WORK:-0} == 1 ]] || rm -rf -- "$work"
else
  [[ -e $work ]] && echo "tidy_work_dir: kept $work (the test failed; removed when it passes)"
fi
exit $status
