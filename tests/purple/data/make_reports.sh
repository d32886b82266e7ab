#!/usr/bin/env bash
# Rebuild the real gcc sanitizer reports in reports/ from demo_src/ (paths appear as /src/demo/...).
# Usage: tests/purple/data/make_reports.sh   (needs gcc with libasan/libubsan)
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cp -r "$here/demo_src/." "$work/"
files="$work/lib/buf.c $work/lib/misc.c $work/fuzz/fuzz.c"
map="-fdebug-prefix-map=$work=/src/demo"
gcc -g -O0 -fno-omit-frame-pointer -fsanitize=address "$map" $files -o "$work/asan_fuzzer"
gcc -g -O0 -fno-omit-frame-pointer -fsanitize=undefined -fno-sanitize-recover=undefined "$map" $files -o "$work/ubsan_fuzzer"
run() { ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$work/$1" "$2" > "$here/reports/$3.txt" 2>&1; }
run asan_fuzzer 0abcdefgh gcc_asan_heap_overflow
run asan_fuzzer 1abc gcc_asan_uaf
run asan_fuzzer 2abc gcc_asan_double_free
run asan_fuzzer 3abcdefghijklmnopqrstuvwxyz0123456789 gcc_asan_global_overflow
run asan_fuzzer 4abcdefghijklmnopqrs gcc_asan_stack_buffer_overflow
run asan_fuzzer 5 gcc_asan_segv
run asan_fuzzer 6 gcc_asan_stack_overflow
run asan_fuzzer 8leakme gcc_lsan_leak
run ubsan_fuzzer 7ab gcc_ubsan_signed_overflow
run ubsan_fuzzer 5 gcc_ubsan_null_load
rm -rf "$work"
