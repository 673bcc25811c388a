#!/usr/bin/env bash
# The one-definition-rule check of the per-instruction-set translation units (cpp/kernels.h): the linker keeps one copy
# of a weak or global symbol defined in several objects, so a function compiled with -mavx512f in isa_avx512.cpp and
# also emitted by another object could end up on the baseline path and crash a CPU without AVX-512. This compiles the
# kernel objects with the extension's flags (and reads the objects of the last scikit-build build, bindings included,
# when there is one) and lists every code symbol (nm types T, W, i) that an AVX2 or AVX-512 object defines and another
# object defines too, and every one defined in more than one of the ISA objects. Exit status 1 when it finds any.
#
#   scripts/check_isa_symbols.sh            # CXX (default g++)
#   CXX=clang++ scripts/check_isa_symbols.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CXX="${CXX:-g++}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c++17 -O3 -ffp-contract=off -fno-math-errno -Wall -Wextra -Wno-psabi -fPIC -fvisibility=hidden
       -DPHYSAI_HAVE_LANES -DPHYSAI_HAVE_AVX2 -DPHYSAI_HAVE_AVX512 -Icpp)
declare -A isa=([isa_avx512]=-mavx512f [isa_avx2]=-mavx2 [isa_default]= [scalar]= [dispatch]=)
for f in "${!isa[@]}"; do
    "$CXX" "${flags[@]}" ${isa[$f]} -c "cpp/$f.cpp" -o "$tmp/$f.o" &
done
wait
uses_vectors() {   # uses_vectors DIR SYMBOL OBJECT...: whether SYMBOL's code in any of the objects touches a vector register
    local dir="$1" sym="$2"
    shift 2
    for obj in "$@"; do
        objdump -d -C --no-show-raw-insn "$dir/$obj.o" | awk -v s="<$sym>:" 'index($0, s) { on = 1; next } on && /^$/ { on = 0 } on' |
            grep -q -E '%[xyz]mm|%k[0-7]' && return 0
    done
    return 1
}
check() {   # check DIR: the objects in DIR
    local dir="$1" found=0
    # object -> its code symbols (defined, global or weak)
    for o in "$dir"/*.o; do
        nm -C --defined-only "$o" | awk -v obj="$(basename "$o" .o)" '$2 ~ /^[TWi]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print obj "\t" $0 }'
    done | sort -u > "$dir/symbols.tsv"                          # once per object (constructors have two aliases)
    # symbols defined by more than one object, with the objects
    awk -F'\t' '{ objs[$2] = objs[$2] " " $1; n[$2]++ } END { for (s in n) if (n[s] > 1) print s "\t" objs[s] }' "$dir/symbols.tsv" |
        while IFS=$'\t' read -r sym objs; do
            isa_objs=$(tr ' ' '\n' <<< "$objs" | grep -c -E '^(isa_avx512|isa_avx2|isa_default)(\.cpp)?$' || true)
            special=$(tr ' ' '\n' <<< "$objs" | grep -c -E '^(isa_avx512|isa_avx2)(\.cpp)?$' || true)
            if [ "$isa_objs" -gt 1 ] || [ "$special" -gt 0 ]; then
                if [ "$sym" = "__clang_call_terminate" ] && ! uses_vectors "$dir" "$sym" $objs; then
                    echo "  (allowed: $sym, Clang's helper that calls __cxa_begin_catch and std::terminate, no vector" \
                         "instruction in any of$objs)" >&2
                    continue
                fi
                echo "  $sym:$objs"
            fi
        done > "$dir/shared.txt"
    if [ -s "$dir/shared.txt" ]; then
        cat "$dir/shared.txt"
        found=1
    fi
    return $found
}
status=0
echo "objects compiled with $CXX ($("$CXX" --version | head -1)):"
if check "$tmp"; then echo "  no code symbol of an ISA object is defined by another object"; else status=1; fi
for built in build/*/CMakeFiles/_native.dir/cpp; do
    [ -d "$built" ] || continue
    mkdir -p "$tmp/built"
    for o in "$built"/*.o; do cp "$o" "$tmp/built/$(basename "$o" .cpp.o).o"; done
    echo "objects of the last build ($built):"
    if check "$tmp/built"; then echo "  no code symbol of an ISA object is defined by another object"; else status=1; fi
    rm -rf "$tmp/built"
done
exit $status
