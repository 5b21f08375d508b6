"""Whole-project analysis: facts about helpers resolved across modules.

Real training code keeps its helpers elsewhere: ``utils/dist.py`` defines
``is_primary()`` and ``reduce_mean()``, ``train.py`` imports them. Three
steps, each keeping per-file work independent (parallel, cached):

1. every file, linted on its own, also yields a small serializable
   `ModuleSummary` (`summary.py`, `collector.py`): which of its top-level
   functions return a rank-dependent value, perform a collective, or
   silence ``print`` on other ranks, which classes are Datasets, and what it
   imports and re-exports; each fact may hinge on imported names;
2. `ProjectIndex` (`index.py`) names the modules from the linted roots,
   resolves imports (absolute, relative, aliases, ``__init__`` re-exports,
   star imports, ``__all__``) and iterates the facts to a fixed point over
   the import graph, cycles included;
3. a file whose imports carry facts (`FileFacts`, `facts.py`) is linted
   again with them; the facts are part of its cache key.
"""
