"""The shape of the literate source (issue 16): small exported cells, and modules that use each other's public names only.

- `test_exported_cells_are_small`: every exported cell (`#| export`, `#| exporti`, `#| exports`) of every notebook in
  nbs/ has at most MAX_CELL_LINES lines (not counting `#|` directive lines), except the cells of LONG_CELLS. A class
  starts with its constructor and grows with fastcore's `@patch`, one method per cell, each under its equation or
  sentence and followed by its check.
- `test_no_private_imports_across_modules`: no module of fedgauss imports an underscore name from another module of
  fedgauss (a name that starts with `_` may change without notice), except the pairs of PRIVATE_IMPORTS.

Both allow-lists name what exists today so that it can only shrink: a listed cell that is now small enough, or a listed
import that is gone, fails the test until it leaves the list. `python tests/test_literate.py` prints the figures.
"""

import ast, json, re, statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_CELL_LINES = 60
_EXPORT = re.compile(r'^\s*#\s*\|\s*export[si]?\s*$', re.M)
_DIRECTIVE = re.compile(r'^\s*#\s*\|')

# (notebook, the first name the cell defines) -> its length in lines when it was listed (issue 16): the notebooks'
# owners split them and take them off this list.
LONG_CELLS = {}

# (importing module, imported module, name): none left (securefedyj's were made public in yeojohnson, issue 16 item 4).
PRIVATE_IMPORTS = set()


def _first_name(src: str) -> str:
    "The first name a cell defines: a class, a function (a @patch method as Class.method), or an assigned name."
    tree = ast.parse('\n'.join(l for l in src.splitlines() if not l.lstrip().startswith(('%', '!'))))
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if (
                isinstance(n, ast.FunctionDef)
                and any(getattr(d, 'id', None) == 'patch' for d in n.decorator_list)
                and n.args.args
            ):
                ann = n.args.args[0].annotation
                if ann is not None:
                    return f'{ast.unparse(ann)}.{n.name}'
            return n.name
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            t = n.targets[0] if isinstance(n, ast.Assign) else n.target
            return ast.unparse(t).split(',')[0].strip('() ')
    return '?'


def exported_cells(nbs=ROOT / 'nbs'):
    "(notebook, cell index, first name, lines) for every exported cell of every notebook."
    out = []
    for p in sorted(nbs.glob('*.ipynb')):
        for i, c in enumerate(json.loads(p.read_text())['cells']):
            if c['cell_type'] != 'code':
                continue
            src = ''.join(c['source'])
            if not _EXPORT.search(src):
                continue
            lines = [l for l in src.rstrip().splitlines() if not _DIRECTIVE.match(l)]
            out.append((p.name, i, _first_name(src), len(lines)))
    return out


def private_imports(pkg=ROOT / 'fedgauss'):
    "(importing module, imported module, name) for each underscore name a fedgauss module imports from another one."
    out = set()
    for f in sorted(pkg.glob('*.py')):
        if f.name.startswith('_'):
            continue
        for n in ast.walk(ast.parse(f.read_text())):
            if not isinstance(n, ast.ImportFrom):
                continue
            mod = n.module or ''
            if n.level:
                mod = 'fedgauss.' + mod if mod else 'fedgauss'
            if not mod.startswith('fedgauss.') or mod.split('.')[1] == f.stem:
                continue
            out |= {
                (f.stem, mod.split('.')[1], a.name)
                for a in n.names
                if a.name.startswith('_') and not (a.name.startswith('__') and a.name.endswith('__'))
            }
    return out


def test_exported_cells_are_small():
    cells = exported_cells()
    assert len(cells) > 100
    long = [(nb, i, name, n) for nb, i, name, n in cells if n > MAX_CELL_LINES and (nb, name) not in LONG_CELLS]
    assert not long, (
        f'exported cells over {MAX_CELL_LINES} lines (split them: a constructor, then one @patch method '
        f'per cell with its check under it):\n'
        + '\n'.join(f'{nb} cell {i} ({name}): {n} lines' for nb, i, name, n in long)
    )
    present = {(nb, name): n for nb, i, name, n in cells}
    stale = sorted(k for k in LONG_CELLS if present.get(k, 0) <= MAX_CELL_LINES)
    assert not stale, f'these cells are small now (or gone): remove them from LONG_CELLS: {stale}'


def test_no_private_imports_across_modules():
    found = private_imports()
    new = sorted(found - PRIVATE_IMPORTS)
    assert not new, (
        'modules import private names of other modules (make the name public, or move it to a shared '
        'module):\n' + '\n'.join(f'fedgauss.{a} imports {n} from fedgauss.{b}' for a, b, n in new)
    )
    gone = sorted(PRIVATE_IMPORTS - found)
    assert not gone, f'these private imports are gone: remove them from PRIVATE_IMPORTS: {gone}'


def test_the_checks_see_what_they_should(tmp_path):
    "The measures are not rubber stamps: a long cell and a private import in a scratch project are found."
    nbs, pkg = tmp_path / 'nbs', tmp_path / 'fedgauss'
    nbs.mkdir()
    pkg.mkdir()
    cell = lambda s: dict(cell_type='code', source=s, metadata={}, outputs=[], execution_count=None)
    body = '#| export\n@patch\ndef grow(self:Tree, x):\n' + '    x += 1\n' * 70 + '    return x'
    (nbs / '99_x.ipynb').write_text(
        json.dumps(dict(cells=[cell('#| export\nA = 1'), cell(body)], metadata={}, nbformat=4, nbformat_minor=5))
    )
    assert exported_cells(nbs) == [('99_x.ipynb', 0, 'A', 1), ('99_x.ipynb', 1, 'Tree.grow', 73)]
    (pkg / 'a.py').write_text(
        'from .b import _hidden, public, __version__\nfrom fedgauss.c import _x as y\nfrom .a import _self\n'
    )
    assert private_imports(pkg) == {('a', 'b', '_hidden'), ('a', 'c', '_x')}


# ---------------------------------------------------------------- one copy of each reference (issue 16 item 3)
MIN_COPY_LINES = 6
# (file, file) pairs that share MIN_COPY_LINES statement lines today, with why they may: the list can only shrink.
ALLOWED_COPIES = {}  # (file, file): why the copy stays


def _code_sources(root=ROOT):
    "(name, lines) for every module of fedgauss, every tests/ and tools/ script, and every non-exported notebook cell."
    out = [(f'fedgauss/{f.name}', f.read_text()) for f in sorted((root / 'fedgauss').glob('[!_]*.py'))]
    out += [(f'{d}/{f.name}', f.read_text()) for d in ('tests', 'tools') for f in sorted((root / d).glob('*.py'))]
    for f in sorted((root / 'nbs').glob('*.ipynb')):
        for i, c in enumerate(json.loads(f.read_text())['cells']):
            src = ''.join(c['source'])
            if c['cell_type'] == 'code' and not _EXPORT.search(src):  # exported cells are the modules' text
                out.append((f'nbs/{f.name}#{i}', src))
    return [(name, text.splitlines()) for name, text in out]


def copied_code(root=ROOT, min_lines=MIN_COPY_LINES):
    """{(file a, file b): [(line in a, line in b, first line)]} for every run of `min_lines` statement lines (blank,
    comment and import lines skipped, whitespace collapsed) that two different files (or notebooks) share word for word."""
    where = {}
    for name, lines in _code_sources(root):
        kept = [(k + 1, re.sub(r'\s+', ' ', l.strip())) for k, l in enumerate(lines)]
        kept = [(k, l) for k, l in kept if l and not l.startswith(('#', 'import ', 'from '))]
        for j in range(len(kept) - min_lines + 1):
            run = tuple(l for _, l in kept[j : j + min_lines])
            if sum(map(len, run)) >= 120:  # runs of short lines (`)`, `else:`, ...) are not code worth sharing
                where.setdefault(run, []).append((name, kept[j][0]))
    found = {}
    for run, places in where.items():
        files = sorted({n.split('#')[0] for n, _ in places})
        for a, b in zip(files, files[1:]):
            la = next(f'{n}:{k}' for n, k in places if n.split('#')[0] == a)
            lb = next(f'{n}:{k}' for n, k in places if n.split('#')[0] == b)
            found.setdefault((a, b), []).append((la, lb, run[0]))
    return found


def test_no_copied_code():
    found = copied_code()
    new = {k: v for k, v in found.items() if k not in ALLOWED_COPIES}
    assert not new, 'code copied between files (move it to fedgauss.testing or a public function and import it):\n' + (
        '\n'.join(f'{a} ~ {b}: {len(v)} runs, e.g. {v[0][0]} ~ {v[0][1]}: {v[0][2]!r}' for (a, b), v in new.items())
    )
    stale = sorted(k for k in ALLOWED_COPIES if k not in found)
    assert not stale, f'these copies are gone: remove them from ALLOWED_COPIES: {stale}'


def test_copy_check_sees_a_copy(tmp_path):
    for d in ('fedgauss', 'tests', 'tools', 'nbs'):
        (tmp_path / d).mkdir()
    body = ''.join(f'    total_{i} = compute_something_long(values, weights, index={i}) + offset\n' for i in range(7))
    (tmp_path / 'fedgauss' / 'm.py').write_text('def f(values, weights, offset):\n' + body)
    cell = dict(cell_type='code', source='#| hide\n' + body.replace('    ', ''), metadata={}, outputs=[])
    (tmp_path / 'nbs' / '00_x.ipynb').write_text(
        json.dumps(dict(cells=[cell], metadata={}, nbformat=4, nbformat_minor=5))
    )
    found = copied_code(tmp_path)
    assert list(found) == [('fedgauss/m.py', 'nbs/00_x.ipynb')] and len(found[('fedgauss/m.py', 'nbs/00_x.ipynb')]) == 2


# ---------------------------------------------------------------- documented parameters (issue 16 item 2)
# module -> public parameters without a docments comment when listed: the count can only go down.
UNDOCUMENTED = {}


def undocumented_parameters():
    "{module: ['function(parameter)', ...]} for public functions, classes (`__init__`) and public methods of fedgauss."
    import importlib, inspect, pkgutil
    from fastcore.docments import docments
    import fedgauss

    out = {}
    for m in pkgutil.iter_modules(fedgauss.__path__):
        if m.name.startswith('_'):
            continue
        mod = importlib.import_module(f'fedgauss.{m.name}')
        for name in getattr(mod, '__all__', []):
            obj = getattr(mod, name, None)
            if getattr(obj, '__module__', None) != mod.__name__:
                continue
            if inspect.isclass(obj):
                import dataclasses

                fs = [(name, obj if dataclasses.is_dataclass(obj) else obj.__dict__.get('__init__'))]
                fs += [
                    (f'{name}.{k}', v)
                    for k, v in obj.__dict__.items()
                    if not k.startswith('_') and inspect.isfunction(v)
                ]
            else:
                fs = [(name, obj)] if inspect.isfunction(obj) else []
            for fname, f in fs:
                if f is None:
                    continue
                params = inspect.signature(f).parameters
                try:
                    docs = docments(f, full=True, args_kwargs=True)
                except (OSError, TypeError):  # no source to read (e.g. a generated method)
                    docs = {p: dict(docment=None) for p in params}
                for p, d in docs.items():
                    if p in ('self', 'cls', 'return') or p.startswith('_') or p not in params:
                        continue
                    if not d['docment']:
                        out.setdefault(m.name, []).append(f'{fname}({p})')
    return out


def test_public_parameters_are_documented():
    found = undocumented_parameters()
    over = {m: v for m, v in found.items() if len(v) > UNDOCUMENTED.get(m, 0)}
    assert not over, 'public parameters without a docments comment (`name: type = default,  # what it means`):\n' + (
        '\n'.join(f'fedgauss.{m}: {len(v)} (allowed {UNDOCUMENTED.get(m, 0)}): {v}' for m, v in over.items())
    )
    fewer = {m: len(found.get(m, [])) for m, n in UNDOCUMENTED.items() if len(found.get(m, [])) < n}
    assert not fewer, f'fewer undocumented parameters now: lower UNDOCUMENTED to {fewer}'


# ---------------------------------------------------------------- prose in portions a reader takes in (issue 16 item 6)
MAX_MARKDOWN_WORDS = 300
# (notebook, first words of the cell): paragraphs that have no break to split at.
LONG_MARKDOWN = {
    ('94_repro_mvppca.ipynb', "**WAIC (Table 5): the paper's choice"): 351  # one paragraph: the finding and its reason
}


def markdown_words(nbs=ROOT / 'nbs'):
    "(notebook, cell index, first words, word count) of every markdown cell (inline math counts as one word)."
    out = []
    for p in sorted(nbs.glob('*.ipynb')):
        if p.name == 'index.ipynb':  # the landing page is the README, read on GitHub and PyPI: not a lecture
            continue
        for i, c in enumerate(json.loads(p.read_text())['cells']):
            if c['cell_type'] == 'markdown':
                src = ''.join(c['source'])
                out.append((p.name, i, ' '.join(src.split()[:6]), len(re.sub(r'\$[^$]*\$', 'X', src).split())))
    return out


def test_markdown_cells_are_short():
    cells = markdown_words()
    long = [c for c in cells if c[3] > MAX_MARKDOWN_WORDS and (c[0], c[2]) not in LONG_MARKDOWN]
    assert not long, f'markdown cells over {MAX_MARKDOWN_WORDS} words (split them at a paragraph):\n' + '\n'.join(
        f'{nb} cell {i} ({head}…): {n} words' for nb, i, head, n in long
    )
    present = {(nb, head): n for nb, i, head, n in cells}
    stale = sorted(k for k in LONG_MARKDOWN if present.get(k, 0) <= MAX_MARKDOWN_WORDS)
    assert not stale, f'these markdown cells are short now (or gone): remove them from LONG_MARKDOWN: {stale}'


if __name__ == '__main__':
    cells = exported_cells()
    ns = [n for *_, n in cells]
    print(
        f'exported cells {len(ns)}: mean {statistics.mean(ns):.1f} lines, median {statistics.median(ns)}, max {max(ns)}, '
        f'over 40: {sum(n > 40 for n in ns)}, over 50: {sum(n > 50 for n in ns)}, over 60: {sum(n > 60 for n in ns)}'
    )
    for nb, i, name, n in sorted(cells, key=lambda c: -c[3]):
        if n > 40:
            print(f'  {n:4} {nb} cell {i} {name}')
    print('private imports:', sorted(private_imports()))
    und = undocumented_parameters()
    print('undocumented parameters:', sum(map(len, und.values())), {m: len(v) for m, v in sorted(und.items())})
    for (a, b), v in copied_code().items():
        print(f'copied: {a} ~ {b}: {len(v)} runs, e.g. {v[0][0]} ~ {v[0][1]}')


def test_import_cells_import_only():
    """nbdev's docs build (`nbdev_proc_nbs`) executes, out of context, every cell that contains an import; a cell that
    mixes `import x` with code using names of earlier cells fails the site build. Imports go in cells of their own."""
    import sys

    sys.path.insert(0, str(ROOT / 'tools'))
    from build_docs import mixed_import_cells

    found = mixed_import_cells(ROOT / 'nbs')
    assert not found, 'put the imports of these cells in a cell of their own:\n' + '\n'.join(found)
