"""The project's modules, their imports resolved, and facts to a fixed point.

A file is known under every module name it has (`ddplint.project.modules`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping

from ddplint.analysis.calls import switched_off
from ddplint.analysis.collectives import COLLECTIVE_FUNCTIONS, COLLECTIVE_MODULES, COLLECTIVE_QUALNAMES
from ddplint.analysis.guards import Runs, larger, smaller
from ddplint.analysis.rank import RANK_FUNCTIONS, is_conventional_rank_call
from ddplint.paths import message_path
from ddplint.project.facts import Fact, FileFacts
from ddplint.project.summary import ModuleSummary
from ddplint.solver import solve

_MAX_DEPTH = 12


@dataclass(frozen=True, eq=False)
class ModuleEntry:
    """One linted file as a module: its display path, names and summary."""

    display: str
    names: tuple[str, ...]
    is_package: bool
    summary: ModuleSummary


class ProjectIndex:
    """Resolves imported names to the linted modules' facts."""

    def __init__(
        self, entries: Iterable[ModuleEntry], uses_of: Callable[[ModuleEntry], tuple[str, ...]] | None = None
    ) -> None:
        """`uses_of` reads a module's attribute uses (`ModuleSummary.uses`)
        where its summary has not."""
        self.entries = list(entries)
        self._uses_of = uses_of
        self.modules: dict[str, ModuleEntry] = {}
        for entry in self.entries:
            for name in entry.names:
                self.modules.setdefault(name, entry)
        self._lookups: dict[tuple[int, str], tuple[ModuleEntry, str] | None] = {}
        self._resolvable = _resolvable_names(self.entries)
        self._found: dict[str, tuple[ModuleEntry, str] | None] = {}
        self._elsewhere: dict[str, set[str]] | None = None
        self.facts = self._solve()
        self.callers = self._callers()
        self._exported: dict[str, dict[str, Fact]] = {}
        self._interesting = {m: names for m in self.modules if (names := self.exported(m))}
        self._prefixes = {".".join(m.split(".")[: i + 1]) for m in self._interesting for i in range(m.count(".") + 1)}

    # ------------------------------------------------------------ names

    @staticmethod
    def absolute(raw: str, entry: ModuleEntry) -> str | None:
        """`raw` (``.dist.x``, ``..utils``) as an absolute name, seen from `entry`."""
        if raw[:1] != ".":
            return raw
        level = len(raw) - len(raw.lstrip("."))
        if not entry.names:
            return None
        parts = entry.names[0].split(".")
        if not entry.is_package:
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        rest = raw[level:]
        return ".".join([*parts, rest] if rest else parts) or None

    def lookup(self, name: str, depth: int = 0) -> tuple[ModuleEntry, str] | None:
        """The module and symbol an absolute name denotes, through re-exports
        (memoized: real packages re-export through long star-import chains)."""
        if name in self._found:
            return self._found[name]
        self._found[name] = None  # a cycle of re-exports resolves to nothing
        found = self._lookup(name, depth) if depth <= _MAX_DEPTH else None
        self._found[name] = found
        return found

    def _lookup(self, name: str, depth: int) -> tuple[ModuleEntry, str] | None:
        module, _, symbol = name.rpartition(".")
        entry = self.modules.get(module)
        if entry is None:
            return self._method(module, symbol, depth)
        summary = entry.summary
        if symbol in summary.symbols or symbol in summary.defined:
            return entry, symbol
        if any(d.startswith(symbol + ".") for d in summary.defined):
            return entry, symbol  # a class with methods
        target = summary.aliases.get(symbol)
        if target is not None:
            resolved = self.absolute(target, entry)
            return self.lookup(resolved, depth + 1) if resolved and resolved != name else None
        if summary.exports is not None and symbol not in summary.exports:
            return None
        for star in summary.stars:
            base = self.absolute(star, entry)
            if base:
                found = self.lookup(f"{base}.{symbol}", depth + 1)
                if found is not None:
                    return found
        return None

    def _method(self, owner: str, method: str, depth: int) -> tuple[ModuleEntry, str] | None:
        """``pkg.mod.Class.method``: the method of a class the project defines
        (through re-exports of the class), as its module's ``Class.method``."""
        found = self.lookup(owner, depth + 1) if "." in owner else None
        if found is None or "." in found[1]:
            return None
        symbol = f"{found[1]}.{method}"
        summary = found[0].summary
        return (found[0], symbol) if symbol in summary.symbols or symbol in summary.defined else None

    def _resolve(self, raw: str, entry: ModuleEntry) -> tuple[ModuleEntry, str] | None:
        if raw.rpartition(".")[2] not in self._resolvable:
            return None  # most imports: nothing of that name has a fact
        key = (id(entry), raw)
        if key not in self._lookups:
            name = self.absolute(raw, entry)
            self._lookups[key] = self.lookup(name) if name else None
        return self._lookups[key]

    # ------------------------------------------------------------ facts

    def _solve(self) -> dict[tuple[str, str], Fact]:
        """Every symbol's facts, with imported helpers followed to a fixed point."""
        facts: dict[tuple[str, str], Fact] = {}
        for entry in self.entries:
            for name, s in entry.summary.symbols.items():
                facts[(entry.display, name)] = Fact(
                    entry.display, s.line, s.rank, s.collective, s.silences_print, s.dataset, s.random,
                    s.silences_logging, s.switch if s.collective else None, s.hf_trainer, s.picks, s.handed,
                )  # fmt: skip

        symbols = {(e.display, name): (e, s) for e in self.entries for name, s in e.summary.symbols.items()}

        def grown(key: tuple[str, str], known: Mapping[tuple[str, str], Fact]) -> Fact:
            """The symbol's fact given what is known of the helpers it calls."""
            entry, s = symbols[key]

            def fact_of(raw: str) -> Fact | None:
                found = self._resolve(raw, entry)
                return known.get((found[0].display, found[1])) if found else None

            new = known[key]
            if not new.rank and any((f := fact_of(q)) and f.rank for q in s.rank_via):
                new = replace(new, rank=True)
            if not new.collective:
                for q, shown, arguments in s.collective_via:
                    f = fact_of(q)
                    if f is not None and f.collective and not switched_off(f.switch, arguments):
                        new = replace(new, collective=(f"{shown} from {message_path(f.path)}:{f.line}", *f.collective))
                        break
            if not new.silences_print and any((f := fact_of(q)) and f.silences_print for q in s.silences_via):
                new = replace(new, silences_print=True)
            if not new.silences_logging and any((f := fact_of(q)) and f.silences_logging for q in s.silences_via):
                new = replace(new, silences_logging=True)
            if not new.random and s.dataset is None and any(
                (f := fact_of(q)) and f.random and f.dataset is None for q in s.silences_via
            ):  # a function that calls a helper drawing noise or training (not one building a Dataset)
                new = replace(new, random=True)
            if not new.hf_trainer and any((f := fact_of(q)) and f.hf_trainer for q in s.dataset_via):
                new = replace(new, hf_trainer=True)  # a subclass of the project's own trainer base
            if new.dataset is None:
                kinds = [f.dataset for q in s.dataset_via if (f := fact_of(q)) and f.dataset]
                if kinds:
                    new = replace(new, dataset=kinds[0])
            return new

        return solve(symbols, grown, start=facts)

    def _callers(self) -> dict[str, dict[str, str]]:
        """The caller -> callee direction: for each module, its top-level
        functions (and methods, ``Class.method``) that other modules call on
        many ranks, and who runs them (the most ranks over the calls: one
        per-rank caller is enough). Each module reports who makes its calls
        as a function of who calls its own entries (`ModuleSummary.per_rank_calls`),
        so chains of calls through modules are followed here, to a fixed point."""
        calls: dict[str, list[tuple[str, str, str, Runs]]] = {}  # caller -> (entry, callee, symbol, bound)
        for entry in self.entries:
            for raw, via, runs in entry.summary.per_rank_calls or ():
                name = self.absolute(raw, entry)
                target = self.lookup(name) if name else None
                if target is None or target[0] is entry or target[1] not in target[0].summary.defined:
                    continue
                calls.setdefault(entry.display, []).append((via, target[0].display, target[1], Runs[runs]))
        found: dict[str, dict[str, Runs]] = {}
        todo = list(calls)
        while todo:
            module = todo.pop()
            known = found.get(module, {})
            for via, callee, symbol, bound in calls.get(module, ()):
                if via:
                    caller = known.get(via)
                    if caller is None:
                        continue
                    bound = smaller(caller, bound)
                runs = found.setdefault(callee, {})
                if symbol not in runs or larger(runs[symbol], bound) is not runs[symbol]:
                    runs[symbol] = bound
                    todo.append(callee)
        return {module: {symbol: runs.name for symbol, runs in symbols.items()} for module, symbols in found.items()}

    def fact(self, found: tuple[ModuleEntry, str] | None) -> Fact | None:
        return self.facts.get((found[0].display, found[1])) if found else None

    def exported(self, module: str, depth: int = 0) -> dict[str, Fact]:
        """The relevant facts a module's namespace holds (own, re-exported, star-imported)."""
        cached = self._exported.get(module)
        if cached is not None:
            return cached
        entry = self.modules.get(module)
        result: dict[str, Fact] = {}
        if entry is not None and depth <= _MAX_DEPTH:
            self._exported[module] = result  # cycles see what is known so far
            summary = entry.summary
            for name in summary.symbols:
                fact = self.facts[(entry.display, name)]
                if fact.relevant:
                    result[name] = fact
            for name, target in summary.aliases.items():
                fact = self.fact(self._resolve(target, entry))
                if fact is not None and fact.relevant:
                    result.setdefault(name, fact)
            for star in summary.stars:
                base = self.absolute(star, entry)
                for name, fact in (self.exported(base, depth + 1) if base else {}).items():
                    if summary.exports is None or name in summary.exports:
                        result.setdefault(name, fact)
        self._exported[module] = result
        return result

    def file_facts(self, entry: ModuleEntry) -> FileFacts:
        """The facts of the names `entry` imports, keyed as its code spells
        them; facts the rules know from the name alone are left out (every
        module already knows `deepspeed.comm.all_reduce`), so linting a
        library's own modules does not re-lint all its importers."""
        out = self._file_facts(entry)
        kept = {}
        for name, fact in out.items():
            fact = _beyond_catalogue(name, fact)
            if fact.relevant:
                kept[name] = fact
        elsewhere = self._called_elsewhere()
        called = {symbol for name in entry.names for symbol in elsewhere.get(name, ())}
        if entry.summary.entries:  # else a file linted alone (the editor): the project's answer for its module
            called &= set(entry.summary.entries)
        return FileFacts(kept, self.callers.get(entry.display, {}), frozenset(called))

    # ------------------------------------------------------------ callers

    def _called_elsewhere(self) -> dict[str, set[str]]:
        """For each module with entry points by their body (`ModuleSummary.entries`),
        those of its top-level names that another module imports by name
        (a package's re-exports aside) or calls: module name -> names."""
        if self._elsewhere is not None:
            return self._elsewhere
        found: dict[str, set[str]] = {}
        wanted = {e.display for e in self.entries if e.summary.entries}
        if wanted:
            modules = {name for e in self.entries if e.display in wanted for name in e.names}
            packages = {".".join(m.split(".")[: i + 1]) for m in modules for i in range(m.count("."))}
            for entry in self.entries:
                summary = entry.summary
                names = list(summary.called)
                if not entry.is_package:
                    names += summary.aliases.values()
                imported = {self.absolute(raw, entry) for raw in summary.aliases.values()}
                if imported & (modules | packages):  # `import pkg.train as t; t.train_model()`
                    names += self._used(entry)
                for raw in names:
                    target = self._symbol_of(raw, entry)
                    if target is not None and target[0] is not entry and target[0].display in wanted:
                        for name in target[0].names:
                            found.setdefault(name, set()).add(target[1])
        self._elsewhere = found
        return found

    def _symbol_of(self, raw: str, entry: ModuleEntry, depth: int = 0) -> tuple[ModuleEntry, str] | None:
        """The module and top-level name `raw` (as `entry` spells it) denotes,
        through re-exports; whether or not the name has facts."""
        name = self.absolute(raw, entry)
        if not name or depth > _MAX_DEPTH:
            return None
        module, _, symbol = name.rpartition(".")
        target = self.modules.get(module)
        if target is None:
            return None
        alias = target.summary.aliases.get(symbol)
        if alias is not None:
            return self._symbol_of(alias, target, depth + 1)
        return target, symbol

    def _file_facts(self, entry: ModuleEntry) -> dict[str, Fact]:
        out: dict[str, Fact] = {}
        summary = entry.summary
        used: set[str] | None = None
        for raw in summary.aliases.values():
            found = self._resolve(raw, entry)
            fact = self.fact(found)
            if fact is not None and fact.relevant:
                out[raw] = fact
            if found is not None and "." not in found[1]:  # a class: its methods, through instances
                prefix = found[1] + "."
                for symbol in found[0].summary.symbols:
                    if symbol.startswith(prefix):
                        fact = self.facts[(found[0].display, symbol)]
                        if fact.relevant:
                            out.setdefault(f"{raw}.{symbol[len(prefix):]}", fact)
            name = self.absolute(raw, entry)
            if name in self._prefixes:  # a module or package: `import util.misc as utils`
                used = self._used(entry) if used is None else used
                for module, exported in self._interesting.items():
                    if module == name or module.startswith(name + "."):
                        for symbol, fact in exported.items():
                            key = f"{raw}{module[len(name):]}.{symbol}"
                            if key in used:
                                out.setdefault(key, fact)
        for star in summary.stars:
            base = self.absolute(star, entry)
            for symbol, fact in (self.exported(base) if base else {}).items():
                out.setdefault(f"{star}.{symbol}", fact)
        return out

    def _used(self, entry: ModuleEntry) -> set[str]:
        uses = entry.summary.uses
        if uses is None:
            uses = self._uses_of(entry) if self._uses_of is not None else ()
        return _prefixes_of(uses)


def _resolvable_names(entries: list[ModuleEntry]) -> set[str]:
    """The last components of the names that may resolve to a symbol with
    facts: the symbols' names, and the names of imports whose targets may
    (re-exports rename: ``from .a import f as g``). A name resolves through
    aliases and star imports to a symbol of one of these names, or to none."""
    names = {name for entry in entries for name in entry.summary.symbols}
    names |= {part for name in names if "." in name for part in name.split(".")}  # `Class.method`: the class, the method
    pending = [(local, target.rpartition(".")[2]) for e in entries for local, target in e.summary.aliases.items()]
    while True:
        added = {local for local, last in pending if last in names and local not in names}
        if not added:
            return names
        names |= added
        pending = [(local, last) for local, last in pending if local not in names]


def _prefixes_of(uses: Iterable[str]) -> set[str]:
    """Every dotted prefix of the attribute chains a module reads."""
    result: set[str] = set()
    for use in uses:
        parts = use.split(".")
        result.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
    return result


def _beyond_catalogue(name: str, fact: Fact) -> Fact:
    """`fact` without what the rules conclude from `name` itself: rank
    functions by qualified or conventional name, catalogued collectives."""
    module, _, last = name.rpartition(".")
    if fact.rank and (name in RANK_FUNCTIONS or is_conventional_rank_call(last)):
        fact = replace(fact, rank=False)
    if fact.collective and ((module in COLLECTIVE_MODULES and last in COLLECTIVE_FUNCTIONS) or name in COLLECTIVE_QUALNAMES):
        fact = replace(fact, collective=())
    return fact
