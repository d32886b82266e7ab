"""The patched build's fuzz target read from outside: what its ELF file defines, by green's parse.

A build that silences its sanitizer does so through the binary: a strong definition of a hook
the runtime calls (``__asan_default_options``, ``__asan_on_error``, ``__lsan_default_suppressions``,
``__sanitizer_*`` callbacks), or a function the loader runs before or after ``main`` (an
``.init_array``/``.fini_array`` entry). Green reads the fuzz target out of the judging container
before anything of the build has run, parses it with ``pyelftools`` in its own process, and
compares it with the vulnerable build's binary (read out of the same container before the
build): what the patched build adds is refused by name. It also says whether the target is a
libFuzzer binary at all (a standalone driver cannot be fuzzed: the judge says so and judges it
on its runs).
"""

from __future__ import annotations

import functools
import hashlib
import io
import re
import struct
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_RELOC_TYPE_AARCH64, ENUM_RELOC_TYPE_i386, ENUM_RELOC_TYPE_x64
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

MAX_BINARY_BYTES = 512 << 20
"""The largest fuzz target green reads out of a judging container."""
HOOK = re.compile(
    r"^(?:__(?:asan|lsan|msan|ubsan|tsan|hwasan|dfsan|sanitizer)_\w+|\w*_default_(?:options|suppressions))$"
)
"""Names of the sanitizer runtimes' interface: a program that defines one changes the runtime."""
_ARRAYS = (".preinit_array", ".init_array", ".fini_array")
_RELATIVE = {"R_X86_64_RELATIVE", "R_AARCH64_RELATIVE", "R_386_RELATIVE"}


class NotAnElf(ValueError):
    """The file is no ELF binary green can read."""


@dataclass
class BinaryFacts:
    """What one build's fuzz target defines."""

    hooks: set[tuple[str, str]] = field(default_factory=set)
    """Defined sanitizer-interface symbols: ``(name, binding)``."""
    startup: set[str] = field(default_factory=set)
    """Functions the loader runs before or after ``main`` (init and fini arrays), by name."""
    libfuzzer: bool = False
    """libFuzzer is linked in (``fuzzer::`` symbols, ``LLVMFuzzerRunDriver``)."""
    symbols: bool = False
    """The binary has a full symbol table (not only its dynamic one)."""


def read_facts(data: bytes) -> BinaryFacts:
    """Parse an ELF file's bytes (a binary seen before: its facts again, by digest); NotAnElf
    when they are none."""
    return _facts_of(hashlib.sha256(data).hexdigest(), data)


@functools.lru_cache(maxsize=64)
def _facts_of(_digest: str, data: bytes) -> BinaryFacts:
    try:
        elf = ELFFile(io.BytesIO(data))
        return _facts(elf)
    except (ELFError, struct.error, ValueError) as exc:
        raise NotAnElf(f"not an ELF binary green can read: {exc}") from exc


def _facts(elf: ELFFile) -> BinaryFacts:
    facts = BinaryFacts()
    functions: dict[int, str] = {}
    tables = [s for s in elf.iter_sections() if isinstance(s, SymbolTableSection)]
    full = [s for s in tables if s.name == ".symtab"]
    facts.symbols = bool(full)
    for section in full or tables:  # the full table holds the dynamic one's names
        for sym in section.iter_symbols():
            name, defined = sym.name, sym["st_shndx"] != "SHN_UNDEF"
            if not name or not defined:
                continue
            if HOOK.match(name):
                facts.hooks.add((name, sym["st_info"]["bind"]))
            if name.startswith("_ZN6fuzzer") or name == "LLVMFuzzerRunDriver":
                facts.libfuzzer = True
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_value"]:
                functions.setdefault(sym["st_value"], name)
    for address in _array_entries(elf):
        facts.startup.add(functions.get(address, f"0x{address:x}"))
    return facts


def _array_entries(elf: ELFFile) -> list[int]:
    """The addresses in the init and fini arrays, relocations applied (a PIE's are)."""
    size = 8 if elf.elfclass == 64 else 4
    fmt = ("<" if elf.little_endian else ">") + ("Q" if size == 8 else "I")
    spans = []
    found: dict[int, int] = {}
    for name in _ARRAYS:
        section = elf.get_section_by_name(name)
        if section is None:
            continue
        start, data = section["sh_addr"], section.data()
        spans.append((start, start + len(data)))
        for i in range(0, len(data) - size + 1, size):
            found[start + i] = struct.unpack_from(fmt, data, i)[0]
    for section in elf.iter_sections():
        if not isinstance(section, RelocationSection):
            continue
        for rel in section.iter_relocations():
            offset = rel["r_offset"]
            if offset in found and rel.is_RELA():
                kind = _relocation_name(elf, rel["r_info_type"])
                if kind in _RELATIVE:
                    found[offset] = rel["r_addend"]
    return [a for a in found.values() if a not in (0, (1 << (8 * size)) - 1)]


def _relocation_name(elf: ELFFile, number: int) -> str:
    table = {"EM_X86_64": ENUM_RELOC_TYPE_x64, "EM_AARCH64": ENUM_RELOC_TYPE_AARCH64,
             "EM_386": ENUM_RELOC_TYPE_i386}.get(elf["e_machine"], {})  # fmt: skip
    return next((k for k, v in table.items() if v == number), "")


def added_by_patch(vulnerable: BinaryFacts, patched: BinaryFacts) -> list[str]:
    """A sentence per thing the patched build's binary defines that the vulnerable one does
    not (empty: nothing)."""
    out = []
    hooks = sorted(patched.hooks - vulnerable.hooks)
    if hooks:
        named = ", ".join(f"{n} ({b.removeprefix('STB_').lower()})" for n, b in hooks[:8])
        out.append(
            f"the patched build defines sanitizer interface symbols the vulnerable build does "
            f"not: {named}; they change what the sanitizer reports"
        )
    startup = sorted(patched.startup - vulnerable.startup)
    if startup:
        out.append(
            "the patched build runs functions the vulnerable build does not before or after "
            f"main (its init/fini arrays): {', '.join(startup[:8])}"
        )
    return out
