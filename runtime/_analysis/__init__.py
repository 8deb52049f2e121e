"""Static analysis of workflow documents: control regions, schemas, path options and diagnostics.

Modules: ``_regions`` (owner stacks, region diagnostics), ``_labels`` (what a
node can emit), ``_schemas`` (JSON Schema subset + type compatibility),
``_infer`` (result -> state inference), ``_error_payload`` (the error
route's payload), ``_scope`` (what a path reads, context schemas per
region), ``_checks`` (binding and path diagnostics), ``_cycles`` (route cycles
with no exit), ``_branch`` (branch
case values), ``_options`` (path options), ``_document_schemas`` (the
document's own schemas), ``_codes`` (the code table), ``_analyzer``
(``analyze``).

Decisions worth knowing (docs/design/runtime.md section 7 leaves them open):

* ``node.unreachable`` is an **error**, as the seed says ("unreachable nodes
  remain validation errors"). The designer stores drafts with errors anyway;
  only running is refused.
* Flow-insensitive state: a state field is readable at every node, typed by
  ``state_schema`` when declared (writes are checked against it), else by the
  union of everything output bindings write there (set: the source; append:
  array of it; extend: the array; merge: an object merge). Presence is not
  proven; reading a field nobody declares or writes is ``path.unknown_field``.
* Error routes: a node that fails for good and has an ``error`` route
  commits the error payload ``{"error": {...}}`` (``_error_payload``) through
  its output bindings, and the engine skips a binding whose source the
  payload lacks. So for such a node a binding source may name a field of the
  result *or* of the error payload; an undeclared state target is typed as
  the union of what both sides write (``source: "error"`` only the error
  object, ``"."`` result or payload). A mode that cannot apply to the
  payload (``extend`` of ``"."``) is an error (the engine fails the run); a
  declared state field the payload does not fit is a *warning* (state is not
  validated at run time, and ``"."`` cannot be limited to the ok route).
* Branch cases (``_branch``): each case's ``value`` is judged against the
  branch path's schema the way the engine compares (JSON equality, ``3``
  equals ``3.0``; ``in`` takes a list, or a string/object for a string
  path; ordering only number-number and string-string; ``exists``/
  ``truthy`` ignore the value). A case that can never match (``not_equals``:
  always matches) is a ``binding.type_mismatch`` error on
  ``cases.<i>.value``; dead list entries and ignored values are warnings;
  ``null`` is never reported (a missing path reads as null).
* An ``input`` field that is neither required nor defaulted may be missing, so
  its schema reads as nullable (binding it into a required field warns).
* Paths do not index arrays: ``input.items.0`` is ``path.unknown_field``; a
  foreach reaches the items, path options offer arrays as a whole.
* Compatibility levels: ``exact``, ``compatible`` (integer into number,
  unknown ``{}`` source, a narrower enum), ``optional`` (may fail at run time:
  nullable into non-nullable, some union alternative does not fit, a plain
  string into an enum; reported as a ``binding.type_mismatch`` *warning*), and
  none (a ``binding.type_mismatch`` error).
* A node reached under two owner stacks: when one stack extends the other and
  the node cannot lead back to the extra foreach, the deeper routes into it
  are ``region.escape`` (e.g. a body routing to its foreach's ``done`` target);
  otherwise it is ``region.ambiguous``. Such a node's region is the common
  prefix of its stacks: only what is active however it is reached.
* A foreach without a ``loop`` route is ``region.no_return`` (field
  ``routes.loop``); a body node whose emittable label has no route is
  ``region.no_return`` (``error`` is emittable only if an error route exists,
  so it never counts). Without a registry, a task's labels are unknown: only
  "no routes at all" is judged.
* ``route.unknown_target``/``route.unknown_source``/``workflow.no_start`` exist
  for documents built with ``model_construct``; a raw mapping is validated by
  the pydantic model first and refused with ``WorkflowValidationError``
  carrying ``document.invalid`` diagnostics.
* Child workflows are analyzed in their own scope; their errors are repeated
  on the calling subgraph node (same code, field ``workflow``). In a child,
  ``context.foreach.X`` / an alias of a *caller's* foreach is
  ``path.cross_scope``; analyzed standalone it is ``path.unknown_foreach``.
* ``schema.invalid`` (``_document_schemas``, rules in ``runtime._schema_check``):
  ``input_schema``/``state_schema`` (workflow level, no node) or an
  interrupt's ``resume_schema`` that the runtime could not validate against:
  invalid per its meta-schema (draft 2020-12 unless ``$schema`` says 2019-09,
  7, 6 or 4), a ``$ref`` that leaves the schema / points at nothing / at a
  non-schema, ``$ref``s looping through in-place keywords (validation would
  never end), a ``pattern`` that does not compile or is too large once its
  repeat counts are unrolled, ``$schema`` below the top, or
  ``unevaluatedProperties`` with ``patternProperties``, or one whose expansion (every ``$ref``
  replaced by its target where it is used) holds more than ``MAX_SCHEMA_SUBSCHEMAS`` (10,000)
  subschemas: "too complex: more than 10000 subschemas, the limit is 10000". The size is counted
  on the graph of subschemas with each ``$ref`` target's count memoised and the count stopping at the
  limit, so measuring is linear in the schema's text; no value is ever validated against such a
  schema (the runtime refuses it in the same words). Recursion is counted once, so recursion
  that multiplies is refused too ("too complex", ``runtime._schema_fanout``): one check of a
  recursive subschema leading to two checks at one place one level down in the value. A
  ``default`` that its own subschema refuses is reported as well (the runtime still validates
  with such a schema: a filled-in bad default is refused like any bad value). An error even for
  ``state_schema`` (which the engine does not validate against): the
  document is wrong either way.
* ``route.no_exit`` (``_cycles``): a strongly connected part of the route graph
  holding a cycle, with no route out of it (``error`` counts), no node that can
  emit an unrouted label (a foreach whose ``done`` has no route is one) and no
  interrupt, runs until the step limit. One error per cycle, on its first node
  in document order (field ``routes``), ``data["nodes"]`` listing them all.
  Tasks whose labels are unknown (no registry) count as a way out.
* Additions to the code table: ``task.unknown``, ``route.unknown_source``,
  ``workflow.no_start``, ``schema.invalid``, ``document.invalid``,
  ``route.no_exit`` (see ``CODES``).
"""

from __future__ import annotations

from runtime._analysis._analyzer import Analysis, analyze
from runtime._analysis._codes import CODES
from runtime._analysis._options import PathOption

__all__ = ["CODES", "Analysis", "PathOption", "analyze"]
