"""The per-file semantic model: what a rule can ask about the file it lints.

One `SemanticModel` per file, shared by all rules. Its answers come from the
analyses the walker updates as it goes, so they describe the node being
visited: ask during ``visit_``/``leave_`` (not later), and keep the answer if
`finish()` needs it. The engine's `ModelView` is this model plus the sink
for findings.
"""

from __future__ import annotations

from typing import Iterable

from ddplint.analysis.amp import ScalerSteps
from ddplint.analysis.barriers import Barriers
from ddplint.analysis.collective_calls import CollectiveCalls
from ddplint.analysis.data import DataAnalysis
from ddplint.analysis.decisions import PerRankValues
from ddplint.analysis.devices import Devices
from ddplint.analysis.distributed import DistributedContext, launched_per_rank, runs_per_rank
from ddplint.analysis.flow import ValueFlow
from ddplint.analysis.loops import TrainingLoops
from ddplint.analysis.outputs import Outputs
from ddplint.analysis.rank import RankAnalysis
from ddplint.analysis.rank_advice import RankAdvice
from ddplint.analysis.rank_kinds import RankKinds
from ddplint.analysis.rank_zero import RankZeroTests
from ddplint.analysis.receivers import imported_method_names
from ddplint.analysis.scope import QualNames, ScopeTracker
from ddplint.analysis.seeding import Randomness, Seeds
from ddplint.analysis.wrappers import Models
from ddplint.config.settings import Settings
from ddplint.lazy import cst
from ddplint.project.facts import NO_FACTS, FileFacts

#: The optional analyses a rule can ask for with ``requires``.
#: In the order they run: each after those it asks during the walk.
OPTIONAL_ANALYSES = {
    "data": DataAnalysis, "loops": TrainingLoops, "rank": RankAnalysis, "rank_kinds": RankKinds,
    "rank_zero": RankZeroTests, "outputs": Outputs, "barriers": Barriers, "amp": ScalerSteps,
    "devices": Devices, "models": Models, "seeds": Seeds, "randomness": Randomness,
}  # fmt: skip


class SemanticModel:
    """The shared per-file facts every rule asks (the engine adds the sink for findings)."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        settings: Settings,
        stack: list[cst.CSTNode],
        requires: Iterable[str] = (),
        facts: FileFacts = NO_FACTS,
        summarize: bool = False,
    ) -> None:
        self.path = path
        #: Facts about the helpers this module imports from other linted modules.
        self.facts = facts
        #: Whether to record what the module summary needs (whole-project analysis).
        self.summarize = summarize
        self.source = source
        self.module = module
        self.settings = settings
        #: Ancestors of the node being visited, outermost first, itself last.
        self.stack = stack
        self.scopes = ScopeTracker(module)
        self._distributed = DistributedContext(self.scopes)
        wanted = set(requires)
        self._optional = {name: analysis(self) for name, analysis in OPTIONAL_ANALYSES.items() if name in wanted}
        self._flow: ValueFlow | None = None
        self._origins: dict[tuple[int, ...], tuple[cst.CSTNode, ...]] = {}
        #: (the node being visited, its depth) -> its enclosing function: the last one asked
        self._enclosing: tuple[tuple[int, int], cst.FunctionDef | None] = ((-1, -1), None)
        self._per_rank_values: PerRankValues | None = None
        self._rank_advice: RankAdvice | None = None
        self._collective_calls: CollectiveCalls | None = None

    @property
    def analyses(self) -> tuple[object, ...]:
        """The walker analyses, in the order they must run."""
        return (self.scopes, self._distributed, *self._optional.values())

    def release(self) -> None:
        """End the model's use (the lint has read all it needs of it).

        Its analyses refer to it and to each other, so the model, its
        analyses and every node they hold form one reference cycle: without
        this, the whole tree is left to the cycle collector, which traverses
        every node of it (a sixteenth of a whole-project run). Emptying the
        parts this model made breaks the cycle, and reference counting frees
        the tree at once. Nothing shared is touched (settings, facts, the
        module's text), and the model must not be asked anything after.
        """
        made = (*self.analyses, self._flow, self._per_rank_values, self._rank_advice, self._collective_calls)
        for part in made:
            if part is not None and hasattr(part, "__dict__"):
                part.__dict__.clear()
        self.__dict__.clear()

    def runs(self, analysis: str) -> bool:
        """Whether the optional analysis (``"rank"``) runs for this file."""
        return analysis in self._optional

    @property
    def rank(self) -> RankAnalysis:
        """The rank analysis (only for rules with ``requires = {"rank"}``)."""
        return self._optional["rank"]  # type: ignore[return-value]

    @property
    def rank_advice(self) -> RankAdvice:
        """The module's own rank-0 test and rank, as text for a finding's advice
        (after the walk; only with the rank analysis)."""
        if self._rank_advice is None:
            self._rank_advice = RankAdvice(self.rank)
        return self._rank_advice

    @property
    def collective_calls(self) -> CollectiveCalls:
        """The calls that perform a collective and the ranks that reach them:
        a rule's trigger `record`s each call or loop during the walk, its
        check asks `reach` after it (only with the rank analysis)."""
        if self._collective_calls is None:
            self._collective_calls = CollectiveCalls(self)
        return self._collective_calls

    @property
    def rank_kinds(self) -> RankKinds:
        """Which rank attributes are assigned (only for rules with ``requires = {"rank_kinds"}``)."""
        return self._optional["rank_kinds"]  # type: ignore[return-value]

    @property
    def rank_zero(self) -> RankZeroTests:
        """The rank-0 tests the module writes, for fixes that reuse one (only for rules with ``requires = {"rank_zero"}``)."""
        return self._optional["rank_zero"]  # type: ignore[return-value]

    @property
    def barriers(self) -> Barriers:
        """Where every rank waits, in walk order (only for rules with ``requires = {"barriers"}``)."""
        return self._optional["barriers"]  # type: ignore[return-value]

    @property
    def outputs(self) -> Outputs:
        """What the module prints, logs, tracks or opens, and what quiets it (only for rules with ``requires = {"outputs"}``)."""
        return self._optional["outputs"]  # type: ignore[return-value]

    @property
    def devices(self) -> Devices:
        """Where tensors live and which GPU each process uses (only for rules with ``requires = {"devices"}``)."""
        return self._optional["devices"]  # type: ignore[return-value]

    @property
    def data(self) -> DataAnalysis:
        """The data-pipeline analysis (only for rules with ``requires = {"data"}``)."""
        return self._optional["data"]  # type: ignore[return-value]

    @property
    def models(self) -> Models:
        """Wrapped models, bare modules, forwards around wrappers, wrap order
        (only for rules with ``requires = {"models"}``)."""
        return self._optional["models"]  # type: ignore[return-value]

    @property
    def seeds(self) -> Seeds:
        """The module's seed calls and the randomness they govern (after the walk;
        only for rules with ``requires = {"rank", "seeds"}``)."""
        return self._optional["seeds"]  # type: ignore[return-value]

    @property
    def randomness(self) -> Randomness:
        """Per-rank randomness a shared seed governs (after the walk; only for
        rules with ``requires = {"rank", "randomness"}``)."""
        return self._optional["randomness"]  # type: ignore[return-value]

    @property
    def loops(self) -> TrainingLoops:
        """The training-loop analysis (only for rules with ``requires = {"loops"}``)."""
        return self._optional["loops"]  # type: ignore[return-value]

    @property
    def amp(self) -> ScalerSteps:
        """The GradScaler steps of the module's functions (only for rules with ``requires = {"amp"}``)."""
        return self._optional["amp"]  # type: ignore[return-value]

    def enclosing_function(self) -> cst.FunctionDef | None:
        """The innermost function around the node being visited (the analyses
        and rules visiting one node ask in turn: the last answer is kept)."""
        stack = self.stack
        key = (id(stack[-1]), len(stack)) if stack else (0, 0)
        if key != self._enclosing[0]:
            found = None
            for node in reversed(stack):
                if isinstance(node, cst.FunctionDef):
                    found = node
                    break
            self._enclosing = (key, found)
        return self._enclosing[1]

    # ------------------------------------------------------------ names

    def qualified_names(self, node: cst.BaseExpression) -> QualNames:
        """Every qualified name `node` may denote here; `None` marks unknowns."""
        return self.scopes.qualified_names(node)

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """The one qualified name `node` certainly denotes, else None."""
        names = self.scopes.qualified_names(node)
        if len(names) == 1:
            (name,) = names
            return name
        return None

    def values_of(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]:
        """The expressions a Name may hold here (empty when unknown)."""
        return self.scopes.values_of(node)

    @property
    def flow(self) -> ValueFlow:
        """Values followed across the module's functions and classes (built on first use)."""
        if self._flow is None:
            self._flow = ValueFlow(self.module, self.scopes.final_module_names, walrus=":=" in self.source)
        return self._flow

    @property
    def per_rank_values(self) -> PerRankValues:
        """Values each rank computes from its own batch, unreduced (after the walk; built on first use)."""
        if self._per_rank_values is None:
            self._per_rank_values = PerRankValues(self)
        return self._per_rank_values

    def origins(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]:
        """What `node` may hold here, followed through parameters (the arguments
        at every call site), attributes (what any method assigns) and returns of
        module functions and methods; `values_of`'s bindings first where it
        knows them. Nodes that cannot be followed stand for themselves."""
        function = self.enclosing_function()
        values = self.scopes.values_of(node) if isinstance(node, cst.Name) else ()
        if not values:
            return self.flow.origins(node, function)
        # A name's bindings, read from one function, hold the same origins at each of its uses
        # (`parser.add_argument(...)` forty times): followed once (the module's nodes live as long as this model).
        key = (id(function), *map(id, values))
        known = self._origins.get(key)
        if known is None:
            found: dict[int, cst.CSTNode] = {}
            for value in values:
                for origin in self.flow.origins(value, function):
                    found[id(origin)] = origin
            known = self._origins[key] = tuple(found.values())
        return known

    def imported_callees(self, func: cst.BaseExpression) -> frozenset[str]:
        """The qualified names through which a call of `func` may reach an
        imported definition: the imported name itself (``utils.reduce``), or
        the method of an imported class an instance is typed by
        (``meters.RunningMean.synchronize`` for ``meter.synchronize`` after
        ``meter = RunningMean()``), as `FileFacts` keys them."""
        names = self.scopes.imported_qualnames(func)
        if names or not isinstance(func, cst.Attribute):
            return names
        return imported_method_names(func, self)

    @property
    def one_process_group(self) -> bool:
        """The module joins a group of one (`init_process_group(..., world_size=1)`)."""
        return self._distributed.one_process

    @property
    def deepspeed_launched(self) -> bool:
        """The module calls `deepspeed.initialize` or `deepspeed.add_config_arguments`:
        the DeepSpeed launcher starts it (final after the walk)."""
        return self._distributed.deepspeed_launched

    @property
    def in_distributed_context(self) -> bool:
        """Whether the module is distributed code; final after the walk."""
        if self._distributed.one_process:
            return False
        # Other modules call its functions per rank, or it tests its rank with a
        # project helper of any name (`from .comm import first_in_job`).
        return self.distributed_by_text or bool(self.facts.callers) or self.facts.rank_helper

    @property
    def distributed_by_text(self) -> bool:
        """Whether the module's own code shows it is distributed code (not
        only its callers in other modules); final after the walk."""
        distributed = self._distributed
        if distributed.one_process:
            return False
        if distributed.found and runs_per_rank(self.source):
            return True
        return distributed.hf_trainer and launched_per_rank(self.source)

    def statement(self) -> cst.CSTNode:
        """The innermost statement around the node being visited."""
        for ancestor in reversed(self.stack):
            if isinstance(ancestor, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return ancestor
        return self.module
