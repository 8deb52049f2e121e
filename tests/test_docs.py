"""What the code and the docs cite must exist: a cited document, a module path named in docs/architecture.md.

Stale citations (``see API.md`` for a file nobody has) misled readers before; a rename that forgets the
architecture page should fail here, not confuse the next engineer.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("runtime", "designer", "tests", "bench", "static/src", "templates")
SOURCE_SUFFIXES = {".py", ".js", ".jsx", ".html", ".md"}

DOC_CITATION = re.compile(r"\bdocs/[\w/.-]+\.md\b")
BARE_DOC_NAME = re.compile(r"(?<![\w/.-])(?:API|runtime|designer|structured-runtime-context)\.md\b")
CODE_SPAN = re.compile(r"`([^`\s]+)`")


def source_files() -> list[Path]:
    files = []
    for directory in SOURCE_DIRS:
        files += [p for p in (REPO_ROOT / directory).rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()]
    return files + [REPO_ROOT / "README.md"]


def test_every_cited_document_exists() -> None:
    missing = {
        f"{path.relative_to(REPO_ROOT)}: {cited}"
        for path in source_files()
        for cited in DOC_CITATION.findall(path.read_text(encoding="utf-8"))
        if not (REPO_ROOT / cited).exists()
    }
    assert not missing, "cited documents that do not exist:\n" + "\n".join(sorted(missing))


def test_design_documents_are_cited_by_their_path_in_the_repository() -> None:
    bare = {
        f"{path.relative_to(REPO_ROOT)}: {match}"
        for path in source_files()
        if path.suffix != ".md" and path != Path(__file__).resolve()
        for match in BARE_DOC_NAME.findall(path.read_text(encoding="utf-8"))
    }
    assert not bare, "cite design documents as docs/design/<name>.md:\n" + "\n".join(sorted(bare))


def test_the_architecture_page_names_only_files_that_exist() -> None:
    text = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = {
        span for span in CODE_SPAN.findall(text) if re.fullmatch(r"[\w.-][\w/.-]*\.(py|md|js|jsx)|\w[\w/]*/", span)
    }
    bases = [REPO_ROOT, REPO_ROOT / "runtime", REPO_ROOT / "designer", REPO_ROOT / "designer" / "runs"]
    missing = sorted(span for span in named if not any((base / span).exists() for base in bases))
    assert named, "the pattern found no file names: the check itself is broken"
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_the_readme_lists_every_benchmark_with_the_variables_it_reads() -> None:
    """The README's benchmark table names every ``bench/bench_*.py`` module (and nothing else), and each row
    names the environment variables the module reads, so a benchmark cannot be added or sized unseen."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    rows = {match.group(1): match.group(0) for match in re.finditer(r"^\| `(bench_\w+)` \|.*$", readme, re.M)}
    modules = {path.stem: path for path in (REPO_ROOT / "bench").glob("bench_*.py")}
    assert set(rows) == set(modules), f"README benchmark rows {sorted(rows)} != bench/ modules {sorted(modules)}"
    for name, path in modules.items():
        read = set(re.findall(r"\b((?:TRELLIS_)?BENCH_[A-Z_]+[A-Z])\b", path.read_text(encoding="utf-8")))
        row = rows[name]
        # A row may name a family once: `BENCH_DISTRIBUTED_` + `ITEMS`, `BATCH`, ...
        prefixes = re.findall(r"`(\w+_)` \+", row)
        missing = sorted(v for v in read if v not in row and not any(
            v.startswith(prefix) and f"`{v[len(prefix):]}`" in row for prefix in prefixes))
        assert not missing, f"README's row for {name} does not name {missing}"
