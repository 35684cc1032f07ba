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
LONG_CELLS = {
    ('01_data.ipynb', 'DATASETS'): 65,  # over 60 once `ruff format` split its `;`-joined lines
    ('03_testing.ipynb', 'MPYeoJohnson'): 91,
    ('10_yeojohnson.ipynb', 'YJAnchors'): 101,
    ('10_yeojohnson.ipynb', 'YJData'): 269,
    ('10_yeojohnson.ipynb', '_to_frame'): 68,  # over 60 once `ruff format` split its `;`-joined lines
    ('11_smc.ipynb', 'FixedPointOverflow'): 62,  # over 60 once `ruff format` split its `;`-joined lines
    ('11_smc.ipynb', 'SMC'): 192,
    ('11_smc.ipynb', 'Shared'): 62,  # over 60 once `ruff format` split its `;`-joined lines
    ('11_smc.ipynb', '_deal_bits_stacked'): 83,
    ('11_smc.ipynb', '_lift'): 61,  # over 60 once `ruff format` split its `;`-joined lines
    ('11_smc.ipynb', '_mul'): 72,  # over 60 once `ruff format` split its `;`-joined lines
    ('11_smc.ipynb', 'secure_sum'): 82,  # over 60 once `ruff format` split its `;`-joined lines
    ('12_securefedyj.ipynb', '_FRAMES'): 68,  # over 60 once `ruff format` split its `;`-joined lines
    ('12_securefedyj.ipynb', 'envelope_round'): 68,  # over 60 once `ruff format` split its `;`-joined lines
    ('12_securefedyj.ipynb', 'frame_coefficients'): 95,
    ('30_gbdt.ipynb', 'HistLayout'): 88,
    ('30_gbdt.ipynb', 'LogisticLoss'): 64,  # over 60 once `ruff format` split its `;`-joined lines
    ('30_gbdt.ipynb', 'Splits'): 104,
    ('30_gbdt.ipynb', 'Tree'): 87,
    ('30_gbdt.ipynb', '_check_sample_weight'): 92,
    ('30_gbdt.ipynb', '_frame_categories'): 258,
    ('30_gbdt.ipynb', '_scatter_add'): 149,
    ('30_gbdt.ipynb', 'grow_tree'): 74,  # over 60 once `ruff format` split its `;`-joined lines
    ('34_nflgbdt.ipynb', 'FGBDTGClassifier'): 61,  # over 60 once `ruff format` split its `;`-joined lines
    ('40_mvppca.ipynb', 'FedMVPPCA.fit'): 61,  # over 60 once `ruff format` split its `;`-joined lines
    ('50_flower.ipynb', 'Relay.run'): 89,  # over 60 once `ruff format` split its `;`-joined lines
    ('50_flower.ipynb', '_load_rows'): 74,  # over 60 once `ruff format` split its `;`-joined lines
}

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
