"""The structured-context design's "Required Tests" are a contract: each line maps to a named test here.

Renaming or deleting one of those tests fails this module, so the contract
cannot erode silently; and every bullet of the section in
docs/design/structured-runtime-context.md must have its line here, so a
requirement added to the design cannot go unmapped.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DESIGN = TESTS.parent / "docs/design/structured-runtime-context.md"

REQUIRED = {
    # Path and authoring
    "ForeachNode.item and .index produce structural literal path segments":
        ("runtime/test_builder.py", "test_foreach_item_and_index_produce_structural_literal_segments"),
    "A foreach id containing a dot serializes as a quoted single segment":
        ("runtime/test_builder.py", "test_foreach_id_with_dot_serializes_as_quoted_single_segment"),
    "The computed properties do not appear as persisted ForeachNode fields":
        ("runtime/test_builder.py", "test_computed_properties_are_not_persisted_fields"),
    "Foreach refs work in node and subgraph input bindings":
        ("runtime/test_builder.py", "test_foreach_refs_work_in_node_and_subgraph_input_bindings"),
    "GraphSourcePath still rejects an output root":
        ("runtime/test_builder.py", "test_graph_source_path_rejects_output_root"),
    # Runtime context
    "A single foreach exposes one structured entry":
        ("runtime/test_context.py", "test_single_foreach_exposes_one_structured_entry"),
    "A nested same-scope body exposes outer and inner entries simultaneously":
        ("runtime/test_context.py", "test_nested_body_exposes_outer_and_inner_entries"),
    "loop_item and loop_index select the innermost entry":
        ("runtime/test_context.py", "test_loop_item_and_loop_index_select_innermost_entry"),
    "Unique outer and inner aliases remain available together":
        ("runtime/test_context.py", "test_unique_outer_and_inner_aliases_available_together"),
    "Inner completion restores the outer entry and removes the inner entry":
        ("runtime/test_context.py", "test_inner_completion_restores_outer_entry_and_removes_inner"),
    "Concurrent item frames receive distinct activation/frame/lineage values":
        ("runtime/test_context.py", "test_concurrent_item_frames_receive_distinct_identities"),
    "Interrupt resume recreates the same structured entries from persisted state":
        ("runtime/test_context.py", "test_interrupt_resume_recreates_same_structured_entries"),
    "Malformed persisted foreach metadata fails closed":
        ("runtime/test_context.py", "test_malformed_persisted_foreach_metadata_fails_closed"),
    # Scope isolation
    "A child subgraph does not inherit the caller's context.foreach mapping":
        ("runtime/test_scope_isolation.py", "test_child_subgraph_does_not_inherit_caller_foreach"),
    "A parent can map a foreach item into child workflow input":
        ("runtime/test_scope_isolation.py", "test_parent_maps_foreach_item_into_child_input"),
    "Parent and child foreach nodes may reuse the same static id":
        ("runtime/test_scope_isolation.py", "test_parent_and_child_reuse_same_foreach_id"),
    "Context ancestry traversal stops at the child runtime scope":
        ("runtime/test_scope_isolation.py", "test_context_ancestry_traversal_stops_at_child_scope"),
    # Validation and schemas
    "The item schema under each structured entry matches the foreach collection's item schema":
        ("runtime/test_analysis_context.py", "test_item_schema_under_each_entry_matches_collection_item_schema"),
    "Referencing an inactive foreach is rejected":
        ("runtime/test_analysis_context.py", "test_referencing_inactive_foreach_is_rejected"),
    "Referencing a missing foreach is rejected":
        ("runtime/test_analysis_context.py", "test_referencing_missing_foreach_is_rejected"),
    "Referencing a cross-scope foreach is rejected":
        ("runtime/test_analysis_context.py", "test_referencing_cross_scope_foreach_is_rejected"),
    "Nested active alias collisions are rejected":
        ("runtime/test_analysis_context.py", "test_nested_active_alias_collisions_are_rejected"),
    "The analyzer handles legal nested cycles without losing the owner stack":
        ("runtime/test_analysis_context.py", "test_legal_nested_cycles_keep_owner_stack"),
    "Unreachable nodes do not receive structured context schemas":
        ("runtime/test_analysis_context.py", "test_unreachable_nodes_get_no_context_schema"),
}


def _test_functions(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


@pytest.mark.parametrize("requirement", sorted(REQUIRED))
def test_required_test_exists_and_asserts(requirement: str) -> None:
    relative, name = REQUIRED[requirement]
    functions = _test_functions(TESTS / relative)
    assert name in functions, f"required test for {requirement!r} is missing: {relative}::{name}"
    body = ast.unparse(functions[name])
    # A required test must check something: an assert or an expected exception.
    assert "assert" in body or "pytest.raises" in body, f"{relative}::{name} asserts nothing"


# The one design bullet that names three cases, each with its own test above.
SPLIT = {"Referencing an inactive, missing, or cross-scope foreach is rejected": (
    "Referencing an inactive foreach is rejected", "Referencing a missing foreach is rejected",
    "Referencing a cross-scope foreach is rejected")}


def _design_bullets() -> list[str]:
    section = DESIGN.read_text(encoding="utf-8").split("## Required Tests", 1)[1].split("\n## ", 1)[0]
    bullets = re.findall(r"^- (.+(?:\n  .+)*)", section, re.M)
    return [" ".join(bullet.split()).replace("`", "").rstrip(".") for bullet in bullets]


def test_every_bullet_of_the_designs_required_tests_is_mapped() -> None:
    bullets = _design_bullets()
    assert len(bullets) >= 20, f"found only {len(bullets)} bullets: the section's format changed"
    mapped = {line for bullet in bullets for line in SPLIT.get(bullet, (bullet,))}
    assert mapped == set(REQUIRED), (f"design bullets with no test here: {sorted(mapped - set(REQUIRED))}; "
                                     f"lines here the design does not list: {sorted(set(REQUIRED) - mapped)}")
